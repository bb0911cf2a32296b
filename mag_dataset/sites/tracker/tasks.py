"""Live tasks on the tracker site (Trac): tickets, queries, roadmap, wiki and admin.

Eleven templates, GitLab-like as in WebArena: create, comment, reassign, close and re-plan
tickets; count with the custom query; look a ticket up by its title; find the newest ticket
matching a search; add a milestone and a component in the admin panel; edit a wiki page.
Parameters come from the seed definitions (:mod:`mag_dataset.sites.tracker.data`); each
check reads Trac's database after the episode (WebArena's program-based evaluators), or the
``finish`` answer for the information-seeking ones. Every expert reads only the observation
(elements found by id, name, tag and text; the URL) and ``memory``, through the one expert kit
(:mod:`mag_dataset.live.expert_kit`: finding, the scroll policy, acting).
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timezone
from typing import Any

from mag_dataset.live import expert_kit as kit
from mag_dataset.live.expert_kit import Decision
from mag_dataset.live.observe import Observation
from mag_dataset.sites.task import SiteTask
from mag_dataset.sites.tracker import TrackerSite
from mag_dataset.sites.tracker.data import (
    COMPONENTS, DEVELOPERS, OPEN_MILESTONES, PRIORITIES, RESOLUTIONS, TYPES, USERS, seed_data,
)


# ----------------------------------------------------------------------------- tracker steps (on the kit)
def _reached(d: Decision | None, what: str) -> Decision:
    """``d``, a kit step towards ``what``; :class:`~mag_dataset.live.expert_kit.NotOnPage` when it is
    None (``what`` has no box, or is hidden where it stands): the tracker's experts have no other way on."""
    if d is None:
        raise kit.NotOnPage(f"{what} cannot be brought into view")
    return d


def _search(ob: Observation, memory: dict[str, Any], text: str) -> Decision:
    """Type ``text`` into the header's search box, then press Enter (``memory["searched"]``)."""
    box = kit.require(kit.by_id(ob, "proj-search"), "search box")
    if (box.value or "") != text:
        return _reached(kit.fill(ob, box, text), "search box")
    return kit.once(memory, "searched", kit.press("Enter"))


def _open_ticket(ob: Observation, memory: dict[str, Any], tid: int) -> Decision | None:
    """Steps to get to ticket #tid through the search box's quick jump (``#12``), or None when there."""
    return None if kit.path(ob) == f"/ticket/{tid}" else _search(ob, memory, f"#{tid}")


def _open_modify(ob: Observation, memory: dict[str, Any]) -> Decision | None:
    """Click the ticket's "Modify" link (unfolds the ticket editor and jumps to it), once."""
    if memory.get("modify"):
        return None
    link = kit.require(kit.link(ob, href=r"^#modify$"), "Modify link")
    return kit.once(memory, "modify", _reached(kit.click(ob, link), "Modify link"))


def _comment_and_submit(ob: Observation, memory: dict[str, Any], comment: str | None) -> Decision:
    """Fill the ticket's comment box (when there is a comment to give), then Submit changes."""
    box = kit.by_id(ob, "comment")
    if comment is not None and box is not None and (box.value or "").strip() != comment:
        return _reached(kit.fill(ob, box, comment), "comment box")
    submit = kit.require(kit.by_name(ob, "submit", tag="input"), "Submit changes button")
    return kit.once(memory, "submitted", _reached(kit.click(ob, submit), "Submit changes button"))


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
            return kit.finish() if re.fullmatch(r"/ticket/\d+", kit.path(ob)) else None
        if kit.path(ob) != "/newticket":
            new = kit.require(kit.link(ob, "New Ticket"), "New Ticket link")
            return _reached(kit.click(ob, new), "New Ticket link")
        summary = kit.by_id(ob, "field-summary")
        if summary is not None and (summary.value or "") != p["summary"]:
            return _reached(kit.fill(ob, summary, p["summary"]), "summary field")
        for name in ("type", "priority", "milestone", "component"):
            if not memory.get(name):
                what = f"{name} field"
                el = kit.require(kit.by_id(ob, f"field-{name}"), what)
                return kit.once(memory, name, _reached(kit.select(ob, el, p[name]), what))
        submit = kit.require(kit.by_name(ob, "submit", tag="input"), "Create ticket button")
        return kit.once(memory, "created", _reached(kit.click(ob, submit), "Create ticket button"))


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
            return kit.finish()
        step = _open_ticket(ob, memory, self.params["ticket"])
        if step:
            return step
        if not memory.get("end"):  # the comment box is at the very bottom of the ticket page
            memory["end"] = True  # set here: kit.once does not remember a page key (a scroll)
            return kit.press("End")
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
            return kit.finish()
        step = _open_ticket(ob, memory, self.params["ticket"]) or _open_modify(ob, memory)
        if step:
            return step
        if not memory.get("radio"):
            radio = kit.require(kit.by_id(ob, "action_reassign"), "reassign radio")
            return kit.once(memory, "radio", _reached(kit.click(ob, radio), "reassign radio"))
        if not memory.get("owner"):
            owners = kit.require(kit.by_id(ob, "action_reassign_reassign_owner"), "new owner list")
            return kit.once(memory, "owner", _reached(kit.select(ob, owners, self.params["owner"]), "new owner list"))
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
            return kit.finish()
        step = _open_ticket(ob, memory, self.params["ticket"]) or _open_modify(ob, memory)
        if step:
            return step
        if not memory.get("radio"):
            radio = kit.require(kit.by_id(ob, "action_resolve"), "resolve radio")
            return kit.once(memory, "radio", _reached(kit.click(ob, radio), "resolve radio"))
        if not memory.get("resolution"):
            res = kit.require(kit.by_id(ob, "action_resolve_resolve_resolution"), "resolution list")
            return kit.once(memory, "resolution",
                            _reached(kit.select(ob, res, self.params["resolution"]), "resolution list"))
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
            return kit.finish()
        step = _open_ticket(ob, memory, self.params["ticket"]) or _open_modify(ob, memory)
        if step:
            return step
        if not memory.get("milestone"):
            ms = kit.require(kit.by_id(ob, "field-milestone"), "milestone list")
            return kit.once(memory, "milestone",
                            _reached(kit.select(ob, ms, self.params["milestone"]), "milestone list"))
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
        if kit.path(ob) != "/query":
            if kit.path(ob) == "/report":
                custom = kit.require(kit.link(ob, "New Custom Query"), "New Custom Query link")
                return _reached(kit.click(ob, custom), "New Custom Query link")
            view = kit.require(kit.link(ob, "View Tickets"), "View Tickets link")
            return _reached(kit.click(ob, view), "View Tickets link")
        q = kit.query(ob)
        if memory.get("updated") and q.get("owner") == [p["owner"]] and q.get("status") == [p["status"]]:
            numrows = kit.find(ob, lambda e: "numrows" in e.attrs.get("class", ""))
            text = numrows.text if numrows is not None else ""
            m = re.search(r"(\d+|No) match", text)
            if m is None:
                raise kit.ExpertError(f"no match count on the query page: {text!r}")
            return kit.finish("0" if m.group(1) == "No" else m.group(1))
        owner = kit.require(kit.find(ob, lambda e: e.tag == "select"
                                     and re.fullmatch(r"\d+_owner", e.attrs.get("name", "")) is not None),
                            "owner filter")
        if not memory.get("owner"):
            return kit.once(memory, "owner", _reached(kit.select(ob, owner, p["owner"]), "owner filter"))
        for box in kit.find_all(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "checkbox"
                                and re.fullmatch(r"\d+_status", e.attrs.get("name", "")) is not None):
            want = box.attrs.get("value") == p["status"]
            if bool(box.checked) != want:
                return _reached(kit.click(ob, box), "status checkbox")
        update = kit.require(kit.by_name(ob, "update", tag="input"), "Update button")
        return kit.once(memory, "updated", _reached(kit.click(ob, update), "Update button"))


class TicketMilestone(_TrackerTask):
    template = "ticket_milestone"
    intent_template = 'Which milestone is the ticket titled "{summary}" planned for? Answer with the milestone name.'
    user = "grace"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        t = rng.choice([t for t in seed_data().tickets if t.final["milestone"]])
        return {"summary": t.final["summary"], "ticket": t.id, "milestone": t.final["milestone"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = kit.norm(answer).strip(" .\"'") == kit.norm(self.params["milestone"])
        return ok, f"answer {answer!r}, expected {self.params['milestone']!r}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if re.fullmatch(r"/ticket/\d+", kit.path(ob)):
            cell = kit.require(kit.find(ob, lambda e: e.tag == "td" and e.attrs.get("headers") == "h_milestone"),
                               "milestone cell")
            return kit.finish(cell.text.strip())
        if kit.path(ob) == "/search" and memory.get("searched"):
            hit = kit.require(kit.find(ob, lambda e: e.tag == "a"
                                       and re.fullmatch(r"/ticket/\d+", e.attrs.get("href", "")) is not None
                                       and kit.norm(p["summary"]) in kit.norm(e.text)), "search hit")
            return _reached(kit.click(ob, hit), "search hit")
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
        m = re.fullmatch(r"/ticket/(\d+)", kit.path(ob))
        if m and memory.get("opened"):
            return kit.finish(f"#{m.group(1)}")
        if kit.path(ob) == "/search" and memory.get("searched"):
            # results come newest first; the first ticket among them is the newest ticket
            hit = kit.require(kit.find(ob, lambda e: e.tag == "a" and e.parent is not None
                                       and re.fullmatch(r"/ticket/\d+", e.attrs.get("href", "")) is not None
                                       and ob.elements[e.parent].tag == "dt"), "first ticket hit")
            return kit.once(memory, "opened", _reached(kit.click(ob, hit), "first ticket hit"))
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
            return kit.finish()
        if not kit.path(ob).startswith("/admin"):
            admin = kit.require(kit.link(ob, "Admin"), "Admin link")
            return _reached(kit.click(ob, admin), "Admin link")
        if kit.path(ob) != "/admin/ticket/milestones":
            what = "Milestones panel link"
            panel = kit.require(kit.link(ob, "Milestones", href=r"/admin/ticket/milestones$"), what)
            return _reached(kit.click(ob, panel), what)
        name = kit.by_id(ob, "name")
        if name is not None and (name.value or "") != p["name"]:
            return _reached(kit.fill(ob, name, p["name"]), "milestone name field")
        due = kit.by_id(ob, "duedate")
        if due is not None and (due.value or "") != p["due"]:
            return _reached(kit.fill(ob, due, p["due"]), "due date field")
        if not memory.get("closed_picker"):
            # the date picker pops up over the form: Escape closes it, as a user would
            return kit.once(memory, "closed_picker", kit.press("Escape"))
        add = kit.require(kit.by_name(ob, "add", tag="input"), "Add button")
        return kit.once(memory, "added", _reached(kit.click(ob, add), "Add button"))


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
            return kit.finish()
        if not kit.path(ob).startswith("/admin"):
            admin = kit.require(kit.link(ob, "Admin"), "Admin link")
            return _reached(kit.click(ob, admin), "Admin link")
        if kit.path(ob) != "/admin/ticket/components":
            what = "Components panel link"
            panel = kit.require(kit.link(ob, "Components", href=r"/admin/ticket/components$"), what)
            return _reached(kit.click(ob, panel), what)
        name = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("name") == "name"
                        and e.attrs.get("type", "text") == "text")
        if name is not None and (name.value or "") != p["name"]:
            return _reached(kit.fill(ob, name, p["name"]), "component name field")
        if not memory.get("owner"):
            owners = kit.require(kit.by_id(ob, "owner"), "owner list")
            return kit.once(memory, "owner", _reached(kit.select(ob, owners, p["owner"]), "owner list"))
        add = kit.require(kit.by_name(ob, "add", tag="input"), "Add button")
        return kit.once(memory, "added", _reached(kit.click(ob, add), "Add button"))


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
        if kit.norm(text).replace(kit.norm(p["line"]), "").strip() != kit.norm(seeded[-1].text):
            return False, "the rest of the page changed"
        return author == self.user, f"saved by {author}"

    def expert(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if memory.get("saved"):
            return kit.finish()
        if kit.path(ob) != f"/wiki/{p['page']}":
            what = f"link to {p['page']}"
            page = kit.require(kit.link(ob, p["title"], href=rf"/wiki/{p['page']}$"), what)
            return _reached(kit.click(ob, page), what)
        text = kit.by_id(ob, "text")
        if text is None:  # the page view: its edit button sits under the text
            edit = kit.require(kit.button(ob, "Edit this page"), "Edit this page button")
            return _reached(kit.click(ob, edit), "Edit this page button")
        current = text.value or ""
        if p["line"] not in current:
            return _reached(kit.fill(ob, text, current.rstrip("\n") + "\n" + p["line"] + "\n"), "page text")
        save = kit.require(kit.by_id(ob, "save"), "Submit changes button")
        return kit.once(memory, "saved", _reached(kit.click(ob, save), "Submit changes button"))


TASKS: tuple[type[SiteTask], ...] = (
    CreateTicket, CommentTicket, ReassignTicket, CloseTicket, ChangeMilestone, CountQuery, TicketMilestone,
    SearchNewest, AddMilestone, AddComponent, EditWiki,
)
