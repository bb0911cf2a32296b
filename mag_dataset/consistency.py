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
   The acted element is the predicted element id in the som view. In the coord view it
   is the smallest candidate box that holds the point (:func:`acted_element`), and the
   guide may also name one of :func:`acted_elements`: candidates carry no stacking order,
   so a point where two elements of similar size partly overlap (a drop-down list drawn
   over a text field) may hit either — the competitors of
   :func:`mag_dataset.harness.unify.map_point`'s ambiguity rule, same tolerance and area
   ratio — and a point on an element that has no name of its own (its text is empty or
   only a noun of its role: an image called "icon") acts on the smallest named candidate
   that encloses it and is at most :data:`ENCLOSING_AREA_RATIO` times its area (the
   "Reply" button around its icon, not the form around it). An id absent from the menu, or a
   point on no candidate, names nothing: inconsistent.
3. **Argument.** A ``type`` action's text and a ``select`` action's value appear in the
   guide: every one of their tokens is a guide token (an empty text needs no token). A
   long argument may be quoted cut, as guides quote a long text (a wiki page's source):
   the guide then carries the argument's first :data:`MIN_CUT_QUOTE_TOKENS` tokens or
   more, in order and contiguous, and an ellipsis (``…`` or ``...``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from mag_dataset.actions import ACTION_SPACE, ActionType
from mag_dataset.coords import AMBIGUITY_AREA_RATIO, AMBIGUITY_TOLERANCE, restore_element
from mag_dataset.schema import Action, Box, Candidate, point_in_box

#: An unnamed element acts on an enclosing candidate at most this many times its area (a
#: button around its icon, not a form or a page region whose text names everything in it).
ENCLOSING_AREA_RATIO = 10.0

#: Fewest leading tokens of a long argument a guide must quote when it cuts the quote.
MIN_CUT_QUOTE_TOKENS = 5

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
    """The candidate an action acts on: its element id, else the smallest box holding its point.

    The point's element is :func:`mag_dataset.coords.restore_element`'s (smallest
    area, then nearest centre, menu order, id), the rule ``mag unify`` restores clicks by.
    """
    if action.element_id is not None:
        for c in candidates:
            if c.id == action.element_id:
                return c
        return None
    if action.coordinate is None:
        return None
    return restore_element(action.coordinate, candidates)


def _contains(outer: Box, inner: Box) -> bool:
    t = AMBIGUITY_TOLERANCE
    return outer[0] - t <= inner[0] and outer[1] - t <= inner[1] and inner[2] <= outer[2] + t and inner[3] <= outer[3] + t


def _area(box: Box) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def _unnamed(c: Candidate) -> bool:
    """An element with no name of its own: no content token, or only nouns of its role."""
    content = {t for t in guide_tokens(c.text) if t not in STOPWORDS}
    return not content or content <= ROLE_NOUNS.get(c.role.lower(), frozenset())


def acted_elements(action: Action, candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates a guide may name for an action (module docstring, rule 2).

    Returns:
        ``[acted_element]`` for an element id; for a point, the smallest box holding it
        first, then the similar-size boxes partly overlapping it there, then (when the
        smallest has no name of its own) the smallest candidate enclosing it. Empty when
        the action acts on nothing.
    """
    first = acted_element(action, candidates)
    if first is None:
        return []
    if action.element_id is not None or action.coordinate is None:
        return [first]
    out = [first]
    holding = [c for c in candidates if c is not first and point_in_box(action.coordinate, c.bbox)]
    for c in holding:
        same = all(abs(p - q) <= AMBIGUITY_TOLERANCE for p, q in zip(c.bbox, first.bbox))
        overlapping = not _contains(c.bbox, first.bbox) and _area(first.bbox) > AMBIGUITY_AREA_RATIO * _area(c.bbox)
        if same or overlapping:
            out.append(c)
    if _unnamed(first):
        enclosing = [c for c in holding if c not in out and _contains(c.bbox, first.bbox) and not _unnamed(c)
                     and _area(c.bbox) <= ENCLOSING_AREA_RATIO * _area(first.bbox)]
        if enclosing:
            out.append(min(enclosing, key=lambda c: _area(c.bbox)))
    return out


def _names(el: Candidate, tokset: set[str], stems: set[str]) -> bool:
    content = [t for t in guide_tokens(el.text) if t not in STOPWORDS]
    if content:
        return any(t in tokset for t in content)
    nouns = ROLE_NOUNS.get(el.role.lower())
    return nouns is None or bool(nouns & stems)


def _carries(arg: str, guide: str, toks: list[str], tokset: set[str]) -> bool:
    want = guide_tokens(arg)
    if all(t in tokset for t in want):
        return True
    if len(want) <= MIN_CUT_QUOTE_TOKENS or ("…" not in guide and "..." not in guide):
        return False
    # a cut quote: the argument's first tokens, contiguous, then the ellipsis
    for i, t in enumerate(toks):
        if t == want[0]:
            k = 0
            while k < len(want) and i + k < len(toks) and toks[i + k] == want[k]:
                k += 1
            if k >= MIN_CUT_QUOTE_TOKENS:
                return True
    return False


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
        if not any(_names(el, tokset, stems) for el in acted_elements(action, candidates)):
            return False, "element"
    arg = action.text if action.type is ActionType.TYPE else action.value if action.type is ActionType.SELECT else None
    if arg is not None and not _carries(arg, guide, toks, tokset):
        return False, "argument"
    return True, None


__all__ = [
    "ENCLOSING_AREA_RATIO", "MIN_CUT_QUOTE_TOKENS", "ROLE_NOUNS", "STOPWORDS", "VERBS", "acted_element", "acted_elements", "check",
    "guide_tokens",
]
