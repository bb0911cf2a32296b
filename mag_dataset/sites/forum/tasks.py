"""Live tasks on the forum site (Spirit): replying, posting, editing, liking, private messages,
moderation, search and profile, each with a state check on Spirit's database and an expert.

Parameters come from :func:`mag_dataset.sites.forum.seed.build` (never the database), drawn with
the task's ``random.Random``. Checks read the SQLite file after the episode (WebArena's program
evaluators); answer tasks compare the ``finish`` answer. Experts read only the observation,
through the one expert kit (:mod:`mag_dataset.live.expert_kit`): links and fields found by
their text, ``name`` and ``href``; a target off screen is reached by the kit's scroll policy.

Navigation shared by the experts (:func:`_open_topic`): open the board from the "All
Categories" dropdown, then the topic's link on the board's page.
"""

from __future__ import annotations

import random
import re
import unicodedata
from typing import Any, ClassVar

from mag_dataset.actions import ActionType
from mag_dataset.live import expert_kit as kit
from mag_dataset.live.expert_kit import Decision
from mag_dataset.live.observe import Element, Observation
from mag_dataset.sites.forum import SITE, seed as seed_data
from mag_dataset.sites.task import SiteTask

PRIVATE_CATEGORY = 1

REPLY_TEXTS = (
    "Thanks, I will try the {word} approach tonight and report back.",
    "Same here: the {word} trick worked on my machine too.",
    "Has anyone compared this with the {word} option?",
    "Bumping this, the {word} question is still open for me.",
    "Good summary. The {word} part deserves its own thread.",
)
WORDS = ("firmware", "cable", "driver", "settings", "backup", "cooling", "budget", "update", "router", "battery")
NEW_TITLES = (
    "Looking for advice on {word} choices", "My experience with a new {word}", "Quick poll about {word} habits",
    "Anyone else noticed this {word} issue?", "Guide: sorting out your {word}",
)
CITIES = ("Vancouver", "Lyon", "Kraków", "Porto", "Gothenburg", "Kyoto", "Valencia", "Tallinn", "Bergen", "Ghent")


# ----------------------------------------------------------------------------- helpers
def slugify(value: str) -> str:
    """Django's ``slugify`` (the slug in Spirit's topic URLs)."""
    value = unicodedata.normalize("NFKC", value)
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")


def _on_topic(ob: Observation, title: str) -> bool:
    return re.search(rf"/topic/\d+/{re.escape(slugify(title))}/", kit.path(ob)) is not None


def _in_row(ob: Observation, el: Element | None) -> bool:
    """Whether ``el`` lies in a topic row, where Spirit's JS turns any click into opening the topic."""
    seen = 0
    while el is not None and seen < 12:
        if "js-clickable-area" in el.attrs.get("class", ""):
            return True
        el = ob.elements.get(el.parent) if el.parent else None
        seen += 1
    return False


def _open_topic(ob: Observation, memory: dict, title: str, board: str) -> Decision | None:
    """Next step towards the topic's page (None once there): board dropdown, board page, topic link."""
    if _on_topic(ob, title):
        return None
    topic = kit.link(ob, title, prefer_visible=True)
    on_board = re.match(rf"/category/\d+/{re.escape(slugify(board))}/", kit.path(ob)) is not None
    if topic is not None and re.match(r"/topic/\d+/", topic.attrs.get("href", "")) and (
            on_board or kit.visible(ob, topic)):  # elsewhere, a link in view is a shortcut; else go by the board
        return kit.click(ob, topic)
    if on_board:
        nxt = kit.link(ob, href=r"[?&]page=\d+", prefer_visible=True) if memory.get("paged", 0) < 5 else None
        if nxt is not None:
            memory["paged"] = memory.get("paged", 0) + 1
            return kit.click(ob, nxt)
        raise kit.NotOnPage(f"topic {title!r} not on its board's page")
    want = kit.norm(board)
    item = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == want and re.match(
        r"/category/\d+/", e.attrs.get("href", "")) is not None and not _in_row(ob, e),
        prefer_visible=True)  # a topic row's board label opens the topic (Spirit's JS)
    if item is not None and kit.visible(ob, item):
        return kit.click(ob, item)
    dropdown = kit.find(ob, lambda e: e.tag == "a" and "dropdown_button" in e.attrs.get("class", ""),
                        prefer_visible=True)
    if dropdown is not None and kit.visible(ob, dropdown) and not memory.get("dropdown"):
        return kit.once(memory, "dropdown", kit.click(ob, dropdown))
    return Decision(ActionType.GOTO, url=re.sub(r"(https?://[^/]+).*", r"\1/", ob.url))


def _send(ob: Observation, memory: dict, button: Element | None, what: str = "submit button") -> Decision | None:
    """Click the button that submits the task's form; the expert finishes on the next step."""
    return kit.once(memory, "sent", kit.click(ob, kit.require(button, what)))


class ForumTask(SiteTask):
    """A task on the forum site; helpers to read Spirit's database.

    Subclasses write :meth:`decide`; :meth:`expert` wraps it: when what it needs is missing
    (None, or :class:`~mag_dataset.live.expert_kit.NotOnPage`: an observation taken while the
    next page was still loading) it looks again, as a person waits, with a harmless scroll up,
    at most :attr:`WAITS` times in a row.
    """

    site_class: ClassVar = SITE
    WAITS: ClassVar[int] = 3

    def expert(self, ob, memory):
        if memory.get("sent"):  # the form went off: the page now shows its outcome
            return kit.finish()
        try:
            decision = self.decide(ob, memory)
        except kit.NotOnPage:
            decision = None
        if decision is None and memory.get("waited", 0) < self.WAITS:
            memory["waited"] = memory.get("waited", 0) + 1
            return Decision(ActionType.SCROLL, direction="up")
        memory["waited"] = 0
        return decision

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def data() -> seed_data.Seed:
        return seed_data.build()

    def topic_row(self, title: str) -> tuple[Any, ...] | None:
        rows = self.site.query("select id, category_id, is_closed, is_pinned, user_id from spirit_topic_topic "
                               "where title = ? and category_id != ? order by id", (title, PRIVATE_CATEGORY))
        return rows[0] if rows else None

    def user_id(self, username: str) -> int:
        return self.site.query("select id from auth_user where username = ?", (username,))[0][0]

    def board_id(self, board: str) -> int:
        return self.site.query("select id from spirit_category_category where title = ?", (board,))[0][0]


def _pick_topic(rng: random.Random, pred=lambda i, t: True) -> tuple[int, seed_data.Topic]:
    topics = [(i, t) for i, t in enumerate(seed_data.build().topics) if pred(i, t)]
    return rng.choice(topics)


# ----------------------------------------------------------------------------- posting
class ReplyToTopic(ForumTask):
    template = "reply_to_topic"
    intent_template = 'Reply to the topic "{title}" in the {board} board with the text "{text}".'
    user = "alice_w"

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: not t.closed)
        return {"title": t.title, "board": t.board,
                "text": rng.choice(REPLY_TEXTS).format(word=rng.choice(WORDS))}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        n = self.site.query("select count(*) from spirit_comment_comment where topic_id = ? and user_id = ? "
                            "and trim(comment) = ? and not is_removed",
                            (row[0], self.user_id(self.user), self.params["text"]))[0][0]
        return (n == 1, f"{n} matching replies by {self.user} in the topic")

    def decide(self, ob, memory):
        step = _open_topic(ob, memory, self.params["title"], self.params["board"])
        if step is not None:
            return step
        box = kit.field(ob, "comment", "textarea", prefer_visible=True)
        step = kit.fill(ob, kit.require(box, "reply box"), self.params["text"])
        if step is not None:
            return step
        button = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "submit"
                          and "comment__reply__actions__publish" in e.attrs.get("class", ""), prefer_visible=True)
        return _send(ob, memory, button, "reply's Publish button")


class CreateTopic(ForumTask):
    template = "create_topic"
    intent_template = 'Create a new topic in the "{board}" board titled "{title}" with the message "{text}".'
    user = "bob_builder"

    def sample(self, rng):
        board = rng.choice([b.title for b in seed_data.BOARDS if b.title != "Announcements"])
        word = rng.choice(WORDS)
        return {"board": board, "title": rng.choice(NEW_TITLES).format(word=word),
                "text": rng.choice(REPLY_TEXTS).format(word=rng.choice(WORDS))}

    def check(self, answer):
        rows = self.site.query(
            "select t.id, t.category_id, t.user_id from spirit_topic_topic t where t.title = ?", (self.params["title"],))
        if len(rows) != 1:
            return False, f"{len(rows)} topics titled {self.params['title']!r}"
        tid, cat, uid = rows[0]
        if cat != self.board_id(self.params["board"]) or uid != self.user_id(self.user):
            return False, "topic in the wrong board or by another user"
        first = self.site.query("select trim(comment) from spirit_comment_comment where topic_id = ? order by id limit 1",
                                (tid,))
        ok = bool(first) and first[0][0] == self.params["text"]
        return ok, "topic created" if ok else f"opening post is {first!r}"

    def decide(self, ob, memory):
        if "/topic/publish/" not in kit.path(ob):
            return kit.click(ob, kit.link(ob, "Create Topic", prefer_visible=True))
        step = kit.fill(ob, kit.require(kit.field(ob, "title", "input", prefer_visible=True), "title field"),
                        self.params["title"])
        if step is not None:
            return step
        cat = kit.field(ob, "category", "select", prefer_visible=True)
        if cat is not None and not memory.get("category"):
            step = kit.once(memory, "category", kit.select(ob, cat, self.params["board"]))
            if step is not None:
                return step
        step = kit.fill(ob, kit.require(kit.field(ob, "comment", "textarea", prefer_visible=True), "message box"),
                        self.params["text"])
        if step is not None:
            return step
        return _send(ob, memory, kit.button(ob, "Publish", prefer_visible=True), "Publish button")


class EditOwnPost(ForumTask):
    template = "edit_own_post"
    intent_template = 'Edit your reply in the topic "{title}" so that it reads "{text}".'
    user = "carol_j"

    def sample(self, rng):
        def own_one(i, t):
            return t.author != self.user and sum(p.author == self.user for p in t.posts) == 1 and not t.closed

        _, t = _pick_topic(rng, own_one)
        return {"title": t.title, "board": t.board,
                "text": rng.choice(REPLY_TEXTS).format(word=rng.choice(WORDS)) + " (edited)"}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        rows = self.site.query("select trim(comment), modified_count from spirit_comment_comment "
                               "where topic_id = ? and user_id = ?", (row[0], self.user_id(self.user)))
        ok = len(rows) == 1 and rows[0][0] == self.params["text"] and rows[0][1] >= 1
        return ok, f"{self.user}'s comments in the topic: {rows!r}"

    def decide(self, ob, memory):
        if re.match(r"/comment/\d+/update/", kit.path(ob)):
            box = kit.field(ob, "comment", "textarea", prefer_visible=True)
            step = kit.fill(ob, kit.require(box, "comment box"), self.params["text"])
            if step is not None:
                return step
            return _send(ob, memory, kit.button(ob, "Publish", prefer_visible=True)
                         or kit.button(ob, "Update", prefer_visible=True), "Publish button")
        step = _open_topic(ob, memory, self.params["title"], self.params["board"])
        if step is not None:
            return step
        return kit.click(ob, kit.link(ob, "edit", href=r"^/comment/\d+/update/", prefer_visible=True))


class LikePost(ForumTask):
    template = "like_opening_post"
    intent_template = 'Like the opening post of the topic "{title}".'
    user = "dave_k"

    def sample(self, rng):
        s = self.data()
        i, t = _pick_topic(rng, lambda i, t: t.author != self.user and not s.liked(self.user, i, 0))
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        n = self.site.query(
            "select count(*) from spirit_comment_like_commentlike l where l.user_id = ? and l.comment_id = "
            "(select id from spirit_comment_comment where topic_id = ? order by date, id limit 1)",
            (self.user_id(self.user), row[0]))[0][0]
        return n == 1, f"{n} likes by {self.user} on the opening post"

    def decide(self, ob, memory):
        step = _open_topic(ob, memory, self.params["title"], self.params["board"])
        if step is not None:
            return step
        first = kit.find(ob, lambda e: e.tag == "a" and "js-like" in e.attrs.get("class", ""))
        if first is None:  # the opening post's like link comes first in the page
            return None
        if kit.norm(first.text).startswith("remove like"):
            return kit.finish()
        if memory.get("clicked"):  # one click only: a second one while the request is under way unlikes
            raise kit.NotOnPage("the like is under way")
        return kit.once(memory, "clicked", kit.click(ob, first))


class PrivateMessage(ForumTask):
    template = "send_private_message"
    intent_template = 'Send a private message to {to} titled "{title}" saying "{text}".'
    user = "erin_m"

    def sample(self, rng):
        to = rng.choice([u.username for u in seed_data.USERS if u.username != self.user])
        return {"to": to, "title": rng.choice(NEW_TITLES).format(word=rng.choice(WORDS)),
                "text": rng.choice(REPLY_TEXTS).format(word=rng.choice(WORDS))}

    def check(self, answer):
        rows = self.site.query("select id, user_id from spirit_topic_topic where title = ? and category_id = ?",
                               (self.params["title"], PRIVATE_CATEGORY))
        if len(rows) != 1 or rows[0][1] != self.user_id(self.user):
            return False, f"{len(rows)} private topics titled {self.params['title']!r} by {self.user}"
        tid = rows[0][0]
        members = {r[0] for r in self.site.query(
            "select u.username from spirit_topic_private_topicprivate p join auth_user u on u.id = p.user_id "
            "where p.topic_id = ?", (tid,))}
        text = self.site.query("select trim(comment) from spirit_comment_comment where topic_id = ? order by id",
                               (tid,))
        ok = self.params["to"] in members and bool(text) and text[0][0] == self.params["text"]
        return ok, f"participants {sorted(members)}, first message {text[:1]!r}"

    def decide(self, ob, memory):
        path = kit.path(ob)
        if path.startswith("/topic/private/publish/"):
            for name, tag, text in (("title", "input", self.params["title"]), ("users", "input", self.params["to"]),
                                    ("comment", "textarea", self.params["text"])):
                step = kit.fill(ob, kit.require(kit.field(ob, name, tag, prefer_visible=True), f"{name} field"), text)
                if step is not None:
                    return step
            return _send(ob, memory, kit.button(ob, "Publish", prefer_visible=True), "Publish button")
        if path.rstrip("/") == "/topic/private":
            return kit.click(ob, kit.link(ob, "Create private topic", prefer_visible=True))
        item = kit.link(ob, "Private topics", prefer_visible=True)
        if item is not None and kit.visible(ob, item):
            return kit.click(ob, item)
        return kit.click(ob, kit.link(ob, self.user, href=r"^/user/menu/", prefer_visible=True))


# ----------------------------------------------------------------------------- moderation
class _ModerateTopic(ForumTask):
    action: ClassVar[str]  # the Moderate menu's item
    user = "mod_maria"

    def decide(self, ob, memory):
        step = _open_topic(ob, memory, self.params["title"], self.params["board"])
        if step is not None:
            return step
        item = kit.link(ob, self.action, prefer_visible=True)
        if item is not None and kit.visible(ob, item):
            return _send(ob, memory, item)
        return kit.click(ob, kit.link(ob, "Moderate", prefer_visible=True))


class CloseTopic(_ModerateTopic):
    template = "moderator_close_topic"
    intent_template = 'As a moderator, close the topic "{title}" so that nobody can reply.'
    action = "Close topic"

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: not t.closed and t.board != "Announcements")
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        return bool(row[2]), "closed" if row[2] else "the topic is still open"


class PinTopic(_ModerateTopic):
    template = "moderator_pin_topic"
    intent_template = 'As a moderator, pin the topic "{title}" to the top of the {board} board.'
    action = "Pin topic"
    user = "mod_kenji"

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: not t.pinned)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        return bool(row[3]), "pinned" if row[3] else "the topic is not pinned"


class MoveTopic(ForumTask):
    template = "moderator_move_topic"
    intent_template = 'The topic "{title}" was posted in {board}; move it to the "{target}" board.'
    user = "mod_maria"

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: t.board != "Announcements")
        target = rng.choice([b.title for b in seed_data.BOARDS if b.title not in (t.board, "Announcements")])
        return {"title": t.title, "board": t.board, "target": target}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        ok = row[1] == self.board_id(self.params["target"])
        return ok, "moved" if ok else f"the topic is in category {row[1]}"

    def decide(self, ob, memory):
        if re.match(r"/topic/update/\d+/", kit.path(ob)):
            cat = kit.field(ob, "category", "select", prefer_visible=True)
            if cat is not None and not memory.get("selected"):
                step = kit.once(memory, "selected", kit.select(ob, cat, self.params["target"]))
                if step is not None:
                    return step
            return _send(ob, memory, kit.button(ob, "Update", prefer_visible=True), "Update button")
        step = _open_topic(ob, memory, self.params["title"], self.params["board"])
        if step is not None:
            return step
        return kit.click(ob, kit.link(ob, "edit", href=r"^/topic/update/\d+/", prefer_visible=True))


# ----------------------------------------------------------------------------- information seeking
def _number(answer: str | None) -> int | None:
    m = re.search(r"-?\d+", answer or "")
    return int(m.group()) if m else None


class CountReplies(ForumTask):
    template = "count_replies"
    intent_template = 'How many replies (not counting the opening post) does the topic "{title}" have? Answer with a number.'
    user = "alice_w"
    answer_task = True

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        want = len(self.data().topic(self.params["title"]).posts) - 1
        got = _number(answer)
        return got == want, f"answered {got}, the topic has {want} replies"

    def decide(self, ob, memory):
        step = _open_topic(ob, memory, self.params["title"], self.params["board"])
        if step is not None:
            return step
        authors = kit.find_all(ob, lambda e: e.tag == "a" and "comment__info__username__link" in e.attrs.get("class", ""))
        return kit.finish(str(len(authors) - 1)) if authors else None


class TopicAuthor(ForumTask):
    template = "topic_author"
    intent_template = 'Who started the topic "{title}"? Answer with the username.'
    answer_task = True

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        want = self.data().topic(self.params["title"]).author
        ok = kit.norm(answer).strip(" .\"'") == want.lower()
        return ok, f"answered {answer!r}, the author is {want}"

    def decide(self, ob, memory):
        step = _open_topic(ob, memory, self.params["title"], self.params["board"])
        if step is not None:
            return step
        first = kit.find(ob, lambda e: e.tag == "a" and "comment__info__username__link" in e.attrs.get("class", ""))
        return kit.finish(kit.norm(first.text)) if first is not None else None


class SearchPhrase(ForumTask):
    template = "search_phrase"
    intent_template = ('Someone on the forum recommended "the {phrase} method". Search the forum for it and '
                       'answer with the title of the topic where it was mentioned.')
    user = "grace_h"
    answer_task = True

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"phrase": t.phrase, "title": t.title}

    def check(self, answer):
        ok = kit.norm(answer).strip(" .\"'") == kit.norm(self.params["title"]).strip(" .\"'")
        return ok, f"answered {answer!r}, the topic is {self.params['title']!r}"

    def decide(self, ob, memory):
        if kit.path(ob).startswith("/search/") and kit.query(ob).get("q"):
            hits = kit.find_all(ob, lambda e: e.tag == "a" and "topic__link" in e.attrs.get("class", ""))
            return kit.finish(" ".join(hits[0].text.split())) if len(hits) == 1 else None
        q = kit.field(ob, "q", "input", prefer_visible=True)
        if q is not None and kit.visible(ob, q):  # the header's search box, opened by its icon
            step = kit.fill(ob, q, self.params["phrase"])
            return step or kit.click(ob, kit.require(kit.button(ob, "Search", prefer_visible=True), "Search button"))
        return kit.click(ob, kit.link(ob, href=r"^/search/$", prefer_visible=True))


# ----------------------------------------------------------------------------- profile
class UpdateLocation(ForumTask):
    template = "update_profile_location"
    intent_template = 'Change the location shown on your profile to "{city}".'
    user = "grace_h"

    def sample(self, rng):
        return {"city": rng.choice(CITIES)}

    def check(self, answer):
        loc = self.site.query("select location from spirit_user_userprofile where user_id = ?",
                              (self.user_id(self.user),))[0][0]
        return loc == self.params["city"], f"location is {loc!r}"

    def decide(self, ob, memory):
        if kit.path(ob) == "/user/":
            box = kit.field(ob, "location", "input", prefer_visible=True)
            step = kit.fill(ob, kit.require(box, "location field"), self.params["city"])
            if step is not None:
                return step
            return _send(ob, memory, kit.button(ob, "Save", prefer_visible=True), "Save button")
        prefs = kit.link(ob, "Preferences", href=r"^/user/$", prefer_visible=True)
        if prefs is not None:
            return kit.click(ob, prefs)
        item = kit.link(ob, "Profile", href=r"^/user/\d+/", prefer_visible=True)
        if item is not None and kit.visible(ob, item):
            return kit.click(ob, item)
        return kit.click(ob, kit.link(ob, self.user, href=r"^/user/menu/", prefer_visible=True))


TASKS: tuple[type[ForumTask], ...] = (
    ReplyToTopic, CreateTopic, EditOwnPost, LikePost, PrivateMessage, CloseTopic, PinTopic, MoveTopic,
    CountReplies, TopicAuthor, SearchPhrase, UpdateLocation,
)
