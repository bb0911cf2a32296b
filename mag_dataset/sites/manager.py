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
id, which is the PID recorded in ``server.json``: never by a name.
"""

from __future__ import annotations

import contextlib
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

#: Seconds to wait for a started server to answer its health check.
START_TIMEOUT = 60.0
#: Seconds between SIGTERM and SIGKILL when stopping.
STOP_GRACE = 5.0


@dataclass(frozen=True)
class SiteStatus:
    """What ``mag sites status`` prints for one site."""

    name: str
    set_up: bool
    running: bool
    healthy: bool
    url: str | None
    pid: int | None
    detail: str = ""


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
        return True


def _read_server(site: Site) -> dict | None:
    try:
        return json.loads(site.server_file.read_text())
    except (OSError, ValueError):
        return None


def status(site: Site) -> SiteStatus:
    """Whether the site is set up, running (its recorded PID alive) and healthy."""
    info = _read_server(site)
    set_up = site.is_set_up()
    if info is None:
        return SiteStatus(site.name, set_up, False, False, None, None, "not running")
    pid, url = int(info["pid"]), str(info["url"])
    if not _alive(pid):
        return SiteStatus(site.name, set_up, False, False, url, pid, "stale server.json (process gone)")
    ok, detail = health(url + site.health_path)
    return SiteStatus(site.name, set_up, True, ok, url, pid, detail)


def serve(site: Site, timeout: float = START_TIMEOUT) -> SiteStatus:
    """Start the site's server in the background and wait until it is healthy.

    A site already running (its recorded PID alive) is left as it is.

    Raises:
        SiteError: the site is not set up, its port is taken, or it does not come up
            (the message names the site, the log file and the fix).
    """
    current = status(site)
    if current.running:
        return current
    site.server_file.unlink(missing_ok=True)
    if not site.is_set_up():
        raise SiteError(f"site {site.name} is not set up; run `mag sites setup --site {site.name}`")
    if not port_free(site.port):
        raise SiteError(f"site {site.name}: port {site.port} on 127.0.0.1 is in use; stop what uses it or "
                        f"choose another port with MAG_SITE_{site.name.upper()}_PORT=<port>")
    cmd = site.server_command()
    env = {**os.environ, **cmd.env}
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
    info = {"site": site.name, "pid": proc.pid, "port": site.port, "url": site.base_url,
            "started": time.time(), "log": str(site.log_file)}
    tmp = site.server_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=1) + "\n")
    tmp.replace(site.server_file)
    deadline = time.monotonic() + timeout
    detail = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            site.server_file.unlink(missing_ok=True)
            raise SiteError(f"site {site.name}: server exited with status {proc.returncode}; "
                            f"see {site.log_file} (last line: {_last_line(site.log_file)})")
        ok, detail = health(site.base_url + site.health_path, timeout=3.0)
        if ok:
            return status(site)
        time.sleep(0.25)
    stop(site)
    raise SiteError(f"site {site.name}: not healthy after {timeout:.0f}s ({detail}); see {site.log_file}")


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def stop(site: Site, grace: float = STOP_GRACE) -> bool:
    """Stop the site's server (its whole process group) by its recorded PID.

    Returns:
        True when a running server was stopped, False when none was running.
    """
    info = _read_server(site)
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
    site.server_file.unlink(missing_ok=True)
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
    # only zombies left? /proc tells (Linux); elsewhere assume alive
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return not Path("/proc/self").exists()


@contextlib.contextmanager
def served(sites: list[Site]) -> Iterator[list[SiteStatus]]:
    """Serve the sites that are not running; stop exactly those on exit (Ctrl-C included)."""
    started: list[Site] = []
    try:
        out = []
        for s in sites:
            if not status(s).running:
                started.append(s)
            out.append(serve(s))
        yield out
    finally:
        for s in started:
            stop(s)
