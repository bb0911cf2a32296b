"""The tracker's seed data, as code with a seed: users, components, milestones, versions,
tickets with their full change history, and wiki pages with versions.

Pure standard library and deterministic (``random.Random(SEED)``, fixed UTC dates), so the
tasks draw their parameters from the same definitions the site is seeded from
(:func:`seed_data`), without reading the database. Every date lies before :data:`FROZEN_NOW`,
the moment the served Trac believes it is when it starts (its clock runs on from there, see
``trac_serve.py``), so no page drifts between recordings.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

SEED = 20250602
N_TICKETS = 120
UTC = timezone.utc
#: What "now" is for the served Trac when it starts.
FROZEN_NOW = datetime(2025, 6, 2, 9, 0, 0, tzinfo=UTC)
PROJECT = "Lighthouse"

#: user -> (password, full name, role). Roles: admin (TRAC_ADMIN), developer, reporter.
USERS: dict[str, tuple[str, str, str]] = {
    "admin": ("admin-pass", "Ada Admin", "admin"),
    "alice": ("alice-pass", "Alice Nakamura", "developer"),
    "bob": ("bob-pass", "Bob Okafor", "developer"),
    "carol": ("carol-pass", "Carol Lindqvist", "developer"),
    "dave": ("dave-pass", "Dave Moreau", "developer"),
    "erin": ("erin-pass", "Erin Walsh", "reporter"),
    "frank": ("frank-pass", "Frank Ibarra", "reporter"),
    "grace": ("grace-pass", "Grace Chen", "reporter"),
}
DEVELOPERS = tuple(u for u, v in USERS.items() if v[2] == "developer")
REPORTERS = tuple(u for u, v in USERS.items() if v[2] == "reporter")

#: component -> default owner
COMPONENTS: dict[str, str] = {
    "api": "bob", "auth": "alice", "backend": "carol", "build": "dave", "database": "carol",
    "docs": "alice", "frontend": "bob", "mobile": "dave", "search": "alice",
}
#: name -> (due, completed, description)
MILESTONES: dict[str, tuple[datetime | None, datetime | None, str]] = {
    "Aurora": (datetime(2024, 11, 15, 12, tzinfo=UTC), datetime(2024, 11, 15, 12, tzinfo=UTC),
               "First public release (1.0): core tracking, REST API and the web dashboard."),
    "Borealis": (datetime(2025, 2, 28, 12, tzinfo=UTC), datetime(2025, 2, 28, 12, tzinfo=UTC),
                 "1.1: search, saved filters and the mobile beta."),
    "Cirrus": (datetime(2025, 6, 30, 12, tzinfo=UTC), None,
               "1.2: performance work, two-factor login and the offline mode of the mobile apps."),
    "Dorado": (datetime(2025, 9, 30, 12, tzinfo=UTC), None, "1.3: plugin API and the new report builder."),
    "Equinox": (datetime(2025, 12, 15, 12, tzinfo=UTC), None, "2.0: the storage rewrite and a new UI theme."),
    "Someday": (None, None, "Ideas without a release yet."),
}
OPEN_MILESTONES = ("Cirrus", "Dorado", "Equinox", "Someday")
#: version -> release date
VERSIONS: dict[str, datetime] = {
    "1.0": datetime(2024, 11, 15, 12, tzinfo=UTC), "1.0.1": datetime(2024, 12, 20, 12, tzinfo=UTC),
    "1.1": datetime(2025, 2, 28, 12, tzinfo=UTC), "1.1.1": datetime(2025, 4, 10, 12, tzinfo=UTC),
}
TYPES = ("defect", "enhancement", "task")
PRIORITIES = ("blocker", "critical", "major", "minor", "trivial")
RESOLUTIONS = ("fixed", "invalid", "wontfix", "duplicate", "worksforme")
STATUSES = ("new", "assigned", "accepted", "reopened", "closed")

_THINGS: dict[str, tuple[str, ...]] = {
    "api": ("REST endpoint", "rate limiter", "webhook dispatcher", "OAuth client", "batch API", "JSON serializer"),
    "auth": ("login page", "password reset", "session store", "two-factor prompt", "LDAP sync", "API token"),
    "backend": ("job scheduler", "mail queue", "report generator", "export worker", "audit log", "cron runner"),
    "build": ("CI pipeline", "release script", "Docker image", "wheel build", "nightly job", "lint step"),
    "database": ("migration runner", "connection pool", "backup task", "schema check", "index builder", "ORM layer"),
    "docs": ("install guide", "API reference", "FAQ page", "changelog", "tutorial", "upgrade notes"),
    "frontend": ("dashboard", "settings panel", "ticket table", "date picker", "navigation bar", "dark theme"),
    "mobile": ("Android app", "iOS app", "offline sync", "push notifications", "photo upload", "widget"),
    "search": ("search index", "autocomplete", "result ranking", "filter sidebar", "saved searches", "tokenizer"),
}
_DEFECT = ("{T} crashes when {a}", "{T} times out when {a}", "{T} shows the wrong {x}", "Memory leak in the {t}",
           "{T} ignores the {x} setting", "{T} fails with a Unicode error when {a}", "Race condition in the {t}")
_ENHANCEMENT = ("Add {x} support to the {t}", "Make the {t} configurable", "Improve the performance of the {t}",
                "Show the {x} in the {t}", "Allow exporting the {t} data as CSV")
_TASK = ("Write tests for the {t}", "Refactor the {t}", "Update the docs of the {t}", "Remove the deprecated {t} code",
         "Review the {t} logging")
_ACTIONS = ("saving a draft", "the locale is Turkish", "the network drops", "uploading a large file",
            "two users edit at once", "the cache is cold", "paginating past page 10", "the token expires")
_ATTRS = ("timezone", "pagination", "locale", "retry", "timeout", "encoding", "proxy", "permission")
_COMMENTS = (
    "I can reproduce this on {version}.", "Looking into it this week.", "Confirmed on the staging server.",
    "Could you attach the server log from when it happened?", "This also shows up in the {other} component.",
    "A first patch is on the branch ticket-{id}.", "Same here, it happens about one time in ten.",
    "Lowering the priority: there is a workaround (restart the worker).", "Added a regression test for this.",
    "The root cause is in the {t}; the fix is small.",
)
_KEYWORDS = ("regression", "performance", "security", "ui", "needinfo", "easy", "ux", "crash")


@dataclass
class Change:
    """One change of a ticket: who, when, which fields (old, new) and the comment."""

    when: datetime
    author: str
    fields: dict[str, tuple[str, str]]
    comment: str = ""


@dataclass
class Ticket:
    """A seeded ticket: its values at creation, its change history and its final values."""

    id: int
    created: datetime
    initial: dict[str, str]
    changes: list[Change] = field(default_factory=list)

    @property
    def final(self) -> dict[str, str]:
        out = dict(self.initial)
        for ch in self.changes:
            out.update({k: new for k, (_, new) in ch.fields.items()})
        return out

    @property
    def comments(self) -> list[str]:
        return [c.comment for c in self.changes if c.comment]

    @property
    def changed(self) -> datetime:
        return self.changes[-1].when if self.changes else self.created


@dataclass(frozen=True)
class WikiVersion:
    when: datetime
    author: str
    comment: str
    text: str


@dataclass
class SeedData:
    tickets: list[Ticket]
    wiki: dict[str, list[WikiVersion]]

    def ticket(self, tid: int) -> Ticket:
        return self.tickets[tid - 1]

    def to_json(self) -> dict[str, Any]:
        """What the seeding script inside the site's venv loads (dates as ISO strings)."""
        return {
            "project": PROJECT,
            "users": {u: {"password": p, "name": n, "role": r, "email": f"{u}@lighthouse.example"}
                      for u, (p, n, r) in USERS.items()},
            "components": COMPONENTS,
            "milestones": {m: {"due": _iso(d), "completed": _iso(c), "description": desc}
                           for m, (d, c, desc) in MILESTONES.items()},
            "versions": {v: _iso(d) for v, d in VERSIONS.items()},
            "tickets": [{"id": t.id, "created": _iso(t.created), "initial": t.initial,
                         "changes": [{"when": _iso(c.when), "author": c.author, "comment": c.comment,
                                      "fields": {k: list(v) for k, v in c.fields.items()}} for c in t.changes]}
                        for t in self.tickets],
            "wiki": {name: [{"when": _iso(v.when), "author": v.author, "comment": v.comment, "text": v.text}
                            for v in versions] for name, versions in self.wiki.items()},
            "epoch": _iso(FROZEN_NOW - timedelta(days=400)),
        }

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]


def _iso(d: datetime | None) -> str | None:
    return d.isoformat() if d is not None else None


def _summary(rng: random.Random, component: str, ttype: str) -> str:
    pool = {"defect": _DEFECT, "enhancement": _ENHANCEMENT, "task": _TASK}[ttype]
    thing = rng.choice(_THINGS[component])
    text = rng.choice(pool).format(T=thing[0].upper() + thing[1:], t=thing, a=rng.choice(_ACTIONS),
                                   x=rng.choice(_ATTRS))
    return text


def _tickets(rng: random.Random) -> list[Ticket]:
    start, end = datetime(2024, 9, 2, 9, tzinfo=UTC), datetime(2025, 5, 20, 17, tzinfo=UTC)
    span = (end - start).total_seconds()
    times = sorted(start + timedelta(seconds=int(rng.random() * span)) for _ in range(N_TICKETS))
    seen: set[str] = set()
    out: list[Ticket] = []
    for i, created in enumerate(times, start=1):
        component = rng.choice(sorted(COMPONENTS))
        ttype = rng.choices(TYPES, weights=(5, 3, 2))[0]
        summary = _summary(rng, component, ttype)
        while summary.lower() in seen:
            summary = _summary(rng, component, ttype)
        seen.add(summary.lower())
        if created < MILESTONES["Aurora"][0]:  # type: ignore[operator]
            milestone = rng.choice(("Aurora", "Aurora", "Borealis", "Cirrus"))
        elif created < MILESTONES["Borealis"][0]:  # type: ignore[operator]
            milestone = rng.choice(("Borealis", "Borealis", "Cirrus", "Dorado", ""))
        else:
            milestone = rng.choice(("Cirrus", "Cirrus", "Dorado", "Equinox", "Someday", ""))
        version = rng.choice([v for v, d in VERSIONS.items() if d <= created] or [""]) if ttype == "defect" else ""
        reporter = rng.choice(REPORTERS + DEVELOPERS)
        thing = next(t for t in _THINGS[component] if t.lower() in summary.lower())
        description = (f"The {thing} in the {component} component needs attention.\n\n"
                       + ("Steps to reproduce:\n 1. Open the {0}.\n 2. Wait for {1}.\n 3. Check the result.\n\n"
                          "Expected: it works. Actual: it does not.".format(thing, rng.choice(_ACTIONS))
                          if ttype == "defect" else f"Proposal: {summary.lower()}. It should stay backwards compatible."))
        initial = {"summary": summary, "type": ttype, "component": component, "milestone": milestone,
                   "version": version, "priority": rng.choices(PRIORITIES, weights=(1, 2, 6, 4, 1))[0],
                   "keywords": " ".join(sorted(rng.sample(_KEYWORDS, rng.choice((0, 0, 1, 2))))),
                   "reporter": reporter, "owner": COMPONENTS[component], "status": "new", "resolution": "",
                   "cc": "", "description": description}
        t = Ticket(id=i, created=created, initial=initial)
        closed_ms = milestone in ("Aurora", "Borealis")
        final = rng.choices(STATUSES, weights=(3, 4, 2, 1, 4))[0] if not closed_ms else "closed"
        now, state = created, dict(initial)

        def later(days: float = 12.0) -> datetime:
            nonlocal now
            now = min(now + timedelta(seconds=int(3600 + rng.random() * 86400 * days)),
                      FROZEN_NOW - timedelta(hours=2, seconds=rng.randint(0, 86400 * 3)))
            if now <= created:
                now = created + timedelta(minutes=7)
            return now

        def change(author: str, comment: str = "", **fields: str) -> None:
            diff = {k: (state[k], v) for k, v in fields.items() if state[k] != v}
            if not diff and not comment:
                return
            when = later()
            if t.changes and when <= t.changes[-1].when:
                when = t.changes[-1].when + timedelta(minutes=3)
            state.update(fields)
            t.changes.append(Change(when, author, diff, comment))

        def comment_text() -> str:
            return rng.choice(_COMMENTS).format(version=version or "1.1", other=rng.choice(sorted(COMPONENTS)),
                                                id=i, t=thing)

        for _ in range(rng.choice((0, 1, 1, 2))):
            change(rng.choice(DEVELOPERS + REPORTERS), comment_text())
        if final in ("assigned", "accepted", "closed", "reopened"):
            dev = rng.choice(DEVELOPERS)
            change(COMPONENTS[component], rng.choice(("", f"{dev} knows this code best.")), owner=dev,
                   status="assigned")
            if final in ("accepted", "closed", "reopened") and rng.random() < 0.7:
                change(dev, "", status="accepted")
            if final in ("closed", "reopened"):
                res = rng.choices(RESOLUTIONS, weights=(8, 1, 1, 1, 1))[0]
                note = {"fixed": "Fixed in the {t}; see the branch ticket-{id}.", "invalid": "Not a bug.",
                        "wontfix": "We will not change this.", "duplicate": "Duplicate of an older ticket.",
                        "worksforme": "Cannot reproduce on the current version."}[res]
                change(dev, note.format(t=thing, id=i), status="closed", resolution=res)
                if final == "reopened":
                    change(reporter, "Still happens on the latest build.", status="reopened", resolution="")
        if final != "closed" and milestone == "Cirrus" and rng.random() < 0.15:
            change(rng.choice(DEVELOPERS), "Moved: not enough time left in this release.", milestone="Dorado")
        if rng.random() < 0.2:
            change(rng.choice(DEVELOPERS), "", priority=rng.choice(PRIORITIES[:3]))
        out.append(t)
    return out


def _wiki(rng: random.Random) -> dict[str, list[WikiVersion]]:
    t0 = datetime(2024, 9, 1, 10, tzinfo=UTC)
    comps = "\n".join(f" * [query:component={c}&status=!closed {c}] (owner: {o})" for c, o in COMPONENTS.items())
    ms = "\n".join(f" * [milestone:{m} {m}]: {d[2]}" for m, d in MILESTONES.items())
    start = (f"= Welcome to the {PROJECT} project =\n\n{PROJECT} is a self-hosted issue tracking service. "
             "This wiki holds our processes; the tracker holds the work.\n\n"
             "== Quick links ==\n * [wiki:ReleaseProcess Release process]\n * [wiki:CodingStyle Coding style]\n"
             " * [wiki:Onboarding Onboarding]\n * [wiki:Architecture Architecture]\n * [wiki:TeamContacts Team]\n"
             " * [wiki:MeetingNotes Meeting notes]\n * [/roadmap Roadmap] and [/report Reports]\n\n"
             f"== Milestones ==\n{ms}\n\n== Components ==\n{comps}\n\n"
             "== Open tickets of the current release ==\n"
             "[[TicketQuery(milestone=Cirrus,status=!closed,format=table,col=id|summary|owner|priority|status,"
             "order=priority,max=20)]]\n")
    pages: dict[str, list[str]] = {
        "WikiStart": [start.replace("== Open tickets", "== Open tickets (draft)"), start],
        "ReleaseProcess": [
            "= Release process =\n\n 1. Freeze the milestone one week before the due date.\n"
            " 1. Run the nightly job on the release branch.\n 1. Tag the release.\n",
            "= Release process =\n\n 1. Freeze the milestone one week before the due date.\n"
            " 1. Run the nightly job on the release branch.\n 1. Update the changelog.\n 1. Tag the release.\n"
            " 1. Announce it on the mailing list.\n"],
        "CodingStyle": [
            "= Coding style =\n\n * Python: PEP 8, line length 110.\n * JavaScript: the project ESLint config.\n",
            "= Coding style =\n\n * Python: PEP 8, line length 110.\n * JavaScript: the project ESLint config.\n"
            " * Every change comes with a test.\n"],
        "Onboarding": [
            "= Onboarding =\n\nWelcome! Read CodingStyle and ReleaseProcess, then pick a ticket with the keyword "
            "''easy''.\n"],
        "Architecture": [
            "= Architecture =\n\nThe backend is a set of workers around a SQL database; the frontend talks to "
            "the REST API.\n",
            "= Architecture =\n\nThe backend is a set of workers around a SQL database; the frontend and the "
            "mobile apps talk to the REST API. Search runs on its own index.\n"],
        "TeamContacts": ["= Team =\n\n" + "\n".join(f" * {n} ({u}): {r}" for u, (_, n, r) in USERS.items()) + "\n"],
        "MeetingNotes": [
            "= Meeting notes =\n\n== 2025-05-06 ==\n * Cirrus scope agreed.\n\n== 2025-05-20 ==\n"
            " * Two-factor login slips to the end of the release.\n"],
    }
    out: dict[str, list[WikiVersion]] = {}
    for k, (name, texts) in enumerate(pages.items()):
        when = t0 + timedelta(days=3 * k, hours=rng.randint(0, 8))
        versions = []
        for j, text in enumerate(texts):
            author = rng.choice(DEVELOPERS) if j or name != "WikiStart" else "admin"
            versions.append(WikiVersion(when, author, "Initial version" if j == 0 else "Updated", text))
            when += timedelta(days=rng.randint(20, 120), minutes=rng.randint(0, 600))
        out[name] = versions
    return out


@functools.lru_cache(maxsize=1)
def seed_data() -> SeedData:
    """The whole seed, built from :data:`SEED` (cached: the tasks ask for it often)."""
    rng = random.Random(SEED)
    return SeedData(tickets=_tickets(rng), wiki=_wiki(rng))
