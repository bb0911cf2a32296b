"""The wiki's drift: a few days of the other editors' work on Meridian Wiki, written as MediaWiki writes it.

:meth:`mag_dataset.sites.base.Site.drift` moves a reset site on before ``mag recapture --drift``
replays an episode on it, the way WebMRE's stale screenshots arose (WebMRE, arXiv 2609.27353,
§3: observations re-rendered on a site that had moved on since the demonstration). On the wiki
that is what its seven editors and its administrator do in :data:`DAYS_PER_LEVEL` days (each
level adds as much again; :data:`PER_LEVEL`):

* **infobox updates**: city populations from the 2024 census (infobox and introduction), a new
  mayor after the June election (infobox and History), a species reassessed one step on the
  conservation scale (infobox, Conservation and, once endangered, the "Endangered species"
  category), a country's population;
* **paragraphs added** (a sentence in the introduction or a section, now and then a new
  section) and **rephrased** introductions, from sentence patterns filled with the seed's
  vocabulary;
* **template edits**: the infobox templates get coloured title bars, so every article looks
  different (same labels, fields and size);
* **new articles** (a town, a species or a person, with infobox and categories), each then
  listed on its country's or birth town's page;
* a **new category** ("Towns on the <river>") that an editor fills with the cities on that river;
* **talk-page posts** (signed sections on article talk pages, and a question on the sysop's
  user talk page, which MediaWiki announces to her as "new messages");
* the **Main Page** rotated by Admin: another featured article, the week's news and the
  article count.

Most changes rewrite text inside the elements a page already has (a sentence more in a
paragraph, a figure, a reworded phrase, an infobox's colour). A recorded action names its
element by its place among the page's elements (BrowserGym's bid) or clicks a point of the
screen, so such a page looks different while most recorded actions still reach their targets;
where text grows above a clicked point, or a change adds elements (a new section, a list item,
a category, a row at the top of a history, a talk page that now exists), a replay that acts
there diverges, as on a real site. The Main Page, where every episode starts, only changes text:
its search box, which every episode's first actions use, keeps its bid and its place.

Every change is a real revision: rows in ``text``, ``content``, ``slots``, ``revision`` (with
``revision_comment_temp``), ``comment``, ``page``, ``recentchanges``, the link tables
(``pagelinks``, ``templatelinks``, ``categorylinks`` and ``category`` counts), the search
index, the creation log, ``site_stats``, the editor's watchlist (MediaWiki's "watch the pages
I edit" default), the "updated since your last visit" marks of the other watchers and
``user_newtalk``, as MediaWiki 1.39 writes them for an edit through the web (checked against
API edits). The ``user`` and ``actor`` rows, passwords, groups and sessions are never touched,
and nothing is deleted: every seeded page still exists, with newer content.

Deterministic: every draw comes from the ``rng`` in a fixed order, and timestamps are fixed
minutes after the seed's last edit (2024-06-01), so the same seed and level on a reset site
give the same rows; the server keeps no cache outside the SQLite files (see
:mod:`mag_dataset.sites.wiki`), so it shows the drift at once. One short transaction on
``meridian.sqlite``.
"""

from __future__ import annotations

import hashlib
import random
import re
import sqlite3
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Callable

from mag_dataset.sites.base import Site
from mag_dataset.sites.wiki import seed as wseed

#: Days of activity one drift level stands for.
DAYS_PER_LEVEL = 3

#: Changes drawn per level (fewer when the wiki has fewer candidates): what three days of census
#: tables, an election, a species assessment and the usual copyediting bring to a 64-article wiki
#: with seven editors (about 30 revisions, a third of the articles).
PER_LEVEL: dict[str, int] = {
    "census": 6, "mayors": 2, "statuses": 3, "countries": 1, "paragraphs": 6, "rephrasings": 4, "templates": 4,
    "new_articles": 2, "categories": 1, "article_talk": 2, "user_talk": 1,
}

#: Kinds of change :func:`apply_drift` counts (every key is always present).
KINDS: tuple[str, ...] = (
    "revisions", "article_edits", "infobox_updates", "paragraphs_added", "rephrasings", "template_edits",
    "new_articles", "new_categories", "category_links", "talk_posts", "main_page_edits", "recent_changes",
    "watchlist_rows", "notifications")

_NS = {"": 0, "Talk": 1, "User": 2, "User talk": 3, "Meridian Wiki": 4, "Template": 10, "Category": 14}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_SYSOPS = ("Admin", "Petra Lund")  # autopatrolled: their changes are marked patrolled (rc_patrolled = 2)


# ----------------------------------------------------------------------------- sentence patterns
_CITY_SENTENCES = (
    "A new footbridge across the {river} was opened in the spring of 2024.",
    "The {festival} of 2024 drew a record number of visitors.",
    "The town council approved a new harbour quay for the {industry} trade in 2024.",
    "Its old {industry} warehouses were converted into a covered market in 2024.",
    "A museum of {industry} opened in the former customs house in 2024.",
    "The riverside promenade along the {river} was extended by two kilometres in 2024.",
)
_CITY_SECTIONS = (
    ("Transport", "{name} lies on the coach road to [[{twin}]]; a ferry crosses the {river} every hour in summer."),
    ("Education", "The town has {n} primary schools and a college of {industry} founded in {year}."),
    ("Sport", "The {name} rowing club has raced on the {river} since {year}."),
)
_PERSON_SENTENCES = (
    "A new biography of {first} was published in 2024.",
    "{last}'s letters are kept in the town archive of {city}.",
    "An exhibition on {field} opened in {city} in 2024, marking the anniversary of {last}'s birth.",
    "The house where {first} was born in {city} now carries a plaque.",
)
_PERSON_SECTIONS = (
    ("Honours", "{last} received the freedom of [[{city}]] in {year}."),
    ("Personal life", "{first} married in {year} and lived for most of their life in [[{city}]]."),
)
_SPECIES_SENTENCES = (
    "A survey in 2024 found new breeding sites along the {river}.",
    "It is often seen near the {river} in late summer.",
    "Volunteers counted about {count} adults in the spring survey of 2024.",
)
_SPECIES_SECTIONS = (
    ("Behaviour", "It is most active at dusk and rests in {place} during the day."),
    ("Diet", "Its diet changes with the seasons; along the {river} it feeds mostly at night."),
)
_COUNTRY_SENTENCES = (
    "In 2024 {name} joined the river commission of the {river}.",
    "A new coast road linking its ports was opened in 2024.",
)
_COUNTRY_SECTIONS = (
    ("Economy", "The economy of {name} rests on {industry} and {industry2}; its currency is the {currency}."),
)
_PLACES = ("reed beds", "upland meadows", "cold streams", "pine forest")
_TITLE_COLOURS = ("#cee0f2", "#d3eed3", "#e7dcc3", "#ddddff", "#f9e4c8")
_FEATURED_MORE = (
    "Born in {born}, {last} is still taught in every school of {country}, and a new biography appeared this spring.",
    "A prize in {last}'s name is awarded every year in {country}; this year's winners were announced in May.",
    "The house in {city} where {last} was born opened to visitors this month after a long restoration.",
)

#: Introduction rewordings: (pattern, replacement), tried in a shuffled order; the first that matches is used.
_REPHRASE: dict[str, tuple[tuple[str, str], ...]] = {
    "city": ((r"It was founded in (\d+) and (has|had) a population of ([\d,]+)",
              r"Founded in \1, it \2 a population of \3"),
             (r" on the (\w+) river\.", r", on the banks of the \1 river."),
             (r"is a (port city|market town|city|river city) in ", r"is a small \1 in ")),
    "person": ((r", best known for ", ", remembered above all for "),
               (r"\) was a (\w+) (\w+) from ", r") was a noted \1 \2 from ")),
    "species": ((r", mostly found along the (\w+)\.", r"; it is found chiefly along the \1 and its tributaries."),
                (r"is a species native to ", "is a species endemic to ")),
    "country": ((r"is a country in the west of the Meridian continent", "is a coastal country in the western part "
                 "of the Meridian continent"),
                (r"Its capital and largest city is ", "Its capital, and by far its largest city, is ")),
}

_TALK_TOPICS: dict[str, tuple[tuple[str, str], ...]] = {
    "city": (("Census source", "Could someone add a citation for the new population figure? The census office "
                               "published its tables in May."),
             ("Founding date", "Two older histories give a founding date about {count} years earlier than the "
                               "infobox. Should the article mention both?"),
             ("Festival dates", "{festival} moves to the first week of July this year; the Culture section may "
                                "need an update.")),
    "species": (("Range", "There were sightings of the {name} well outside [[{country}]] last month. Worth a "
                          "line in Habitat?"),
                ("Conservation listing", "Is the status in the infobox still current? The assessment was "
                                         "revised this spring.")),
    "person": (("Birth date", "The parish register gives a different day of birth. Does anyone have a second "
                              "source?"),
               ("Portrait", "The town museum of [[{city}]] has a portrait of {last}; perhaps we could describe "
                            "it here.")),
}
_USER_TALK = (("Thanks for the copyedits", "Thank you for tidying up the city articles this week."),
              ("Census figures", "I am updating the population figures from the 2024 census; could you check "
                                 "the ones for your towns?"),
              ("Style guide question", "Should new species articles have a Behaviour section? The style guide "
                                       "does not say."))


# ----------------------------------------------------------------------------- MediaWiki's own encodings
def _ts(t: datetime) -> str:
    return t.strftime("%Y%m%d%H%M%S")


def _human(t: datetime) -> str:
    """A signature's date: ``14:05, 3 June 2024 (UTC)``."""
    return f"{t:%H:%M}, {t.day} {_MONTHS[t.month - 1]} {t.year} (UTC)"


def _sha1_base36(text: str) -> str:
    """``rev_sha1`` / ``content_sha1``: SHA-1 in base 36, 31 digits (``Wikimedia\\base_convert``)."""
    n = int(hashlib.sha1(text.encode()).hexdigest(), 16)
    digits = ""
    while n:
        n, r = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
    return digits.rjust(31, "0")


def _comment_hash(text: str) -> int:
    """``CommentStore::hash`` (no data): the CRC-32 as a signed 32-bit integer."""
    h = zlib.crc32(text.encode())
    return h - (1 << 32) if h >= 1 << 31 else h


def _db_key(title: str) -> str:
    t = title.strip().replace(" ", "_")
    return t[:1].upper() + t[1:]


def _split_title(full: str) -> tuple[int, str]:
    """(namespace, db key) of ``Talk:Foo bar`` style titles."""
    if ":" in full:
        prefix, rest = full.split(":", 1)
        if prefix.strip() in _NS:
            return _NS[prefix.strip()], _db_key(rest)
    return 0, _db_key(full)


_LC = rb"\"*A-Za-z_'.0-9\x80-\xFF\-&#;"
_UC = rb"A-Za-z0-9_\/:.,~%\-+&;#?!=()@\x80-\xFF"
_PROTOS = rb"http|https|ftp|mailto|news|gopher"


def search_text(text: str) -> str:
    """``SearchUpdate::updateText`` for SQLite: what the search index holds for a page's wikitext."""
    t = (" " + text + " ").lower().encode()
    t = re.sub(rb"</?\s*[A-Za-z][^>]*?>", b" ", t)
    t = re.sub(rb"(^|\n)==\s*([^\n]+)\s*==(\s)", rb"\1\2 \2 \2\3", t)
    t = re.sub(rb"(^|[^\[])(" + _PROTOS + rb"):[" + _UC + rb"]+([^" + _UC + rb"]|$)", rb"\1 \3", t)
    t = re.sub(rb"([^\[])\[(" + _PROTOS + rb"):[" + _UC + rb"]+]", rb"\1 ", t)
    t = re.sub(rb"([^\[])\[(" + _PROTOS + rb"):[" + _UC + rb"]+\s+([^\]]+)]", rb"\1 \3 ", t)
    t = re.sub(rb"\[\[image:([" + _UC + rb"]+)\.(gif|png|jpg|jpeg)([^" + _UC + rb"])", rb" \1 \3", t, flags=re.I)
    t = re.sub(rb"([^" + _LC + rb"])([" + _LC + rb"]+)]]([a-z]+)", rb"\1\2 \2\3", t)
    t = re.sub(rb"[^" + _LC + rb"]+", b" ", t)
    t = re.sub(rb" s'([" + _LC + rb"]+)", rb" s'\1 \1", t[::-1])[::-1]
    t = re.sub(rb" 's([" + _LC + rb"]+)", rb" s\1", t[::-1])[::-1]
    t = re.sub(rb"''[']*", b" ", t)
    return t.decode("utf-8", "replace")


def search_title(key: str) -> str:
    """``SearchUpdate::getNormalizedTitle``: the index's title of a page (db key without namespace)."""
    t = re.sub(rb"[^" + _LC + rb"]+", b" ", key.replace("_", " ").encode()).lower()
    t = re.sub(rb"([" + _LC + rb"]+)'s( |$)", rb"\1 \1's ", t)
    t = re.sub(rb"([" + _LC + rb"]+)s'( |$)", rb"\1s ", t)
    return re.sub(rb"\s+", b" ", t).strip().decode("utf-8", "replace")


# ----------------------------------------------------------------------------- wikitext helpers
def _links(text: str) -> set[tuple[int, str]]:
    """Targets of ``[[...]]`` links (not category tags), as (namespace, db key)."""
    out = set()
    for m in re.finditer(r"\[\[([^\]|#]+)", text):
        target = m.group(1).strip()
        if target.lower().startswith(("category:", "file:", "image:")):
            continue
        out.add(_split_title(target.lstrip(":")))
    return out


def _categories(text: str) -> set[str]:
    return {_db_key(m.group(1)) for m in re.finditer(r"\[\[Category:([^\]|]+)", text)}


def _templates(text: str) -> set[str]:
    # {{Name|...}} but neither {{{parameter}}} nor {{#parser function:...}}
    return {_db_key(m.group(1)) for m in re.finditer(r"(?<!\{)\{\{(?!\{)\s*([^|{}\n#:]+?)\s*(?:\||\}\}|\n)", text)}


def _blocks(text: str) -> list[str]:
    return text.rstrip("\n").split("\n\n")


def _join(blocks: list[str]) -> str:
    return "\n\n".join(blocks) + "\n"


def _intro_index(blocks: list[str]) -> int | None:
    for i, b in enumerate(blocks):
        if b.startswith(("'''", "The '''")):
            return i
    return None


def _append_to_intro(text: str, sentence: str) -> str | None:
    """Add a sentence at the end of the introduction (the same paragraph: no new element)."""
    blocks = _blocks(text)
    i = _intro_index(blocks)
    if i is None:
        return None
    blocks[i] = blocks[i].rstrip() + " " + sentence
    return _join(blocks)


def _section_index(blocks: list[str], heading: str) -> int | None:
    for i, b in enumerate(blocks):
        if re.match(r"==\s*" + re.escape(heading) + r"\s*==\n", b + "\n"):
            return i
    return None


def _append_to_section(text: str, heading: str, sentence: str) -> str | None:
    """Add a sentence at the end of a prose section (its last paragraph: no new element), or a
    ``* item`` line to a list section."""
    blocks = _blocks(text)
    i = _section_index(blocks, heading)
    if i is None:
        return None
    j = i + 1  # the section's paragraphs run to the next heading or the category tags
    while j < len(blocks) and not blocks[j].startswith(("==", "[[Category:")):
        j += 1
    last = blocks[j - 1].split("\n")[-1]
    if last.startswith(("*", "==")):
        blocks[j - 1] = blocks[j - 1] + "\n" + sentence
    else:
        blocks[j - 1] = blocks[j - 1] + " " + sentence
    return _join(blocks)


def _add_section(text: str, heading: str, body: str) -> str:
    """Insert a section before "See also" (or before the category tags, or at the end)."""
    blocks = _blocks(text)
    at = _section_index(blocks, "See also")
    if at is None:
        at = next((i for i, b in enumerate(blocks) if b.startswith("[[Category:")), len(blocks))
    blocks.insert(at, f"== {heading} ==\n{body}")
    return _join(blocks)


def _add_category(text: str, category: str) -> str:
    tag = f"[[Category:{category}]]"
    if tag in text:
        return text
    blocks = _blocks(text)
    if blocks and blocks[-1].startswith("[[Category:"):
        blocks[-1] = blocks[-1] + "\n" + tag
    else:
        blocks.append(tag)
    return _join(blocks)


def _box_value(text: str, field: str) -> str | None:
    m = re.search(r"^\| " + re.escape(field) + r" = (.*)$", text, re.M)
    return m.group(1) if m else None


def _set_box_value(text: str, field: str, value: str) -> str:
    return re.sub(r"^(\| " + re.escape(field) + r" = ).*$", lambda m: m.group(1) + value, text, count=1, flags=re.M)


def _fmt_int(n: int) -> str:
    return f"{n:,}"


# ----------------------------------------------------------------------------- the writer
@dataclass
class _Event:
    """One planned change: ``edit(text or None) -> (new text, comment)`` or None when it no longer applies."""

    when: datetime
    order: int
    user: str
    ns: int
    title: str  # db key
    kind: str
    edit: Callable[[str | None], tuple[str, str] | None]


class _Wiki:
    """Writes revisions into ``meridian.sqlite`` with the rows MediaWiki's page updater writes."""

    def __init__(self, con: sqlite3.Connection, counts: dict[str, int]) -> None:
        self.con = con
        self.counts = counts
        self.actors = {name: (aid, uid) for aid, uid, name in con.execute(
            "SELECT actor_id, actor_user, actor_name FROM actor")}

    def one(self, sql: str, params: tuple = ()) -> tuple | None:
        return self.con.execute(sql, params).fetchone()

    def page(self, ns: int, key: str) -> tuple[int, int, int] | None:
        """(page_id, page_latest, page_len)."""
        return self.one("SELECT page_id, page_latest, page_len FROM page WHERE page_namespace = ? AND page_title = ?",
                        (ns, key))

    def text(self, ns: int, key: str) -> str | None:
        row = self.one("SELECT t.old_text FROM page p JOIN slots s ON s.slot_revision_id = p.page_latest "
                       "JOIN content c ON c.content_id = s.slot_content_id JOIN text t ON 'tt:' || t.old_id = "
                       "c.content_address WHERE p.page_namespace = ? AND p.page_title = ?", (ns, key))
        if row is None:
            return None
        return row[0].decode() if isinstance(row[0], bytes) else str(row[0])

    def comment_id(self, text: str) -> int:
        h = _comment_hash(text)
        row = self.one("SELECT comment_id FROM comment WHERE comment_hash = ? AND comment_text = ? AND "
                       "comment_data IS NULL", (h, text))
        if row:
            return int(row[0])
        return int(self.con.execute("INSERT INTO comment (comment_hash, comment_text, comment_data) "
                                    "VALUES (?, ?, NULL)", (h, text)).lastrowid)

    def save(self, ns: int, key: str, text: str, user: str, comment: str, when: datetime, rnd: float) -> int:
        """Write one revision of a page (creating the page when it does not exist); returns its rev_id."""
        ts = _ts(when)
        actor, user_id = self.actors[user]
        size = len(text.encode())
        sha1 = _sha1_base36(text)
        old = self.page(ns, key)
        new = old is None
        if new:
            page_id = int(self.con.execute(
                "INSERT INTO page (page_namespace, page_title, page_is_redirect, page_is_new, page_random, "
                "page_touched, page_links_updated, page_latest, page_len, page_content_model, page_lang) "
                "VALUES (?, ?, 0, 1, ?, ?, ?, 0, ?, 'wikitext', NULL)", (ns, key, rnd, ts, ts, size)).lastrowid)
            parent, old_len = 0, 0
        else:
            page_id, parent, old_len = old
        comment_id = self.comment_id(comment)
        text_id = self.con.execute("INSERT INTO text (old_text, old_flags) VALUES (?, 'utf-8')", (text,)).lastrowid
        content_id = self.con.execute(
            "INSERT INTO content (content_size, content_sha1, content_model, content_address) VALUES (?, ?, 1, ?)",
            (size, sha1, f"tt:{text_id}")).lastrowid
        rev = int(self.con.execute(
            "INSERT INTO revision (rev_page, rev_comment_id, rev_actor, rev_timestamp, rev_minor_edit, rev_deleted, "
            "rev_len, rev_parent_id, rev_sha1) VALUES (?, 0, ?, ?, 0, 0, ?, ?, ?)",
            (page_id, actor, ts, size, parent, sha1)).lastrowid)
        self.con.execute("INSERT INTO revision_comment_temp (revcomment_rev, revcomment_comment_id) VALUES (?, ?)",
                         (rev, comment_id))
        self.con.execute("INSERT INTO slots (slot_revision_id, slot_role_id, slot_content_id, slot_origin) "
                         "VALUES (?, 1, ?, ?)", (rev, content_id, rev))
        self.con.execute("UPDATE page SET page_latest = ?, page_len = ?, page_touched = ?, page_links_updated = ?, "
                         "page_is_new = ? WHERE page_id = ?", (rev, size, ts, ts, int(new), page_id))
        self.con.execute(
            "INSERT INTO recentchanges (rc_timestamp, rc_actor, rc_namespace, rc_title, rc_comment_id, rc_minor, "
            "rc_bot, rc_new, rc_cur_id, rc_this_oldid, rc_last_oldid, rc_type, rc_source, rc_patrolled, rc_ip, "
            "rc_old_len, rc_new_len, rc_deleted, rc_logid, rc_log_type, rc_log_action, rc_params) "
            "VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?, ?, '127.0.0.1', ?, ?, 0, 0, NULL, '', '')",
            (ts, actor, ns, key, comment_id, int(new), page_id, rev, parent, int(new), "mw.new" if new else "mw.edit",
             2 if user in _SYSOPS else 0, old_len, size))
        self.counts["revisions"] += 1
        self.counts["recent_changes"] += 1
        if new:
            log = self.con.execute(
                "INSERT INTO logging (log_type, log_action, log_timestamp, log_actor, log_namespace, log_title, "
                "log_page, log_comment_id, log_params, log_deleted) "
                "VALUES ('create', 'create', ?, ?, ?, ?, ?, ?, ?, 0)",
                (ts, actor, ns, key, page_id, comment_id, f'a:1:{{s:17:"associated_rev_id";i:{rev};}}')).lastrowid
            self.con.execute("INSERT INTO log_search (ls_field, ls_value, ls_log_id) "
                             "VALUES ('associated_rev_id', ?, ?)", (str(rev), log))
            # pages that linked to the missing title, and its subject or talk page, show a blue link now
            self.con.execute("UPDATE page SET page_touched = ? WHERE page_id IN (SELECT pl_from FROM pagelinks WHERE "
                             "pl_namespace = ? AND pl_title = ?) OR (page_namespace = ? AND page_title = ?)",
                             (ts, ns, key, ns ^ 1, key))
        if ns == 10:  # the pages that use the template render anew (HTMLCacheUpdate)
            self.con.execute("UPDATE page SET page_touched = ? WHERE page_id IN (SELECT tl_from FROM templatelinks "
                             "JOIN linktarget ON lt_id = tl_target_id WHERE lt_namespace = 10 AND lt_title = ?)",
                             (ts, key))
        self._links(page_id, ns, key, text, ts)
        self.con.execute("DELETE FROM searchindex WHERE rowid = ?", (page_id,))
        self.con.execute("INSERT INTO searchindex (rowid, si_title, si_text) VALUES (?, ?, ?)",
                         (page_id, search_title(key), search_text(text)))
        good = int(new and ns == 0 and bool(_links(text)))
        self.con.execute("UPDATE site_stats SET ss_total_edits = ss_total_edits + 1, ss_total_pages = "
                         "ss_total_pages + ?, ss_good_articles = ss_good_articles + ? WHERE ss_row_id = 1",
                         (int(new), good))
        self._watch(user_id, ns, key, ts)
        return rev

    def _links(self, page_id: int, ns: int, key: str, text: str, ts: str) -> None:
        """LinksUpdate: pagelinks, templatelinks, categorylinks and the category counts."""
        links = _links(text)
        have = set(self.con.execute("SELECT pl_namespace, pl_title FROM pagelinks WHERE pl_from = ?", (page_id,)))
        for lns, lkey in sorted(links - have):
            self.con.execute("INSERT INTO pagelinks (pl_from, pl_namespace, pl_title, pl_from_namespace) "
                             "VALUES (?, ?, ?, ?)", (page_id, lns, lkey, ns))
        for lns, lkey in sorted(have - links):
            self.con.execute("DELETE FROM pagelinks WHERE pl_from = ? AND pl_namespace = ? AND pl_title = ?",
                             (page_id, lns, lkey))
        templates = set()
        for t in sorted(_templates(text)):
            row = self.one("SELECT lt_id FROM linktarget WHERE lt_namespace = 10 AND lt_title = ?", (t,))
            lt = row[0] if row else self.con.execute(
                "INSERT INTO linktarget (lt_namespace, lt_title) VALUES (10, ?)", (t,)).lastrowid
            templates.add(lt)
        have_t = {r[0] for r in self.con.execute("SELECT tl_target_id FROM templatelinks WHERE tl_from = ?",
                                                 (page_id,))}
        for lt in sorted(templates - have_t):
            self.con.execute("INSERT INTO templatelinks (tl_from, tl_target_id, tl_from_namespace) VALUES (?, ?, ?)",
                             (page_id, lt, ns))
        for lt in sorted(have_t - templates):
            self.con.execute("DELETE FROM templatelinks WHERE tl_from = ? AND tl_target_id = ?", (page_id, lt))
        cats = _categories(text)
        have_c = {r[0] for r in self.con.execute("SELECT cl_to FROM categorylinks WHERE cl_from = ?", (page_id,))}
        kind = "subcat" if ns == 14 else "page"
        for c in sorted(cats - have_c):
            self.con.execute("INSERT INTO categorylinks (cl_from, cl_to, cl_sortkey, cl_sortkey_prefix, cl_timestamp, "
                             "cl_collation, cl_type) VALUES (?, ?, ?, '', ?, 'uppercase', ?)",
                             (page_id, c, key.replace("_", " ").upper(), ts, kind))
            if self.one("SELECT 1 FROM category WHERE cat_title = ?", (c,)) is None:
                self.con.execute("INSERT INTO category (cat_title, cat_pages, cat_subcats, cat_files) "
                                 "VALUES (?, 0, 0, 0)", (c,))
            self.con.execute("UPDATE category SET cat_pages = cat_pages + 1, cat_subcats = cat_subcats + ? "
                             "WHERE cat_title = ?", (int(ns == 14), c))
            self.counts["category_links"] += 1
        for c in sorted(have_c - cats):
            self.con.execute("DELETE FROM categorylinks WHERE cl_from = ? AND cl_to = ?", (page_id, c))
            self.con.execute("UPDATE category SET cat_pages = cat_pages - 1, cat_subcats = cat_subcats - ? "
                             "WHERE cat_title = ?", (int(ns == 14), c))
        for c in sorted(cats ^ have_c):  # the category pages list another member now
            self.con.execute("UPDATE page SET page_touched = ? WHERE page_namespace = 14 AND page_title = ?", (ts, c))

    def _watch(self, user_id: int, ns: int, key: str, ts: str) -> None:
        """The editor watches what they edit (the default preference); the other watchers get the
        "changed since your last visit" mark, and a user whose talk page changed, "new messages"."""
        subject = ns - ns % 2
        for wns in (subject, subject + 1):
            if self.one("SELECT 1 FROM watchlist WHERE wl_user = ? AND wl_namespace = ? AND wl_title = ?",
                        (user_id, wns, key)) is None:
                self.con.execute("INSERT INTO watchlist (wl_user, wl_namespace, wl_title, wl_notificationtimestamp) "
                                 "VALUES (?, ?, ?, NULL)", (user_id, wns, key))
                self.counts["watchlist_rows"] += 1
        marked = self.con.execute("UPDATE watchlist SET wl_notificationtimestamp = ? WHERE wl_namespace = ? AND "
                                  "wl_title = ? AND wl_user != ? AND wl_notificationtimestamp IS NULL",
                                  (ts, ns, key, user_id)).rowcount
        self.counts["notifications"] += marked
        if ns == 3:
            owner = self.one("SELECT user_id FROM user WHERE user_name = ?", (key.replace("_", " "),))
            if owner and owner[0] != user_id and self.one("SELECT 1 FROM user_newtalk WHERE user_id = ?",
                                                          (owner[0],)) is None:
                self.con.execute("INSERT INTO user_newtalk (user_id, user_ip, user_last_timestamp) "
                                 "VALUES (?, '', NULL)", (owner[0],))
                self.counts["notifications"] += 1


# ----------------------------------------------------------------------------- the plan
class _Planner:
    """Draws the drift's events from the rng, in a fixed order, before anything is written."""

    def __init__(self, rng: random.Random, level: int, titles: set[tuple[int, str]]) -> None:
        self.rng = rng
        self.level = level
        self.world = wseed.world()
        self.events: list[_Event] = []
        self.news: list[tuple[datetime, str]] = []
        self.taken = set(titles) | {(0, _db_key(t)) for t in self.world.articles}
        latest = max(datetime.strptime(r.timestamp, "%Y-%m-%dT%H:%M:%SZ")
                     for a in self.world.articles.values() for r in a.revisions)
        self.start = datetime(latest.year, latest.month, latest.day, tzinfo=timezone.utc) + timedelta(days=1)
        # set by apply_drift to a query: the Main Page states the count when its edit comes
        self.article_count: Callable[[], int] = lambda: sum(a.ns == 0 for a in self.world.articles.values())

    # -- helpers
    def when(self) -> datetime:
        """A minute of the drift's days, in working hours (07:00-22:59) as most edits are."""
        day = self.rng.randrange(DAYS_PER_LEVEL * self.level)
        return self.start + timedelta(days=day, hours=self.rng.randint(7, 22), minutes=self.rng.randint(0, 59))

    def editor(self, not_: str | None = None) -> str:
        return self.rng.choice([e for e in wseed.EDITORS if e != not_])

    def add(self, when: datetime, user: str, ns: int, title: str, kind: str,
            edit: Callable[[str | None], tuple[str, str] | None]) -> None:
        self.events.append(_Event(when, len(self.events), user, ns, _db_key(title), kind, edit))

    def n(self, kind: str, available: int) -> int:
        return min(PER_LEVEL[kind] * self.level, available)

    def articles(self, kind: str) -> list[wseed.Article]:
        return self.world.of_kind(kind)

    def fill(self, pattern: str, art: wseed.Article) -> str:
        """A sentence pattern filled from the article's facts and the seed's vocabulary."""
        rng, box = self.rng, art.infobox
        city = re.match(r"\[\[([^\]]+)\]\]", box.get("birth_place", "")) or None
        country = box.get("country", box.get("range", "")).strip("[]") or art.title
        return pattern.format(
            name=art.title, river=box.get("river") or rng.choice(wseed._RIVERS), festival=rng.choice(wseed._FESTIVALS),
            industry=rng.choice(wseed._INDUSTRIES), industry2=rng.choice(wseed._INDUSTRIES),
            twin=rng.choice([c.title for c in self.articles("city") if c.title != art.title]),
            n=rng.randint(2, 9), count=rng.randint(3, 40) * 10,
            year=rng.randint(1890, 1990), first=art.title.split()[0], last=art.title.split()[-1],
            city=city.group(1) if city else rng.choice(self.articles("city")).title,
            field=wseed._FIELDS.get(box.get("occupation", ""), "its history"), place=rng.choice(_PLACES),
            currency=box.get("currency", "Crown"), country=country)

    # -- kinds
    def plan(self) -> None:
        self.census()
        self.mayors()
        self.statuses()
        self.country_figures()
        self.paragraphs()
        self.rephrasings()
        self.templates()
        self.new_pages()
        self.category_campaign()
        self.talk()
        self.main_page()

    def census(self) -> None:
        for art in self.rng.sample(self.articles("city"), self.n("census", 24)):
            factor = 1 + self.rng.choice((-1, 1, 1, 1)) * self.rng.randint(4, 45) / 1000

            def edit(text: str | None, factor: float = factor) -> tuple[str, str] | None:
                old = _box_value(text or "", "population")
                if not old or not old.replace(",", "").isdigit():
                    return None
                new = _fmt_int(round(int(old.replace(",", "")) * factor))
                text = _set_box_value(text or "", "population", new)
                text = re.sub(r"(has|had) a population of " + re.escape(old) + r"\.",
                              f"had a population of {new} at the 2024 census.", text, count=1)
                change = f"{'up' if factor > 1 else 'down'} {abs(factor - 1) * 100:.1f} per cent on the previous count"
                text = _append_to_intro(text, f"The census counted {new} inhabitants, {change}.") or text
                return text, "Population from the 2024 census"

            self.add(self.when(), self.editor(art.last_editor), 0, art.title, "infobox_updates", edit)

    def mayors(self) -> None:
        for art in self.rng.sample(self.articles("city"), self.n("mayors", 24)):
            mayor = f"{self.rng.choice(wseed._FIRST)} {self.rng.choice(wseed._LAST)}"
            when = self.when()

            def edit(text: str | None, mayor: str = mayor) -> tuple[str, str] | None:
                old = _box_value(text or "", "mayor")
                if not old or old == mayor:
                    return None
                text = _set_box_value(text or "", "mayor", mayor)
                text = _append_to_section(text, "History", f"In the municipal election of June 2024, {mayor} "
                                                            f"succeeded {old} as mayor.") or text
                return text, f"New mayor: {mayor} (June 2024 election)"

            self.add(when, self.editor(art.last_editor), 0, art.title, "infobox_updates", edit)
            self.news.append((when, f"{mayor} was elected mayor of {art.title}"))

    def statuses(self) -> None:
        species = self.articles("species")
        for art in self.rng.sample(species, self.n("statuses", len(species))):
            i = wseed.STATUSES.index(art.infobox["status"])
            # never out of "Endangered species" (a category is only ever added): 3 -> 2 is not drawn
            steps = [s for s in (i - 1, i + 1) if 0 <= s < len(wseed.STATUSES) and not (i == 3 and s == 2)]
            new = wseed.STATUSES[self.rng.choice(steps)]
            when = self.when()

            def edit(text: str | None, new: str = new) -> tuple[str, str] | None:
                old = _box_value(text or "", "status")
                if not old or old == new:
                    return None
                text = _set_box_value(text or "", "status", new)
                text = text.replace(f"The species is listed as ''{old}''.", f"The species is listed as ''{new}''.")
                text = _append_to_section(text, "Conservation", f"The 2024 assessment moved it from {old.lower()} "
                                          f"to {new.lower()} after a survey of its breeding sites.") or text
                if wseed.STATUSES.index(new) >= 3:
                    text = _add_category(text, "Endangered species")
                return text, f"Conservation status: {new} (2024 assessment)"

            self.add(when, self.editor(art.last_editor), 0, art.title, "infobox_updates", edit)
            self.news.append((when, f"the {art.title.lower()} was reassessed as {new.lower()}"))

    def country_figures(self) -> None:
        for art in self.rng.sample(self.articles("country"), self.n("countries", 4)):
            factor = 1 + self.rng.randint(3, 30) / 1000

            def edit(text: str | None, factor: float = factor) -> tuple[str, str] | None:
                old = _box_value(text or "", "population")
                if not old or not old.replace(",", "").isdigit():
                    return None
                new = _fmt_int(round(int(old.replace(",", "")) * factor))
                text = _set_box_value(text or "", "population", new)
                text = _append_to_intro(text, f"The 2024 census counted {new} inhabitants.") or text
                return text, "Population from the 2024 census"

            self.add(self.when(), self.editor(art.last_editor), 0, art.title, "infobox_updates", edit)

    def paragraphs(self) -> None:
        arts = [a for k in ("country", "city", "person", "species") for a in self.articles(k)]
        patterns = {"city": (_CITY_SENTENCES, _CITY_SECTIONS), "person": (_PERSON_SENTENCES, _PERSON_SECTIONS),
                    "species": (_SPECIES_SENTENCES, _SPECIES_SECTIONS),
                    "country": (_COUNTRY_SENTENCES, _COUNTRY_SECTIONS)}
        for art in self.rng.sample(arts, self.n("paragraphs", len(arts))):
            sentences, sections = patterns[art.kind]
            where = self.rng.choice(("intro", "intro", "section", "section", "section", "new"))
            sentence = self.fill(self.rng.choice(sentences), art)
            heading, body = self.rng.choice(sections)
            body = self.fill(body, art)
            target = self.rng.choice([s for s in art.sections if s not in ("See also", "Cities", "Notable people")])

            def edit(text: str | None, where: str = where, sentence: str = sentence, heading: str = heading,
                     body: str = body, target: str = target) -> tuple[str, str] | None:
                if text is None:
                    return None
                if where == "new" and _section_index(_blocks(text), heading) is None:
                    return _add_section(text, heading, body), f"Added {heading} section"
                if where == "intro":
                    new = _append_to_intro(text, sentence)
                    if new:
                        return new, "Expanded the introduction"
                new = _append_to_section(text, target, sentence)
                return (new, f"/* {target} */ expanded") if new else None

            self.add(self.when(), self.editor(art.last_editor), 0, art.title, "paragraphs_added", edit)

    def rephrasings(self) -> None:
        arts = [a for k in ("country", "city", "person", "species") for a in self.articles(k)]
        for art in self.rng.sample(arts, self.n("rephrasings", len(arts))):
            rules = list(_REPHRASE[art.kind])
            self.rng.shuffle(rules)

            def edit(text: str | None, rules: list[tuple[str, str]] = rules) -> tuple[str, str] | None:
                blocks = _blocks(text or "")
                i = _intro_index(blocks)
                if i is None:
                    return None
                for pattern, repl in rules:
                    new, k = re.subn(pattern, repl, blocks[i], count=1)
                    if k:
                        blocks[i] = new
                        return _join(blocks), "Copyedit: reworded the introduction"
                return None

            self.add(self.when(), self.editor(art.last_editor), 0, art.title, "rephrasings", edit)

    def templates(self) -> None:
        """A template maintainer gives the infoboxes coloured title bars: every article using one changes."""
        names = sorted(a.title for a in self.world.of_kind("template"))
        for title in self.rng.sample(names, self.n("templates", len(names))):
            colour = self.rng.choice(_TITLE_COLOURS)

            def edit(text: str | None, colour: str = colour) -> tuple[str, str] | None:
                old = '|+ style="font-size:125%; font-weight:bold"'
                if text is None or old not in text:
                    return None
                # a colour only: the infobox keeps its size, so nothing on the page moves
                return (text.replace(old, f'|+ style="font-size:125%; font-weight:bold; background:{colour}"', 1),
                        "Coloured title bar, as on the other infoboxes")

            self.add(self.when(), self.editor(), 10, title.split(":", 1)[1], "template_edits", edit)

    def unique(self, make: Callable[[], str]) -> str:
        while True:
            name = make()
            if (0, _db_key(name)) not in self.taken:
                self.taken.add((0, _db_key(name)))
                return name

    def new_pages(self) -> None:
        rng = self.rng
        for _ in range(self.n("new_articles", 12)):
            kind = rng.choice(("town", "town", "species", "person"))
            when, user = self.when(), self.editor()
            follow = when + timedelta(minutes=rng.randint(5, 90))
            if kind == "town":
                name = self.unique(lambda: rng.choice(wseed._CITY_ROOTS) + rng.choice(wseed._CITY_ENDS))
                country, river = rng.choice(wseed.COUNTRIES), rng.choice(wseed._RIVERS)
                pop, founded = rng.randint(3, 60) * 1000 + rng.randint(0, 999), rng.randint(900, 1800)
                box = {"name": name, "country": f"[[{country}]]", "population": _fmt_int(pop),
                       "founded": str(founded), "elevation_m": str(rng.randint(2, 900)), "river": river,
                       "mayor": f"{rng.choice(wseed._FIRST)} {rng.choice(wseed._LAST)}"}
                text = wseed._page(wseed._infobox("Infobox settlement", box),
                                   f"'''{name}''' is a small town in [[{country}]] on the {river} river. It was "
                                   f"founded in {founded} and has a population of {_fmt_int(pop)}.",
                                   [("Economy", f"The town lives from {rng.choice(wseed._INDUSTRIES)} and "
                                                f"{rng.choice(wseed._INDUSTRIES)}.")],
                                   [f"Cities in {country}"])
                parent, section, line = country, "Cities", f"* [[{name}]] (population {_fmt_int(pop)})"
            elif kind == "species":
                cls = rng.choice(wseed.SPECIES_CLASSES)
                name = self.unique(lambda: f"{rng.choice(wseed._SPECIES_A)} {rng.choice(wseed._SPECIES_B[cls])}")
                country, status = rng.choice(wseed.COUNTRIES), rng.choice(wseed.STATUSES[:3])
                latin = f"{rng.choice(wseed._LATIN)} {name.split()[0].lower()}is"
                box = {"name": name, "binomial": f"''{latin}''", "class": cls[:-1] if cls != "Fish" else "Fish",
                       "family": wseed._FAMILIES[cls], "status": status, "length_cm": str(rng.randint(2, 120)),
                       "range": f"[[{country}]]"}
                text = wseed._page(wseed._infobox("Infobox species", box),
                                   f"The '''{name.lower()}''' (''{latin}'') is a species native to [[{country}]], "
                                   f"first described from the {rng.choice(wseed._RIVERS)} in 2024.",
                                   [("Conservation", f"The species is listed as ''{status}''.")],
                                   ["Species", cls])
                parent, section, line = country, "Wildlife", None
            else:
                name = self.unique(lambda: f"{rng.choice(wseed._FIRST)} {rng.choice(wseed._LAST)}")
                city = rng.choice(self.articles("city"))
                country = city.infobox["country"].strip("[]")
                occ = rng.choice(wseed.OCCUPATIONS)
                born = rng.randint(1750, 1900)
                box = {"name": name, "birth_date": f"{rng.randint(1, 28)} {rng.choice(_MONTHS)} {born}",
                       "birth_place": f"[[{city.title}]], [[{country}]]", "death_year": str(born + rng.randint(40, 90)),
                       "occupation": occ, "known_for": wseed._FIELDS[occ]}
                article = "an" if occ[0] in "AEIOU" else "a"
                text = wseed._page(wseed._infobox("Infobox person", box),
                                   f"'''{name}''' ({born}-{box['death_year']}) was {article} {occ.lower()} from "
                                   f"[[{city.title}]], best known for {wseed._FIELDS[occ]}.",
                                   [("Career", f"{name.split()[-1]} worked in [[{city.title}]] for most of "
                                               "their life.")],
                                   ["People", occ + "s"])
                parent, section, line = city.title, "Notable people", f"* [[{name}]], {occ.lower()}"
            self.add(when, user, 0, name, "new_articles",
                     lambda old, text=text: None if old is not None else (text, "New article"))

            def listing(old: str | None, name: str = name, section: str = section, line: str | None = line,
                        kind: str = kind) -> tuple[str, str] | None:
                if old is None:
                    return None
                if kind == "species":
                    new = re.sub(r"(== Wildlife ==\nNative species include .*?)\.(\n|$)",
                                 lambda m: f"{m.group(1)} and the [[{name}]].{m.group(2)}", old, count=1)
                    return (new, f"/* Wildlife */ + [[{name}]]") if new != old else None
                new = _append_to_section(old, section, line or "")
                if new is None:
                    new = _add_section(old, section, line or "")
                return new, f"/* {section} */ + [[{name}]]"

            self.add(follow, user, 0, parent, "article_edits", listing)
            self.news.append((when, f"a new article on {name}"))

    def category_campaign(self) -> None:
        by_river: dict[str, list[str]] = {}
        for a in self.articles("city"):
            by_river.setdefault(a.infobox["river"], []).append(a.title)
        rivers = sorted(r for r, cs in by_river.items() if len(cs) >= 2)
        for river in self.rng.sample(rivers, self.n("categories", len(rivers))):
            user = self.editor()
            cat = f"Towns on the {river}"
            when = self.when()
            self.add(when, user, 14, cat, "new_categories", lambda old, river=river: None if old is not None else (
                f"Cities and towns on the banks of the {river}.\n", "New category"))
            for i, city in enumerate(sorted(by_river[river])[:4]):
                self.add(when + timedelta(minutes=3 * (i + 1)), user, 0, city, "article_edits",
                         lambda old, cat=cat: None if old is None or f"[[Category:{cat}]]" in old else (
                             _add_category(old, cat), f"+[[Category:{cat}]]"))

    def talk(self) -> None:
        rng = self.rng
        kinds = ("city", "city", "species", "person")
        for _ in range(self.n("article_talk", 20)):
            kind = rng.choice(kinds)
            art = rng.choice(self.articles(kind))
            subject, message = rng.choice(_TALK_TOPICS[kind])
            self._post(f"Talk:{art.title}", subject, self.fill(message, art), self.editor())
        # questions go to the wiki's sysop: a message to an editor who logs in for a task would put
        # a "new messages" bar above every page of that task, and no recorded action would replay
        sysops = [u.name for u in wseed.USERS if "sysop" in u.groups and u.name != "Admin"]
        for _ in range(self.n("user_talk", 7)):
            to = rng.choice(sysops)
            subject, message = rng.choice(_USER_TALK)
            self._post(f"User talk:{to}", subject, message, self.editor(not_=to))

    def _post(self, page: str, subject: str, message: str, user: str) -> None:
        when = self.when()
        signature = f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) {_human(when)}"

        def edit(old: str | None) -> tuple[str, str]:
            section = f"== {subject} ==\n\n{message} {signature}"
            return (section if old is None else old.rstrip("\n") + "\n\n" + section), f"/* {subject} */ new section"

        ns, key = _split_title(page)
        self.add(when, user, ns, key, "talk_posts", edit)

    def main_page(self) -> None:
        """Admin features another article and sums the days up in the welcome paragraph.

        Text only, inside the paragraphs the Main Page has: every episode starts on it, and a
        recorded action names its element by its place among the page's elements (BrowserGym's
        bid), so one more link or list item above the search box would send every replay's first
        action to the wrong element.
        """
        rng = self.rng
        people = self.articles("person")
        featured = rng.choice(people[:3] + people[4:])  # not the seeded featured article (people[3])
        # the last change of the drift: it names what the others did
        when = max(e.when for e in self.events) + timedelta(minutes=rng.randint(20, 120))
        box = featured.infobox
        city = box["birth_place"].split("]]")[0].strip("[")
        occupation = box["occupation"].lower()
        more = rng.choice(_FEATURED_MORE).format(last=featured.title.split()[-1], born=box["birth_date"].split()[-1],
                                                 country=box["birth_place"].split("[[")[-1].strip("[]"), city=city)
        blurb = (f"'''[[{featured.title}]]''' was {'an' if occupation[0] in 'aeiou' else 'a'} {occupation} from "
                 f"[[{city}]], best known for {box['known_for']}. {more}")
        news = [text for _, text in sorted(self.news, reverse=True)[:3]]
        week = ("This week: " + "; ".join(news) + ".") if news else ""

        def edit(old: str | None) -> tuple[str, str] | None:
            if old is None:
                return None
            text = re.sub(r"(== Featured article ==\n).*?\n", lambda m: m.group(1) + blurb + "\n", old, count=1)
            text = re.sub(r"It has \d+ articles", f"It has {self.article_count()} articles", text, count=1)
            if week:
                text = re.sub(r"^('''Welcome to the .*)$", lambda m: f"{m.group(1)} {week}", text, count=1,
                              flags=re.M)
            return text, "Main Page: new featured article; this week's news"

        self.add(when, "Admin", 0, "Main Page", "main_page_edits", edit)


# ----------------------------------------------------------------------------- entry point
def apply_drift(site: Site, rng: random.Random, level: int) -> dict[str, int]:
    """Write ``level`` x :data:`DAYS_PER_LEVEL` days of the other editors' activity into the wiki's database.

    Args:
        site: the wiki site (its ``meridian.sqlite`` is written; call on a reset site).
        rng: the drift's ``random.Random`` (:meth:`~mag_dataset.sites.base.Site.drift` seeds it).
        level: how far the wiki moves on (1: three days).

    Returns:
        A count per kind of change (every key of :data:`KINDS`): ``revisions`` and
        ``recent_changes`` count every new revision; ``article_edits``, ``infobox_updates``,
        ``paragraphs_added`` and ``rephrasings`` the revisions of seeded articles (the first
        includes the others); ``template_edits`` the infobox templates restyled;
        ``new_articles`` and ``new_categories`` the pages created;
        ``category_links`` the category memberships added; ``talk_posts``; ``main_page_edits``;
        ``watchlist_rows`` the pages the editors started to watch; ``notifications`` the
        watchers marked and users told of new messages.
    """
    db = site.databases()[0]
    con = sqlite3.connect(str(db), timeout=30, isolation_level=None)
    counts = dict.fromkeys(KINDS, 0)
    try:
        titles = {(int(ns), str(t)) for ns, t in con.execute("SELECT page_namespace, page_title FROM page")}
        planner = _Planner(rng, level, titles)
        planner.plan()
        # page_random of the new pages: drawn after the plan, in event order
        events = sorted(planner.events, key=lambda e: (e.when, e.order))
        randoms = [round(rng.random(), 12) for _ in events]
        con.execute("BEGIN IMMEDIATE")
        wiki = _Wiki(con, counts)
        # the Main Page states the number of articles when its edit comes (the last of the drift)
        planner.article_count = lambda: int(con.execute(
            "SELECT COUNT(*) FROM page WHERE page_namespace = 0 AND page_is_redirect = 0").fetchone()[0])
        seeded = {(0, _db_key(t)) for t, a in planner.world.articles.items() if a.ns == 0 and a.kind != "main"}
        for ev, rnd in zip(events, randoms):
            old = wiki.text(ev.ns, ev.title)
            out = ev.edit(old)
            if out is None or (old is not None and out[0] == old):
                continue
            wiki.save(ev.ns, ev.title, out[0], ev.user, out[1], ev.when, rnd)
            counts[ev.kind] += 1
            if (ev.ns, ev.title) in seeded and ev.kind != "article_edits":
                counts["article_edits"] += 1
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    finally:
        con.close()
    return counts
