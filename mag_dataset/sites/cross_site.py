"""Tasks that span two sites, as WebArena's multi-site tasks do (a wiki fact posted on the forum,
a tracker ticket that cites a wiki page, a shop price reported on the tracker).

Each is a task of the site it ends on (its ``site_class``: the site whose state, answer page or
final URL the check reads), so its id is ``sites.<that site>.<template>`` and
:func:`mag_dataset.sites.tasks_of` lists it with that site's own templates; ``other_sites``
names the sites it also needs. Before the episode every site of the task is reset and its
user logged in (:meth:`mag_dataset.sites.task.SiteTask.setup`); the expert crosses from one
site to the other with ``goto`` (:meth:`~mag_dataset.sites.task.SiteTask.url_on`), as a
WebArena agent opens another site's address.

The four sites share no seeded entity, so the templates link them the way WebArena's do: a
value read on one site is written on the other (a wiki figure, a shop price, a ticket's
milestone, a page's address), a person is recognised across sites (the tracker's developers
post on the forum under their first name: ``alice_w`` is the tracker's ``alice``), or a shop
product's kind leads to the forum thread about it. Parameters come from the seed data of both
sites; checks read the end site's database (state), the answer (information) or the final page
(navigation). Each expert reads the other site's value from the observation (kept in
``memory``) and writes what it read, so a misread fails the check.

The templates (end site first; kind):

* forum+wiki: ``forum.reply_with_wiki_fact`` (state: a city's infobox figure as a reply),
  ``wiki.talk_links_forum_thread`` (state: a talk-page section giving a thread's address);
* forum+tracker: ``forum.reply_with_ticket_milestone`` (state), ``tracker.comment_with_forum_link``
  (state), ``tracker.tickets_of_forum_author`` (navigation: the custom query of the topic
  author's tickets), ``tracker.count_tickets_of_forum_author`` and
  ``tracker.full_name_of_forum_author`` (information);
* forum+shop: ``forum.topic_about_shop_product`` (navigation: the thread about a product's kind),
  ``forum.replies_about_shop_product`` (information);
* tracker+wiki: ``tracker.ticket_citing_wiki`` (state: a new ticket linking a wiki article);
* tracker+shop: ``tracker.ticket_with_shop_price`` (state: a new ticket stating a price);
* shop+wiki: ``shop.basket_per_wiki_person`` (state: one product per member of a wiki category).

Cookies: every site is served on 127.0.0.1, and browsers key cookies by host, not port, so
each site names its own (the two Django sites: ``shop_sessionid`` / ``forum_sessionid`` and
their CSRF cookies; MediaWiki's and Trac's have their own names): a task may log in on any
pair of sites. The shop+forum templates here are anonymous on both sites all the same.
"""

from __future__ import annotations

import random
import re
import urllib.parse
from decimal import Decimal
from typing import Any

from mag_dataset.actions import ActionType
from mag_dataset.live import expert_kit as kit
from mag_dataset.live.expert_kit import Decision
from mag_dataset.live.observe import Observation
from mag_dataset.sites.base import Site
from mag_dataset.sites.forum import SITE as ForumSite
from mag_dataset.sites.forum import seed as forum_seed
from mag_dataset.sites.forum import tasks as forum_tasks
from mag_dataset.sites.forum.tasks import (ForumTask, _board_item, _dropdown, _on_topic, _pick_topic, _q,
                                           _shown, slugify)
from mag_dataset.sites.shop import SITE as ShopSite
from mag_dataset.sites.shop.seed_data import seed_data as shop_seed
from mag_dataset.sites.shop.tasks import (_JS_BASKET, CUSTOMER, ShopTask, _money_in, _search_and_open,
                                          _shop_product_params)
from mag_dataset.sites.task import SiteTask
from mag_dataset.sites.tracker import SITE as TrackerSite
from mag_dataset.sites.tracker.data import USERS as TRACKER_USERS
from mag_dataset.sites.tracker.data import seed_data as tracker_seed
from mag_dataset.sites.tracker.tasks import (_TrackerTask, _comment_and_submit, _js_comments_by, _open_ticket,
                                             _reached)
from mag_dataset.sites.wiki import SITE as WikiSite
from mag_dataset.sites.wiki import db_key
from mag_dataset.sites.wiki import seed as wiki_seed
from mag_dataset.sites.wiki.tasks import WikiTask, _at, _infobox_value, _squeeze_spaces, _tab

#: every cross-site task class (the site modules' own templates are in their ``TASKS``), filled at
#: the end of this module
TASKS: list[type[SiteTask]] = []


def tasks_ending_on(name: str) -> list[type[SiteTask]]:
    """The cross-site tasks registered under the site ``name`` (the site they end on)."""
    return [cls for cls in TASKS if cls.site_class.name == name]


# ----------------------------------------------------------------------------- crossing between sites
def _site_at(task: SiteTask, ob: Observation) -> str | None:
    """The name of the task's site the page is on (by host and port), or None (about:blank)."""
    netloc = urllib.parse.urlsplit(ob.url or "").netloc
    for s in (task.site, *task.others.values()):
        if urllib.parse.urlsplit(s.base_url).netloc == netloc:
            return s.name
    return None


def _goto(task: SiteTask, name: str, path: str, *why: str) -> Decision:
    """Open ``path`` on the task's site ``name`` by its address, as a person types another site's URL."""
    d = kit.why(Decision(ActionType.GOTO, url=task.url_on(name, path)), *why)
    assert d is not None
    return d


def _page_address(ob: Observation) -> str:
    """The page's address as a person copies it from the address bar (no fragment)."""
    return urllib.parse.urldefrag(ob.url or "")[0]


def _plain(text: str | None) -> str:
    """Lower case, no thousands separators, single spaces: how written values are compared."""
    return kit.norm((text or "").replace(",", ""))


_WAIT = Decision(ActionType.SCROLL, direction="up")
#: Looks again (a harmless scroll up) an expert takes in a row when what it needs is not on the page yet.
_WAITS = 3


def _patient(ob: Observation, memory: dict[str, Any], decide: Any) -> Decision | None:
    """``decide(ob, memory)``; when what it needs is missing (None, or
    :class:`~mag_dataset.live.expert_kit.NotOnPage`: a page observed while still loading), look
    again with a scroll up, at most :data:`_WAITS` times in a row (as :class:`ForumTask` does)."""
    try:
        d = decide(ob, memory)
    except kit.NotOnPage:
        d = None
    if d is None and memory.get("cross_waited", 0) < _WAITS:
        memory["cross_waited"] = memory.get("cross_waited", 0) + 1
        return _WAIT
    memory["cross_waited"] = 0
    return d


# -- wiki
def _wiki_open(ob: Observation, title: str, finds: tuple[str, ...], opens: tuple[str, ...]) -> Decision | None:
    """On the wiki: the search box with ``title``, then Go (MediaWiki opens the article of an exact
    title); None once on the article."""
    if _at(ob, title):
        return None
    box = kit.by_id(ob, "searchInput")
    if box is None:  # observed mid-navigation (no skin yet)
        return _WAIT
    if _squeeze_spaces(box.value) != title:
        return kit.why(kit.fill(ob, box, title), *finds)
    return kit.why(kit.click(ob, kit.by_id(ob, "searchButton")), *opens)


def _wiki_url(task: SiteTask, title: str) -> str:
    return f"{urllib.parse.urlsplit(task.url_on('wiki')).netloc}/wiki/{db_key(title)}"


# -- forum
def _forum_open_topic(ob: Observation, memory: dict[str, Any], title: str, board: str,
                      *aims: str) -> Decision | None:
    """On the forum: the board list, the topic's board, the topic (clicked for ``aims``); None once there.
    (:meth:`ForumTask.open_topic` without its detours, for the tasks of the other sites.)"""
    if _on_topic(ob, title):
        return None
    q = _q(title)
    topic = kit.link(ob, title, href=r"^/topic/\d+/", prefer_visible=True)
    if topic is not None and kit.visible(ob, topic):
        return kit.why(kit.click(ob, topic), *aims)
    item = _board_item(ob, board)
    if _shown(ob, item):
        return kit.why(kit.click(ob, item), f"open the {board} board, where {q} was posted",
                       f"look for {q} among the {board} topics")
    if topic is not None:  # on the board, below the view
        return kit.why(kit.click(ob, topic), *aims)
    dropdown = _dropdown(ob)
    if _shown(ob, dropdown) and not memory.get("forum_dropdown"):
        return kit.once(memory, "forum_dropdown", kit.why(
            kit.click(ob, dropdown), f"open the board list and go to {board}, where {q} was posted",
            f"see the boards, since {q} is in the {board} board"))
    return None


def _forum_topic_author(ob: Observation) -> str | None:
    """The user name of a topic's first post (its author), from the topic page."""
    first = kit.find(ob, lambda e: e.tag == "a" and "comment__info__username__link" in e.attrs.get("class", ""))
    return kit.norm(first.text) if first is not None and first.text.strip() else None


def _forum_new_replies(forum: Site, title: str, user: str) -> list[str]:
    """The texts of ``user``'s replies in the topic ``title`` that the seed does not hold."""
    seeded = {p.text.strip() for t in forum_seed.build().topics if t.title == title for p in t.posts}
    rows = forum.query("select trim(c.comment) from spirit_comment_comment c join spirit_topic_topic t on "
                       "t.id = c.topic_id join auth_user u on u.id = c.user_id where t.title = ? and u.username = ? "
                       "and not c.is_removed", (title, user))
    return [r[0] for r in rows if r[0] not in seeded]


def _forum_url_in(task: SiteTask, text: str, title: str) -> bool:
    """Whether ``text`` gives the address of the forum topic ``title`` (host, port and slug)."""
    netloc = urllib.parse.urlsplit(task.url_on("forum")).netloc
    pattern = rf"{re.escape(netloc)}/topic/\d+/{re.escape(slugify(title))}/?"
    return re.search(pattern, urllib.parse.unquote(text or "")) is not None


# -- shop
def _shop_price(ob: Observation) -> str | None:
    """The price on a shop product page (``19.99``)."""
    el = kit.find(ob, lambda e: e.tag == "p" and "price_color" in e.attrs.get("class", ""))
    amounts = _money_in(el.text) if el is not None else []
    return str(amounts[0]) if amounts else None


def _shop_category(ob: Observation) -> str | None:
    """The leaf category of a shop product page (the breadcrumb's last category)."""
    crumbs = kit.find_all(ob, lambda e: e.tag == "a" and "/catalogue/category/" in e.attrs["href"]
                          and "breadcrumb" in ob.elements[e.parent].attrs["class"])
    return _squeeze_spaces(crumbs[-1].text) if crumbs else None


def _has_amount(text: str | None, amount: str) -> bool:
    got = re.findall(r"[0-9]+(?:\.[0-9]+)?", (text or "").replace(",", ""))
    return any(Decimal(g) == Decimal(amount) for g in got)


# -- tracker
def _tracker_milestone(ob: Observation) -> str | None:
    cell = kit.find(ob, lambda e: e.tag == "td" and e.attrs.get("headers") == "h_milestone")
    return cell.text.strip() if cell is not None and cell.text.strip() else None


def _new_ticket_form(task: SiteTask, ob: Observation, memory: dict[str, Any], summary: str, description: str,
                     what: str) -> Decision:
    """On the tracker: New Ticket, the summary, the description, Create ticket (``memory["created"]``).

    Args:
        what: what the ticket is about, for the purposes ("the wiki article on Quengate").
    """
    if kit.path(ob) != "/newticket":
        new = kit.require(kit.link(ob, "New Ticket"), "New Ticket link")
        return kit.why(_reached(kit.click(ob, new), "New Ticket link"), f"open the form for a ticket about {what}",
                       "start a new ticket")
    box = kit.by_id(ob, "field-summary")
    if box is not None and (box.value or "") != summary:
        return kit.why(_reached(kit.fill(ob, box, summary), "summary field"), f'give the ticket its title, "{summary}"',
                       "name the ticket")
    desc = kit.require(kit.by_id(ob, "field-description"), "description field")
    if (desc.value or "").strip() != description:
        return kit.why(_reached(kit.fill(ob, desc, description), "description field"),
                       f"write {what} into the ticket's description", f"describe the ticket with {what}")
    submit = kit.require(kit.by_name(ob, "submit", tag="input"), "Create ticket button")
    return kit.once(memory, "created", kit.why(_reached(kit.click(ob, submit), "Create ticket button"),
                                               f'file the ticket "{summary}"', "create the ticket"))


def _ticket_by_summary(task: SiteTask, summary: str) -> dict[str, Any] | None:
    rows = task.site.query("SELECT id, reporter, description FROM ticket WHERE summary=? ORDER BY id", (summary,))
    return dict(zip(("id", "reporter", "description"), rows[-1])) if rows else None


#: Forum members who are developers on the tracker, under their first name (``alice_w`` is ``alice``).
FORUM_TO_TRACKER: dict[str, str] = {u: u.split("_")[0] for u in forum_seed.MEMBERS if u.split("_")[0] in TRACKER_USERS}
TRACKER_DEVELOPERS = tuple(u for u, v in TRACKER_USERS.items() if v[2] == "developer")


def _topic_by_tracker_person(rng: random.Random, developers_only: bool) -> forum_seed.Topic:
    """A seeded forum topic started by someone with a tracker account (a developer, with ``developers_only``)."""
    wanted = {f for f, t in FORUM_TO_TRACKER.items() if not developers_only or t in TRACKER_DEVELOPERS}
    return _pick_topic(rng, lambda i, t: t.author in wanted)[1]


# ============================================================================= forum end
class _ForumReply(ForumTask):
    """Reply to a forum topic with a value read on another site (``value_from``); the check finds the
    value in a new reply of the task's user. Subclasses fill :meth:`fetch` (the other site's steps,
    returning a step, or None once ``memory["value"]`` is read) and :meth:`reply`."""

    user = "alice_w"
    #: the ``board`` detour (a wrong board first) would make the longest episodes too long for two sites
    DETOURS = (None, "topic")

    def fetch(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def reply(self, value: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def wanted(self, text: str) -> bool:
        return _plain(self.params["value"]) in _plain(text)

    def check(self, answer):
        new = _forum_new_replies(self.site, self.params["title"], self.user)
        ok = any(self.wanted(t) for t in new)
        return ok, (f"a reply by {self.user} gives {self.params['value']!r}" if ok else
                    f"no new reply by {self.user} in the topic gives {self.params['value']!r} (new: {new!r})")

    def program_html(self) -> list[dict[str, Any]]:
        """The user's comments on the topic's page give the value (with or without thousands separators)."""
        value = self.params["value"]
        either = " |OR| ".join(dict.fromkeys((value, value.replace(",", ""))))
        return [forum_tasks.html_target(self.topic_url(self.params["title"]), forum_tasks.comments_by(self.user),
                                        either)]

    def decide(self, ob, memory):
        q = _q(self.params["title"])
        if "value" not in memory:
            step = self.fetch(ob, memory)
            if step is not None or "value" not in memory:
                return step
        if _site_at(self, ob) != "forum":
            return _goto(self, "forum", "/", f"go back to the forum to answer in {q}",
                         f"return to the forum with what you found, to post it in {q}")
        step = self.open_topic(ob, memory, f"open {q}, the thread to answer", f"get to {q}, where your reply goes")
        if step is not None:
            return step
        if not memory.get("end"):  # the reply box is at the foot of the thread
            memory["end"] = True  # set here: kit.once does not remember a page key (a scroll)
            return kit.press("End")
        box = kit.field(ob, "comment", "textarea", prefer_visible=True)
        step = kit.why(kit.fill(ob, kit.require(box, "reply box"), self.reply(memory["value"])),
                       f"write your answer to {q}", "put what you found in the reply box")
        if step is not None:
            return step
        button = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "submit"
                          and "comment__reply__actions__publish" in e.attrs.get("class", ""), prefer_visible=True)
        return self.send(ob, memory, button, "reply's Publish button", f"post your answer in {q}",
                         "publish the reply so that the thread sees it")


_WIKI_FACTS = {"population": ("Population", "population"), "founded": ("Founded", "founding year"),
               "elevation_m": ("Elevation (m)", "elevation in metres"), "river": ("River", "river"),
               "mayor": ("Mayor", "mayor")}


class ForumReplyWikiFact(_ForumReply):
    template = "reply_with_wiki_fact"
    intent_template = ('Someone in the forum topic "{title}" asked about {city}. Reply there with the {label} of '
                       '{city} as the Meridian Wiki gives it.')
    intent_templates = (
        intent_template,
        'Look up the {label} of {city} on the wiki and post it as a reply to "{title}" on the forum.',
        'Answer the forum thread "{title}" with the {label} of {city}, taken from the wiki.',
        'The {board} thread "{title}" wants to know the {label} of {city}. Find it on the wiki and reply.',
    )
    other_sites = (WikiSite,)

    def sample(self, rng):
        t = _pick_topic(rng, lambda i, t: not t.closed)[1]
        city = rng.choice(wiki_seed.world().of_kind("city"))
        field = rng.choice(sorted(_WIKI_FACTS))
        header, label = _WIKI_FACTS[field]
        return {"title": t.title, "board": t.board, "city": city.title, "header": header, "label": label,
                "value": city.infobox[field]}

    def goal_why(self):
        p = self.params
        return (f"reply to {_q(p['title'])} with the {p['label']} of {p['city']}",
                f"tell the thread the {p['label']} of {p['city']} from the wiki")

    def reply(self, value):
        p = self.params
        return f"According to the Meridian Wiki, the {p['label']} of {p['city']} is {value}."

    def fetch(self, ob, memory):
        p = self.params
        if _site_at(self, ob) != "wiki":
            return _goto(self, "wiki", "/wiki/Main_Page", f"look up {p['city']} on the Meridian Wiki",
                         f"open the wiki to find the {p['label']} of {p['city']}")
        step = _wiki_open(ob, p["city"], (f"search the wiki for {p['city']}", f"look up the {p['city']} article"),
                          (f"open the {p['city']} article, whose infobox gives its {p['label']}",
                           f"read the {p['label']} of {p['city']} in its article"))
        if step is not None:
            return step
        value = _infobox_value(ob, p["header"])
        if value:
            memory["value"] = value
        return None


class ForumReplyTicketMilestone(_ForumReply):
    template = "reply_with_ticket_milestone"
    intent_template = ('The forum topic "{title}" is waiting for the fix of tracker ticket #{ticket}. Tell them in '
                       'a reply which milestone the ticket is planned for.')
    intent_templates = (
        intent_template,
        'Reply to "{title}" on the forum with the milestone of ticket #{ticket} on the tracker.',
        'Which release will fix it? Look up the milestone of ticket #{ticket} and post it in the forum thread '
        '"{title}".',
        'Let the {board} thread "{title}" know the tracker milestone of ticket #{ticket}.',
    )
    other_sites = (TrackerSite,)
    other_users = {"tracker": "grace"}

    def sample(self, rng):
        t = _pick_topic(rng, lambda i, t: not t.closed)[1]
        ticket = rng.choice([k for k in tracker_seed().tickets if k.final["milestone"]])
        return {"title": t.title, "board": t.board, "ticket": ticket.id, "value": ticket.final["milestone"]}

    def wanted(self, text):
        return re.search(rf"\b{re.escape(self.params['value'].lower())}\b", kit.norm(text)) is not None

    def goal_why(self):
        p = self.params
        return (f"tell {_q(p['title'])} the milestone of ticket #{p['ticket']}",
                f"let the thread know when ticket #{p['ticket']} is planned")

    def reply(self, value):
        return f"Ticket #{self.params['ticket']} is planned for the {value} milestone."

    def fetch(self, ob, memory):
        t = self.params["ticket"]
        if _site_at(self, ob) != "tracker":
            return _goto(self, "tracker", "/", f"look up ticket #{t} on the tracker",
                         f"open the tracker to find the milestone of ticket #{t}")
        step = _open_ticket(ob, memory, t)
        if step is not None:
            return step
        value = _tracker_milestone(ob)
        if value:
            memory["value"] = value
        return None


_SHOP_KIND_TOPICS = {  # shop category -> the forum thread about that kind of product
    "Cycling": "Cycling to work in winter",
    "Board Games": "Board games for two players",
    "Fiction": "Books you read this year",
    "Cookware": "Cooking for one without waste",
}


class ForumTopicOfShopProduct(ForumTask):
    template = "topic_about_shop_product"
    kind = "navigation"
    intent_template = ('I am thinking of buying the "{product}" from the shop. Open the forum thread where members '
                       'talk about that kind of product.')
    intent_templates = (
        intent_template,
        'Show me the forum topic that discusses the kind of product the shop\'s "{product}" is.',
        'Before I buy the "{product}", take me to the forum discussion about its category.',
        'Which forum thread covers what the shop\'s "{product}" is for? Open it.',
    )
    other_sites = (ShopSite,)
    DETOURS = (None, "topic")

    def sample(self, rng):
        prod = rng.choice([p for p in shop_seed()["products"] if p["category"] in _SHOP_KIND_TOPICS])
        title = _SHOP_KIND_TOPICS[prod["category"]]
        return {"product": prod["title"], "colour": prod["colour"], "category": prod["category"], "title": title,
                "board": forum_seed.build().topic(title).board}

    def check(self, answer):
        rows = self.site.query("select id from spirit_topic_topic where title = ?", (self.params["title"],))
        return self.on_page(f"/topic/{rows[0][0]}/{slugify(self.params['title'])}/")

    def goal_why(self):
        p = self.params
        return (f"open the forum thread about {p['category'].lower()}, the kind of product the {p['product']} is",
                f"show the discussion of {_q(p['title'])}")

    def decide(self, ob, memory):
        p = self.params
        if "category" not in memory:
            if _site_at(self, ob) != "shop":
                return _goto(self, "shop", "/", f"look up the {p['product']} in the shop",
                             f"find out in the shop what kind of product the {p['product']} is")
            step = _search_and_open(ob, memory, {"title": p["product"], "colour": p["colour"]},
                                    "see which category it is listed in")
            if step is not None:
                return step
            category = _shop_category(ob)
            if category is None:
                return None
            memory["category"] = category
        if _site_at(self, ob) != "forum":
            return _goto(self, "forum", "/", f"look for a forum thread about {memory['category'].lower()}",
                         f"go to the forum, where members discuss {memory['category'].lower()}")
        step = self.open_topic(ob, memory, f"open {_q(p['title'])}, the thread about {memory['category'].lower()}",
                               f"show the discussion of {memory['category'].lower()}")
        if step is not None:
            return step
        memory["sent"] = True
        return kit.why(kit.finish("done"), *self.goal_why())


class ForumRepliesOfShopProductTopic(ForumTopicOfShopProduct):
    template = "replies_about_shop_product"
    kind = "information"
    answer_task = True
    intent_template = ('How many replies has the forum thread about the kind of product the shop\'s "{product}" '
                       'is received? Answer with a number.')
    intent_templates = (
        intent_template,
        'I am looking at the "{product}" in the shop. How many replies are there in the forum discussion about '
        'that kind of product?',
        'Count the replies (not the opening post) of the forum topic that covers the category of the shop\'s '
        '"{product}".',
        'How lively is the forum thread about products like the "{product}" from the shop? Give its number of '
        'replies.',
    )

    def sample(self, rng):
        out = super().sample(rng)
        return {**out, "count": len(forum_seed.build().topic(out["title"]).posts) - 1}

    def check(self, answer):
        nums = re.findall(r"\d+", answer or "")
        return nums == [str(self.params["count"])], f"answered {answer!r}, the thread has {self.params['count']} replies"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["count"])]}

    def goal_why(self):
        p = self.params
        return (f"tell how many replies {_q(p['title'])} has", "give the number of replies in that thread")

    def decide(self, ob, memory):
        if not _on_topic(ob, self.params["title"]):
            return super().decide(ob, memory)
        authors = kit.find_all(ob, lambda e: e.tag == "a" and "comment__info__username__link" in e.attrs.get("class", ""))
        return kit.why(kit.finish(str(len(authors) - 1)), *self.goal_why()) if authors else None


# ============================================================================= tracker end
class _CrossTracker(_TrackerTask):
    detours = ()

    def expert(self, ob, memory):
        return _patient(ob, memory, self.decide)

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:  # pragma: no cover - abstract
        raise NotImplementedError


class TrackerTicketCitingWiki(_CrossTracker):
    template = "ticket_citing_wiki"
    intent_template = ('Open a ticket titled "{summary}" on the tracker whose description gives the address of '
                       'the Meridian Wiki article on {article}.')
    intent_templates = (
        intent_template,
        'File a tracker ticket "{summary}" and put the link to the wiki article about {article} in its description.',
        'Create the ticket "{summary}"; its description should link the wiki\'s {article} article.',
        'We need a ticket called "{summary}" that cites the Meridian Wiki page on {article} (its URL in the '
        'description).',
    )
    user = "erin"
    other_sites = (WikiSite,)

    def sample(self, rng):
        art = rng.choice([a for a in wiki_seed.world().articles.values() if a.kind in ("city", "person", "species")])
        summary = rng.choice(("Use the wiki article on {t} in the help pages", "Check the facts about {t}",
                              "Link the {t} article from the dashboard", "Import the {t} article")).format(t=art.title)
        return {"article": art.title, "summary": summary}

    def check(self, answer):
        t = _ticket_by_summary(self, self.params["summary"])
        if t is None:
            return False, "no ticket with that summary"
        if t["reporter"] != self.user:
            return False, f"ticket #{t['id']} was reported by {t['reporter']!r}"
        want = _wiki_url(self, self.params["article"])
        if want not in urllib.parse.unquote(t["description"] or "").replace(" ", "_"):
            return False, f"ticket #{t['id']}'s description does not link {want}: {t['description']!r}"
        return True, f"ticket #{t['id']} links {want}"

    def program_html(self):
        return self._new_ticket_shows(self.params["summary"], ("reporter",),
                                      f"|reporter: {TRACKER_USERS[self.user][1]}|",
                                      _wiki_url(self, self.params["article"]), description=True)

    def decide(self, ob, memory):
        p = self.params
        art = p["article"]
        if memory.get("created"):
            return kit.why(kit.finish(), f'file "{p["summary"]}" with the link to {art}',
                           f"cite the wiki article on {art} in a new ticket")
        if "link" not in memory:
            if _site_at(self, ob) != "wiki":
                return _goto(self, "wiki", "/wiki/Main_Page", f"find the article on {art} on the Meridian Wiki",
                             f"open the wiki to get the address of the {art} article")
            step = _wiki_open(ob, art, (f"search the wiki for {art}", f"look up the {art} article"),
                              (f"open the {art} article to copy its address", f"go to the article on {art}"))
            if step is not None:
                return step
            memory["link"] = _page_address(ob)
        if _site_at(self, ob) != "tracker":
            return _goto(self, "tracker", "/", "go to the tracker with the article's address",
                         f"return to the tracker to file the ticket citing {art}")
        return _new_ticket_form(self, ob, memory, p["summary"], f"See {memory['link']}",
                                f"the wiki article on {art}")


class TrackerCommentForumLink(_CrossTracker):
    template = "comment_with_forum_link"
    intent_template = ('Members discuss the problem of ticket #{ticket} in the forum topic "{title}". Add a comment '
                       'to the ticket with the address of that topic.')
    intent_templates = (
        intent_template,
        'Comment on tracker ticket #{ticket} with a link to the forum thread "{title}".',
        'Ticket #{ticket} should point to the forum discussion "{title}": post its URL as a comment.',
        'Link the forum topic "{title}" from ticket #{ticket} in a comment.',
    )
    user = "bob"
    other_sites = (ForumSite,)

    def sample(self, rng):
        t = _pick_topic(rng)[1]
        return {"ticket": rng.choice(tracker_seed().tickets).id, "title": t.title, "board": t.board}

    def check(self, answer):
        new = self._new_comments(self.params["ticket"], self.user)
        ok = any(_forum_url_in(self, c, self.params["title"]) for c in new)
        return ok, ("the ticket links the topic" if ok else
                    f"no new comment by {self.user} on #{self.params['ticket']} links the topic (new: {new!r})")

    def program_html(self):
        # the topic's address, as its page is named: host and port, its number and its slug
        title = self.params["title"]
        number = self.others["forum"].query("select id from spirit_topic_topic where title = ?", (title,))[0][0]
        netloc = urllib.parse.urlsplit(self.url_on("forum")).netloc
        return self.page_shows(f"/ticket/{self.params['ticket']}", _js_comments_by(TRACKER_USERS[self.user][1]),
                                f"{netloc}/topic/{number}/{slugify(title)}")

    def decide(self, ob, memory):
        p, t = self.params, self.params["ticket"]
        q = _q(p["title"])
        if memory.get("submitted"):
            return kit.why(kit.finish(), f"link {q} from ticket #{t}", f"point ticket #{t} to the forum thread")
        if "link" not in memory:
            if _site_at(self, ob) != "forum":
                return _goto(self, "forum", "/", f"find {q} on the forum", f"open the forum to get the address of {q}")
            step = _forum_open_topic(ob, memory, p["title"], p["board"], f"open {q} to copy its address",
                                     f"go to the thread {q}")
            if step is not None:
                return step
            memory["link"] = urllib.parse.urlsplit(_page_address(ob))._replace(query="").geturl()
        if _site_at(self, ob) != "tracker":
            return _goto(self, "tracker", "/", f"go back to the tracker to comment on #{t}",
                         f"return to the tracker with the address of {q}")
        step = _open_ticket(ob, memory, t)
        if step:
            return step
        if not memory.get("end"):  # the comment box is at the very bottom of the page
            memory["end"] = True
            return kit.press("End")
        return _comment_and_submit(ob, memory, f"Discussed on the forum: {memory['link']}",
                                   written=(f"write the link to {q} as a comment", f"point #{t} to {q}"),
                                   submitted=(f"post the link on ticket #{t}", "add the comment to the ticket"))


class TrackerTicketShopPrice(_CrossTracker):
    template = "ticket_with_shop_price"
    intent_template = ('File a tracker ticket titled "{summary}" whose description states the price the shop '
                       'currently shows for the "{product}".')
    intent_templates = (
        intent_template,
        'Open the ticket "{summary}" and write the shop\'s current price of the "{product}" in its description.',
        'Create a ticket "{summary}"; in the description, say what the "{product}" costs in the shop today.',
        'Check what the shop charges for the "{product}" and report it in a new ticket called "{summary}".',
    )
    user = "frank"
    other_sites = (ShopSite,)

    def sample(self, rng):
        prod = rng.choice(shop_seed()["products"])
        summary = rng.choice(("Price of the {p} looks wrong", "Verify the listed price of the {p}",
                              "Customer asks about the {p} price")).format(p=prod["title"])
        return {"product": prod["title"], "colour": prod["colour"], "price": prod["price"], "summary": summary}

    def check(self, answer):
        t = _ticket_by_summary(self, self.params["summary"])
        if t is None:
            return False, "no ticket with that summary"
        if t["reporter"] != self.user:
            return False, f"ticket #{t['id']} was reported by {t['reporter']!r}"
        ok = _has_amount(t["description"], self.params["price"])
        return ok, (f"ticket #{t['id']} states {self.params['price']}" if ok else
                    f"ticket #{t['id']}'s description {t['description']!r} does not state {self.params['price']}")

    def program_html(self):
        return self._new_ticket_shows(self.params["summary"], ("reporter",),
                                      f"|reporter: {TRACKER_USERS[self.user][1]}|", self.params["price"],
                                      description=True)

    def decide(self, ob, memory):
        p = self.params
        if memory.get("created"):
            return kit.why(kit.finish(), f'file "{p["summary"]}" with the shop\'s price',
                           f"report the price of the {p['product']} in a ticket")
        if "price" not in memory:
            if _site_at(self, ob) != "shop":
                return _goto(self, "shop", "/", f"check the price of the {p['product']} in the shop",
                             f"open the shop to see what the {p['product']} costs")
            step = _search_and_open(ob, memory, {"title": p["product"], "colour": p["colour"]}, "read its price")
            if step is not None:
                return step
            price = _shop_price(ob)
            if price is None:
                return None
            memory["price"] = price
        if _site_at(self, ob) != "tracker":
            return _goto(self, "tracker", "/", "go to the tracker with the price",
                         "return to the tracker to file the ticket")
        return _new_ticket_form(self, ob, memory, p["summary"],
                                f"The shop currently lists the {p['product']} at £{memory['price']}.",
                                f"the price of the {p['product']}")


class _ForumAuthorOnTracker(_CrossTracker):
    """Tracker tasks about the person who started a forum topic: the expert reads the author on the
    forum (``memory["author"]``, the tracker user name in ``memory["person"]``)."""

    other_sites = (ForumSite,)

    def author_steps(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        q = _q(p["title"])
        if "person" in memory:
            return None
        if _site_at(self, ob) != "forum":
            return _goto(self, "forum", "/", f"find out on the forum who started {q}",
                         f"open the forum to see the author of {q}")
        step = _forum_open_topic(ob, memory, p["title"], p["board"], f"open {q} to see who started it",
                                 f"find the author of {q} at the top of the thread")
        if step is not None:
            return step
        author = _forum_topic_author(ob)
        if author is None:
            return _WAIT
        memory["author"], memory["person"] = author, author.split("_")[0]
        return None

    def query_steps(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        """On to the tracker's custom query of the tickets ``memory["person"]`` owns (not closed: the
        query's default), through View Tickets and New Custom Query (``memory["updated"]`` once run)."""
        person = memory["person"]
        if _site_at(self, ob) != "tracker":
            return _goto(self, "tracker", "/", f"look up {memory['author']}'s tickets on the tracker",
                         f"go to the tracker, where {memory['author']} is {person}")
        if kit.path(ob) != "/query":
            if kit.path(ob) == "/report":
                custom = kit.require(kit.link(ob, "New Custom Query"), "New Custom Query link")
                return kit.why(_reached(kit.click(ob, custom), "New Custom Query link"),
                               f"filter the tickets by owner, {person}", f"build a query for {person}'s tickets")
            view = kit.require(kit.link(ob, "View Tickets"), "View Tickets link")
            return kit.why(_reached(kit.click(ob, view), "View Tickets link"), f"find a way to list {person}'s tickets",
                           "open the ticket reports and queries")
        owner = kit.require(kit.find(ob, lambda e: e.tag == "select"
                                     and re.fullmatch(r"\d+_owner", e.attrs.get("name", "")) is not None),
                            "owner filter")
        if not memory.get("owner"):
            return kit.once(memory, "owner", kit.why(_reached(kit.select(ob, owner, person), "owner filter"),
                                                     f"keep only {person}'s tickets",
                                                     f"filter the list to tickets owned by {person}"))
        update = kit.require(kit.by_name(ob, "update", tag="input"), "Update button")
        return kit.once(memory, "updated", kit.why(_reached(kit.click(ob, update), "Update button"),
                                                   f"list {person}'s tickets", "run the query with the owner filter"))


class TrackerTicketsOfForumAuthor(_ForumAuthorOnTracker):
    template = "tickets_of_forum_author"
    kind = "navigation"
    intent_template = ('The forum topic "{title}" was started by one of our developers. Show me the tracker\'s '
                       'list of tickets that developer owns.')
    intent_templates = (
        intent_template,
        'Whoever opened "{title}" on the forum is a developer on the tracker (same first name). List the tickets '
        'they own there.',
        'Show me the tracker tickets owned by the author of the forum thread "{title}".',
        'I want to see what the developer who posted "{title}" on the forum is working on: open their tickets on '
        'the tracker.',
    )
    user = "grace"

    def sample(self, rng):
        t = _topic_by_tracker_person(rng, developers_only=True)
        return {"title": t.title, "board": t.board, "owner": FORUM_TO_TRACKER[t.author]}

    def check(self, answer):
        return self.on_page("/query", owner=self.params["owner"])

    def decide(self, ob, memory):
        step = self.author_steps(ob, memory)
        if step is not None:
            return step
        person = memory["person"]
        if kit.path(ob) == "/query" and kit.query(ob).get("owner") == [person] and memory.get("updated"):
            return kit.why(kit.finish("done"), f"show the tickets {person} owns",
                           f"list the tickets of {person}, who started {_q(self.params['title'])}")
        return self.query_steps(ob, memory)


class TrackerFullNameOfForumAuthor(_ForumAuthorOnTracker):
    template = "full_name_of_forum_author"
    answer_task = True
    intent_template = ('Who started the forum topic "{title}"? Give their full name as the tracker\'s team page '
                       'lists it.')
    intent_templates = (
        intent_template,
        'The author of the forum thread "{title}" is on our team. What is their full name, according to the '
        'tracker\'s wiki?',
        'What is the real name of the person who opened "{title}" on the forum? The tracker\'s Team page has it.',
        'Find the full name of whoever posted "{title}" on the forum, using the team list on the tracker.',
    )

    def sample(self, rng):
        t = _topic_by_tracker_person(rng, developers_only=False)
        return {"title": t.title, "board": t.board, "name": TRACKER_USERS[FORUM_TO_TRACKER[t.author]][1]}

    def check(self, answer):
        ok = kit.norm(self.params["name"]) in kit.norm(answer)
        return ok, f"answered {answer!r}, the author is {self.params['name']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["name"]]}

    def decide(self, ob, memory):
        step = self.author_steps(ob, memory)
        if step is not None:
            return step
        person, author = memory["person"], memory["author"]
        if _site_at(self, ob) != "tracker":
            return _goto(self, "tracker", "/", f"look up {author} in the tracker's team list",
                         "open the tracker, whose wiki lists the team")
        if kit.path(ob) == "/wiki/TeamContacts":
            for line in kit.page_text(ob).splitlines():
                m = re.search(rf"([A-Z][\w-]+(?: [A-Z][\w-]+)+) \({re.escape(person)}\)", line)
                if m:
                    return kit.why(kit.finish(m.group(1)), f"give the full name of {author}",
                                   f"tell who started {_q(self.params['title'])}")
            return None
        team = kit.link(ob, "Team", href=r"/wiki/TeamContacts$")
        if team is not None:
            return kit.why(_reached(kit.click(ob, team), "Team link"), f"open the team list to find {person}",
                           "see the team members' full names")
        wiki = kit.require(kit.link(ob, "Wiki", href=r"^/wiki$"), "Wiki link")
        return kit.why(_reached(kit.click(ob, wiki), "Wiki link"), "open the tracker's wiki, which lists the team",
                       f"find the team page with {person}'s full name")


class TrackerOpenTicketsOfForumAuthor(_ForumAuthorOnTracker):
    template = "count_tickets_of_forum_author"
    answer_task = True
    intent_template = ('How many open tickets on the tracker are owned by the developer who started the forum '
                       'topic "{title}"? Answer with the number.')
    intent_templates = (
        intent_template,
        'The author of "{title}" on the forum is one of our developers. How many tickets that are not closed do '
        'they own on the tracker?',
        'Count the open tracker tickets of whoever posted the forum thread "{title}".',
        'How busy is the developer who opened "{title}" on the forum? Give the number of open tickets they own.',
    )
    user = "grace"

    def sample(self, rng):
        t = _topic_by_tracker_person(rng, developers_only=True)
        owner = FORUM_TO_TRACKER[t.author]
        count = sum(1 for k in tracker_seed().tickets if k.final["owner"] == owner and k.final["status"] != "closed")
        return {"title": t.title, "board": t.board, "owner": owner, "count": count}

    def check(self, answer):
        nums = re.findall(r"\d+", answer or "")
        return nums == [str(self.params["count"])], f"answered {answer!r}, expected {self.params['count']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["count"])]}

    def decide(self, ob, memory):
        step = self.author_steps(ob, memory)
        if step is not None:
            return step
        person = memory["person"]
        if kit.path(ob) == "/query" and kit.query(ob).get("owner") == [person] and memory.get("updated"):
            numrows = kit.find(ob, lambda e: "numrows" in e.attrs.get("class", ""))
            m = re.search(r"(\d+|No) match", numrows.text if numrows is not None else "")
            if m is None:
                return None
            return kit.why(kit.finish("0" if m.group(1) == "No" else m.group(1)),
                           f"give the number of open tickets {person} owns",
                           f"tell how many tickets of {person} are still open")
        return self.query_steps(ob, memory)


# ============================================================================= shop end
class ShopBasketPerWikiPerson(ShopTask):
    template = "basket_per_wiki_person"
    intent_template = ('Add one "{product}" to your shop basket for each person in the Meridian Wiki category '
                       '"{category}".')
    intent_templates = (
        intent_template,
        'Buy a "{product}" for every {member} listed in the wiki\'s "{category}" category: put them in your basket.',
        'I need as many "{product}" as the wiki has pages in its category "{category}". Add them to my basket.',
        'Check how many people the wiki lists under "{category}" and put that many "{product}" in the basket.',
    )
    user = CUSTOMER
    other_sites = (WikiSite,)

    def expert(self, ob, memory):
        return _patient(ob, memory, self.decide)

    def sample(self, rng):
        w = wiki_seed.world()
        category = rng.choice([o + "s" for o in wiki_seed.OCCUPATIONS])
        count = len(w.category_members(category))
        prod = rng.choice([p for p in shop_seed()["products"] if p["stock"] >= count])
        return {**_shop_product_params(prod), "product": prod["title"], "category": category,
                "member": category[:-1].lower(), "count": count}

    def check(self, answer):
        rows = self.site.query(
            "select l.quantity from basket_line l join basket_basket b on b.id = l.basket_id "
            "join catalogue_product p on p.id = l.product_id where b.owner_id = ? and b.status = 'Open' and p.upc = ?",
            (self._user_id(CUSTOMER), self.params["upc"]))
        got = sum(r[0] for r in rows)
        return got == self.params["count"], f"basket holds {got} of {self.params['upc']}, want {self.params['count']}"

    def program_html(self):
        return self.page_shows("/basket/", _JS_BASKET, f"|{self.params['title']} x {self.params['count']}|")

    def decide(self, ob, memory):
        p = self.params
        cat = "Category:" + p["category"]
        if memory.get("added"):
            return kit.why(kit.finish(), f"put {memory['count']} of the {p['product']} in your basket",
                           f"have one {p['product']} per {p['member']} in the basket")
        if "count" not in memory:
            if _site_at(self, ob) != "wiki":
                return _goto(self, "wiki", "/wiki/Main_Page", f"count the {p['category'].lower()} on the wiki",
                             f"open the wiki to see who is in the {p['category']} category")
            step = _wiki_open(ob, cat, (f"look up the {p['category']} category", f"search the wiki for {cat}"),
                              (f"open the {p['category']} category to count its pages",
                               f"see the people listed in {p['category']}"))
            if step is not None:
                return step
            box = kit.by_id(ob, "mw-pages")
            m = re.search(r"out of ([\d,]+) total", box.all_text if box else "")
            if m is None:
                return None
            memory["count"] = int(m.group(1).replace(",", ""))
        n = memory["count"]
        if _site_at(self, ob) != "shop":
            return _goto(self, "shop", "/", f"go to the shop to buy {n} of the {p['product']}",
                         f"return to the shop with the count, {n}")
        step = _search_and_open(ob, memory, p, "add it to your basket")
        if step is not None:
            return step
        step = kit.fill(ob, kit.field(ob, "quantity"), str(n))
        if step is not None:
            return kit.why(step, f"ask for {n} of them, one per {p['member']}", f"set the quantity to {n}")
        return kit.once(memory, "added", kit.why(kit.click(ob, kit.button(ob, "Add to basket")),
                                                 f"put {n} of the {p['product']} in your basket",
                                                 f"add one {p['product']} per {p['member']} to the basket"))


# ============================================================================= wiki end
_FORUM_TRAVEL_TOPICS = ("Travel tips for long train journeys", "Weekend hiking trails near cities",
                        "Cycling to work in winter", "Learning a language as an adult")
_TALK_SUBJECTS = ("Forum discussion", "Visitor tips on the forum", "Related forum thread")


class WikiTalkForumThread(WikiTask):
    template = "talk_links_forum_thread"
    intent_template = ('Tell the readers of the wiki article on {city} about the forum thread "{title}": start a '
                       'section headed "{subject}" on the article\'s talk page whose message gives the thread\'s '
                       'address.')
    intent_templates = (
        intent_template,
        'On the talk page of {city}, open a topic "{subject}" that links the forum thread "{title}".',
        'Post the address of the forum topic "{title}" on the {city} talk page, in a new section "{subject}".',
        'Link the forum discussion "{title}" from the discussion page of the wiki\'s {city} article, under the '
        'heading "{subject}".',
    )
    user = "Nico Ferro"
    other_sites = (ForumSite,)

    def expert(self, ob, memory):
        return _patient(ob, memory, self.decide)

    def sample(self, rng):
        title = rng.choice(_FORUM_TRAVEL_TOPICS)
        return {"city": rng.choice(wiki_seed.world().of_kind("city")).title, "title": title,
                "board": forum_seed.build().topic(title).board, "subject": rng.choice(_TALK_SUBJECTS)}

    def check(self, answer):
        p = self.params
        text = self.site.page_text(p["city"], ns=1)
        if text is None:
            return False, f"Talk:{p['city']} does not exist"
        if not re.search(r"^==\s*" + re.escape(p["subject"]) + r"\s*==\s*$", text, re.M):
            return False, f"no section headed {p['subject']!r}"
        if not _forum_url_in(self, text, p["title"]):
            return False, "the talk page does not give the thread's address"
        return True, "topic started with the link"

    def program_html(self) -> list[dict[str, Any]]:
        """The talk page has the section, and it gives the thread's address (its id on the forum)."""
        p, forum = self.params, self.others["forum"]
        topic = forum.query("select id from spirit_topic_topic where title = ? order by id", (p["title"],))[0][0]
        address = f"{urllib.parse.urlsplit(forum.base_url).netloc}/topic/{topic}/{slugify(p['title'])}"
        return self._talk_section_targets(p["city"], p["subject"], address)

    def decide(self, ob, memory):
        p = self.params
        city, talk, q = p["city"], "Talk:" + p["city"], _q(p["title"])
        if "link" not in memory:
            if _site_at(self, ob) != "forum":
                return _goto(self, "forum", "/", f"find {q} on the forum", f"open the forum to get the address of {q}")
            step = _forum_open_topic(ob, memory, p["title"], p["board"], f"open {q} to copy its address",
                                     f"go to the thread {q}")
            if step is not None:
                return step
            memory["link"] = urllib.parse.urlsplit(_page_address(ob))._replace(query="").geturl()
        if _site_at(self, ob) != "wiki":  # the article by its address, as the wiki names its pages
            return _goto(self, "wiki", "/wiki/" + urllib.parse.quote(db_key(city)),
                         f"go back to the wiki's {city} article to tell its readers about {q}",
                         f"return to the {city} article with the address of {q}")
        if _at(ob, talk) and memory.get("saved"):
            return kit.why(kit.finish("done"), f"link {q} from the talk page of {city}",
                           f"start the {p['subject']} topic on {city}'s talk page")
        if _at(ob, talk, "edit") or _at(ob, talk, "submit"):
            area = kit.by_id(ob, "wpTextbox1")
            if area is None:
                return None
            text = f"== {p['subject']} ==\nThe forum discusses this in {q}: {memory['link']} ~~~~\n"
            if _squeeze_spaces(area.value) != _squeeze_spaces(text):
                return kit.why(kit.fill(ob, area, text), f"write the {p['subject']} heading and the thread's address",
                               f"put the link to {q} on the talk page")
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.by_id(ob, "wpSave")),
                                                     f"post the {p['subject']} topic", "save the new talk-page section"))
        if _at(ob, city):
            tab = _tab(ob, "ca-talk")
            return kit.why(kit.click(ob, tab), f"open the discussion page of {city}",
                           f"start the topic on the talk page of {city}") if tab is not None else _WAIT
        return _wiki_open(ob, city, (f"search the wiki for {city}", f"look up the {city} article"),
                          (f"open the {city} article, whose Discussion tab leads to its talk page",
                           f"reach {city} to start a topic about it"))


TASKS.extend((
    # forum end
    ForumReplyWikiFact, ForumReplyTicketMilestone, ForumTopicOfShopProduct, ForumRepliesOfShopProductTopic,
    # tracker end
    TrackerTicketCitingWiki, TrackerCommentForumLink, TrackerTicketShopPrice, TrackerTicketsOfForumAuthor,
    TrackerFullNameOfForumAuthor, TrackerOpenTicketsOfForumAuthor,
    # shop end
    ShopBasketPerWikiPerson,
    # wiki end
    WikiTalkForumThread,
))
