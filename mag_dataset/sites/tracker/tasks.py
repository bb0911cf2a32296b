"""Live tasks on the tracker site (Trac): tickets, queries, roadmap, wiki and admin.

Twenty-six templates, GitLab-like as in WebArena, of its three kinds. State changes: create,
comment, reassign, close, reopen and re-plan tickets, change their priority and keywords;
triage several tickets at once (the long one: five tickets, some 60 steps); add a milestone
and a component in the admin panel, edit a milestone's description and a wiki page.
Information (the ``finish`` answer): count with the custom query; look a ticket's milestone
or reporter up; find the newest ticket matching a search; count a milestone's tickets, read
its due date. Navigation (the page the agent ends on): a ticket by its title, a milestone,
someone's open tickets, a component's tickets in a given order, a saved report, someone's
activity on the timeline, a wiki page's history. Each template states its goal in several
phrasings (``intent_templates``, WebArena's ``intent`` style: what the user wants, not the
clicks). Parameters come from the seed definitions
(:mod:`mag_dataset.sites.tracker.data`); each check reads Trac's database after the episode
(WebArena's program-based evaluators), the ``finish`` answer for the information-seeking ones,
or the final page's URL for the navigation ones (WebArena's ``url_match``).

Every expert reads only the observation (elements found by id, name, tag and text; the URL),
``memory`` and its parameters, through the one expert kit (:mod:`mag_dataset.live.expert_kit`:
finding, the scroll policy, acting), and says what each step is for in the task
(:func:`~mag_dataset.live.expert_kit.why`: the plan its guides are written from). Some
demonstrate like a person rather than a script: drawn once per task instance from its seed
(:meth:`_TrackerTask.detour`), the expert first looks in a plausible wrong place and comes back
(a report instead of the custom query, the wrong admin panel or wiki page), searches with a
query it then refines, checks the roadmap first, previews a comment before posting it, or reads
down a results list before opening the top hit; so episodes of one template differ in length.
"""

from __future__ import annotations

import json
import random
import re
import urllib.parse
from datetime import datetime, timezone
from typing import Any

from mag_dataset.actions import ActionType
from mag_dataset.live import expert_kit as kit
from mag_dataset.live.expert_kit import Decision
from mag_dataset.live.observe import Observation
from mag_dataset.sites.task import SiteTask, js_entries
from mag_dataset.sites.tracker import TrackerSite
from mag_dataset.sites.tracker.data import (
    COMPONENTS, DEVELOPERS, MILESTONES, OPEN_MILESTONES, PRIORITIES, REPORTERS, RESOLUTIONS, TYPES, USERS,
    seed_data,
)

#: Share of task instances whose expert takes its template's detour.
DETOUR_SHARE = 0.6


# ----------------------------------------------------------------------------- tracker steps (on the kit)
def _reached(d: Decision | None, what: str) -> Decision:
    """``d``, a kit step towards ``what``; :class:`~mag_dataset.live.expert_kit.NotOnPage` when it is
    None (``what`` has no box, or is hidden where it stands): the tracker's experts have no other way on."""
    if d is None:
        raise kit.NotOnPage(f"{what} cannot be brought into view")
    return d


def _go_back(*purposes: str) -> Decision:
    """Back to the previous page (the end of a detour), with what that is for."""
    return kit.why(Decision(ActionType.GO_BACK), *purposes)  # type: ignore[return-value]


def _search(ob: Observation, memory: dict[str, Any], text: str, typed: tuple[str, ...],
            entered: tuple[str, ...]) -> Decision:
    """Type ``text`` into the header's search box (``typed``: what for), then press Enter
    (``entered``: what for; ``memory["searched"]``). A box far above the view (the page was
    left at a comment) is reached with Home, as a person would, not a screen at a time."""
    box = kit.require(kit.by_id(ob, "proj-search"), "search box")
    if box.bbox is not None and -box.bbox[3] >= kit.view_height(ob) and not kit.typing(ob):
        return kit.press("Home")
    if (box.value or "") != text:
        return kit.why(_reached(kit.fill(ob, box, text), "search box"), *typed)
    return kit.once(memory, "searched", kit.why(kit.press("Enter"), *entered))


def _open_ticket(ob: Observation, memory: dict[str, Any], tid: int, *, typed: tuple[str, ...] = (),
                 entered: tuple[str, ...] = ()) -> Decision | None:
    """Steps to get to ticket #tid through the search box's quick jump (``#12``), or None when there."""
    if kit.path(ob) == f"/ticket/{tid}":
        return None
    typed = typed or (f"jump straight to ticket #{tid}", f"find ticket #{tid} by its number")
    entered = entered or (f"open ticket #{tid}", f"go to ticket #{tid} from the search box")
    return _search(ob, memory, f"#{tid}", typed, entered)


def _find_by_title(ob: Observation, memory: dict[str, Any], tid: int, summary: str) -> Decision | None:
    """Steps to get to ticket #tid by searching its title and opening the hit (``memory["found"]``),
    rather than by its number; None once there."""
    if kit.path(ob) == f"/ticket/{tid}" or memory.get("found"):
        return None
    if kit.path(ob) == "/search" and memory.get("searched"):
        hit = kit.require(kit.link(ob, href=rf"^/ticket/{tid}$", prefer_visible=True), "search hit")
        return kit.once(memory, "found", kit.why(_reached(kit.click(ob, hit), "search hit"),
                                                 f"open #{tid}, the ticket with that title",
                                                 f"pick ticket #{tid} among the matches"))
    return _search(ob, memory, summary, ("find the ticket by its title", "look the ticket up by its title"),
                   ("list the tickets with that title", "run the search for the title"))


def _open_modify(ob: Observation, memory: dict[str, Any], *purposes: str) -> Decision | None:
    """Click the ticket's "Modify" link (unfolds the ticket editor and jumps to it), once."""
    if memory.get("modify"):
        return None
    link = kit.require(kit.link(ob, href=r"^#modify$"), "Modify link")
    return kit.once(memory, "modify", kit.why(_reached(kit.click(ob, link), "Modify link"), *purposes))


def _comment_and_submit(ob: Observation, memory: dict[str, Any], comment: str | None, *,
                        written: tuple[str, ...] = (), submitted: tuple[str, ...],
                        preview: tuple[str, ...] = ()) -> Decision:
    """Fill the ticket's comment box (when there is a comment to give; ``written``: what for),
    click Preview first when ``preview`` says what for (once), then Submit changes (``submitted``)."""
    box = kit.by_id(ob, "comment")
    if comment is not None and box is not None and (box.value or "").strip() != comment:
        return kit.why(_reached(kit.fill(ob, box, comment), "comment box"), *written)
    if preview and not memory.get("previewed"):
        button = kit.require(kit.by_name(ob, "preview", tag="input"), "Preview button")
        return kit.once(memory, "previewed", kit.why(_reached(kit.click(ob, button), "Preview button"), *preview))
    submit = kit.require(kit.by_name(ob, "submit", tag="input"), "Submit changes button")
    return kit.once(memory, "submitted", kit.why(_reached(kit.click(ob, submit), "Submit changes button"), *submitted))


def _toggle(ob: Observation, memory: dict[str, Any], el: Any, key: str, what: str, *purposes: str) -> Decision:
    """Click the radio button or checkbox ``el`` (``memory[key]`` remembers the click); when the page
    still shows it unchanged after that click (a click on the very edge of a small box can miss it),
    click its label instead, as a person would."""
    if memory.get(key):
        label = kit.find(ob, lambda e: e.tag == "label" and e.attrs.get("for") == el.attrs.get("id"))
        if label is not None:
            return kit.why(_reached(kit.click(ob, label), f"label of the {what}"), *purposes)
    return kit.once(memory, key, kit.why(_reached(kit.click(ob, el), what), *purposes))


def _inside(ob: Observation, el: Any, html_id: str) -> bool:
    """Whether ``el`` lies inside the element with HTML id ``html_id``."""
    seen: set[str] = set()
    bid = el.parent
    while bid is not None and bid in ob.elements and bid not in seen:
        seen.add(bid)
        if ob.elements[bid].attrs.get("id") == html_id:
            return True
        bid = ob.elements[bid].parent
    return False


def _user_name(user: str) -> str:
    return USERS[user][1]


def _first_name(user: str) -> str:
    return _user_name(user).split()[0]


class _TrackerTask(SiteTask):
    site_class = TrackerSite
    #: The detours this template's expert may take (:meth:`detour`); empty: none.
    detours: tuple[str, ...] = ()

    def detour(self, memory: dict[str, Any]) -> str | None:
        """The detour this task instance's expert takes (one of :attr:`detours`), or None: drawn
        once from the seed (``random.Random(f"{task_id}:{seed}:detour")``) and kept in ``memory``."""
        if "detour" not in memory:
            rng = random.Random(f"{self.get_task_id()}:{self.seed}:detour")
            memory["detour"] = rng.choice(self.detours) if self.detours and rng.random() < DETOUR_SHARE else None
        return memory["detour"]

    def _ticket_row(self, tid: int) -> dict[str, Any]:
        cols = ("summary", "type", "component", "priority", "milestone", "owner", "status", "resolution",
                "reporter", "version")
        rows = self.site.query(f"SELECT {', '.join(cols)} FROM ticket WHERE id=?", (tid,))
        return dict(zip(cols, rows[0])) if rows else {}

    def _new_comments(self, tid: int, author: str) -> list[str]:
        seeded = len(seed_data().ticket(tid).changes) if tid <= len(seed_data().tickets) else 0
        rows = self.site.query("SELECT author, newvalue FROM ticket_change WHERE ticket=? AND field='comment' "
                               "ORDER BY time", (tid,))
        return [v for a, v in rows[seeded:] if a == author]

    # -- WebArena's program_html: what check() reads, as the logged-in user sees it on a Trac page

    def _ticket_shows(self, tid: int, *entries: str) -> list[dict[str, Any]]:
        """A target on ticket #tid's page (:data:`_JS_TICKET` and the comments of the task's user)."""
        return self.page_shows(f"/ticket/{tid}", f"{_JS_TICKET} + {_js_comments_by(_user_name(self.user))}", *entries)

    def _new_ticket_shows(self, summary: str, columns: tuple[str, ...], *entries: str,
                          description: bool = False) -> list[dict[str, Any]]:
        """A target on the custom query of the tickets titled ``summary``, newest first: the first row's
        ``columns`` (``|<column>: <value>|``) and, with ``description``, its description
        (``|description: <text>|``). check() reads the newest ticket with that summary too."""
        query = [("summary", summary), *(("col", c) for c in ("id", *columns)), ("order", "id"), ("desc", "1")]
        rows = "table.tickets tbody.trac-query-results"
        locator = js_entries(f"{rows} tr:first-child td", "x.className + ': ' + x.innerText.trim()")
        if description:
            query.append(("row", "description"))
            locator += " + " + js_entries(f"{rows} tr:nth-child(2) td", "'description: ' + x.innerText.trim()")
        return self.page_shows("/query?" + urllib.parse.urlencode(query), locator, *entries)


# ----------------------------------------------------------------------------- WebArena's program_html locators
#: A ticket page's properties (``|owner: Alice Nakamura|``, ``|milestone: Cirrus|``, by the ids of their
#: headers), its status and its resolution.
_JS_TICKET = " + ".join((
    js_entries("#ticket td[headers]", "x.headers.slice(2) + ': ' + x.innerText.trim()"),
    js_entries("#ticket .trac-status", "'status: ' + x.innerText.trim()"),
    js_entries("#ticket .trac-resolution", "'resolution: ' + x.innerText.replace(/[()]/g, '').trim()")))


def _js_comments_by(name: str) -> str:
    """A locator of the comments on a ticket page written by the user shown as ``name`` (``|<text>|``;
    Trac marks the logged-in user's name ``trac-author-user``, anyone else's ``trac-author``)."""
    return (f"[...document.querySelectorAll('#changelog .change')].filter(x => "
            "x.querySelector('h3 .trac-author, h3 .trac-author-user')?.innerText.trim() === "
            f"{json.dumps(name)})"
            ".map(x => '|' + (x.querySelector('.comment')?.innerText.trim() ?? '') + '|').join('')")


def _fresh_comment(rng: random.Random) -> str:
    return rng.choice((
        "Retested on build {n}: the problem is still there.", "Patch {n} is ready for review.",
        "Customer report {n} confirms this.", "Bisected: it started with changeset {n}.",
        "Workaround documented in support note {n}.")).format(n=rng.randint(1000, 9999))


def _open_tickets() -> list[Any]:
    return [t for t in seed_data().tickets if t.final["status"] != "closed"]


# ----------------------------------------------------------------------------- templates
class CreateTicket(_TrackerTask):
    template = "create_ticket"
    intent_template = ('Create a new {type} ticket with the summary "{summary}" in the component {component}, '
                       "with priority {priority} and milestone {milestone}.")
    intent_templates = (
        intent_template,
        'Open a {priority}-priority {type} ticket in {component} titled "{summary}" and plan it for {milestone}.',
        'File a ticket "{summary}": type {type}, component {component}, priority {priority}, milestone {milestone}.',
        'I need a {type} ticket for {milestone} saying "{summary}" (component {component}, {priority} priority).',
    )
    user = "erin"
    #: search for an existing report of the problem first; preview the ticket before filing it
    detours = ("duplicates", "preview")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        thing = rng.choice(("export button", "login banner", "CSV importer", "status page", "email digest",
                            "avatar upload", "keyboard shortcuts", "audit report"))
        problem = rng.choice(("is slow on large projects", "breaks on Safari", "shows stale data",
                              "needs a confirmation dialog", "loses its settings after an upgrade"))
        return {"summary": f"The {thing} {problem}", "thing": thing, "type": rng.choice(TYPES),
                "component": rng.choice(sorted(COMPONENTS)), "priority": rng.choice(PRIORITIES),
                "milestone": rng.choice(OPEN_MILESTONES)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query("SELECT id FROM ticket WHERE summary=? ORDER BY id", (self.params["summary"],))
        if not rows:
            return False, "no ticket with that summary"
        t = self._ticket_row(rows[-1][0])
        for k in ("type", "component", "priority", "milestone"):
            if t[k] != self.params[k]:
                return False, f"ticket #{rows[-1][0]} has {k}={t[k]!r}, wanted {self.params[k]!r}"
        if t["reporter"] != self.user:
            return False, f"reporter is {t['reporter']!r}"
        return True, f"ticket #{rows[-1][0]} created with the requested fields"

    def program_html(self) -> list[dict[str, Any]]:
        p, fields = self.params, ("type", "component", "priority", "milestone")
        return self._new_ticket_shows(p["summary"], (*fields, "reporter"), *(f"|{k}: {p[k]}|" for k in fields),
                                      f"|reporter: {_user_name(self.user)}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if memory.get("created"):
            if not re.fullmatch(r"/ticket/\d+", kit.path(ob)):
                return None
            return kit.why(kit.finish(), f'file the {p["type"]} "{p["summary"]}" for {p["milestone"]}',
                           f"report the problem with the {p['thing']}")
        if kit.path(ob) != "/newticket":
            if self.detour(memory) == "duplicates" and not (kit.path(ob) == "/search" and memory.get("searched")):
                return _search(ob, memory, p["thing"],
                               (f"check whether someone already reported the {p['thing']} problem",
                                f"look for an existing ticket about the {p['thing']} first"),
                               (f"list the tickets that mention the {p['thing']}",
                                "run the search for similar tickets"))
            new = kit.require(kit.link(ob, "New Ticket"), "New Ticket link")
            purposes = ((f"report the {p['thing']} problem as a new ticket, since no result describes it",
                         "start a new ticket, as none of the results is this problem") if memory.get("searched") else
                        (f"start a new {p['type']} ticket", "open the form for reporting a problem"))
            return kit.why(_reached(kit.click(ob, new), "New Ticket link"), *purposes)
        summary = kit.by_id(ob, "field-summary")
        if summary is not None and (summary.value or "") != p["summary"]:
            return kit.why(_reached(kit.fill(ob, summary, p["summary"]), "summary field"),
                           "give the ticket its title", f"describe the {p['thing']} problem in one line")
        purposes = {
            "type": (f"file it as a {p['type']}", f"mark the ticket as a {p['type']}"),
            "priority": (f"give it {p['priority']} priority", f"set its urgency to {p['priority']}"),
            "milestone": (f"plan it for the {p['milestone']} milestone", f"schedule the work for {p['milestone']}"),
            "component": (f"file it under the {p['component']} component",
                          f"send it to the people who look after {p['component']}"),
        }
        for name in ("type", "priority", "milestone", "component"):
            if not memory.get(name):
                what = f"{name} field"
                el = kit.require(kit.by_id(ob, f"field-{name}"), what)
                return kit.once(memory, name, kit.why(_reached(kit.select(ob, el, p[name]), what), *purposes[name]))
        if self.detour(memory) == "preview" and not memory.get("previewed"):
            preview = kit.require(kit.by_name(ob, "preview", tag="input"), "Preview button")
            return kit.once(memory, "previewed", kit.why(_reached(kit.click(ob, preview), "Preview button"),
                                                         "check how the new ticket will look before filing it",
                                                         "see a preview of the ticket first"))
        submit = kit.require(kit.by_name(ob, "submit", tag="input"), "Create ticket button")
        return kit.once(memory, "created", kit.why(_reached(kit.click(ob, submit), "Create ticket button"),
                                                   "file the ticket with these fields",
                                                   f"submit the new {p['type']} for {p['milestone']}"))


class CommentTicket(_TrackerTask):
    template = "comment_ticket"
    intent_template = 'Add the comment "{comment}" to ticket #{ticket}.'
    intent_templates = (
        intent_template,
        'Leave a note on ticket #{ticket} saying "{comment}"',
        'Post "{comment}" as a comment on #{ticket}.',
        'Let everyone following ticket #{ticket} know: "{comment}"',
    )
    user = "bob"
    #: preview the comment before posting it; read down the ticket's history instead of jumping to its end
    detours = ("preview", "history")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"ticket": rng.choice(seed_data().tickets).id, "comment": _fresh_comment(rng)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        new = self._new_comments(self.params["ticket"], self.user)
        if self.params["comment"] in [c.strip() for c in new]:
            return True, "comment added"
        return False, f"no new comment by {self.user} with that text on #{self.params['ticket']} (new: {new!r})"

    def program_html(self) -> list[dict[str, Any]]:
        return self._ticket_shows(self.params["ticket"], f"|{self.params['comment']}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        t = self.params["ticket"]
        if memory.get("submitted"):
            return kit.why(kit.finish(), f"comment on ticket #{t}", f"add the note to #{t}")
        step = _open_ticket(ob, memory, t)
        if step:
            return step
        detour = self.detour(memory)
        if detour != "history" and not memory.get("end"):  # the comment box is at the very bottom of the page
            memory["end"] = True  # set here: kit.once does not remember a page key (a scroll)
            return kit.press("End")
        # "history": the scroll policy pages down through the description and the comments to the box
        preview = (("check how the comment will read before posting it", "see the comment formatted first")
                   if detour == "preview" else ())
        return _comment_and_submit(ob, memory, self.params["comment"], preview=preview,
                                   written=(f"write the note for ticket #{t}", f"let the people following #{t} know"),
                                   submitted=(f"post the comment on ticket #{t}",
                                              "add the note to the ticket's history"))


class ReassignTicket(_TrackerTask):
    template = "reassign_ticket"
    intent_template = 'Reassign ticket #{ticket} ("{summary}") to {owner_name}.'
    intent_templates = (
        intent_template,
        "Hand ticket #{ticket} over to {owner_name}.",
        '{owner_name} is taking over "{summary}" (ticket #{ticket}): reassign it.',
        "Make {owner_name} the owner of ticket #{ticket}.",
    )
    user = "alice"
    #: find the ticket by its title instead of its number; look at the current owner's other tickets first
    detours = ("by_title", "owner_tickets")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        owner = rng.choice([d for d in DEVELOPERS if d != t.final["owner"]])
        return {"ticket": t.id, "summary": t.final["summary"], "owner": owner, "owner_name": _user_name(owner),
                "old_owner": t.final["owner"], "old_owner_name": _user_name(t.final["owner"])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        t = self._ticket_row(self.params["ticket"])
        if t["owner"] != self.params["owner"]:
            return False, f"owner is {t['owner']!r}, wanted {self.params['owner']!r}"
        if t["status"] != "assigned":
            return False, f"status is {t['status']!r}, wanted 'assigned'"
        return True, "reassigned"

    def program_html(self) -> list[dict[str, Any]]:
        return self._ticket_shows(self.params["ticket"], f"|owner: {self.params['owner_name']}|", "|status: assigned|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, t = self.params, self.params["ticket"]
        if memory.get("submitted"):
            return kit.why(kit.finish(), f"hand ticket #{t} over to {p['owner_name']}",
                           f"make {p['owner_name']} the owner of #{t}")
        detour = self.detour(memory)
        step = _find_by_title(ob, memory, t, p["summary"]) if detour == "by_title" else None
        if step:
            return step
        if detour == "owner_tickets" and memory.get("owner_list") and not memory.get("back"):
            memory["back"] = True
            return _go_back(f"return to ticket #{t} to hand it over", f"get back to #{t} and reassign it")
        step = _open_ticket(ob, memory, t)
        if step:
            return step
        if detour == "owner_tickets" and not memory.get("owner_list"):
            current = kit.require(kit.link(ob, href=rf"^/query\?owner={p['old_owner']}&"), "owner link")
            return kit.once(memory, "owner_list", kit.why(
                _reached(kit.click(ob, current), "owner link"),
                f"see what else {p['old_owner_name']} is working on before the handover",
                f"check {p['old_owner_name']}'s other open tickets first"))
        step = _open_modify(ob, memory, f"open the form for changing ticket #{t}", "unfold the ticket's editing form")
        if step:
            return step
        radio = kit.require(kit.by_id(ob, "action_reassign"), "reassign radio")
        if not radio.checked:
            return _toggle(ob, memory, radio, "radio", "reassign radio", "choose to give the ticket a new owner",
                           f"start handing #{t} to someone else")
        if not memory.get("owner"):
            owners = kit.require(kit.by_id(ob, "action_reassign_reassign_owner"), "new owner list")
            return kit.once(memory, "owner", kit.why(_reached(kit.select(ob, owners, p["owner"]), "new owner list"),
                                                     f"make {p['owner_name']} the new owner",
                                                     f"pick {p['owner_name']} to take it over"))
        return _comment_and_submit(ob, memory, None, submitted=(f"save the handover to {p['owner_name']}",
                                                                f"record {p['owner_name']} as the owner of #{t}"))


class CloseTicket(_TrackerTask):
    template = "close_ticket"
    intent_template = 'Close ticket #{ticket} with the resolution "{resolution}" and the comment "{comment}".'
    intent_templates = (
        intent_template,
        'Resolve ticket #{ticket} as {resolution}, with the comment "{comment}"',
        'Mark #{ticket} as {resolution} and close it, noting "{comment}"',
        'Please close ticket #{ticket} ({resolution}) and explain: "{comment}"',
    )
    user = "carol"
    detours = ("preview", "by_title")  # preview the closing comment first; find the ticket by its title

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        return {"ticket": t.id, "summary": t.final["summary"], "resolution": rng.choice(RESOLUTIONS),
                "comment": _fresh_comment(rng)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        t = self._ticket_row(self.params["ticket"])
        if (t["status"], t["resolution"]) != ("closed", self.params["resolution"]):
            return False, f"status/resolution is {t['status']}/{t['resolution']}"
        if self.params["comment"] not in [c.strip() for c in self._new_comments(self.params["ticket"], self.user)]:
            return False, "closed, but without the comment"
        return True, "closed with the resolution and comment"

    def program_html(self) -> list[dict[str, Any]]:
        p = self.params
        return self._ticket_shows(p["ticket"], "|status: closed|", f"|resolution: {p['resolution']}|",
                                  f"|{p['comment']}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, t = self.params, self.params["ticket"]
        if memory.get("submitted"):
            return kit.why(kit.finish(), f"close ticket #{t} as {p['resolution']}",
                           f"resolve #{t} with the comment")
        step = ((_find_by_title(ob, memory, t, p["summary"]) if self.detour(memory) == "by_title" else None)
                or _open_ticket(ob, memory, t)
                or _open_modify(ob, memory, f"open the form for changing ticket #{t}",
                                "unfold the ticket's editing form"))
        if step:
            return step
        radio = kit.require(kit.by_id(ob, "action_resolve"), "resolve radio")
        if not radio.checked:
            return _toggle(ob, memory, radio, "radio", "resolve radio", f"choose to close #{t}", "resolve the ticket")
        if not memory.get("resolution"):
            res = kit.require(kit.by_id(ob, "action_resolve_resolve_resolution"), "resolution list")
            return kit.once(memory, "resolution", kit.why(
                _reached(kit.select(ob, res, p["resolution"]), "resolution list"),
                f"record {p['resolution']} as the resolution", f"say why the ticket is closed ({p['resolution']})"))
        preview = (("check how the closing comment will read", "see the comment formatted before closing the ticket")
                   if self.detour(memory) == "preview" else ())
        return _comment_and_submit(ob, memory, p["comment"], preview=preview,
                                   written=("explain the resolution in a comment", "write the closing comment"),
                                   submitted=(f"close ticket #{t} as {p['resolution']}",
                                              "store the resolution and the comment"))


class ChangeMilestone(_TrackerTask):
    template = "change_milestone"
    intent_template = 'Move ticket #{ticket} ("{summary}") to the milestone {milestone}.'
    intent_templates = (
        intent_template,
        "Plan ticket #{ticket} for {milestone}.",
        'Reschedule "{summary}" (#{ticket}) for the {milestone} milestone.',
        "Set the milestone of ticket #{ticket} to {milestone}.",
    )
    user = "dave"
    #: look at the target milestone on the roadmap first; and open its page from there to see its tickets
    detours = ("roadmap", "milestone")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        milestone = rng.choice([m for m in OPEN_MILESTONES if m != t.final["milestone"]])
        return {"ticket": t.id, "summary": t.final["summary"], "milestone": milestone}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = self._ticket_row(self.params["ticket"])["milestone"]
        return (got == self.params["milestone"]), f"milestone is {got!r}"

    def program_html(self) -> list[dict[str, Any]]:
        return self._ticket_shows(self.params["ticket"], f"|milestone: {self.params['milestone']}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, t = self.params, self.params["ticket"]
        if memory.get("submitted"):
            return kit.why(kit.finish(), f"move ticket #{t} to {p['milestone']}", f"plan #{t} for {p['milestone']}")
        detour = self.detour(memory)
        if detour is not None and not memory.get("roadmap"):
            road = kit.require(kit.link(ob, "Roadmap", href=r"^/roadmap$", prefer_visible=True), "Roadmap link")
            return kit.once(memory, "roadmap", kit.why(_reached(kit.click(ob, road), "Roadmap link"),
                                                       f"check on the roadmap when {p['milestone']} is due",
                                                       f"see what {p['milestone']} covers before moving the ticket"))
        if detour == "milestone" and not memory.get("milestone_page"):
            what = f"link to the {p['milestone']} milestone"
            page = kit.require(kit.link(ob, href=rf"^/milestone/{p['milestone']}$", prefer_visible=True), what)
            return kit.once(memory, "milestone_page", kit.why(
                _reached(kit.click(ob, page), what), f"see which tickets are already planned for {p['milestone']}",
                f"look at what {p['milestone']} holds before adding #{t} to it"))
        step = _open_ticket(ob, memory, t) or _open_modify(ob, memory, f"open the form for changing ticket #{t}",
                                                           "unfold the ticket's editing form")
        if step:
            return step
        if not memory.get("milestone"):
            ms = kit.require(kit.by_id(ob, "field-milestone"), "milestone list")
            return kit.once(memory, "milestone", kit.why(
                _reached(kit.select(ob, ms, p["milestone"]), "milestone list"),
                f"move the ticket to {p['milestone']}", f"plan #{t} for {p['milestone']}"))
        return _comment_and_submit(ob, memory, None, submitted=(f"save the new milestone of #{t}",
                                                                "store the change on the ticket"))


class CountQuery(_TrackerTask):
    template = "count_query"
    intent_template = "How many tickets owned by {owner_name} have the status {status}? Answer with the number only."
    intent_templates = (
        intent_template,
        "Count {owner_name}'s tickets whose status is {status}. Give just the number.",
        "What is the number of {status} tickets that {owner_name} owns?",
        "Tell me how many of {owner_name}'s tickets are {status}.",
        "How many {status} tickets does {owner_name} own?",
        "{owner_name} asks how many of the tickets they own are {status}: what is the count?",
    )
    user = "alice"
    answer_task = True
    detours = ("report",)  # try the ready-made Active Tickets report first, then go back to the custom query

    def sample(self, rng: random.Random) -> dict[str, Any]:
        owner = rng.choice(DEVELOPERS)
        status = rng.choice(("assigned", "closed", "new", "accepted", "reopened"))
        count = sum(1 for t in seed_data().tickets if t.final["owner"] == owner and t.final["status"] == status)
        return {"owner": owner, "owner_name": _user_name(owner), "status": status, "count": count}

    def check(self, answer: str | None) -> tuple[bool, str]:
        nums = re.findall(r"\d+", answer or "")
        ok = nums == [str(self.params["count"])]
        return ok, f"answer {answer!r}, expected {self.params['count']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["count"])]}

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        name, status = p["owner_name"], p["status"]
        if kit.path(ob) != "/query":
            if re.fullmatch(r"/report/\d+", kit.path(ob)):
                memory["back"] = True
                return _go_back("return to the list of reports, since this one cannot filter by owner and status",
                                "build a custom query instead of this fixed report")
            if kit.path(ob) == "/report":
                if self.detour(memory) == "report" and not memory.get("report"):
                    report = kit.require(kit.link(ob, href=r"^/report/1$"), "Active Tickets report")
                    return kit.once(memory, "report", kit.why(
                        _reached(kit.click(ob, report), "Active Tickets report"),
                        f"look for {name}'s tickets in the report of active tickets first",
                        "try the ready-made report of active tickets first"))
                custom = kit.require(kit.link(ob, "New Custom Query"), "New Custom Query link")
                return kit.why(_reached(kit.click(ob, custom), "New Custom Query link"),
                               "filter the tickets by owner and status", f"build a query for {name}'s {status} tickets")
            view = kit.require(kit.link(ob, "View Tickets"), "View Tickets link")
            return kit.why(_reached(kit.click(ob, view), "View Tickets link"),
                           f"find a way to list {name}'s tickets", "open the ticket reports and queries")
        q = kit.query(ob)
        if memory.get("updated") and q.get("owner") == [p["owner"]] and q.get("status") == [status]:
            numrows = kit.find(ob, lambda e: "numrows" in e.attrs.get("class", ""))
            text = numrows.text if numrows is not None else ""
            m = re.search(r"(\d+|No) match", text)
            if m is None:
                raise kit.ExpertError(f"no match count on the query page: {text!r}")
            return kit.why(kit.finish("0" if m.group(1) == "No" else m.group(1)),
                           f"count {name}'s {status} tickets", f"tell how many {status} tickets {name} owns")
        owner = kit.require(kit.find(ob, lambda e: e.tag == "select"
                                     and re.fullmatch(r"\d+_owner", e.attrs.get("name", "")) is not None),
                            "owner filter")
        if not memory.get("owner"):
            return kit.once(memory, "owner", kit.why(_reached(kit.select(ob, owner, p["owner"]), "owner filter"),
                                                     f"keep only {name}'s tickets",
                                                     f"filter the list to tickets owned by {name}"))
        for box in kit.find_all(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "checkbox"
                                and re.fullmatch(r"\d+_status", e.attrs.get("name", "")) is not None):
            value = box.attrs.get("value")
            want = value == status
            if bool(box.checked) != want:
                purposes = ((f"include {status} tickets", f"count the {status} tickets too") if want else
                            (f"leave out {value} tickets", f"count only {status} tickets, not {value} ones"))
                return _toggle(ob, memory, box, f"clicked {value}", "status checkbox", *purposes)
        update = kit.require(kit.by_name(ob, "update", tag="input"), "Update button")
        return kit.once(memory, "updated", kit.why(_reached(kit.click(ob, update), "Update button"),
                                                   "apply the filters and count the matches",
                                                   "run the query with these filters"))


class TicketMilestone(_TrackerTask):
    template = "ticket_milestone"
    intent_template = 'Which milestone is the ticket titled "{summary}" planned for? Answer with the milestone name.'
    intent_templates = (
        intent_template,
        'In which milestone is "{summary}" scheduled?',
        'When is "{summary}" supposed to ship? Tell me the milestone.',
        'Look up the ticket "{summary}" and tell me its milestone.',
    )
    user = "grace"
    answer_task = True
    detours = ("refine",)  # search the first words of the title, then refine to the whole title

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice([t for t in seed_data().tickets if t.final["milestone"]])
        return {"summary": t.final["summary"], "ticket": t.id, "milestone": t.final["milestone"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = kit.norm(answer).strip(" .\"'") == kit.norm(self.params["milestone"])
        return ok, f"answer {answer!r}, expected {self.params['milestone']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["milestone"]]}

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        refine = self.detour(memory) == "refine"
        if re.fullmatch(r"/ticket/\d+", kit.path(ob)):
            cell = kit.require(kit.find(ob, lambda e: e.tag == "td" and e.attrs.get("headers") == "h_milestone"),
                               "milestone cell")
            return kit.why(kit.finish(cell.text.strip()), f'tell which milestone "{p["summary"]}" is planned for',
                           "report the milestone the ticket is planned for")
        if kit.path(ob) == "/search" and memory.get("searched"):
            if refine and not memory.get("refined"):
                box = kit.require(kit.by_id(ob, "q"), "search field")
                if (box.value or "") != p["summary"]:
                    return kit.why(_reached(kit.fill(ob, box, p["summary"]), "search field"),
                                   "narrow the results down to the whole title", "search for the full title instead")
                return kit.once(memory, "refined", kit.why(kit.press("Enter"), "run the search with the whole title",
                                                           "search again with the full title"))
            hit = kit.require(kit.find(ob, lambda e: e.tag == "a"
                                       and re.fullmatch(r"/ticket/\d+", e.attrs.get("href", "")) is not None
                                       and kit.norm(p["summary"]) in kit.norm(e.text)), "search hit")
            return kit.why(_reached(kit.click(ob, hit), "search hit"), "open the ticket with that title",
                           "read the ticket's milestone on its page")
        if refine:
            return _search(ob, memory, " ".join(p["summary"].split()[:3]),
                           ("search for the ticket by the start of its title", "look the ticket up by its first words"),
                           ("list the tickets that match", "run the search"))
        return _search(ob, memory, p["summary"], ("find the ticket by its title", "look the ticket up by its title"),
                       ("list the tickets with that title", "run the search"))


def _search_matches(word: str) -> list[int]:
    """Ticket ids Trac's search finds for one word (LIKE over these fields and the comments)."""
    w = word.lower()
    out = []
    for t in seed_data().tickets:
        f = t.final
        fields = [f["summary"], f["keywords"], f["description"], f["reporter"], f["cc"], str(t.id)] + t.comments
        if any(w in (v or "").lower() for v in fields):
            out.append(t.id)
    return out


#: Words for the search template: each matches a few tickets, none of the wiki pages' titles, and none
#: is a TracLink the search box would jump to.
SEARCH_WORDS = ("Unicode", "Turkish", "CSV", "deprecated", "race", "memory", "autocomplete", "webhook",
                "Docker", "tokenizer", "bisected", "workaround", "widget", "changelog", "timezone", "pagination",
                "locale", "encoding", "proxy", "iOS", "cron", "backup", "migration", "offline", "retry",
                "permission", "staging", "leak", "upload", "nightly", "lint", "ranking", "photo", "draft", "cache")


class SearchNewest(_TrackerTask):
    template = "search_newest"
    intent_template = ('Which is the most recently created ticket that mentions "{word}"? '
                       "Answer with its number (like #12).")
    intent_templates = (
        intent_template,
        'What is the newest ticket about "{word}"? Give its number.',
        'Find the latest ticket that mentions "{word}" and tell me its ticket number.',
        'I am looking for the most recent "{word}" ticket: what is its number?',
        'Several tickets mention "{word}". Which of them was opened last? Give its number.',
        'Tell me the number of the newest ticket mentioning "{word}".',
    )
    user = "frank"
    answer_task = True
    #: read down the results past the top hit before opening it; search "<word> bug" first, then widen;
    #: leave milestones and wiki pages out of the results and search again
    detours = ("scan", "refine", "tickets_only")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        words = [w for w in SEARCH_WORDS if len(_search_matches(w)) >= 2]
        word = rng.choice(words)
        return {"word": word, "ticket": max(_search_matches(word))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        nums = re.findall(r"\d+", answer or "")
        return nums == [str(self.params["ticket"])], f"answer {answer!r}, expected #{self.params['ticket']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["ticket"])]}

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        word = self.params["word"]
        detour = self.detour(memory)
        m = re.fullmatch(r"/ticket/(\d+)", kit.path(ob))
        if m and memory.get("opened"):
            return kit.why(kit.finish(f"#{m.group(1)}"), f'tell the number of the newest ticket that mentions "{word}"',
                           "report the number of the most recent match")
        if kit.path(ob) == "/search" and memory.get("searched"):
            if detour == "refine" and not memory.get("refined"):
                box = kit.require(kit.by_id(ob, "q"), "search field")
                if (box.value or "") != word:
                    return kit.why(_reached(kit.fill(ob, box, word), "search field"),
                                   f'search for "{word}" alone, so that tickets without the word "bug" show up too',
                                   f'widen the search to every ticket that mentions "{word}"')
                return kit.once(memory, "refined", kit.why(kit.press("Enter"), "run the wider search",
                                                           f'list every ticket that mentions "{word}"'))
            if detour == "tickets_only" and not memory.get("filtered"):
                for realm, noun in (("milestone", "milestones"), ("wiki", "wiki pages")):
                    box = kit.by_id(ob, realm)
                    if box is not None and box.checked:
                        return _toggle(ob, memory, box, f"unchecked {realm}", f"{realm} filter",
                                       f"leave {noun} out of the results", "keep only tickets in the results")
                again = kit.require(kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "submit"
                                             and _inside(ob, e, "fullsearch")), "Search button")
                return kit.once(memory, "filtered", kit.why(_reached(kit.click(ob, again), "Search button"),
                                                            "search again among the tickets only",
                                                            "list only the matching tickets"))
            # results come newest first; the first ticket among them is the newest ticket
            hits = kit.find_all(ob, lambda e: e.tag == "a" and e.parent is not None
                                and re.fullmatch(r"/ticket/\d+", e.attrs.get("href", "")) is not None
                                and ob.elements[e.parent].tag == "dt")
            first = kit.require(hits[0] if hits else None, "first ticket hit")
            if detour == "scan" and not memory.get("scanned") and first.bbox is not None:
                # read on down the list past the top hit (when the page is long enough to take it out of
                # view), then come back up to it: the scroll policy brings it back for the click
                centre = (first.bbox[1] + first.bbox[3]) / 2
                bottom = max((el.bbox[3] for el in ob.elements.values() if el.bbox is not None), default=0.0)
                if centre > 0 and bottom - kit.view_height(ob) > centre + 20:
                    return Decision(ActionType.SCROLL, direction="down")
                memory["scanned"] = True
            return kit.once(memory, "opened", kit.why(_reached(kit.click(ob, first), "first ticket hit"),
                                                      "open the newest match, which the results list first",
                                                      "open the most recent matching ticket to read its number"))
        if detour == "refine":
            return _search(ob, memory, f"{word} bug", (f'look for bug reports that mention "{word}"',
                                                       f'search for "{word}" bugs'),
                           ("list the matching tickets", "run the search"))
        return _search(ob, memory, word,
                       (f'find every ticket that mentions "{word}"', f'search the tickets for "{word}"'),
                       ("list the matching tickets, newest first", "run the search"))


class AddMilestone(_TrackerTask):
    template = "add_milestone"
    intent_template = 'Add a milestone named "{name}" due on {due}.'
    intent_templates = (
        intent_template,
        'We need a new milestone called "{name}", due {due}.',
        'Set up the milestone "{name}" with the due date {due}.',
        'Create the "{name}" milestone; it is due on {due}.',
    )
    user = "admin"
    #: check the roadmap's milestones first, completed ones included; open the admin's Versions panel before
    #: the Milestones one
    detours = ("roadmap", "versions")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        name = rng.choice(("Fornax", "Gemini", "Hydra", "Indus", "Lyra", "Mensa", "Norma", "Orion", "Pavo"))
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        return {"name": name, "due": f"2026-{month:02d}-{day:02d}"}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query("SELECT due FROM milestone WHERE name=?", (self.params["name"],))
        if not rows:
            return False, "no such milestone"
        due = rows[0][0]
        got = datetime.fromtimestamp(due / 1e6, timezone.utc).strftime("%Y-%m-%d") if due else None
        return got == self.params["due"], f"due {got}, wanted {self.params['due']}"

    def program_html(self) -> list[dict[str, Any]]:
        # the milestone's page: "Due in 3 months (2026-04-01T00:00:00Z)"; no such milestone: an error page
        return self.page_shows(f"/milestone/{urllib.parse.quote(self.params['name'])}",
                                js_entries("#content .date", "'due: ' + x.innerText.trim()"), f"({self.params['due']}")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        name = p["name"]
        if memory.get("added"):
            return kit.why(kit.finish(), f"add the milestone {name} due on {p['due']}",
                           f"set up {name} with its due date")
        detour = self.detour(memory)
        if not kit.path(ob).startswith("/admin"):
            if detour == "roadmap" and not memory.get("roadmap"):
                road = kit.require(kit.link(ob, "Roadmap", href=r"^/roadmap$", prefer_visible=True), "Roadmap link")
                return kit.once(memory, "roadmap", kit.why(
                    _reached(kit.click(ob, road), "Roadmap link"),
                    f"check on the roadmap that there is no {name} milestone yet",
                    "see the existing milestones and their due dates first"))
            if detour == "roadmap" and kit.path(ob) == "/roadmap" and not memory.get("shown"):
                done = kit.require(kit.by_id(ob, "showcompleted"), "Show completed milestones checkbox")
                if not done.checked:
                    return _toggle(ob, memory, done, "completed", "Show completed milestones checkbox",
                                   "include the completed milestones in the list",
                                   f"make sure no finished milestone is called {name} either")
                update = kit.require(kit.button(ob, "Update"), "Update button")
                return kit.once(memory, "shown", kit.why(_reached(kit.click(ob, update), "Update button"),
                                                         "show every milestone, completed ones too",
                                                         "list the completed milestones as well"))
            admin = kit.require(kit.link(ob, "Admin"), "Admin link")
            return kit.why(_reached(kit.click(ob, admin), "Admin link"),
                           "open the administration pages, where milestones are managed",
                           "get to the project settings to add the milestone")
        if kit.path(ob) != "/admin/ticket/milestones":
            if detour == "versions" and not memory.get("versions"):
                what = "Versions panel link"
                panel = kit.require(kit.link(ob, "Versions", href=r"/admin/ticket/versions$"), what)
                return kit.once(memory, "versions", kit.why(_reached(kit.click(ob, panel), what),
                                                            "look for the release dates under Versions first",
                                                            "check whether releases are planned as versions"))
            what = "Milestones panel link"
            panel = kit.require(kit.link(ob, "Milestones", href=r"/admin/ticket/milestones$"), what)
            purposes = (("switch to the list of milestones, where due dates are set",
                         f"add {name} where the milestones are kept") if memory.get("versions") else
                        (f"open the list of milestones to add {name}", "manage the milestones, where the new one goes"))
            return kit.why(_reached(kit.click(ob, panel), what), *purposes)
        field = kit.by_id(ob, "name")
        if field is not None and (field.value or "") != name:
            return kit.why(_reached(kit.fill(ob, field, name), "milestone name field"),
                           f"name the new milestone {name}", "enter the milestone's name")
        due = kit.by_id(ob, "duedate")
        if due is not None and (due.value or "") != p["due"]:
            return kit.why(_reached(kit.fill(ob, due, p["due"]), "due date field"),
                           f"set its due date to {p['due']}", f"make {name} due on {p['due']}")
        if not memory.get("closed_picker"):
            # the date picker pops up over the form: Escape closes it, as a user would
            return kit.once(memory, "closed_picker", kit.why(kit.press("Escape"),
                                                             "close the date picker that covers the form",
                                                             "dismiss the calendar pop-up"))
        add = kit.require(kit.by_name(ob, "add", tag="input"), "Add button")
        return kit.once(memory, "added", kit.why(_reached(kit.click(ob, add), "Add button"),
                                                 f"add {name} to the milestones", f"create the milestone {name}"))


class AddComponent(_TrackerTask):
    template = "add_component"
    intent_template = 'Add a component named "{name}" owned by {owner_name}.'
    intent_templates = (
        intent_template,
        'Create the component "{name}" with {owner_name} as its default owner.',
        'We need a new "{name}" component; {owner_name} will own it.',
        'Set up a new component, "{name}", whose tickets go to {owner_name} by default.',
    )
    user = "admin"
    #: open the Ticket Types panel first and go back; open the Milestones panel first
    detours = ("types", "milestones")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        owner = rng.choice(DEVELOPERS)
        name = rng.choice(("billing", "notifications", "reporting", "importer", "i18n", "plugins", "webhooks",
                           "analytics", "scheduler", "payments", "exports", "integrations", "caching", "sso"))
        return {"name": name, "owner": owner, "owner_name": _user_name(owner)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query("SELECT owner FROM component WHERE name=?", (self.params["name"],))
        if not rows:
            return False, "no such component"
        return rows[0][0] == self.params["owner"], f"owner {rows[0][0]!r}"

    def program_html(self) -> list[dict[str, Any]]:
        # the admin's list of components: each one's name and owner (a user name)
        components = js_entries("#complist tbody tr", "x.querySelector('.name').innerText.trim() + ': ' + "
                                 "x.querySelector('.owner').innerText.trim()")
        return self.page_shows("/admin/ticket/components", components,
                                f"|{self.params['name']}: {self.params['owner']}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        name, owner_name = p["name"], p["owner_name"]
        if memory.get("added"):
            return kit.why(kit.finish(), f"add the component {name} owned by {owner_name}",
                           f"set up {name} with {owner_name} as its owner")
        if not kit.path(ob).startswith("/admin"):
            admin = kit.require(kit.link(ob, "Admin"), "Admin link")
            return kit.why(_reached(kit.click(ob, admin), "Admin link"),
                           "open the administration pages, where components are managed",
                           "get to the project settings to add the component")
        if kit.path(ob) != "/admin/ticket/components":
            detour = self.detour(memory)
            if detour is not None and not memory.get("wrong_panel"):
                label, href = {"types": ("Ticket Types", "type"), "milestones": ("Milestones", "milestones")}[detour]
                what = f"{label} panel link"
                panel = kit.require(kit.link(ob, label, href=rf"/admin/ticket/{href}$"), what)
                purposes = (("look for the component settings under Ticket Types first",
                             "check whether components are set up with the ticket types") if detour == "types" else
                            ("look for the component settings next to the milestones first",
                             "check whether components are managed with the milestones"))
                return kit.once(memory, "wrong_panel", kit.why(_reached(kit.click(ob, panel), what), *purposes))
            if detour == "types" and kit.path(ob) == "/admin/ticket/type" and not memory.get("back"):
                memory["back"] = True
                return _go_back("return to the page before, since this one only lists ticket types",
                                "get back to where the admin panels started")
            what = "Components panel link"
            panel = kit.require(kit.link(ob, "Components", href=r"/admin/ticket/components$"), what)
            purposes = (("switch to the list of components, where new ones are added",
                         f"add {name} where the components are kept") if memory.get("wrong_panel") else
                        (f"open the list of components to add {name}", "manage the components, where the new one goes"))
            return kit.why(_reached(kit.click(ob, panel), what), *purposes)
        field = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("name") == "name"
                         and e.attrs.get("type", "text") == "text")
        if field is not None and (field.value or "") != name:
            return kit.why(_reached(kit.fill(ob, field, name), "component name field"),
                           f"name the new component {name}", "enter the component's name")
        if not memory.get("owner"):
            owners = kit.require(kit.by_id(ob, "owner"), "owner list")
            return kit.once(memory, "owner", kit.why(_reached(kit.select(ob, owners, p["owner"]), "owner list"),
                                                     f"make {owner_name} its default owner",
                                                     f"send its new tickets to {owner_name}"))
        add = kit.require(kit.by_name(ob, "add", tag="input"), "Add button")
        return kit.once(memory, "added", kit.why(_reached(kit.click(ob, add), "Add button"),
                                                 f"add the {name} component", f"create {name} with its owner"))


#: wiki page -> the link text on WikiStart's quick links
WIKI_PAGES = {"ReleaseProcess": "Release process", "CodingStyle": "Coding style", "Onboarding": "Onboarding",
              "Architecture": "Architecture", "MeetingNotes": "Meeting notes"}
#: WikiStart's quick links to wiki pages, in their order on the page (page -> link text)
QUICK_LINKS = {"ReleaseProcess": "Release process", "CodingStyle": "Coding style", "Onboarding": "Onboarding",
               "Architecture": "Architecture", "TeamContacts": "Team", "MeetingNotes": "Meeting notes"}


class EditWiki(_TrackerTask):
    template = "edit_wiki"
    intent_template = 'Add the line "{line}" at the end of the wiki page "{title}".'
    intent_templates = (
        intent_template,
        'Append "{line}" to the {title} wiki page.',
        'On the wiki page "{title}", add a last line saying "{line}"',
        'The {title} page of the wiki should end with "{line}"; please add it.',
    )
    user = "carol"
    #: open a neighbouring quick link first and come back; preview the page before saving it
    detours = ("wrong_page", "preview")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        page = rng.choice(sorted(WIKI_PAGES))
        line = rng.choice(("Reviewed by {u} on 2025-06-{d:02d}.", "Owner of this page: {u}.",
                           "Questions go to {u} (room {d}).")).format(u=_user_name(rng.choice(DEVELOPERS)),
                                                                      d=rng.randint(3, 28))
        return {"page": page, "title": WIKI_PAGES[page], "line": line}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        seeded = seed_data().wiki[p["page"]]
        rows = self.site.query("SELECT version, author, text FROM wiki WHERE name=? ORDER BY version DESC LIMIT 1",
                               (p["page"],))
        version, author, text = rows[0]
        if version <= len(seeded):
            return False, "the page was not saved"
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        if not lines or lines[-1] != p["line"]:
            return False, f"last line is {lines[-1:]!r}"
        if kit.norm(text).replace(kit.norm(p["line"]), "").strip() != kit.norm(seeded[-1].text):
            return False, "the rest of the page changed"
        return author == self.user, f"saved by {author}"

    def program_html(self) -> list[dict[str, Any]]:
        # the page's changes since its seeded version (Trac's diff of it with the latest): the latest
        # version's author, then each block of lines (unchanged context, added, removed, modified) with
        # the text it adds: only one block of added lines, the line, after the unchanged end of the page
        p = self.params
        author = js_entries("#overview dd.author", "'author: ' + x.innerText.trim()")
        blocks = js_entries("table.trac-diff tbody", "x.className + ': ' + [...x.querySelectorAll('ins')]"
                                                      ".map(i => i.innerText.trim()).filter(s => s).join(' / ')")
        seeded = len(seed_data().wiki[p["page"]])
        return [{"url": f"{self.site.base_url}/wiki/{p['page']}?action=diff&old_version={seeded}",
                 "locator": f"{author} + {blocks}",
                 "required_contents": {"exact_match": f"|author: {_user_name(self.user)}||unmod: ||add: {p['line']}|"}}]

    def _wrong_page(self) -> str:
        """The quick link next to the task's page (above or below it, drawn from the seed)."""
        order = list(QUICK_LINKS)
        i = order.index(self.params["page"])
        near = [order[j] for j in (i - 1, i + 1) if 0 <= j < len(order)]
        return random.Random(f"{self.get_task_id()}:{self.seed}:detour:page").choice(near)

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        title = p["title"]
        if memory.get("saved"):
            return kit.why(kit.finish(), f"add the line to the {title} page", f"end the {title} page with the new line")
        detour = self.detour(memory)
        if detour == "wrong_page" and not memory.get("back"):
            wrong = self._wrong_page()
            if kit.path(ob) == f"/wiki/{wrong}":
                memory["back"] = True
                return _go_back(f"return to the quick links, since the line belongs on the {title} page",
                                f"get back to the start page and open {title} instead")
            if not memory.get("wrong"):
                what = f"link to {wrong}"
                link = kit.require(kit.link(ob, QUICK_LINKS[wrong], href=rf"/wiki/{wrong}$"), what)
                return kit.once(memory, "wrong", kit.why(_reached(kit.click(ob, link), what),
                                                         f"check the {QUICK_LINKS[wrong]} page first, in case the line "
                                                         "belongs there",
                                                         f"look at the {QUICK_LINKS[wrong]} page first"))
        if kit.path(ob) != f"/wiki/{p['page']}":
            what = f"link to {p['page']}"
            page = kit.require(kit.link(ob, title, href=rf"/wiki/{p['page']}$"), what)
            return kit.why(_reached(kit.click(ob, page), what), "open the page the line belongs on",
                           f"get to the {title} page to add the line")
        text = kit.by_id(ob, "text")
        if text is None:  # the page view: its edit button sits under the text
            edit = kit.require(kit.button(ob, "Edit this page"), "Edit this page button")
            return kit.why(_reached(kit.click(ob, edit), "Edit this page button"), "open the page for editing",
                           f"start editing the {title} page")
        current = text.value or ""
        if p["line"] not in current:
            return kit.why(_reached(kit.fill(ob, text, current.rstrip("\n") + "\n" + p["line"] + "\n"), "page text"),
                           "add the line at the end of the page", f"put the new line below the last line of {title}")
        if detour == "preview" and not memory.get("previewed"):
            preview = kit.require(kit.by_name(ob, "preview", tag="input"), "Preview Page button")
            return kit.once(memory, "previewed", kit.why(_reached(kit.click(ob, preview), "Preview Page button"),
                                                         "check how the page will look with the new line",
                                                         "see the page rendered before it is stored"))
        save = kit.require(kit.by_id(ob, "save"), "Submit changes button")
        return kit.once(memory, "saved", kit.why(_reached(kit.click(ob, save), "Submit changes button"),
                                                 f"store the new version of the {title} page",
                                                 f"save the {title} page with the new line"))


def _id_list(ids: list[int]) -> str:
    """``#3, #17 and #42``."""
    tags = [f"#{i}" for i in ids]
    return ", ".join(tags[:-1]) + f" and {tags[-1]}" if len(tags) > 1 else tags[0]


class TriageTickets(_TrackerTask):
    """The long template (WebArena's multi-part GitLab goals): five tickets, each opened, re-prioritised,
    re-planned, reassigned and commented (nine actions apiece; some 60 steps with the scrolls)."""

    template = "triage_tickets"
    intent_template = ('Triage tickets {tickets}: assign each to {owner_name}, plan it for {milestone} with '
                       'priority {priority}, and comment "{comment}" on it.')
    intent_templates = (
        intent_template,
        ("{owner_name} is taking over tickets {tickets} for the {milestone} release. Reassign them to "
         '{owner_name}, set their priority to {priority}, and leave the comment "{comment}" on each.'),
        ("Plan tickets {tickets} into {milestone} at {priority} priority, owned by {owner_name}, each with the "
         'comment "{comment}"'),
        ('Hand tickets {tickets} to {owner_name} for {milestone} (priority {priority}) and note "{comment}" on '
         "every one of them."),
    )
    user = "dave"
    detours = ("roadmap",)  # look at the milestone on the roadmap before starting
    #: how many tickets one task triages
    N_TICKETS = 5

    def sample(self, rng: random.Random) -> dict[str, Any]:
        owner = rng.choice(DEVELOPERS)
        milestone = rng.choice(("Cirrus", "Dorado", "Equinox"))
        priority = rng.choice(PRIORITIES[:3])
        pool = [t for t in _open_tickets() if t.final["owner"] != owner and t.final["milestone"] != milestone
                and t.final["priority"] != priority]
        ids = sorted(t.id for t in rng.sample(pool, self.N_TICKETS))
        first = _first_name(owner)
        comment = rng.choice((f"Triaged for {milestone}: {first} takes this over.",
                              f"Planned for {milestone}; {first} owns it now.",
                              f"From the {milestone} planning meeting: {first} will look into it."))
        return {"ids": ids, "tickets": _id_list(ids), "owner": owner, "owner_name": _user_name(owner),
                "milestone": milestone, "priority": priority, "comment": comment}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        for tid in p["ids"]:
            t = self._ticket_row(tid)
            for k in ("owner", "milestone", "priority"):
                if t[k] != p[k]:
                    return False, f"#{tid} has {k}={t[k]!r}, wanted {p[k]!r}"
            if t["status"] != "assigned":
                return False, f"#{tid} has the status {t['status']!r}, wanted 'assigned'"
            if p["comment"] not in [c.strip() for c in self._new_comments(tid, self.user)]:
                return False, f"#{tid} lacks the comment"
        return True, f"all {len(p['ids'])} tickets triaged"

    def program_html(self) -> list[dict[str, Any]]:
        p = self.params
        return [target for tid in p["ids"] for target in self._ticket_shows(
            tid, f"|owner: {p['owner_name']}|", f"|milestone: {p['milestone']}|", f"|priority: {p['priority']}|",
            "|status: assigned|", f"|{p['comment']}|")]

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        ids, name, milestone, priority = p["ids"], p["owner_name"], p["milestone"], p["priority"]
        todo = [tid for tid in ids if not memory.get(f"ticket{tid}", {}).get("submitted")]
        if not todo:
            return kit.why(kit.finish(), f"triage the {len(ids)} tickets for {milestone}",
                           f"hand all {len(ids)} tickets to {name} for {milestone}")
        if self.detour(memory) == "roadmap" and not memory.get("roadmap"):
            road = kit.require(kit.link(ob, "Roadmap", href=r"^/roadmap$", prefer_visible=True), "Roadmap link")
            return kit.once(memory, "roadmap", kit.why(_reached(kit.click(ob, road), "Roadmap link"),
                                                       f"see what is already planned for {milestone} first",
                                                       f"check when {milestone} is due before adding the tickets"))
        tid = todo[0]
        m = memory.setdefault(f"ticket{tid}", {})
        if tid == ids[0]:
            typed = (f"start with ticket #{tid}", f"open the first ticket to triage, #{tid}")
        elif tid == ids[-1]:
            typed = (f"open the last ticket to triage, #{tid}", f"finish the triage with ticket #{tid}")
        else:
            typed = (f"move on to ticket #{tid}", f"open the next ticket to triage, #{tid}")
        step = (_open_ticket(ob, m, tid, typed=typed, entered=(f"open ticket #{tid}", f"jump to ticket #{tid}"))
                or _open_modify(ob, m, f"open the editing form of #{tid}", "unfold the ticket's editing form"))
        if step:
            return step
        fields = (("priority", "field-priority", priority,
                   (f"set the priority of #{tid} to {priority}", f"give #{tid} {priority} priority")),
                  ("milestone", "field-milestone", milestone,
                   (f"plan #{tid} for {milestone}", f"move #{tid} into {milestone}")))
        for key, html_id, value, purposes in fields:
            if not m.get(key):
                el = kit.require(kit.by_id(ob, html_id), f"{key} list")
                return kit.once(m, key, kit.why(_reached(kit.select(ob, el, value), f"{key} list"), *purposes))
        radio = kit.require(kit.by_id(ob, "action_reassign"), "reassign radio")
        if not radio.checked:
            return _toggle(ob, m, radio, "radio", "reassign radio", f"start handing #{tid} to {name}",
                           "choose to give the ticket a new owner")
        if not m.get("owner"):
            owners = kit.require(kit.by_id(ob, "action_reassign_reassign_owner"), "new owner list")
            return kit.once(m, "owner", kit.why(_reached(kit.select(ob, owners, p["owner"]), "new owner list"),
                                                f"make {name} the owner of #{tid}", f"pick {name} as the new owner"))
        return _comment_and_submit(ob, m, p["comment"], written=(f"note the triage on #{tid}",
                                                                 "write the comment the triage calls for"),
                                   submitted=(f"store the triage of #{tid}",
                                              f"keep the new owner, milestone and priority of #{tid}"))


# ----------------------------------------------------------------------------- navigation, lookups and more edits
#: The statuses of an open ticket: a query for "open tickets" filters on these (or on ``status=!closed``).
OPEN_STATUSES = ("accepted", "assigned", "new", "reopened")
#: Keywords the seed gives tickets (:mod:`mag_dataset.sites.tracker.data`); a task adds one a ticket lacks.
KEYWORDS = ("regression", "performance", "security", "ui", "needinfo", "easy", "ux", "crash")


def _final_query(url: str | None) -> dict[str, list[str]]:
    """The query of the page a navigation task finished on (empty without one)."""
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url or "").query)


def _open_only(url: str | None) -> tuple[bool, str]:
    """Whether the query page ``url`` lists only open tickets: ``status=!closed``, or the four open statuses."""
    got = _final_query(url).get("status", [])
    ok = set(got) in ({"!closed"}, set(OPEN_STATUSES))
    return ok, f"status filter {got!r}" + ("" if ok else ", wanted the open tickets only")


def _completed(milestone: str) -> bool:
    return MILESTONES[milestone][1] is not None


def _to_milestone(ob: Observation, memory: dict[str, Any], milestone: str, *purposes: str) -> Decision | None:
    """Steps to the page of ``milestone`` through the roadmap (completed milestones shown first when it is
    one of them; ``purposes``: what opening it is for), or None once there."""
    if kit.path(ob) == f"/milestone/{milestone}":
        return None
    if kit.path(ob) != "/roadmap":
        road = kit.require(kit.link(ob, "Roadmap", href=r"^/roadmap$", prefer_visible=True), "Roadmap link")
        return kit.why(_reached(kit.click(ob, road), "Roadmap link"), f"find {milestone} among the milestones",
                       "open the roadmap, which lists the milestones")
    what = f"link to the {milestone} milestone"
    page = kit.link(ob, href=rf"^/milestone/{milestone}$", prefer_visible=True)
    if page is None and _completed(milestone):
        done = kit.require(kit.by_id(ob, "showcompleted"), "Show completed milestones checkbox")
        if not done.checked:
            return _toggle(ob, memory, done, "completed", "Show completed milestones checkbox",
                           f"include the completed milestones, since {milestone} is finished",
                           f"list the finished milestones too, {milestone} among them")
        update = kit.require(kit.button(ob, "Update"), "Update button")
        return kit.why(_reached(kit.click(ob, update), "Update button"), "show the completed milestones as well",
                       f"bring {milestone} back onto the roadmap")
    return kit.why(_reached(kit.click(ob, kit.require(page, what)), what), *purposes)


class OpenTicketByTitle(_TrackerTask):
    template = "open_ticket_by_title"
    kind = "navigation"
    intent_template = 'Open the ticket titled "{summary}".'
    intent_templates = (
        intent_template,
        'Show me the ticket "{summary}".',
        'Take me to the ticket about "{summary}".',
        'I want to read the ticket "{summary}"; bring it up.',
    )
    user = "grace"
    detours = ("refine",)  # search the first words of the title, then the whole title

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(seed_data().tickets)
        return {"ticket": t.id, "summary": t.final["summary"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(f"/ticket/{self.params['ticket']}")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, t = self.params, self.params["ticket"]
        if kit.path(ob) == f"/ticket/{t}":
            return kit.why(kit.finish(), f'show the ticket "{p["summary"]}"', f"stay on ticket #{t}, the one asked for")
        if self.detour(memory) == "refine":
            if not memory.get("searched"):
                return _search(ob, memory, " ".join(p["summary"].split()[:3]),
                               ("look the ticket up by the start of its title", "search for the first words of the title"),
                               ("list the tickets that match", "run the search"))
            if kit.path(ob) == "/search" and not memory.get("refined"):
                box = kit.require(kit.by_id(ob, "q"), "search field")
                if (box.value or "") != p["summary"]:
                    return kit.why(_reached(kit.fill(ob, box, p["summary"]), "search field"),
                                   "narrow the results down to the whole title", "search for the full title instead")
                return kit.once(memory, "refined", kit.why(kit.press("Enter"), "run the search with the whole title",
                                                           "search again with the full title"))
        return _find_by_title(ob, memory, t, p["summary"])


class OpenMilestone(_TrackerTask):
    template = "open_milestone"
    kind = "navigation"
    intent_template = "Open the milestone {milestone}."
    intent_templates = (
        intent_template,
        "Show me the page of the {milestone} milestone.",
        "Take me to milestone {milestone}.",
        "I'd like to see how the {milestone} milestone is going; open its page.",
    )
    user = "bob"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"milestone": rng.choice(sorted(MILESTONES))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(f"/milestone/{self.params['milestone']}")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        m = self.params["milestone"]
        step = _to_milestone(ob, memory, m, f"open the page of {m}", f"see the {m} milestone on its own page")
        if step:
            return step
        return kit.why(kit.finish(), f"show the {m} milestone", f"stay on the page of {m}")


class OwnerOpenTickets(_TrackerTask):
    template = "owner_open_tickets"
    kind = "navigation"
    intent_template = "Show me the open tickets assigned to {owner_name}."
    intent_templates = (
        intent_template,
        "List the tickets {owner_name} still has to work on, all the open ones.",
        "Bring up {owner_name}'s open tickets.",
        "I need the list of open tickets owned by {owner_name}.",
    )
    user = "frank"
    detours = ("report",)  # try the ready-made Active Tickets report first, then the custom query

    def sample(self, rng: random.Random) -> dict[str, Any]:
        owner = rng.choice(DEVELOPERS)
        return {"owner": owner, "owner_name": _user_name(owner)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok, reason = self.on_page("/query", owner=self.params["owner"])
        return _open_only(self.final_url) if ok else (ok, reason)

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        name = p["owner_name"]
        if kit.path(ob) != "/query":
            if re.fullmatch(r"/report/\d+", kit.path(ob)):
                memory["back"] = True
                return _go_back("return to the list of reports, since this one shows everybody's tickets",
                                f"build a query of {name}'s tickets instead of this report")
            if kit.path(ob) == "/report":
                if self.detour(memory) == "report" and not memory.get("report"):
                    report = kit.require(kit.link(ob, href=r"^/report/1$"), "Active Tickets report")
                    return kit.once(memory, "report", kit.why(
                        _reached(kit.click(ob, report), "Active Tickets report"),
                        f"look for {name}'s tickets in the report of active tickets first",
                        "try the ready-made report of active tickets first"))
                custom = kit.require(kit.link(ob, "New Custom Query"), "New Custom Query link")
                return kit.why(_reached(kit.click(ob, custom), "New Custom Query link"),
                               f"filter the tickets by their owner, {name}", "build a query of the open tickets by owner")
            view = kit.require(kit.link(ob, "View Tickets"), "View Tickets link")
            return kit.why(_reached(kit.click(ob, view), "View Tickets link"),
                           f"find a way to list {name}'s tickets", "open the ticket reports and queries")
        q = kit.query(ob)
        if memory.get("updated") and q.get("owner") == [p["owner"]]:
            return kit.why(kit.finish(), f"show {name}'s open tickets", f"leave the list of {name}'s open tickets on screen")
        owner = kit.require(kit.find(ob, lambda e: e.tag == "select"
                                     and re.fullmatch(r"\d+_owner", e.attrs.get("name", "")) is not None),
                            "owner filter")
        if not memory.get("owner"):
            return kit.once(memory, "owner", kit.why(_reached(kit.select(ob, owner, p["owner"]), "owner filter"),
                                                     f"keep only {name}'s tickets",
                                                     f"filter the list to tickets owned by {name}"))
        for box in kit.find_all(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "checkbox"
                                and re.fullmatch(r"\d+_status", e.attrs.get("name", "")) is not None):
            value = box.attrs.get("value")
            want = value in OPEN_STATUSES
            if bool(box.checked) != want:
                purposes = ((f"include {value} tickets", f"list the {value} tickets too") if want else
                            (f"leave out {value} tickets", "keep only the open tickets"))
                return _toggle(ob, memory, box, f"clicked {value}", "status checkbox", *purposes)
        update = kit.require(kit.by_name(ob, "update", tag="input"), "Update button")
        return kit.once(memory, "updated", kit.why(_reached(kit.click(ob, update), "Update button"),
                                                   f"list {name}'s open tickets", "run the query with these filters"))


#: sort key of the query -> (how the intent says it, the column header's text, descending)
SORTS: dict[str, tuple[str, str, bool]] = {
    "summary": ("title", "Summary", False), "owner": ("owner", "Owner", False),
    "milestone": ("milestone", "Milestone", False), "type": ("type", "Type", False),
    "status": ("status", "Status", False), "id": ("ticket number, newest first", "Ticket", True),
}


class ComponentTicketsSorted(_TrackerTask):
    template = "component_tickets_sorted"
    kind = "navigation"
    intent_template = "Show the open tickets of the {component} component sorted by {sort_label}."
    intent_templates = (
        intent_template,
        "List the open {component} tickets, ordered by {sort_label}.",
        "I want to go through the {component} component's open tickets by {sort_label}; bring them up that way.",
        "Open the list of open tickets in {component}, sorted by {sort_label}.",
    )
    user = "bob"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        component = rng.choice(sorted(COMPONENTS))
        order = rng.choice(sorted(SORTS))
        label, header, desc = SORTS[order]
        return {"component": component, "order": order, "sort_label": label, "header": header, "desc": desc}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        ok, reason = self.on_page("/query", component=p["component"], order=p["order"])
        if not ok:
            return ok, reason
        desc = _final_query(self.final_url).get("desc", ["0"])[0] not in ("", "0")
        if desc != p["desc"]:
            return False, f"sorted {'descending' if desc else 'ascending'}, wanted the other way"
        return _open_only(self.final_url)

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        c, label = p["component"], p["sort_label"]
        if kit.path(ob) != "/query":
            what = f"link to the {c} tickets"
            link = kit.require(kit.link(ob, c, href=rf"^/query\?component={re.escape(c)}&status=!closed"), what)
            return kit.why(_reached(kit.click(ob, link), what), f"list the open tickets of {c}",
                           f"open the {c} component's open tickets from the start page")
        q = kit.query(ob)
        desc = q.get("desc", ["0"])[0] not in ("", "0")
        if q.get("order") == [p["order"]] and desc == p["desc"]:
            return kit.why(kit.finish(), f"show the open {c} tickets sorted by {label}",
                           f"leave the {c} tickets on screen in the order asked for")
        what = f"{p['header']} column header"
        header = kit.require(kit.link(ob, p["header"], href=r"^/query\?.*order="), what)
        purposes = ((f"reverse the order so that the newest {c} tickets come first", "sort again, now descending")
                    if q.get("order") == [p["order"]] else
                    (f"sort the tickets by {p['header'].lower()}", f"order the {c} tickets by {label}"))
        return kit.why(_reached(kit.click(ob, header), what), *purposes)


#: report number -> what it lists, as the intent says it (report 5 is report 4 with descriptions: left out)
REPORTS: dict[int, str] = {
    1: "all active tickets", 2: "the active tickets grouped by version", 3: "the active tickets grouped by milestone",
    4: "the accepted, active tickets grouped by owner", 6: "all tickets by milestone, closed ones included",
    7: "my own tickets", 8: "the active tickets with mine listed first",
}


class OpenReport(_TrackerTask):
    template = "open_report"
    kind = "navigation"
    intent_template = "Open the report of {what}."
    intent_templates = (
        intent_template,
        "Show me the ready-made report that lists {what}.",
        "Take me to the tracker's report of {what}.",
        "I need the saved report with {what}; open it.",
    )
    user = "carol"
    detours = ("neighbour",)  # open the report next to it first, then go back to the list

    def sample(self, rng: random.Random) -> dict[str, Any]:
        report = rng.choice(sorted(REPORTS))
        return {"report": report, "what": REPORTS[report]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(f"/report/{self.params['report']}")

    def _neighbour(self) -> int:
        order = sorted(REPORTS)
        i = order.index(self.params["report"])
        near = [order[j] for j in (i - 1, i + 1) if 0 <= j < len(order)]
        return random.Random(f"{self.get_task_id()}:{self.seed}:detour:report").choice(near)

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        n, what = p["report"], p["what"]
        if kit.path(ob) == f"/report/{n}":
            return kit.why(kit.finish(), f"show the report of {what}", f"stay on report {{{n}}}, the one asked for")
        if re.fullmatch(r"/report/\d+", kit.path(ob)):
            memory["back"] = True
            return _go_back(f"return to the list of reports, since this one is not the report of {what}",
                            "get back to the reports and pick the right one")
        if kit.path(ob) != "/report":
            view = kit.require(kit.link(ob, "View Tickets"), "View Tickets link")
            return kit.why(_reached(kit.click(ob, view), "View Tickets link"), "open the list of saved reports",
                           f"find the report of {what} among the reports")
        if self.detour(memory) == "neighbour" and not memory.get("back"):
            wrong = self._neighbour()
            what_link = f"report {wrong}"
            link = kit.require(kit.link(ob, href=rf"^/report/{wrong}$"), what_link)
            return kit.once(memory, "neighbour", kit.why(_reached(kit.click(ob, link), what_link),
                                                         f"check report {{{wrong}}} first, in case it lists {what}",
                                                         f"look at report {{{wrong}}} first"))
        what_link = f"report {n}"
        link = kit.require(kit.link(ob, href=rf"^/report/{n}$"), what_link)
        return kit.why(_reached(kit.click(ob, link), what_link), f"open the report of {what}",
                       f"pick report {{{n}}}, which lists {what}")


class AuthorTimeline(_TrackerTask):
    template = "author_timeline"
    kind = "navigation"
    intent_template = 'Show me what the user "{author}" did on the tracker in the last {days} days.'
    intent_templates = (
        intent_template,
        'Open the timeline of the changes made by "{author}" over the past {days} days.',
        "I want to review {author}'s activity of the last {days} days; show it on the timeline.",
        'List everything "{author}" changed in the last {days} days, on the timeline.',
    )
    user = "alice"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        author = rng.choice(DEVELOPERS + REPORTERS)
        return {"author": author, "author_name": _user_name(author), "days": rng.choice((7, 14, 45, 60, 90))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page("/timeline", authors=self.params["author"], daysback=str(self.params["days"]))

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        author, days = p["author"], str(p["days"])
        if kit.path(ob) != "/timeline":
            tl = kit.require(kit.link(ob, "Timeline", href=r"^/timeline$", prefer_visible=True), "Timeline link")
            return kit.why(_reached(kit.click(ob, tl), "Timeline link"), "open the timeline of recent changes",
                           f"go to the timeline to see {author}'s activity")
        q = kit.query(ob)
        if memory.get("updated") and q.get("authors") == [author] and q.get("daysback") == [days]:
            return kit.why(kit.finish(), f"show {author}'s changes of the last {days} days",
                           f"leave {author}'s activity on screen")
        back = kit.require(kit.field(ob, "daysback", "input"), "days back field")
        if (back.value or "") != days:
            return kit.why(_reached(kit.fill(ob, back, days), "days back field"), f"go back {days} days",
                           f"cover the last {days} days")
        who = kit.require(kit.field(ob, "authors", "input"), "author field")
        if (who.value or "") != author:
            return kit.why(_reached(kit.fill(ob, who, author), "author field"), f"keep only the changes made by {author}",
                           f"filter the timeline to {author}")
        update = kit.require(kit.by_name(ob, "update", tag="input"), "Update button")
        return kit.once(memory, "updated", kit.why(_reached(kit.click(ob, update), "Update button"),
                                                   "apply the filters to the timeline",
                                                   f"show {author}'s activity of the last {days} days"))


class WikiHistory(_TrackerTask):
    template = "wiki_history"
    kind = "navigation"
    intent_template = 'Open the history of the wiki page "{title}".'
    intent_templates = (
        intent_template,
        "Show me who changed the {title} page of the wiki, and when.",
        'Take me to the list of versions of the wiki page "{title}".',
        "I want to see the edit history of the {title} wiki page.",
    )
    user = "alice"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        page = rng.choice(sorted(QUICK_LINKS))
        return {"page": page, "title": QUICK_LINKS[page]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(f"/wiki/{self.params['page']}", action="history")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        page, title = p["page"], p["title"]
        if kit.path(ob) == f"/wiki/{page}":
            if kit.query(ob).get("action") == ["history"]:
                return kit.why(kit.finish(), f"show the history of the {title} page",
                               f"leave the list of versions of {title} on screen")
            hist = kit.require(kit.link(ob, "History", href=rf"^/wiki/{page}\?action=history$"), "History link")
            return kit.why(_reached(kit.click(ob, hist), "History link"), f"open the version history of {title}",
                           "see who changed the page and when")
        what = f"link to {page}"
        link = kit.require(kit.link(ob, title, href=rf"/wiki/{page}$"), what)
        return kit.why(_reached(kit.click(ob, link), what), f"open the {title} page",
                       f"go to the {title} page, whose history is wanted")


class TicketReporter(_TrackerTask):
    template = "ticket_reporter"
    intent_template = "Who reported ticket #{ticket}? Answer with their full name."
    intent_templates = (
        intent_template,
        "Who opened ticket #{ticket}?",
        "Tell me the name of the person who filed ticket #{ticket}.",
        "Ticket #{ticket}: who is its reporter?",
    )
    user = "dave"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(seed_data().tickets)
        return {"ticket": t.id, "reporter": t.final["reporter"], "reporter_name": _user_name(t.final["reporter"])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        got = kit.norm(answer).strip(" .\"'")
        ok = got in (kit.norm(p["reporter_name"]), p["reporter"])
        return ok, f"answer {answer!r}, expected {p['reporter_name']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["reporter_name"]]}

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        t = self.params["ticket"]
        step = _open_ticket(ob, memory, t)
        if step:
            return step
        cell = kit.require(kit.find(ob, lambda e: e.tag == "td" and e.attrs.get("headers") == "h_reporter"),
                           "reporter cell")
        return kit.why(kit.finish(cell.text.strip()), f"tell who reported ticket #{t}",
                       f"report the name next to \"Reported by\" on #{t}")


#: what a count of a milestone's tickets covers -> (the intent's words, the label on the milestone page)
COUNTS: dict[str, tuple[str, str]] = {
    "total": ("are planned for", "Total number of tickets"), "closed": ("have been closed in", "closed"),
    "active": ("are still open in", "active"),
}


class MilestoneTicketCount(_TrackerTask):
    template = "milestone_ticket_count"
    intent_template = "How many tickets {which_words} the milestone {milestone}? Answer with the number only."
    intent_templates = (
        intent_template,
        "Give me the number of tickets that {which_words} {milestone}.",
        "Count the tickets that {which_words} milestone {milestone}.",
        "What is the number of tickets that {which_words} the {milestone} milestone?",
    )
    user = "erin"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        which = rng.choice(sorted(COUNTS))
        # a completed milestone has no open ticket left: only its total is worth asking for
        milestone = rng.choice([m for m in sorted(MILESTONES) if which == "total" or not _completed(m)])
        tickets = [t for t in seed_data().tickets if t.final["milestone"] == milestone]
        count = (len(tickets) if which == "total" else
                 sum(1 for t in tickets if (t.final["status"] == "closed") == (which == "closed")))
        return {"milestone": milestone, "which": which, "which_words": COUNTS[which][0], "count": count}

    def check(self, answer: str | None) -> tuple[bool, str]:
        nums = re.findall(r"\d+", answer or "")
        return nums == [str(self.params["count"])], f"answer {answer!r}, expected {self.params['count']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["count"])]}

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        m, words = p["milestone"], p["which_words"]
        step = _to_milestone(ob, memory, m, f"open {m} to read its ticket counts",
                             f"see how many tickets {words} {m} on its page")
        if step:
            return step
        legend = kit.require(kit.find(ob, lambda e: e.tag == "p" and "legend" in e.attrs.get("class", "").split()),
                             "ticket counts")
        found = re.search(rf"{COUNTS[p['which']][1]}:\s*(\d+)", legend.all_text or legend.text)
        if found is None:
            raise kit.ExpertError(f"no {p['which']} count in {legend.text!r}")
        return kit.why(kit.finish(found.group(1)), f"tell how many tickets {words} {m}",
                       f"report the count shown on the {m} page")


_DATE_FORMATS = ("%Y-%m-%d", "%B %d, %Y", "%d %B %Y", "%b %d, %Y", "%d %b %Y", "%Y/%m/%d")


def _dates_in(text: str | None) -> set[str]:
    """The dates written in ``text`` (ISO or spelled-out month), as ``YYYY-MM-DD``."""
    found = set(re.findall(r"\d{4}-\d{2}-\d{2}", text or ""))
    for piece in re.findall(r"[A-Za-z]+ \d{1,2}, \d{4}|\d{1,2} [A-Za-z]+ \d{4}|\d{4}/\d{2}/\d{2}", text or ""):
        for fmt in _DATE_FORMATS:
            try:
                found.add(datetime.strptime(piece, fmt).strftime("%Y-%m-%d"))
                break
            except ValueError:
                continue
    return found


class MilestoneDue(_TrackerTask):
    template = "milestone_due"
    intent_template = "What is the due date of the milestone {milestone}? Answer as YYYY-MM-DD."
    intent_templates = (
        intent_template,
        "When is {milestone} due?",
        "By which date should the {milestone} milestone be done?",
        "Tell me the due date of milestone {milestone}.",
    )
    user = "grace"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        milestone = rng.choice([m for m, (due, done, _) in MILESTONES.items() if due is not None and done is None])
        return {"milestone": milestone, "due": MILESTONES[milestone][0].strftime("%Y-%m-%d")}  # type: ignore[union-attr]

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = _dates_in(answer)
        return got == {self.params["due"]}, f"answer {answer!r}, expected {self.params['due']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["due"]]}

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        m = self.params["milestone"]
        step = _to_milestone(ob, memory, m, f"open {m} to read its due date", f"look up when {m} is due on its page")
        if step:
            return step
        date = kit.require(kit.find(ob, lambda e: e.tag == "p" and "date" in e.attrs.get("class", "").split()),
                           "due date")
        found = re.search(r"\d{4}-\d{2}-\d{2}", date.all_text or date.text)
        if found is None:
            raise kit.ExpertError(f"no date in {date.text!r}")
        return kit.why(kit.finish(found.group(0)), f"tell when {m} is due", f"report the due date of {m}")


class ChangePriority(_TrackerTask):
    template = "change_priority"
    intent_template = "{direction} the priority of ticket #{ticket} to {priority}."
    intent_templates = (
        intent_template,
        "Set the priority of ticket #{ticket} to {priority}.",
        'Ticket #{ticket} ("{summary}") should be {priority}; change its priority.',
        "Make #{ticket} a {priority} ticket.",
    )
    user = "dave"
    detours = ("by_title",)  # find the ticket by its title instead of its number

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        priority = rng.choice([x for x in PRIORITIES if x != t.final["priority"]])
        direction = "Raise" if PRIORITIES.index(priority) < PRIORITIES.index(t.final["priority"]) else "Lower"
        return {"ticket": t.id, "summary": t.final["summary"], "priority": priority, "direction": direction,
                "status": t.final["status"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        t = self._ticket_row(self.params["ticket"])
        if t["priority"] != self.params["priority"]:
            return False, f"priority is {t['priority']!r}, wanted {self.params['priority']!r}"
        return t["status"] == self.params["status"], f"status {t['status']!r}"

    def program_html(self) -> list[dict[str, Any]]:
        p = self.params
        return self._ticket_shows(p["ticket"], f"|priority: {p['priority']}|", f"|status: {p['status']}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, t = self.params, self.params["ticket"]
        if memory.get("submitted"):
            return kit.why(kit.finish(), f"make #{t} a {p['priority']} ticket", f"change the priority of #{t}")
        step = ((_find_by_title(ob, memory, t, p["summary"]) if self.detour(memory) == "by_title" else None)
                or _open_ticket(ob, memory, t)
                or _open_modify(ob, memory, f"open the form for changing ticket #{t}", "unfold the ticket's editing form"))
        if step:
            return step
        if not memory.get("priority"):
            el = kit.require(kit.by_id(ob, "field-priority"), "priority list")
            return kit.once(memory, "priority", kit.why(_reached(kit.select(ob, el, p["priority"]), "priority list"),
                                                        f"set the priority to {p['priority']}",
                                                        f"{p['direction'].lower()} #{t} to {p['priority']}"))
        return _comment_and_submit(ob, memory, None, submitted=(f"save the new priority of #{t}",
                                                                "store the change on the ticket"))


class AddKeyword(_TrackerTask):
    template = "add_keyword"
    intent_template = 'Add the keyword "{keyword}" to ticket #{ticket}.'
    intent_templates = (
        intent_template,
        'Tag ticket #{ticket} with "{keyword}".',
        'Ticket #{ticket} ("{summary}") should carry the keyword "{keyword}" too; add it, keeping the others.',
        'Put "{keyword}" among the keywords of #{ticket}.',
    )
    user = "carol"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        old = t.final["keywords"].split()
        return {"ticket": t.id, "summary": t.final["summary"], "old": old,
                "keyword": rng.choice([k for k in KEYWORDS if k not in old])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        rows = self.site.query("SELECT keywords FROM ticket WHERE id=?", (p["ticket"],))
        words = set((rows[0][0] or "").replace(",", " ").split()) if rows else set()
        want = set(p["old"]) | {p["keyword"]}
        return words == want, f"keywords {sorted(words)}, wanted {sorted(want)}"

    def program_html(self) -> list[dict[str, Any]]:
        # check() compares sets of keywords: the page's keywords, sorted
        p = self.params
        keywords = js_entries("#ticket td[headers=h_keywords]",
                               "'keywords: ' + x.innerText.trim().split(/[\\s,]+/).sort().join(' ')")
        want = " ".join(sorted({*p["old"], p["keyword"]}))
        return self.page_shows(f"/ticket/{p['ticket']}", keywords, f"|keywords: {want}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        t, kw = self.params["ticket"], self.params["keyword"]
        if memory.get("submitted"):
            return kit.why(kit.finish(), f'tag #{t} with "{kw}"', f"add the keyword to #{t}")
        step = _open_ticket(ob, memory, t) or _open_modify(ob, memory, f"open the form for changing ticket #{t}",
                                                           "unfold the ticket's editing form")
        if step:
            return step
        box = kit.require(kit.by_id(ob, "field-keywords"), "keywords field")
        current = (box.value or "").split()
        if kw not in current:
            return kit.why(_reached(kit.fill(ob, box, " ".join(current + [kw])), "keywords field"),
                           f'add "{kw}" after the keywords #{t} already has', f'tag the ticket with "{kw}"')
        return _comment_and_submit(ob, memory, None, submitted=(f"save the new keyword of #{t}",
                                                                "store the change on the ticket"))


class ReopenTicket(_TrackerTask):
    template = "reopen_ticket"
    intent_template = 'Reopen ticket #{ticket} with the comment "{comment}"'
    intent_templates = (
        intent_template,
        'Ticket #{ticket} ("{summary}") is not solved after all: reopen it, saying "{comment}"',
        'Please reopen the closed ticket #{ticket} and note "{comment}".',
        'Reopen #{ticket}; explain why with "{comment}"',
    )
    user = "erin"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice([t for t in seed_data().tickets if t.final["status"] == "closed"])
        comment = rng.choice(("Still happens on build {n}.", "Seen again by a customer (report {n}).",
                              "The fix did not reach release {n}.")).format(n=rng.randint(1000, 9999))
        return {"ticket": t.id, "summary": t.final["summary"], "comment": comment}

    def check(self, answer: str | None) -> tuple[bool, str]:
        t = self._ticket_row(self.params["ticket"])
        if t["status"] != "reopened":
            return False, f"status is {t['status']!r}, wanted 'reopened'"
        if self.params["comment"] not in [c.strip() for c in self._new_comments(self.params["ticket"], self.user)]:
            return False, "reopened, but without the comment"
        return True, "reopened with the comment"

    def program_html(self) -> list[dict[str, Any]]:
        return self._ticket_shows(self.params["ticket"], "|status: reopened|", f"|{self.params['comment']}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, t = self.params, self.params["ticket"]
        if memory.get("submitted"):
            return kit.why(kit.finish(), f"reopen ticket #{t}", f"put #{t} back among the open tickets")
        step = _open_ticket(ob, memory, t) or _open_modify(ob, memory, f"open the form for changing ticket #{t}",
                                                           "unfold the ticket's editing form")
        if step:
            return step
        radio = kit.require(kit.by_id(ob, "action_reopen"), "reopen radio")
        if not radio.checked:
            return _toggle(ob, memory, radio, "radio", "reopen radio", f"choose to reopen #{t}",
                           "put the ticket back into the open state")
        return _comment_and_submit(ob, memory, p["comment"],
                                   written=("say why the ticket is reopened", "write the reason in a comment"),
                                   submitted=(f"reopen ticket #{t}", "store the new status and the comment"))


class EditMilestoneDescription(_TrackerTask):
    template = "edit_milestone_description"
    intent_template = 'Change the description of the milestone {milestone} to "{description}".'
    intent_templates = (
        intent_template,
        'The {milestone} milestone should be described as "{description}"; update it.',
        'Replace the description of milestone {milestone} with "{description}"',
        'Rewrite the {milestone} milestone\'s description to read "{description}"',
    )
    user = "dave"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        milestone = rng.choice(OPEN_MILESTONES)
        who = _user_name(rng.choice(DEVELOPERS))
        description = rng.choice((
            "Scope frozen on 2025-06-{d:02d}: bug fixes only from now on.",
            "Release manager: {who}. Planning meeting on 2025-06-{d:02d}.",
            "Focus: stability and the open blockers; {who} coordinates.",
            "Moved the UI theme here; review with {who} on 2025-07-{d:02d}.",
        )).format(d=rng.randint(3, 28), who=who)
        return {"milestone": milestone, "description": description}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        rows = self.site.query("SELECT description FROM milestone WHERE name=?", (p["milestone"],))
        got = rows[0][0] if rows else None
        return kit.norm(got) == kit.norm(p["description"]), f"description {got!r}"

    def program_html(self) -> list[dict[str, Any]]:
        p = self.params
        return self.page_shows(f"/milestone/{urllib.parse.quote(p['milestone'])}",
                                js_entries("#content div.description", "'description: ' + x.innerText.trim()"),
                                f"|description: {p['description']}|")

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        m = p["milestone"]
        if memory.get("saved") and kit.path(ob) == f"/milestone/{m}":
            return kit.why(kit.finish(), f"give {m} its new description", f"update the description of {m}")
        step = _to_milestone(ob, memory, m, f"open {m}, whose description changes", f"go to the {m} milestone")
        if step:
            return step
        text = kit.by_id(ob, "description")
        if text is None:
            edit = kit.require(kit.button(ob, "Edit milestone"), "Edit milestone button")
            return kit.why(_reached(kit.click(ob, edit), "Edit milestone button"), f"open {m} for editing",
                           "start editing the milestone")
        if (text.value or "").strip() != p["description"]:
            return kit.why(_reached(kit.fill(ob, text, p["description"]), "description field"),
                           "replace the old description with the new one", f"write the new description of {m}")
        save = kit.require(kit.by_name(ob, "save", tag="input"), "Submit changes button")
        return kit.once(memory, "saved", kit.why(_reached(kit.click(ob, save), "Submit changes button"),
                                                 f"save the new description of {m}", "store the change to the milestone"))


TASKS: tuple[type[SiteTask], ...] = (
    CreateTicket, CommentTicket, ReassignTicket, CloseTicket, ChangeMilestone, CountQuery, TicketMilestone,
    SearchNewest, AddMilestone, AddComponent, EditWiki, TriageTickets,
    # navigation (the page the agent ends on), information (the answer), state
    OpenTicketByTitle, OpenMilestone, OwnerOpenTickets, ComponentTicketsSorted, OpenReport, AuthorTimeline,
    WikiHistory, TicketReporter, MilestoneTicketCount, MilestoneDue, ChangePriority, AddKeyword, ReopenTicket,
    EditMilestoneDescription,
)
