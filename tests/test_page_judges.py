"""The three rule-based judges (dom, name, pixel) on crafted page pairs: an action-time page and
the page a step shows, drawn for real with PIL. One test per case the audit must tell apart:
unchanged, moved, renamed, removed, and two identical buttons."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from mag_dataset.harness.audit_rules import AuditStatus, merge_verdicts
from mag_dataset.harness.page_judges import (
    PAGE_JUDGES,
    Fingerprint,
    PageElement,
    StepEvidence,
    fingerprint_similarity,
    map_to_menu,
    run_page_judges,
)
from mag_dataset.harness.page_audit import as_verdict

W, H = 640, 480


def button(id_: str, name: str, box, path: str, attrs=()) -> PageElement:
    fp = Fingerprint("button", "button", name, tuple(sorted(attrs)), path)
    return PageElement(id_, "button", name, tuple(float(v) for v in box), fp)


def draw(elements) -> np.ndarray:
    """A page: a textured background (so a crop's context is unique) and each button with its name."""
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    for x in range(0, W, 40):
        d.line([(x, 0), (x, H)], fill=(235, 235, 240))
    for e in elements:
        x0, y0, x1, y1 = e.bbox
        d.rectangle([x0, y0, x1, y1], fill=(40, 90, 200), outline=(10, 30, 90), width=2)
        d.text((x0 + 10, y0 + 12), e.name, fill="white")
    return np.asarray(img)


SAVE = button("5", "Save", (100, 100, 200, 140), "html/body/form[0]/button[0]", [("id", "save")])
CANCEL = button("6", "Cancel", (300, 100, 400, 140), "html/body/form[0]/button[1]", [("id", "cancel")])
HELP = button("7", "Help", (100, 300, 200, 340), "html/body/div[0]/button[0]", [("id", "help")])
ACTION_PAGE = (SAVE, CANCEL, HELP)
MENU = tuple((e.id, e.bbox) for e in ACTION_PAGE)


def evidence(shown, recorded="5", same_page=False, target=SAVE, point=None) -> StepEvidence:
    return StepEvidence(recorded_id=recorded, menu=MENU, shown=tuple(shown), shown_image=draw(shown),
                        target=target.fingerprint if target is not None else None,
                        target_box=target.bbox if target is not None else None, point=point,
                        action_image=draw(ACTION_PAGE), same_page=same_page, action_elements=ACTION_PAGE)


def votes(ev: StepEvidence) -> dict[str, tuple[str, str | None]]:
    out = run_page_judges(ev)
    assert [v.judge for v in out] == list(PAGE_JUDGES)
    return {v.judge: (v.verdict, v.element) for v in out}


def merged(ev: StepEvidence) -> tuple[AuditStatus, str | None]:
    return merge_verdicts([as_verdict(v, ev.recorded_id) for v in run_page_judges(ev)])


def test_the_action_time_page_is_confirmed_by_all_three():
    ev = evidence(ACTION_PAGE, same_page=True)
    assert votes(ev) == {"dom": ("confirm", "5"), "name": ("confirm", "5"), "pixel": ("confirm", "5")}
    assert merged(ev) == (AuditStatus.CONFIRMED, None)


def test_a_label_moved_to_another_candidate_is_remapped_back():
    ev = evidence(ACTION_PAGE, recorded="6", same_page=True)  # the label says Cancel; the act was Save
    assert votes(ev) == {"dom": ("remap", "5"), "name": ("remap", "5"), "pixel": ("remap", "5")}
    assert merged(ev) == (AuditStatus.REMAPPED, "5")


def test_moved_element_is_remapped_to_the_candidate_now_under_it():
    moved = button("5", "Save", HELP.bbox, SAVE.fingerprint.path, [("id", "save")])
    shown = (moved, CANCEL)  # Save now stands where Help was at action time
    ev = evidence(shown)
    assert votes(ev) == {"dom": ("remap", "7"), "name": ("remap", "7"), "pixel": ("remap", "7")}
    assert merged(ev) == (AuditStatus.REMAPPED, "7")


def test_renamed_element_is_found_by_its_identity_only():
    renamed = button("5", "Store", SAVE.bbox, SAVE.fingerprint.path, [("id", "save")])
    ev = evidence((renamed, CANCEL, HELP))
    v = votes(ev)
    assert v["dom"] == ("confirm", "5")  # same id attribute, tag, role and path
    assert v["name"] == ("unmappable", None)  # no button is called Save any more
    assert v["pixel"] == ("unmappable", None)  # the crop shows another word
    assert merged(ev) == (AuditStatus.UNMAPPABLE, None)


def test_removed_element_is_unmappable_for_every_judge():
    ev = evidence((CANCEL, HELP))
    assert votes(ev) == {"dom": ("unmappable", None), "name": ("unmappable", None), "pixel": ("unmappable", None)}
    assert merged(ev) == (AuditStatus.UNMAPPABLE, None)


def test_two_identical_buttons_are_told_apart_by_position_or_called_ambiguous():
    first = button("5", "Add", (100, 200, 200, 240), "html/body/ul[0]/li[0]/button[0]")
    second = button("8", "Add", (300, 200, 400, 240), "html/body/ul[0]/li[1]/button[0]")
    page = (first, second)
    menu = tuple((e.id, e.bbox) for e in page)

    def ev(shown, same_page):
        return StepEvidence("5", menu, tuple(shown), draw(shown), first.fingerprint, first.bbox, None,
                            draw(page), same_page, page)

    # unchanged page: the twin is 200 px away, the target 0 px
    assert {v.judge: v.verdict for v in run_page_judges(ev(page, True))} == dict.fromkeys(PAGE_JUDGES, "confirm")
    # both moved so that they stand equally far from where the target was: name and pixel cannot
    # tell them apart (ambiguous: no vote); dom still knows the first by its structural path
    a = button("5", "Add", (0, 200, 100, 240), first.fingerprint.path)
    b = button("8", "Add", (200, 200, 300, 240), second.fingerprint.path)
    shifted = ev((a, b), False)
    out = {v.judge: v for v in run_page_judges(shifted)}
    assert out["name"].verdict == "ambiguous" and out["name"].evidence["distances"] == [100.0, 100.0]
    assert out["pixel"].verdict == "ambiguous"
    # dom finds the first by its structural path, but no menu candidate's box holds it any more
    assert (out["dom"].verdict, out["dom"].evidence["matches"]) == ("unmappable", ["5"])
    assert merge_verdicts([as_verdict(v, "5") for v in out.values()])[0] is AuditStatus.DISPUTED


def test_point_only_step_uses_the_element_under_the_point():
    ev = evidence(ACTION_PAGE, same_page=True, target=None, point=(150.0, 120.0))
    assert votes(ev) == {"dom": ("confirm", "5"), "name": ("confirm", "5"), "pixel": ("confirm", "5")}
    nothing = evidence(ACTION_PAGE, same_page=True, target=None, point=(600.0, 450.0))
    assert merged(nothing) == (AuditStatus.UNMAPPABLE, None)


def test_evidence_is_logged_and_votes_are_deterministic():
    ev = evidence((button("5", "Save", HELP.bbox, SAVE.fingerprint.path, [("id", "save")]), CANCEL))
    first, second = run_page_judges(ev), run_page_judges(ev)
    assert first == second
    pixel = next(v for v in first if v.judge == "pixel")
    assert pixel.evidence["score"] >= 0.99 and pixel.evidence["moved"] == [0, 200]
    assert next(v for v in first if v.judge == "dom").evidence["by"] == "fingerprint"


def test_fingerprint_similarity_and_menu_mapping():
    assert fingerprint_similarity(SAVE.fingerprint, SAVE.fingerprint) == 1.0
    assert fingerprint_similarity(SAVE.fingerprint, Fingerprint("a", "button", "Save")) == 0.0  # another tag
    assert fingerprint_similarity(SAVE.fingerprint, CANCEL.fingerprint) < 0.5
    assert map_to_menu((100, 100, 200, 140), MENU) == ("5", 1.0)
    assert map_to_menu((500, 400, 600, 470), MENU) == (None, 0.0)


@pytest.mark.parametrize("flat", [True, False])
def test_a_blank_target_is_matched_with_its_surroundings(flat):
    """A blank text box matches everywhere on its own; grown by its context it is found once."""
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    d.text((20, 62), "First name", fill="black")
    d.rectangle([100, 60, 300, 80], outline=(120, 120, 120), fill="white" if flat else (250, 240, 200))
    d.text((20, 162), "Last name", fill="black")
    d.rectangle([100, 160, 300, 180], outline=(120, 120, 120), fill="white")
    page = (PageElement("1", "textbox", "First name", (100.0, 60.0, 300.0, 80.0), Fingerprint("input", "textbox", "First name")),
            PageElement("2", "textbox", "Last name", (100.0, 160.0, 300.0, 180.0), Fingerprint("input", "textbox", "Last name")))
    image = np.asarray(img)
    ev = StepEvidence("1", tuple((e.id, e.bbox) for e in page), page, image, page[0].fingerprint, page[0].bbox,
                      None, image, True)
    pixel = next(v for v in run_page_judges(ev) if v.judge == "pixel")
    assert (pixel.verdict, pixel.element) == ("confirm", "1")


def test_an_unnamed_target_is_matched_by_role_among_the_unnamed():
    """An unlabelled text box (no accessible name) is still witnessed by the name judge: by its
    role among the shown elements without a name, nearest first; a named box of that role is no
    match, and with none unnamed left it is unmappable."""
    def box(id_, name, rect, path):
        fp = Fingerprint("input", "textbox", name, (), path)
        return PageElement(id_, "textbox", name, tuple(float(v) for v in rect), fp)

    blank = box("5", "", (100, 100, 300, 130), "html/body/form[0]/input[0]")
    other = box("6", "", (100, 300, 300, 330), "html/body/form[0]/input[1]")
    named = box("7", "Search", (100, 200, 300, 230), "html/body/form[0]/input[2]")
    page = (blank, other, named)
    menu = tuple((e.id, e.bbox) for e in page)

    def ev(shown, same_page):
        return StepEvidence("5", menu, tuple(shown), draw(shown), blank.fingerprint, blank.bbox, None,
                            draw(page), same_page, page)

    out = {v.judge: v for v in run_page_judges(ev(page, True))}
    assert (out["name"].verdict, out["name"].element) == ("confirm", "5")
    assert out["name"].evidence["by"] == "role, among the elements without a name"
    assert merge_verdicts([as_verdict(v, "5") for v in out.values()]) == (AuditStatus.CONFIRMED, None)
    # the unnamed box is gone: the nearest unnamed one of the role is another candidate, a remap
    assert next(v for v in run_page_judges(ev((other, named), False)) if v.judge == "name").element == "6"
    # only a named box of that role is left: no match
    gone = next(v for v in run_page_judges(ev((named,), False)) if v.judge == "name")
    assert (gone.verdict, gone.evidence["why"]) == ("unmappable", "no shown element of this role is unnamed")
