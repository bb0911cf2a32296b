"""Live tasks on the wiki site (``sites.wiki.<template>``): reading, editing and curating MediaWiki pages.

WebArena's wiki tasks are information seeking on a Wikipedia mirror; these add the editor's
work (section edits, new pages, categories, moves, undo, talk pages, the watchlist) judged
on MediaWiki's tables after the episode, as WebArena's program-based evaluators do
(house style 18). Parameters come from :func:`mag_dataset.sites.wiki.seed.world`; each
expert navigates from the observation only (search box, tabs, links found by id/href/text).
"""

from __future__ import annotations

import random
import re
import urllib.parse
from typing import Any, ClassVar

from mag_dataset.actions import ActionType
from mag_dataset.live import expert_kit as kit
from mag_dataset.live.expert_kit import Decision
from mag_dataset.live.observe import Element, Observation
from mag_dataset.sites.task import SiteTask
from mag_dataset.sites.wiki import WikiSite, db_key
from mag_dataset.sites.wiki import seed as wseed

#: A step that changes nothing: the page is observed mid-navigation, or a click is still saving.
_WAIT = Decision(ActionType.SCROLL, direction="up")


# ----------------------------------------------------------------------------- observation helpers
def _squeeze_spaces(s: str | None) -> str:
    """Whitespace collapsed, case kept (:func:`kit.norm` lower-cases): titles, user names and
    typed values compare case-sensitively on the wiki."""
    return " ".join((s or "").split())


def _squash(s: str | None) -> str:
    """Lower case, no commas, single spaces: how answers are compared."""
    return kit.norm((s or "").replace(",", "")).strip(" .")


def _child_link(ob: Observation, parent: Element | None) -> Element | None:
    if parent is None:
        return None
    todo = list(parent.children)
    while todo:
        el = ob.elements[todo.pop(0)]
        if el.tag == "a":
            return el
        todo.extend(el.children)
    return None


def _href_title(href: str | None) -> tuple[str, dict[str, str]]:
    """(title, query) of a wiki href or URL: ``/wiki/Foo_bar`` or ``/index.php?title=Foo&action=edit``."""
    parts = urllib.parse.urlsplit(href or "")
    query = dict(urllib.parse.parse_qsl(parts.query))
    if parts.path.startswith("/wiki/"):
        title = urllib.parse.unquote(parts.path[len("/wiki/"):])
    else:
        title = query.get("title", "")
    return title.replace("_", " "), query


def _at(ob: Observation, title: str, action: str = "view") -> bool:
    t, q = _href_title(ob.url)
    return db_key(t) == db_key(title) and q.get("action", "view") == action and "diff" not in q \
        and "oldid" not in q


def _link_to(ob: Observation, title: str) -> Element | None:
    key = db_key(title)
    return kit.find(ob, lambda e: e.tag == "a" and e.attrs.get("href", "").startswith(("/wiki/", "/index.php"))
                    and db_key(_href_title(e.attrs["href"])[0]) == key and "action" not in e.attrs["href"])


def _open(ob: Observation, title: str) -> Decision | None:
    """Reach the view of ``title`` with the search box: type the title, then press Go."""
    box = kit.by_id(ob, "searchInput")
    if box is None:  # observed mid-navigation (no skin yet): wait one step
        return _WAIT
    if _squeeze_spaces(box.value) != title:
        return kit.fill(ob, box, title)
    return kit.click(ob, kit.by_id(ob, "searchButton"))


def _infobox_value(ob: Observation, label: str) -> str | None:
    """Text of the infobox cell next to the header ``label``."""
    for el in ob.elements.values():
        if el.tag == "th" and _squeeze_spaces(el.text) == label and el.parent in ob.elements:
            row = ob.elements[el.parent]
            cells = [ob.elements[c] for c in row.children if ob.elements[c].tag == "td"]
            if cells:
                return _squeeze_spaces(cells[0].text)
    return None


def _save(ob: Observation) -> Decision | None:
    """Press "Save changes" (below the text box, or below the diff of an undo: the kit's scroll
    policy pages down to it)."""
    return kit.click(ob, kit.by_id(ob, "wpSave"))


def _write_and_save(ob: Observation, text: str) -> Decision | None:
    """On an edit form: put ``text`` in the wikitext box, then press "Save changes"."""
    area = kit.by_id(ob, "wpTextbox1")
    if area is None:
        return None
    if _squeeze_spaces(area.value) != _squeeze_spaces(text):
        return kit.fill(ob, area, text)
    return _save(ob)


def _same_text(a: str | None, b: str | None) -> bool:
    return _squeeze_spaces(a) == _squeeze_spaces(b)


def _answer_has(answer: str | None, value: str) -> bool:
    """Whether the answer states ``value`` (numbers as whole numbers, names as words)."""
    got, want = _squash(answer), _squash(value)
    if not got or not want:
        return False
    if want.replace(" ", "").isdigit():
        return want in re.findall(r"\d+", got)
    return re.search(r"(?<!\w)" + re.escape(want) + r"(?!\w)", got) is not None


class WikiTask(SiteTask):
    """A task on :class:`~mag_dataset.sites.wiki.WikiSite`; ``self.site`` is typed for its state helpers."""

    site_class: ClassVar[type[WikiSite]] = WikiSite
    site: WikiSite

    @staticmethod
    def _world() -> wseed.World:
        return wseed.world()

    def _edited_by_user(self, title: str, ns: int = 0) -> list[tuple[int, str, str, str]]:
        seeded = len(self._world().articles[title].revisions) if title in self._world().articles else 0
        revs = self.site.revisions(title, ns)
        new = revs[seeded:] if seeded and len(revs) > seeded else ([] if seeded else revs)
        return [r for r in new if r[1] == self.user]


# ----------------------------------------------------------------------------- information seeking
_CITY_FIELDS = {"population": "Population", "founded": "Founded", "elevation_m": "Elevation (m)",
                "river": "River", "mayor": "Mayor"}


class InfoboxFact(WikiTask):
    template = "infobox_fact"
    intent_template = "According to the Meridian Wiki, what is the {label} of {title}? Answer with the value only."
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("city"))
        field = rng.choice(sorted(_CITY_FIELDS))
        return {"title": art.title, "field": field, "label": _CITY_FIELDS[field].split(" (")[0].lower(),
                "header": _CITY_FIELDS[field], "value": art.infobox[field]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, self.params["value"])
        return ok, f"answer {answer!r} {'states' if ok else 'does not state'} {self.params['value']!r}"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        if not _at(ob, self.params["title"]):
            return _open(ob, self.params["title"])
        value = _infobox_value(ob, self.params["header"])
        return kit.finish(value) if value else None


class BirthplaceFact(WikiTask):
    template = "birthplace_population"
    intent_template = ("What is the population of the city where {person} was born? Look it up on the wiki and "
                       "answer with the number.")
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("person"))
        city = re.match(r"\[\[([^\]]+)\]\]", art.infobox["birth_place"]).group(1)  # type: ignore[union-attr]
        return {"person": art.title, "city": city, "value": self._world().articles[city].infobox["population"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, self.params["value"])
        return ok, f"answer {answer!r} vs population {self.params['value']} of {self.params['city']}"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        if _at(ob, self.params["person"]):
            cell = kit.find(ob, lambda e: e.tag == "th" and _squeeze_spaces(e.text) == "Birthplace")
            row = ob.elements.get(cell.parent) if cell and cell.parent else None
            td = next((ob.elements[c] for c in (row.children if row else []) if ob.elements[c].tag == "td"), None)
            return kit.click(ob, _child_link(ob, td))  # the first link of the birthplace cell is the city
        t, _ = _href_title(ob.url)
        if t and _infobox_value(ob, "Population") and _infobox_value(ob, "Mayor"):
            return kit.finish(_infobox_value(ob, "Population") or "")
        return _open(ob, self.params["person"])


class LastEditor(WikiTask):
    template = "last_editor"
    intent_template = "Who made the most recent edit to the wiki article {title}? Answer with their user name."
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice([a for a in self._world().articles.values() if a.ns == 0 and a.kind != "main"])
        return {"title": art.title, "editor": art.last_editor}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _squash(answer).removeprefix("user:").strip() == _squash(self.params["editor"])
        return ok, f"answer {answer!r} vs last editor {self.params['editor']!r}"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        title = self.params["title"]
        if _at(ob, title, "history"):
            user = kit.find(ob, lambda e: e.tag == "a" and "mw-userlink" in e.attrs.get("class", ""))
            return kit.finish(_squeeze_spaces(user.text)) if user else None
        if _at(ob, title):
            return kit.click(ob, _child_link(ob, kit.by_id(ob, "ca-history")))
        return _open(ob, title)


class CategoryCount(WikiTask):
    template = "category_count"
    intent_template = ('The wiki article {title} is in the category "{category}". How many pages does that '
                       'category list? Answer with the number.')
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        w = self._world()
        cats = [c for c in w.all_categories() if len(w.category_members(c)) >= 2 and c != "Infobox templates"]
        cat = rng.choice(cats)
        member = rng.choice([t for t in w.category_members(cat) if w.articles[t].ns == 0])
        return {"category": cat, "title": member, "count": len(w.category_members(cat))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, str(self.params["count"]))
        return ok, f"answer {answer!r} vs {self.params['count']} pages in Category:{self.params['category']}"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        cat = "Category:" + self.params["category"]
        if _at(ob, cat):
            box = kit.by_id(ob, "mw-pages")
            m = re.search(r"out of ([\d,]+) total", box.all_text if box else "")
            if m:
                return kit.finish(m.group(1).replace(",", ""))
            return kit.finish("1") if box and "only the following page" in box.all_text else None
        if _at(ob, self.params["title"]):
            links = kit.by_id(ob, "mw-normal-catlinks")
            link = kit.find(ob, lambda e: e.tag == "a" and e.attrs.get("href") == "/wiki/" + urllib.parse.quote(
                db_key(cat), safe=":/()'!,"))
            return kit.click(ob, link if links else None)
        return _open(ob, self.params["title"])


# ----------------------------------------------------------------------------- editing
_SENTENCES = ("A new footbridge across the river was opened in 1998.",
              "The old market hall was restored between 2009 and 2011.",
              "Local historians date the oldest surviving house to the fifteenth century.",
              "Since 2015 the town has hosted a small museum of maritime charts.",
              "A regional railway line has connected the city to the coast since 1902.",
              "The municipal library holds more than forty thousand volumes.")


class EditSection(WikiTask):
    template = "edit_section"
    intent_template = ('In the wiki article {title}, add the sentence "{sentence}" at the end of the {section} '
                       'section and save it with the edit summary "{summary}".')
    user = "Marta Kell"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("city"))
        section = rng.choice(["History", "Geography", "Economy", "Culture"])
        i = rng.randrange(len(_SENTENCES))
        return {"title": art.title, "section": section, "sentence": _SENTENCES[i],
                "summary": f"{section}: added a sentence ({i + 1})"}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        mine = self._edited_by_user(p["title"])
        if not mine:
            return False, f"no new revision of {p['title']} by {self.user}"
        if mine[-1][2] != p["summary"]:
            return False, f"edit summary {mine[-1][2]!r} != {p['summary']!r}"
        text = self.site.page_text(p["title"]) or ""
        m = re.search(r"^==\s*" + re.escape(p["section"]) + r"\s*==\s*$(.*?)(?=^==|\Z)", text, re.M | re.S)
        if m is None or p["sentence"] not in m.group(1):
            return False, f"the {p['section']} section does not contain the sentence"
        seeded = self._world().articles[p["title"]].text
        if not _same_text(text.replace(p["sentence"], ""), seeded):
            return False, "the rest of the article changed"
        return True, "sentence added to the section with the summary"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        if _at(ob, p["title"]) and memory.get("saved"):
            return kit.finish("done")
        if _at(ob, p["title"]):
            link = kit.find(ob, lambda e: e.tag == "a" and "section=" in e.attrs.get("href", "")
                            and e.attrs.get("title", "").endswith(f"section: {p['section']}"))
            return kit.click(ob, link)
        if _at(ob, p["title"], "edit") or _at(ob, p["title"], "submit"):
            area, summary = kit.by_id(ob, "wpTextbox1"), kit.by_id(ob, "wpSummary")
            if area is None or summary is None:
                return None
            if p["sentence"] not in (area.value or ""):
                return kit.fill(ob, area, (area.value or "").rstrip() + " " + p["sentence"] + "\n")
            if _squeeze_spaces(summary.value).split("*/")[-1].strip() != p["summary"]:
                return kit.fill(ob, summary, p["summary"])
            return kit.once(memory, "saved", _save(ob))
        return _open(ob, p["title"])


_NEW_ARTICLES = (("Harbour Lighthouse of Rosport", "The Harbour Lighthouse is a stone tower built in 1821."),
                 ("Meridian Railway", "The Meridian Railway links the capitals of the continent."),
                 ("Salt Road", "The Salt Road is an old trade route across the central plateau."),
                 ("Glass Exchange", "The Glass Exchange is a trading hall with an iron and glass roof."),
                 ("Amber Coast", "The Amber Coast is a stretch of dunes known for its amber finds."),
                 ("Greywash Canal", "The Greywash Canal joins the Greywash and the Osk rivers."))


class CreateArticle(WikiTask):
    template = "create_article"
    intent_template = ('Create a new wiki article titled "{title}" with the text "{text}" and put it in the '
                       'category {category}.')
    user = "Orrin Vale"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        title, text = rng.choice(_NEW_ARTICLES)
        category = rng.choice([f"Cities in {c}" for c in wseed.COUNTRIES] + ["Landmarks", "Transport"])
        return {"title": title, "text": text, "category": category}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        revs = self.site.revisions(p["title"])
        if not revs or revs[0][1] != self.user:
            return False, f"no article {p['title']!r} created by {self.user}"
        if p["text"] not in (self.site.page_text(p["title"]) or ""):
            return False, "the article does not contain the text"
        if p["category"] not in self.site.categories_of(p["title"]):
            return False, f"the article is not in Category:{p['category']}"
        return True, "article created with its text and category"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        if _at(ob, p["title"]):
            return kit.finish("done")
        if _at(ob, p["title"], "edit") or _at(ob, p["title"], "submit"):
            return _write_and_save(ob, f"{p['text']}\n\n[[Category:{p['category']}]]\n")
        create = kit.find(ob, lambda e: e.tag == "a" and "action=edit" in e.attrs.get("href", "")
                          and db_key(_href_title(e.attrs["href"])[0]) == db_key(p["title"]))
        if create is not None and "Special:Search" in urllib.parse.unquote(ob.url):
            return kit.click(ob, create)
        return _open(ob, p["title"])


_EXTRA_CATEGORIES = {"city": ("Historic towns", "River ports"), "person": ("Featured biographies",),
                     "species": ("Freshwater species", "Species of the Meridian coast")}


class AddCategory(WikiTask):
    template = "add_category"
    intent_template = "Add the wiki article {title} to the category {category}, keeping its existing categories."
    user = "Lise Amberg"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        kind = rng.choice(sorted(_EXTRA_CATEGORIES))
        art = rng.choice(self._world().of_kind(kind))
        return {"title": art.title, "category": rng.choice(_EXTRA_CATEGORIES[kind]),
                "old": sorted(art.categories)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        if not self._edited_by_user(p["title"]):
            return False, f"no new revision of {p['title']} by {self.user}"
        cats = self.site.categories_of(p["title"])
        if p["category"] not in cats:
            return False, f"{p['title']} is not in Category:{p['category']} ({sorted(cats)})"
        if not set(p["old"]) <= cats:
            return False, f"existing categories lost: {sorted(set(p['old']) - cats)}"
        return True, "category added"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        if _at(ob, p["title"]) and memory.get("saved"):
            return kit.finish("done")
        if _at(ob, p["title"]):
            return kit.click(ob, _child_link(ob, kit.by_id(ob, "ca-edit")))
        if _at(ob, p["title"], "edit") or _at(ob, p["title"], "submit"):
            area = kit.by_id(ob, "wpTextbox1")
            tag = f"[[Category:{p['category']}]]"
            if area is None:
                return None
            if tag not in (area.value or ""):
                return kit.fill(ob, area, (area.value or "").rstrip() + "\n" + tag + "\n")
            return kit.once(memory, "saved", _save(ob))
        return _open(ob, p["title"])


class UndoLastEdit(WikiTask):
    template = "undo_last_edit"
    intent_template = "Undo the most recent edit to the wiki article {title} (from its history) and save."
    user = "Yara Quell"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice([a for a in self._world().articles.values() if a.ns == 0 and a.kind != "main"])
        return {"title": art.title, "last_user": art.last_editor}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        art = self._world().articles[p["title"]]
        if not self._edited_by_user(p["title"]):
            return False, f"no new revision of {p['title']} by {self.user}"
        if not _same_text(self.site.page_text(p["title"]), art.revisions[-2].text):
            return False, "the article text is not that of the revision before the last edit"
        return True, "last edit undone"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        if _at(ob, p["title"]) and memory.get("saved"):
            return kit.finish("done")
        if _at(ob, p["title"], "history"):
            return kit.click(ob, kit.link(ob, href="undoafter="))
        if _at(ob, p["title"]):
            return kit.click(ob, _child_link(ob, kit.by_id(ob, "ca-history")))
        t, q = _href_title(ob.url)
        if db_key(t) == db_key(p["title"]) and q.get("action") in ("edit", "submit"):
            return kit.once(memory, "saved", _save(ob))
        return _open(ob, p["title"])


class WatchPage(WikiTask):
    template = "watch_page"
    intent_template = "Add the wiki article {title} to your watchlist."
    user = "Tobias Renn"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice([a for a in self._world().articles.values() if a.ns == 0 and a.kind != "main"])
        return {"title": art.title}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query(
            "SELECT COUNT(*) FROM watchlist w JOIN actor a ON a.actor_user = w.wl_user WHERE a.actor_name = ? "
            "AND w.wl_namespace = 0 AND w.wl_title = ?", (self.user, db_key(self.params["title"])))
        ok = rows[0][0] > 0
        return ok, f"{self.params['title']} {'is' if ok else 'is not'} on {self.user}'s watchlist"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        if _at(ob, p["title"]):
            if kit.by_id(ob, "ca-unwatch") is not None:  # the star turned blue: watched
                return kit.finish("done")
            if memory.get("clicked"):  # the star is saving (an API call): wait, never click twice
                memory["waits"] = memory.get("waits", 0) + 1
                return _WAIT if memory["waits"] <= 6 else None
            return kit.once(memory, "clicked", kit.click(ob, _child_link(ob, kit.by_id(ob, "ca-watch"))))
        return _open(ob, p["title"])


_TALK = (("Population figure", "The population figure needs a source from the latest census."),
         ("Merge proposal", "I propose merging the See also list into the History section."),
         ("Photo request", "Could someone add a photograph of the old town?"),
         ("Infobox", "The infobox should also list the twin towns."))


class TalkNewTopic(WikiTask):
    template = "talk_new_topic"
    intent_template = ('Start a discussion on the talk page of the wiki article {title}: a section headed '
                       '"{subject}" with the message "{message}".')
    user = "Nico Ferro"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("city") + self._world().of_kind("species"))
        subject, message = rng.choice(_TALK)
        return {"title": art.title, "subject": subject, "message": message}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        text = self.site.page_text(p["title"], ns=1)
        if text is None:
            return False, f"Talk:{p['title']} does not exist"
        if not re.search(r"^==\s*" + re.escape(p["subject"]) + r"\s*==\s*$", text, re.M):
            return False, f"no section headed {p['subject']!r}"
        if p["message"] not in text:
            return False, "the message is missing"
        return True, "topic started"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        talk = "Talk:" + p["title"]
        if _at(ob, talk):
            return kit.finish("done")
        if _at(ob, talk, "edit") or _at(ob, talk, "submit"):
            return _write_and_save(ob, f"== {p['subject']} ==\n{p['message']} ~~~~\n")
        if _at(ob, p["title"]):
            tab = _child_link(ob, kit.by_id(ob, "ca-talk"))
            return kit.click(ob, tab) if tab is not None else _WAIT
        return _open(ob, p["title"])


_MOVES = ("{title} (city)", "{title} ({country})", "City of {title}")


class MovePage(WikiTask):
    template = "move_page"
    intent_template = 'As an administrator, rename (move) the wiki article {title} to "{new_title}" with the reason "{reason}".'
    user = "Admin"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("city"))
        country = art.infobox["country"].strip("[]")
        new = rng.choice(_MOVES).format(title=art.title, country=country)
        return {"title": art.title, "new_title": new, "reason": rng.choice(("Disambiguation", "Naming convention"))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        new = self.site.page_row(p["new_title"])
        if new is None or new[2]:
            return False, f"no article {p['new_title']!r}"
        if not _same_text(self.site.page_text(p["new_title"]), self._world().articles[p["title"]].text):
            return False, "the moved article's text differs"
        moves = self.site.query(
            "SELECT COUNT(*) FROM logging l JOIN actor a ON a.actor_id = l.log_actor LEFT JOIN comment c "
            "ON c.comment_id = l.log_comment_id WHERE l.log_type = 'move' AND l.log_title = ? AND a.actor_name = ? "
            "AND c.comment_text = ?", (db_key(p["title"]), self.user, p["reason"]))
        if not moves[0][0]:
            return False, "no move log entry with the reason by the user"
        return True, "article moved"

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        if _at(ob, p["new_title"]) or kit.by_id(ob, "movepage-newlink") is not None:  # "Move succeeded"
            return kit.finish("done")
        if "Special:MovePage" in urllib.parse.unquote(ob.url):
            new, reason = kit.field(ob, "wpNewTitleMain", "input"), kit.field(ob, "wpReason")
            if new is None or reason is None:
                return None
            if _squeeze_spaces(new.value) != p["new_title"]:
                return kit.fill(ob, new, p["new_title"])
            if _squeeze_spaces(reason.value) != p["reason"]:
                return kit.fill(ob, reason, p["reason"])
            return kit.click(ob, kit.by_name(ob, "wpMove"))
        if _at(ob, p["title"]):
            move = _child_link(ob, kit.by_id(ob, "ca-move"))
            if move is not None and kit.visible(ob, move):  # the "More" menu is open
                return kit.click(ob, move)
            return kit.click(ob, kit.by_id(ob, "p-cactions-checkbox"))
        return _open(ob, p["title"])


TASKS: tuple[type[SiteTask], ...] = (InfoboxFact, BirthplaceFact, LastEditor, CategoryCount, EditSection,
                                     CreateArticle, AddCategory, UndoLastEdit, WatchPage, TalkNewTopic, MovePage)
