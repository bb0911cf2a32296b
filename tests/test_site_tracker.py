"""The tracker site (Trac 1.6) end to end: setup, serve, real Chromium, every expert, reset, stop.

Setup runs once (a no-op when ``$MAG_SITES_HOME/tracker`` is already set up: CI sets the
sites up before the suite); the server is started for the module and stopped by the last test.
"""

from __future__ import annotations

import hashlib
import http.cookiejar
import re
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import expert_episode_judged, site_browser, site_expert_seeds

from mag_dataset.sites import manager, site, tasks_of
from mag_dataset.sites.tracker.data import N_TICKETS, seed_data

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-tracker")]

INTERACTIVE = "a, button, input, select, textarea, [role=button]"


@pytest.fixture(scope="module")
def tracker(chromium):
    s = site("tracker")
    info = s.setup()
    started = manager.serve(s).started
    yield s, info
    if started:
        manager.stop(s)


def _db_state(path) -> tuple[dict[str, int], str]:
    """Row count per table and a checksum of every row, in a stable order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        counts, h = {}, hashlib.sha256()
        for t in tables:
            rows = sorted(repr(r) for r in con.execute(f'SELECT * FROM "{t}"'))
            counts[t] = len(rows)
            h.update(t.encode())
            for r in rows:
                h.update(r.encode())
        return counts, h.hexdigest()
    finally:
        con.close()


def _live_group_members(pgid: int) -> list[int]:
    """PIDs of processes in a process group that are not zombies (a server started by an
    earlier command is not our child: once stopped it may linger as a zombie until init reaps it)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


class _Client:
    """A logged-in HTTP client for Trac's forms (form token + auth cookie)."""

    def __init__(self, base: str, user: str, password: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.post("/login", {"username": user, "password": password, "referer": ""})
        assert "logged in as" in self.get("/"), "login failed"

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=30) as r:
            return r.read().decode()

    def post(self, path: str, fields: dict[str, str]) -> str:
        page = self.get(path)
        token = re.search(r'name="__FORM_TOKEN" value="([^"]+)"', page)
        assert token, f"no form token on {path}"
        data = urllib.parse.urlencode({"__FORM_TOKEN": token.group(1), **fields}).encode()
        with self.opener.open(self.base + path, data=data, timeout=30) as r:
            return r.read().decode()


def test_setup_record_shows_seeded_counts(tracker):
    s, info = tracker
    seeded = info["seeded"]
    assert seeded["tickets"] == N_TICKETS == 120
    assert seeded["ticket_changes"] > 300 and seeded["milestones"] == 6 and seeded["components"] == 9
    assert seeded["users"] == 8 and seeded["wiki_pages"] >= 5 and seeded["wiki_versions"] > seeded["wiki_pages"]
    assert seeded["fingerprint"] == seed_data().fingerprint()
    assert s.setup() == info  # idempotent: already set up, nothing redone
    s.reset()  # the seeded database (a module of the site's xdist group that ran before may have changed it)
    assert s.query("SELECT count(*) FROM ticket") == [(120,)]
    assert s.query("SELECT count(DISTINCT status) FROM ticket") == [(5,)]
    # the seed's histories, with their fixed dates, are what Trac stored
    t = seed_data().ticket(7)
    rows = s.query("SELECT time, field, newvalue FROM ticket_change WHERE ticket=7 AND field='comment' ORDER BY time")
    assert [(r[0], r[2]) for r in rows] == [(int(c.when.timestamp() * 1e6), c.comment) for c in t.changes]
    assert s.query("SELECT count(*) FROM session_attribute WHERE name='password'") == [(8,)]


def test_home_page_is_rich_and_nothing_leaves_the_machine(tracker):
    s, _ = tracker
    external: list[str] = []
    with site_browser() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.on("request", lambda r: external.append(r.url)
                if (urllib.parse.urlsplit(r.url).hostname or "") not in ("127.0.0.1", "") else None)
        page.goto(s.base_url + "/")
        n_home = page.eval_on_selector_all(INTERACTIVE, "els => els.length")
        s.login(page, "alice")
        pages = {}
        for path in ("/query", "/ticket/7", "/roadmap", "/timeline", "/newticket", "/wiki/ReleaseProcess?action=edit"):
            page.goto(s.base_url + path)
            pages[path] = page.inner_text("body")
        browser.close()
    assert n_home >= 40, n_home
    assert external == []
    # absolute dates everywhere; the roadmap's relative "due in" runs on the frozen clock
    assert "ago" not in pages["/ticket/7"] and "Opened" in pages["/ticket/7"]
    assert re.search(r"Due in 4 weeks \(2025-06-30", pages["/roadmap"])
    assert "2025-06-02: Today" in pages["/timeline"]  # the seed's last day is "today" for tracd
    assert "Create New Ticket" in pages["/newticket"] and "logged in as Alice Nakamura" in pages["/query"]


TEMPLATES = sorted(tasks_of("tracker", cross_site=False))
#: Templates whose expert takes many steps (several tickets in one task): 40 at least.
LONG_TEMPLATES = {"sites.tracker.triage_tickets"}


def test_templates_cover_the_site():
    assert len(TEMPLATES) >= 25
    assert LONG_TEMPLATES <= set(TEMPLATES)
    classes = tasks_of("tracker", cross_site=False).values()
    kinds = [c.kind for c in classes]
    # WebArena's three kinds of check: the final page, the answer, the application's state
    assert kinds.count("navigation") >= 6 and kinds.count("information") >= 6, kinds
    assert sum(c.answer_task for c in classes) == kinds.count("information")
    assert {c.user for c in classes} >= {"admin", "alice", "erin"}  # every role is exercised


def test_noop_fails_every_check(tracker):
    """Finishing at once leaves the seeded state: every template's check fails on it (3 seeds each)."""
    from mag_dataset.sites.env import make_site_env

    s, _ = tracker
    s.reset()
    for task_id, cls in tasks_of("tracker", cross_site=False).items():
        for seed in (0, 1, 2):
            task = cls(seed, site=s)
            for answer in ("done", ""):
                ok, reason = task.check(answer)
                assert not ok, f"{task_id} seed {seed}: a no-op passes ({reason})"
    # and once through BrowserGym: reset, log in, finish at once -> judged unsuccessful
    env = make_site_env(TEMPLATES[0])
    try:
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step("send_msg_to_user('done')")
        assert terminated and reward == 0.0 and info["task_info"]["success"] is False, info["task_info"]
    finally:
        env.close()


@pytest.mark.parametrize("task_id", TEMPLATES)
def test_expert_succeeds_on_three_seeds(tracker, task_id, tmp_path):
    from mag_dataset.sites.env import make_site_env
    from mag_dataset.harness.recorder import SITE_MAX_STEPS

    env = make_site_env(task_id)
    try:
        for seed in site_expert_seeds(0):  # WebArena's evaluators fail a no-op and pass the expert
            r = expert_episode_judged(task_id, seed, env, tmp_path)
            assert env.unwrapped.task.external_requests == []
            n = len(r.episode.steps)
            assert (40 <= n <= SITE_MAX_STEPS) if task_id in LONG_TEMPLATES else (3 <= n <= 20), n
    finally:
        env.close()


def test_reset_restores_the_seed_as_the_server_sees_it(tracker):
    s, _ = tracker
    snap = s.snapshot_dir / "trac.db"
    seed_counts, seed_sum = _db_state(snap)
    s.reset()
    assert _db_state(s.databases()[0]) == (seed_counts, seed_sum)
    admin = _Client(s.base_url, "admin", s.users["admin"])
    # mutate through the app: a milestone (cached metadata), a ticket, a component
    admin.post("/admin/ticket/milestones", {"name": "Zenith", "add": "Add"})
    admin.post("/admin/ticket/components", {"name": "telemetry", "owner": "bob", "add": "Add"})
    admin.post("/newticket", {"field_summary": "Added by the reset test", "field_type": "task",
                              "field_component": "telemetry", "field_milestone": "Zenith", "action": "create",
                              "submit": "Create ticket"})
    assert "Zenith" in admin.get("/roadmap")
    assert s.query("SELECT count(*) FROM ticket") == [(121,)]
    assert _db_state(s.databases()[0])[1] != seed_sum
    s.reset()
    assert _db_state(s.databases()[0]) == (seed_counts, seed_sum)
    # what the running tracd serves is the seed again, caches included
    anon = urllib.request.urlopen(s.base_url + "/roadmap", timeout=30).read().decode()
    assert "Zenith" not in anon and "Cirrus" in anon
    newticket = urllib.request.urlopen(s.base_url + "/query?component=telemetry", timeout=30).read().decode()
    assert "Added by the reset test" not in newticket
    assert "telemetry" not in urllib.request.urlopen(s.base_url + "/query", timeout=30).read().decode()
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(s.base_url + "/ticket/121", timeout=30)
    assert gone.value.code == 404


def test_stop_leaves_no_process(tracker):
    s, _ = tracker
    st = manager.status(s)
    assert st.running and st.healthy
    assert manager.stop(s) is True
    assert _live_group_members(st.pid) == []
    assert not s.server_file.exists() and manager.status(s).running is False
    assert manager.port_free(s.port)
