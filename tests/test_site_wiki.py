"""The wiki site (MediaWiki 1.39, SQLite, php -S) end to end: setup, serve, real Chromium, every expert, reset, stop.

Setup runs once (a no-op when ``$MAG_SITES_HOME/wiki`` is already set up: CI sets the sites up
before the suite); the server is started for the module and stopped by the last test.
"""

from __future__ import annotations

import hashlib
import http.cookiejar
import json
import os
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import expert_episode_judged, site_browser, site_expert_seeds

from mag_dataset.sites import manager, site, tasks_of
from mag_dataset.sites.wiki import seed as wseed

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-wiki")]

INTERACTIVE = "a, button, input, select, textarea, [role=button]"


@pytest.fixture(scope="module")
def wiki(chromium):
    s = site("wiki")
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


class _Api:
    """A logged-in client of MediaWiki's action API (login token, clientlogin, CSRF token)."""

    def __init__(self, base: str, user: str, password: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        token = self.call(action="query", meta="tokens", type="login")["query"]["tokens"]["logintoken"]
        r = self.call(post=True, action="clientlogin", username=user, password=password, logintoken=token,
                      loginreturnurl=base + "/")
        assert r["clientlogin"]["status"] == "PASS", r
        self.csrf = self.call(action="query", meta="tokens")["query"]["tokens"]["csrftoken"]

    def call(self, post: bool = False, **params: str) -> dict:
        params = {**params, "format": "json"}
        data = urllib.parse.urlencode(params).encode()
        url = self.base + "/api.php" + ("" if post else "?" + data.decode())
        with self.opener.open(url, data=data if post else None, timeout=60) as r:
            return json.loads(r.read().decode())


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_setup_record_shows_seeded_counts(wiki):
    s, info = wiki
    seeded = info["seeded"]
    assert seeded["articles"] == 64 and seeded["db_content_pages"] == 65  # + the Main Page
    assert seeded["revisions"] >= 250 and seeded["users"] == 8 and seeded["categories"] >= 20
    assert seeded["fingerprint"] == wseed.world().fingerprint()
    assert s.setup() == info  # idempotent: already set up, nothing redone
    # the seed's histories, with their fixed dates and users, are what MediaWiki stored
    w = wseed.world()
    for title in ("Quengate", w.of_kind("person")[0].title, w.of_kind("species")[-1].title):
        art = w.articles[title]
        revs = s.revisions(title)
        assert [(u, ts) for _, u, _, ts in revs] == [
            (r.user, r.timestamp.replace("-", "").replace("T", "").replace(":", "").rstrip("Z"))
            for r in art.revisions]
        assert [c for _, _, c, _ in revs] == [r.comment for r in art.revisions]
        assert s.page_text(title).rstrip() == art.text.rstrip()
    assert s.categories_of("Quengate") == {"Cities in Valdoria", "Capital cities"}
    groups = dict(s.query("SELECT u.user_name, GROUP_CONCAT(g.ug_group) FROM user u JOIN user_groups g "
                          "ON g.ug_user = u.user_id GROUP BY u.user_name"))
    assert set(groups) == {"Admin", "Petra Lund"} and "sysop" in groups["Admin"] and groups["Petra Lund"] == "sysop"
    # install-time rows run on the frozen setup clock: nothing dated by the day setup ran
    assert s.query("SELECT MIN(user_registration), MAX(user_registration) FROM user") == [
        ("20230101000000", "20230101000000")]
    # settings and data live under the site home; nothing under /etc or /var/lib is used
    assert s.settings_file.is_file() and all(p.parent == s.db_dir for p in s.databases())


def test_home_page_is_rich_and_nothing_leaves_the_machine(wiki):
    s, _ = wiki
    external: list[str] = []
    with site_browser() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.on("request", lambda r: external.append(r.url)
                if (urllib.parse.urlsplit(r.url).hostname or "") not in ("127.0.0.1", "") else None)
        page.goto(s.base_url + "/")
        page.wait_for_load_state("networkidle")
        n_home = page.eval_on_selector_all(INTERACTIVE, "els => els.length")
        assert page.url.endswith("/wiki/Main_Page")
        s.login(page, "Marta Kell")
        texts = {}
        for path in ("/index.php?title=Quengate&action=history", "/wiki/Special:RecentChanges",
                     "/index.php?title=Quengate&action=edit", "/wiki/Category:People"):
            page.goto(s.base_url + path)
            page.wait_for_load_state("networkidle")
            texts[path] = page.inner_text("body")
        browser.close()
    assert n_home >= 40, n_home
    assert external == []
    history = texts["/index.php?title=Quengate&action=history"]
    assert "10 February 2023" in history and "Marta Kell" in history  # absolute, seeded dates
    assert "Main Page" in texts["/wiki/Special:RecentChanges"]  # seeded edits stay in recent changes
    assert "Editing Quengate" in texts["/index.php?title=Quengate&action=edit"]  # WikiEditor's toolbar, all local
    assert "Special characters" in texts["/index.php?title=Quengate&action=edit"]
    # the category page lists its members with MediaWiki's count line, as the database has them
    # (20 seeded people; the line itself is shown on failure)
    members = s.query("SELECT COUNT(*) FROM categorylinks WHERE cl_to = 'People' AND cl_type = 'page'")[0][0]
    people = texts["/wiki/Category:People"]
    count_line = next((ln for ln in people.splitlines() if "in this category" in ln), people[:400])
    assert f"The following {members} pages are in this category, out of {members} total." in people, count_line
    assert members >= 20


TEMPLATES = sorted(tasks_of("wiki", cross_site=False))


def test_templates_cover_the_site():
    assert len(TEMPLATES) >= 25
    classes = tasks_of("wiki", cross_site=False).values()
    assert sum(c.answer_task for c in classes) >= 6
    kinds = [c.kind for c in classes]
    assert kinds.count("navigation") >= 6 and kinds.count("information") >= 6, kinds
    assert {c.user for c in classes} >= {"Admin", "Marta Kell", None}  # sysop, editor and reader roles


@pytest.mark.parametrize("task_id", TEMPLATES)
def test_noop_fails_and_expert_succeeds_on_three_seeds(wiki, task_id, tmp_path):
    from mag_dataset.sites.env import make_site_env

    env = make_site_env(task_id)
    try:
        for seed in site_expert_seeds(0):  # the task's check and WebArena's evaluators fail a no-op, pass the expert
            r = expert_episode_judged(task_id, seed, env, tmp_path, finish_noop=seed == 0)
            assert env.unwrapped.task.external_requests == []
            assert 3 <= len(r.episode.steps) <= 15
    finally:
        env.close()


def test_reset_restores_the_seed_as_the_server_sees_it(wiki):
    s, _ = wiki
    snaps = [s.snapshot_dir / p.name for p in s.databases()]
    seed_state = [_db_state(p) for p in snaps]
    s.reset()
    assert [_db_state(p) for p in s.databases()] == seed_state
    api = _Api(s.base_url, "Petra Lund", s.users["Petra Lund"])
    # mutate through the app: a new page, an edit, a watch, a move
    api.call(post=True, action="edit", title="Reset probe", text="Made by the reset test. [[Category:Probes]]",
             token=api.csrf)
    api.call(post=True, action="edit", title="Quengate", appendtext="\nProbe sentence.", token=api.csrf)
    api.call(post=True, action="watch", titles="Marcrest", token=api.csrf)
    moved = api.call(post=True, action="move", to="Rosport (moved)", token=api.csrf, **{"from": "Rosport"})
    assert "move" in moved, moved
    assert _get(s.base_url + "/wiki/Reset_probe")[0] == 200
    assert s.query("SELECT COUNT(*) FROM page WHERE page_title = 'Reset_probe'") == [(1,)]
    assert _db_state(s.databases()[0])[1] != seed_state[0][1]
    s.reset()
    assert [_db_state(p) for p in s.databases()] == seed_state
    # what the running server shows is the seed again (no cache outside the SQLite files)
    assert _get(s.base_url + "/wiki/Reset_probe")[0] == 404
    status, raw = _get(s.base_url + "/index.php?title=Quengate&action=raw")
    assert status == 200 and "Probe sentence" not in raw and raw.rstrip() == wseed.world().articles["Quengate"].text.rstrip()
    assert _get(s.base_url + "/wiki/Rosport")[0] == 200
    assert "Probes" not in _get(s.base_url + "/wiki/Special:Categories")[1]


def test_stop_leaves_no_process(wiki):
    s, _ = wiki
    st = manager.status(s)
    assert st.running and st.healthy
    assert manager.stop(s) is True
    # php -S forks its workers: once the group is killed they are zombies until init reaps them
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(st.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.killpg(st.pid, 0)
    assert not s.server_file.exists() and manager.status(s).running is False
    assert manager.port_free(s.port)
