"""Template guides: one per action type, naming the target as it reads on screen."""

from __future__ import annotations

import pytest

from mag_dataset.actions import ACTION_SPACE, ActionType
from mag_dataset.template_guides import MAX_QUOTE, template_guide
from mag_dataset.schema import Action, Candidate


def cand(role: str, text: str, cid: str = "7") -> Candidate:
    return Candidate(id=cid, role=role, text=text, bbox=(0, 0, 10, 10))


def test_type_names_the_field():
    a = Action(type="type", element_id="4", text="Cheree")
    assert template_guide(a, cand("textbox", "Username", "4")) == "Type 'Cheree' into the Username field."
    assert template_guide(a, cand("textbox", "", "4")) == "Type 'Cheree' into the text field."
    assert template_guide(a, cand("searchbox", "Search box", "4")) == "Type 'Cheree' into the Search box."
    assert template_guide(Action(type="type", element_id="4", text=""), cand("textbox", "Name")) == "Clear the Name field."


@pytest.mark.parametrize(
    "role,text,expected",
    [
        ("button", "Submit", "Click the 'Submit' button."),
        ("link", "egestas", "Click the 'egestas' link."),
        ("checkbox", "Jc", "Click the 'Jc' checkbox."),
        ("image", "trash", "Click the 'trash' icon."),
        ("span", "Anne", "Click 'Anne'."),
        ("button", "", "Click the button."),
        ("div", "", "Click the div."),
    ],
)
def test_click_by_role(role, text, expected):
    assert template_guide(Action(type="click", element_id="7"), cand(role, text)) == expected


def test_click_without_target():
    assert template_guide(Action(type="click", coordinate=(3, 4)), None) == "Click the highlighted element."


def test_select_names_value_and_list():
    a = Action(type="select", element_id="13", value="Norfolk Island")
    assert template_guide(a, cand("combobox", "Country", "13")) == "Select 'Norfolk Island' from the Country drop-down."
    # a select's accessible text is often its current option: do not repeat the value
    assert template_guide(a, cand("combobox", "Norfolk Island", "13")) == "Select 'Norfolk Island' from the drop-down."


def test_untargeted_types():
    assert template_guide(Action(type="press", key="Enter")) == "Press Enter."
    assert template_guide(Action(type="press", key="ArrowDown")) == "Press ArrowDown."
    assert template_guide(Action(type="scroll", direction="down")) == "Scroll down to see more of the page."
    assert template_guide(Action(type="goto", url="http://x.org")) == "Go to http://x.org."
    assert template_guide(Action(type="finish", answer="42")) == "The answer is '42'."
    assert template_guide(Action(type="finish")) == "The task is done."
    assert template_guide(Action(type="finish", answer="done")) == "The task is done."  # no "answer" for a change


def test_apostrophes_switch_to_double_quotes():
    a = Action(type="type", element_id="4", text="Chicago, IL (O'Hare)")
    assert template_guide(a, cand("textbox", "From:", "4")) == 'Type "Chicago, IL (O\'Hare)" into the From field.'


def test_a_long_label_is_quoted_by_its_first_words_and_typed_text_whole():
    """No ellipsis (the guide lint's cut_label): a label of more than eight words and
    MAX_QUOTE characters is quoted by its first five words, which the lint accepts as naming
    it; a typed text is the user's to type, whole; icon-font glyphs are dropped."""
    from mag_dataset.builder.guide_lint import names_label

    text = "Good summary, the cable part deserves its own thread and a long answer " * 2
    g = template_guide(Action(type="click", element_id="7"), cand("button", text))
    assert g == "Click the 'Good summary, the cable part' button." and names_label(g, text) and len(text) > MAX_QUOTE
    typed = template_guide(Action(type="type", element_id="7", text=text), cand("textbox", "Comment"))
    assert " ".join(text.split()) in typed and "…" not in typed
    assert template_guide(Action(type="click", element_id="7"), cand("link", "All Categories \uf078")) == (
        "Click the 'All Categories' link.")


def test_every_action_type_has_a_template():
    examples = {
        ActionType.CLICK: Action(type="click", element_id="1"),
        ActionType.TYPE: Action(type="type", element_id="1", text="a"),
        ActionType.SELECT: Action(type="select", element_id="1", value="a"),
        ActionType.HOVER: Action(type="hover", element_id="1"),
        ActionType.SCROLL: Action(type="scroll", direction="up"),
        ActionType.PRESS: Action(type="press", key="Tab"),
        ActionType.GOTO: Action(type="goto", url="u"),
        ActionType.GO_BACK: Action(type="go_back"),
        ActionType.GO_FORWARD: Action(type="go_forward"),
        ActionType.NEW_TAB: Action(type="new_tab"),
        ActionType.TAB_FOCUS: Action(type="tab_focus", value="1"),
        ActionType.CLOSE_TAB: Action(type="close_tab"),
        ActionType.FINISH: Action(type="finish"),
    }
    assert set(examples) == set(ACTION_SPACE)  # coverage: all 13 types
    guides = {t: template_guide(a, cand("button", "Go") if ACTION_SPACE[t].targeted else None) for t, a in examples.items()}
    assert all(g and g.endswith(".") and g[0].isupper() for g in guides.values()), guides
    assert len(set(guides.values())) == len(guides)  # each type reads differently


def test_guides_module_is_light():
    import subprocess
    import sys

    code = ("import sys, mag_dataset.template_guides; "
            "bad = [m for m in ('torch', 'playwright', 'browsergym', 'datasets', 'gradio') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
