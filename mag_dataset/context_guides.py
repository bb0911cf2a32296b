"""Context guides for real pages: name the page region and the purpose, not only the element.

WebMRE's gold guides read like a colleague's instruction ("In the Orders list, open order
#1043 to check its shipping address"; median 13 words), where :mod:`mag_dataset.template_guides`
writes one short pattern per action type ("Click the 'Submit' button."). This generator
(``guide_source = "context_template"``) writes guides for steps recorded on the sites from
three facts the recorder knows:

* **where** — the target's *region*: the nearest landmark around it (navigation bar,
  sidebar, header, footer, a dialog, a form or table with its heading) or, failing that,
  the nearest section heading before it, and the page's title (its first ``h1``);
* **what** — the action and its target's on-screen label, as in the template guides;
* **why** — a purpose from the action and its context: what a button's label says it does,
  which page a link opens, what a field is filled for, what a scroll brings into view (the
  next step's target), what answer a ``finish`` reports.

Several surface forms per action type are chosen by ``random.Random(key)`` with a key the
caller derives from the task id and step index, so the same recording always gets the same
guide and a template's guides vary across its tasks. Light import: no heavy dependencies.

    >>> from mag_dataset.schema import Action, Candidate
    >>> ctx = GuideContext(region="the 'Shipping address' form", page="Checkout")
    >>> context_guide(Action(type="click", element_id="7"),
    ...               Candidate(id="7", role="button", text="Continue", bbox=(0, 0, 9, 9)), ctx, "k:0")
    "In the 'Shipping address' form of the Checkout page, click the 'Continue' button to continue as the task requires."
"""

from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass
from typing import Any

from mag_dataset.actions import ActionType
from mag_dataset.template_guides import CLICK_NOUNS, _clean, _quote, _text, template_guide
from mag_dataset.raw import RawEpisode, RawStep
from mag_dataset.schema import Action, Candidate, GuideSource

#: ``guide_source`` value of the guides this module writes.
GUIDE_SOURCE = "context_template"

#: Button labels whose first word says what the click does ("Save changes" -> "to save changes").
ACTION_VERBS = frozenset({
    "add", "apply", "cancel", "change", "checkout", "close", "comment", "confirm", "continue", "create", "delete",
    "edit", "filter", "find", "go", "log", "login", "move", "place", "post", "preview", "proceed", "publish", "register",
    "remove", "rename", "reply", "reopen", "reset", "save", "search", "send", "sign", "submit", "undo", "update",
    "upload", "view", "watch", "unwatch", "like", "follow", "subscribe", "pin", "lock", "assign", "accept",
})


@dataclass(frozen=True)
class GuideContext:
    """Where a step happens and what comes next.

    Attributes:
        region: the target's region as a noun phrase ("the navigation bar", "the 'Filters'
            form"), or "" when none was found.
        page: the page's title (its first heading), or "".
        next_label: label of the next step's target (what a scroll brings into view).
        next_noun: that target's noun ("button", "link", ...).
    """

    region: str = ""
    page: str = ""
    next_label: str = ""
    next_noun: str = ""



#: A section heading's own edit links, as MediaWiki draws them ("History [ edit ]").
_EDIT_LINKS = re.compile(r"\s*\[\s*edit(?:\s*\|\s*edit source)?\s*\]\s*$", re.IGNORECASE)

_EDIT_LINKS_IN = re.compile(r"\s*\[\s*edit(?:\s*\|\s*edit source)?\s*\](?=['\"])", re.IGNORECASE)


def _heading(text: str | None) -> str:
    """A section heading as a guide names it: :func:`_clean`, without the heading's edit links."""
    return _EDIT_LINKS.sub("", _clean(text))


def noun(target: Candidate | None) -> str:
    if target is None:
        return "element"
    return CLICK_NOUNS.get(target.role.lower(), "link" if target.role == "a" else "element")


def _label(target: Candidate | None) -> str:
    return _clean(target.text).rstrip(":").strip() if target is not None else ""


def _where(ctx: GuideContext, rng: random.Random) -> str:
    page = _clean(ctx.page)
    if ctx.region and page:
        return rng.choice([f"In {ctx.region} on the {page} page", f"On the {page} page, in {ctx.region}",
                           f"In {ctx.region} of the {page} page"])
    if ctx.region:
        return rng.choice([f"In {ctx.region}", f"Within {ctx.region}"])
    if page:
        return rng.choice([f"On the {page} page", f"Here on the {page} page"])
    return rng.choice(["On this page", "On the current page"])


def _inline(ctx: GuideContext) -> str:
    """The place as a phrase inside a sentence (no commas)."""
    page = _clean(ctx.page)
    if ctx.region and page:
        return f"in {ctx.region} of the {page} page"
    if ctx.region:
        return f"in {ctx.region}"
    return f"on the {page} page" if page else "on this page"


def _click_purpose(target: Candidate | None, rng: random.Random) -> str:
    label = _label(target)
    first = label.split(" ", 1)[0].lower().strip(".,!?") if label else ""
    kind = noun(target)
    if kind in ("link",) and label:
        return rng.choice([f"to open the {_quote(label)} page", f"to go to {_quote(label)}",
                           f"to open {_quote(label)} and see its details"])
    if first in ACTION_VERBS:
        lower = label[0].lower() + label[1:]
        return rng.choice([f"to {lower}", f"to {lower} as the task requires"])
    if kind in ("checkbox", "option", "tab"):
        return rng.choice([f"to choose {_quote(label)}" if label else "to choose it", "to switch this setting"])
    if kind == "field":
        return "to put the cursor in it"
    return rng.choice(["to continue to the next step", "to move on with the task"])


#: Keys that page through the document, and the way they go.
_PAGE_KEYS = {"PageDown": "down", "End": "down", "ArrowDown": "down", "Space": "down",
              "PageUp": "up", "Home": "up", "ArrowUp": "up"}


def _key_purpose(key: str, ctx: GuideContext, rng: random.Random) -> str:
    """What pressing ``key`` is for: Enter submits, a page key moves through the page (towards
    the next step's target when known), Escape closes what is open, Tab moves to the next field."""
    if key in _PAGE_KEYS:
        way = _PAGE_KEYS[key]
        if ctx.next_label:
            return f"to move {way} the page to the {_quote(_clean(ctx.next_label))} {ctx.next_noun or 'element'}"
        return rng.choice([f"to move {way} the page", f"to page {way} through it"])
    if key == "Escape":
        return rng.choice(["to close the pop-up that is open", "to dismiss the open picker"])
    if key == "Tab":
        return "to move on to the next field"
    if key == "Enter":
        return rng.choice(["to submit what you entered", "to confirm what you entered"])
    return "as the task requires"


def context_guide(action: Action, target: Candidate | None, ctx: GuideContext, key: str) -> str:
    """Write a context guide for one recorded step.

    Args:
        action: the gold action.
        target: the candidate it acts on (None for untargeted actions).
        ctx: region, page title and the next step's target.
        key: seed of the phrasing choice (e.g. ``f"{task_id}:{step_index}"``).

    Returns:
        One sentence ending with a full stop.
    """
    rng = random.Random(key)
    t = action.type
    where = _where(ctx, rng)
    label, kind = _label(target), noun(target)
    thing = f"the {_quote(label)} {kind}" if label else f"the {kind}"
    if t in (ActionType.CLICK, ActionType.HOVER):
        verb = "click" if t is ActionType.CLICK else "hover over"
        why = _click_purpose(target, rng) if t is ActionType.CLICK else "to reveal its menu"
        form = rng.randrange(3)
        if form == 0:
            return f"{where}, {verb} {thing} {why}."
        if form == 1:
            return f"Find {thing} {_inline(ctx)} and {verb} it {why}."
        return f"{why[0].upper() + why[1:]}, {verb} {thing} {_inline(ctx)}."
    if t is ActionType.TYPE:
        text = _quote(_text(action.text or ""))
        field = f"the {label} field" if label and not label.lower().endswith(("field", "box")) else (
            f"the {label}" if label else "the text field")
        searchy = "search" in (label + " " + (target.role if target else "")).lower()
        why = rng.choice(["to search for it", "so the site can look it up"]) if searchy else rng.choice(
            [f"to fill in {field.removeprefix('the ')}", "as the task asks", "before you submit the form"])
        if not action.text:
            return f"{where}, clear {field} {why}."
        form = rng.randrange(3)
        if form == 0:
            return f"{where}, type {text} into {field} {why}."
        if form == 1:
            return f"Enter {text} in {field} {_inline(ctx)} {why}."
        return f"{why[0].upper() + why[1:]}, type {text} into {field} {_inline(ctx)}."
    if t is ActionType.SELECT:
        value = _quote(_text(action.value))
        menu = f"the {label} drop-down" if label else "the drop-down"
        form = rng.randrange(2)
        if form == 0:
            return f"{where}, choose {value} from {menu} to set {label or 'this option'} to it."
        return f"Pick {value} in {menu} {_inline(ctx)} so that the right option is set."
    if t is ActionType.SCROLL:
        direction = action.direction or "down"
        page = f"the {_clean(ctx.page)} page" if ctx.page else "the page"
        if ctx.next_label:
            nxt = f"the {_quote(_clean(ctx.next_label))} {ctx.next_noun or 'element'}"
            return rng.choice([f"Scroll {direction} {page} to bring {nxt} into view.",
                               f"{nxt[0].upper() + nxt[1:]} is further {direction}: scroll {direction} {page} to reach it."])
        further = {"down": "further down", "up": "higher up", "left": "to the left", "right": "to the right"}.get(
            direction, f"further {direction}")
        return rng.choice([f"Scroll {direction} {page} to look at what is {further}.",
                           f"More of {page} is {further}: scroll {direction} to read it.",
                           f"Scroll {direction} to see the part of {page} {further}."])
    if t is ActionType.PRESS:
        return f"{where}, press {action.key} {_key_purpose(action.key or '', ctx, rng)}."
    if t is ActionType.FINISH:
        if action.answer and action.answer.strip().lower() != "done":  # a question: report the answer
            ans = _quote(_text(action.answer))
            return rng.choice([f"The answer is now on screen, so finish the task and report {ans}.",
                               f"You have found what the task asked for: finish and answer {ans}.",
                               f"Report {ans} as the answer and end the task here."])
        return rng.choice(["Everything the task asked for is done, so finish the task here.",
                           "The change is saved and the task is complete, so finish now.",
                           "Nothing is left to do for this task: finish it here."])
    return template_guide(action, target)


def acted_element(step: RawStep) -> str | None:
    """The element a step acts on; for a point-only click, the one the expert meant (guides name it)."""
    return step.action.element_id or step.metadata.get("expert_element_id")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def plan_guide(action: Action, target: Candidate | None, ctx: GuideContext, purposes: list[str] | tuple[str, ...],
               key: str) -> str:
    """A guide from the expert's plan (``guide_source`` ``plan``): what the step is for in the
    task (one of ``purposes``, infinitive clauses with the task's parameters), the action and
    its target's label, and where on the page; phrasing chosen by ``random.Random(key)``.

    >>> plan_guide(Action(type="click", element_id="7"), Candidate(id="7", role="link", text="Basket",
    ...            bbox=(0, 0, 9, 9)), GuideContext(region="the page header"), ["check the items before paying"], "k:2")
    "To check the items before paying, click the 'Basket' link in the page header."
    """
    rng = random.Random(f"{key}:plan")
    why = " ".join(rng.choice(list(purposes)).split()).rstrip(".")
    label, kind = _label(target), noun(target)
    thing = f"the {_quote(label)} {kind}" if label else f"the {kind}"
    place = _inline(ctx) if (ctx.region or ctx.page) else ""
    t = action.type
    if t is ActionType.TYPE:
        field = f"the {label} field" if label and not label.lower().endswith(("field", "box")) else (
            f"the {label}" if label else "the text field")
        act = f"type {_quote(_text(action.text or ''))} into {field}" if action.text else f"clear {field}"
    elif t is ActionType.SELECT:
        act = f"choose {_quote(_text(action.value))} in {f'the {label} drop-down' if label else 'the drop-down'}"
    elif t is ActionType.PRESS:
        act = f"press {action.key}"
    elif t is ActionType.FINISH:
        if action.answer and action.answer.strip().lower() != "done":
            return rng.choice([f"{_cap(why)}: the answer is {_quote(_text(action.answer))}, so finish with it.",
                               f"To {why}, report {_quote(_text(action.answer))} and end the task."])
        # both open with the purpose: a fixed opening repeats in every template's last step
        return rng.choice([f"{_cap(why)}: that is done, so finish the task here.",
                           f"{_cap(why)}: nothing is left to do, so end the task now."])
    elif t is ActionType.HOVER:
        act = f"hover over {thing}"
    elif t is ActionType.CLICK:
        act = f"click {thing}"
    elif t is ActionType.GO_BACK:
        act, place = "go back to the previous page", ""
    elif t is ActionType.GOTO:
        act, place = f"go to {action.url}", ""
    else:  # a scroll or a tab action: the template guide says what it does
        return f"{_cap(why)}: {template_guide(action, target)[0].lower()}{template_guide(action, target)[1:]}"
    where = f" {place}" if place else ""
    form = rng.randrange(3)
    if t is ActionType.GOTO and form == 1:  # "Go to http://127.0.0.1..." opens alike in every template
        form = 0
    if form == 0:
        return f"To {why}, {act}{where}."
    if form == 1:
        return f"{_cap(act)}{where} to {why}."
    return f"{_cap(why)}: {act}{where}."


def episode_guides(task: str, seed: int, steps: list[RawStep], contexts: list[GuideContext]) -> list[RawStep]:
    """The steps of a recorded site episode with their guides: from the expert's plan where it
    stated the step's purpose (``metadata["plan_purpose"]``, ``guide_source`` ``plan``:
    :func:`plan_guide`), else a context guide (``context_template``); the context is kept in
    ``metadata["guide_context"]``; a scroll or a page key names what it brings into view, the
    next step's target.

    Args:
        task: the task name (``sites.shop.checkout``); with ``seed`` and the step index, the
            key of each guide's phrasing.
        steps, contexts: the recorded steps and each one's :class:`GuideContext`.
    """
    out = []
    for i, (st, ctx) in enumerate(zip(steps, contexts)):
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        nxt_target = next((c for c in nxt.candidates if c.id == acted_element(nxt)), None) if nxt else None
        if nxt_target is not None:
            ctx = dataclasses.replace(ctx, next_label=nxt_target.text, next_noun=noun(nxt_target))
        if _EDIT_LINKS_IN.search(ctx.region):  # a context stored before headings lost their edit links
            ctx = dataclasses.replace(ctx, region=_EDIT_LINKS_IN.sub("", ctx.region))
        target = next((c for c in st.candidates if c.id == acted_element(st)), None)
        purposes = st.metadata.get("plan_purpose") or []
        if purposes:
            guide, source = plan_guide(st.action, target, ctx, purposes, f"{task}:{seed}:{i}"), GuideSource.PLAN
        else:
            guide, source = context_guide(st.action, target, ctx, f"{task}:{seed}:{i}"), GuideSource.CONTEXT_TEMPLATE
        out.append(dataclasses.replace(st, guide=guide, guide_source=source,
                                       metadata={**st.metadata, "guide_context": dataclasses.asdict(ctx)}))
    return out


def regenerate_guides(episode: RawEpisode) -> RawEpisode:
    """The episode with every ``context_template`` and ``plan`` guide written again by today's
    generators from the context and plan its recording stored (guides of any other source, and
    steps without a stored context, are left as they are)."""
    steps = list(episode.steps)
    redo = [i for i, st in enumerate(steps) if st.guide_source in (GuideSource.CONTEXT_TEMPLATE, GuideSource.PLAN)
            and isinstance(st.metadata.get("guide_context"), dict)]
    if not redo:
        return episode
    keep = {"region", "page"}  # the next step's target is read again from the steps
    contexts = [GuideContext(**{k: v for k, v in (st.metadata.get("guide_context") or {}).items() if k in keep})
                for st in steps]
    task = episode.episode_id.split(".seed-")[0]
    fresh = episode_guides(task, int(episode.seed or 0), steps, contexts)
    for i in redo:
        steps[i] = fresh[i]
    return dataclasses.replace(episode, steps=tuple(steps))


# ----------------------------------------------------------------------------- context from a page

#: Landmark tags and roles -> the region's noun phrase.
_LANDMARKS: dict[str, str] = {
    "nav": "the navigation bar", "navigation": "the navigation bar", "header": "the page header",
    "banner": "the page header", "aside": "the sidebar", "complementary": "the sidebar", "footer": "the page footer",
    "contentinfo": "the page footer", "dialog": "the dialog", "search": "the search box area",
}
_HEADINGS = ("h1", "h2", "h3", "h4", "legend", "caption")


def guide_context(elements: dict[str, Any], bid: str | None, next_target: Candidate | None = None) -> GuideContext:
    """Region and page title of ``bid`` from an observation's elements (:mod:`mag_dataset.live.observe`).

    Args:
        elements: bid -> ``Element`` (tag, attrs, text, role, parent, children).
        bid: the target's bid (None for untargeted steps: only the page title is found).
        next_target: the next step's target candidate, for a scroll's purpose.
    """
    def order(b: str) -> tuple[int, str]:
        return (int(b), "") if b.isdigit() else (1 << 30, b)

    heads = sorted((b for b, e in elements.items() if e.tag in _HEADINGS and _clean(e.text)), key=order)
    page = next((_clean(elements[b].text) for b in heads if elements[b].tag == "h1"), "")
    region = ""
    el = elements.get(bid) if bid is not None else None
    seen: set[str] = set()
    p = el.parent if el is not None else None
    while p is not None and p in elements and p not in seen and not region:
        seen.add(p)
        anc = elements[p]
        key = anc.role if anc.role in _LANDMARKS else anc.tag
        if key in _LANDMARKS:
            region = _LANDMARKS[key]
        elif anc.tag in ("form", "table", "fieldset"):
            inner = [c for c in _descendants(elements, p) if elements[c].tag in _HEADINGS and _heading(elements[c].text)]
            title = _heading(elements[inner[0]].text) if inner else ""
            kind = {"form": "form", "table": "table", "fieldset": "section"}[anc.tag]
            region = f"the {_quote(title)} {kind}" if title and len(title) <= 40 else f"the {kind}"
        p = anc.parent
    if el is not None and not region:
        before = [b for b in heads if order(b) < order(el.bid) and elements[b].tag != "h1"]
        if before and 0 < len(_heading(elements[before[-1]].text)) <= 40:
            region = f"the {_quote(_heading(elements[before[-1]].text))} section"
    nxt_label = _label(next_target) if next_target is not None else ""
    return GuideContext(region=region, page=page if len(page) <= 50 else "",
                        next_label=nxt_label, next_noun=noun(next_target) if next_target is not None else "")


def _descendants(elements: dict[str, Any], bid: str) -> list[str]:
    out, todo, seen = [], list(elements[bid].children), {bid}
    while todo:
        b = todo.pop(0)
        if b in seen or b not in elements:
            continue
        seen.add(b)
        out.append(b)
        todo.extend(elements[b].children)
    return out
