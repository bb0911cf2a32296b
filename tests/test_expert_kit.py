"""The one expert kit (issue 28 item 2): finding, the one scroll policy, absent elements, and
no expert module defining a helper another one defines too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mag_dataset
from mag_dataset.actions import ActionType
from mag_dataset.live import expert_kit as kit
from mag_dataset.live.observe import Conversion, Element, Observation
from mag_dataset.schema import Candidate

VIEW = (1280, 720)


def _el(bid, tag, text="", *, box=(10, 10, 110, 40), parent=None, holds=None, **attrs) -> Element:
    """An element; ``holds`` is a field's current value, ``attrs`` its HTML attributes."""
    return Element(bid=bid, tag=tag, attrs=dict(attrs), parent=parent, text=text, own_text=text, role=tag,
                   name=text, bbox=box, visibility=1.0, clickable=True, som=True, value=holds, all_text=text)


def _ob(*elements: Element, focused: str | None = None, url="http://127.0.0.1:8471/search/?q=tea#top") -> Observation:
    """An observation of a 1280x720 viewport: candidates are the elements whose box meets it."""
    cands = [Candidate(e.bid, e.tag, e.text, (max(0, e.bbox[0]), max(0, e.bbox[1]), min(VIEW[0], e.bbox[2]),
                                              min(VIEW[1], e.bbox[3])))
             for e in elements if e.bbox is not None and e.bbox[3] > 2 and e.bbox[1] < VIEW[1] - 2
             and e.bbox[3] - e.bbox[1] >= 2]
    return Observation(image=None, width=VIEW[0], height=VIEW[1], candidates=cands, conv=Conversion(1.0, (0, 0, *VIEW)),
                       goal="", url=url, elements={e.bid: e for e in elements}, focused=focused)


def test_finding_in_document_order_by_text_name_id_and_href():
    body = _el("1", "body", "Shop Search Tea Tea")
    search = _el("2", "input", name="q", type="text")
    hidden = _el("3", "input", name="csrf", type="hidden")
    go = _el("4", "input", type="submit", value="  Search ")
    below = _el("5", "a", "Tea", box=(10, 2000, 60, 2020), href="/catalogue/tea_1/")
    shown = _el("6", "a", "Tea", box=(10, 100, 60, 120), href="/catalogue/tea_1/")
    ob = _ob(body, search, hidden, go, below, shown)
    assert kit.field(ob, "q") is search and kit.field(ob, "csrf") is None and kit.by_name(ob, "csrf") is None
    assert kit.button(ob, "search") is go and kit.by_id(ob, "nope") is None
    assert kit.link(ob, "tea") is below and kit.link(ob, "tea", prefer_visible=True) is shown
    assert kit.link(ob, "te", exact=False) is below and kit.link(ob, href=r"tea_\d+") is below
    assert kit.link(ob, "Tea", href="/basket/") is None
    assert kit.find(ob, lambda e: e.attrs["missing"] == "x") is None  # a predicate's KeyError is no match
    assert kit.path(ob) == "/search/" and kit.location(ob) == "/search/?q=tea" and kit.query(ob) == {"q": ["tea"]}
    assert kit.page_text(ob) == "Shop Search Tea Tea" and kit.norm("  Tea\n Pot ") == "tea pot"


def test_the_one_scroll_policy():
    here = _el("1", "button", "Pay", box=(10, 300, 100, 340))
    assert kit.click(_ob(here), here) == kit.Decision(ActionType.CLICK, "1")
    near = _el("2", "button", "Pay", box=(10, 900, 100, 940))  # just below the fold: the wheel
    assert kit.click(_ob(near), near) == kit.Decision(ActionType.SCROLL, direction="down")
    cut = _el("3", "button", "Pay", box=(10, 690, 100, 790))  # a candidate, its centre below the viewport
    assert kit.click(_ob(cut), cut).direction == "down"
    far = _el("4", "button", "Pay", box=(10, 2000, 100, 2040))  # a screen or more away: a page key
    assert kit.click(_ob(far), far) == kit.press("PageDown")
    above = _el("5", "a", "Top", box=(10, -1800, 100, -1760))
    assert kit.click(_ob(above), above) == kit.press("PageUp")
    box = _el("6", "input", name="q", box=(10, 10, 300, 40))
    assert kit.fill(_ob(box, far, focused="6"), far, "x").type is ActionType.SCROLL  # typing: no page keys
    hidden = _el("7", "select", box=(10, 300, 100, 300))  # hidden where it stands
    assert kit.select(_ob(hidden), hidden, "a") is None
    assert kit.click(_ob(), None) is None and kit.fill(_ob(), None, "x") is None


def test_fill_once_and_require():
    box = _el("1", "input", name="q", holds="tea")
    assert kit.fill(_ob(box), box, "tea") is None
    assert kit.fill(_ob(box), box, "pot") == kit.Decision(ActionType.TYPE, "1", text="pot")
    memory: dict = {}
    assert kit.once(memory, "paged", kit.press("PageDown")) == kit.press("PageDown") and not memory
    kit.once(memory, "searched", kit.press("Enter"))
    assert memory == {"searched": True} and kit.is_scroll(kit.Decision(ActionType.SCROLL, direction="up"))
    with pytest.raises(kit.NotOnPage, match="the basket link not found"):
        kit.require(None, "the basket link")
    assert issubclass(kit.NotOnPage, kit.ExpertError)


def _expert_modules() -> list[Path]:
    root = Path(mag_dataset.__file__).parent
    return [root / "live" / "experts.py", *sorted((root / "sites").glob("*/tasks.py"))]


def test_no_helper_is_defined_in_two_expert_modules():
    """Each helper is written once: a module-level function name appears in one expert module at
    most (site-specific helpers have site-specific names; the generic ones live in the kit)."""
    owners: dict[str, list[str]] = {}
    for path in _expert_modules():
        for node in ast.parse(path.read_text("utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                owners.setdefault(node.name, []).append(path.parent.name)
    kit_names = {n.name for n in ast.parse(Path(kit.__file__).read_text("utf-8")).body if isinstance(n, ast.FunctionDef)}
    twice = {name: where for name, where in owners.items() if len(where) > 1}
    assert not twice, twice
    shadows = {name for name in owners if name.lstrip("_") in kit_names}
    assert not shadows, f"expert modules redefine kit helpers: {sorted(shadows)}"
