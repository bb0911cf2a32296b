"""Live tasks on the tracker site (Trac): tickets, queries, roadmap, wiki and admin.

Eleven templates, GitLab-like as in WebArena: create, comment, reassign, close and re-plan
tickets; count with the custom query; look a ticket up by its title; find the newest ticket
matching a search; add a milestone and a component in the admin panel; edit a wiki page.
Parameters come from the seed definitions (:mod:`mag_dataset.sites.tracker.data`); each
check reads Trac's database after the episode (WebArena's program-based evaluators), or the
``finish`` answer for the information-seeking ones. Every expert reads only the observation
(elements found by id, name, tag and text; the URL) and ``memory``.
"""

from __future__ import annotations

import random
import re
import urllib.parse
from datetime import datetime, timezone
from typing import Any, Callable

from mag_dataset.actions import ActionType
from mag_dataset.live.experts import Decision
from mag_dataset.live.observe import Element, Observation
from mag_dataset.sites.task import SiteTask
from mag_dataset.sites.tracker import TrackerSite
from mag_dataset.sites.tracker.data import (
    COMPONENTS, DEVELOPERS, OPEN_MILESTONES, PRIORITIES, RESOLUTIONS, TYPES, USERS, seed_data,
)

#: The viewport height the experts scroll against (CSS px).
_VIEW_H = 720
_MARGIN = 8


# ----------------------------------------------------------------------------- observation helpers
def _norm(s: str | None) -> str:
    return " ".join((s or "").split()).lower()


def _find(ob: Observation, pred: Callable[[Element], bool]) -> Element | None:
    for el in ob.elements.values():
        try:
            if pred(el):
                return el
        except (KeyError, AttributeError):
            continue
    return None


def _by_id(ob: Observation, html_id: str) -> Element | None:
    return _find(ob, lambda e: e.attrs.get("id") == html_id)


def _by_name(ob: Observation, name: str, tag: str | None = None, value: str | None = None) -> Element | None:
    return _find(ob, lambda e: e.attrs.get("name") == name and (tag is None or e.tag == tag)
                 and (value is None or e.attrs.get("value") == value))


def _link(ob: Observation, text: str, href_re: str | None = None) -> Element | None:
    want = _norm(text)
    return _find(ob, lambda e: e.tag == "a" and _norm(e.text) == want
                 and (href_re is None or re.search(href_re, e.attrs.get("href", "")) is not None))


def _path(ob: Observation) -> str:
    return urllib.parse.urlsplit(ob.url).path


def _query(ob: Observation) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(ob.url).query)


def _reach(ob: Observation, el: Element) -> Decision | None:
    """A scroll toward ``el`` when it is not wholly in the viewport, else None (act on it)."""
    if el.bbox is not None:
        top, bottom = el.bbox[1], el.bbox[3]
        if bottom > _VIEW_H - _MARGIN and top > _MARGIN:
            return Decision(ActionType.SCROLL, direction="down")
        if top < 0:
            return Decision(ActionType.SCROLL, direction="up")
    if ob.candidate(el.bid) is None:
        raise ValueError(f"element {el.bid} ({el.tag} {el.label!r}) is not visible")
    return None


def _click(ob: Observation, el: Element | None, what: str) -> Decision:
    if el is None:
        raise ValueError(f"{what} not found on {ob.url}")
    return _reach(ob, el) or Decision(ActionType.CLICK, el.bid)


def _type(ob: Observation, el: Element | None, text: str, what: str) -> Decision:
    if el is None:
        raise ValueError(f"{what} not found on {ob.url}")
    return _reach(ob, el) or Decision(ActionType.TYPE, el.bid, text=text)


def _select(ob: Observation, el: Element | None, value: str, what: str) -> Decision:
    if el is None:
        raise ValueError(f"{what} not found on {ob.url}")
    return _reach(ob, el) or Decision(ActionType.SELECT, el.bid, value=value)


def _once(memory: dict[str, Any], key: str, decision: Decision) -> Decision:
    """Record that a one-off step (a select, a checkbox) was issued, unless it is a scroll toward it."""
    if decision.type is not ActionType.SCROLL:
        memory[key] = True
    return decision


def _finish(answer: str = "done") -> Decision:
    return Decision(ActionType.FINISH, answer=answer)


def _search(ob: Observation, memory: dict[str, Any], text: str) -> Decision:
    """Type ``text`` into the header's search box, then press Enter (``memory["searched"]``)."""
    box = _by_id(ob, "proj-search")
    if box is None:
        raise ValueError("search box not found")
    if (box.value or "") != text:
        return _type(ob, box, text, "search box")
    return _once(memory, "searched", Decision(ActionType.PRESS, key="Enter"))


def _open_ticket(ob: Observation, memory: dict[str, Any], tid: int) -> Decision | None:
    """Steps to get to ticket #tid through the search box's quick jump (``#12``), or None when there."""
    return None if _path(ob) == f"/ticket/{tid}" else _search(ob, memory, f"#{tid}")


def _open_modify(ob: Observation, memory: dict[str, Any]) -> Decision | None:
    """Click the ticket's "Modify" link (unfolds the ticket editor and jumps to it), once."""
    if memory.get("modify"):
        return None
    return _once(memory, "modify", _click(ob, _find(ob, lambda e: e.tag == "a" and e.attrs.get("href") == "#modify"),
                                          "Modify link"))


def _comment_and_submit(ob: Observation, memory: dict[str, Any], comment: str | None) -> Decision:
    """Fill the ticket's comment box (when there is a comment to give), then Submit changes."""
    box = _by_id(ob, "comment")
    if comment is not None and box is not None and (box.value or "").strip() != comment:
        return _type(ob, box, comment, "comment box")
    return _once(memory, "submitted", _click(ob, _by_name(ob, "submit", "input"), "Submit changes button"))


def _user_name(user: str) -> str:
    return USERS[user][1]


class _TrackerTask(SiteTask):
    site_class = TrackerSite

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
    user = "erin"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        thing = rng.choice(("export button", "login banner", "CSV importer", "status page", "email digest",
                            "avatar upload", "keyboard shortcuts", "audit report"))
        problem = rng.choice(("is slow on large projects", "breaks on Safari", "shows stale data",
                              "needs a confirmation dialog", "loses its settings after an upgrade"))
        return {"summary": f"The {thing} {problem}", "type": rng.choice(TYPES),
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

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if memory.get("created"):
            return _finish() if re.fullmatch(r"/ticket/\d+", _path(ob)) else None
        if _path(ob) != "/newticket":
            return _click(ob, _link(ob, "New Ticket"), "New Ticket link")
        summary = _by_id(ob, "field-summary")
        if summary is not None and (summary.value or "") != p["summary"]:
            return _type(ob, summary, p["summary"], "summary field")
        for field in ("type", "priority", "milestone", "component"):
            if not memory.get(field):
                return _once(memory, field, _select(ob, _by_id(ob, f"field-{field}"), p[field], f"{field} field"))
        return _once(memory, "created", _click(ob, _by_name(ob, "submit", "input"), "Create ticket button"))


class CommentTicket(_TrackerTask):
    template = "comment_ticket"
    intent_template = 'Add the comment "{comment}" to ticket #{ticket}.'
    user = "bob"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"ticket": rng.choice(seed_data().tickets).id, "comment": _fresh_comment(rng)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        new = self._new_comments(self.params["ticket"], self.user)
        if self.params["comment"] in [c.strip() for c in new]:
            return True, "comment added"
        return False, f"no new comment by {self.user} with that text on #{self.params['ticket']} (new: {new!r})"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        if memory.get("submitted"):
            return _finish()
        step = _open_ticket(ob, memory, self.params["ticket"])
        if step:
            return step
        if not memory.get("end"):  # the comment box is at the very bottom of the ticket page
            return _once(memory, "end", Decision(ActionType.PRESS, key="End"))
        return _comment_and_submit(ob, memory, self.params["comment"])


class ReassignTicket(_TrackerTask):
    template = "reassign_ticket"
    intent_template = 'Reassign ticket #{ticket} ("{summary}") to {owner_name}.'
    user = "alice"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        owner = rng.choice([d for d in DEVELOPERS if d != t.final["owner"]])
        return {"ticket": t.id, "summary": t.final["summary"], "owner": owner, "owner_name": _user_name(owner)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        t = self._ticket_row(self.params["ticket"])
        if t["owner"] != self.params["owner"]:
            return False, f"owner is {t['owner']!r}, wanted {self.params['owner']!r}"
        if t["status"] != "assigned":
            return False, f"status is {t['status']!r}, wanted 'assigned'"
        return True, "reassigned"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        if memory.get("submitted"):
            return _finish()
        step = _open_ticket(ob, memory, self.params["ticket"]) or _open_modify(ob, memory)
        if step:
            return step
        if not memory.get("radio"):
            return _once(memory, "radio", _click(ob, _by_id(ob, "action_reassign"), "reassign radio"))
        if not memory.get("owner"):
            return _once(memory, "owner", _select(ob, _by_id(ob, "action_reassign_reassign_owner"),
                                                  self.params["owner"], "new owner list"))
        return _comment_and_submit(ob, memory, None)


class CloseTicket(_TrackerTask):
    template = "close_ticket"
    intent_template = 'Close ticket #{ticket} with the resolution "{resolution}" and the comment "{comment}".'
    user = "carol"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        return {"ticket": t.id, "resolution": rng.choice(RESOLUTIONS), "comment": _fresh_comment(rng)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        t = self._ticket_row(self.params["ticket"])
        if (t["status"], t["resolution"]) != ("closed", self.params["resolution"]):
            return False, f"status/resolution is {t['status']}/{t['resolution']}"
        if self.params["comment"] not in [c.strip() for c in self._new_comments(self.params["ticket"], self.user)]:
            return False, "closed, but without the comment"
        return True, "closed with the resolution and comment"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        if memory.get("submitted"):
            return _finish()
        step = _open_ticket(ob, memory, self.params["ticket"]) or _open_modify(ob, memory)
        if step:
            return step
        if not memory.get("radio"):
            return _once(memory, "radio", _click(ob, _by_id(ob, "action_resolve"), "resolve radio"))
        if not memory.get("resolution"):
            return _once(memory, "resolution", _select(ob, _by_id(ob, "action_resolve_resolve_resolution"),
                                                       self.params["resolution"], "resolution list"))
        return _comment_and_submit(ob, memory, self.params["comment"])


class ChangeMilestone(_TrackerTask):
    template = "change_milestone"
    intent_template = 'Move ticket #{ticket} ("{summary}") to the milestone {milestone}.'
    user = "dave"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice(_open_tickets())
        milestone = rng.choice([m for m in OPEN_MILESTONES if m != t.final["milestone"]])
        return {"ticket": t.id, "summary": t.final["summary"], "milestone": milestone}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = self._ticket_row(self.params["ticket"])["milestone"]
        return (got == self.params["milestone"]), f"milestone is {got!r}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        if memory.get("submitted"):
            return _finish()
        step = _open_ticket(ob, memory, self.params["ticket"]) or _open_modify(ob, memory)
        if step:
            return step
        if not memory.get("milestone"):
            return _once(memory, "milestone", _select(ob, _by_id(ob, "field-milestone"), self.params["milestone"],
                                                      "milestone list"))
        return _comment_and_submit(ob, memory, None)


class CountQuery(_TrackerTask):
    template = "count_query"
    intent_template = ("With a custom ticket query, count the tickets owned by {owner_name} whose status is "
                       "{status}. Answer with the number only.")
    user = "alice"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        owner = rng.choice(DEVELOPERS)
        status = rng.choice(("assigned", "closed", "new", "accepted"))
        count = sum(1 for t in seed_data().tickets if t.final["owner"] == owner and t.final["status"] == status)
        return {"owner": owner, "owner_name": _user_name(owner), "status": status, "count": count}

    def check(self, answer: str | None) -> tuple[bool, str]:
        nums = re.findall(r"\d+", answer or "")
        ok = nums == [str(self.params["count"])]
        return ok, f"answer {answer!r}, expected {self.params['count']}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if _path(ob) != "/query":
            if _path(ob) == "/report":
                return _click(ob, _link(ob, "New Custom Query"), "New Custom Query link")
            return _click(ob, _link(ob, "View Tickets"), "View Tickets link")
        q = _query(ob)
        if memory.get("updated") and q.get("owner") == [p["owner"]] and q.get("status") == [p["status"]]:
            numrows = _find(ob, lambda e: "numrows" in e.attrs.get("class", ""))
            text = numrows.text if numrows is not None else ""
            m = re.search(r"(\d+|No) match", text)
            if m is None:
                raise ValueError(f"no match count on the query page: {text!r}")
            return _finish("0" if m.group(1) == "No" else m.group(1))
        owner = _find(ob, lambda e: e.tag == "select" and re.fullmatch(r"\d+_owner", e.attrs.get("name", "")) is not None)
        if owner is None:
            raise ValueError("no owner filter on the query page")
        if not memory.get("owner"):
            return _once(memory, "owner", _select(ob, owner, p["owner"], "owner filter"))
        for box in [e for e in ob.elements.values() if e.tag == "input" and e.attrs.get("type") == "checkbox"
                    and re.fullmatch(r"\d+_status", e.attrs.get("name", ""))]:
            want = box.attrs.get("value") == p["status"]
            if bool(box.checked) != want:
                return _click(ob, box, "status checkbox")
        return _once(memory, "updated", _click(ob, _by_name(ob, "update", "input"), "Update button"))


class TicketMilestone(_TrackerTask):
    template = "ticket_milestone"
    intent_template = 'Which milestone is the ticket titled "{summary}" planned for? Answer with the milestone name.'
    user = "grace"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice([t for t in seed_data().tickets if t.final["milestone"]])
        return {"summary": t.final["summary"], "ticket": t.id, "milestone": t.final["milestone"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _norm(answer).strip(" .\"'") == _norm(self.params["milestone"])
        return ok, f"answer {answer!r}, expected {self.params['milestone']!r}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if re.fullmatch(r"/ticket/\d+", _path(ob)):
            cell = _find(ob, lambda e: e.tag == "td" and e.attrs.get("headers") == "h_milestone")
            if cell is None:
                raise ValueError("no milestone cell on the ticket page")
            return _finish(cell.text.strip())
        if _path(ob) == "/search" and memory.get("searched"):
            hit = _find(ob, lambda e: e.tag == "a" and re.fullmatch(r"/ticket/\d+", e.attrs.get("href", "")) is not None
                        and _norm(p["summary"]) in _norm(e.text))
            return _click(ob, hit, "search hit")
        return _search(ob, memory, p["summary"])


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


#: Words for the search template: each matches a few tickets, none of the wiki pages' titles.
SEARCH_WORDS = ("Unicode", "Turkish", "CSV", "deprecated", "race", "memory", "autocomplete", "webhook",
                "Docker", "tokenizer", "bisected", "workaround", "widget", "changelog")


class SearchNewest(_TrackerTask):
    template = "search_newest"
    intent_template = ('Search the tickets for "{word}", open the most recently created ticket that matches, '
                       "and tell me its number (like #12).")
    user = "frank"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        words = [w for w in SEARCH_WORDS if len(_search_matches(w)) >= 2]
        word = rng.choice(words)
        return {"word": word, "ticket": max(_search_matches(word))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        nums = re.findall(r"\d+", answer or "")
        return nums == [str(self.params["ticket"])], f"answer {answer!r}, expected #{self.params['ticket']}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        m = re.fullmatch(r"/ticket/(\d+)", _path(ob))
        if m and memory.get("opened"):
            return _finish(f"#{m.group(1)}")
        if _path(ob) == "/search" and memory.get("searched"):
            # results come newest first; the first ticket among them is the newest ticket
            hit = next((e for e in ob.elements.values() if e.tag == "a" and e.parent is not None
                        and re.fullmatch(r"/ticket/\d+", e.attrs.get("href", ""))
                        and ob.elements.get(e.parent) is not None and ob.elements[e.parent].tag == "dt"), None)
            return _once(memory, "opened", _click(ob, hit, "first ticket hit"))
        return _search(ob, memory, p["word"])


class AddMilestone(_TrackerTask):
    template = "add_milestone"
    intent_template = 'In the admin panel, add a milestone named "{name}" due on {due}.'
    user = "admin"

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

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if memory.get("added"):
            return _finish()
        if not _path(ob).startswith("/admin"):
            return _click(ob, _link(ob, "Admin"), "Admin link")
        if _path(ob) != "/admin/ticket/milestones":
            return _click(ob, _link(ob, "Milestones", r"/admin/ticket/milestones$"), "Milestones panel link")
        name = _by_id(ob, "name")
        if name is not None and (name.value or "") != p["name"]:
            return _type(ob, name, p["name"], "milestone name field")
        due = _by_id(ob, "duedate")
        if due is not None and (due.value or "") != p["due"]:
            return _type(ob, due, p["due"], "due date field")
        if not memory.get("closed_picker"):
            # the date picker pops up over the form: Escape closes it, as a user would
            return _once(memory, "closed_picker", Decision(ActionType.PRESS, key="Escape"))
        return _once(memory, "added", _click(ob, _by_name(ob, "add", "input"), "Add button"))


class AddComponent(_TrackerTask):
    template = "add_component"
    intent_template = 'In the admin panel, add a component named "{name}" owned by {owner_name}.'
    user = "admin"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        owner = rng.choice(DEVELOPERS)
        name = rng.choice(("billing", "notifications", "reporting", "importer", "i18n", "plugins", "webhooks",
                           "analytics", "scheduler"))
        return {"name": name, "owner": owner, "owner_name": _user_name(owner)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query("SELECT owner FROM component WHERE name=?", (self.params["name"],))
        if not rows:
            return False, "no such component"
        return rows[0][0] == self.params["owner"], f"owner {rows[0][0]!r}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if memory.get("added"):
            return _finish()
        if not _path(ob).startswith("/admin"):
            return _click(ob, _link(ob, "Admin"), "Admin link")
        if _path(ob) != "/admin/ticket/components":
            return _click(ob, _link(ob, "Components", r"/admin/ticket/components$"), "Components panel link")
        name = _find(ob, lambda e: e.tag == "input" and e.attrs.get("name") == "name"
                     and e.attrs.get("type", "text") == "text")
        if name is not None and (name.value or "") != p["name"]:
            return _type(ob, name, p["name"], "component name field")
        if not memory.get("owner"):
            return _once(memory, "owner", _select(ob, _by_id(ob, "owner"), p["owner"], "owner list"))
        return _once(memory, "added", _click(ob, _by_name(ob, "add", "input"), "Add button"))


#: wiki page -> the link text on WikiStart's quick links
WIKI_PAGES = {"ReleaseProcess": "Release process", "CodingStyle": "Coding style", "Onboarding": "Onboarding",
              "Architecture": "Architecture", "MeetingNotes": "Meeting notes"}


class EditWiki(_TrackerTask):
    template = "edit_wiki"
    intent_template = 'Add the line "{line}" at the end of the wiki page "{title}".'
    user = "carol"

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
        if _norm(text).replace(_norm(p["line"]), "").strip() != _norm(seeded[-1].text):
            return False, "the rest of the page changed"
        return author == self.user, f"saved by {author}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if memory.get("saved"):
            return _finish()
        path = _path(ob)
        if path != f"/wiki/{p['page']}":
            return _click(ob, _link(ob, p["title"], rf"/wiki/{p['page']}$"), f"link to {p['page']}")
        text = _by_id(ob, "text")
        if text is None:  # the page view: its edit button sits under the text
            return _click(ob, _find(ob, lambda e: e.tag == "input" and e.attrs.get("value") == "Edit this page"),
                          "Edit this page button")
        current = text.value or ""
        if p["line"] not in current:
            return _type(ob, text, current.rstrip("\n") + "\n" + p["line"] + "\n", "page text")
        return _once(memory, "saved", _click(ob, _by_id(ob, "save"), "Submit changes button"))


TASKS: tuple[type[SiteTask], ...] = (
    CreateTicket, CommentTicket, ReassignTicket, CloseTicket, ChangeMilestone, CountQuery, TicketMilestone,
    SearchNewest, AddMilestone, AddComponent, EditWiki,
)
