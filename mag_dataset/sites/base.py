"""What every benchmark site and every site task is: the two base classes of :mod:`mag_dataset.sites`.

A **site** is a real open-source web application (a shop, an issue tracker, a wiki, a
forum) that the package installs, seeds and serves on 127.0.0.1 by itself, the way
WebArena's sites are used, but from the package registries in minutes: one command sets it up
from nothing and nothing is configured by hand, so any machine can rebuild it. Its life cycle:

* :meth:`Site.setup` installs what it needs (its own virtual environment under the site's
  home folder, or Debian packages), creates its SQLite database(s), loads deterministic seed
  data (code with a seed, fixed dates) and takes a **snapshot** of every database.
* :meth:`Site.server_command` says how to serve it; :mod:`mag_dataset.sites.manager`
  starts it in the background, checks its health and stops it by PID.
* :meth:`Site.reset` returns the exact seeded state in well under a second by copying each
  snapshot back into its live database with SQLite's online backup API (safe while the
  server holds connections), then :meth:`Site.after_reset` for anything else (caches).
* :meth:`Site.drift` moves a reset site on, the way a real one moves between a demonstration
  and its re-rendering: other users' activity (new orders, posts, tickets, revisions),
  changed statuses, prices and counters, seeded so that the same seed gives the same
  databases. ``mag recapture --drift SEED`` replays episodes on a drifted site: the path by
  which WebMRE's stale screenshots arose.

A **task** (:class:`mag_dataset.sites.task.SiteTask`) is a BrowserGym ``AbstractBrowserTask``
(set up, validate, tear down, as BrowserGym's own tasks are):
``setup`` resets the site, logs the task's user in and opens the start page, returning the
goal; ``validate`` reads the application's state (its database) once the agent finishes
(success is what the application stored, not what the agent's last page shows, as in
WebArena's program-based evaluators); ``teardown`` has nothing to undo
because the next ``setup`` resets. Parameters are drawn from the seed data by
``random.Random(f"{task_id}:{seed}")``. Every task ships its expert (:meth:`SiteTask.expert`,
so that a test can run each task's own solution against its own check), which decides the next action from the observation only (bids and page
text), like the MiniWoB++ experts in :mod:`mag_dataset.live.experts`.

Where things live: ``$MAG_SITES_HOME`` (default ``~/.cache/mag_dataset/sites``) holds one
folder per site: ``venv/``, ``app/``, ``db/``, ``snapshot/``, ``setup.json`` (what setup
made, with the seed-data fingerprint), ``server.json`` (pid, port, url of the running
server) and ``server.log``.
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

import filelock

#: Seconds a serve, stop, reset or status waits for another process holding the site's lock
#: (a serve holds it while the server starts: up to a minute).
LOCK_TIMEOUT = 300.0

#: Viewport every site task uses (CSS px). Screenshots are taken at device scale 1.
VIEWPORT: dict[str, int] = {"width": 1280, "height": 720}


class SiteError(RuntimeError):
    """A site cannot be set up, served or reset; the message names the site and the fix."""


class _SiteLock(filelock.FileLock):
    """A :class:`filelock.FileLock` whose time-out is a :class:`SiteError` naming the site."""

    def __init__(self, path: str, *, site_name: str, **kwargs: Any):
        super().__init__(path, **kwargs)
        self._site_name = site_name

    def __enter__(self) -> "_SiteLock":
        try:
            self.acquire()
        except filelock.Timeout:
            raise SiteError(f"site {self._site_name}: another command has held its lock ({self.lock_file}) for "
                            f"{LOCK_TIMEOUT:.0f}s; wait for it to finish") from None
        return self


def sites_home() -> Path:
    """Root folder of the sites' installs: ``$MAG_SITES_HOME`` or ``~/.cache/mag_dataset/sites``."""
    env = os.environ.get("MAG_SITES_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mag_dataset" / "sites"


@dataclass(frozen=True)
class ServerCommand:
    """How to run a site's server in the foreground (the manager backgrounds it).

    Attributes:
        argv: the command line; it must listen on 127.0.0.1 at the given port.
        env: extra environment variables.
        cwd: working folder.
    """

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


class Site(ABC):
    """One real web application. Subclasses fill the class variables and the abstract methods.

    Attributes:
        name: short site name, used in task ids (``sites.<name>.<template>``) and on the CLI.
        title: human-readable name (``"Oscar shop + staff dashboard"``).
        app: the application and version it runs (``"django-oscar 4.2.1"``).
        default_port: port on 127.0.0.1 unless ``MAG_SITE_<NAME>_PORT`` says otherwise.
        version: bump when setup or seed data change; a stale install is set up again.
        health_path: path that must answer HTTP 200 (after redirects) when the site is up.
        users: login name -> password of the seeded users tasks log in as.
        login_path: the application's login form (None: nobody logs in), and
        login_fields: the names of its user and password fields (:meth:`login`).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    app: ClassVar[str]
    default_port: ClassVar[int]
    version: ClassVar[str] = "1"
    health_path: ClassVar[str] = "/"
    users: ClassVar[dict[str, str]] = {}
    login_path: ClassVar[str | None] = None
    login_fields: ClassVar[tuple[str, str]] = ("username", "password")

    def __init__(self, home: Path | None = None, port: int | None = None):
        self.home = Path(home) if home is not None else sites_home() / self.name
        env_port = os.environ.get(f"MAG_SITE_{self.name.upper()}_PORT")
        self.port = int(port if port is not None else env_port or self.default_port)

    # ------------------------------------------------------------------ locations
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of this site (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def setup_file(self) -> Path:
        return self.home / "setup.json"

    @property
    def server_file(self) -> Path:
        return self.home / "server.json"

    @property
    def pid_file(self) -> Path:
        """``server.pid``: the server's process-group id, a second witness beside ``server.json``."""
        return self.home / "server.pid"

    @property
    def lock_file(self) -> Path:
        return self.home / "server.lock"

    def lock(self) -> filelock.FileLock:
        """The site's lock: serve, stop, reset and status hold it, so two processes never race.

        One instance per lock file in a process (re-entrant), so a call that holds it can call
        another that takes it.

        Raises:
            SiteError: (on entering) when another process held it for :data:`LOCK_TIMEOUT` seconds.
        """
        self.home.mkdir(parents=True, exist_ok=True)
        return _SiteLock(str(self.lock_file), timeout=LOCK_TIMEOUT, is_singleton=True, site_name=self.name)

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    @property
    def snapshot_dir(self) -> Path:
        return self.home / "snapshot"

    # ------------------------------------------------------------------ life cycle
    @abstractmethod
    def install(self, log: Callable[[str], None]) -> None:
        """Install the application (a venv under ``self.home / "venv"``, or check system packages).

        Raises:
            SiteError: naming the missing package and the command that installs it.
        """

    @abstractmethod
    def create_and_seed(self, log: Callable[[str], None]) -> dict[str, Any]:
        """Create the database(s) from nothing and load the deterministic seed data.

        Returns:
            Counts of what was seeded (``{"products": 300, ...}``), stored in ``setup.json``.
        """

    @abstractmethod
    def databases(self) -> list[Path]:
        """The live SQLite files that hold the site's whole state (snapshotted and reset)."""

    @abstractmethod
    def server_command(self) -> ServerCommand:
        """How to serve the site on ``127.0.0.1:self.port`` in the foreground."""

    def login(self, page: Any, user: str) -> None:
        """Log ``user`` in in the browser context of a Playwright ``page``: the site's login form
        (:attr:`login_path`) submitted by :func:`form_login`; nothing to do without one.

        Raises:
            SiteError: an unknown user, or a login the application refused.
        """
        if self.login_path is None:
            return
        if user not in self.users:
            raise SiteError(f"site {self.name}: unknown user {user!r}; users: {', '.join(self.users)}")
        user_field, password_field = self.login_fields
        if not form_login(page, self.running_url() + self.login_path,
                          {user_field: user, password_field: self.users[user]}):
            raise SiteError(f"site {self.name}: login as {user!r} failed; "
                            f"run `mag sites setup --site {self.name} --force`")

    def after_reset(self) -> None:
        """Anything beyond the databases a reset must restore (a search index, a cache)."""

    # ------------------------------------------------------------------ provided
    def drift(self, seed: int, level: int = 1) -> dict[str, int]:
        """Move the live site on from its seeded state (call on a reset site).

        Writes the site's databases with the lock held (:meth:`apply_drift`, drawn with
        ``random.Random(f"{name}:drift:{seed}:{level}")``), then :meth:`after_reset` (caches).
        The same seed and level on a reset site give the same databases, so a recapture on a
        drifted site is reproducible.

        Args:
            seed: which drift.
            level: how far the site moved on (1: a few days of other users' activity; each
                level adds as much again).

        Returns:
            What changed: a count per kind of change (``{"orders": 4, "price_changes": 6}``).
        """
        import random

        if level < 1:
            raise ValueError(f"drift level must be at least 1, got {level}")
        with self.lock():
            counts = self.apply_drift(random.Random(f"{self.name}:drift:{seed}:{level}"), level)
            self.after_reset()
        return counts

    def apply_drift(self, rng: Any, level: int) -> dict[str, int]:
        """Write the drift into the live databases (see :meth:`drift`); ``rng`` is a
        ``random.Random``. Sites without one raise :class:`SiteError`."""
        raise SiteError(f"site {self.name} has no drift")

    def is_set_up(self) -> bool:
        """Whether setup finished for this site's current ``version``."""
        try:
            info = json.loads(self.setup_file.read_text())
        except (OSError, ValueError):
            return False
        return info.get("version") == self.version and all(
            (self.snapshot_dir / p.name).is_file() for p in self.databases())

    def setup(self, log: Callable[[str], None] = lambda m: None, force: bool = False) -> dict[str, Any]:
        """Install, create, seed and snapshot the site; a no-op when already set up (unless ``force``).

        Returns:
            The ``setup.json`` record (version, seconds, seeded counts).
        """
        if self.is_set_up() and not force:
            return json.loads(self.setup_file.read_text())
        start = time.monotonic()
        self.home.mkdir(parents=True, exist_ok=True)
        self.setup_file.unlink(missing_ok=True)
        self.install(log)
        counts = self.create_and_seed(log)
        self.take_snapshot()
        info = {"site": self.name, "app": self.app, "version": self.version,
                "seconds": round(time.monotonic() - start, 1), "seeded": counts}
        tmp = self.setup_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
        tmp.replace(self.setup_file)
        return info

    def take_snapshot(self) -> None:
        """Copy every live database into ``snapshot/`` (SQLite backup API: consistent copies)."""
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        for db in self.databases():
            _sqlite_copy(db, self.snapshot_dir / db.name)

    def reset(self) -> float:
        """Restore the seeded state; returns the seconds it took.

        Raises:
            SiteError: when the site was never set up.
        """
        start = time.monotonic()
        with self.lock():
            for db in self.databases():
                snap = self.snapshot_dir / db.name
                if not snap.is_file():
                    raise SiteError(f"site {self.name}: no snapshot of {db.name}; "
                                    f"run `mag sites setup --site {self.name}`")
                _sqlite_copy(snap, db)
            self.after_reset()
        return time.monotonic() - start

    def query(self, sql: str, params: tuple[Any, ...] = (), db: Path | None = None) -> list[tuple[Any, ...]]:
        """Read the application's state: run a read-only query on its (first) database."""
        path = db or self.databases()[0]
        uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
        con = sqlite3.connect(uri, uri=True, timeout=10)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def running_url(self) -> str:
        """Base URL of the running server (from ``server.json``).

        Raises:
            SiteError: when the site is not being served.
        """
        try:
            info = json.loads(self.server_file.read_text())
        except (OSError, ValueError):
            raise SiteError(f"site {self.name} is not being served; run `mag sites serve --site {self.name}`") from None
        return str(info["url"])


class _FormParser(html.parser.HTMLParser):
    """The forms of a page: action, method and the controls a browser would submit."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        #: per form: ``action``, ``fields`` (name -> value) and ``submit``, the first submit
        #: control (the one Enter sends; sent as a field only when it has a name)
        self.forms: list[dict[str, Any]] = []
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append({"action": a.get("action", ""), "fields": {}, "submit": None})
            return
        if not self.forms:
            return
        form, name = self.forms[-1], a.get("name")
        kind = a.get("type", "submit" if tag == "button" else "text").lower()
        if tag == "select":
            self._select = name
        elif tag == "option" and self._select and ("selected" in a or self._select not in form["fields"]):
            form["fields"][self._select] = a.get("value", "")
        elif tag in ("input", "button") and kind in ("submit", "image"):
            if form["submit"] is None:
                form["submit"] = (name, a.get("value", ""))
        elif tag == "input" and name and (kind not in ("checkbox", "radio") or "checked" in a) \
                and kind not in ("button", "reset", "file"):
            form["fields"][name] = a.get("value", "on" if kind in ("checkbox", "radio") else "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None


def form_login(page: Any, url: str, values: dict[str, str]) -> bool:
    """Submit a login form the way the browser would, over HTTP in the page's browser context.

    GETs ``url``, finds the form holding every field of ``values``, keeps its other controls
    (hidden tokens, checked boxes, the first submit button) and POSTs it with ``values`` through
    ``page.context.request``, which shares the context's cookies: the session the application
    sets is the page's, as after filling the form in the page, without rendering the login page
    and the page it redirects to (two page loads, a second or more each on a busy machine).
    The page itself and its history are left as they were.

    Returns:
        Whether the application accepted the login: all four sites answer a good one with a
        redirect away from the form and a bad one with the form again (HTTP 200).

    Raises:
        SiteError: the page has no such form, or a request failed.
    """
    request = page.context.request
    try:
        resp = request.get(url)
        parser = _FormParser()
        parser.feed(resp.text())
    except Exception as e:  # noqa: BLE001 - Playwright's errors carry no common base worth importing
        raise SiteError(f"could not load the login form at {url}: {e}") from None
    form = next((f for f in parser.forms if values.keys() <= f["fields"].keys()), None)
    if form is None:
        raise SiteError(f"no login form with fields {sorted(values)} at {resp.url}")
    submit = form["submit"] if form["submit"] and form["submit"][0] else None
    data = form["fields"] | values | dict([submit] if submit else [])
    action = urllib.parse.urljoin(resp.url, form["action"] or resp.url)
    try:
        done = request.post(action, form=data, max_redirects=0)
    except Exception as e:  # noqa: BLE001
        raise SiteError(f"could not submit the login form to {action}: {e}") from None
    target = urllib.parse.urljoin(action, done.headers.get("location", ""))
    return 300 <= done.status < 400 and urllib.parse.urlsplit(target).path != urllib.parse.urlsplit(action).path


def make_venv(venv: Path, packages: list[str], site: str) -> Path:
    """Create ``venv`` afresh and install ``packages`` (exact pins) into it; returns its python.

    uv installs them when it is on the machine (the test command installs it: the shop's
    Django + Oscar take ~5 s instead of ~40 s with pip); pip otherwise. Either way the
    packages' bytecode is compiled at install, as pip does by default, so the servers (run
    with ``PYTHONDONTWRITEBYTECODE``) do not compile Django on every start.

    Raises:
        SiteError: naming the site, the step that failed and the fix.
    """
    fix = f"check that the package index can be reached, then run `mag sites setup --site {site} --force`"
    shutil.rmtree(venv, ignore_errors=True)
    python = venv / "bin" / "python"
    uv = _uv()
    # pip (and, on Python 3.11, setuptools) go in either way: the venv holds the same packages
    # whichever installer ran.
    steps = [([sys.executable, "-m", "venv", str(venv)],
              "create its virtual environment", "install python3-venv (apt-get install -y python3-venv)")]
    if uv:
        steps.append(([uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python), *packages],
                      "install its packages with uv", fix))
    else:
        steps.append(([str(python), "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check",
                       *packages], "install its packages with pip", fix))
    for argv, what, hint in steps:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SiteError(f"site {site}: could not {what} ({e}); {hint}") from None
        if r.returncode != 0:
            last = [ln for ln in (r.stderr or r.stdout).splitlines() if ln.strip()][-1:] or ["no output"]
            raise SiteError(f"site {site}: could not {what} ({last[0][:300]}); {hint}")
    return python


def _uv() -> str | None:
    """The uv executable beside this Python (a venv that installed it) or on PATH; None when absent."""
    beside = Path(sys.executable).parent / "uv"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("uv")


def _sqlite_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    s = sqlite3.connect(f"file:{urllib.parse.quote(str(src))}?mode=ro", uri=True, timeout=30)
    d = sqlite3.connect(str(dst), timeout=30)
    try:
        s.backup(d)
    finally:
        d.close()
        s.close()
