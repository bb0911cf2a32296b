"""The issue tracker site: Trac 1.6 on SQLite with TracAccountManager's login form, served by tracd.

GitLab-like tasks of WebArena (tickets, queries, milestones, wiki, admin) on a real tracker.
Setup makes ``venv/`` (Trac, TracAccountManager, pinned), a Trac environment in ``app/``
(``trac-admin initenv``, then our ``trac.ini`` settings), and loads the seed of
:mod:`mag_dataset.sites.tracker.data` through Trac's own model API (``trac_seed.py`` run by the
venv's Python): 120 tickets with their histories, 6 milestones, 9 components, 4 versions,
8 users in 3 roles, 7 wiki pages with versions. Dates are absolute (ISO 8601, UTC) and
tracd runs on a clock that starts at :data:`~mag_dataset.sites.tracker.data.FROZEN_NOW`
(``trac_serve.py``), so the roadmap's "due in" and the timeline do not drift either.

Reset: the database is copied back from the snapshot; Trac's in-memory caches follow by
themselves because every cached object is checked against the generation numbers of the
``cache`` table, which the snapshot restores too. ``trac.ini`` is restored when an admin page
changed it (Trac re-reads it when its mtime changes).

Login: TracAccountManager's form (``/login``) with ``auth_init = false`` (otherwise its
first-login "initial setup" hands the permissions of ``authenticated`` to a placeholder
group and logged-in users silently lose them), hashes in the database (``SessionStore`` +
``HtDigestHashMethod``: deterministic).
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

from mag_dataset.sites.base import ServerCommand, Site, SiteError, make_venv
from mag_dataset.sites.tracker.data import FROZEN_NOW, USERS  # stdlib only: still a cheap import

HERE = Path(__file__).resolve().parent
#: What the venv gets (setuptools for Trac's pkg_resources-based plugin loading).
PACKAGES = ("Trac==1.6", "TracAccountManager==0.6.0", "Jinja2==3.1.6", "MarkupSafe==3.0.4", "setuptools<81")

#: trac.ini settings on top of ``initenv``'s defaults: section -> option -> value.
TRAC_INI: dict[str, dict[str, str]] = {
    "project": {"name": "Lighthouse", "descr": "Lighthouse: a self-hosted issue tracking service",
                "url": "", "footer": "Lighthouse project tracker (benchmark site, seeded data)"},
    "trac": {"default_date_format": "iso8601", "default_dateinfo_format": "absolute",
             "default_timezone": "UTC", "default_language": "en_US", "base_url": "",
             "auth_cookie_lifetime": "0", "check_auth_ip": "disabled"},
    "header_logo": {"src": "", "alt": "Lighthouse", "link": "/"},
    "logging": {"log_type": "none"},
    "notification": {"smtp_enabled": "disabled"},
    "ticket": {"restrict_owner": "enabled", "default_milestone": "", "default_version": ""},
    "timeline": {"default_daysback": "30"},
    "components": {
        "acct_mgr.*": "enabled",
        "acct_mgr.htfile.*": "disabled", "acct_mgr.http.*": "disabled", "acct_mgr.svnserve.*": "disabled",
        "acct_mgr.register.*": "disabled", "acct_mgr.notification.*": "disabled",
        "acct_mgr.pwhash.htpasswdhashmethod": "disabled",
        "trac.web.auth.loginmodule": "disabled",
        "trac.versioncontrol.web_ui.*": "disabled",
    },
    "account-manager": {"password_store": "SessionStore", "hash_method": "HtDigestHashMethod",
                        "db_htdigest_realm": "Lighthouse", "auth_init": "false", "verify_email": "false",
                        "reset_password": "false", "login_attempt_max_count": "0",
                        "persistent_sessions": "false", "refresh_passwd": "false"},
}


class TrackerSite(Site):
    """Trac 1.6 issue tracker (see the module docstring)."""

    name = "tracker"
    title = "Trac issue tracker (tickets, queries, roadmap, wiki, admin)"
    app = "Trac 1.6 + TracAccountManager 0.6 (SQLite)"
    default_port = 8472
    version = "1"
    health_path = "/"
    users = {user: password for user, (password, _, _) in USERS.items()}
    login_path = "/login"  # TracAccountManager's form

    # ------------------------------------------------------------------ locations
    @property
    def venv_python(self) -> Path:
        return self.home / "venv" / "bin" / "python"

    @property
    def env_dir(self) -> Path:
        """The Trac environment (``trac-admin initenv`` layout)."""
        return self.home / "app"

    def databases(self) -> list[Path]:
        return [self.env_dir / "db" / "trac.db"]

    # ------------------------------------------------------------------ life cycle
    def install(self, log: Callable[[str], None]) -> None:
        venv = self.home / "venv"
        if not self._venv_ok():
            log(f"tracker: creating {venv} and installing {' '.join(PACKAGES)}")
            make_venv(venv, list(PACKAGES), "tracker")
        if not self._venv_ok():
            raise SiteError(f"site tracker: Trac does not import in {venv}; remove it and run "
                            "`mag sites setup --site tracker --force`")

    def _venv_ok(self) -> bool:
        if not self.venv_python.is_file():
            return False
        r = subprocess.run([str(self.venv_python), "-c", "import trac, acct_mgr, pkg_resources; "
                            "assert trac.__version__ == '1.6'"], capture_output=True)
        return r.returncode == 0

    def _run(self, argv: list[str], what: str, **kw: Any) -> subprocess.CompletedProcess:
        r = subprocess.run(argv, capture_output=True, text=True, **kw)
        if r.returncode != 0:
            last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
            raise SiteError(f"site tracker: could not {what}: {last[0][:300]}; "
                            "run `mag sites setup --site tracker --force`")
        return r

    def create_and_seed(self, log: Callable[[str], None]) -> dict[str, Any]:
        from mag_dataset.sites.tracker.data import seed_data

        data = seed_data()
        shutil.rmtree(self.env_dir, ignore_errors=True)
        log("tracker: trac-admin initenv")
        self._run([str(self.venv_python), "-m", "trac.admin.console", str(self.env_dir), "initenv",
                   "Lighthouse", "sqlite:db/trac.db"], "create the Trac environment (trac-admin initenv)")
        self._write_ini()
        seed_file = self.home / "seed.json"
        seed_file.write_text(json.dumps(data.to_json(), indent=1, sort_keys=True))
        log(f"tracker: loading the seed ({len(data.tickets)} tickets)")
        r = self._run([str(self.venv_python), str(HERE / "trac_seed.py"), str(self.env_dir), str(seed_file)],
                      "load the seed data into Trac")
        counts = json.loads(r.stdout.strip().splitlines()[-1])
        counts["fingerprint"] = data.fingerprint()
        shutil.copy2(self.env_dir / "conf" / "trac.ini", self.home / "trac.ini.seed")
        return counts

    def _write_ini(self) -> None:
        path = self.env_dir / "conf" / "trac.ini"
        cp = configparser.RawConfigParser()
        cp.optionxform = str  # type: ignore[assignment,method-assign]
        cp.read(path, encoding="utf-8")
        for section, options in TRAC_INI.items():
            if not cp.has_section(section):
                cp.add_section(section)
            for k, v in options.items():
                cp.set(section, k, v)
        with open(path, "w", encoding="utf-8") as f:
            f.write("# -*- coding: utf-8 -*-\n\n")
            cp.write(f)

    def server_command(self) -> ServerCommand:
        return ServerCommand(
            argv=(str(self.venv_python), str(HERE / "trac_serve.py"), FROZEN_NOW.isoformat(), "-s",
                  "--hostname", "127.0.0.1", "--port", str(self.port), str(self.env_dir)),
            env={"PYTHONDONTWRITEBYTECODE": "1", "TZ": "UTC"}, cwd=str(self.home))

    def apply_drift(self, rng: Any, level: int) -> dict[str, int]:
        """A few days of the other members' activity per level: :func:`mag_dataset.sites.tracker.drift.apply_drift`."""
        from mag_dataset.sites.tracker.drift import apply_drift

        return apply_drift(self, rng, level)

    def after_reset(self) -> None:
        """Put ``trac.ini`` back if an admin page changed it (Trac reloads it by mtime)."""
        seed_ini = self.home / "trac.ini.seed"
        live = self.env_dir / "conf" / "trac.ini"
        if seed_ini.is_file() and (not live.is_file() or live.read_bytes() != seed_ini.read_bytes()):
            tmp = live.with_suffix(".tmp")
            shutil.copy2(seed_ini, tmp)
            os.replace(tmp, live)
            os.utime(live)



SITE = TrackerSite
