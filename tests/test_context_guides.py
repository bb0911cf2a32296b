"""Context guides for site steps: deterministic, varied by key, naming region, target and purpose."""

from __future__ import annotations

import statistics

from mag_dataset.live.observe import Element
from mag_dataset.context_guides import GuideContext, context_guide, guide_context
from mag_dataset.schema import Action, Candidate


def _el(bid, tag, parent=None, text="", role="", children=()):
    return Element(bid=bid, tag=tag, attrs={}, parent=parent, text=text, own_text=text, role=role, name="",
                   bbox=(0, 0, 10, 10), visibility=1.0, clickable=False, som=False, children=list(children))


PAGE = {
    "1": _el("1", "h1", text="Order management"),
    "2": _el("2", "nav", children=["3"]),
    "3": _el("3", "a", parent="2", text="Dashboard"),
    "4": _el("4", "h2", text="Recent orders"),
    "5": _el("5", "table", children=["6", "7"]),
    "6": _el("6", "caption", parent="5", text="Orders"),
    "7": _el("7", "a", parent="5", text="Order #1043"),
    "8": _el("8", "h2", text="Filters"),
    "9": _el("9", "button", text="Apply filters"),
}
LINK = Candidate(id="7", role="link", text="Order #1043", bbox=(0, 0, 9, 9))


def test_region_is_the_landmark_or_the_titled_table_or_the_section_heading():
    assert guide_context(PAGE, "3") == GuideContext(region="the navigation bar", page="Order management")
    assert guide_context(PAGE, "7").region == "the 'Orders' table"
    assert guide_context(PAGE, "9").region == "the 'Filters' section"
    assert guide_context(PAGE, None) == GuideContext(page="Order management")


def test_same_key_same_guide_and_keys_vary_the_phrasing():
    ctx = guide_context(PAGE, "7")
    act = Action(type="click", element_id="7")
    # the same key gives the same guide in any process (a pinned value, not a call compared with itself)
    assert context_guide(act, LINK, ctx, "t:0") == (
        "In the 'Orders' table of the Order management page, click the 'Order #1043' link to open the 'Order #1043' page."
    )
    forms = {context_guide(act, LINK, ctx, f"t:{k}") for k in range(30)}
    assert len(forms) >= 4
    for g in forms:
        assert "'Order #1043' link" in g and "'Orders' table" in g and g.endswith(".")


def test_guides_name_typed_text_selected_value_answer_and_what_a_scroll_reveals():
    field = Candidate(id="5", role="textbox", text="Summary", bbox=(0, 0, 9, 9))
    ctx = GuideContext(region="the 'New ticket' form", page="New Ticket")
    assert "'Printer jams'" in context_guide(Action(type="type", element_id="5", text="Printer jams"), field, ctx, "a")
    sel = Candidate(id="6", role="combobox", text="Priority", bbox=(0, 0, 9, 9))
    assert "'major'" in context_guide(Action(type="select", element_id="6", value="major"), sel, ctx, "b")
    assert "'42'" in context_guide(Action(type="finish", answer="42"), None, ctx, "c")
    scroll = context_guide(Action(type="scroll", direction="down"), None,
                           GuideContext(page="Basket", next_label="Proceed to checkout", next_noun="button"), "d")
    assert "'Proceed to checkout' button" in scroll and "down" in scroll


def test_median_length_is_at_least_ten_words():
    ctx = guide_context(PAGE, "7")
    acts = [(Action(type="click", element_id="7"), LINK),
            (Action(type="type", element_id="5", text="blue mug"), Candidate(id="5", role="searchbox", text="Search", bbox=(0, 0, 1, 1))),
            (Action(type="finish", answer="3"), None), (Action(type="finish"), None)]
    words = [len(context_guide(a, t, ctx, f"k{i}").split()) for i in range(20) for a, t in acts]
    assert statistics.median(words) >= 10


def test_a_key_press_and_a_finish_are_given_their_own_purpose():
    """PageDown moves the page (to what the next step needs), Escape closes, Enter submits; a
    finish says "done" for a change and reports the answer of a question (the guide lint's
    press_key and finish_kind rules hold for every phrasing)."""
    from mag_dataset.builder.guide_lint import lint_step
    from mag_dataset.raw import RawStep

    ctx = GuideContext(page="Orders", next_label="Save changes", next_noun="button")
    for k in range(12):
        key = f"t:{k}"
        down = context_guide(Action(type="press", key="PageDown"), None, ctx, key)
        assert "move down the page to the 'Save changes' button" in down or "page down" in down
        assert "close" in context_guide(Action(type="press", key="Escape"), None, GuideContext(), key) or (
            "dismiss" in context_guide(Action(type="press", key="Escape"), None, GuideContext(), key))
        for action, answer in ((Action(type="press", key="End"), None), (Action(type="press", key="Escape"), None),
                               (Action(type="press", key="Enter"), None), (Action(type="finish", answer="done"), "done"),
                               (Action(type="finish", answer="59"), "59")):
            guide = context_guide(action, None, ctx, key)
            step = RawStep(step_index=0, screenshot="s.webp", som_screenshot="", image_width=9, image_height=9,
                           candidates=(), action=action, target_bbox=None, guide=guide)
            assert lint_step(step, "t:0", answer=answer) == [], guide
        assert "'59'" in context_guide(Action(type="finish", answer="59"), None, ctx, key)
        assert "answer" not in context_guide(Action(type="finish", answer="done"), None, ctx, key)


def test_plan_guides_say_what_the_step_is_for_and_pass_the_lint():
    """An expert's plan (kit.why) becomes the guide: its purpose, the action, the target's label
    and the place, phrasing by seed; recorded purposes survive regeneration."""
    from mag_dataset.builder.guide_lint import lint_step
    from mag_dataset.live import expert_kit as kit
    from mag_dataset.context_guides import plan_guide
    from mag_dataset.raw import RawStep

    d = kit.why(kit.Decision(kit.ActionType.CLICK, "7"), "check the items in your basket before paying",
                "see what your basket holds")
    assert d.purpose == ("check the items in your basket before paying", "see what your basket holds")
    assert kit.why(kit.press("PageDown"), "x") == kit.press("PageDown") and kit.why(None, "x") is None
    ctx = GuideContext(region="the page header", page="Catalogue")
    cand = Candidate(id="7", role="link", text="Basket", bbox=(0, 0, 9, 9))
    guides = {plan_guide(Action(type="click", element_id="7"), cand, ctx, d.purpose, f"t:{k}") for k in range(20)}
    assert len(guides) >= 4 and all("'Basket' link" in g and "page header" in g for g in guides)
    for action, answer in ((Action(type="type", element_id="7", text="Ghent"), None),
                           (Action(type="finish", answer="done"), "done"), (Action(type="finish", answer="59"), "59")):
        for k in range(8):
            g = plan_guide(action, cand, ctx, ["find how many orders are pending"], f"t:{k}")
            step = RawStep(step_index=0, screenshot="s.webp", som_screenshot="", image_width=9, image_height=9,
                           candidates=(cand,), action=action, target_bbox=None, guide=g)
            assert lint_step(step, "t:0", answer=answer) == [], g
