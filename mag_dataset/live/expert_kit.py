"""The one expert kit: what every expert (MiniWoB++ and the four sites) reads from an
observation and how it acts, each helper written once.

An expert is ``expert(ob, memory) -> Decision | None`` (:mod:`mag_dataset.live.experts`,
:class:`mag_dataset.sites.task.SiteTask`); it reads only the observation
(:class:`~mag_dataset.live.observe.Observation`: elements by bid with tag, attributes, text,
box; the URL; the focused element) and its per-episode ``memory``. The kit gives it:

* **finding** elements, in document order: :func:`find`, :func:`find_all`, :func:`by_id`,
  :func:`by_name`, :func:`link`, :func:`button`, :func:`field`; texts compare through
  :func:`norm` (whitespace collapsed, lower case). A predicate that raises ``KeyError`` or
  ``AttributeError`` on an element does not match it.
* **acting** on an element: :func:`click`, :func:`fill`, :func:`select`, all through
  :func:`reach`, the one scroll policy (below); :func:`click_now` / :func:`fill_now` where a
  page fits its viewport (MiniWoB++); :func:`press`, :func:`finish`; :func:`once` for
  one-off steps remembered in ``memory``; :func:`why` states what a step is for in the
  task (its guide's purpose, the expert's plan).
* **where** the page is: :func:`path`, :func:`query`, :func:`location`, :func:`page_text`.

Absent elements. The acting helpers return None for an element that is None ("nothing to
do here": the caller tries something else or gives up); :func:`require` turns an absence
the expert cannot go on without into :class:`NotOnPage`, which names what is missing.

The scroll policy (:func:`reach`), the same for every site, as a person reads a page:

1. the element is a candidate (in the Set-of-Mark menu) and its vertical centre lies in the
   viewport: act on it;
2. it has no box, or a zero-height box inside the viewport (hidden where it stands, such as
   a ``<select>`` behind a select2 widget): None, no scroll can help;
3. it is a screen or more away and no text field has the focus: a page key (``PageDown`` /
   ``PageUp``), a screen at a time;
4. otherwise a wheel scroll (``scroll down`` / ``scroll up``) towards it.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mag_dataset.actions import ActionType
from mag_dataset.live.observe import Element, Observation

#: Keys that move the page rather than the focused element (a scroll, for :func:`is_scroll`).
PAGE_KEYS = ("PageDown", "PageUp", "End", "Home")
#: Tags that keep the keyboard: with one focused, a page key would edit or move inside it.
TEXT_TAGS = ("input", "textarea", "select")


class ExpertError(RuntimeError):
    """The expert cannot read the task from the observation."""


class NotOnPage(ExpertError):
    """An element the expert cannot go on without is not on the page (:func:`require`)."""


@dataclass(frozen=True)
class Decision:
    """The expert's next action; ``bid`` is the target element for targeted types."""

    type: ActionType
    bid: str | None = None
    text: str | None = None
    value: str | None = None
    key: str | None = None
    direction: str | None = None
    url: str | None = None
    answer: str | None = None
    #: What the step is for in the task, in a few phrasings (infinitive clauses with the task's
    #: parameters filled in: "check the items in your basket before paying"): the expert's
    #: plan, from which the recorder writes the step's guide (:func:`why`).
    purpose: tuple[str, ...] = ()


# ----------------------------------------------------------------------------- finding
def norm(s: str | None) -> str:
    """Whitespace collapsed, lower case: how texts are compared."""
    return " ".join((s or "").split()).lower()


def visible(ob: Observation, el: Element) -> bool:
    """Whether ``el`` is in the candidate menu (marked and in the viewport)."""
    return ob.candidate(el.bid) is not None


def _matches(pred: Callable[[Element], bool], el: Element) -> bool:
    try:
        return bool(pred(el))
    except (KeyError, AttributeError):
        return False


def find_all(ob: Observation, pred: Callable[[Element], bool], *, visible_only: bool = False) -> list[Element]:
    """Every element matching ``pred``, in document order (only candidates with ``visible_only``)."""
    return [el for el in ob.elements.values() if _matches(pred, el) and (not visible_only or visible(ob, el))]


def find(ob: Observation, pred: Callable[[Element], bool], *, visible_only: bool = False,
         prefer_visible: bool = False) -> Element | None:
    """The first element matching ``pred`` in document order, or None.

    Args:
        visible_only: only candidates.
        prefer_visible: the first candidate when there is one, else the first element with a
            box, else the first match (a repeated link: the one on screen).
    """
    hits = find_all(ob, pred, visible_only=visible_only)
    if prefer_visible and hits:
        return next((el for el in hits if visible(ob, el)), None) or next(
            (el for el in hits if el.bbox is not None), hits[0])
    return hits[0] if hits else None


def by_id(ob: Observation, html_id: str) -> Element | None:
    """The element with HTML ``id`` ``html_id``."""
    return find(ob, lambda e: e.attrs.get("id") == html_id)


def by_name(ob: Observation, name: str, *, tag: str | None = None, value: str | None = None,
            prefer_visible: bool = False) -> Element | None:
    """The element with HTML ``name`` ``name`` (and ``tag``, ``value`` when given), hidden inputs aside."""
    return find(ob, lambda e: e.attrs.get("name") == name and (tag is None or e.tag == tag)
                and (value is None or e.attrs.get("value") == value) and e.attrs.get("type") != "hidden",
                prefer_visible=prefer_visible)


def field(ob: Observation, name: str, tag: str | None = None, *, prefer_visible: bool = False) -> Element | None:
    """The form field (``input``, ``select``, ``textarea``; not hidden) named ``name``."""
    tags = (tag,) if tag is not None else TEXT_TAGS
    return find(ob, lambda e: e.tag in tags and e.attrs.get("name") == name and e.attrs.get("type") != "hidden",
                prefer_visible=prefer_visible)


def link(ob: Observation, text: str | None = None, *, href: str | None = None, exact: bool = True,
         prefer_visible: bool = False) -> Element | None:
    """The ``<a>`` whose text is ``text`` (contains it unless ``exact``) and whose ``href``
    matches the regular expression ``href`` (either may be omitted)."""
    want = norm(text) if text is not None else None

    def pred(e: Element) -> bool:
        if e.tag != "a":
            return False
        if want is not None and not (norm(e.text) == want if exact else want in norm(e.text)):
            return False
        return href is None or re.search(href, e.attrs.get("href", "")) is not None

    return find(ob, pred, prefer_visible=prefer_visible)


def button(ob: Observation, text: str, *, prefer_visible: bool = False) -> Element | None:
    """The ``<button>`` reading ``text``, or the submit ``<input>`` whose value is ``text``."""
    want = norm(text)
    return find(ob, lambda e: (e.tag == "button" and norm(e.text) == want)
                or (e.tag == "input" and e.attrs.get("type") == "submit" and norm(e.attrs.get("value")) == want),
                prefer_visible=prefer_visible)


def require(el: Element | None, what: str) -> Element:
    """``el``, or :class:`NotOnPage` naming ``what`` when it is None."""
    if el is None:
        raise NotOnPage(f"{what} not found on the page")
    return el


# ----------------------------------------------------------------------------- where
def _url(where: Observation | str) -> str:
    return where if isinstance(where, str) else (where.url or "")


def path(where: Observation | str) -> str:
    """The URL's path (no host, query or fragment)."""
    return urllib.parse.urlsplit(_url(where)).path


def query(where: Observation | str) -> dict[str, list[str]]:
    """The URL's query, parsed."""
    return urllib.parse.parse_qs(urllib.parse.urlsplit(_url(where)).query)


def location(where: Observation | str) -> str:
    """The URL without host and fragment: path and query (``/search/?q=tea``)."""
    parts = urllib.parse.urlsplit(_url(where))
    return parts.path + (f"?{parts.query}" if parts.query else "")


def page_text(ob: Observation) -> str:
    """The whole text of the page (hidden parts included)."""
    root = find(ob, lambda e: e.tag == "body") or find(ob, lambda e: e.parent is None)
    return root.all_text if root is not None else " ".join(e.own_text for e in ob.elements.values())


# ----------------------------------------------------------------------------- acting
def view_height(ob: Observation) -> float:
    """The bottom of the viewport in element-box coordinates (full-screenshot px)."""
    return float(ob.conv.crop[1] + ob.height)


def typing(ob: Observation) -> bool:
    """Whether a text field (or a select) has the keyboard."""
    focused = ob.elements.get(ob.focused or "")
    return focused is not None and focused.tag in TEXT_TAGS


def reach(ob: Observation, el: Element | None, then: Decision) -> Decision | None:
    """``then`` when ``el`` is in view, else the scroll that brings it there (module docstring);
    None when ``el`` is None or no scroll can bring it."""
    if el is None or el.bbox is None:
        return None
    top, bottom = el.bbox[1], el.bbox[3]
    vh = view_height(ob)
    if visible(ob, el) and 0 <= (top + bottom) / 2 <= vh:
        return then
    if 0 <= top < vh and bottom - top < 2:
        return None  # hidden where it stands: scrolling will not show it
    down = (top + bottom) / 2 > vh
    far = (top - vh if down else -bottom) >= vh
    if far and not typing(ob):
        return Decision(ActionType.PRESS, key="PageDown" if down else "PageUp")
    return Decision(ActionType.SCROLL, direction="down" if down else "up")


def click(ob: Observation, el: Element | None) -> Decision | None:
    """Click ``el`` (reached first); None when it is None or cannot be reached."""
    return reach(ob, el, Decision(ActionType.CLICK, el.bid)) if el is not None else None


def fill(ob: Observation, el: Element | None, text: str) -> Decision | None:
    """Type ``text`` into ``el`` (reached first); None when it is None or already holds ``text``."""
    if el is None or (el.value or "") == text:
        return None
    return reach(ob, el, Decision(ActionType.TYPE, el.bid, text=text))


def select(ob: Observation, el: Element | None, value: str) -> Decision | None:
    """Choose ``value`` in the ``<select>`` ``el`` (reached first); None when it is None."""
    return reach(ob, el, Decision(ActionType.SELECT, el.bid, value=value)) if el is not None else None


def click_now(el: Element | None) -> Decision | None:
    """Click ``el`` where it stands, no scroll (pages that fit their viewport: MiniWoB++); None when it is None."""
    return Decision(ActionType.CLICK, el.bid) if el is not None else None


def fill_now(el: Element, text: str) -> Decision | None:
    """Type ``text`` into ``el`` where it stands, no scroll; None when it already holds ``text``."""
    return Decision(ActionType.TYPE, el.bid, text=text) if (el.value or "") != text else None


def press(key: str) -> Decision:
    """Press ``key`` on the focused element (``Enter`` submits a search box)."""
    return Decision(ActionType.PRESS, key=key)


def finish(answer: str = "done") -> Decision:
    """End the episode with ``answer`` (the value asked for, or ``done``)."""
    return Decision(ActionType.FINISH, answer=answer)


def why(d: Decision | None, *phrasings: str) -> Decision | None:
    """``d`` with the step's purpose in the task (its guide's "why", several phrasings chosen
    by seed when the recorder writes the guide). A scroll towards the target, or None, passes
    unchanged: its guide names what it brings into view."""
    if d is None or is_scroll(d) or not phrasings:
        return d
    return dataclasses.replace(d, purpose=tuple(" ".join(p.split()) for p in phrasings))


def is_scroll(d: Decision | None) -> bool:
    """Whether ``d`` only moves the page (a wheel scroll or a page key)."""
    return d is not None and (d.type is ActionType.SCROLL or (d.type is ActionType.PRESS and d.key in PAGE_KEYS))


def once(memory: dict[str, Any], key: str, d: Decision | None) -> Decision | None:
    """Pass ``d`` on, remembering ``memory[key] = True`` when it does the one-off step itself
    (not when it is None or a scroll towards it)."""
    if d is not None and not is_scroll(d):
        memory[key] = True
    return d
