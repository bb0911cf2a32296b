"""The forum's drift (:mod:`mag_dataset.sites.forum.drift`) on the real served site.

Real parts only: Spirit served by waitress on 127.0.0.1 (conftest's module-scoped ``forum``),
its SQLite database read back with queries and compared with the seeded snapshot, and the
start pages of task templates screenshotted in the system Chromium before and after the drift
(the pixel rule ``mag unify`` flags stale steps with).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import site_browser

from mag_dataset.sites import manager

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-forum")]

PRIVATE = 1


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


def _live_and_seeded(s) -> sqlite3.Connection:
    """The live database (read-only) with the seeded snapshot attached as ``snap``."""
    db = s.databases()[0]
    con = sqlite3.connect(f"file:{urllib.parse.quote(str(db))}?mode=ro", uri=True)
    con.execute("attach database ? as snap", (f"file:{urllib.parse.quote(str(s.snapshot_dir / db.name))}?mode=ro",))
    return con


def test_drift_writes_what_its_counts_say(forum):
    from mag_dataset.sites.forum import drift, seed

    s = forum
    s.reset()
    t0 = time.monotonic()
    counts = s.drift(0, 1)
    seconds = time.monotonic() - t0
    print(f"forum drift(0, 1): {seconds:.2f} s, {counts}")
    assert seconds < 2.0
    assert {k: counts[k] for k in drift.PER_LEVEL} == drift.PER_LEVEL
    assert counts["view_counters"] >= 10 and counts["notifications"] >= 10

    con = _live_and_seeded(s)
    try:
        def diff(sql: str) -> int:  # the same count, live minus seeded
            return con.execute(sql.format(db="main")).fetchone()[0] - con.execute(sql.format(db="snap")).fetchone()[0]

        q = lambda sql, *p: con.execute(sql, p).fetchall()  # noqa: E731
        assert diff("select count(*) from {db}.auth_user") == counts["new_users"]
        assert diff("select count(*) from {db}.spirit_user_userprofile") == counts["new_users"]
        assert diff(f"select count(*) from {{db}}.spirit_topic_topic where category_id != {PRIVATE}") == counts["new_topics"]
        assert diff(f"select count(*) from {{db}}.spirit_topic_topic where category_id = {PRIVATE}") == counts["private_topics"]
        assert diff(f"select count(*) from {{db}}.spirit_comment_comment c join {{db}}.spirit_topic_topic t on "
                    f"t.id = c.topic_id where t.category_id != {PRIVATE} and c.action = 0") \
            == counts["new_topics"] + counts["replies"]  # each new topic's opening post, and the replies
        assert diff("select count(*) from {db}.spirit_comment_like_commentlike") == counts["likes"]
        assert diff("select sum(likes_count) from {db}.spirit_comment_comment") == counts["likes"]
        assert diff("select count(*) from {db}.spirit_topic_topic where is_pinned") == counts["pinned"]
        assert diff("select count(*) from {db}.spirit_comment_comment where action = 4") == counts["pinned"]
        assert diff("select count(*) from {db}.spirit_topic_topic where is_closed") == counts["closed"]
        assert diff("select count(*) from {db}.spirit_comment_comment where action = 2") == counts["closed"]
        assert diff("select count(*) from {db}.spirit_comment_comment where modified_count > 0") == counts["edits"]
        assert diff("select count(*) from {db}.spirit_comment_history_commenthistory") == 2 * counts["edits"]
        assert q("select count(*) from spirit_topic_topic t join snap.spirit_topic_topic o on o.id = t.id "
                 "where t.view_count != o.view_count")[0][0] == counts["view_counters"]
        assert q("select count(*) from spirit_topic_notification_topicnotification where not is_read")[0][0] \
            == counts["notifications"]
        # the topic lists' counters follow: every topic's comment count is its posts, none went back in time
        assert q(f"select count(*) from spirit_topic_topic t where category_id != {PRIVATE} and comment_count != "
                 "(select count(*) from spirit_comment_comment c where c.topic_id = t.id and c.action = 0)") == [(0,)]
        assert q("select count(*) from spirit_topic_topic t join snap.spirit_topic_topic o on o.id = t.id "
                 "where t.last_active < o.last_active") == [(0,)]

        # nothing a task needs changed: seeded users and profiles, every seeded topic where it was
        for table in ("auth_user", "spirit_user_userprofile"):
            assert q(f"select * from {table} where id <= 13 except select * from snap.{table}") == []
        topics = q(f"select t.title, c.title, u.username from spirit_topic_topic t join spirit_category_category c "
                   f"on c.id = t.category_id join auth_user u on u.id = t.user_id where t.category_id != {PRIVATE} "
                   "and not t.is_removed")
        data = seed.build()
        assert {(t.title, t.board, t.author) for t in data.topics} <= set(topics)
        assert len({t[0] for t in topics}) == len(topics)  # no title twice
        # only other users act: no post or like by a user some template logs in as
        from mag_dataset.sites.forum.tasks import TASKS

        task_users = sorted({c.user for c in TASKS if c.user})
        marks = ",".join("?" * len(task_users))
        assert q(f"select count(*) from spirit_comment_comment c join auth_user u on u.id = c.user_id where c.id > "
                 f"(select max(id) from snap.spirit_comment_comment) and u.username in ({marks})", *task_users) == [(0,)]
        assert q(f"select count(*) from spirit_comment_like_commentlike l join auth_user u on u.id = l.user_id where "
                 f"l.id > (select max(id) from snap.spirit_comment_like_commentlike) and u.username in ({marks})",
                 *task_users) == [(0,)]
        # fixed dates after the seed's last post, no wall clock; the search needle stays unique
        new = q("select date, comment from spirit_comment_comment where id > (select max(id) from "
                "snap.spirit_comment_comment)")
        assert len(new) == counts["new_topics"] + counts["replies"] + counts["private_topics"] + counts["pinned"] \
            + counts["closed"]
        newest_seeded = q("select max(date) from snap.spirit_comment_comment")[0][0]
        assert all(newest_seeded < d <= "2024-05-01" for d, _ in new)
        assert not any("method" in text for _, text in new)
    finally:
        con.close()


def test_drift_actors_are_no_template_user():
    """The drift's bystanders must stay users no template logs in as (tasks.py may gain templates)."""
    from mag_dataset.sites.forum import drift, seed
    from mag_dataset.sites.forum.tasks import TASKS

    task_users = {c.user for c in TASKS if c.user}
    assert len(TASKS) >= 10 and task_users
    assert not task_users & set(drift.BYSTANDERS) and drift.MODERATOR not in task_users
    assert set(drift.BYSTANDERS) <= {u.username for u in seed.USERS}


def test_same_seed_gives_the_same_rows_another_seed_others(forum):
    s = forum
    db = s.databases()[0]
    digests = []
    for seed in (3, 3, 4):
        s.reset()
        s.drift(seed, 1)
        digests.append(_db_digest(db))
    assert digests[0] == digests[1]
    changed = sorted(t for t in digests[0] if digests[0][t] != digests[2][t])
    assert {"spirit_comment_comment", "spirit_topic_topic", "auth_user"} <= set(changed), changed


def test_each_level_adds_as_much_again(forum):
    from mag_dataset.sites.forum import drift

    s = forum
    s.reset()
    counts = s.drift(0, 2)
    assert {k: counts[k] for k in drift.PER_LEVEL} == {k: 2 * v for k, v in drift.PER_LEVEL.items()}
    with pytest.raises(ValueError):
        s.drift(0, 0)


def test_start_pages_differ_and_logins_still_work(forum):
    """Each template's start page (the index) and the board it walks to, before and after drift(0, 1)."""
    from mag_dataset.harness.unify import PIXEL_FRACTION, pixel_diff_fraction
    from mag_dataset.sites.forum.tasks import LikePost, PinTopic, ReplyToTopic

    s = forum
    s.reset()
    tasks = [cls(0, site=s) for cls in (ReplyToTopic, LikePost, PinTopic)]
    pages: list[tuple[int, str]] = []
    for i, task in enumerate(tasks):
        cid, slug = s.query("select id, slug from spirit_category_category where title = ?", (task.params["board"],))[0]
        pages += [(i, task.start_path), (i, f"/category/{cid}/{slug}/")]
    fractions: dict[tuple[str, str], float] = {}
    with site_browser() as browser:
        tabs = []
        for task in tasks:  # one logged-in context per template's user
            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            s.login(page, task.user)
            tabs.append(page)

        def shoot(i: int, path: str) -> bytes:
            tabs[i].goto(s.base_url + path)
            tabs[i].wait_for_load_state("networkidle")
            return tabs[i].screenshot()

        before = [shoot(i, p) for i, p in pages]
        counts = s.drift(0, 1)  # the sessions survive: a drift touches no user
        after = [shoot(i, p) for i, p in pages]
        for (i, path), a, b in zip(pages, before, after):
            fractions[(tasks[i].user, path)] = pixel_diff_fraction(a, b)
        # a task's login still works on the drifted site, and the site answers its health check
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        s.login(page, "mod_kenji")
        assert "mod_kenji" in page.goto(s.base_url + "/").text()
        assert manager.health(s.base_url + s.health_path)[0]
    print(f"forum drift(0, 1) {counts}; pixels changed: "
          + ", ".join(f"{u} {p} {f:.1%}" for (u, p), f in fractions.items()))
    assert all(fractions[(t.user, "/")] > PIXEL_FRACTION for t in tasks)  # a new topic on top, others moved up
    assert sum(f > PIXEL_FRACTION for f in fractions.values()) >= 0.75 * len(fractions)


def test_reset_restores_the_seeded_state_exactly(forum):
    s = forum
    db = s.databases()[0]
    s.reset()
    s.drift(5, 2)
    assert _db_digest(db) != _db_digest(s.snapshot_dir / db.name)
    s.reset()
    assert _db_digest(db) == _db_digest(s.snapshot_dir / db.name)
    assert _dir_digest(s.search_dir) == _dir_digest(s.snapshot_dir / "search")
    assert manager.health(s.base_url + s.health_path)[0]
