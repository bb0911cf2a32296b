"""The forum's drift: a few days of other users' activity on a reset Spirit forum.

:func:`apply_drift` is :meth:`ForumSite.apply_drift <mag_dataset.sites.forum.ForumSite.apply_drift>`
(see :meth:`mag_dataset.sites.base.Site.drift`): what a live forum looks like when a recorded
episode is replayed some days after its demonstration, the path by which WebMRE's stale
screenshots arose (observations re-rendered after the fact on a site that had moved on).

Each level is one stretch of a few days after the seed's last post (:data:`DRIFT_START`), in
which other users:

* register (``new_users``: a handle from the seed's nouns, a seed location) and post;
* open topics (``new_topics``: "Follow-up: <a topic of the board>"), which go to the top of the
  index and of their board, and reply (``replies``) mostly in recently active topics, which
  moves those up the lists;
* like posts (``likes``), read topics (``view_counters``: seeded topics whose view counter rose),
  edit the opening post of their own topic (``edits``: an "Edit:" paragraph, Spirit's history
  rows and edit counter), message a member (``private_topics``);
* and a moderator (``admin``) pins a busy topic (``pinned``) and closes an old one (``closed``),
  with Spirit's moderation-action comments.

Members who already posted in a topic that gets a reply, and a member invited to a private
topic, get Spirit's unread topic notification (``notifications``: unread rows at the end), as
Spirit's own subscriptions would give them (the header's bell lights up).

What it never does: change an existing user's rows (``auth_user``, profile: logins stay as
seeded), delete or move anything, rename a topic, or post as a user a task template logs in as
(only :data:`BYSTANDERS`, ``admin`` and the new users act), so every task's parameters still
exist and its preconditions hold (an unliked opening post stays unliked by its liker, an own
post stays the only one). Texts come from :mod:`mag_dataset.sites.forum.seed`'s vocabularies,
never with a "method" phrase (the search task's needle stays unique). Everything is drawn from
``rng`` and the database's (reset) state, read in id order, with timestamps from
:data:`DRIFT_START` on: the same seed and level give the same rows. Written with SQL in one
short transaction; Spirit keeps no page cache, and the search index stays the seeded one (new
posts are not searchable, as without Spirit's task queue).
"""

from __future__ import annotations

import datetime as dt
import html
import random
import re
import sqlite3
import string
import unicodedata
from typing import Any

from mag_dataset.sites.forum import seed as seed_data

#: Start of the first level's stretch: the day after the seed's last post (11 Apr 2024, 10:00 UTC).
DRIFT_START = dt.datetime(2024, 4, 12, 8, 0, 0)
#: Seeded members no task template logs in as: the other users whose activity the drift is.
BYSTANDERS = ("frank_t", "heidi_r", "ivan_p", "judy_c")
#: The moderator who pins and closes (a moderator and administrator no template logs in as).
MODERATOR = "admin"
#: What one level (a few days) brings.
PER_LEVEL = {"new_users": 2, "new_topics": 3, "replies": 14, "likes": 30, "edits": 2, "pinned": 1, "closed": 1,
             "private_topics": 1}
PRIVATE_CATEGORY = 1
NEW_TITLE_PATTERNS = ("Follow-up: {title}", "{title} (part two)")

# Spirit's Comment.action and TopicNotification.action values
_COMMENT, _CLOSED, _PINNED = 0, 2, 4
_NOTE_UNDEFINED, _NOTE_COMMENT = 0, 2


def apply_drift(site: Any, rng: random.Random, level: int) -> dict[str, int]:
    """Write ``level`` stretches of other users' activity into the forum's database.

    Args:
        site: the :class:`~mag_dataset.sites.forum.ForumSite` (its database, on a reset site).
        rng: the drift's ``random.Random``.
        level: how many stretches of a few days (at least 1).

    Returns:
        Counts per kind of change (module docstring): ``new_users``, ``new_topics``, ``replies``,
        ``likes``, ``view_counters``, ``edits``, ``pinned``, ``closed``, ``private_topics``,
        ``notifications``.
    """
    con = sqlite3.connect(str(site.databases()[0]), timeout=30, isolation_level=None)
    try:
        con.execute("begin immediate")
        try:
            counts = _Drift(con, rng).run(level)
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise
    finally:
        con.close()
    return counts


def _ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _html(text: str) -> str:
    """Spirit's Markdown rendering of plain paragraphs (what the seed's comments hold)."""
    return "\n".join(f"<p>{html.escape(p, quote=False)}</p>" for p in text.split("\n\n"))


def _slugify(value: str) -> str:
    """Django's ``slugify``, cut to Spirit's 50-character slug field."""
    value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")[:50].strip("-")


class _Drift:
    """One drift's state: the connection, the clock, who acts, what was touched."""

    def __init__(self, con: sqlite3.Connection, rng: random.Random):
        self.con, self.rng = con, rng
        self.clock = DRIFT_START
        self.user_ids = {name: uid for uid, name in con.execute("select id, username from auth_user order by id")}
        self.actors = [self.user_ids[n] for n in BYSTANDERS]
        self.moderator = self.user_ids[MODERATOR]
        self.seed_topic_max = con.execute("select coalesce(max(id), 0) from spirit_topic_topic").fetchone()[0]
        self.boards = [(cid, title) for cid, title in con.execute(
            "select id, title from spirit_category_category where id != ? and not is_removed order by sort, id",
            (PRIVATE_CATEGORY,))]
        self.replied: dict[int, int] = {}  # topic id -> drift replies in it
        self.views: set[int] = set()  # seeded topics whose counter rose
        self.counts = {k: 0 for k in ("new_users", "new_topics", "replies", "likes", "view_counters", "edits",
                                      "pinned", "closed", "private_topics", "notifications")}

    def q(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self.con.execute(sql, params).fetchall()

    def tick(self, lo: int = 20, hi: int = 150) -> dt.datetime:
        self.clock += dt.timedelta(minutes=self.rng.randint(lo, hi))
        return self.clock

    # ------------------------------------------------------------------ the stretches
    def run(self, level: int) -> dict[str, int]:
        for _ in range(level):
            self.stretch()
        self.counts["view_counters"] = len(self.views)
        self.counts["notifications"] = self.q(
            "select count(*) from spirit_topic_notification_topicnotification where not is_read")[0][0]
        return dict(self.counts)

    def stretch(self) -> None:
        n = PER_LEVEL
        events = (["topic"] * n["new_topics"] + ["reply"] * n["replies"] + ["like"] * n["likes"]
                  + ["edit"] * n["edits"] + ["pin"] * n["pinned"] + ["close"] * n["closed"]
                  + ["private"] * n["private_topics"])
        self.rng.shuffle(events)
        events = ["user"] * n["new_users"] + events  # newcomers register before the rest of the stretch
        touched: set[int] = set()
        for kind in events:
            t = self.tick()
            topic = {"user": self.new_user, "topic": self.new_topic, "reply": self.reply, "like": self.like,
                     "edit": self.edit, "pin": self.pin, "close": self.close, "private": self.private}[kind](t)
            if topic is not None:
                touched.add(topic)
        # readers: every topic with new posts, and a share of the rest
        public = [r[0] for r in self.q("select id from spirit_topic_topic where category_id != ? and not is_removed "
                                       "order by id", (PRIVATE_CATEGORY,))]
        for tid in public:
            if tid in touched:
                self.add_views(tid, self.rng.randint(5, 30))
            elif self.rng.random() < 0.3:
                self.add_views(tid, self.rng.randint(1, 9))

    # ------------------------------------------------------------------ helpers
    def add_views(self, tid: int, n: int) -> None:
        self.con.execute("update spirit_topic_topic set view_count = view_count + ? where id = ?", (n, tid))
        if tid <= self.seed_topic_max:
            self.views.add(tid)

    def pick_topic(self, recent: bool = True) -> tuple | None:
        """A public open topic, more likely a recently active one: (id, category, last poster)."""
        rows = self.q("select t.id, t.category_id, (select c.user_id from spirit_comment_comment c where c.topic_id = "
                      "t.id and c.action = 0 order by c.date desc, c.id desc limit 1) from spirit_topic_topic t "
                      "where t.category_id != ? and not t.is_removed and not t.is_closed "
                      "order by t.last_active desc, t.id desc", (PRIVATE_CATEGORY,))
        if not rows:
            return None
        i = int(len(rows) * self.rng.random() ** 2) if recent else self.rng.randrange(len(rows))
        return rows[i]

    def post(self, tid: int, uid: int, text: str, t: dt.datetime) -> int:
        cur = self.con.execute(
            "insert into spirit_comment_comment (comment, comment_html, action, date, is_removed, is_modified, "
            "ip_address, modified_count, likes_count, topic_id, user_id) values (?, ?, ?, ?, 0, 0, '127.0.0.1', 0, 0, "
            "?, ?)", (text, _html(text), _COMMENT, _ts(t), tid, uid))
        cid = int(cur.lastrowid)
        self.subscribe(uid, tid, cid, t, unread=False, action=_NOTE_UNDEFINED, keep=True)
        return cid

    def subscribe(self, uid: int, tid: int, cid: int, t: dt.datetime, *, unread: bool, action: int,
                  keep: bool = False) -> None:
        """Spirit's topic notification row for (user, topic): made, or (unless ``keep``) pointed at ``cid``."""
        self.con.execute(
            "insert into spirit_topic_notification_topicnotification (date, action, is_read, is_active, comment_id, "
            "topic_id, user_id) values (?, ?, ?, 1, ?, ?, ?) on conflict (user_id, topic_id) do "
            + ("nothing" if keep else "update set date = excluded.date, action = excluded.action, "
               "is_read = excluded.is_read, comment_id = excluded.comment_id"),
            (_ts(t), action, 0 if unread else 1, cid, tid, uid))

    def moderate(self, tid: int, action: int, t: dt.datetime) -> None:
        self.con.execute(
            "insert into spirit_comment_comment (comment, comment_html, action, date, is_removed, is_modified, "
            "ip_address, modified_count, likes_count, topic_id, user_id) values ('action', 'action', ?, ?, 0, 0, "
            "'127.0.0.1', 0, 0, ?, ?)", (action, _ts(t), tid, self.moderator))
        self.con.execute("update spirit_topic_topic set reindex_at = ? where id = ?", (_ts(t), tid))

    # ------------------------------------------------------------------ the events
    def new_user(self, t: dt.datetime) -> None:
        taken = {r[0] for r in self.q("select username from auth_user")}
        while True:
            name = f"{self.rng.choice(seed_data.NOUNS)}{self.rng.randint(10, 99)}"
            if name not in taken:
                break
        location = self.rng.choice(sorted({u.location for u in seed_data.USERS}))
        # Django's unusable password ("!" + 40 random characters): nobody logs in as a drift user
        password = "!" + "".join(self.rng.choice(string.ascii_letters + string.digits) for _ in range(40))
        uid = int(self.con.execute(
            "insert into auth_user (password, last_login, is_superuser, username, last_name, email, is_staff, "
            "is_active, date_joined, first_name) values (?, null, 0, ?, '', ?, 0, 1, ?, '')",
            (password, name, f"{name}@forum.test", _ts(t))).lastrowid)
        self.con.execute(
            "insert into spirit_user_userprofile (slug, location, last_seen, last_ip, timezone, is_administrator, "
            "is_moderator, is_verified, topic_count, comment_count, user_id, last_post_hash, last_post_on, nickname, "
            "notify, avatar) values (?, ?, ?, null, 'UTC', 0, 0, 1, 0, 0, ?, '', null, ?, 25, '')",
            (_slugify(name), location, _ts(t), uid, name))
        self.user_ids[name] = uid
        self.actors.append(uid)
        self.counts["new_users"] += 1

    def seen(self, uid: int, t: dt.datetime) -> None:
        """A new user's last visit (only drift users: seeded profiles stay as seeded)."""
        if uid not in (self.user_ids[n] for n in BYSTANDERS):
            self.con.execute("update spirit_user_userprofile set last_seen = ? where user_id = ?", (_ts(t), uid))

    def new_topic(self, t: dt.datetime) -> int | None:
        cid, board = self.rng.choice([b for b in self.boards if b[1] != "Announcements"])
        titles = {r[0] for r in self.q("select title from spirit_topic_topic")}
        bases = [r[0] for r in self.q("select title from spirit_topic_topic where category_id = ? and id <= ? "
                                      "order by id", (cid, self.seed_topic_max))]
        options = [p.format(title=b) for b in bases for p in NEW_TITLE_PATTERNS if p.format(title=b) not in titles]
        if not options:
            return None
        title = self.rng.choice(options)
        uid = self.rng.choice(self.actors)
        tid = int(self.con.execute(
            "insert into spirit_topic_topic (title, slug, date, last_active, is_pinned, is_globally_pinned, is_closed, "
            "is_removed, view_count, comment_count, category_id, user_id, reindex_at) values (?, ?, ?, ?, 0, 0, 0, 0, "
            "0, 1, ?, ?, ?)", (title, _slugify(title), _ts(t), _ts(t), cid, uid, _ts(t))).lastrowid)
        text = " ".join([self.rng.choice(seed_data.OPENERS), *self.rng.sample(seed_data.DETAILS, 2)])
        self.post(tid, uid, text, t)
        self.seen(uid, t)
        self.counts["new_topics"] += 1
        return tid

    def reply(self, t: dt.datetime) -> int | None:
        row = self.pick_topic()
        if row is None:
            return None
        tid, _, last = row
        uid = self.rng.choice([a for a in self.actors if a != last])
        cid = self.post(tid, uid, " ".join(self.rng.sample(seed_data.REPLIES, 2)), t)
        self.con.execute("update spirit_topic_topic set comment_count = comment_count + 1, last_active = ?, "
                         "reindex_at = ? where id = ?", (_ts(t), _ts(t), tid))
        # everyone else who posted in the topic is subscribed (Spirit subscribes posters): notified
        for (other,) in self.q("select distinct user_id from spirit_comment_comment where topic_id = ? and action = 0 "
                               "and user_id != ? order by user_id", (tid, uid)):
            self.subscribe(other, tid, cid, t, unread=True, action=_NOTE_COMMENT)
        self.seen(uid, t)
        self.replied[tid] = self.replied.get(tid, 0) + 1
        self.counts["replies"] += 1
        return tid

    def like(self, t: dt.datetime) -> int | None:
        for _ in range(10):  # a post of someone else's that this user has not liked yet
            row = self.pick_topic()
            if row is None:
                return None
            posts = self.q("select id, user_id from spirit_comment_comment where topic_id = ? and action = 0 "
                           "and not is_removed order by date, id", (row[0],))
            cid, author = posts[0] if self.rng.random() < 0.5 else self.rng.choice(posts)
            uid = self.rng.choice(self.actors)
            if uid == author or self.q("select 1 from spirit_comment_like_commentlike where user_id = ? and "
                                       "comment_id = ?", (uid, cid)):
                continue
            self.con.execute("insert into spirit_comment_like_commentlike (date, comment_id, user_id) values (?, ?, ?)",
                             (_ts(t), cid, uid))
            self.con.execute("update spirit_comment_comment set likes_count = likes_count + 1 where id = ?", (cid,))
            self.seen(uid, t)
            self.counts["likes"] += 1
            return None  # a like moves no list
        return None

    def edit(self, t: dt.datetime) -> int | None:
        """An author adds an "Edit:" paragraph to the opening post of their own topic."""
        marks = ",".join("?" * len(self.actors))
        rows = self.q(
            "select c.id, c.comment, c.comment_html, c.date, c.topic_id from spirit_topic_topic t join "
            "spirit_comment_comment c on c.id = (select id from spirit_comment_comment where topic_id = t.id "
            f"order by date, id limit 1) where t.category_id != ? and not t.is_removed and t.user_id in ({marks}) "
            "and c.modified_count = 0 order by t.id", (PRIVATE_CATEGORY, *self.actors))
        if not rows:
            return None
        cid, text, old_html, date, tid = self.rng.choice(rows)
        new = f"{text}\n\nEdit: {self.rng.choice([d for d in seed_data.DETAILS if d not in text])}"
        # Spirit's history: the original (at its date) once, then each version
        self.con.execute("insert into spirit_comment_history_commenthistory (comment_html, date, comment_fk_id) "
                         "values (?, ?, ?)", (old_html, date, cid))
        self.con.execute("insert into spirit_comment_history_commenthistory (comment_html, date, comment_fk_id) "
                         "values (?, ?, ?)", (_html(new), _ts(t), cid))
        self.con.execute("update spirit_comment_comment set comment = ?, comment_html = ?, modified_count = "
                         "modified_count + 1 where id = ?", (new, _html(new), cid))
        self.counts["edits"] += 1
        return None  # an edit moves no list

    def pin(self, t: dt.datetime) -> int | None:
        """The moderator pins the busiest topic of the drift so far (else a recently active one)."""
        rows = self.q("select id from spirit_topic_topic where category_id not in (?, ?) and not is_pinned and "
                      "not is_removed order by last_active desc, id desc",
                      (PRIVATE_CATEGORY, self._board_id("Announcements")))
        hot = [tid for tid, n in sorted(self.replied.items(), key=lambda kv: (-kv[1], kv[0]))
               if tid in {r[0] for r in rows}]
        if hot:
            tid = hot[0]
        elif rows:
            tid = rows[self.rng.randrange(min(5, len(rows)))][0]
        else:
            return None
        self.con.execute("update spirit_topic_topic set is_pinned = 1 where id = ?", (tid,))
        self.moderate(tid, _PINNED, t)
        self.counts["pinned"] += 1
        return tid

    def close(self, t: dt.datetime) -> int | None:
        """The moderator closes one of the oldest third of the open topics that nobody revived."""
        rows = [r[0] for r in self.q(
            "select id from spirit_topic_topic where category_id not in (?, ?) and not is_closed and not is_pinned "
            "and not is_removed order by last_active, id", (PRIVATE_CATEGORY, self._board_id("Announcements")))
            if r[0] not in self.replied]
        if not rows:
            return None
        tid = self.rng.choice(rows[:max(1, len(rows) // 3)])
        self.con.execute("update spirit_topic_topic set is_closed = 1 where id = ?", (tid,))
        self.moderate(tid, _CLOSED, t)
        self.counts["closed"] += 1
        return tid

    def private(self, t: dt.datetime) -> int | None:
        """A bystander messages a seeded member, who gets Spirit's unread notification."""
        uid = self.user_ids[self.rng.choice(BYSTANDERS)]
        to = self.user_ids[self.rng.choice([u.username for u in seed_data.USERS if self.user_ids[u.username] != uid])]
        title = self.rng.choice(seed_data.PRIVATE_TITLES)
        tid = int(self.con.execute(
            "insert into spirit_topic_topic (title, slug, date, last_active, is_pinned, is_globally_pinned, is_closed, "
            "is_removed, view_count, comment_count, category_id, user_id, reindex_at) values (?, ?, ?, ?, 0, 0, 0, 0, "
            "0, 1, ?, ?, ?)", (title, _slugify(title), _ts(t), _ts(t), PRIVATE_CATEGORY, uid, _ts(t))).lastrowid)
        for member in (uid, to):
            self.con.execute("insert into spirit_topic_private_topicprivate (date, topic_id, user_id) values (?, ?, ?)",
                             (_ts(t), tid, member))
        text = " ".join([self.rng.choice(seed_data.OPENERS), self.rng.choice(seed_data.DETAILS)])
        cid = self.post(tid, uid, text, t)
        self.subscribe(to, tid, cid, t, unread=True, action=_NOTE_COMMENT)
        self.counts["private_topics"] += 1
        return None

    def _board_id(self, title: str) -> int:
        return next((cid for cid, b in self.boards if b == title), -1)


__all__ = ["apply_drift", "BYSTANDERS", "DRIFT_START", "PER_LEVEL"]
