"""The site framework on a minimal real site: a SQLite database served by Python's http.server.

What every site room relies on: setup is idempotent and snapshots the databases, reset
restores the exact seeded rows (also while another connection is open), serve/status/stop
track the server by PID and leave no process behind, a taken port is one clear error, and
the ``mag sites`` command speaks in one line.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import sys
from pathlib import Path

import pytest

from mag_dataset.sites import SITES, SiteError, site_names
from mag_dataset.sites.base import ServerCommand, Site
from mag_dataset.sites import manager


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
    seconds = mini.reset()
    assert seconds < 1.0
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
        with pytest.raises(SiteError, match=r"site mini: port \d+ on 127.0.0.1 is in use; .*MAG_SITE_MINI_PORT"):
            manager.serve(mini)
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
