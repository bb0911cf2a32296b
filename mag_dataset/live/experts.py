"""Scripted experts that solve MiniWoB++ tasks closed-loop.

Each expert is a function ``expert(ob, memory) -> Decision | None``: it reads the goal and the
DOM of the *current* observation (:class:`~mag_dataset.live.observe.Observation`) and decides
the next action; ``memory`` is a per-episode dict it may use for bookkeeping. ``None`` means
"I cannot continue" (the recorder then drops the episode). Experts never call the page:
everything they know comes from the observation, as for a model.

:data:`EXPERTS` is the explicit table of supported tasks; :data:`APP_LIKE` names the ones that
resemble real sites.
"""

from __future__ import annotations

import re
from typing import Callable

from mag_dataset.actions import ActionType
from mag_dataset.live import expert_kit as kit
from mag_dataset.live.expert_kit import Decision, ExpertError
from mag_dataset.live.observe import Element, Observation

__all__ = ["APP_LIKE", "EXPERTS", "Decision", "Expert", "ExpertError"]


Expert = Callable[[Observation, dict], "Decision | None"]


# ----------------------------------------------------------------------------- helpers
def _quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


def _visible_button(ob: Observation, text: str) -> Element | None:
    want = kit.norm(text)
    return kit.find(ob, lambda e: e.tag == "button" and kit.norm(e.text) == want, visible_only=True)


def _submit(ob: Observation) -> Decision | None:
    el = kit.by_id(ob, "subbtn") or _visible_button(ob, "submit")
    return Decision(ActionType.CLICK, el.bid) if el is not None and kit.visible(ob, el) else None


# ----------------------------------------------------------------------------- experts
def click_button(ob: Observation, memory: dict) -> Decision | None:
    (want,) = _quoted(ob.goal)[:1] or [""]
    return kit.click_now(_visible_button(ob, want))


def click_link(ob: Observation, memory: dict) -> Decision | None:
    want = kit.norm((_quoted(ob.goal) or [""])[0])
    return kit.click_now(kit.find(ob, visible_only=True, pred=lambda e: (e.tag == "a" or "alink" in e.attrs.get("class", "")) and kit.norm(e.text) == want))


def click_dialog(ob: Observation, memory: dict) -> Decision | None:
    return kit.click_now(kit.find(ob, visible_only=True, pred=lambda e: e.tag == "button" and "ui-dialog-titlebar-close" in e.attrs.get("class", "")))


def enter_text(ob: Observation, memory: dict) -> Decision | None:
    want = _quoted(ob.goal)[0]
    field = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("type", "text") == "text")
    return kit.fill_now(kit.require(field, "input field"), want) or _submit(ob)


def enter_password(ob: Observation, memory: dict) -> Decision | None:
    want = _quoted(ob.goal)[0]
    for html_id in ("password", "verify"):
        d = kit.fill_now(kit.require(kit.by_id(ob, html_id), "input field"), want)
        if d:
            return d
    return _submit(ob)


def login_user(ob: Observation, memory: dict) -> Decision | None:
    user, pw = _quoted(ob.goal)[:2]
    # login-user-popup: a modal ("Exit to home page?") may cover the form; cancel it first
    cancel = kit.by_id(ob, "popup-cancel")
    if cancel is not None and kit.visible(ob, cancel):
        return kit.click_now(cancel)
    return (kit.fill_now(kit.require(kit.by_id(ob, "username"), "input field"), user)
            or kit.fill_now(kit.require(kit.by_id(ob, "password"), "input field"), pw)
            or kit.click_now(kit.by_id(ob, "subbtn")))


def _is_descendant(ob: Observation, el: Element, anc: Element) -> bool:
    p = el.parent
    while p is not None:
        if p == anc.bid:
            return True
        p = ob.elements[p].parent if p in ob.elements else None
    return False


def choose_list(ob: Observation, memory: dict) -> Decision | None:
    m = re.search(r"Select (.+?) from the list", ob.goal)
    if not m:
        raise ExpertError("goal not understood")
    want = m.group(1).strip()
    sel = kit.find(ob, lambda e: e.tag == "select")
    if sel is None:
        raise ExpertError("no select")
    if not memory.get("selected"):
        memory["selected"] = True
        return Decision(ActionType.SELECT, sel.bid, value=want)
    return _submit(ob)


def _checkbox_label(ob: Observation, el: Element) -> str:
    if el.name:
        return el.name
    parent = ob.elements.get(el.parent or "")
    return parent.text if parent else ""


def click_checkboxes(ob: Observation, memory: dict) -> Decision | None:
    m = re.search(r"Select (.*?) and click Submit", ob.goal)
    if not m:
        raise ExpertError("goal not understood")
    words = [w.strip() for w in m.group(1).split(",") if w.strip()]
    if words == ["nothing"]:
        words = []
    want = {kit.norm(w) for w in words}
    for el in ob.elements.values():
        if el.tag == "input" and el.attrs.get("type") == "checkbox":
            label = kit.norm(_checkbox_label(ob, el))
            if (label in want) != bool(el.checked):
                return kit.click_now(el)
    return _submit(ob)


def click_option(ob: Observation, memory: dict) -> Decision | None:
    m = re.search(r"Select (.*?) and click Submit", ob.goal)
    if not m:
        raise ExpertError("goal not understood")
    want = kit.norm(m.group(1))
    for el in ob.elements.values():
        if el.tag == "input" and el.attrs.get("type") == "radio" and kit.norm(_checkbox_label(ob, el)) == want:
            if not el.checked:
                return kit.click_now(el)
            return _submit(ob)
    raise ExpertError(f"option {want!r} not found")


def click_tab_2(ob: Observation, memory: dict) -> Decision | None:
    want = kit.norm(_quoted(ob.goal)[0] if _quoted(ob.goal) else "")
    link = kit.find(ob, visible_only=True, pred=lambda e: "alink" in e.attrs.get("class", "") and kit.norm(e.text) == want)
    if link is not None:
        return kit.click_now(link)
    # open the tab whose (hidden) panel holds the link
    for el in ob.elements.values():
        if el.tag == "a" and "ui-tabs-anchor" in el.attrs.get("class", "") and kit.visible(ob, el):
            panel = kit.by_id(ob, el.attrs.get("href", "").lstrip("#"))
            if panel is not None and want in [kit.norm(w) for w in _alinks(ob, panel)]:
                return kit.click_now(el)
    return None


def click_collapsible_2(ob: Observation, memory: dict) -> Decision | None:
    want = kit.norm(_quoted(ob.goal)[0] if _quoted(ob.goal) else "")
    link = kit.find(ob, visible_only=True, pred=lambda e: e.tag == "span" and kit.norm(e.text) == want and "alink" in e.attrs.get("class", ""))
    if link is not None:
        return kit.click_now(link)
    headers = [e for e in ob.elements.values() if e.tag == "h3" and kit.visible(ob, e)]
    for h in headers:
        panel = next((ob.elements[c] for c in ob.elements[h.parent].children
                      if ob.elements[c].tag == "div" and ob.elements[c].attrs.get("aria-labelledby") == h.attrs.get("id")), None) if h.parent else None
        if panel is not None and want in [kit.norm(w) for w in _alinks(ob, panel)]:
            return kit.click_now(h)
    return None


def _alinks(ob: Observation, panel: Element) -> list[str]:
    return [ob.elements[c].all_text for c in _descendants(ob, panel) if "alink" in ob.elements[c].attrs.get("class", "")]


def _descendants(ob: Observation, el: Element) -> list[str]:
    out, todo = [], list(el.children)
    while todo:
        b = todo.pop(0)
        out.append(b)
        todo.extend(ob.elements[b].children)
    return out


def navigate_tree(ob: Observation, memory: dict) -> Decision | None:
    want = kit.norm(_quoted(ob.goal)[-1])
    target = kit.find(ob, visible_only=True, pred=lambda e: e.tag == "span" and kit.norm(e.text) == want
                   and e.attrs.get("class", "").split()[:1] in (["folder"], ["file"]))
    if target is not None:
        return kit.click_now(target)
    # expand the visible collapsed folder whose subtree contains the name
    for el in ob.elements.values():
        if el.tag == "span" and "folder" in el.attrs.get("class", "") and kit.visible(ob, el):
            li = ob.elements.get(el.parent or "")
            if li is None or "expandable" not in li.attrs.get("class", ""):
                continue
            names = [kit.norm(ob.elements[d].all_text) for d in _descendants(ob, li)
                     if ob.elements[d].tag == "span" and d != el.bid]
            if want in names:
                return kit.click_now(el)
    return None


def search_engine(ob: Observation, memory: dict) -> Decision | None:
    query = _quoted(ob.goal)[0]
    m = re.search(r"click the (\d+)(?:st|nd|rd|th) search result", ob.goal)
    if not m:
        raise ExpertError("goal not understood")
    index = int(m.group(1)) - 1
    box = kit.by_id(ob, "search-text")
    d = kit.fill_now(kit.require(box, "input field"), query)
    if d:
        return d
    results = [e for e in ob.elements.values() if e.tag == "a" and "search-title" in e.attrs.get("class", "")]
    if not results:
        return kit.click_now(kit.by_id(ob, "search"))
    hit = next((e for e in results if e.attrs.get("data-result") == str(index) and kit.visible(ob, e)), None)
    if hit is not None:
        return kit.click_now(hit)
    page = str(index // 3 + 1)
    link = kit.find(ob, visible_only=True, pred=lambda e: e.tag == "a" and kit.norm(e.text) == page and "page-link" in e.attrs.get("class", ""))
    return kit.click_now(link)


def use_autocomplete(ob: Observation, memory: dict) -> Decision | None:
    """use-autocomplete: type the prefix, walk the suggestions with ArrowDown, take the right
    one with Enter, submit."""
    m_start = re.search(r'starts with "([^"]*)"', ob.goal)
    m_end = re.search(r'ends with "([^"]*)"', ob.goal)
    q = _quoted(ob.goal)
    start = m_start.group(1) if m_start else (q[0] if q else "")
    end = m_end.group(1) if m_end else ""
    field = kit.by_id(ob, "tags")
    if field is None:
        raise ExpertError("no tags field")
    items = _autocomplete_items(ob)
    if items:
        good = [e for e in items if kit.norm(e.text).startswith(kit.norm(start)) and kit.norm(e.text).endswith(kit.norm(end))]
        if not good:
            return None
        active = next((e for e in items if "ui-state-active" in e.attrs.get("class", "")), None)
        if active is not None and active.bid == good[0].bid:
            return Decision(ActionType.PRESS, key="Enter")
        return Decision(ActionType.PRESS, key="ArrowDown")
    value = field.value or ""
    if len(value) > len(start) and kit.norm(value).startswith(kit.norm(start)) and kit.norm(value).endswith(kit.norm(end)):
        return _submit(ob)
    if memory.get("typed"):
        return None
    memory["typed"] = True
    return Decision(ActionType.TYPE, field.bid, text=start)


def _email_sender(ob: Observation, memory: dict) -> str:
    m = re.search(r"(?:by|from|sent by|email from|Find the email by) ([A-Z][a-z]+)", ob.goal)
    if not m:
        raise ExpertError("sender not found in goal")
    return m.group(1)


def email_inbox_delete(ob: Observation, memory: dict) -> Decision | None:
    sender = kit.norm(_email_sender(ob, memory))
    for thread in ob.elements.values():
        if "email-thread" in thread.attrs.get("class", ""):
            names = [ob.elements[c] for c in _descendants(ob, thread) if "email-sender" in ob.elements[c].attrs.get("class", "")]
            if names and kit.norm(names[0].text) == sender:
                trash = next((ob.elements[c] for c in _descendants(ob, thread) if "trash" in ob.elements[c].attrs.get("class", "")), None)
                if trash is not None and kit.visible(ob, trash):
                    return kit.click_now(trash)
                return Decision(ActionType.SCROLL, direction="down")
    return None


def _cls(ob: Observation, cls: str, within: Element | None = None, visible: bool = True) -> list[Element]:
    pool = [ob.elements[b] for b in _descendants(ob, within)] if within is not None else list(ob.elements.values())
    return [e for e in pool if cls in e.attrs.get("class", "").split() and (not visible or kit.visible(ob, e))]


def email_inbox(ob: Observation, memory: dict) -> Decision | None:
    """email-inbox: reply to / forward / delete / star the email of a sender."""
    g = ob.goal
    m_reply = re.search(r'Find the email by (.+?) and reply to them with the text "(.*)"', g)
    m_fwd = re.search(r"Find the email by (.+?) and forward that email to (.+?)\.?$", g)
    m_icon = re.search(r"Find the email by (.+?) and click the (trash|star) icon", g)
    if not (m_reply or m_fwd or m_icon):
        raise ExpertError("goal not understood")
    sender = kit.norm((m_reply or m_fwd or m_icon).group(1))
    reply_box = kit.by_id(ob, "reply-text")
    if m_reply and reply_box is not None and kit.visible(ob, reply_box):
        return kit.fill_now(kit.require(reply_box, "input field"), m_reply.group(2)) or kit.click_now(kit.by_id(ob, "send-reply"))
    fwd = next(iter(_cls(ob, "forward-sender")), None)
    if m_fwd and fwd is not None:
        return kit.fill_now(kit.require(fwd, "input field"), m_fwd.group(2).strip()) or kit.click_now(kit.by_id(ob, "send-forward"))
    opened = next(iter(_cls(ob, "email-reply")), None)
    if opened is not None:
        if m_reply:
            return kit.click_now(opened)
        if m_fwd:
            return kit.click_now(next(iter(_cls(ob, "email-forward")), None))
        return None
    for thread in _cls(ob, "email-thread", visible=False):
        name = next(iter(_cls(ob, "email-sender", thread, visible=False)), None)
        if name is None or kit.norm(name.all_text) != sender:
            continue
        if m_icon:
            icon = next(iter(_cls(ob, m_icon.group(2), thread)), None)
            if icon is not None:
                return kit.click_now(icon)
        elif kit.visible(ob, name):
            return kit.click_now(name)
        return Decision(ActionType.SCROLL, direction="down")
    return None


def social_media(ob: Observation, memory: dict) -> Decision | None:
    m = re.search(r'For the user (@\S+), click on the "([^"]+)" button', ob.goal)
    if not m:
        raise ExpertError("goal not understood")
    user, button = m.group(1).rstrip(",."), m.group(2)
    icon_cls = {"reply": "reply", "retweet": "retweet", "like": "like"}.get(button.lower())
    for media in _cls(ob, "media", visible=False):
        uname = next(iter(_cls(ob, "username", media, visible=False)), None)
        if uname is None or kit.norm(uname.all_text) != kit.norm(user):
            continue
        if icon_cls:
            target = next(iter(_cls(ob, icon_cls, media, visible=False)), None)
        else:
            menu = next((ob.elements[b] for b in _descendants(ob, media) if ob.elements[b].tag == "ul"), None)
            if menu is not None and "hide" not in menu.attrs.get("class", "").split():
                target = next((ob.elements[b] for b in menu.children if kit.norm(ob.elements[b].all_text) == kit.norm(button)), None)
            else:
                target = next(iter(_cls(ob, "more", media, visible=False)), None)
        if target is None:
            return None
        return kit.click_now(target) if kit.visible(ob, target) else Decision(ActionType.SCROLL, direction="down")
    return None


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")


def _autocomplete_items(ob: Observation) -> list[Element]:
    """Visible jQuery UI autocomplete suggestions (the innermost element holding the text)."""
    items = []
    for ul in _cls(ob, "ui-autocomplete", visible=False):
        for b in ul.children:
            li = ob.elements[b]
            inner = next((ob.elements[c] for c in li.children if ob.elements[c].tag == "div"), li)
            if kit.visible(ob, inner):
                items.append(inner)
    return items


def book_flight(ob: Observation, memory: dict) -> Decision | None:
    """book-flight: from/to via autocomplete, date via the date picker, then book the
    cheapest/shortest result (scrolling to it)."""
    m = re.search(r"Book the (cheapest|shortest) one-way flight from: (.+?) to: (.+?) on (\d\d)/(\d\d)/(\d{4})", ob.goal)
    if not m:
        raise ExpertError("goal not understood")
    kind, origin, dest = m.group(1), m.group(2).strip(), m.group(3).strip()
    month, day, year = int(m.group(4)), int(m.group(5)), int(m.group(6))

    flights = _cls(ob, "flight", visible=False)
    if flights:
        key = "data-price" if kind == "cheapest" else "data-duration"

        def score(f: Element) -> float:
            holder = next((ob.elements[b] for b in _descendants(ob, f) if key in ob.elements[b].attrs), None)
            return float(holder.attrs[key]) if holder is not None else float("inf")

        best = min(flights, key=score)
        button = next(iter(_cls(ob, "flight-price", best, visible=False)), None)
        if button is None:
            return None
        return kit.click_now(button) if kit.visible(ob, button) else Decision(ActionType.SCROLL, direction="down")

    def matches(text: str, wanted: str) -> bool:
        t = kit.norm(text)
        return t.startswith(kit.norm(wanted) + " (") or t.endswith("(" + kit.norm(wanted) + ")")

    for field_id, wanted in (("flight-from", origin), ("flight-to", dest)):
        field = kit.by_id(ob, field_id)
        if field is None:
            raise ExpertError(f"#{field_id} missing")
        value = field.value or ""
        if matches(value, wanted):
            continue
        if ob.focused == field.bid or memory.get("typing") == field_id:
            hit = next((e for e in _autocomplete_items(ob) if matches(e.text, wanted)), None)
            if hit is not None:
                memory.pop("typing", None)
                return kit.click_now(hit)
            if memory.get("typing") == field_id and value == wanted:
                return None  # typed, but no suggestion appeared
        memory["typing"] = field_id
        return Decision(ActionType.TYPE, field.bid, text=wanted)

    picker = kit.by_id(ob, "datepicker")
    want_value = f"{month:02d}/{day:02d}/{year}"
    if picker is not None and (picker.value or "") != want_value:
        cal = kit.by_id(ob, "ui-datepicker-div")
        if cal is None or cal.visibility < 0.5 or ob.screen_box(cal.bid) is None:
            return kit.click_now(picker)
        title_m = next(iter(_cls(ob, "ui-datepicker-month", cal)), None)
        title_y = next(iter(_cls(ob, "ui-datepicker-year", cal)), None)
        if title_m is None or title_y is None:
            return None
        shown = int(title_y.text) * 12 + _MONTHS.index(kit.norm(title_m.text))
        wanted_m = year * 12 + (month - 1)
        if shown > wanted_m:
            return kit.click_now(next(iter(_cls(ob, "ui-datepicker-prev", cal)), None))
        if shown < wanted_m:
            return kit.click_now(next(iter(_cls(ob, "ui-datepicker-next", cal)), None))
        link = next((ob.elements[b] for b in _descendants(ob, cal)
                     if ob.elements[b].tag == "a" and kit.norm(ob.elements[b].text) == str(day)), None)
        return kit.click_now(link) if link is not None and kit.visible(ob, link) else None
    return kit.click_now(kit.by_id(ob, "search"))


#: Supported tasks: MiniWoB++ task name -> expert. Explicit on purpose.
EXPERTS: dict[str, Expert] = {
    "click-button": click_button,
    "click-link": click_link,
    "click-dialog": click_dialog,
    "enter-text": enter_text,
    "enter-password": enter_password,
    "login-user": login_user,
    "login-user-popup": login_user,
    "choose-list": choose_list,
    "click-checkboxes": click_checkboxes,
    "click-option": click_option,
    "click-tab-2": click_tab_2,
    "click-collapsible-2": click_collapsible_2,
    "navigate-tree": navigate_tree,
    "search-engine": search_engine,
    "use-autocomplete": use_autocomplete,
    "email-inbox-delete": email_inbox_delete,
    "email-inbox": email_inbox,
    "social-media": social_media,
    "book-flight": book_flight,
}

#: Tasks that resemble real sites (issue 2's "app-like" list).
APP_LIKE: frozenset[str] = frozenset({
    "login-user-popup", "navigate-tree", "search-engine", "use-autocomplete", "email-inbox-delete",
    "email-inbox", "email-inbox-forward-nl", "email-inbox-reply", "social-media", "social-media-all",
    "social-media-some", "book-flight",
})
