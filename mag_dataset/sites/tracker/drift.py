"""The tracker's drift: a few busy days of the other project members' activity, written into Trac's database.

WebMRE's stale screenshots (arXiv 2609.27353, §3) arose because observations were re-rendered
on a site that had moved on since the demonstration. :func:`apply_drift` moves the seeded Trac
on the way its other users would in the days before a release freeze (:data:`PER_LEVEL` per
level): reporters file new tickets and add to their descriptions, developers comment, triage
(assign, accept, close, reopen), reassign, tag, re-plan tickets to a later milestone and change
priorities, the release manager moves a milestone's due date, and the wiki's front page (a News
section under its quick links) and two more pages get edits. The timeline, the reports, the
custom queries, the roadmap, the admin panel's milestone table and the front page's ticket
table all follow from these rows. No milestone, component or version is added: each would be
one more option in the ticket forms' lists, which moves the element ids of every ticket form
after it, so no recorded ticket episode would replay past its first list.

It is built to be seen: every template starts on the front page, whose News section moves
everything under the quick links; the edits go where a page shows them (a note under a wiki
page's title, field changes that a ticket's header and its "Modify" form show), and the tickets
touched are mostly open ones, which most ticket templates draw from. A touched ticket's new
history entry comes before its form, so the form's element ids move and a replayed episode on
that ticket soon diverges, as it would on the live site.

How it stays deterministic and consistent with the served Trac:

* Everything is drawn from the ``random.Random`` it is given, over the seed data's own
  vocabularies (:mod:`mag_dataset.sites.tracker.data`: components and their things, comments,
  resolution notes, keywords, users) and over the database's rows in id order.
* Timestamps are fixed: every change lies between the seed's latest date (2025-06-02 02:03)
  and :data:`~mag_dataset.sites.tracker.data.FROZEN_NOW` (09:00 that day), the moment tracd's
  clock starts from (``trac_serve.py``). So the drifted changes are in the served site's
  past, as the other users' work would be: they show on the timeline's "Today", and a change
  an episode makes afterwards still comes last in a ticket's history. The price is that a
  few days' worth of activity is dated within those hours; each level is one more round of it
  in its own slice of them.
* The rows are the ones Trac's model writes (``Ticket.insert``/``save_changes``,
  ``WikiPage.save``): empty values stored as NULL, one ``comment`` row numbered after the
  ticket's last one in every change, ``changetime`` updated. The generations of Trac's cached
  milestones and ticket fields in the ``cache`` table are bumped, as ``Milestone.update``
  does, so the running tracd re-reads them on its next request.
* One short write transaction on ``trac.db``; no user, password, session or permission is
  touched, and nothing is deleted (every ticket, milestone, component and wiki page a task
  template draws from is still there, with changed content).
"""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta
from typing import Any, Callable

from mag_dataset.sites.tracker.data import (
    _ACTIONS, _COMMENTS, _KEYWORDS, _THINGS, COMPONENTS, DEVELOPERS, FROZEN_NOW, OPEN_MILESTONES, PRIORITIES,
    REPORTERS, RESOLUTIONS, TYPES, USERS, UTC, VERSIONS, _summary, seed_data,
)

#: Changes of one level of drift (a few days of activity); each level adds as much again.
PER_LEVEL: dict[str, int] = {
    "new_tickets": 3, "comments": 6, "status_changes": 8, "reassignments": 5, "milestone_moves": 5,
    "priority_changes": 5, "keyword_changes": 4, "description_edits": 3, "milestone_due_moves": 1, "wiki_edits": 3,
}
#: Most levels one drift takes (each is a round of activity in its own slice of the hours before tracd's "now").
MAX_LEVEL = 100
#: Trac's cached properties (``cache`` table) that milestone changes invalidate.
CACHE_KEYS = ("trac.ticket.model.MilestoneCache.milestones", "trac.ticket.api.TicketSystem.fields")
#: The ticket columns the drift reads and writes.
FIELDS = ("summary", "type", "component", "priority", "milestone", "owner", "status", "resolution", "reporter",
          "version", "keywords", "cc", "description")
#: Resolution -> the note its closing comment carries (as in the seed).
CLOSE_NOTES = {"fixed": "Fixed in the {t}; see the branch ticket-{id}.", "invalid": "Not a bug.",
               "wontfix": "We will not change this.", "duplicate": "Duplicate of an older ticket.",
               "worksforme": "Cannot reproduce on the current version."}
#: The pages the drift edits besides the front page (the ones the wiki template edits).
WIKI_PAGES = ("Architecture", "CodingStyle", "MeetingNotes", "Onboarding", "ReleaseProcess")
#: Notes a member puts under a process page's title (``{name}``, ``{component}``, ``{date}``).
WIKI_NOTES = ("''Reviewed by {name} on {date}: still current.''",
              "''{name} is reworking this page for the {component} changes this week.''",
              "''Questions about this page go to {name}.''")
#: Items of a new meeting in the meeting notes (``{name}``, ``{component}``, ``{thing}``).
MEETING_ITEMS = ("{name} takes over the open {component} tickets.",
                 "The {thing} needs a second look before the freeze.", "Triage of the new tickets: done.")
#: What a reporter adds to a ticket's description (``{version}``, ``{action}``).
DESCRIPTION_ADDITIONS = ("Also seen on {version} when {action}.", "It started after the upgrade to {version}.",
                         "Update: it only happens when {action}.")


def apply_drift(site: Any, rng: random.Random, level: int) -> dict[str, int]:
    """Move the (reset) tracker on by ``level`` rounds of other users' activity.

    Args:
        site: the :class:`~mag_dataset.sites.tracker.TrackerSite` (its ``trac.db`` is written).
        rng: the drift's ``random.Random`` (see :meth:`mag_dataset.sites.base.Site.drift`).
        level: how many rounds (each a few days' worth: :data:`PER_LEVEL`).

    Returns:
        How many changes of each kind were written (the keys of :data:`PER_LEVEL`).

    Raises:
        ValueError: for a level outside 1-:data:`MAX_LEVEL`.
    """
    if not 1 <= level <= MAX_LEVEL:
        raise ValueError(f"tracker drift level must be 1-{MAX_LEVEL}, got {level}")
    con = sqlite3.connect(str(site.databases()[0]), timeout=30, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            counts = _Drift(con, rng).run(level)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    finally:
        con.close()
    return counts


def window() -> tuple[datetime, datetime]:
    """The drift's interval: from just after the seed's latest date to just before tracd's "now"."""
    seed = seed_data()
    latest = max([t.changed for t in seed.tickets] + [v.when for vs in seed.wiki.values() for v in vs])
    return latest + timedelta(minutes=5), FROZEN_NOW - timedelta(minutes=5)


def _us(when: datetime) -> int:
    return int(when.timestamp()) * 1_000_000


def _null(value: str | None) -> str | None:
    return value or None


def _thing(ticket: dict[str, Any]) -> str:
    """What the ticket is about (the seed's summaries each name one thing of their component)."""
    things = _THINGS.get(ticket["component"] or "", ())
    return next((t for t in things if t.lower() in (ticket["summary"] or "").lower()), "code")


class _Drift:
    """The drift's writes on one open transaction, with the tickets' current values in memory."""

    def __init__(self, con: sqlite3.Connection, rng: random.Random):
        self.con, self.rng = con, rng
        cols = ", ".join(FIELDS)
        self.tickets: dict[int, dict[str, Any]] = {
            row[0]: dict(zip(FIELDS, row[1:])) for row in con.execute(f"SELECT id, {cols} FROM ticket ORDER BY id")}
        self.counts = {kind: 0 for kind in PER_LEVEL}
        self.touched: set[int] = set()
        self.news: list[str] = []  # this round's lines for the front page
        self.filed: list[int] = []  # this round's new tickets

    # ------------------------------------------------------------------ rounds
    def run(self, level: int) -> dict[str, int]:
        start, end = window()
        span = (end - start) / level
        for r in range(level):
            self._round(start + span * r, start + span * (r + 1))
        self._invalidate(CACHE_KEYS)
        return dict(self.counts)

    def _round(self, t0: datetime, t1: datetime) -> None:
        """One level: the ticket activity in shuffled order at sorted times, then the wiki edits."""
        rng = self.rng
        do = {"new_tickets": self._new_ticket, "comments": self._comment, "status_changes": self._status,
              "reassignments": self._reassign, "milestone_moves": self._move_milestone,
              "priority_changes": self._priority, "keyword_changes": self._keywords,
              "description_edits": self._description, "milestone_due_moves": self._move_due}
        kinds = [k for k in do for _ in range(PER_LEVEL[k])]
        rng.shuffle(kinds)
        seconds = int((t1 - t0).total_seconds())
        # the last tenth of the slice is left to the wiki edits, which sum the round up
        times = sorted(rng.sample(range(60, seconds * 9 // 10), len(kinds)))
        self.news, self.filed = [], []
        for kind, sec in zip(kinds, times):
            if do[kind](t0 + timedelta(seconds=sec)):
                self.counts[kind] += 1
        if self.filed:
            self.news.append("new tickets " + ", ".join(f"#{i}" for i in self.filed) + " are waiting for triage.")
        wiki_at = [t0 + timedelta(seconds=s)
                   for s in sorted(rng.sample(range(seconds * 9 // 10, seconds), PER_LEVEL["wiki_edits"]))]
        self._front_page(wiki_at[0], self.news)
        for at, page in zip(wiki_at[1:], rng.sample(WIKI_PAGES, PER_LEVEL["wiki_edits"] - 1)):
            self._edit_page(at, page)

    # ------------------------------------------------------------------ tickets
    def _pick(self, ok: Callable[[dict[str, Any]], bool]) -> int | None:
        """A ticket satisfying ``ok`` (untouched by this drift when possible), or None."""
        ids = [i for i, t in self.tickets.items() if ok(t)]
        fresh = [i for i in ids if i not in self.touched]
        pool = fresh or ids
        if not pool:
            return None
        return self.rng.choice(pool)

    def _change(self, tid: int, when: datetime, author: str, comment: str = "", **fields: str) -> None:
        """What ``Ticket.save_changes`` writes: the changed fields, the numbered comment row, ``changetime``."""
        t = self.tickets[tid]
        ts = _us(when)
        last = self.con.execute("SELECT oldvalue FROM ticket_change WHERE ticket=? AND field='comment' "
                                "ORDER BY time DESC LIMIT 1", (tid,)).fetchone()
        cnum = str(int(str(last[0]).rsplit(".", 1)[-1]) + 1) if last and last[0] else "1"
        for name, new in fields.items():
            old = t[name]
            if _null(old) == _null(new):
                continue
            self.con.execute(f"UPDATE ticket SET {name}=? WHERE id=?", (_null(new), tid))
            self.con.execute("INSERT INTO ticket_change (ticket, time, author, field, oldvalue, newvalue) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (tid, ts, author, name, _null(old), _null(new)))
            t[name] = _null(new)
        self.con.execute("INSERT INTO ticket_change (ticket, time, author, field, oldvalue, newvalue) "
                         "VALUES (?, ?, ?, 'comment', ?, ?)", (tid, ts, author, cnum, comment))
        self.con.execute("UPDATE ticket SET changetime=? WHERE id=?", (ts, tid))
        self.touched.add(tid)

    def _comment_text(self, tid: int) -> str:
        t = self.tickets[tid]
        return self.rng.choice(_COMMENTS).format(version=t["version"] or "1.1.1", id=tid, t=_thing(t),
                                                 other=self.rng.choice(sorted(COMPONENTS)))

    def _new_ticket(self, when: datetime) -> bool:
        """A reporter (or a developer) files a ticket, written as ``Ticket.insert`` does."""
        rng = self.rng
        component = rng.choice(sorted(COMPONENTS))
        ttype = rng.choices(TYPES, weights=(5, 3, 2))[0]
        taken = {(t["summary"] or "").lower() for t in self.tickets.values()}
        summary = _summary(rng, component, ttype)
        while summary.lower() in taken:
            summary = _summary(rng, component, ttype)
        thing = next(t for t in _THINGS[component] if t.lower() in summary.lower())
        if ttype == "defect":
            description = (f"The {thing} in the {component} component needs attention.\n\n"
                           f"Steps to reproduce:\n 1. Open the {thing}.\n 2. Wait for {rng.choice(_ACTIONS)}.\n"
                           " 3. Check the result.\n\nExpected: it works. Actual: it does not.")
        else:
            description = (f"The {thing} in the {component} component needs attention.\n\n"
                           f"Proposal: {summary.lower()}. It should stay backwards compatible.")
        values = {"summary": summary, "type": ttype, "component": component,
                  "milestone": rng.choice(("Cirrus", "Dorado", "Dorado", "Equinox", "Someday", "")),
                  "version": rng.choice(sorted(VERSIONS)) if ttype == "defect" else "",
                  "priority": rng.choices(PRIORITIES, weights=(1, 2, 6, 4, 1))[0],
                  "keywords": " ".join(sorted(rng.sample(_KEYWORDS, rng.choice((0, 0, 1, 2))))),
                  "reporter": rng.choice(REPORTERS + DEVELOPERS), "owner": COMPONENTS[component], "status": "new",
                  "resolution": "", "cc": "", "description": description}
        ts = _us(when)
        cols = list(values)
        cur = self.con.execute(f"INSERT INTO ticket ({', '.join(cols)}, time, changetime) "
                               f"VALUES ({', '.join('?' * (len(cols) + 2))})",
                               [_null(values[c]) for c in cols] + [ts, ts])
        tid = int(cur.lastrowid)
        self.tickets[tid] = {f: _null(values[f]) for f in FIELDS}
        self.touched.add(tid)
        self.filed.append(tid)
        return True

    def _comment(self, when: datetime) -> bool:
        """Someone comments on a ticket, mostly an open one."""
        rng = self.rng
        if rng.random() < 0.8:
            tid = self._pick(lambda t: t["status"] != "closed")
        else:
            tid = self._pick(lambda t: True)
        if tid is None:
            return False
        self._change(tid, when, rng.choice(DEVELOPERS + REPORTERS), self._comment_text(tid))
        return True

    def _status(self, when: datetime) -> bool:
        """One step of the workflow: assign a new ticket, accept, resolve, or reopen."""
        rng = self.rng
        step = rng.choices(("assign", "accept", "resolve", "reopen"), weights=(3, 2, 3, 1))[0]
        if step == "assign":
            tid = self._pick(lambda t: t["status"] == "new")
            if tid is not None:
                t, dev = self.tickets[tid], rng.choice(DEVELOPERS)
                self._change(tid, when, COMPONENTS.get(t["component"], "admin"),
                             rng.choice(("", f"{dev} knows this code best.")), owner=dev, status="assigned")
                return True
        if step == "accept":
            tid = self._pick(lambda t: t["status"] in ("assigned", "reopened") and t["owner"] in DEVELOPERS)
            if tid is not None:
                self._change(tid, when, self.tickets[tid]["owner"], "", status="accepted")
                return True
        if step == "reopen":
            tid = self._pick(lambda t: t["status"] == "closed" and t["milestone"] in OPEN_MILESTONES)
            if tid is not None:
                t = self.tickets[tid]
                self._change(tid, when, t["reporter"] or rng.choice(REPORTERS), "Still happens on the latest build.",
                             status="reopened", resolution="")
                return True
        tid = self._pick(lambda t: t["status"] in ("assigned", "accepted") and t["owner"] in DEVELOPERS)
        if tid is None:
            return False
        t = self.tickets[tid]
        res = rng.choices(RESOLUTIONS, weights=(8, 1, 1, 1, 1))[0]
        self._change(tid, when, t["owner"], CLOSE_NOTES[res].format(t=_thing(t), id=tid), status="closed",
                     resolution=res)
        return True

    def _reassign(self, when: datetime) -> bool:
        """A developer hands an open ticket to another one."""
        rng = self.rng
        tid = self._pick(lambda t: t["status"] != "closed")
        if tid is None:
            return False
        t = self.tickets[tid]
        dev = rng.choice([d for d in DEVELOPERS if d != t["owner"]])
        author = t["owner"] if t["owner"] in DEVELOPERS else COMPONENTS.get(t["component"], "admin")
        self._change(tid, when, author, rng.choice(("", f"{dev} knows this code best.")), owner=dev,
                     status="assigned")
        return True

    def _move_milestone(self, when: datetime) -> bool:
        """Re-planning: an open ticket of the current release slips to the next one (or gets one)."""
        rng = self.rng
        tid = self._pick(lambda t: t["status"] != "closed" and t["milestone"] == "Cirrus"
                         and t["priority"] not in ("blocker", "critical"))
        if tid is not None:
            self._change(tid, when, rng.choice(DEVELOPERS), "Moved: not enough time left in this release.",
                         milestone="Dorado")
            return True
        tid = self._pick(lambda t: t["status"] != "closed" and not t["milestone"])
        if tid is None:
            return False
        self._change(tid, when, rng.choice(DEVELOPERS), "", milestone=rng.choice(OPEN_MILESTONES[1:]))
        return True

    def _priority(self, when: datetime) -> bool:
        """A developer raises (mostly) or lowers an open ticket's priority by one step."""
        rng = self.rng
        tid = self._pick(lambda t: t["status"] != "closed")
        if tid is None:
            return False
        i = PRIORITIES.index(self.tickets[tid]["priority"]) if self.tickets[tid]["priority"] in PRIORITIES else 2
        up = i == len(PRIORITIES) - 1 or (i > 0 and rng.random() < 0.7)
        self._change(tid, when, rng.choice(DEVELOPERS), "", priority=PRIORITIES[i - 1 if up else i + 1])
        return True

    def _keywords(self, when: datetime) -> bool:
        """A developer tags an open ticket (asking for the log when it is ``needinfo``)."""
        rng = self.rng
        tid = self._pick(lambda t: t["status"] != "closed" and len((t["keywords"] or "").split()) < 3)
        if tid is None:
            return False
        have = (self.tickets[tid]["keywords"] or "").split()
        word = rng.choice([k for k in _KEYWORDS if k not in have])
        comment = "Could you attach the server log from when it happened?" if word == "needinfo" else ""
        self._change(tid, when, rng.choice(DEVELOPERS), comment, keywords=" ".join(sorted(have + [word])))
        return True

    def _description(self, when: datetime) -> bool:
        """A reporter adds what they found out to the description of their open ticket."""
        rng = self.rng
        tid = self._pick(lambda t: t["status"] != "closed")
        if tid is None:
            return False
        t = self.tickets[tid]
        more = rng.choice(DESCRIPTION_ADDITIONS).format(version=t["version"] or max(VERSIONS),
                                                        action=rng.choice(_ACTIONS))
        self._change(tid, when, t["reporter"] or rng.choice(REPORTERS), "",
                     description=(t["description"] or "").rstrip() + "\n\n" + more)
        return True

    def _move_due(self, when: datetime) -> bool:
        """The release manager moves an open milestone's due date a few weeks out (news on the front page)."""
        rng = self.rng
        rows = self.con.execute("SELECT name, due FROM milestone WHERE due > 0 AND (completed IS NULL OR "
                                "completed = 0) ORDER BY name").fetchall()
        if not rows:
            return False
        name, due = rng.choice(rows)
        new_due = due + rng.choice((7, 14, 21, 28)) * 86400 * 1_000_000
        self.con.execute("UPDATE milestone SET due=? WHERE name=?", (new_due, name))
        day = datetime.fromtimestamp(new_due / 1e6, UTC).strftime("%Y-%m-%d")
        self.news.append(f"[milestone:{name} {name}] is now due on {day}.")
        return True

    # ------------------------------------------------------------------ wiki
    def _save_page(self, name: str, when: datetime, author: str, comment: str, text: str) -> None:
        """A new version of a page, as ``WikiPage.save`` writes it."""
        version, readonly = self.con.execute("SELECT version, readonly FROM wiki WHERE name=? "
                                             "ORDER BY version DESC LIMIT 1", (name,)).fetchone()
        self.con.execute("INSERT INTO wiki (name, version, time, author, text, comment, readonly) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", (name, version + 1, _us(when), author, text, comment,
                                                          readonly))
        self.counts["wiki_edits"] += 1

    def _text(self, name: str) -> str:
        return self.con.execute("SELECT text FROM wiki WHERE name=? ORDER BY version DESC LIMIT 1",
                                (name,)).fetchone()[0]

    def _front_page(self, when: datetime, news: list[str]) -> None:
        """WikiStart gets a News section (after the quick links), newest first, summing the round up."""
        day = when.strftime("%Y-%m-%d")
        lines = "".join(f" * {day}: {n}\n" for n in news or ["the tracker had a busy week."])
        text = self._text("WikiStart")
        if "== News ==\n" in text:
            text = text.replace("== News ==\n", "== News ==\n" + lines, 1)
        elif "== Milestones ==" in text:
            text = text.replace("== Milestones ==", "== News ==\n" + lines + "\n== Milestones ==", 1)
        else:
            text = text.rstrip("\n") + "\n\n== News ==\n" + lines
        self._save_page("WikiStart", when, self.rng.choice(DEVELOPERS), "News", text)

    def _edit_page(self, when: datetime, name: str) -> None:
        """Another member edits a page: a new meeting at the end of the notes, a note under a process page's title."""
        rng = self.rng
        component = rng.choice(sorted(COMPONENTS))
        fill = {"name": USERS[rng.choice(DEVELOPERS)][1], "component": component, "date": when.strftime("%Y-%m-%d"),
                "thing": rng.choice(_THINGS[component])}
        text = self._text(name)
        if name == "MeetingNotes":
            items = rng.sample(MEETING_ITEMS, 2)
            meeting = "".join(f" * {i.format(**fill)}\n" for i in items)
            text = text.rstrip("\n") + f"\n\n== {fill['date']} ==\n{meeting}"
        else:
            title, _, rest = text.partition("\n\n")
            text = f"{title}\n\n{rng.choice(WIKI_NOTES).format(**fill)}\n\n{rest}"
        self._save_page(name, when, rng.choice(DEVELOPERS), "Updated", text)

    # ------------------------------------------------------------------ caches
    def _invalidate(self, keys: tuple[str, ...]) -> None:
        """Move the generation of Trac's cached properties on, as ``CacheManager.invalidate`` does.

        Not by one: a tracd that served an earlier drift (of another seed) from the same reset
        state still holds its milestones under seed generation + 1, and would take them for
        current. A step drawn from the rng gives each drift a generation of its own (the same
        for the same seed and level, so the databases stay identical).
        """
        step = self.rng.randrange(1_000, 1_000_000_000)
        for key in keys:
            cid = _key_to_id(key)
            if self.con.execute("UPDATE cache SET generation=generation+? WHERE id=?", (step, cid)).rowcount == 0:
                self.con.execute("INSERT INTO cache (id, generation, key) VALUES (?, ?, ?)", (cid, step, key))


def _key_to_id(s: str) -> int:
    """``trac.cache.key_to_id``: the 31-bit hash Trac keys its ``cache`` rows by."""
    result = ord(s[0]) << 7 if s else 0
    for c in s:
        result = ((1000003 * result) & 0x7fffffff) ^ ord(c)
    return result ^ len(s)
