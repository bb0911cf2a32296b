"""Unification: coordinate-only restoration (smallest box, deterministic ties) and the stale rule."""

from __future__ import annotations

import dataclasses
import json

import harness_fixtures as hf
import pytest

from mag_dataset.cli import main
from mag_dataset.coords import restore_element
from mag_dataset.harness.unify import pixel_diff_fraction, unify_corpus
from mag_dataset.raw import read_audit, read_episode
from mag_dataset.schema import Action, Candidate


def C(i, box, role="button", text=""):
    return Candidate(str(i), role, text or f"c{i}", box)


def test_smallest_box_containing_the_point_wins():
    # the checkbox (4) sits inside its row (3): a point on it maps to the checkbox
    assert restore_element((20, 80), hf.FORM).id == "4"
    assert restore_element((100, 80), hf.FORM).id == "3"
    assert restore_element((150, 30), hf.FORM).id == "1"  # box edges are inside
    assert restore_element((155, 5), hf.FORM) is None


def test_tie_break_is_deterministic():
    # equal areas: the nearer centre wins, whatever the menu order
    a, b = C("a", (0, 0, 10, 10)), C("b", (4, 0, 14, 10))
    assert restore_element((8, 5), [a, b]).id == "b"
    assert restore_element((8, 5), [b, a]).id == "b"
    assert restore_element((6, 5), [b, a]).id == "a"
    # equal area and distance: the earlier menu entry wins, then the smaller id
    x, y = C("x", (0, 0, 10, 10)), C("y", (0, 0, 10, 10))
    assert restore_element((5, 5), [y, x]).id == "y"
    assert restore_element((5, 5), [x, y]).id == "x"


def coord_only_episode(name="coord.seed-0"):
    ep = hf.login_episode(name)
    steps = list(ep.steps)
    steps[2] = hf.step(2, Action(type="click", coordinate=(20, 80)), None)  # on the checkbox
    steps[3] = hf.step(3, Action(type="click", coordinate=(60, 110)), None)  # on no candidate
    return dataclasses.replace(ep, steps=tuple(steps))


def test_unify_restores_coordinate_only_steps(tmp_path):
    raw = tmp_path / "raw"
    hf.write(raw, coord_only_episode())
    hf.write(raw, hf.login_episode("plain.seed-0"))
    report = unify_corpus(raw)
    assert (report.episodes, report.steps, report.coordinate_only, report.restored, report.unrestorable) == (2, 8, 2, 1, 1)
    ep = read_episode(raw / "coord.seed-0")
    s2, s3 = ep.steps[2], ep.steps[3]
    assert s2.action.element_id == "4" and s2.action.coordinate == (20.0, 80.0)
    assert s2.target_bbox == hf.FORM[3].bbox and s2.metadata["coordinate_restored"] is True
    assert s3.action.element_id is None and s3.metadata["coordinate_unrestorable"] is True
    assert s3.metadata["unmappable_reason"] == "point_outside_candidates"
    audit = read_audit(raw / "audit.jsonl")
    assert list(audit) == ["coord.seed-0:2", "coord.seed-0:3"]
    assert audit["coord.seed-0:2"].coordinate_restored and audit["coord.seed-0:2"].status.value == "unaudited"
    # the point on no candidate is marked unmappable with its reason, not silently left
    assert audit["coord.seed-0:3"].status.value == "unmappable" and audit["coord.seed-0:3"].reason == "point_outside_candidates"
    assert report.unmappable_reasons == {"point_outside_candidates": 1}
    # idempotent: a second run changes nothing
    before = (raw / "coord.seed-0" / "episode.json").read_bytes(), (raw / "audit.jsonl").read_bytes()
    again = unify_corpus(raw)
    assert again.changed_episodes == [] and again.coordinate_only == 1
    assert before == ((raw / "coord.seed-0" / "episode.json").read_bytes(), (raw / "audit.jsonl").read_bytes())


def recaptured_episode(tmp_path):
    """Six recaptured steps, one per branch of the stale rule, plus one untouched step."""
    shifted = [dataclasses.replace(c, bbox=(c.bbox[0] + 6, c.bbox[1], c.bbox[2] + 6, c.bbox[3])) for c in hf.FORM]
    renamed = [dataclasses.replace(c, text="Login") if c.id == "5" else c for c in hf.FORM]
    base = hf.login_episode("re.seed-0")
    a = lambda i: base.steps[i % 4].action  # noqa: E731
    tgt = lambda i: base.steps[i % 4].action.element_id  # noqa: E731
    steps = [
        hf.step(0, a(0), tgt(0), metadata={"recaptured": True, "action_time_screenshot": "then_0.png"}),
        hf.step(1, a(1), tgt(1), metadata={"action_time_screenshot": "then_1.png"}),
        hf.step(2, a(2), tgt(2), metadata={"recaptured": True}),
        hf.step(3, a(3), tgt(3), metadata={"action_time_candidates": [c.to_dict() for c in renamed]}),
        hf.step(4, a(0), tgt(0), metadata={"action_time_candidates": [c.to_dict() for c in shifted]}),
        hf.step(5, a(1), tgt(1), metadata={"action_time_screenshot": "then_5.png",
                                           "action_time_candidates": [c.to_dict() for c in hf.FORM]}),
        hf.step(6, a(2), tgt(2)),
    ]
    ep = dataclasses.replace(base, steps=tuple(steps))
    from PIL import Image
    import io

    small = io.BytesIO()
    Image.new("RGB", (10, 10)).save(small, format="PNG")
    extra = {
        "then_0.png": hf.draw(hf.FORM),  # identical pixels -> not stale
        "then_1.png": hf.draw(hf.FORM, extra="dark"),  # everything changed -> pixels
        "then_5.png": small.getvalue(),  # different size
    }
    return ep, extra


def test_stale_rule_each_branch(tmp_path):
    raw = tmp_path / "raw"
    ep, extra = recaptured_episode(tmp_path)
    hf.write(raw, ep, extra)
    report = unify_corpus(raw)
    assert report.recaptured == 6 and report.stale == 5
    assert dict(report.stale_reasons) == {
        "pixels": 1, "no_action_time_observation": 1, "candidates": 1, "target_moved": 1, "image_size": 1,
    }
    got = read_episode(raw / "re.seed-0")
    assert [s.stale for s in got.steps] == [False, True, True, True, True, True, False]
    assert got.steps[0].metadata["stale_check"] == {"stale": False, "reason": "", "pixel_fraction": 0.0}
    assert got.steps[1].metadata["stale_check"]["pixel_fraction"] > 0.5
    audit = read_audit(raw / "audit.jsonl")
    assert sorted(audit) == [f"re.seed-0:{i}" for i in (1, 2, 3, 4, 5)]
    assert all(r.stale and not r.coordinate_restored for r in audit.values())


def test_pixel_threshold_ignores_small_noise():
    a = hf.draw(hf.FORM)
    from PIL import Image
    import io

    img = Image.open(io.BytesIO(a)).convert("RGB")
    px = img.load()
    for x in range(5):  # 5 of 19,200 pixels change a lot; the whole image a little
        px[x, 0] = (0, 0, 0)
    noisy = Image.eval(img, lambda v: min(255, v + 10))
    buf = io.BytesIO()
    noisy.save(buf, format="PNG")
    frac = pixel_diff_fraction(a, buf.getvalue())
    assert 0 < frac < 0.005


def test_unify_keeps_audit_statuses(tmp_path):
    raw = tmp_path / "raw"
    hf.write(raw, coord_only_episode())
    (raw / "audit.jsonl").write_text(json.dumps({"step_id": "coord.seed-0:0", "status": "confirmed", "disputed": False}) + "\n")
    unify_corpus(raw)
    audit = read_audit(raw / "audit.jsonl")
    assert audit["coord.seed-0:0"].status.value == "confirmed" and audit["coord.seed-0:2"].coordinate_restored


def test_cli(tmp_path, capsys):
    raw = tmp_path / "raw"
    hf.write(raw, coord_only_episode())
    assert main(["unify", "--raw", str(raw), "--dry-run"]) == 0
    assert ("would change: 1 episodes, 4 steps: 2 coordinate-only (1 restored, 1 unrestorable, "
            "point_outside_candidates 1)") in capsys.readouterr().out
    assert read_episode(raw / "coord.seed-0").steps[2].action.element_id is None
    assert main(["unify", "--raw", str(raw)]) == 0
    assert read_episode(raw / "coord.seed-0").steps[2].action.element_id == "4"
    assert main(["unify", "--raw", str(tmp_path / "nope")]) == 2
    assert "raw corpus folder not found" in capsys.readouterr().err


def test_missing_action_time_file_is_named(tmp_path, capsys):
    raw = tmp_path / "raw"
    ep = hf.login_episode("bad.seed-0")
    st = dataclasses.replace(ep.steps[0], metadata={"action_time_screenshot": "gone.png"})
    hf.write(raw, dataclasses.replace(ep, steps=(st,) + ep.steps[1:]))
    assert main(["unify", "--raw", str(raw)]) == 2
    err = capsys.readouterr().err
    assert "bad.seed-0" in err and "step 0" in err and "action_time_screenshot" in err and "gone.png" in err
    assert not (raw / "audit.jsonl").exists()


@pytest.mark.parametrize("bad", [["--pixel-tolerance", "300"], ["--pixel-fraction", "2"]])
def test_cli_rejects_bad_thresholds(tmp_path, bad, capsys):
    (tmp_path / "raw").mkdir()
    assert main(["unify", "--raw", str(tmp_path / "raw"), *bad]) == 2
    assert "must be in" in capsys.readouterr().err


def test_ambiguity_rule():
    from mag_dataset.harness.unify import POINT_AMBIGUOUS, POINT_OUTSIDE, map_point

    # nested boxes are never ambiguous: the checkbox inside its row
    assert map_point((20, 80), hf.FORM) == (hf.FORM[3], None)
    assert map_point((155, 5), hf.FORM) == (None, POINT_OUTSIDE)
    # two elements in one place (boxes equal within 1 px): ambiguous
    x, y = C("x", (0, 0, 10, 10)), C("y", (0, 0, 10.5, 10))
    assert map_point((5, 5), [x, y]) == (None, POINT_AMBIGUOUS)
    # partly overlapping boxes of comparable size: ambiguous
    a, b = C("a", (0, 0, 10, 10)), C("b", (6, 0, 18, 10))
    assert map_point((8, 5), [a, b]) == (None, POINT_AMBIGUOUS)
    assert map_point((3, 5), [a, b]) == (a, None)  # only one contains it
    # a link sticking out of its page strip by one pixel (recorded on the tracker): nested
    strip, link = C("94", (184.5, 234.12, 1080.5, 249.12), "div"), C("95", (1032.83, 234.12, 1070.53, 250.12), "link")
    assert map_point((1055.0, 239.0), [strip, link]) == (link, None)
    # a far larger box overlapping partly (a banner under a button) does not compete
    banner, button = C("b", (0, 0, 400, 40)), C("k", (380, 10, 420, 30))
    assert map_point((390, 20), [banner, button]) == (button, None)


def test_ambiguous_point_is_unmappable_in_the_audit_and_builds(tmp_path):
    from mag_dataset.builder import prepare_corpus
    from mag_dataset.schema import Candidate

    raw = tmp_path / "raw"
    ep = hf.login_episode("amb.seed-0")
    steps = list(ep.steps)
    overlap = (*hf.FORM, Candidate("6", "link", "Help", (120, 100, 160, 118)))  # overlaps Submit (100, 95, 150, 115)
    steps[3] = dataclasses.replace(hf.step(3, Action(type="click", coordinate=(130, 105)), None), candidates=overlap)
    hf.write(raw, dataclasses.replace(ep, steps=tuple(steps)))
    report = unify_corpus(raw)
    assert report.unmappable_reasons == {"point_ambiguous": 1}
    rec = read_audit(raw / "audit.jsonl")["amb.seed-0:3"]
    assert (rec.status.value, rec.reason) == ("unmappable", "point_ambiguous")
    # the builder honours the audit's unmappable mark: no element, no box, status unmappable
    step = next(s for s in prepare_corpus(raw, progress=False).steps if s.step_id == "amb.seed-0:3")
    assert step.audit.status.value == "unmappable" and step.target_bbox is None and step.som_action.element_id is None
    # a judge's decision is kept: a confirmed record stays confirmed on a rerun
    from mag_dataset.raw import write_audit
    from mag_dataset.schema import AuditRecord

    write_audit(raw / "audit.jsonl", {"amb.seed-0:3": AuditRecord(status="remapped", element_id="5", original_element_id=None)})
    unify_corpus(raw)
    assert read_audit(raw / "audit.jsonl")["amb.seed-0:3"].status.value == "remapped"
    # a mark the rule set is cleared when the point becomes restorable
    write_audit(raw / "audit.jsonl", {"amb.seed-0:3": AuditRecord(status="unmappable", reason="point_ambiguous")})
    folder = raw / "amb.seed-0"
    ep2 = read_episode(folder)
    fixed = list(ep2.steps)
    fixed[3] = dataclasses.replace(fixed[3], candidates=hf.FORM)
    from mag_dataset.raw import rewrite_episode_json

    rewrite_episode_json(folder, dataclasses.replace(ep2, steps=tuple(fixed)))
    unify_corpus(raw)
    rec = read_audit(raw / "audit.jsonl")["amb.seed-0:3"]
    assert rec.status.value == "unaudited" and rec.reason is None and rec.coordinate_restored
