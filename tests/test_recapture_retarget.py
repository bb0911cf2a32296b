"""A recapture replays each action on its target where the moved-on page has it.

A drifted forum puts a new topic above the recorded one: the recorded point now lies on the
new topic and BrowserGym's bids are shifted by one. :func:`mag_dataset.harness.recapture.retarget`
moves a point click with its target's box (the same place inside it), renames the bid of a
``fill``/``select_option``, clicks by bid a target pushed out of the screenshot, and leaves
alone a target that did not move or is not on the page (the check before the step ends the
replay there). Pages are built from real observation objects (no browser needed).
"""

from __future__ import annotations

from mag_dataset.live.observe import Conversion, Element, Observation, fingerprint
from mag_dataset.harness.recapture import check_replayed_page, replayed_target, retarget
from mag_dataset.raw import RawStep
from mag_dataset.schema import Action, ActionType, Candidate

CONV = Conversion(scale=1.0, crop=(0, 0, 1280, 720))


def _page(topics: list[tuple[str, str, float]], field_bid: str = "90") -> Observation:
    """A topic list (bid, title, top y) and a search field, as BrowserGym marks them."""
    els = {"1": Element("1", "body", {}, None, "", "", "generic", "", (0, 0, 1280, 2000), 1.0, False, False),
           "2": Element("2", "ul", {"class": "topics"}, "1", "", "", "list", "", (0, 0, 1280, 2000), 1.0, False,
                        False)}
    cands = []
    for bid, title, y in topics:
        box = (98.5, y, 300.0, y + 18.0)
        els[bid] = Element(bid, "a", {"href": f"/topic/{title.lower().replace(' ', '-')}"}, "2", title, title, "link",
                           title, box, 1.0, True, True)
        els["2"].children.append(bid)
        cands.append(Candidate(bid, "link", title, box))
    els[field_bid] = Element(field_bid, "input", {"name": "q", "type": "search"}, "1", "", "", "searchbox", "Search",
                             (900.0, 20.0, 1200.0, 44.0), 1.0, True, True)
    els["1"].children += ["2", field_bid]
    cands.append(Candidate(field_bid, "searchbox", "Search", (900.0, 20.0, 1200.0, 44.0)))
    return Observation(image=None, width=1280, height=720, candidates=cands, conv=CONV, goal="", url="http://x/",
                       elements=els)


RECORDED = _page([("10", "Retro handhelds compared", 79.0), ("11", "Best coffee brewing method", 134.0)])
#: two days later: a new topic on top, every bid after it one higher
DRIFTED = _page([("10", "Anyone else not sleeping", 79.0), ("11", "Retro handhelds compared", 134.0),
                 ("12", "Best coffee brewing method", 189.0)], field_bid="91")


def _step(bid: str, action: str, *, point_only: bool = False) -> RawStep:
    cand = next(c for c in RECORDED.candidates if c.id == bid)
    meta = {"browsergym_action": action}
    if point_only:  # recorded as a person's click: no DOM fingerprint, the element restored from its point
        meta["expert_element_id"] = bid
    else:
        meta["dom"] = {"target": fingerprint(RECORDED.elements, bid)}
    kind = ActionType.TYPE if action.startswith("fill") else ActionType.CLICK
    return RawStep(step_index=0, screenshot="s.png", som_screenshot="", image_width=1280, image_height=720,
                   candidates=tuple(RECORDED.candidates),
                   action=Action(type=kind, element_id=bid, text="handhelds" if kind is ActionType.TYPE else None),
                   target_bbox=tuple(cand.bbox), guide="g", metadata=meta)


def test_a_point_click_moves_with_its_target_to_the_same_place_inside_it():
    st = _step("10", "mouse_move(195.0, 82.0)\nnoop(100)\nmouse_click(195.0, 82.0)")
    assert replayed_target(st, DRIFTED) == "11"
    out, moved = retarget(st, DRIFTED, st.metadata["browsergym_action"])
    assert out == "mouse_move(195.0, 137.0)\nnoop(100)\nmouse_click(195.0, 137.0)"  # 55 px lower, as the box
    assert moved == {"from": st.metadata["browsergym_action"], "to": out}
    assert check_replayed_page(st, {}, DRIFTED) is None  # the target is there, elsewhere


def test_a_point_only_step_is_found_by_its_recorded_role_and_text():
    st = _step("11", "mouse_move(150.0, 140.0)\nnoop(100)\nmouse_click(150.0, 140.0)", point_only=True)
    out, _ = retarget(st, DRIFTED, st.metadata["browsergym_action"])
    assert out == "mouse_move(150.0, 195.0)\nnoop(100)\nmouse_click(150.0, 195.0)"


def test_a_bid_action_names_the_targets_new_bid():
    st = _step("90", "fill('90', 'handhelds')")
    out, moved = retarget(st, DRIFTED, "fill('90', 'handhelds')")
    assert out == "fill('91', 'handhelds')" and moved is not None


def test_a_target_that_did_not_move_or_is_gone_keeps_the_recorded_action():
    st = _step("10", "mouse_move(195.0, 82.0)\nnoop(100)\nmouse_click(195.0, 82.0)")
    assert retarget(st, RECORDED, st.metadata["browsergym_action"]) == (st.metadata["browsergym_action"], None)
    gone = _page([("10", "Something else entirely", 79.0)])
    assert replayed_target(st, gone) is None
    assert retarget(st, gone, st.metadata["browsergym_action"]) == (st.metadata["browsergym_action"], None)
    assert "is not on the replayed page" in check_replayed_page(st, {}, gone)


def test_a_target_pushed_out_of_the_screenshot_is_clicked_by_its_bid():
    far = _page([("10", "New 1", 79.0)] + [(str(20 + i), f"New {i + 2}", 134.0 + 55 * i) for i in range(12)]
                + [("40", "Retro handhelds compared", 800.0)])
    st = _step("10", "mouse_move(195.0, 82.0)\nnoop(100)\nmouse_click(195.0, 82.0)")
    assert retarget(st, far, st.metadata["browsergym_action"])[0] == "click('40')"
    hover = _step("10", "mouse_move(195.0, 82.0)")
    assert retarget(hover, far, "mouse_move(195.0, 82.0)")[0] == "hover('40')"


def test_a_goto_goes_where_the_sites_are_served_now():
    """Episodes carry the URLs of the sites they were recorded on (the bundled corpus: the test
    run's ports); a replay on sites served elsewhere goes to the same pages there."""
    from types import SimpleNamespace

    from mag_dataset.harness.recapture import _to_served, origin_map
    from mag_dataset.harness.recorder import _provenance
    from mag_dataset.sites import site

    task = "sites.tracker.ticket_with_shop_price"  # a cross-site task: it goes to the shop by URL
    shop, tracker = site("shop").base_url, site("tracker").base_url
    stored = _provenance(task)["site_origins"]
    assert stored == {"tracker": tracker, "shop": shop}  # the recorder says where the sites were
    moved = origin_map(SimpleNamespace(metadata={"expert": task, "site_origins": {"shop": "http://127.0.0.1:9999",
                                                                                   "tracker": tracker}}))
    assert moved == {"http://127.0.0.1:9999": shop}
    assert _to_served("goto('http://127.0.0.1:9999/catalogue/?q=bag')", moved) == f"goto('{shop}/catalogue/?q=bag')"
    assert _to_served("goto('http://127.0.0.1:99990/')", moved) == "goto('http://127.0.0.1:99990/')"  # not a prefix
    # recorded before episodes named their origins: the default and the test run's ports are the sites'
    old = origin_map(SimpleNamespace(metadata={"expert": task}))
    for name, now in (("shop", shop), ("tracker", tracker)):
        cls = type(site(name))
        for port in (cls.default_port, cls.default_port + 10000):
            if f"http://127.0.0.1:{port}" != now:
                assert old[f"http://127.0.0.1:{port}"] == now
