"""The tracker's drift on the real served Trac: what it writes, that it is deterministic, that the
pages the templates walk through change while the site keeps working, and that a reset undoes it.

Setup runs once (a no-op when ``$MAG_SITES_HOME/tracker`` is already set up); the server is
started for the module and stopped after it when the module started it.
"""

from __future__ import annotations

import http.cookiejar
import re
import sqlite3
import time
import urllib.parse
import urllib.request
from datetime import datetime, timezone

import pytest

from mag_dataset.sites import manager, site, tasks_of
from mag_dataset.sites.tracker.data import FROZEN_NOW, N_TICKETS, USERS, seed_data
from mag_dataset.sites.tracker.drift import PER_LEVEL, window

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site-tracker")]

#: The tables a drift must leave alone: users, credentials, sessions and permissions.
ACCOUNT_TABLES = ("auth_cookie", "permission", "session", "session_attribute")


@pytest.fixture(scope="module")
def tracker():
    s = site("tracker")
    s.setup()
    started = manager.serve(s).started
    yield s
    if started:
        manager.stop(s)


def _tables(path) -> dict[str, list[str]]:
    """Every table's rows, sorted (the database's content, independent of row order)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: sorted(repr(r) for r in con.execute(f'SELECT * FROM "{t}"')) for t in names}
    finally:
        con.close()


def _us(d: datetime) -> int:
    return int(d.timestamp() * 1_000_000)


class _Client:
    """An HTTP client that logs in through TracAccountManager's form, as a task's user does."""

    def __init__(self, base: str, user: str | None = None, password: str | None = None):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        if user is not None:
            login = self.get("/login")
            token = re.search(r'name="__FORM_TOKEN" value="([^"]+)"', login)
            assert token, "no form token on /login"
            data = urllib.parse.urlencode({"__FORM_TOKEN": token.group(1), "username": user,
                                           "password": password, "referer": ""}).encode()
            with self.opener.open(self.base + "/login", data=data, timeout=30) as r:
                r.read()

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=30) as r:
            return r.read().decode()

    def text(self, path: str) -> str:
        """The page's visible text (no markup, scripts or form tokens), whitespace collapsed."""
        html = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", self.get(path))
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_drift_writes_what_its_counts_say(tracker):
    s = tracker
    s.reset()
    snap = s.snapshot_dir / "trac.db"
    seed = _tables(snap)
    start = time.monotonic()
    counts = s.drift(7, 1)
    assert time.monotonic() - start < 2.0
    assert counts == PER_LEVEL  # at level 1 every planned change finds its ticket, milestone or page
    q = s.query
    lo, hi = window()
    assert max(t.changed for t in seed_data().tickets) < lo < hi < FROZEN_NOW
    new_ids = [r[0] for r in q("SELECT id FROM ticket WHERE id > ? ORDER BY id", (N_TICKETS,))]
    assert new_ids == list(range(N_TICKETS + 1, N_TICKETS + 1 + counts["new_tickets"]))
    assert q("SELECT count(*) FROM ticket WHERE id > ? AND time = changetime AND status = 'new' AND time BETWEEN ? "
             "AND ?", (N_TICKETS, _us(lo), _us(hi))) == [(counts["new_tickets"],)]
    # every change of a ticket is one numbered comment row, dated inside the drift's window
    changes = q("SELECT ticket, time, author, oldvalue, newvalue FROM ticket_change WHERE field='comment' AND "
                "time >= ?", (_us(lo),))
    not_tickets = ("new_tickets", "milestone_due_moves", "wiki_edits")
    assert len(changes) == sum(n for k, n in counts.items() if k not in not_tickets)
    assert all(_us(lo) <= t < _us(hi) and a in USERS for _, t, a, _, _ in changes)
    assert sum(1 for *_, text in changes if text) >= counts["comments"]
    for tid, t, *_ in changes:  # the ticket's changetime follows its newest change
        assert q("SELECT changetime >= ? FROM ticket WHERE id=?", (t, tid)) == [(1,)]
    by_field = dict(q("SELECT field, count(*) FROM ticket_change WHERE time >= ? GROUP BY field", (_us(lo),)))
    assert by_field["milestone"] == counts["milestone_moves"]
    assert by_field["priority"] == counts["priority_changes"]
    assert by_field["keywords"] == counts["keyword_changes"]
    assert by_field["description"] == counts["description_edits"]
    assert by_field["owner"] >= counts["reassignments"] and by_field["status"] >= counts["status_changes"]
    # the milestone whose due date moved (no milestone added or removed); the wiki's new versions
    seeded_due = dict(q("SELECT name, due FROM milestone", db=snap))
    due = dict(q("SELECT name, due FROM milestone"))
    assert set(due) == set(seeded_due)
    assert len([n for n in seeded_due if due[n] != seeded_due[n]]) == counts["milestone_due_moves"]
    edits = q("SELECT name, author, text FROM wiki WHERE time >= ? ORDER BY time", (_us(lo),))
    assert len(edits) == counts["wiki_edits"] and edits[0][0] == "WikiStart" and "== News ==" in edits[0][2]
    assert "[wiki:ReleaseProcess Release process]" in edits[0][2]  # the quick links the templates click stay
    # Trac's cached milestones and ticket fields are invalidated for the running tracd
    gens = dict(q("SELECT key, generation FROM cache"))
    seeded_gens = dict(q("SELECT key, generation FROM cache", db=snap))
    for key in ("trac.ticket.model.MilestoneCache.milestones", "trac.ticket.api.TicketSystem.fields"):
        assert gens[key] > seeded_gens[key], key
    # nothing deleted, and no account touched
    after = _tables(s.databases()[0])
    for table in ACCOUNT_TABLES + ("component", "version", "enum", "report"):
        assert after[table] == seed[table], table
    for table in ("ticket", "ticket_change", "wiki", "milestone"):
        assert len(after[table]) >= len(seed[table])


def test_same_seed_same_database_other_seed_differs(tracker):
    s = tracker
    db = s.databases()[0]
    states = []
    for drift_seed in (7, 7, 8):
        s.reset()
        s.drift(drift_seed, 1)
        states.append(_tables(db))
    assert states[0] == states[1]
    assert states[2] != states[0]
    assert states[2]["ticket_change"] != states[0]["ticket_change"]
    s.reset()
    assert s.drift(7, 2) == {k: 2 * n for k, n in PER_LEVEL.items()}  # each level adds as much again
    with pytest.raises(ValueError):
        s.drift(7, 0)


def test_drifted_pages_differ_and_the_site_still_works(tracker):
    s = tracker
    s.reset()
    users = {cls.user for cls in tasks_of("tracker", cross_site=False).values()}
    assert {"admin", "alice", "bob", "carol", "erin"} <= users
    # start pages and pages the templates walk through, as the templates' users see them
    pages = [(None, "/"), ("alice", "/"), ("alice", "/query"), ("alice", "/roadmap"), ("alice", "/timeline"),
             ("alice", "/report/1"), ("admin", "/admin/ticket/milestones")]
    clients = {u: _Client(s.base_url, u, s.users[u] if u else None) for u in dict.fromkeys(u for u, _ in pages)}
    before = {(u, p): clients[u].text(p) for u, p in pages}
    assert "Welcome to the Lighthouse project" in before[(None, "/")]
    s.drift(7, 1)
    after = {(u, p): clients[u].text(p) for u, p in pages}
    changed = [k for k in pages if after[k] != before[k]]
    assert (None, "/") in changed and ("alice", "/") in changed  # every template starts on the front page
    assert len(changed) >= len(pages) - 1, f"unchanged: {[k for k in pages if k not in changed]}"
    assert "News" in after[("alice", "/")] and "#121" in after[("alice", "/")]
    # the moved due date is what the running tracd shows (its milestone cache was invalidated)
    due = {n: datetime.fromtimestamp(d / 1e6, timezone.utc).strftime("%Y-%m-%d")
           for n, d in s.query("SELECT name, due FROM milestone WHERE due > 0")}
    assert len(due) == 5 and all(f"{n} {d}" in after[("admin", "/admin/ticket/milestones")] for n, d in due.items())
    # the site is healthy, a user of each role logs in as the tasks do, and the seeded tickets still exist
    assert manager.status(s).healthy
    for user in ("admin", "carol", "erin"):
        assert f"logged in as {USERS[user][1]}" in _Client(s.base_url, user, s.users[user]).text("/")
    bob = _Client(s.base_url, "bob", s.users["bob"])
    assert "#121" in bob.text("/ticket/121")
    # the tickets the templates draw (seeds 0 and 1) still have their pages, with the seeded summaries
    drawn = {task.params["ticket"] for cls in tasks_of("tracker", cross_site=False).values() for task in (cls(n, site=s) for n in (0, 1))
             if "ticket" in task.params}
    assert len(drawn) >= 6
    for tid in sorted(drawn):
        assert seed_data().ticket(tid).final["summary"] in bob.text(f"/ticket/{tid}")
    # another seed's drift from the reset state is served as it is written, not from the milestones
    # tracd cached for the first one (the generations differ)
    s.reset()
    s.drift(8, 1)
    due8 = {n: datetime.fromtimestamp(d / 1e6, timezone.utc).strftime("%Y-%m-%d")
            for n, d in s.query("SELECT name, due FROM milestone WHERE due > 0")}
    assert due8 != due
    page = _Client(s.base_url, "admin", s.users["admin"]).text("/admin/ticket/milestones")
    assert all(f"{n} {d}" in page for n, d in due8.items())
    # a reset takes the database and the served pages back to the seed, caches included (and it
    # ends every login: the auth cookies are the seed's, none)
    s.reset()
    assert _tables(s.databases()[0]) == _tables(s.snapshot_dir / "trac.db")
    clients = {u: _Client(s.base_url, u, s.users[u] if u else None) for u in clients}
    assert {(u, p): clients[u].text(p) for u, p in pages} == before
