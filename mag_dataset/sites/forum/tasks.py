"""Live tasks on the forum site (Spirit): replying, posting, editing, liking, private messages,
moderation, search and profile, each with a state check on Spirit's database and an expert.

Parameters come from :func:`mag_dataset.sites.forum.seed.build` (never the database), drawn with
the task's ``random.Random``. Each template states its goal in several phrasings
(``intent_templates``, as WebArena's intents: what the user wants, not how). Checks read the
SQLite file after the episode (WebArena's program evaluators); answer tasks compare the
``finish`` answer. Experts read only the observation, through the one expert kit
(:mod:`mag_dataset.live.expert_kit`): links and fields found by their text, ``name`` and
``href``; a target off screen is reached by the kit's scroll policy. Every step that is not a
scroll says what it is for in the task (:func:`~mag_dataset.live.expert_kit.why`), the plan the
recorder writes the step's guide from.

Navigation shared by the experts (:meth:`ForumTask.open_topic`): open the board from the "All
Categories" dropdown, then the topic's link on the board's page.

Detours: as a person does, an expert sometimes takes a wrong but plausible turn and corrects it
(:attr:`ForumTask.DETOURS`, one drawn per episode from ``random.Random(f"{task_id}:{seed}:detour")``):
a board the topic could have been in, or the topic listed next to it (then back); the Moderate
menu before the topic's own edit form; a search on half the method's name before the whole one;
Unread topics before Private topics; the e-mail settings before the location field; a new topic
started from a board it does not belong in (its board then chosen in the form).
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
from mag_dataset.sites.task import SiteTask, exact_target, html_target

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
CITIES = ("Vancouver", "Lyon", "Kraków", "Porto", "Gothenburg", "Kyoto", "Valencia", "Tallinn", "Bergen", "Ghent",
          "Montreal", "Bologna", "Utrecht", "Seville", "Wellington", "Edinburgh", "Salzburg", "Helsinki", "Boulder",
          "Granada", "Copenhagen", "Ljubljana", "Nantes", "Adelaide", "Bruges", "Reykjavik", "Cork", "Aarhus")
#: Boards a topic of each board could plausibly have been posted in (the wrong-board detour).
NEAR_BOARDS: dict[str, tuple[str, ...]] = {
    "Announcements": ("General Discussion", "Help & Support"),
    "General Discussion": ("Off-Topic", "Help & Support"),
    "Help & Support": ("Hardware", "Software & Linux"),
    "Hardware": ("Help & Support", "General Discussion"),
    "Software & Linux": ("Help & Support", "General Discussion"),
    "Gaming": ("General Discussion", "Off-Topic"),
    "Off-Topic": ("General Discussion",),
}


# ----------------------------------------------------------------------------- helpers
def slugify(value: str) -> str:
    """Django's ``slugify`` (the slug in Spirit's topic URLs)."""
    value = unicodedata.normalize("NFKC", value)
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")


def _on_topic(ob: Observation, title: str) -> bool:
    return re.search(rf"/topic/\d+/{re.escape(slugify(title))}/", kit.path(ob)) is not None


def _on_board(ob: Observation, board: str) -> bool:
    return re.match(rf"/category/\d+/{re.escape(slugify(board))}/", kit.path(ob)) is not None


def _in_row(ob: Observation, el: Element | None) -> bool:
    """Whether ``el`` lies in a topic row, where Spirit's JS turns any click into opening the topic."""
    seen = 0
    while el is not None and seen < 12:
        if "js-clickable-area" in el.attrs.get("class", ""):
            return True
        el = ob.elements.get(el.parent) if el.parent else None
        seen += 1
    return False


def _board_item(ob: Observation, board: str) -> Element | None:
    """The link that opens ``board`` (the "All Categories" menu's item), not a topic row's board label
    (Spirit's JS turns a click on that into opening the topic)."""
    want = kit.norm(board)
    return kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == want and re.match(
        r"/category/\d+/", e.attrs.get("href", "")) is not None and not _in_row(ob, e), prefer_visible=True)


def _dropdown(ob: Observation) -> Element | None:
    """The page's category dropdown button ("All Categories" on the home page)."""
    return kit.find(ob, lambda e: e.tag == "a" and "dropdown_button" in e.attrs.get("class", ""), prefer_visible=True)


def _user_menu(ob: Observation, user: str) -> Element | None:
    """The header's account menu (the logged-in user's name)."""
    return kit.link(ob, user, href=r"^/user/menu/", prefer_visible=True)


def _next_row(ob: Observation, topic: Element) -> Element | None:
    """The topic link listed nearest to ``topic``'s, both in view (the wrong-topic detour); None if none is."""
    if not kit.visible(ob, topic) or topic.bbox is None:
        return None
    y = (topic.bbox[1] + topic.bbox[3]) / 2
    rows = [e for e in kit.find_all(ob, lambda e: e.tag == "a" and "topic__link" in e.attrs.get("class", "")
                                    and re.match(r"/topic/\d+/", e.attrs.get("href", "")) is not None,
                                    visible_only=True)
            if e.bid != topic.bid and e.bbox is not None and kit.norm(e.text) != kit.norm(topic.text)]
    return min(rows, key=lambda e: abs((e.bbox[1] + e.bbox[3]) / 2 - y), default=None)


def _shown(ob: Observation, el: Element | None) -> bool:
    return el is not None and kit.visible(ob, el)


def _q(text: str) -> str:
    """A title or text as the purposes quote it."""
    return f'"{text}"'


# ----------------------------------------------------------------------------- WebArena's terms
#: WebArena ``program_html`` locators on Spirit's pages: a topic's title (the headline's own text,
#: without its edit link), its board (the breadcrumb's last item), the like link of its opening
#: post, its notification button, its participants (a private topic); a list of topics; a member's
#: latest comment (their profile).
TOPIC_TITLE = ("[...document.querySelector('h1.headline').childNodes].filter(n => n.nodeType === 3)"
               ".map(n => n.textContent).join('').trim()")
TOPIC_BOARD = "[...document.querySelectorAll('.breadcrumb_nav li')].pop().outerText"
OPENING_POST_LIKE = "document.querySelector('.comments_list__comment .comment-like').outerText"
NOTIFY_BUTTON = "document.querySelector('.comments__footer_menu__notify input[type=submit]').value"
PARTICIPANTS = "document.querySelector('.js-participants-content').textContent"
OPENING_POST = "document.querySelector('.comments_list__comment .comment__text').outerText"
TOPIC_LIST = "document.querySelector('.layout__topics').outerText"
LATEST_COMMENT = "document.querySelector('.comments_list__comment').outerText"


def comments_by(member: str) -> str:
    """The locator of the texts of ``member``'s comments on a topic's page, one a line."""
    return ("[...document.querySelectorAll('.comments_list__comment')].filter(c => c.querySelector("
            f"'.comment__info__username__link').outerText.trim() === '{member}').map(c => c.querySelector("
            "'.comment__text').outerText.trim()).join('\\n')")


def moderation_link(action: str) -> str:
    """The locator of a topic's Moderate menu item that posts to ``/topic/moderate/<action>/``."""
    return f"document.querySelector('.js-mod-content a[href*=\"/moderate/{action}/\"]').outerText"




class ForumTask(SiteTask):
    """A task on the forum site; helpers to read Spirit's database.

    Subclasses write :meth:`decide` and :meth:`goal_why`; :meth:`expert` wraps ``decide``: once
    the task's form went off it finishes (saying what the task was for, :meth:`goal_why`); when
    what it needs is missing (None, or :class:`~mag_dataset.live.expert_kit.NotOnPage`: an
    observation taken while the next page was still loading) it looks again, as a person
    waits, with a harmless scroll up, at most :attr:`WAITS` times in a row.

    A template's ``user`` is never one of :data:`~mag_dataset.sites.forum.drift.BYSTANDERS`
    (the members whose activity the drift writes), so no drift changes what a task's user sees
    as their own (tests/test_site_forum_drift.py checks it).

    Attributes:
        DETOURS: the detours the expert may take (None: none), one drawn per episode by
            :meth:`detour`.
    """

    site_class: ClassVar = SITE
    WAITS: ClassVar[int] = 3
    DETOURS: ClassVar[tuple[str | None, ...]] = (None,)

    def expert(self, ob, memory):
        if memory.get("sent"):  # the form went off: the page now shows its outcome
            return kit.why(kit.finish(), *self.goal_why())
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

    def goal_why(self) -> tuple[str, ...]:  # pragma: no cover - abstract
        """What the whole task is for, in a few phrasings (the ``finish`` step's purpose)."""
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

    def topic_url(self, title: str) -> str:
        """The absolute URL of the topic ``title`` by its id (Spirit redirects it to the topic's slug)."""
        return f"{self.site.base_url}/topic/{self.topic_row(title)[0]}/"

    def board_url(self, board: str) -> str:
        return f"{self.site.base_url}/category/{self.board_id(board)}/"

    def profile_url(self, username: str, tab: str = "") -> str:
        """The absolute URL of a member's profile: their comments, or the ``tab`` ("topics/", "likes/")."""
        return f"{self.site.base_url}/user/{tab}{self.user_id(username)}/"

    def detour(self, memory: dict[str, Any]) -> str | None:
        """This episode's detour (one of :attr:`DETOURS`, drawn once from the seed and kept in
        ``memory``); the wrong board of the ``board`` detour is drawn with it."""
        if "detour" not in memory:
            rng = random.Random(f"{self.get_task_id()}:{self.seed}:detour")
            memory["detour"] = rng.choice(self.DETOURS)
            board = self.params.get("board")
            memory["near_board"] = rng.choice(NEAR_BOARDS[board]) if board in NEAR_BOARDS else None
        return memory["detour"]

    def send(self, ob: Observation, memory: dict, button: Element | None, what: str, *why: str) -> Decision | None:
        """Click the button that submits the task's form (``why``: what for); the expert finishes on the next step."""
        return kit.once(memory, "sent", kit.why(kit.click(ob, kit.require(button, what)), *why))

    def open_topic(self, ob: Observation, memory: dict[str, Any], *aims: str) -> Decision | None:
        """Next step towards the topic ``params["title"]`` (None once there): the board dropdown,
        the board's page, the topic's link (clicked for ``aims``, what the task does there).

        With the ``board`` detour, the expert first opens a board the topic could well have
        been in (:data:`NEAR_BOARDS`), sees it is not there and goes back; with the ``topic``
        detour, it first opens the topic listed next to it, and goes back.
        """
        title, board = self.params["title"], self.params["board"]
        if _on_topic(ob, title):
            return None
        q = _q(title)
        wrong = memory.get("wrong_board")
        if wrong is not None and not memory.get("left_wrong"):
            if not _on_board(ob, wrong):
                return None  # the wrong board's page is still loading
            memory["left_wrong"] = True
            memory.pop("dropdown", None)  # the board list may have to be opened again
            return kit.why(Decision(ActionType.GO_BACK),
                           f"try another board, since {q} is not among the {wrong} topics",
                           f"leave {wrong}, which does not list {q}, and look elsewhere")
        other = memory.get("wrong_topic")
        if other is not None and not memory.get("left_topic"):
            if not kit.path(ob).startswith(other[1]):
                return None  # the other topic's page is still loading
            memory["left_topic"] = True
            return kit.why(Decision(ActionType.GO_BACK),
                           f"return to the list, since {_q(other[0])} is not the thread you want",
                           f"leave {_q(other[0])}, the wrong thread, and open {q} instead")
        pending = self.detour(memory) == "board" and wrong is None and memory.get("near_board") is not None
        topic = kit.link(ob, title, prefer_visible=True)
        on_board = _on_board(ob, board)
        if topic is not None and re.match(r"/topic/\d+/", topic.attrs.get("href", "")) and (
                on_board or (kit.visible(ob, topic) and not pending)):  # elsewhere, a link in view is a shortcut
            near = _next_row(ob, topic) if self.detour(memory) == "topic" and other is None else None
            if near is not None:
                name = " ".join(near.text.split())
                memory["wrong_topic"] = (name, re.match(r"/topic/\d+/", near.attrs["href"]).group())
                return kit.why(kit.click(ob, near), f"check {_q(name)}, next to {q} in the list, in case it is the "
                               "thread you mean", f"look into {_q(name)} first, which sits right by {q}")
            return kit.why(kit.click(ob, topic), *aims)
        if on_board:
            nxt = kit.link(ob, href=r"[?&]page=\d+", prefer_visible=True) if memory.get("paged", 0) < 5 else None
            if nxt is not None:
                memory["paged"] = memory.get("paged", 0) + 1
                return kit.why(kit.click(ob, nxt), f"look for {q} on the next page of the {board} board",
                               f"page on through {board}, since {q} is not among these topics")
            raise kit.NotOnPage(f"topic {title!r} not on its board's page")
        if pending:
            near = memory["near_board"]
            item = _board_item(ob, near)
            if _shown(ob, item):
                memory["wrong_board"] = near
                return kit.why(kit.click(ob, item), f"look for {q} in {near} first, a board it could well be in",
                               f"check the {near} board first, in case {q} was posted there")
        else:
            item = _board_item(ob, board)
            if _shown(ob, item):
                if wrong is not None:
                    return kit.why(kit.click(ob, item), f"open {board} this time, the board {q} was posted in",
                                   f"look for {q} in the {board} board instead")
                return kit.why(kit.click(ob, item), f"open the {board} board, where {q} was posted",
                               f"look for {q} among the {board} topics")
        dropdown = _dropdown(ob)
        if _shown(ob, dropdown) and not memory.get("dropdown"):
            if pending:
                why = (f"see which board holds {q}", f"list the forum's boards and guess where {q} was posted")
            elif wrong is not None:
                why = (f"open the board list again and pick {board} this time",
                       f"pick another board for {q}, {board} this time")
            else:
                why = (f"open the board list and go to {board}, where {q} was posted",
                       f"see the boards, since {q} is in the {board} board")
            return kit.once(memory, "dropdown", kit.why(kit.click(ob, dropdown), *why))
        return kit.why(Decision(ActionType.GOTO, url=re.sub(r"(https?://[^/]+).*", r"\1/", ob.url)),
                       "start again from the home page, where the boards are listed",
                       f"go back to the start and look for the {board} board")


def _pick_topic(rng: random.Random, pred=lambda i, t: True) -> tuple[int, seed_data.Topic]:
    topics = [(i, t) for i, t in enumerate(seed_data.build().topics) if pred(i, t)]
    return rng.choice(topics)


# ----------------------------------------------------------------------------- posting
class ReplyToTopic(ForumTask):
    template = "reply_to_topic"
    intent_template = 'Reply to the topic "{title}" in the {board} board with the text "{text}".'
    intent_templates = (
        intent_template,
        'Post a reply saying "{text}" in the "{title}" thread.',
        'Add "{text}" as a new reply to the {board} topic "{title}".',
        'Respond to "{title}" with the message "{text}".',
    )
    user = "alice_w"
    DETOURS = (None, "board", "topic")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The user's comments on the topic's page include the reply."""
        return [html_target(self.topic_url(self.params["title"]), comments_by(self.user), self.params["text"])]

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"reply to {q} with your message", f"post your reply in the {q} thread")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q}, the thread you are replying to",
                               f"get to the {q} discussion, where your reply goes")
        if step is not None:
            return step
        box = kit.field(ob, "comment", "textarea", prefer_visible=True)
        step = kit.why(kit.fill(ob, kit.require(box, "reply box"), self.params["text"]),
                       f"write your reply to {q}", "put the reply's text in the comment box at the end of the thread")
        if step is not None:
            return step
        button = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "submit"
                          and "comment__reply__actions__publish" in e.attrs.get("class", ""), prefer_visible=True)
        return self.send(ob, memory, button, "reply's Publish button", f"post your reply under {q}",
                         "publish the reply so that it appears in the thread")


class CreateTopic(ForumTask):
    template = "create_topic"
    intent_template = 'Create a new topic in the "{board}" board titled "{title}" with the message "{text}".'
    intent_templates = (
        intent_template,
        'Start a thread called "{title}" in {board} whose first post says "{text}".',
        'Post a new topic "{title}" to the {board} board, with "{text}" as its message.',
        'I want to ask the {board} board something: open a topic named "{title}" that says "{text}".',
    )
    user = "bob_builder"
    #: ``board``: no detour, another route: the topic is started from its board's page (the board
    #: comes chosen); ``near``: started from a board it could fit in, its own board then chosen in the form.
    DETOURS = (None, "board", "near")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The board lists the title; so do the user's topics; the user's latest comment (their
        profile) is in the topic and says the text."""
        p = self.params
        return [html_target(self.board_url(p["board"]), TOPIC_LIST, p["title"]),
                html_target(self.profile_url(self.user, "topics/"), TOPIC_LIST, p["title"]),
                html_target(self.profile_url(self.user), LATEST_COMMENT, p["title"], p["text"])]

    def goal_why(self):
        p = self.params
        return (f"start the topic {_q(p['title'])} in {p['board']}", f"post your new {p['board']} thread {_q(p['title'])}")

    def decide(self, ob, memory):
        p = self.params
        board, detour = p["board"], self.detour(memory)
        start = memory["near_board"] if detour == "near" else board  # the board whose page the topic is started from
        if not re.match(r"/topic/publish/", kit.path(ob)):
            if detour is None:
                return kit.why(kit.click(ob, kit.link(ob, "Create Topic", prefer_visible=True)),
                               f"start writing a new topic for the {board} board", "open the form for a new topic")
            if _on_board(ob, start):
                return kit.why(kit.click(ob, kit.link(ob, "Create Topic", prefer_visible=True)),
                               f"start a new topic right here in {start}",
                               f"write a new {start} topic from the board's own page")
            item = _board_item(ob, start)
            if _shown(ob, item):
                if detour == "near":
                    return kit.why(kit.click(ob, item), f"open {start}, a board where the topic could fit",
                                   f"start the topic from the {start} board, which seems close enough")
                return kit.why(kit.click(ob, item), f"open the {board} board, where the new topic belongs",
                               f"go to {board} first and start the topic from there")
            dropdown = _dropdown(ob)
            if _shown(ob, dropdown) and not memory.get("dropdown"):
                why = (("list the boards and pick one for the new topic", "find a board that fits the new topic")
                       if detour == "near" else (f"list the boards and open {board}, where the topic goes",
                                                 f"find the {board} board to post the new topic in"))
                return kit.once(memory, "dropdown", kit.why(kit.click(ob, dropdown), *why))
            return None
        step = kit.why(kit.fill(ob, kit.require(kit.field(ob, "title", "input", prefer_visible=True), "title field"),
                                p["title"]), f"give the new topic its title, {_q(p['title'])}",
                       "name the topic so that readers see what it is about")
        if step is not None:
            return step
        cat = kit.field(ob, "category", "select", prefer_visible=True)
        if cat is not None and not memory.get("category") and (
                detour == "near" or not re.match(r"/topic/publish/\d+/", kit.path(ob))):  # a board page chose it
            why = ((f"file the topic under {board}, where it belongs, not {start}",
                    f"move the new topic from {start} to the {board} board") if detour == "near" else
                   (f"post the topic in the {board} board", f"file the new topic under {board}"))
            step = kit.once(memory, "category", kit.why(kit.select(ob, cat, board), *why))
            if step is not None:
                return step
        step = kit.why(kit.fill(ob, kit.require(kit.field(ob, "comment", "textarea", prefer_visible=True), "message box"),
                                p["text"]), "write the topic's opening message",
                       f"add the first post of {_q(p['title'])}")
        if step is not None:
            return step
        return self.send(ob, memory, kit.button(ob, "Publish", prefer_visible=True), "Publish button",
                         f"post {_q(p['title'])} in {board}", "publish the new topic for everyone to read")


class EditOwnPost(ForumTask):
    template = "edit_own_post"
    intent_template = 'Edit your reply in the topic "{title}" so that it reads "{text}".'
    intent_templates = (
        intent_template,
        'Change what my comment in the "{title}" thread says to "{text}".',
        'I made a mistake in my reply to "{title}" in {board}; make it read "{text}" instead.',
        'Update my post in "{title}" to "{text}".',
    )
    user = "carol_j"
    DETOURS = (None, "board", "topic")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The user's one comment on the topic's page reads the text."""
        return [exact_target(self.topic_url(self.params["title"]), comments_by(self.user), self.params["text"])]

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"correct your reply in {q}", f"change the wording of your comment in {q}")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        if re.match(r"/comment/\d+/update/", kit.path(ob)):
            box = kit.field(ob, "comment", "textarea", prefer_visible=True)
            step = kit.why(kit.fill(ob, kit.require(box, "comment box"), self.params["text"]),
                           "replace your old wording with the new text", f"rewrite your reply in {q}")
            if step is not None:
                return step
            return self.send(ob, memory, kit.button(ob, "Publish", prefer_visible=True)
                             or kit.button(ob, "Update", prefer_visible=True), "Publish button",
                             "save the corrected reply", f"put the new wording of your reply into {q}")
        step = self.open_topic(ob, memory, f"open {q}, the thread with your reply",
                               f"find your reply in the {q} discussion")
        if step is not None:
            return step
        return kit.why(kit.click(ob, kit.link(ob, "edit", href=r"^/comment/\d+/update/", prefer_visible=True)),
                       "open your own reply for editing", f"change your comment in {q}")


class LikePost(ForumTask):
    template = "like_opening_post"
    intent_template = 'Like the opening post of the topic "{title}".'
    intent_templates = (
        intent_template,
        'Give a like to the first post in "{title}".',
        'I found the post that started the "{title}" thread in {board} helpful. Like it.',
        'Leave a like on the original post of "{title}".',
    )
    user = "dave_k"
    DETOURS = (None, "board", "topic")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The opening post's like link offers to remove the user's like."""
        return [html_target(self.topic_url(self.params["title"]), OPENING_POST_LIKE, "remove like")]

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"like the post that started {q}", f"show your appreciation for the opening post of {q}")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q} and like its first post", f"get to the {q} thread and its opening post")
        if step is not None:
            return step
        first = kit.find(ob, lambda e: e.tag == "a" and "js-like" in e.attrs.get("class", ""))
        if first is None:  # the opening post's like link comes first in the page
            return None
        if kit.norm(first.text).startswith("remove like"):
            return kit.why(kit.finish(), *self.goal_why())
        if memory.get("clicked"):  # one click only: a second one while the request is under way unlikes
            raise kit.NotOnPage("the like is under way")
        return kit.once(memory, "clicked", kit.why(kit.click(ob, first), f"like the opening post of {q}",
                                                   "add your like to the first post of the thread"))


class PrivateMessage(ForumTask):
    template = "send_private_message"
    intent_template = 'Send a private message to {to} titled "{title}" saying "{text}".'
    intent_templates = (
        intent_template,
        'Message {to} privately with the subject "{title}" and the text "{text}".',
        'Start a private conversation with {to} called "{title}" and tell them "{text}".',
        'Write to {to} in private: "{text}" (title it "{title}").',
    )
    user = "erin_m"
    #: ``unread``: look under Unread topics first, then open the account menu again.
    DETOURS = (None, "unread")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The page the agent ends on (a new private topic has no address known before) is the
        private topic: its title, the recipient among its participants, its first message."""
        p = self.params
        return [exact_target("last", TOPIC_TITLE, p["title"]), html_target("last", PARTICIPANTS, p["to"]),
                exact_target("last", OPENING_POST, p["text"])]

    def goal_why(self):
        p = self.params
        return (f"send {p['to']} the private message {_q(p['title'])}", f"write to {p['to']} in private")

    def decide(self, ob, memory):
        p, to = self.params, self.params["to"]
        path = kit.path(ob)
        if path.startswith("/topic/private/publish/"):
            for name, tag, text, why in (
                    ("title", "input", p["title"], (f"give the message its subject, {_q(p['title'])}",
                                                    "title the conversation so that it is easy to find")),
                    ("users", "input", to, (f"address the message to {to}", f"add {to} to the conversation")),
                    ("comment", "textarea", p["text"], (f"write what you want to tell {to}",
                                                        "put the message's text in the body"))):
                step = kit.why(kit.fill(ob, kit.require(kit.field(ob, name, tag, prefer_visible=True), f"{name} field"),
                                        text), *why)
                if step is not None:
                    return step
            return self.send(ob, memory, kit.button(ob, "Publish", prefer_visible=True), "Publish button",
                             f"send the message to {to}", f"deliver {_q(p['title'])} to {to}'s private topics")
        if path.rstrip("/") == "/topic/private":
            return kit.why(kit.click(ob, kit.link(ob, "Create private topic", prefer_visible=True)),
                           f"start a new private conversation with {to}", f"write a new private message to {to}")
        if self.detour(memory) == "unread" and not memory.get("unread"):
            item = kit.link(ob, "Unread topics", prefer_visible=True)
            if _shown(ob, item):
                return kit.once(memory, "unread", kit.why(
                    kit.click(ob, item), f"look for your conversations with {to} under Unread topics first",
                    "check whether private messages are kept with the unread topics"))
        item = kit.link(ob, "Private topics", prefer_visible=True)
        if _shown(ob, item):
            return kit.why(kit.click(ob, item), f"open your private conversations, where a message to {to} starts",
                           "see your private topics, the forum's direct messages")
        if path.startswith("/topic/unread"):
            why = ("open the account menu again, since private messages are not under Unread topics",
                   "look in your account menu once more for the private messages")
        else:
            why = ("open your account menu, where private messages are", f"find where to message {to} privately")
        return kit.why(kit.click(ob, _user_menu(ob, self.user)), *why)


# ----------------------------------------------------------------------------- moderation
class _ModerateTopic(ForumTask):
    action: ClassVar[str]  # the Moderate menu's item
    user = "mod_maria"
    DETOURS = (None, "board", "topic")

    def action_why(self) -> tuple[str, ...]:  # pragma: no cover - abstract
        """What the Moderate menu's item is clicked for."""
        raise NotImplementedError

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q}, the topic to moderate",
                               f"get to {q}, where its moderator tools are")
        if step is not None:
            return step
        item = kit.link(ob, self.action, prefer_visible=True)
        if _shown(ob, item):
            return self.send(ob, memory, item, f"{self.action} item", *self.action_why())
        return kit.why(kit.click(ob, kit.link(ob, "Moderate", prefer_visible=True)),
                       f"see the moderator actions for {q}", "open the topic's moderation tools")


class CloseTopic(_ModerateTopic):
    template = "moderator_close_topic"
    intent_template = 'As a moderator, close the topic "{title}" so that nobody can reply.'
    intent_templates = (
        intent_template,
        'Lock the "{title}" thread in {board}.',
        'No more replies should be possible in "{title}". Close it.',
        'The discussion "{title}" has run its course; close it to new posts.',
    )
    action = "Close topic"

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: not t.closed and t.board != "Announcements")
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        return bool(row[2]), "closed" if row[2] else "the topic is still open"

    def program_html(self) -> list[dict[str, Any]]:
        """The topic's Moderate menu offers to open it again."""
        return [html_target(self.topic_url(self.params["title"]), moderation_link("unlock"), "Open topic")]

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"close {q} to new replies", f"lock the {q} thread")

    def action_why(self):
        q = _q(self.params["title"])
        return (f"close {q} so that nobody can reply", "lock the thread against new posts")


class PinTopic(_ModerateTopic):
    template = "moderator_pin_topic"
    intent_template = 'As a moderator, pin the topic "{title}" to the top of the {board} board.'
    intent_templates = (
        intent_template,
        'Make "{title}" stay at the top of {board}.',
        'Pin the {board} thread "{title}".',
        'Members keep missing "{title}"; pin it so it is listed first in its board.',
    )
    action = "Pin topic"
    user = "mod_kenji"

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: not t.pinned)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        return bool(row[3]), "pinned" if row[3] else "the topic is not pinned"

    def program_html(self) -> list[dict[str, Any]]:
        """The topic's Moderate menu offers to unpin it (in its board, not globally)."""
        return [html_target(self.topic_url(self.params["title"]), moderation_link("unpin"), "Unpin topic")]

    def goal_why(self):
        p = self.params
        return (f"pin {_q(p['title'])} to the top of {p['board']}", f"keep {_q(p['title'])} listed first in its board")

    def action_why(self):
        p = self.params
        return (f"pin {_q(p['title'])} in {p['board']} only, not across the whole forum",
                f"keep {_q(p['title'])} at the top of the {p['board']} list")


class MoveTopic(ForumTask):
    template = "moderator_move_topic"
    intent_template = 'The topic "{title}" was posted in {board}; move it to the "{target}" board.'
    intent_templates = (
        intent_template,
        'Move "{title}" to {target}.',
        '"{title}" belongs in {target}, not {board}. Move it there.',
        'Put the thread "{title}" under the {target} board.',
    )
    user = "mod_maria"
    #: ``moderate``: look in the Moderate menu for a move first (it only moves single comments).
    DETOURS = (None, "board", "topic", "moderate")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: t.board != "Announcements")
        target = rng.choice([b.title for b in seed_data.BOARDS if b.title not in (t.board, "Announcements")])
        return {"title": t.title, "board": t.board, "target": target}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        ok = row[1] == self.board_id(self.params["target"])
        return ok, "moved" if ok else f"the topic is in category {row[1]}"

    def program_html(self) -> list[dict[str, Any]]:
        """The topic's breadcrumb ends with the target board."""
        return [exact_target(self.topic_url(self.params["title"]), TOPIC_BOARD, self.params["target"])]

    def goal_why(self):
        p = self.params
        return (f"move {_q(p['title'])} to {p['target']}", f"file {_q(p['title'])} under {p['target']} instead of {p['board']}")

    def decide(self, ob, memory):
        p, q = self.params, _q(self.params["title"])
        if re.match(r"/topic/update/\d+/", kit.path(ob)):
            cat = kit.field(ob, "category", "select", prefer_visible=True)
            if cat is not None and not memory.get("selected"):
                step = kit.once(memory, "selected", kit.why(kit.select(ob, cat, p["target"]),
                                                            f"move the topic to {p['target']}",
                                                            f"set {p['target']} as the topic's new board"))
                if step is not None:
                    return step
            return self.send(ob, memory, kit.button(ob, "Update", prefer_visible=True), "Update button",
                             f"save the move to {p['target']}", f"apply the new board to {q}")
        step = self.open_topic(ob, memory, f"open {q}, the topic to move", f"get to {q} and its settings")
        if step is not None:
            return step
        if self.detour(memory) == "moderate" and not memory.get("moderate"):
            return kit.once(memory, "moderate", kit.why(
                kit.click(ob, kit.link(ob, "Moderate", prefer_visible=True)),
                f"look in the Moderate menu for a way to move {q}", "check the moderator tools for a move option first"))
        edit = kit.link(ob, "edit", href=r"^/topic/update/\d+/", prefer_visible=True)
        if memory.get("moderate"):
            return kit.why(kit.click(ob, edit), "change the board in the topic's own settings, since the Moderate "
                           "menu only moves single comments", f"edit {q} instead, where its board can be changed")
        return kit.why(kit.click(ob, edit), f"open the topic's settings and change its board to {p['target']}",
                       f"edit {q} to take it out of {p['board']}")


# ----------------------------------------------------------------------------- information seeking
def _number(answer: str | None) -> int | None:
    m = re.search(r"-?\d+", answer or "")
    return int(m.group()) if m else None


class CountReplies(ForumTask):
    template = "count_replies"
    intent_template = 'How many replies (not counting the opening post) does the topic "{title}" have? Answer with a number.'
    intent_templates = (
        intent_template,
        'How many replies has "{title}" received so far?',
        'What is the number of replies in the {board} thread "{title}", leaving out the first post?',
        'Besides the original post, how many posts are there in "{title}"?',
    )
    user = "alice_w"
    answer_task = True
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        want = len(self.data().topic(self.params["title"]).posts) - 1
        got = _number(answer)
        return got == want, f"answered {got}, the topic has {want} replies"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(len(self.data().topic(self.params["title"]).posts) - 1)]}

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"tell how many replies {q} has", f"give the number of replies under {q}")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q} and count its replies", f"see the posts of {q}, to count the replies")
        if step is not None:
            return step
        authors = kit.find_all(ob, lambda e: e.tag == "a" and "comment__info__username__link" in e.attrs.get("class", ""))
        return kit.why(kit.finish(str(len(authors) - 1)), *self.goal_why()) if authors else None


class TopicAuthor(ForumTask):
    template = "topic_author"
    intent_template = 'Who started the topic "{title}"? Answer with the username.'
    intent_templates = (
        intent_template,
        'Which member created the "{title}" thread?',
        'Tell me the username of whoever opened "{title}" in {board}.',
        'Who wrote the first post of "{title}"?',
    )
    answer_task = True
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        want = self.data().topic(self.params["title"]).author
        ok = kit.norm(answer).strip(" .\"'") == want.lower()
        return ok, f"answered {answer!r}, the author is {want}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.data().topic(self.params["title"]).author]}

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"say who started {q}", f"name the member who opened {q}")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q} to see who wrote its first post",
                               f"find the author of {q} at the top of the thread")
        if step is not None:
            return step
        first = kit.find(ob, lambda e: e.tag == "a" and "comment__info__username__link" in e.attrs.get("class", ""))
        return kit.why(kit.finish(kit.norm(first.text)), *self.goal_why()) if first is not None else None


class SearchPhrase(ForumTask):
    template = "search_phrase"
    intent_template = ('Someone on the forum recommended "the {phrase} method". Search the forum for it and '
                       'answer with the title of the topic where it was mentioned.')
    intent_templates = (
        intent_template,
        'Which topic mentions "the {phrase} method"? Give its title.',
        'I remember a reply about "the {phrase} method". What is the title of the thread it was posted in?',
        'Find the discussion where "the {phrase} method" came up and tell me its title.',
    )
    user = "grace_h"
    answer_task = True
    #: ``vague``: search for only the method's last word first, then for its whole name.
    DETOURS = (None, "vague")

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"phrase": t.phrase, "title": t.title}

    def check(self, answer):
        ok = kit.norm(answer).strip(" .\"'") == kit.norm(self.params["title"]).strip(" .\"'")
        return ok, f"answered {answer!r}, the topic is {self.params['title']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["title"]]}

    def goal_why(self):
        phrase = self.params["phrase"]
        return (f"name the topic where the {phrase} method was mentioned",
                f"give the title of the thread that recommends the {phrase} method")

    def decide(self, ob, memory):
        phrase = self.params["phrase"]
        vague = f"{phrase.split()[-1]} method"
        query = vague if self.detour(memory) == "vague" and not memory.get("refined") else phrase
        if kit.path(ob).startswith("/search/") and kit.query(ob).get("q"):
            searched = kit.norm(kit.query(ob)["q"][0])
            hits = kit.find_all(ob, lambda e: e.tag == "a" and "topic__link" in e.attrs.get("class", ""))
            if searched != kit.norm(vague) or self.detour(memory) != "vague":
                return kit.why(kit.finish(" ".join(hits[0].text.split())), *self.goal_why()) if len(hits) == 1 else None
            if not memory.get("refined"):
                if len(hits) < 2:
                    return None  # the results are still loading
                memory["refined"] = True  # several topics mention a method of that name: search again
                query = phrase
        q = kit.field(ob, "q", "input", prefer_visible=True)
        if q is not None and kit.visible(ob, q):  # the header's search box, opened by its icon
            if query == vague:
                why = (f"search for the {vague} first, the part of the name you are sure of",
                       f"try a short search for the {vague}")
            elif memory.get("refined"):
                why = (f"narrow the search to the {phrase} method, since the {vague} search found several topics",
                       f"search again with the whole name, the {phrase} method")
            else:
                why = (f"look up the topic that mentions the {phrase} method", f"find where the {phrase} method came up")
            step = kit.why(kit.fill(ob, q, query), *why)
            return step or kit.why(kit.click(ob, kit.require(kit.button(ob, "Search", prefer_visible=True), "Search button")),
                                   f"list the topics that mention the {query} method" if query == phrase else
                                   f"see which topics mention {_q(vague)}",
                                   "run the search and see which topics come up")
        if memory.get("refined"):
            why = (f"open the search box again for the whole name, the {phrase} method",
                   f"search once more, as the {vague} search found several topics")
        else:
            why = (f"open the search box to look for the {phrase} method", "search the forum for the method's name")
        return kit.why(kit.click(ob, kit.link(ob, href=r"^/search/$", prefer_visible=True)), *why)


# ----------------------------------------------------------------------------- profile
class UpdateLocation(ForumTask):
    template = "update_profile_location"
    intent_template = 'Change the location shown on your profile to "{city}".'
    intent_templates = (
        intent_template,
        'Set my profile location to {city}.',
        'I have moved to {city}; update my location on the forum.',
        'Update the location in my profile settings to "{city}".',
    )
    user = "grace_h"
    #: ``email``: look at the e-mail settings first, then go back to the profile form.
    DETOURS = (None, "email")

    def sample(self, rng):
        return {"city": rng.choice(CITIES)}

    def check(self, answer):
        loc = self.site.query("select location from spirit_user_userprofile where user_id = ?",
                              (self.user_id(self.user),))[0][0]
        return loc == self.params["city"], f"location is {loc!r}"

    def program_html(self) -> list[dict[str, Any]]:
        """The profile form's location field holds the city."""
        return [exact_target(f"{self.site.base_url}/user/", "document.querySelector('#id_location').value",
                             self.params["city"])]

    def goal_why(self):
        city = self.params["city"]
        return (f"change your profile location to {city}", f"show {city} as your location")

    def decide(self, ob, memory):
        city = self.params["city"]
        path = kit.path(ob)
        if path.startswith("/user/email-change/"):
            return kit.once(memory, "back", kit.why(
                Decision(ActionType.GO_BACK), "return to the profile form, since the e-mail page has no location field",
                "leave the e-mail settings, which are not where the location is set"))
        if path == "/user/":
            if self.detour(memory) == "email" and not memory.get("email"):
                mail = kit.link(ob, href=r"^/user/email-change/", prefer_visible=True)
                if mail is not None:
                    return kit.once(memory, "email", kit.why(
                        kit.click(ob, mail), "look at the account settings behind your e-mail address first",
                        "check the e-mail settings in case the location is kept there"))
            box = kit.field(ob, "location", "input", prefer_visible=True)
            step = kit.why(kit.fill(ob, kit.require(box, "location field"), city), f"set your location to {city}",
                           f"enter {city} as the place you live")
            if step is not None:
                return step
            return self.send(ob, memory, kit.button(ob, "Save", prefer_visible=True), "Save button",
                             f"store {city} as your new location", "keep the updated profile details")
        prefs = kit.link(ob, "Preferences", href=r"^/user/$", prefer_visible=True)
        if prefs is not None:
            return kit.why(kit.click(ob, prefs), "edit your profile details, where the location is set",
                           f"change the location to {city} in your profile settings")
        item = kit.link(ob, "Profile", href=r"^/user/\d+/", prefer_visible=True)
        if _shown(ob, item):
            return kit.why(kit.click(ob, item), "open your profile page, where its settings are linked",
                           "get to your own profile and its settings")
        return kit.why(kit.click(ob, _user_menu(ob, self.user)), "open your account menu to reach your profile",
                       "find your profile settings under your user name")


# ----------------------------------------------------------------------------- shared by the newer templates
#: Words and phrases the search-results template asks for: each is in at least one topic title.
SEARCH_TERMS = ("laptop", "backup", "keyboard", "games", "battery", "monitor", "coffee", "password", "printer",
                "thermal paste", "Bluetooth", "podcasts", "SSD")
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _dates(answer: str | None) -> set[tuple[int, int, int]]:
    """Every date written in ``answer`` as (year, month, day): ISO (2024-01-14), day first
    (14 Jan 2024, 14th of January 2024) or month first (Jan. 14, 2024, January 14th 2024)."""
    text = (answer or "").lower()
    found = {(int(y), int(m), int(d)) for y, m, d in re.findall(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", text)}

    def month(name: str) -> int | None:
        return MONTHS.index(name[:3]) + 1 if name[:3] in MONTHS else None

    for d, name, y in re.findall(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]{3,9})\.?,?\s+(\d{4})\b", text):
        if month(name):
            found.add((int(y), month(name), int(d)))
    for name, d, y in re.findall(r"\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", text):
        if month(name):
            found.add((int(y), month(name), int(d)))
    return found


def _board_name(text: str | None) -> str:
    """A board's name as answers are compared: "&" and "and" alike, punctuation and case ignored."""
    return " ".join(re.sub(r"[^\w\s]", " ", kit.norm(text).replace("&", " and ")).split())


def _author_links(ob: Observation) -> list[Element]:
    """The posters' name links of the topic's posts, in the order of the posts."""
    return kit.find_all(ob, lambda e: e.tag == "a" and "comment__info__username__link" in e.attrs.get("class", ""))


def _user_tab(ob: Observation, tab: str) -> Element | None:
    """A profile's tab link (``topics``, ``likes``), not the header's "Topics" (the active topics)."""
    return kit.link(ob, href=rf"^/user/{tab}/\d+/", prefer_visible=True)


def _post_action(ob: Observation, member: str, href: str) -> Element | None:
    """The link of ``member``'s post whose ``href`` matches ``href`` (its report or quote link): the
    first such link after the member's name, in the order of the page."""
    seen = False
    for el in ob.elements.values():
        if el.tag == "a" and "comment__info__username__link" in el.attrs.get("class", ""):
            seen = kit.norm(el.text) == kit.norm(member)
        elif seen and el.tag == "a" and re.match(href, el.attrs.get("href", "")):
            return el
    return None


def _one_time_repliers(t: seed_data.Topic, *besides: str) -> list[str]:
    """Members with exactly one reply in ``t``, other than its author and ``besides``."""
    names = [p.author for p in t.posts[1:]]
    return sorted({n for n in names if names.count(n) == 1 and n not in (t.author, *besides)})


def _topic_titles(ob: Observation) -> list[Element]:
    """The topic links of a topic list (a board, a profile's topics, search results)."""
    return kit.find_all(ob, lambda e: e.tag == "a" and "topic__link" in e.attrs.get("class", ""))


class _SearchingTask(ForumTask):
    """A task that starts with the header's search box."""

    def search_for(self, ob: Observation, memory: dict[str, Any], text: str, *aims: str) -> Decision | None:
        """Next step of a search for ``text`` (typed for ``aims``); None once its results are shown."""
        if kit.path(ob).startswith("/search/") and kit.norm(kit.query(ob).get("q", [""])[0]) == kit.norm(text):
            return None
        box = kit.field(ob, "q", "input", prefer_visible=True)
        if box is not None and kit.visible(ob, box):
            step = kit.why(kit.fill(ob, box, text), *aims)
            return step or kit.why(kit.click(ob, kit.require(kit.button(ob, "Search", prefer_visible=True),
                                                              "Search button")),
                                   f"run the search for {_q(text)}", "see which topics the search finds")
        return kit.why(kit.click(ob, kit.link(ob, href=r"^/search/$", prefer_visible=True)),
                       "open the forum's search box", f"get the search box to look for {_q(text)}")


def _quoted_title(title: str) -> str:
    """A title as a search query: its words (a colon or a question mark would read as query syntax)."""
    return " ".join(re.sub(r"[^\w\s'-]", " ", title).split())


# ----------------------------------------------------------------------------- navigation
class OpenAuthorProfile(ForumTask):
    template = "open_topic_author_profile"
    kind = "navigation"
    intent_template = 'Open the profile page of the user who started the topic "{title}".'
    intent_templates = (
        intent_template,
        'Take me to the profile of whoever created "{title}".',
        'Show me the page of the member who opened the {board} thread "{title}".',
        'I want to see the profile of the original poster of "{title}".',
    )
    user = "dave_k"
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: t.author != self.user)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        author = self.data().topic(self.params["title"]).author
        return self.on_page(f"/user/{self.user_id(author)}/{slugify(author)}/")

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"show the profile of the member who started {q}", f"end on the profile page of {q}'s author")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q} to see who started it", f"find the author of {q} in the thread")
        if step is not None:
            return step
        authors = _author_links(ob)
        return self.send(ob, memory, authors[0] if authors else None, "opening post's author",
                         f"open the profile of the member who wrote the first post of {q}",
                         f"go to the page of {q}'s original poster")


class OpenBoard(ForumTask):
    template = "open_board"
    kind = "navigation"
    intent_template = "Show me the topics of the {board} board."
    intent_templates = (
        intent_template,
        "Open the {board} board.",
        "Take me to the list of threads in {board}.",
        "I want to browse what people posted in the {board} category.",
    )
    user = "alice_w"

    def sample(self, rng):
        return {"board": rng.choice([b.title for b in seed_data.BOARDS])}

    def check(self, answer):
        board = self.params["board"]
        return self.on_page(f"/category/{self.board_id(board)}/{slugify(board)}/")

    def goal_why(self):
        board = self.params["board"]
        return (f"show the topics of the {board} board", f"end on the list of {board} threads")

    def decide(self, ob, memory):
        board = self.params["board"]
        if _on_board(ob, board):
            return kit.why(kit.finish(), *self.goal_why())
        item = _board_item(ob, board)
        if _shown(ob, item):
            return kit.why(kit.click(ob, item), f"open the {board} board and its topics",
                           f"pick {board} among the forum's boards")
        dropdown = _dropdown(ob)
        if _shown(ob, dropdown) and not memory.get("dropdown"):
            return kit.once(memory, "dropdown", kit.why(kit.click(ob, dropdown), f"list the forum's boards to find {board}",
                                                        "open the board list"))
        return None


class OpenSearchResults(_SearchingTask):
    template = "open_search_results"
    kind = "navigation"
    intent_template = 'Open the search results for "{term}".'
    intent_templates = (
        intent_template,
        'Search the forum for "{term}" and show me the results.',
        'Show me which topics come up when searching for "{term}".',
        'I want to see the forum search results for "{term}".',
    )
    user = "grace_h"

    def sample(self, rng):
        return {"term": rng.choice(SEARCH_TERMS)}

    def check(self, answer):
        return self.on_page("/search/", q=self.params["term"])

    def goal_why(self):
        term = self.params["term"]
        return (f"show the search results for {_q(term)}", f"end on the topics matching {_q(term)}")

    def decide(self, ob, memory):
        term = self.params["term"]
        step = self.search_for(ob, memory, term, f"search for {_q(term)}", f"type {_q(term)} into the search box")
        return step if step is not None else kit.why(kit.finish(), *self.goal_why())


class OpenMethodTopic(_SearchingTask):
    template = "open_method_topic"
    kind = "navigation"
    intent_template = 'Take me to the thread where someone recommended "the {phrase} method".'
    intent_templates = (
        intent_template,
        'Open the topic in which "the {phrase} method" is mentioned.',
        'Somebody wrote about "the {phrase} method" in a reply; show me that discussion.',
        'Go to the thread that talks about "the {phrase} method".',
    )
    user = "grace_h"

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"phrase": t.phrase, "title": t.title}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        return self.on_page(f"/topic/{row[0]}/{slugify(self.params['title'])}/")

    def goal_why(self):
        phrase = self.params["phrase"]
        return (f"show the thread that mentions the {phrase} method", f"end on the topic recommending the {phrase} method")

    def decide(self, ob, memory):
        phrase = self.params["phrase"]
        step = self.search_for(ob, memory, phrase, f"look for the topic that mentions the {phrase} method",
                               f"search for {_q(phrase)}, the method's name")
        if step is not None:
            return step
        hits = _topic_titles(ob)
        return self.send(ob, memory, hits[0] if len(hits) == 1 else None, "search result",
                         f"open the one topic that mentions the {phrase} method",
                         f"go to the thread where the {phrase} method came up")


class _AuthorTabTask(ForumTask):
    """The topic's author's profile, then one of its tabs (``tab``: ``topics``, ``likes``)."""

    tab: ClassVar[str]
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: t.author != self.user)
        return {"title": t.title, "board": t.board}

    def tab_why(self) -> tuple[str, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_tab(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        """What to do on the author's tab (navigation: nothing, the wrapper finishes)."""
        return None

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        if memory.get("tab") and kit.path(ob).startswith(f"/user/{self.tab}/"):
            return self.on_tab(ob, memory)
        if re.match(r"/user/\d+/", kit.path(ob)) and memory.get("profile"):
            return kit.once(memory, "tab", kit.why(kit.click(ob, _user_tab(ob, self.tab)), *self.tab_why()))
        step = self.open_topic(ob, memory, f"open {q} to find out who started it",
                               f"get to {q}, whose first post names its author")
        if step is not None:
            return step
        authors = _author_links(ob)
        return kit.once(memory, "profile", kit.why(kit.click(ob, authors[0] if authors else None),
                                                   f"open the profile of {q}'s author",
                                                   f"go to the page of the member who started {q}"))


class _AuthorTabPage(_AuthorTabTask):
    """Navigation: end on the author's tab (``/user/<tab>/<id>/<slug>/``)."""

    kind = "navigation"

    def check(self, answer):
        author = self.data().topic(self.params["title"]).author
        return self.on_page(f"/user/{self.tab}/{self.user_id(author)}/{slugify(author)}/")

    def on_tab(self, ob, memory):
        return kit.why(kit.finish(), *self.goal_why())


class OpenAuthorTopics(_AuthorTabPage):
    template = "open_topic_author_topics"
    intent_template = 'Show me all the topics started by the author of "{title}".'
    intent_templates = (
        intent_template,
        'List every thread opened by the member who created "{title}".',
        'Whoever started "{title}" in {board}: show me the other topics they started.',
        'Open the list of topics posted by the original poster of "{title}".',
    )
    user = "erin_m"
    tab = "topics"

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"show the topics started by {q}'s author", f"end on the list of threads by the member who opened {q}")

    def tab_why(self):
        return ("list the topics this member started", "switch to the profile's Topics tab")


class OpenAuthorLikes(_AuthorTabPage):
    template = "open_topic_author_likes"
    intent_template = 'Show me the posts that the author of "{title}" has liked.'
    intent_templates = (
        intent_template,
        'Which posts did the member who started "{title}" like? Open that list.',
        'Open the likes of whoever created the {board} topic "{title}".',
        'Take me to the list of posts liked by the original poster of "{title}".',
    )
    user = "carol_j"
    tab = "likes"

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"show the posts liked by {q}'s author", f"end on the likes of the member who opened {q}")

    def tab_why(self):
        return ("see the posts this member liked", "switch to the profile's Likes tab")


class OpenLastReplierProfile(ForumTask):
    template = "open_last_replier_profile"
    kind = "navigation"
    intent_template = 'Open the profile of the member who wrote the latest reply in "{title}".'
    intent_templates = (
        intent_template,
        'Who replied last to "{title}"? Take me to their profile page.',
        'Show me the profile of the last person to post in the {board} thread "{title}".',
        'Go to the user page of whoever posted the most recent reply to "{title}".',
    )
    user = "dave_k"
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: t.posts[-1].author != self.user)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        last = self.data().topic(self.params["title"]).posts[-1].author
        return self.on_page(f"/user/{self.user_id(last)}/{slugify(last)}/")

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"show the profile of the last member to reply in {q}", f"end on the page of {q}'s latest poster")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q} and see who replied last",
                               f"get to {q}, whose newest reply is at the bottom")
        if step is not None:
            return step
        authors = _author_links(ob)
        return self.send(ob, memory, authors[-1] if authors else None, "latest reply's author",
                         f"open the profile of whoever wrote the latest reply in {q}",
                         "go to the page of the member who posted last")


class OpenTopicBoard(_SearchingTask):
    template = "open_topic_board"
    kind = "navigation"
    intent_template = 'Show me the other topics of the board that "{title}" was posted in.'
    intent_templates = (
        intent_template,
        'Open the board where the topic "{title}" lives.',
        'Take me to the category "{title}" belongs to.',
        'I liked "{title}"; show me the list of threads in its board.',
    )
    user = "erin_m"

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        board = self.params["board"]
        return self.on_page(f"/category/{self.board_id(board)}/{slugify(board)}/")

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"show the board {q} was posted in", f"end on the list of topics next to {q}")

    def decide(self, ob, memory):
        title = self.params["title"]
        q = _q(title)
        if _on_topic(ob, title):
            crumb = kit.find(ob, lambda e: e.tag == "a" and re.match(r"/category/\d+/", e.attrs.get("href", ""))
                             is not None and not _in_row(ob, e))
            return self.send(ob, memory, crumb, "board link above the title", f"open the board {q} is filed under",
                             f"follow the link to {q}'s board")
        step = self.search_for(ob, memory, _quoted_title(title), f"find {q}, since its board is not given",
                               f"search for the topic {q}")
        if step is not None:
            return step
        hit = next((e for e in _topic_titles(ob) if kit.norm(e.text) == kit.norm(title)), None)
        return kit.why(kit.click(ob, hit), f"open {q} to see which board it is in",
                       f"go to {q}, whose page names its board")


# ----------------------------------------------------------------------------- information seeking (newer)
class CountAuthorTopics(_AuthorTabTask):
    template = "count_author_topics"
    intent_template = 'How many topics has the member who started "{title}" opened on the forum? Answer with a number.'
    intent_templates = (
        intent_template,
        'Count the threads started by the author of "{title}".',
        'The original poster of "{title}" in {board}: how many topics have they created in all?',
        'How many topics did whoever wrote "{title}" start?',
    )
    user = "bob_builder"
    answer_task = True
    tab = "topics"

    def check(self, answer):
        author = self.data().topic(self.params["title"]).author
        want = sum(t.author == author for t in self.data().topics)
        got = _number(answer)
        return got == want, f"answered {got}, {author} started {want} topics"

    def reference_answers(self) -> dict[str, Any]:
        author = self.data().topic(self.params["title"]).author
        return {"must_include": [str(sum(t.author == author for t in self.data().topics))]}

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"tell how many topics {q}'s author started", f"give the number of threads by the member who opened {q}")

    def tab_why(self):
        return ("list the topics this member started, to count them", "open the profile's Topics tab and count")

    def on_tab(self, ob, memory):
        rows = _topic_titles(ob)
        return kit.why(kit.finish(str(len(rows))), *self.goal_why()) if rows else None


class LastReplyDate(ForumTask):
    template = "last_reply_date"
    intent_template = 'When was the topic "{title}" last replied to? Give the date.'
    intent_templates = (
        intent_template,
        'On what day was the latest reply in "{title}" posted?',
        'What is the date of the most recent post in the {board} thread "{title}"?',
        'When did somebody last reply to "{title}"?',
    )
    user = "bob_builder"
    answer_task = True
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        day = self.data().topic(self.params["title"]).posts[-1].date[:10]
        want = tuple(int(x) for x in day.split("-"))
        got = _dates(answer)
        return want in got, f"answered {answer!r}, the last reply is of {day}"

    def reference_answers(self) -> dict[str, Any]:
        # as the forum shows it ("12 Mar 2024", the site's date format "j M Y")
        y, mo, d = (int(x) for x in self.data().topic(self.params["title"]).posts[-1].date[:10].split("-"))
        return {"must_include": [f"{d} {MONTHS[mo - 1].title()} {y}"]}

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"say when {q} was last replied to", f"give the date of the newest post in {q}")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q} and look at its newest reply",
                               f"get to {q} to see when its last reply was posted")
        if step is not None:
            return step
        dates = kit.find_all(ob, lambda e: e.tag == "ul" and "comment__info__date" in e.attrs.get("class", ""))
        day = " ".join((dates[-1].all_text or dates[-1].text).split()).split(",")[0] if dates else ""
        return kit.why(kit.finish(day), *self.goal_why()) if _dates(day) else None


class TopicBoard(_SearchingTask):
    template = "topic_board"
    intent_template = 'Which board is the topic "{title}" in? Answer with the board name.'
    intent_templates = (
        intent_template,
        'In which category was "{title}" posted?',
        'Tell me the board that the thread "{title}" belongs to.',
        'Where on the forum is "{title}" filed? Give the board.',
    )
    user = "alice_w"
    answer_task = True

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        ok = _board_name(answer) == _board_name(self.params["board"])
        return ok, f"answered {answer!r}, the topic is in {self.params['board']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["board"]]}

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"name the board {q} is in", f"tell which board holds {q}")

    def decide(self, ob, memory):
        title = self.params["title"]
        q = _q(title)
        if _on_topic(ob, title):
            crumb = kit.find(ob, lambda e: e.tag == "a" and re.match(r"/category/\d+/", e.attrs.get("href", ""))
                             is not None and not _in_row(ob, e))
            return kit.why(kit.finish(" ".join(crumb.text.split())), *self.goal_why()) if crumb is not None else None
        step = self.search_for(ob, memory, _quoted_title(title), f"find {q} with the search",
                               f"search for the topic {q}")
        if step is not None:
            return step
        hit = next((e for e in _topic_titles(ob) if kit.norm(e.text) == kit.norm(title)), None)
        return kit.why(kit.click(ob, hit), f"open {q}, whose page names its board",
                       f"go to {q} to read the board above its title")


class OpeningPostLikes(ForumTask):
    template = "count_opening_post_likes"
    intent_template = 'How many likes does the opening post of "{title}" have? Answer with a number.'
    intent_templates = (
        intent_template,
        'How many people liked the first post in "{title}"?',
        'Count the likes on the post that started the {board} thread "{title}".',
        'What is the like count of the original post of "{title}"?',
    )
    user = "grace_h"
    answer_task = True
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: t.author != self.user)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        s = self.data()
        i = next(i for i, t in enumerate(s.topics) if t.title == self.params["title"])
        want = sum(like.topic == i and like.post == 0 for like in s.likes)
        got = _number(answer)
        return got == want, f"answered {got}, the opening post has {want} likes"

    def reference_answers(self) -> dict[str, Any]:
        s = self.data()
        i = next(i for i, t in enumerate(s.topics) if t.title == self.params["title"])
        return {"must_include": [str(sum(like.topic == i and like.post == 0 for like in s.likes))]}

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"tell how many likes the first post of {q} has", f"give the like count of {q}'s opening post")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q} and look at its first post",
                               f"get to {q} to read the likes of its opening post")
        if step is not None:
            return step
        first = kit.find(ob, lambda e: e.tag == "a" and "js-like" in e.attrs.get("class", ""))
        n = re.search(r"\((\d+)\)", first.text or "") if first is not None else None
        return kit.why(kit.finish(n.group(1)), *self.goal_why()) if n else None


# ----------------------------------------------------------------------------- state (newer)
class FollowTopic(ForumTask):
    template = "follow_topic"
    intent_template = 'Notify me of new replies in the topic "{title}".'
    intent_templates = (
        intent_template,
        'Subscribe to "{title}" so that I hear about new posts.',
        'I want to follow the {board} thread "{title}"; turn on its notifications.',
        'Watch "{title}" for replies.',
    )
    user = "carol_j"
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng)
        return {"title": t.title, "board": t.board}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        rows = self.site.query("select is_active from spirit_topic_notification_topicnotification "
                               "where topic_id = ? and user_id = ?", (row[0], self.user_id(self.user)))
        ok = bool(rows) and bool(rows[0][0])
        return ok, "subscribed" if ok else f"notification rows {rows!r}"

    def program_html(self) -> list[dict[str, Any]]:
        """The topic's notification button offers to stop them."""
        return [exact_target(self.topic_url(self.params["title"]), NOTIFY_BUTTON, "Unnotify Me")]

    def goal_why(self):
        q = _q(self.params["title"])
        return (f"get notified of new replies in {q}", f"follow {q}")

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        step = self.open_topic(ob, memory, f"open {q}, the thread to follow", f"get to {q} and its notification button")
        if step is not None:
            return step
        return self.send(ob, memory, kit.button(ob, "Notify Me", prefer_visible=True), "Notify Me button",
                         f"subscribe to replies in {q}", "turn on notifications for this thread")


class ReportReply(ForumTask):
    template = "report_reply_as_spam"
    intent_template = "Report {member}'s reply in the topic \"{title}\" as spam."
    intent_templates = (
        intent_template,
        'Flag the post {member} wrote in "{title}" as spam.',
        '{member} posted spam in the {board} thread "{title}". Report their reply.',
        'Send a spam report about {member}\'s comment in "{title}".',
    )
    user = "alice_w"
    DETOURS = (None, "board", "topic")
    webarena_note = ("Spirit shows a report to nobody but the administrators (its admin's flag list): no page "
                     "that the reporting member can open tells that the reply was reported, or why.")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: bool(_one_time_repliers(t, self.user)))
        return {"title": t.title, "board": t.board, "member": rng.choice(_one_time_repliers(t, self.user))}

    def check(self, answer):
        row = self.topic_row(self.params["title"])
        rows = self.site.query(
            "select f.reason from spirit_comment_flag_flag f join spirit_comment_comment c on c.id = f.comment_id "
            "where c.topic_id = ? and c.user_id = ? and f.user_id = ?",
            (row[0], self.user_id(self.params["member"]), self.user_id(self.user)))
        ok = len(rows) == 1 and rows[0][0] == 0
        return ok, f"your reports on {self.params['member']}'s reply: {rows!r} (0: spam)"

    def goal_why(self):
        p = self.params
        return (f"report {p['member']}'s reply in {_q(p['title'])} as spam", f"flag {p['member']}'s post to the moderators")

    def decide(self, ob, memory):
        p, q = self.params, _q(self.params["title"])
        member = p["member"]
        if re.match(r"/comment/flag/\d+/create/", kit.path(ob)):
            reason = kit.field(ob, "reason", "select", prefer_visible=True)
            if reason is not None and not memory.get("reason"):
                step = kit.once(memory, "reason", kit.why(kit.select(ob, reason, "Spam"), "give spam as the reason",
                                                          f"say that {member}'s post is spam"))
                if step is not None:
                    return step
            return self.send(ob, memory, kit.button(ob, "Report", prefer_visible=True), "Report button",
                             "send the report to the moderators", f"file the spam report on {member}'s reply")
        step = self.open_topic(ob, memory, f"open {q}, where {member} replied", f"find {member}'s reply in {q}")
        if step is not None:
            return step
        report = _post_action(ob, member, r"/comment/flag/\d+/create/")
        return kit.why(kit.click(ob, report), f"report {member}'s reply", f"open the report form of {member}'s post")


class RenameOwnTopic(ForumTask):
    template = "rename_own_topic"
    intent_template = 'Rename your topic "{title}" to "{new_title}".'
    intent_templates = (
        intent_template,
        'Change the title of my thread "{title}" to "{new_title}".',
        'My {board} topic "{title}" should be called "{new_title}" now. Update it.',
        'Edit the title of "{title}", which I started, so that it reads "{new_title}".',
    )
    user = "carol_j"
    DETOURS = (None, "board", "topic")
    #: How the new title is made from the old one.
    RENAMES = ("[Solved] {title}", "{title} (updated)", "{title} - summary inside", "Update: {title}")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: t.author == self.user and not t.closed)
        return {"title": t.title, "board": t.board, "new_title": rng.choice(self.RENAMES).format(title=t.title)}

    def check(self, answer):
        p = self.params
        new = self.site.query("select user_id from spirit_topic_topic where title = ?", (p["new_title"],))
        old = self.site.query("select count(*) from spirit_topic_topic where title = ?", (p["title"],))[0][0]
        ok = len(new) == 1 and new[0][0] == self.user_id(self.user) and old == 0
        return ok, f"{len(new)} topics titled {p['new_title']!r}, {old} still titled {p['title']!r}"

    def program_html(self) -> list[dict[str, Any]]:
        """The topic's page (by its id) is titled the new title."""
        return [exact_target(self.topic_url(self.params["title"]), TOPIC_TITLE, self.params["new_title"])]

    def goal_why(self):
        p = self.params
        return (f"rename {_q(p['title'])} to {_q(p['new_title'])}", f"give your topic the title {_q(p['new_title'])}")

    def decide(self, ob, memory):
        p, q = self.params, _q(self.params["title"])
        if re.match(r"/topic/update/\d+/", kit.path(ob)):
            box = kit.field(ob, "title", "input", prefer_visible=True)
            step = kit.why(kit.fill(ob, kit.require(box, "title field"), p["new_title"]),
                           f"type the new title, {_q(p['new_title'])}", "replace the topic's old title")
            if step is not None:
                return step
            return self.send(ob, memory, kit.button(ob, "Update", prefer_visible=True), "Update button",
                             "save the new title", f"rename {q} for good")
        step = self.open_topic(ob, memory, f"open {q}, the topic you want to rename", f"get to your topic {q}")
        if step is not None:
            return step
        return kit.why(kit.click(ob, kit.link(ob, "edit", href=r"^/topic/update/\d+/", prefer_visible=True)),
                       f"open the settings of {q}, where its title can be changed", "edit your topic's title")


class QuoteReply(ForumTask):
    template = "reply_quoting_post"
    intent_template = 'In the topic "{title}", reply to {member}\'s post quoting it, with the text "{text}".'
    intent_templates = (
        intent_template,
        'Quote {member}\'s reply in "{title}" and answer it with "{text}".',
        'Respond to what {member} said in the {board} thread "{title}": quote their post and add "{text}".',
        'Post "{text}" in "{title}" as a reply that quotes {member}.',
    )
    user = "grace_h"
    DETOURS = (None, "board", "topic")

    def sample(self, rng):
        _, t = _pick_topic(rng, lambda i, t: not t.closed and bool(_one_time_repliers(t, self.user)))
        return {"title": t.title, "board": t.board, "member": rng.choice(_one_time_repliers(t, self.user)),
                "text": rng.choice(REPLY_TEXTS).format(word=rng.choice(WORDS))}

    def check(self, answer):
        p = self.params
        row = self.topic_row(p["title"])
        rows = [r[0] for r in self.site.query(
            "select comment from spirit_comment_comment where topic_id = ? and user_id = ? and not is_removed",
            (row[0], self.user_id(self.user)))]
        quoting = [c for c in rows if f"@{p['member']} said:" in c and p["text"] in c]
        return len(quoting) == 1, f"{len(rows)} posts by {self.user} in the topic, {len(quoting)} quoting {p['member']}"

    def program_html(self) -> list[dict[str, Any]]:
        """The user's comments on the topic's page quote the member and say the text."""
        p = self.params
        return [html_target(self.topic_url(p["title"]), comments_by(self.user), f"@{p['member']} said:", p["text"])]

    def goal_why(self):
        p = self.params
        return (f"answer {p['member']}'s post in {_q(p['title'])}, quoting it", f"reply to {p['member']} with a quote")

    def decide(self, ob, memory):
        p, q = self.params, _q(self.params["title"])
        member, text = p["member"], p["text"]
        if re.match(r"/comment/\d+/publish/\d+/quote/", kit.path(ob)):
            box = kit.require(kit.field(ob, "comment", "textarea", prefer_visible=True), "comment box")
            quoted = (box.value or "").rstrip()
            if text not in quoted:
                if f"@{member} said:" not in quoted:
                    return None  # the quote is still being filled in
                return kit.why(kit.fill(ob, box, f"{quoted}\n\n{text}"), f"write your answer below {member}'s quoted words",
                               f"add your reply to {member} under the quote")
            return self.send(ob, memory, kit.button(ob, "Publish", prefer_visible=True), "Publish button",
                             f"post your reply quoting {member}", f"publish the answer to {member} in {q}")
        step = self.open_topic(ob, memory, f"open {q}, where {member} posted", f"find {member}'s post in {q}")
        if step is not None:
            return step
        return kit.why(kit.click(ob, _post_action(ob, member, r"/comment/\d+/publish/\d+/quote/")),
                       f"quote {member}'s post in a new reply", f"start a reply that quotes {member}")


TASKS: tuple[type[ForumTask], ...] = (
    ReplyToTopic, CreateTopic, EditOwnPost, LikePost, PrivateMessage, CloseTopic, PinTopic, MoveTopic,
    CountReplies, TopicAuthor, SearchPhrase, UpdateLocation,
    OpenAuthorProfile, OpenBoard, OpenSearchResults, OpenMethodTopic, OpenAuthorTopics, OpenAuthorLikes,
    OpenLastReplierProfile, OpenTopicBoard,
    CountAuthorTopics, LastReplyDate, TopicBoard, OpeningPostLikes,
    FollowTopic, ReportReply, RenameOwnTopic, QuoteReply,
)
