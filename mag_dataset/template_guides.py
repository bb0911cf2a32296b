"""Template guides: one short imperative sentence per gold action (``guide_source=template``).

A guide tells a user what to do next, naming the target the way it reads on screen::

    >>> from mag_dataset.schema import Action, Candidate
    >>> template_guide(Action(type="type", element_id="4", text="Cheree"),
    ...                Candidate(id="4", role="textbox", text="Username", bbox=(0, 0, 9, 9)))
    "Type 'Cheree' into the Username field."
    >>> template_guide(Action(type="click", element_id="7"),
    ...                Candidate(id="7", role="button", text="Submit", bbox=(0, 0, 9, 9)))
    "Click the 'Submit' button."

Templates are keyed by action type (the same :class:`~mag_dataset.actions.ActionType` as the
rest of the package) and, for clicks, by the target's role. Light import: no heavy deps.
"""

from __future__ import annotations

import unicodedata

from mag_dataset.actions import ActionType
from mag_dataset.schema import Action, Candidate

#: Longest target label quoted whole in a guide; a longer one of more than eight words is quoted
#: by its first five (what the guide lint accepts as naming it), never cut with an ellipsis.
MAX_QUOTE = 60

#: Noun used for a clicked element of a role ("Click the 'Submit' button.").
CLICK_NOUNS: dict[str, str] = {
    "button": "button",
    "link": "link",
    "a": "link",
    "checkbox": "checkbox",
    "radio": "option",
    "tab": "tab",
    "menuitem": "menu item",
    "treeitem": "item",
    "option": "option",
    "textbox": "field",
    "searchbox": "search box",
    "combobox": "drop-down",
    "img": "icon",
    "image": "icon",
}

_FIELD_ROLES = frozenset({"textbox", "searchbox", "combobox", "input", "textarea", "spinbutton"})


def _text(text: str | None) -> str:
    """Text as a guide quotes it: single spaces, without private-use glyphs (icon fonts), control
    or format characters. Typed texts, values and answers are quoted whole."""
    text = "".join(ch for ch in (text or "") if unicodedata.category(ch) not in ("Co", "Cc", "Cf", "Cs", "Cn"))
    return " ".join(text.split())


def _clean(text: str | None) -> str:
    """A label as a guide quotes it: :func:`_text`, and a label longer than :data:`MAX_QUOTE`
    characters and eight words by its first five words."""
    text = _text(text)
    words = text.split()
    if len(text) > MAX_QUOTE and len(words) > 8:
        text = " ".join(words[:5]).rstrip(" ,;:.")
    return text


def _quote(text: str) -> str:
    # double quotes when the text holds an apostrophe (O'Hare), so the quote stays readable
    return f'"{text}"' if "'" in text else f"'{text}'"


def _field_name(target: Candidate | None) -> str:
    name = _clean(target.text).rstrip(":").strip() if target is not None else ""
    if not name:
        return "the text field"
    if name.lower().endswith(("field", "box")):
        return f"the {name}"
    return f"the {name} field"


def _click(target: Candidate | None, verb: str) -> str:
    if target is None:
        return f"{verb} the highlighted element."
    text = _clean(target.text)
    if target.role.lower() in _FIELD_ROLES:
        text = text.rstrip(":").strip()
    noun = CLICK_NOUNS.get(target.role.lower())
    if text and noun:
        return f"{verb} the {_quote(text)} {noun}."
    if text:
        return f"{verb} {_quote(text)}."
    if noun:
        return f"{verb} the {noun}."
    return f"{verb} the {target.role or 'element'}."


def template_guide(action: Action, target: Candidate | None = None) -> str:
    """Write the template guide of an action.

    Args:
        action: the gold action.
        target: the candidate the action acts on (None for untargeted actions, or when the
            target is not in the menu).

    Returns:
        One sentence ending with a full stop.
    """
    t = action.type
    if t is ActionType.CLICK:
        return _click(target, "Click")
    if t is ActionType.HOVER:
        return _click(target, "Hover over")
    if t is ActionType.TYPE:
        text = action.text or ""
        if text == "":
            return f"Clear {_field_name(target)}."
        return f"Type {_quote(_text(text))} into {_field_name(target)}."
    if t is ActionType.SELECT:
        value = _quote(_text(action.value))
        name = _clean(target.text) if target is not None else ""
        if name and name.lower() != _text(action.value).lower():
            return f"Select {value} from the {name} drop-down."
        return f"Select {value} from the drop-down."
    if t is ActionType.SCROLL:
        return f"Scroll {action.direction} to see more of the page."
    if t is ActionType.PRESS:
        key = action.key or ""
        return f"Press {key}."
    if t is ActionType.GOTO:
        return f"Go to {action.url}."
    if t is ActionType.GO_BACK:
        return "Go back to the previous page."
    if t is ActionType.GO_FORWARD:
        return "Go forward to the next page."
    if t is ActionType.NEW_TAB:
        return "Open a new tab."
    if t is ActionType.TAB_FOCUS:
        return f"Switch to tab {action.value}."
    if t is ActionType.CLOSE_TAB:
        return "Close the current tab."
    if t is ActionType.FINISH:
        if action.answer and action.answer.strip().lower() != "done":
            return f"The answer is {_quote(_text(action.answer))}."
        return "The task is done."
    raise ValueError(f"no guide template for action type {t!r}")  # pragma: no cover
