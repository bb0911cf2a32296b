"""The forum site (Spirit) end to end: set up, served on 127.0.0.1, every expert on 3 seeds, reset, stop.

Real parts only: Spirit in its own venv on SQLite, served by waitress, driven by the system
Chromium through BrowserGym (the recorder) and Playwright. The site is set up once
(``site.setup()`` is a no-op when ``mag sites setup`` already ran) and served for the module.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import expert_episode_judged, site_browser, site_expert_seeds

from mag_dataset.sites import site as get_site
from mag_dataset.sites import manager

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-forum")]

SEEDS = (0, 1, 2)  # no-op checks (cheap)
EXPERT_SEEDS = site_expert_seeds(0)


@pytest.fixture(scope="module")
def forum():
    s = get_site("forum")
    info = s.setup(print)
    started = manager.serve(s).started
    yield s, info
    if started:
        manager.stop(s)


def _tasks():
    from mag_dataset.sites.forum.tasks import TASKS

    return TASKS


def _db_digest(path: Path) -> dict[str, str]:
    """Per table: row count and a hash of every row (ordered), read-only."""
    con = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type = 'table' order by name")]
        out = {}
        for t in tables:
            rows = con.execute(f'select * from "{t}" order by 1').fetchall()
            out[t] = f"{len(rows)}:" + hashlib.sha256(repr(rows).encode()).hexdigest()[:16]
        return out
    finally:
        con.close()


def _dir_digest(path: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(path.iterdir()) if p.is_file()}


def test_setup_record_shows_seeded_counts(forum):
    from mag_dataset.sites.forum import seed

    s, info = forum
    data = seed.build()
    assert s.is_set_up() and info["version"] == s.version
    assert info["seeded"] == {
        "users": 13, "admins": 1, "moderators": 2, "boards": 7, "topics": len(data.topics),
        "posts": sum(len(t.posts) for t in data.topics), "likes": len(data.likes), "private_topics": len(data.private),
    }
    assert len(data.topics) >= 60 and sum(len(t.posts) for t in data.topics) >= 400
    # fixed dates: the seeded posts carry the seed's absolute dates, not the setup's clock
    snap = s.snapshot_dir / s.databases()[0].name
    newest = max(p.date for t in (*data.topics, *data.private) for p in t.posts)
    assert s.query("select max(date) from spirit_comment_comment", db=snap)[0][0].replace(" ", "T") == newest
    print(f"forum setup: {info['seconds']} s, seeded {info['seeded']}")


def test_home_page_has_40_interactive_elements_and_requests_stay_local(forum):
    s, _ = forum
    seen: list[str] = []
    with site_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.on("request", lambda r: seen.append(r.url))
        counts = {}
        for user in (None, "alice_w"):
            if user:
                s.login(page, user)
            page.goto(s.base_url + "/")
            page.wait_for_load_state("networkidle")
            counts[user] = page.eval_on_selector_all("a, button, input, select, textarea, [role=button]",
                                                     "els => els.length")
        page.goto(s.base_url + "/topic/5/")  # a topic page with its comments and the reply editor
        page.wait_for_load_state("networkidle")
    print(f"forum home page interactive elements: anonymous {counts[None]}, logged in {counts['alice_w']}")
    assert counts[None] >= 40 and counts["alice_w"] >= 40
    hosts = {urllib.parse.urlsplit(u).hostname for u in seen if not u.startswith(("data:", "blob:"))}
    assert hosts == {"127.0.0.1"}, f"requests left the machine: {sorted(h for h in hosts if h != '127.0.0.1')}"
    assert any("/static/spirit/" in u for u in seen)  # the page really loaded its local assets


def test_templates_cover_the_site():
    """WebArena's three kinds of task on the forum: answers, final pages and state changes."""
    ids = [t.get_task_id() for t in _tasks()]
    assert len(ids) >= 25 and len(set(ids)) == len(ids)
    assert all(i.startswith("sites.forum.") for i in ids)
    kinds = [t.kind for t in _tasks()]
    assert kinds.count("navigation") >= 6 and kinds.count("information") >= 6 and kinds.count("state") >= 10
    assert sum(t.answer_task for t in _tasks()) == kinds.count("information")


@pytest.mark.parametrize("task_cls", _tasks(), ids=lambda c: c.template)
def test_expert_succeeds_on_three_seeds(forum, task_cls, tmp_path):
    from mag_dataset.sites.env import make_site_env

    task_id = task_cls.get_task_id()
    env = make_site_env(task_id)
    try:
        for seed in EXPERT_SEEDS:  # WebArena's evaluators fail a no-op and pass the expert
            r = expert_episode_judged(task_id, seed, env, tmp_path)
            assert env.unwrapped.task.external_requests == []
            steps = len(r.episode.steps)
            assert 2 <= steps <= 30
            print(f"{task_id} seed {seed}: ok in {steps} steps, {r.seconds} s")
    finally:
        env.close()


def test_noop_fails_every_check(forum):
    """Finishing at once leaves the seeded state (or answers "done"): every check must fail."""
    from mag_dataset.actions import ActionType
    from mag_dataset.live.experts import Decision
    from mag_dataset.harness.recorder import record_episode

    s, _ = forum
    for cls in _tasks():
        for seed in SEEDS:
            task = cls(seed, site=s)
            s.reset()
            ok, reason = task.check("done")
            assert not ok, f"{cls.get_task_id()} seed {seed} passes a no-op: {reason}"
    # and once through BrowserGym, the way an agent's immediate finish is judged
    r = record_episode("sites.forum.reply_to_topic", 0, expert=lambda ob, memory: Decision(ActionType.FINISH,
                                                                                         answer="done"))
    assert not r.ok


def test_reset_restores_the_seeded_state_as_the_server_sees_it(forum):
    s, _ = forum
    db = s.databases()[0]
    s.reset()
    seeded, seeded_index = _db_digest(s.snapshot_dir / db.name), _dir_digest(s.snapshot_dir / "search")
    text = "A reply that the reset must remove"
    with site_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        s.login(page, "alice_w")
        page.goto(s.base_url + "/topic/5/")
        page.fill("textarea[name=comment]", text)
        with page.expect_navigation():
            page.click("input.comment__reply__actions__publish")
        page.goto(s.base_url + "/topic/publish/")  # a new topic is indexed for search too
        page.fill("input[name=title]", "Topic the reset must remove")
        page.select_option("select[name=category]", label="Gaming")
        page.fill("textarea[name=comment]", "Body of a topic the reset must remove.")
        with page.expect_navigation():
            page.click("input[type=submit][value=Publish]")
        assert text in page.goto(s.base_url + "/topic/5/").text()
        assert _db_digest(db) != seeded
        assert _dir_digest(s.search_dir) != seeded_index
        seconds = s.reset()
        assert _db_digest(db) == seeded
        assert _dir_digest(s.search_dir) == seeded_index
        # the running server sees the seeded state at once (no cache in process memory)
        assert text not in page.goto(s.base_url + "/topic/5/").text()
        found = page.goto(s.base_url + "/search/?q=reset+must+remove").text()
        assert "Topic the reset must remove" not in found
    print(f"forum reset: {seconds:.3f} s")


def test_stop_leaves_no_process(forum):
    s, _ = forum
    st = manager.status(s)
    assert st.running and st.healthy
    pid = st.pid
    t0 = time.monotonic()
    assert manager.stop(s) is True
    # manager.stop can return while the server is an unreaped zombie of this process (it exited, but
    # nobody waited for it yet): reap it, then nothing of its group may be left
    deadline = time.monotonic() + 5
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.05)
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert manager.port_free(s.port)
    assert not s.server_file.exists()
    print(f"forum stop: {time.monotonic() - t0:.2f} s")



def _mag(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mag_dataset.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_serves_at_once_give_one_server_and_one_stop_frees_the_port(forum):
    """The issue's race: two `mag sites serve --site forum` at the same moment used to leave an
    orphaned waitress that no `mag` command could see or stop. Under the site's lock, one starts it."""
    s, _ = forum
    manager.stop(s)  # the test run's own forum (tests/_site_env.py), served again below
    assert manager.port_free(s.port)
    serves_before = s.log_file.read_text().count(" serve ")
    procs = [_mag("sites", "serve", "--site", "forum") for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    lines = [out.strip().splitlines()[-1] for out, _ in outs]
    pids = {int(re.search(r"\(pid (\d+), HTTP 200\)", line).group(1)) for line in lines}
    assert len(pids) == 1, lines  # one server, both saw it healthy
    assert s.log_file.read_text().count(" serve ") == serves_before + 1  # the other never started one
    status = _mag("sites", "status", "--site", "forum").communicate(timeout=60)[0]
    assert re.search(rf"forum +yes +yes +yes .* {pids.pop()} +HTTP 200", status), status
    out, err = _mag("sites", "stop", "--site", "forum").communicate(timeout=60)
    assert out.strip() == "forum: stopped", (out, err)
    assert manager.port_free(s.port) and manager.listener_pid(s.port) is None
    manager.serve(s)  # for the module's later tests; the fixture stops it
