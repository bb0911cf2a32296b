"""The forum's seed data, as code with a seed: boards, users with roles, topics, replies, likes, messages.

:func:`build` returns the same :class:`Seed` on every call (``random.Random(SEED)``, absolute
dates from :data:`START`), so the tasks draw their parameters from it without reading the
database, and setup loads exactly it. Stdlib only (imported by the cheap ``SITE`` module's tasks).

Every topic's replies mention one "method" phrase (``"the amber heron method"``) found in no other
topic: the search task's needle.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import random
from dataclasses import asdict, dataclass

SEED = 20240108
#: First post of the forum; every date is an absolute offset from it (UTC).
START = dt.datetime(2024, 1, 8, 9, 0, 0)
PASSWORD = "forum-pass"


@dataclass(frozen=True)
class User:
    username: str
    role: str  # "admin" | "moderator" | "member"
    location: str


@dataclass(frozen=True)
class Board:
    title: str
    description: str
    color: str


@dataclass(frozen=True)
class Post:
    author: str
    date: str  # ISO, UTC
    text: str


@dataclass(frozen=True)
class Topic:
    title: str
    board: str
    posts: tuple[Post, ...]  # posts[0] is the opening post
    pinned: bool = False
    closed: bool = False
    phrase: str = ""  # the unique "<adj> <noun> method" words mentioned in one reply

    @property
    def author(self) -> str:
        return self.posts[0].author


@dataclass(frozen=True)
class Like:
    user: str
    topic: int  # index into Seed.topics
    post: int  # index into that topic's posts


@dataclass(frozen=True)
class PrivateTopic:
    title: str
    author: str
    invited: tuple[str, ...]
    posts: tuple[Post, ...]


@dataclass(frozen=True)
class Seed:
    users: tuple[User, ...]
    boards: tuple[Board, ...]
    topics: tuple[Topic, ...]
    likes: tuple[Like, ...]
    private: tuple[PrivateTopic, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def fingerprint(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def topic(self, title: str) -> Topic:
        return next(t for t in self.topics if t.title == title)

    def liked(self, user: str, topic: int, post: int) -> bool:
        return Like(user, topic, post) in set(self.likes)


USERS = (
    User("admin", "admin", "Berlin"),
    User("mod_maria", "moderator", "Lisbon"),
    User("mod_kenji", "moderator", "Osaka"),
    User("alice_w", "member", "Toronto"),
    User("bob_builder", "member", "Leeds"),
    User("carol_j", "member", "Austin"),
    User("dave_k", "member", "Oslo"),
    User("erin_m", "member", "Dublin"),
    User("frank_t", "member", "Munich"),
    User("grace_h", "member", "Seattle"),
    User("heidi_r", "member", "Zurich"),
    User("ivan_p", "member", "Prague"),
    User("judy_c", "member", "Melbourne"),
)
MEMBERS = tuple(u.username for u in USERS if u.role == "member")
MODERATORS = tuple(u.username for u in USERS if u.role == "moderator")

BOARDS = (
    Board("Announcements", "News about the forum from the staff.", "#c0392b"),
    Board("General Discussion", "Anything about computing that fits nowhere else.", "#2980b9"),
    Board("Help & Support", "Stuck? Ask here and describe what you tried.", "#27ae60"),
    Board("Hardware", "CPUs, GPUs, laptops, storage, builds and repairs.", "#8e44ad"),
    Board("Software & Linux", "Operating systems, distributions, tools and scripts.", "#d35400"),
    Board("Gaming", "PC and console games, emulation and performance.", "#16a085"),
    Board("Off-Topic", "Hobbies, books, travel and the rest of life.", "#7f8c8d"),
)

TITLES: dict[str, tuple[str, ...]] = {
    "Announcements": (
        "Forum rules and posting guidelines",
        "Welcome to our new moderators",
        "Scheduled maintenance on the forum server",
        "New feature: private topics between members",
        "Spring community photo contest results",
        "How we handle spam and flagged posts",
    ),
    "General Discussion": (
        "What was your first computer?",
        "Mechanical keyboards: worth the hype?",
        "Favourite podcasts about technology",
        "Do you still back up to optical discs?",
        "Best way to organise thousands of photos",
        "Home office setups: share yours",
        "Is a second monitor really more productive?",
        "Password managers you actually trust",
        "Tech you regret buying",
        "Teaching kids to program: where to start",
    ),
    "Help & Support": (
        "Laptop fan runs loud even when idle",
        "Wi-Fi drops every few minutes on one device",
        "Printer shows offline after router change",
        "External drive not recognised after update",
        "Browser opens random tabs on startup",
        "Phone will not charge past eighty percent",
        "Bluetooth headphones stutter during calls",
        "Cannot install updates: error after reboot",
        "Recovering files from a formatted SD card",
        "Email client keeps asking for my password",
    ),
    "Hardware": (
        "Which SSD for an older laptop upgrade?",
        "First custom PC build: parts list review",
        "GPU temperatures above ninety degrees",
        "Mini PC as a home server",
        "Thermal paste: how often to replace it",
        "Refurbished business laptops worth it?",
        "NAS with four bays: recommendations",
        "Replacing a swollen laptop battery",
        "Monitor flickers at high refresh rate",
        "Quietest case fans you have used",
    ),
    "Software & Linux": (
        "Switching from Windows to Linux for good",
        "Which distribution for an old netbook?",
        "Shell scripts to automate backups",
        "Dual boot breaks after firmware update",
        "Favourite text editor and why",
        "Containers versus virtual machines at home",
        "Setting up a tiling window manager",
        "Sync files between machines without cloud",
        "Learning the command line in a week",
        "Package manager tips and tricks",
    ),
    "Gaming": (
        "Games that run well on integrated graphics",
        "Emulating classic consoles legally",
        "Controller or keyboard for racing games",
        "Stuttering in open world games",
        "Co-op games for a weekend with friends",
        "Retro handhelds compared",
        "Frame rate cap or variable refresh?",
        "Indie games that surprised you",
        "Streaming games to a TV in another room",
        "Save files lost after reinstall",
    ),
    "Off-Topic": (
        "Books you read this year",
        "Best coffee brewing method",
        "Cycling to work in winter",
        "Houseplants that survive neglect",
        "Travel tips for long train journeys",
        "Learning a language as an adult",
        "Board games for two players",
        "Weekend hiking trails near cities",
        "Cooking for one without waste",
        "Hobbies that got you off the screen",
    ),
}

OPENERS = (
    "I have been thinking about this for a while and would like to hear your experience.",
    "Here is my situation, any advice is welcome.",
    "Quick question for the group before I spend money on this.",
    "I searched the older threads but did not find a clear answer.",
    "Curious what everyone here thinks about this one.",
)
DETAILS = (
    "I tried the usual suggestions from the documentation without much luck.",
    "My budget is limited, so I would rather fix what I have.",
    "It started about two weeks ago and has become worse since.",
    "A friend recommended one approach but I am not convinced.",
    "I keep notes of everything I change, so I can report back.",
    "The same thing happens on a second machine at home.",
    "Most guides I found are several years old.",
)
REPLIES = (
    "I had the same problem last year and a clean reinstall solved it.",
    "Have you checked the logs? They usually tell you what is going on.",
    "Agreed, that matches my experience exactly.",
    "I would not bother, the difference is small in daily use.",
    "It depends a lot on how you use it, but for most people it is fine.",
    "Thanks, this thread helped me more than the official forum.",
    "Try it with a fresh user profile first to rule out settings.",
    "Second this. I switched three months ago and have no regrets.",
    "Please post the exact model number, it makes a big difference.",
    "Interesting, I never thought about it that way.",
    "Mine lasted five years before anything went wrong.",
    "Updating the firmware fixed it for me, worth a try.",
    "I disagree a little: the cheaper option is good enough here.",
    "Could you share a screenshot of the settings page?",
    "Good point about the noise, that is what bothers me most.",
    "Bookmarking this, great list everyone.",
)
ADJECTIVES = ("amber", "copper", "indigo", "saffron", "cobalt", "crimson", "ivory", "jade", "onyx", "silver",
              "violet", "hazel")
NOUNS = ("heron", "otter", "falcon", "badger", "lynx", "marten", "puffin", "walrus", "gecko", "ibis", "osprey",
         "bison")
PRIVATE_TITLES = (
    "Meetup next month?", "About your build thread", "Moderation question", "Thanks for the help",
    "Spare parts for sale", "Co-op session this weekend",
)


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S")


@functools.lru_cache(maxsize=1)
def build() -> Seed:
    """The forum's whole seed data (deterministic; cached)."""
    rng = random.Random(SEED)
    phrases = [f"{a} {n}" for a in ADJECTIVES for n in NOUNS]
    rng.shuffle(phrases)
    drafts = [(board, title) for board, titles in TITLES.items() for title in titles]
    rng.shuffle(drafts)  # topics of all boards interleave in time
    topics: list[Topic] = []
    clock = START
    everyone = MEMBERS + MODERATORS + ("admin",)
    for i, (board, title) in enumerate(drafts):
        clock += dt.timedelta(hours=rng.randint(20, 50), minutes=rng.randint(0, 59))
        author = rng.choice(("admin",) + MODERATORS) if board == "Announcements" else rng.choice(MEMBERS)
        opening = " ".join([rng.choice(OPENERS), rng.choice(DETAILS), rng.choice(DETAILS)])
        posts = [Post(author, _iso(clock), opening)]
        phrase = phrases[i]
        n_replies = rng.randint(2, 11)
        needle_at = rng.randint(1, n_replies)
        t = clock
        last = author
        for k in range(1, n_replies + 1):
            t += dt.timedelta(minutes=rng.randint(15, 600))
            who = rng.choice([u for u in everyone if u != last])
            text = " ".join(rng.sample(REPLIES, 2))
            if k == needle_at:
                text += f" What finally worked for me was the {phrase} method."
            posts.append(Post(who, _iso(t), text))
            last = who
        topics.append(Topic(title=title, board=board, posts=tuple(posts), phrase=phrase,
                            pinned=title in ("Forum rules and posting guidelines",
                                             "How we handle spam and flagged posts"),
                            closed=title in ("Spring community photo contest results",
                                             "Scheduled maintenance on the forum server")))
    likes: set[Like] = set()
    for ti, tp in enumerate(topics):
        for pi, post in enumerate(tp.posts):
            for u in rng.sample(everyone, rng.randint(0, 3)):
                if u != post.author:
                    likes.add(Like(u, ti, pi))
    private: list[PrivateTopic] = []
    pclock = START + dt.timedelta(days=3)
    for title in PRIVATE_TITLES:
        pclock += dt.timedelta(days=rng.randint(5, 20), hours=rng.randint(0, 12))
        a, b = rng.sample(everyone, 2)
        posts = (Post(a, _iso(pclock), rng.choice(OPENERS)),
                 Post(b, _iso(pclock + dt.timedelta(hours=3)), rng.choice(REPLIES)))
        private.append(PrivateTopic(title, a, (b,), posts))
    return Seed(users=USERS, boards=BOARDS, topics=tuple(topics),
                likes=tuple(sorted(likes, key=lambda x: (x.topic, x.post, x.user))), private=tuple(private))
