"""The ``forum`` site: Spirit (``django-spirit`` 0.14.3), a complete Django forum, served on 127.0.0.1.

WebArena's reddit-like site (Postmill) in a package that installs from PyPI in seconds: boards
(categories), topics, replies (comments), likes, favourites, private topics between users,
search (Whoosh), user profiles, and moderation (close, pin, move, remove) for moderators.

Why Spirit and not FlaskBB (issue 9 prefers FlaskBB "or another real forum if it cannot be made
robust"): FlaskBB's last release (2.0.2, 2018) pins its whole 2018 stack with ``==`` (Flask
1.0.2, Werkzeug 0.14, SQLAlchemy 1.2, Celery 4.0.2, Pillow 5.1, MarkupSafe 1.0...). Tried here
on Python 3.11, ``pip install flaskbb==2.0.2`` fails at once (MarkupSafe 1.0's setup.py imports
``setuptools.Feature``, removed from setuptools); an earlier trial of it only ran it
with ``--no-deps`` and a hand-relaxed set, an ``inspect`` shim and CDN assets removed. Spirit
0.14.3 is maintained, declares Django 4.2-5.x and a modern Pillow, installs with plain pip in
~20 s, runs on SQLite and has every feature the tasks need.

Layout under the site's home: ``venv/`` (pinned :data:`REQUIREMENTS`), ``app/`` (the Django
project copied from this package's ``app/`` folder: settings, URLs, the absolute-date filter,
search indexing of new posts in the request (Spirit only indexes from a task queue), ``load_seed.py``), ``db/forum.sqlite3`` (the whole state: Spirit's tables, sessions, the database
cache and rate-limit cache, djconfig), ``search/`` (the Whoosh index, snapshotted and restored next
to the database), ``snapshot/``. Served by waitress (a threaded WSGI server) with static files from
the project itself: no request leaves the machine (Spirit bundles Font Awesome and its JS).

Seed data: :mod:`mag_dataset.sites.forum.seed` (66 topics in 7 boards, 457 posts, 13 users:
one admin, two moderators, ten members; likes and private topics; absolute dates in 2024,
rendered as absolute dates by the project's date filter, so no label drifts).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Callable

from mag_dataset.sites.base import ServerCommand, Site, SiteError, make_venv
from mag_dataset.sites.forum import seed as seed_data

#: Exact versions installed into the site's venv (a resolved, tested set).
REQUIREMENTS = (
    "django-spirit==0.14.3", "Django==5.2.19", "asgiref==3.13.0", "sqlparse==0.6.1", "django-djconfig==0.11.0",
    "django-haystack==3.4.0", "django-infinite-scroll-pagination==1.3.0", "mistune==0.8.4", "olefile==0.47",
    "pillow==13.0.0", "tzdata==2026.6", "Whoosh==2.7.4", "packaging==26.4", "waitress==3.0.2",
)
_APP_SRC = Path(__file__).resolve().parent / "app"


class ForumSite(Site):
    """Spirit forum with seeded boards, topics, replies and users (see the module docstring)."""

    name = "forum"
    title = "Spirit forum (boards, topics, replies, private topics, moderation)"
    app = "django-spirit 0.14.3 (Django 5.2, SQLite, waitress)"
    default_port = 8474
    version = "5-" + seed_data.build().fingerprint()  # 5: own cookie names
    health_path = "/"
    users = {u.username: seed_data.PASSWORD for u in seed_data.USERS}
    login_path = "/user/login/"

    # ------------------------------------------------------------------ paths
    @property
    def venv(self) -> Path:
        return self.home / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def app_dir(self) -> Path:
        return self.home / "app"

    @property
    def search_dir(self) -> Path:
        return self.home / "search"

    def databases(self) -> list[Path]:
        return [self.home / "db" / "forum.sqlite3"]

    # ------------------------------------------------------------------ setup
    def install(self, log: Callable[[str], None]) -> None:
        marker = self.venv / "mag-requirements.txt"
        wanted = "\n".join(REQUIREMENTS) + "\n"
        if not (self.python.is_file() and marker.is_file() and marker.read_text() == wanted):
            log(f"forum: creating {self.venv} and installing {len(REQUIREMENTS)} pinned packages")
            make_venv(self.venv, list(REQUIREMENTS), "forum")
            marker.write_text(wanted)
        shutil.copytree(_APP_SRC, self.app_dir, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    def create_and_seed(self, log: Callable[[str], None]) -> dict[str, Any]:
        db = self.databases()[0]
        db.parent.mkdir(parents=True, exist_ok=True)
        for stale in (db, db.with_name(db.name + "-journal"), db.with_name(db.name + "-wal")):
            stale.unlink(missing_ok=True)
        shutil.rmtree(self.search_dir, ignore_errors=True)
        log("forum: migrate, cache tables, static files")
        self._manage("migrate", "--noinput", what="migrate its database")
        self._manage("createcachetable", what="create its cache tables")
        if not (self.app_dir / "static" / "spirit").is_dir():
            self._manage("collectstatic", "--noinput", what="collect its static files")
        seed = seed_data.build()
        seed_file = self.app_dir / "seed.json"
        seed_file.write_text(seed.to_json())
        log(f"forum: loading seed data {seed.fingerprint()}")
        self._run([str(self.python), "load_seed.py", str(seed_file), seed_data.PASSWORD], "load its seed data",
                  cwd=self.app_dir)
        log("forum: building the search index")
        self._manage("rebuild_index", "--noinput", what="build its search index")
        con = sqlite3.connect(db)
        try:
            q = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
            counts = {
                "users": q("select count(*) from auth_user"),
                "admins": q("select count(*) from spirit_user_userprofile where is_administrator"),
                "moderators": q("select count(*) from spirit_user_userprofile where is_moderator "
                                "and not is_administrator"),
                "boards": q("select count(*) from spirit_category_category where id != 1"),
                "topics": q("select count(*) from spirit_topic_topic where category_id != 1"),
                "posts": q("select count(*) from spirit_comment_comment c join spirit_topic_topic t "
                           "on c.topic_id = t.id where t.category_id != 1"),
                "likes": q("select count(*) from spirit_comment_like_commentlike"),
                "private_topics": q("select count(*) from spirit_topic_topic where category_id = 1"),
            }
        finally:
            con.close()
        return counts

    def take_snapshot(self) -> None:
        super().take_snapshot()
        snap = self.snapshot_dir / "search"
        shutil.rmtree(snap, ignore_errors=True)
        shutil.copytree(self.search_dir, snap)

    def after_reset(self) -> None:
        """Put the Whoosh index back as seeded: a topic created or edited in an episode is indexed."""
        snap = self.snapshot_dir / "search"
        if not snap.is_dir():
            raise SiteError("site forum: no snapshot of its search index; run `mag sites setup --site forum --force`")
        self.search_dir.mkdir(parents=True, exist_ok=True)
        keep = {p.name for p in snap.iterdir()}
        for p in self.search_dir.iterdir():
            if p.name not in keep:
                p.unlink()
        for p in snap.iterdir():
            dst = self.search_dir / p.name
            if not dst.is_file() or dst.stat().st_size != p.stat().st_size or dst.read_bytes() != p.read_bytes():
                shutil.copy2(p, dst)

    def apply_drift(self, rng: Any, level: int) -> dict[str, int]:
        """Other users' activity of ``level`` stretches of a few days (:mod:`mag_dataset.sites.forum.drift`)."""
        from mag_dataset.sites.forum import drift

        return drift.apply_drift(self, rng, level)

    # ------------------------------------------------------------------ serve
    def server_command(self) -> ServerCommand:
        return ServerCommand(
            argv=(str(self.venv / "bin" / "waitress-serve"), f"--listen=127.0.0.1:{self.port}", "--threads=8",
                  "--ident=forum", "magforum.wsgi:application"),
            env={"MAG_FORUM_HOME": str(self.home), "MAG_FORUM_URL": self.base_url + "/",
                 "DJANGO_SETTINGS_MODULE": "magforum.settings", "PYTHONDONTWRITEBYTECODE": "1"},
            cwd=str(self.app_dir))


    # ------------------------------------------------------------------ helpers
    def _env(self) -> dict[str, str]:
        return {**os.environ, "MAG_FORUM_HOME": str(self.home), "DJANGO_SETTINGS_MODULE": "magforum.settings",
                "PYTHONDONTWRITEBYTECODE": "1"}

    def _manage(self, *args: str, what: str) -> None:
        self._run([str(self.python), "manage.py", *args], what, cwd=self.app_dir)

    def _run(self, argv: list[str], what: str, cwd: Path | None = None) -> None:
        try:
            proc = subprocess.run(argv, cwd=cwd, env=self._env(), capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SiteError(f"site forum: could not {what}: {e}; run `mag sites setup --site forum --force`") from None
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip() and "WARNING: Location" not in ln]
            last = lines[-1].strip()[:300] if lines else f"exit status {proc.returncode}"
            raise SiteError(f"site forum: could not {what} ({last}); fix that and run "
                            f"`mag sites setup --site forum --force`")


SITE = ForumSite

__all__ = ["SITE", "ForumSite", "REQUIREMENTS"]
