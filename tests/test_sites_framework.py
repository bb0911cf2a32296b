"""The site framework on a minimal real site: a SQLite database served by Python's http.server.

What every site package relies on: setup is idempotent and snapshots the databases, reset
restores the exact seeded rows (also while another connection is open), serve/status/stop
track the server by PID and leave no process behind, a taken port is one clear error naming
what holds it, two processes serving at once get one server (the site's lock), a server whose
record was lost is found again by its PID file or port, and the ``mag sites`` command speaks in
one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mag_dataset.sites import SITES, SiteError, site_names
from mag_dataset.sites.base import ServerCommand, Site
from mag_dataset.sites import base, manager


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MiniSite(Site):
    name = "mini"
    title = "a static folder and one SQLite file"
    app = "python -m http.server"
    default_port = 1

    def install(self, log):
        (self.home / "app").mkdir(parents=True, exist_ok=True)
        (self.home / "app" / "index.html").write_text("<a href='/x'>x</a>" * 40)

    def create_and_seed(self, log):
        db = self.databases()[0]
        db.parent.mkdir(parents=True, exist_ok=True)
        db.unlink(missing_ok=True)
        con = sqlite3.connect(db)
        con.execute("create table item (id integer primary key, name text)")
        con.executemany("insert into item (name) values (?)", [(f"item {i}",) for i in range(50)])
        con.commit()
        con.close()
        return {"items": 50}

    def databases(self):
        return [self.home / "db" / "mini.sqlite"]

    def server_command(self):
        return ServerCommand(argv=(sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(self.port)),
                             cwd=str(self.home / "app"))


@pytest.fixture
def mini(tmp_path: Path) -> MiniSite:
    s = MiniSite(home=tmp_path / "mini", port=_free_port())
    s.setup()
    yield s
    manager.stop(s)


def test_site_table_names_every_room():
    assert list(SITES) == ["shop", "tracker", "wiki", "forum"]
    assert set(site_names()) <= set(SITES)


def test_setup_is_idempotent_and_snapshots(mini: MiniSite):
    assert mini.is_set_up()
    first = mini.setup_file.read_text()
    assert mini.setup()["seeded"] == {"items": 50}
    assert mini.setup_file.read_text() == first  # not set up again
    assert (mini.snapshot_dir / "mini.sqlite").is_file()


def test_reset_restores_seeded_rows_under_an_open_connection(mini: MiniSite):
    db = mini.databases()[0]
    held = sqlite3.connect(db)  # a server's connection stays open across the reset
    held.execute("delete from item where id > 10")
    held.execute("insert into item (name) values ('added by an episode')")
    held.commit()
    assert mini.query("select count(*) from item") == [(11,)]
    mini.reset()
    assert held.execute("select count(*), max(name) from item").fetchone() == (50, "item 9")
    held.close()


def test_reset_without_snapshot_names_the_fix(tmp_path: Path):
    s = MiniSite(home=tmp_path / "never", port=_free_port())
    with pytest.raises(SiteError, match=r"site mini: no snapshot of mini.sqlite; run `mag sites setup --site mini`"):
        s.reset()


def test_serve_status_stop_leave_no_process(mini: MiniSite):
    st = manager.serve(mini)
    assert st.running and st.healthy and st.url == mini.base_url
    pid = st.pid
    assert manager.serve(mini).pid == pid  # already running: left as it is
    assert manager.stop(mini) is True
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert not mini.server_file.exists()
    assert manager.status(mini).running is False
    assert manager.stop(mini) is False


def test_port_in_use_is_one_line_naming_site_and_fix(mini: MiniSite):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", mini.port))
        blocker.listen()
        held_by = rf"held by another program: pid {os.getpid()}, `[^`]*python[^`]*`"
        with pytest.raises(SiteError, match=rf"site mini: port \d+ on 127.0.0.1 is {held_by}; .*MAG_SITE_MINI_PORT"):
            manager.serve(mini)
        # status names the program too, and stop leaves it alone
        assert re.search(held_by, manager.status(mini).detail), manager.status(mini)
        with pytest.raises(SiteError, match=rf"site mini was not running, but port \d+ on 127.0.0.1 is {held_by}; "
                                            r"it was left alone"):
            manager.stop(mini)
    assert not mini.server_file.exists()


def test_serve_before_setup_names_the_command(tmp_path: Path):
    s = MiniSite(home=tmp_path / "fresh", port=_free_port())
    with pytest.raises(SiteError, match=r"site mini is not set up; run `mag sites setup --site mini`"):
        manager.serve(s)


def test_server_that_dies_is_reported_with_its_log(mini: MiniSite, monkeypatch):
    monkeypatch.setattr(MiniSite, "server_command",
                        lambda self: ServerCommand(argv=(sys.executable, "-c", "raise SystemExit('boom: no db')")))
    with pytest.raises(SiteError, match=r"site mini: server exited with status 1; see .*server.log \(last line: boom: no db\)"):
        manager.serve(mini)
    assert not mini.server_file.exists()


def test_served_stops_only_what_it_started(mini: MiniSite, tmp_path: Path):
    other = MiniSite(home=tmp_path / "other", port=_free_port())
    other.setup()
    manager.serve(other)
    try:
        with manager.served([mini, other]) as statuses:
            assert all(s.healthy for s in statuses)
        assert manager.status(mini).running is False
        assert manager.status(other).running is True
    finally:
        manager.stop(other)


def test_running_url_when_not_served_names_the_command(mini: MiniSite):
    with pytest.raises(SiteError, match=r"site mini is not being served; run `mag sites serve --site mini`"):
        mini.running_url()


def test_cli_unknown_site_and_stray_pattern_are_one_line(capsys):
    from mag_dataset.cli import main

    assert main(["sites", "status", "--site", "nope"]) == 2
    assert "mag sites: error: unknown site(s) nope" in capsys.readouterr().err
    assert main(["sites", "serve", "sites.shop.*"]) == 2
    assert "takes no task patterns" in capsys.readouterr().err


# ---------------------------------------------------------------- concurrency and lost records
_CHILD = """
import json, sys, time
sys.path.insert(0, {tests!r})
from test_sites_framework import MiniSite
from mag_dataset.sites import manager
site = MiniSite(home={home!r}, port={port})
while time.time() < {at}:  # both children call at the same moment
    time.sleep(0.001)
st = manager.{action}(site)
print(json.dumps({{"pid": st.pid, "healthy": st.healthy, "started": st.started}}))
"""


def _at_once(site: MiniSite, action: str, n: int = 2) -> list[dict]:
    code = _CHILD.format(tests=str(Path(__file__).parent), home=str(site.home), port=site.port,
                         at=time.time() + 2.0, action=action)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def test_two_processes_serving_at_once_get_one_server(mini: MiniSite):
    first, second = _at_once(mini, "serve")
    assert first["healthy"] and second["healthy"]
    assert first["pid"] == second["pid"]  # one server, seen by both
    assert sorted([first["started"], second["started"]]) == [False, True]  # exactly one started it
    assert manager.status(mini).pid == first["pid"]
    assert mini.log_file.read_text().count(" serve ") == 1  # the loser never started a second one
    assert manager.stop(mini) is True
    assert manager.port_free(mini.port)
    assert not manager._group_alive(first["pid"])  # (a zombie until init reaps it: its parent exited)


# A threaded server whose leader thread exits first: /proc shows the process as a zombie
# ("Z") while its serving thread still holds the port. SIGTERM is ignored, so only a stop
# that waits for every thread (and then sends SIGKILL) frees the port.
_LEADER_EXITS_FIRST = """
import ctypes, functools, http.server, signal, sys, threading
signal.signal(signal.SIGTERM, signal.SIG_IGN)
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2])
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler)
threading.Thread(target=server.serve_forever).start()
ctypes.CDLL(None).pthread_exit(None)
"""


class LeaderExitsFirstSite(MiniSite):
    def server_command(self):
        return ServerCommand(argv=(sys.executable, "-c", _LEADER_EXITS_FIRST, str(self.port),
                                   str(self.home / "app")), cwd=str(self.home))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="threads are told apart by Linux's /proc")
def test_a_server_whose_leader_thread_exited_first_is_stopped_until_its_port_is_free(tmp_path: Path):
    s = LeaderExitsFirstSite(home=tmp_path / "mini", port=_free_port())
    s.setup()
    pid = manager.serve(s).pid
    try:
        assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # as it looks
        assert manager._alive(pid) and manager._group_alive(pid)  # but a thread still serves
        assert manager.status(s).healthy
        assert manager.stop(s, grace=1.0) is True
        assert manager.port_free(s.port) and not manager._group_alive(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, 9)


def test_a_server_whose_record_was_lost_is_found_and_stopped(mini: MiniSite):
    pid = manager.serve(mini).pid
    mini.server_file.unlink()  # the record is gone: the PID file still says who it is
    st = manager.status(mini)
    assert st.running and st.healthy and st.pid == pid
    assert mini.server_file.exists()  # the record is written again
    mini.server_file.unlink()
    mini.pid_file.unlink()  # both gone: the port's listener carries the site's marker
    st = manager.status(mini)
    assert st.running and st.pid == pid
    mini.server_file.unlink()
    mini.pid_file.unlink()
    assert manager.serve(mini).pid == pid  # not a second server (the port would be "in use")
    mini.server_file.unlink()
    mini.pid_file.unlink()
    assert manager.stop(mini) is True
    assert manager.port_free(mini.port) and not mini.pid_file.exists()


def test_a_server_of_another_home_is_not_adopted(mini: MiniSite, tmp_path: Path):
    twin = MiniSite(home=tmp_path / "twin", port=mini.port)  # same name and port, other home
    twin.setup()
    pid = manager.serve(mini).pid
    st = manager.status(twin)
    assert not st.running and f"pid {pid}" in st.detail and "a server of site mini@" in st.detail
    with pytest.raises(SiteError, match="it was left alone"):
        manager.stop(twin)
    assert manager.status(mini).running


def test_the_test_run_never_uses_the_users_sites():
    """The suite's sites have their own home and ports (tests/_site_env.py), so a user's own
    `mag sites serve` is never reset or stopped by it."""
    from _site_env import TEST_PORTS, TEST_SITES_HOME

    from mag_dataset.sites import site

    assert sorted(TEST_PORTS) == sorted(SITES)  # every site has a test port
    for name in SITES:
        s = site(name)
        assert s.home == TEST_SITES_HOME / name and s.port == TEST_PORTS[name] != s.default_port


# uv where it is on the machine (the test command installs it), pip always
@pytest.mark.parametrize("installer", ["pip"] + (["uv"] if base._uv() else []))
def test_a_site_venv_that_cannot_install_names_the_site_and_the_fix(tmp_path: Path, monkeypatch, installer):
    if installer == "pip":
        monkeypatch.setattr(base, "_uv", lambda: None)
    missing = tmp_path / "no-such-package"
    with pytest.raises(SiteError) as e:
        base.make_venv(tmp_path / "venv", [str(missing)], "shop")
    message = str(e.value)
    assert message.startswith(f"site shop: could not install its packages with {installer} (")
    assert message.endswith("then run `mag sites setup --site shop --force`")
    assert (tmp_path / "venv" / "bin" / "python").is_file()  # the venv itself was made


def test_every_template_has_a_kind_and_navigation_checks_read_the_final_page():
    """Each template says what its check reads (WebArena's three kinds); a navigation check is
    WebArena's url_match: the same path (base and trailing slash ignored), the named query
    parameters equal, others ignored."""
    from types import SimpleNamespace

    from mag_dataset.sites import tasks_of
    from mag_dataset.sites.task import TASK_KINDS, SiteTask

    for name in site_names():
        for task_id, cls in tasks_of(name).items():
            assert cls.kind in TASK_KINDS, task_id
            assert (cls.kind == "information") == cls.answer_task, task_id
    with pytest.raises(TypeError, match="kind is 'browse'"):
        type("Bad", (SiteTask,), {"kind": "browse"})
    nav = type("Nav", (SiteTask,), {"kind": "navigation"})
    answer = type("Answer", (SiteTask,), {"answer_task": True})
    assert type("SubNav", (nav,), {}).kind == "navigation"  # a kind set on a base class is inherited
    assert (answer.kind, type("Change", (answer,), {"answer_task": False}).kind) == ("information", "state")

    def ended_on(url: str | None, path: str, **query: str) -> tuple[bool, str]:
        task = SimpleNamespace(final_url=url, site=SimpleNamespace(name="forum", base_url="http://127.0.0.1:8080"))
        return SiteTask.on_page(task, path, **query)

    assert ended_on("http://127.0.0.1:8080/t/some-topic/12/", "/t/some-topic/12")[0]
    assert ended_on("http://127.0.0.1:8080/search?q=rain&page=2", "/search", q="rain")[0]
    assert ended_on("http://127.0.0.1:8080/wiki/R%C3%B8dby", "/wiki/Rødby")[0]
    ok, reason = ended_on("http://127.0.0.1:8080/search?q=snow", "/search", q="rain")
    assert not ok and "q is 'snow', not 'rain'" in reason
    ok, reason = ended_on("http://127.0.0.1:8080/", "/u/alice")
    assert not ok and reason == "ended on http://127.0.0.1:8080/, not on /u/alice"
    assert ended_on(None, "/u/alice") == (False, "no final page (expected /u/alice)")
    ok, reason = ended_on("http://127.0.0.1:9090/u/alice", "/u/alice")  # the same path on another site
    assert not ok and "not on the forum site (http://127.0.0.1:8080)" in reason
