"""Guide-action consistency: does the guide a model wrote describe the action it emitted?

An extension of the protocol, reported apart from the papers' metrics. MAG (arXiv
2607.10079) asks a guide agent for an action *and* a guide for it; WebMRE (arXiv
2609.27353) scores the two separately, so a guide "Click 'Save'" written next to an action
on 'Cancel' scores well on BLEU and on step action accuracy alike, which is exactly the
failure a guide agent must not make. This module checks the pair, deterministically,
without a judge. Pure: no I/O.

A guide is consistent with an action when all of these hold:

1. **Verb.** A guide token (lower-cased, with a plural/past/gerund ending taken off) is
   one of the verbs of :data:`VERBS` for the action's type.
2. **Element** (targeted actions). The guide names the acted element: one of the
   element's content tokens (its candidate text / accessible name, minus
   :data:`STOPWORDS`) is a guide token; an element with no content token is named by one
   of the nouns of its role in :data:`ROLE_NOUNS` (a role outside the table is accepted).
   The acted element is the predicted element id in the som view, and in the coord view
   the smallest candidate box that holds the point. An id absent from the menu, or a
   point on no candidate, names nothing: inconsistent.
3. **Argument.** A ``type`` action's text and a ``select`` action's value appear in the
   guide: every one of their tokens is a guide token (an empty text needs no token).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from mag_dataset.actions import ACTION_SPACE, ActionType
from mag_dataset.schema import Action, Candidate, point_in_box

#: Verbs a guide may use for each action type (matched against stemmed guide tokens).
VERBS: dict[ActionType, frozenset[str]] = {
    ActionType.CLICK: frozenset(
        "click press tap select choose pick open hit follow check uncheck tick toggle expand collapse "
        "submit activate push enable disable go navigate view sort filter add remove delete save".split()
    ),
    ActionType.TYPE: frozenset(
        "type enter fill write input put insert search provide add specify replace change set clear "
        "erase delete empty key".split()
    ),
    ActionType.SELECT: frozenset("select choose pick set change switch".split()),
    ActionType.HOVER: frozenset("hover move point mouse place rest".split()),
    ActionType.SCROLL: frozenset("scroll swipe move page".split()),
    ActionType.PRESS: frozenset("press hit tap use hold submit".split()),
    ActionType.GOTO: frozenset("go open navigate visit load head browse return".split()),
    ActionType.GO_BACK: frozenset("back return previous".split()),
    ActionType.GO_FORWARD: frozenset("forward next".split()),
    ActionType.NEW_TAB: frozenset("open new create".split()),
    ActionType.TAB_FOCUS: frozenset("switch focus go return change select".split()),
    ActionType.CLOSE_TAB: frozenset("close exit shut".split()),
    ActionType.FINISH: frozenset(
        "done finish finished complete completed stop answer end nothing already report submit".split()
    ),
}

#: Words that do not name an element.
STOPWORDS: frozenset[str] = frozenset(
    "a an the of to in on at for from by with and or is are be this that these those it its your you "
    "my our as into onto up down".split()
)

#: How a guide may name an element that has no text, by role.
ROLE_NOUNS: dict[str, frozenset[str]] = {
    "button": frozenset({"button"}),
    "link": frozenset({"link"}),
    "a": frozenset({"link"}),
    "checkbox": frozenset({"checkbox", "box", "check"}),
    "radio": frozenset({"option", "radio", "button"}),
    "tab": frozenset({"tab"}),
    "menuitem": frozenset({"menu", "item", "option"}),
    "option": frozenset({"option", "item"}),
    "textbox": frozenset({"field", "box", "input", "textbox", "text"}),
    "searchbox": frozenset({"search", "box", "field"}),
    "textarea": frozenset({"field", "box", "area", "text"}),
    "input": frozenset({"field", "box", "input"}),
    "spinbutton": frozenset({"field", "box", "number"}),
    "combobox": frozenset({"drop", "dropdown", "list", "menu", "box", "field"}),
    "listbox": frozenset({"list", "drop", "dropdown", "menu"}),
    "img": frozenset({"icon", "image", "picture"}),
    "image": frozenset({"icon", "image", "picture"}),
}

_TOKEN = re.compile(r"\w+", re.UNICODE)
_ENDINGS = ("ing", "ed", "es", "s")


def guide_tokens(text: str) -> list[str]:
    """Lower-cased NFKC word tokens (punctuation dropped)."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


@functools.lru_cache(maxsize=1 << 16)  # a memo of a pure function: guide words repeat a lot
def _stems(token: str) -> frozenset[str]:
    out = {token}
    for end in _ENDINGS:
        if token.endswith(end) and len(token) - len(end) >= 2:
            stem = token[: -len(end)]
            out.add(stem)
            out.add(stem + "e")  # typing -> typ -> type, closed -> clos -> close
            if len(stem) >= 3 and stem[-1] == stem[-2]:
                out.add(stem[:-1])  # dropped -> dropp -> drop
    return frozenset(out)


def acted_element(action: Action, candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate an action acts on: its element id, else the smallest box holding its point."""
    if action.element_id is not None:
        for c in candidates:
            if c.id == action.element_id:
                return c
        return None
    if action.coordinate is None:
        return None
    holding = [c for c in candidates if point_in_box(action.coordinate, c.bbox)]
    if not holding:
        return None
    # the innermost element: smallest area, then the menu's order
    return min(holding, key=lambda c: (c.bbox[2] - c.bbox[0]) * (c.bbox[3] - c.bbox[1]))


def check(guide: str, action: Action, candidates: Sequence[Candidate]) -> tuple[bool, str | None]:
    """Whether a guide describes an action.

    Args:
        guide: the generated guide.
        action: the generated action (element id in som, point in screenshot pixels in coord).
        candidates: the step's candidate menu (in the coord view, the som row's menu).

    Returns:
        ``(consistent, why_not)``: ``why_not`` is ``verb``, ``element`` or ``argument``
        (the first rule that fails), None when consistent.
    """
    toks = guide_tokens(guide)
    tokset = set(toks)
    stems: set[str] = set()
    for t in tokset:
        stems |= _stems(t)
    if VERBS[action.type].isdisjoint(stems):
        return False, "verb"
    if ACTION_SPACE[action.type].targeted:
        el = acted_element(action, candidates)
        if el is None:
            return False, "element"
        content = [t for t in guide_tokens(el.text) if t not in STOPWORDS]
        if content:
            if not any(t in tokset for t in content):
                return False, "element"
        else:
            nouns = ROLE_NOUNS.get(el.role.lower())
            if nouns is not None and not nouns & stems:
                return False, "element"
    arg = action.text if action.type is ActionType.TYPE else action.value if action.type is ActionType.SELECT else None
    if arg is not None and not all(t in tokset for t in guide_tokens(arg)):
        return False, "argument"
    return True, None


__all__ = ["ROLE_NOUNS", "STOPWORDS", "VERBS", "acted_element", "check", "guide_tokens"]
