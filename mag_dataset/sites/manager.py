"""Serve, check and stop sites: background processes tracked by PID, on 127.0.0.1 only.

Usage::

    from mag_dataset.sites import site
    from mag_dataset.sites.manager import serve, status, stop, served
    s = site("tracker")
    serve(s)                 # starts it in its own process group, waits for health, writes server.json
    status(s)                # SiteStatus(name, url, pid, healthy, ...)
    stop(s)                  # SIGTERM to the process group, SIGKILL after a grace period
    with served([s]):        # serve what is not running, stop (only) those on exit or Ctrl-C
        ...

A server is started with ``start_new_session=True`` so that it and its children (PHP's
built-in server forks workers) form one process group, stopped together by that group's
id, which is the PID recorded in ``server.json`` and ``server.pid``: never by a name.

Shared state gets a lock, not a hope: ``serve``, ``stop``, ``status`` and
:meth:`Site.reset <mag_dataset.sites.base.Site.reset>` hold the site's file lock
(``server.lock``) around check-then-act, so two processes (two xdist workers, two shells)
serving one site at once get one server and both see it healthy. Every server carries
``MAG_SITE_SERVER=<name>@<home>`` in its environment: a server whose record was lost is found
again by its PID file or by the process listening on its port, and a port held by any other
program is named (pid and command line) instead of failing obscurely.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from mag_dataset.sites.base import Site, SiteError

#: Environment variable that marks a server process as a given site's (``name@home``): how a
#: server whose record was lost is told apart from another program holding the port.
MARKER_ENV = "MAG_SITE_SERVER"
#: Seconds to wait for a started server to answer its health check.
START_TIMEOUT = 60.0
#: Seconds between SIGTERM and SIGKILL when stopping.
STOP_GRACE = 5.0


@dataclass(frozen=True)
class SiteStatus:
    """What ``mag sites status`` prints for one site.

    Attributes:
        started: whether the call that returned this status started the server (``serve`` only);
            a caller stops exactly what it started.
    """

    name: str
    set_up: bool
    running: bool
    healthy: bool
    url: str | None
    pid: int | None
    detail: str = ""
    started: bool = False


def port_free(port: int) -> bool:
    """Whether nothing listens on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def health(url: str, timeout: float = 5.0) -> tuple[bool, str]:
    """``(ok, detail)``: whether ``url`` answers HTTP 2xx (after redirects)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - 127.0.0.1 only
            return 200 <= resp.status < 300, f"HTTP {resp.status}"
    except urllib.error.HTTPError as e:
        return False, f"HTTP {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return False, str(getattr(e, "reason", e))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        pass
    if not Path("/proc/self").exists():
        return True  # no /proc to tell a zombie by (not Linux)
    # so does anyone else's zombie (an orphan that init has not reaped yet), but only once
    # every thread has exited: a leader thread that exits first shows "Z" while the threads
    # left still hold the process's files (a threaded server's listening socket)
    return any(_task_states(pid))


def _task_states(pid: int) -> list[str]:
    """The states (``/proc/<pid>/task/<tid>/stat``) of the process's threads that are not zombies."""
    live = []
    for entry in Path(f"/proc/{pid}/task").glob("[0-9]*/stat"):
        try:
            state = entry.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            live.append(state)
    return live


def _read_server(site: Site) -> dict | None:
    try:
        return json.loads(site.server_file.read_text())
    except (OSError, ValueError):
        return None


def _write_server(site: Site, pid: int, started: float | None = None) -> dict:
    """Write the server record (``server.json``) and the PID file (``server.pid``) atomically."""
    info = {"site": site.name, "pid": pid, "port": site.port, "url": site.base_url,
            "started": started if started is not None else time.time(), "log": str(site.log_file)}
    for path, text in ((site.pid_file, f"{pid}\n"), (site.server_file, json.dumps(info, indent=1) + "\n")):
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return info


def _forget_server(site: Site) -> None:
    site.server_file.unlink(missing_ok=True)
    site.pid_file.unlink(missing_ok=True)


# ---------------------------------------------------------------- finding a server without its record
def _marker(site: Site) -> str:
    """The value of :data:`MARKER_ENV` in the environment of every server this site's manager starts."""
    return f"{site.name}@{site.home.resolve()}"


def _environ_marker(pid: int) -> str | None:
    """The :data:`MARKER_ENV` of a running process (Linux ``/proc``), or None."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = MARKER_ENV.encode() + b"="
    for item in raw.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix):].decode(errors="replace")
    return None


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(raw.decode(errors="replace").split("\0")).strip()[:160] or "?"


def listener_pid(port: int) -> int | None:
    """PID of a process that listens on TCP ``port`` (any local address), from Linux ``/proc``; None if unknown."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(fd_dir.parent.name)
        except OSError:
            continue
    return None


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _recover(site: Site) -> dict | None:
    """The site's server when its record is missing or stale: found by the PID file, then by the port.

    A process counts as the site's server only when its environment carries this site's
    marker, so a server is never adopted by another site or another ``MAG_SITES_HOME``.
    A recovered server gets its record back.
    """
    candidates = []
    with contextlib.suppress(OSError, ValueError):
        candidates.append(int(site.pid_file.read_text().strip()))
    holder = listener_pid(site.port)
    if holder is not None:
        candidates.append(holder)
    for pid in candidates:
        if _alive(pid) and _environ_marker(pid) == _marker(site):
            group = _group_of(pid) or pid
            return _write_server(site, group)
    return None


def _foreign(site: Site) -> str:
    """A sentence naming what holds the site's port, when it is not the site's own server ('' if free)."""
    if port_free(site.port):
        return ""
    holder = listener_pid(site.port)
    if holder is None:
        return f"port {site.port} on 127.0.0.1 is in use by a process this user cannot see"
    owner = _environ_marker(holder)
    whose = f" (a server of site {owner})" if owner else ""
    return f"port {site.port} on 127.0.0.1 is held by another program{whose}: pid {holder}, `{_cmdline(holder)}`"


# ---------------------------------------------------------------- the four actions, each under the site's lock
def status(site: Site) -> SiteStatus:
    """Whether the site is set up, running (its server process alive) and healthy.

    A server whose record (``server.json``) was lost is found again by its PID file or its
    port; a port held by another program is named in ``detail``.
    """
    with site.lock():
        return _status(site)


def _status(site: Site) -> SiteStatus:
    info = _read_server(site)
    set_up = site.is_set_up()
    if info is None or not _alive(int(info["pid"])):
        stale = info is not None
        info = _recover(site)
        if info is None:
            if stale:
                _forget_server(site)
            detail = _foreign(site) or ("stale server.json (process gone)" if stale else "not running")
            return SiteStatus(site.name, set_up, False, False, None, None, detail)
    pid, url = int(info["pid"]), str(info["url"])
    ok, detail = health(url + site.health_path)
    return SiteStatus(site.name, set_up, True, ok, url, pid, detail)


def serve(site: Site, timeout: float = START_TIMEOUT) -> SiteStatus:
    """Start the site's server in the background and wait until it is healthy.

    A site already running is left as it is. Callers in other processes wait on the site's
    lock, so two at once get one server and both see it healthy; ``started`` in the
    returned status says which call started it.

    Raises:
        SiteError: the site is not set up, its port is taken by another program, or it does
            not come up (the message names the site, the log file and the fix).
    """
    with site.lock():
        current = _status(site)
        if current.running:
            return current
        if not site.is_set_up():
            raise SiteError(f"site {site.name} is not set up; run `mag sites setup --site {site.name}`")
        foreign = _foreign(site)
        if foreign:
            raise SiteError(f"site {site.name}: {foreign}; stop it or choose another port with "
                            f"MAG_SITE_{site.name.upper()}_PORT=<port>")
        proc = _start(site)
        deadline = time.monotonic() + timeout
        detail = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                _forget_server(site)
                raise SiteError(f"site {site.name}: server exited with status {proc.returncode}; "
                                f"see {site.log_file} (last line: {_last_line(site.log_file)})")
            ok, detail = health(site.base_url + site.health_path, timeout=3.0)
            if ok:
                return dataclasses.replace(_status(site), started=True)
            time.sleep(0.25)
        _stop(site)
        raise SiteError(f"site {site.name}: not healthy after {timeout:.0f}s ({detail}); see {site.log_file}")


def _start(site: Site) -> subprocess.Popen:
    cmd = site.server_command()
    env = {**os.environ, **cmd.env, MARKER_ENV: _marker(site)}
    site.home.mkdir(parents=True, exist_ok=True)
    with open(site.log_file, "ab") as log:
        log.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} serve {' '.join(cmd.argv)}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(list(cmd.argv), cwd=cmd.cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            raise SiteError(f"site {site.name}: cannot start {cmd.argv[0]}: {e}; run `mag sites setup --site "
                            f"{site.name} --force`") from None
    _write_server(site, proc.pid)
    return proc


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def stop(site: Site, grace: float = STOP_GRACE) -> bool:
    """Stop the site's server (its whole process group), found by its record, PID file or port.

    Returns:
        True when a running server was stopped, False when none was running.

    Raises:
        SiteError: another program holds the site's port (it is named, and left alone).
    """
    with site.lock():
        stopped = _stop(site, grace)
        if not stopped:
            foreign = _foreign(site)
            if foreign:
                raise SiteError(f"site {site.name} was not running, but {foreign}; it was left alone")
        return stopped


def _stop(site: Site, grace: float = STOP_GRACE) -> bool:
    info = _read_server(site)
    if info is None or not _alive(int(info["pid"])):
        info = _recover(site) or info
    if info is None:
        return False
    pid = int(info["pid"])
    stopped = False
    if _alive(pid):
        stopped = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(pid):
            time.sleep(0.1)
        if _group_alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and _group_alive(pid):
                time.sleep(0.1)
    _reap(pid)
    _forget_server(site)
    return stopped


def _reap(pid: int, timeout: float = 2.0) -> None:
    """Collect the exit status of a server this process started, so no zombie keeps its group id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # not our child (started by another command): init reaps it
        if done:
            return
        time.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        while True:  # reap our own exited children so they do not linger as zombies
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
            if pid == 0:
                break
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # only zombies left? /proc tells (Linux); elsewhere assume alive. Every thread is looked
    # at: a process whose leader thread exited first shows "Z" while its other threads still
    # hold its files, the listening socket among them
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and (fields[0] != "Z" or _task_states(int(entry.parent.name))):
            return True
    return not Path("/proc/self").exists()


@contextlib.contextmanager
def served(sites: list[Site]) -> Iterator[list[SiteStatus]]:
    """Serve the sites that are not running; stop exactly those on exit (Ctrl-C included)."""
    started: list[Site] = []
    try:
        out = []
        for s in sites:
            st = serve(s)
            if st.started:
                started.append(s)
            out.append(st)
        yield out
    finally:
        for s in started:
            stop(s)
