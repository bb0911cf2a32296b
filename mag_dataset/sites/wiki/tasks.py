"""Live tasks on the wiki site (``sites.wiki.<template>``): reading, editing and curating MediaWiki pages.

WebArena's wiki tasks are information seeking on a Wikipedia mirror; these add the editor's
work (section edits, new pages, categories, moves, undo, talk pages, the watchlist) judged
on MediaWiki's tables after the episode, as WebArena's program-based evaluators do
(what the wiki stored, not what the last page shows), and WebArena's own two kinds: information seeking (the ``finish`` answer)
and navigation (:class:`WikiNavigationTask`: the page the agent ends on, a history, a diff, a
category, a user's contributions). Parameters come from :func:`mag_dataset.sites.wiki.seed.world`; each
expert navigates from the observation only (search box, tabs, links found by id/href/text).

Each template states its goal in several phrasings (``intent_templates``, WebArena's
intents: what the user wants, not how), and its expert demonstrates as a person would:

* every step but a scroll says what it is for in the task (:func:`kit.why`, the step's
  plan guide);
* the way to an article is drawn once per episode from the seed
  (:meth:`WikiTask._style`): the search box with the title, a link on the Main Page, or a
  narrower search first (a surname, a country, a topic word) and the article picked from
  the results (or the search refined to the title when the results do not list it);
* some episodes take a template's detour and correct it (a wrong tab or link and back, a
  look at the history's latest diff, a preview before saving, a scroll past the target and
  back), so that a template's episodes differ in length.
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
from mag_dataset.sites.task import SiteTask, exact_target, html_target
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


def _links_in(ob: Observation, parent: Element | None) -> list[Element]:
    """Every ``<a>`` under ``parent``, in document order."""
    if parent is None:
        return []
    out, todo = [], list(parent.children)
    while todo:
        el = ob.elements[todo.pop(0)]
        if el.tag == "a":
            out.append(el)
        todo[:0] = el.children
    return out


def _on_search(ob: Observation) -> bool:
    """Whether the page is Special:Search (the results of a query that named no page)."""
    return "Special:Search" in urllib.parse.unquote(ob.url or "")


def _search_hit(ob: Observation, title: str) -> Element | None:
    """The heading link of ``title`` among the search results, or None when they do not list it."""
    key = db_key(title)
    return kit.find(ob, lambda e: e.tag == "a" and "mw-search-result-heading" in ob.elements[e.parent].attrs.get(
        "class", "") and db_key(_href_title(e.attrs["href"])[0]) == key)


def _on_diff(ob: Observation, title: str) -> bool:
    """Whether the page shows a diff between two revisions of ``title``."""
    t, q = _href_title(ob.url)
    return db_key(t) == db_key(title) and "diff" in q


def _tab(ob: Observation, tab_id: str) -> Element | None:
    """The link of a page tab or a sidebar entry (``ca-edit``, ``ca-history``, ``t-whatlinkshere``)."""
    return _child_link(ob, kit.by_id(ob, tab_id))


#: The previous page, for a detour's way back.
_BACK = Decision(ActionType.GO_BACK)


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


# ----------------------------------------------------------------------------- WebArena's terms
#: WebArena ``program_html`` locators on the wiki's pages (MediaWiki 1.39, classic Vector): the text
#: of the edit form (``action=edit``: the page's wikitext, or one section's), the newest and the
#: oldest line of the history (``action=history``), the categories of a page, the entries of
#: ``Special:Log``, the level-2 headings and the text of a page.
WIKITEXT = "document.querySelector('#wpTextbox1').value"
LATEST_REVISION = "document.querySelector('#pagehistory li').outerText"
FIRST_REVISION = "[...document.querySelectorAll('#pagehistory li')].pop().outerText"
CATEGORIES = "document.querySelector('#mw-normal-catlinks').outerText"
LOG_ENTRIES = "[...document.querySelectorAll('li[data-mw-logid]')].map(e => e.outerText).join('\\n')"
HEADINGS = "[...document.querySelectorAll('#mw-content-text h2 .mw-headline')].map(e => e.outerText).join('\\n')"
CONTENT = "document.querySelector('#mw-content-text').outerText"
UNWATCH_TAB = "document.querySelector('#ca-unwatch').outerText"  # the watch star of a watched page
EDIT_PROTECTION = "document.querySelector('#mw-restriction-edit').outerText"  # action=info
REDIRECT_TARGET = "document.querySelector('.redirectText').outerText"  # a redirect shown with redirect=no


def infobox_value(label: str) -> str:
    """The locator of the infobox cell next to the header ``label``."""
    return (f"[...document.querySelectorAll('.infobox tr')].find(r => r.querySelector('th')?.outerText.trim() "
            f"=== '{label}').querySelector('td').outerText")




def _section_span(text: str, heading: str) -> tuple[int, int, int]:
    """``(number, start, end)`` of the section ``heading`` of a wikitext: its number as
    ``action=edit&section=`` counts, and where its body starts and ends (the next heading).

    Raises:
        KeyError: the text has no such section.
    """
    heads = list(re.finditer(r"^(=+)\s*(.*?)\s*\1\s*$", text, re.M))
    for number, m in enumerate(heads, 1):
        if m.group(2) == heading:
            return number, m.end(), heads[number].start() if number < len(heads) else len(text)
    raise KeyError(f"no section {heading!r} in the wikitext")


class WikiTask(SiteTask):
    """A task on :class:`~mag_dataset.sites.wiki.WikiSite`; ``self.site`` is typed for its state helpers.

    Attributes:
        ways: the ways to an article this template's expert may take (:meth:`_style`).
        detours: the detours it may take ("" in the draw: none).
    """

    site_class: ClassVar[type[WikiSite]] = WikiSite
    site: WikiSite
    ways: ClassVar[tuple[str, ...]] = ("search", "search", "browse", "narrow")
    detours: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def _world() -> wseed.World:
        return wseed.world()

    def _edited_by_user(self, title: str, ns: int = 0) -> list[tuple[int, str, str, str]]:
        seeded = len(self._world().articles[title].revisions) if title in self._world().articles else 0
        revs = self.site.revisions(title, ns)
        new = revs[seeded:] if seeded and len(revs) > seeded else ([] if seeded else revs)
        return [r for r in new if r[1] == self.user]

    def wiki_url(self, title: str, **query: str) -> str:
        """The absolute URL of the wiki page ``title`` with ``query`` (``action="history"``)."""
        return f"{self.site.base_url}/index.php?" + urllib.parse.urlencode({"title": db_key(title), **query})

    def _talk_section_targets(self, title: str, subject: str, *contents: str) -> list[dict[str, Any]]:
        """``program_html`` targets: the talk page of ``title`` has a section headed ``subject``
        and shows ``contents``."""
        talk = "Talk:" + title
        return [html_target(self.wiki_url(talk), HEADINGS, subject),
                html_target(self.wiki_url(talk), CONTENT, *contents)]

    # ------------------------------------------------------------------ how this episode goes
    def _style(self, memory: dict[str, Any]) -> tuple[str, str]:
        """``(way, detour)`` of this episode, drawn once from the task's seed and kept in ``memory``.

        ``way``: how the expert reaches an article: ``search`` (the title in the search box),
        ``browse`` (its link on the Main Page, where the episode starts), ``narrow`` (a narrower
        query first, :meth:`_narrow`, then the article from the results). ``detour``: one of
        :attr:`detours`, or "" (none), each template's own.
        """
        if "way" not in memory:
            rng = random.Random(f"{self.get_task_id()}:{self.seed}:detour")
            memory["way"] = rng.choice(self.ways)
            memory["detour"] = rng.choice(("",) + self.detours) if self.detours else ""
        return memory["way"], memory["detour"]

    def _narrow(self, title: str) -> tuple[str, tuple[str, ...]] | None:
        """A narrower query than the title, as a person might type first, and what it is for;
        None when there is none (the title is searched)."""
        art = self._world().articles.get(title)
        if art is None:
            return None
        if art.kind == "person":
            last = title.split()[-1]
            return last, (f"search for the surname {last} and pick {title} from the results",
                          f"find {title} by searching for the surname {last}")
        if art.kind == "species":
            word = title.split()[-1]
            return word, (f"search for {word} and pick the {title} among the results",
                          f"list the {word} articles to find the {title}")
        if art.kind == "city":
            country = art.infobox["country"].strip("[]")
            return f"{title} {country}", (f"search for {title} together with its country, {country}",
                                          f"look up {title} in {country}")
        return None

    def _open(self, ob: Observation, memory: dict[str, Any], title: str, finds: tuple[str, ...],
              opens: tuple[str, ...]) -> Decision | None:
        """Reach the view of ``title`` the episode's way (:meth:`_style`): its link on the Main
        Page, or the search box (a narrower query first, then the article from the results;
        the title itself when they do not list it).

        Args:
            finds: what typing the title is for ("look up the Quengate article").
            opens: what opening the article is for (the Go button, a result, a Main Page link).
        """
        way, _ = self._style(memory)
        if memory.get("narrowed") and _on_search(ob):
            hit = _search_hit(ob, title)
            if hit is not None:
                return kit.why(kit.click(ob, hit), *opens, f"pick {title} among the search results")
        if way == "browse" and kit.path(ob) == "/wiki/Main_Page":
            link = _link_to(ob, title)
            if link is not None:
                return kit.why(kit.click(ob, link), *opens, f"follow the link to {title} on the Main Page")
        box = kit.by_id(ob, "searchInput")
        if box is None:  # observed mid-navigation (no skin yet): wait one step
            return _WAIT
        narrow = self._narrow(title) if way == "narrow" and not memory.get("narrowed") else None
        if narrow is not None:
            query, types = narrow
            goes = (f"list the articles that match {query}", *narrow[1])
        elif memory.get("narrowed"):  # the results did not list the article: the title itself
            query, goes = title, opens
            types = (f"search again for the exact title {title}", f"refine the search to the title {title}")
        else:
            query, types, goes = title, finds, opens
        if _squeeze_spaces(box.value) != query:
            return kit.why(kit.fill(ob, box, query), *types)
        go = kit.click(ob, kit.by_id(ob, "searchButton"))
        if narrow is not None:
            go = kit.once(memory, "narrowed", go)
        return kit.why(go, *goes)

    def _check_and_save(self, ob: Observation, memory: dict[str, Any], checks: tuple[str, ...],
                        saves: tuple[str, ...]) -> Decision | None:
        """On a filled edit form: the episode's look before saving when it takes one (detour
        ``preview``: "Show preview"; ``changes``: "Show changes", ``checks`` its purposes), then
        "Save changes" (``saves``), remembered as ``memory["saved"]``."""
        _, detour = self._style(memory)
        if detour in ("preview", "changes") and not memory.get("checked"):
            button = kit.by_id(ob, "wpPreview" if detour == "preview" else "wpDiff")
            return kit.once(memory, "checked", kit.why(kit.click(ob, button), *checks))
        return kit.once(memory, "saved", kit.why(_save(ob), *saves))


# ----------------------------------------------------------------------------- information seeking
_CITY_FIELDS = {"population": "Population", "founded": "Founded", "elevation_m": "Elevation (m)",
                "river": "River", "mayor": "Mayor"}
#: How an intent names each field ("what is the founding year of ...").
_CITY_LABELS = {"population": "population", "founded": "founding year", "elevation_m": "elevation in metres",
                "river": "river", "mayor": "mayor"}


class InfoboxFact(WikiTask):
    template = "infobox_fact"
    intent_template = "According to the Meridian Wiki, what is the {label} of {title}? Answer with the value only."
    intent_templates = (intent_template,
                        "What is the {label} of {title}?",
                        "I need the {label} of the city of {title}. What does the wiki say?",
                        "Find out the {label} of {title} from its wiki article.")
    answer_task = True
    ways = ("search", "search", "narrow")  # a Main Page link alone would make a two-step episode
    detours = ("scroll",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("city"))
        field = rng.choice(sorted(_CITY_FIELDS))
        return {"title": art.title, "field": field, "label": _CITY_LABELS[field],
                "header": _CITY_FIELDS[field], "value": art.infobox[field]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, self.params["value"])
        return ok, f"answer {answer!r} {'states' if ok else 'does not state'} {self.params['value']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["value"]]}

    def _narrow(self, title: str) -> tuple[str, tuple[str, ...]] | None:
        word = self.params["header"].split(" (")[0].lower()
        return f"{title} {word}", (f"search for the {word} of {title} directly",
                                   f"ask the search box about the {word} of {title}")

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        _, detour = self._style(memory)
        if not _at(ob, p["title"]):
            return self._open(ob, memory, p["title"], (f"look up the {p['title']} article",
                                                        f"find the article on {p['title']}"),
                              (f"open the {p['title']} article, whose infobox gives its {p['label']}",
                               f"read the {p['label']} of {p['title']} in its article"))
        if detour == "scroll" and memory.get("scrolls", 0) < 2:  # read on past the infobox, then back up
            memory["scrolls"] = memory.get("scrolls", 0) + 1
            return Decision(ActionType.SCROLL, direction="down" if memory["scrolls"] == 1 else "up")
        value = _infobox_value(ob, p["header"])
        return kit.why(kit.finish(value), f"give the {p['label']} of {p['title']} from its infobox",
                       f"tell the user the {p['label']} of {p['title']}") if value else None


class BirthplaceFact(WikiTask):
    template = "birthplace_population"
    intent_template = ("What is the population of the city where {person} was born? Look it up on the wiki and "
                       "answer with the number.")
    intent_templates = (intent_template,
                        "How many people live in the city where {person} was born?",
                        "{person} was born in a city described on the wiki. What is its population?",
                        "Tell me the population of {person}'s birthplace.")
    answer_task = True
    detours = ("country",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("person"))
        city = re.match(r"\[\[([^\]]+)\]\]", art.infobox["birth_place"]).group(1)  # type: ignore[union-attr]
        return {"person": art.title, "city": city, "value": self._world().articles[city].infobox["population"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, self.params["value"])
        return ok, f"answer {answer!r} vs population {self.params['value']} of {self.params['city']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["value"]]}

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        person = p["person"]
        if _at(ob, person):
            cell = kit.find(ob, lambda e: e.tag == "th" and _squeeze_spaces(e.text) == "Birthplace")
            row = ob.elements.get(cell.parent) if cell and cell.parent else None
            td = next((ob.elements[c] for c in (row.children if row else []) if ob.elements[c].tag == "td"), None)
            links = _links_in(ob, td)  # the birthplace cell: the city, then its country
            if detour == "country" and not memory.get("strayed") and len(links) > 1:
                country = _squeeze_spaces(links[1].text)
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, links[1]), f"look for the population in {country}, also named in the Birthplace row",
                    f"open {country}, the second place in {person}'s Birthplace row"))
            return kit.why(kit.click(ob, links[0] if links else None), f"open {p['city']}, the city where {person} was born",
                           f"follow {person}'s birthplace to its own article")
        t, _ = _href_title(ob.url)
        if t and _infobox_value(ob, "Population") and _infobox_value(ob, "Mayor"):
            return kit.why(kit.finish(_infobox_value(ob, "Population") or ""),
                           f"give the population of {p['city']}, where {person} was born",
                           f"tell the user how many people live in {person}'s birthplace")
        if memory.get("strayed") and not memory.get("back") and t and _infobox_value(ob, "Population"):
            return kit.once(memory, "back", kit.why(
                _BACK, f"return to {person}'s article, since {t} is the country and the task asks about the city",
                "get back to the Birthplace row and open the city rather than the country"))
        return self._open(ob, memory, person, (f"look up {person}'s article", f"find the article on {person}"),
                          (f"open {person}'s article to see where {person} was born",
                           f"find {person}'s birthplace in the article's infobox"))


class LastEditor(WikiTask):
    template = "last_editor"
    intent_template = "Who made the most recent edit to the wiki article {title}? Answer with their user name."
    intent_templates = (intent_template,
                        "Who last edited the {title} article?",
                        "Which user made the latest change to {title} on the wiki?",
                        "Tell me the user name of the last person to edit {title}.")
    answer_task = True
    detours = ("diff",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice([a for a in self._world().articles.values() if a.ns == 0 and a.kind != "main"])
        return {"title": art.title, "editor": art.last_editor}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _squash(answer).removeprefix("user:").strip() == _squash(self.params["editor"])
        return ok, f"answer {answer!r} vs last editor {self.params['editor']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["editor"]]}

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        title, (_, detour) = self.params["title"], self._style(memory)
        names = (f"name the user who last edited {title}", f"tell the user who made the latest edit to {title}")
        if _on_diff(ob, title):  # the latest change: its author heads the newer side
            user = kit.find(ob, lambda e: e.tag == "a" and "mw-userlink" in e.attrs.get("class", "")
                            and _has_ancestor(ob, e, "mw-diff-ntitle2"))
            return kit.why(kit.finish(_squeeze_spaces(user.text)), *names) if user else None
        if _at(ob, title, "history"):
            if detour == "diff" and not memory.get("diffed"):
                return kit.once(memory, "diffed", kit.why(
                    kit.click(ob, kit.link(ob, "prev")), f"see what the latest edit to {title} changed and who made it",
                    f"open the newest change to {title} to check its author"))
            user = kit.find(ob, lambda e: e.tag == "a" and "mw-userlink" in e.attrs.get("class", ""))
            return kit.why(kit.finish(_squeeze_spaces(user.text)), *names) if user else None
        if _at(ob, title):
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), f"see the edits to {title}, newest first",
                           f"find out from the history who edited {title} last")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open the {title} article, whose history names its editors",
                           f"reach {title} to look at its edit history"))


class CategoryCount(WikiTask):
    template = "category_count"
    intent_template = ('The wiki article {title} is in the category "{category}". How many pages does that '
                       'category list? Answer with the number.')
    intent_templates = (intent_template,
                        'How many pages are listed in the category "{category}" that {title} belongs to?',
                        '{title} is filed under "{category}" on the wiki. How many pages does that category hold?',
                        'Count the pages of the wiki category "{category}", the one {title} is in.')
    answer_task = True
    detours = ("other",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        w = self._world()
        cats = [c for c in w.all_categories() if len(w.category_members(c)) >= 2 and c != "Infobox templates"]
        cat = rng.choice(cats)
        member = rng.choice([t for t in w.category_members(cat) if w.articles[t].ns == 0])
        return {"category": cat, "title": member, "count": len(w.category_members(cat))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, str(self.params["count"]))
        return ok, f"answer {answer!r} vs {self.params['count']} pages in Category:{self.params['category']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["count"])]}

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        cat = "Category:" + p["category"]
        counts = (f"give the number of pages in the {p['category']} category",
                  f"tell the user how many pages {p['category']} lists")
        if _at(ob, cat):
            box = kit.by_id(ob, "mw-pages")
            m = re.search(r"out of ([\d,]+) total", box.all_text if box else "")
            if m:
                return kit.why(kit.finish(m.group(1).replace(",", "")), *counts)
            return kit.why(kit.finish("1"), *counts) if box and "only the following page" in box.all_text else None
        if _at(ob, p["title"]):
            cats = [e for e in _links_in(ob, kit.by_id(ob, "mw-normal-catlinks"))
                    if e.attrs.get("href", "").startswith("/wiki/Category:")]
            want = "/wiki/" + urllib.parse.quote(db_key(cat), safe=":/()'!,")
            link = next((e for e in cats if e.attrs.get("href") == want), None)
            other = next((e for e in cats if e is not link), None)
            if detour == "other" and not memory.get("strayed") and other is not None:
                name = _squeeze_spaces(other.text)
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, other), f"look at the {name} category, listed with {p['category']} under the article",
                    f"open {name}, another category of {p['title']}, first"))
            return kit.why(kit.click(ob, link), f"open the {p['category']} category to count its pages",
                           f"see the pages listed in {p['category']}, a category of {p['title']}")
        if memory.get("strayed") and not memory.get("back") and kit.path(ob).startswith("/wiki/Category:"):
            return kit.once(memory, "back", kit.why(
                _BACK, f"return to {p['title']}, since the task asks about the {p['category']} category",
                f"get back to the article's categories and open {p['category']} instead"))
        return self._open(ob, memory, p["title"], (f"look up the {p['title']} article",
                                                   f"find the article on {p['title']}"),
                          (f"open {p['title']}, whose categories are listed at the foot of the article",
                           f"reach the {p['category']} category through {p['title']}"))


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
    intent_templates = (intent_template,
                        ('Add "{sentence}" to the end of the {section} section of {title}, with the edit summary '
                         '"{summary}".'),
                        ('The {section} section of the {title} article should end with the sentence "{sentence}" '
                         'Add it, with "{summary}" as the edit summary.'),
                        ('Append the sentence "{sentence}" to the {section} section of {title} on the wiki '
                         '(edit summary: "{summary}").'))
    user = "Marta Kell"
    ways = ("search", "search", "browse")  # the form's scrolls already make long episodes
    detours = ("whole", "preview")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The user's edit with the summary tops the history; the section ends with the sentence,
        the seeded text before and after it kept."""
        p = self.params
        seeded = self._world().articles[p["title"]].text
        number, _, end = _section_span(seeded, p["section"])
        return [html_target(self.wiki_url(p["title"], action="history"), LATEST_REVISION, self.user, p["summary"]),
                html_target(self.wiki_url(p["title"], action="edit", section=str(number)), WIKITEXT, p["sentence"]),
                html_target(self.wiki_url(p["title"], action="edit"), WIKITEXT, seeded[:end].strip(),
                            seeded[end:].strip())]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        sec, title = p["section"], p["title"]
        if _at(ob, title) and memory.get("saved"):
            return kit.why(kit.finish("done"), f"add the new sentence to the {sec} section of {title}",
                           f"extend the {sec} section of {title} with one sentence")
        if _at(ob, title):
            if detour == "whole" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "ca-edit")), f"open the editor for the whole {title} article",
                    f"edit {title} from the tab at the top of the article"))
            link = kit.find(ob, lambda e: e.tag == "a" and "section=" in e.attrs.get("href", "")
                            and e.attrs.get("title", "").endswith(f"section: {sec}"))
            return kit.why(kit.click(ob, link), f"edit just the {sec} section of {title}",
                           f"open the {sec} section on its own in the editor")
        if _at(ob, title, "edit") or _at(ob, title, "submit"):
            if memory.get("strayed") and not memory.get("back"):
                return kit.once(memory, "back", kit.why(
                    _BACK, f"return to the article and edit only the {sec} section, a smaller text to work in",
                    f"leave the whole-article editor for the {sec} section's own edit link"))
            area, summary = kit.by_id(ob, "wpTextbox1"), kit.by_id(ob, "wpSummary")
            if area is None or summary is None:
                return None
            if p["sentence"] not in (area.value or ""):
                return kit.why(kit.fill(ob, area, (area.value or "").rstrip() + " " + p["sentence"] + "\n"),
                               f"add the new sentence at the end of the {sec} section",
                               f"append the sentence to the text of the {sec} section")
            if _squeeze_spaces(summary.value).split("*/")[-1].strip() != p["summary"]:
                return kit.why(kit.fill(ob, summary, p["summary"]), "describe the change in the edit summary",
                               f"label the edit of the {sec} section as the task asks")
            return self._check_and_save(ob, memory, (f"see how the {sec} section reads with the new sentence",
                                                     "check the edit before saving it"),
                                        (f"save the new sentence in the {sec} section", f"store the edit of {title}"))
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open the {title} article to edit its {sec} section",
                           f"reach the {sec} section of {title}"))


_NEW_ARTICLES = (("Harbour Lighthouse of Rosport", "The Harbour Lighthouse is a stone tower built in 1821."),
                 ("Meridian Railway", "The Meridian Railway links the capitals of the continent."),
                 ("Salt Road", "The Salt Road is an old trade route across the central plateau."),
                 ("Glass Exchange", "The Glass Exchange is a trading hall with an iron and glass roof."),
                 ("Amber Coast", "The Amber Coast is a stretch of dunes known for its amber finds."),
                 ("Greywash Canal", "The Greywash Canal joins the Greywash and the Osk rivers."))
#: What a person might search for first to see what the wiki has on each new article's topic: the
#: query, and the topic as the step's purpose names it.
_TOPICS = {"Harbour Lighthouse of Rosport": ("lighthouse", "lighthouses"), "Meridian Railway": ("railway", "railways"),
           "Salt Road": ("salt", "the salt trade"), "Glass Exchange": ("glass", "glass and its trade"),
           "Amber Coast": ("amber", "amber"), "Greywash Canal": ("canal", "canals")}
#: The categories each new article may be filed under.
_NEW_CATEGORIES = {"Harbour Lighthouse of Rosport": ("Landmarks", "Lighthouses", "Buildings in Valdoria"),
                   "Meridian Railway": ("Transport", "Railways"),
                   "Salt Road": ("Transport", "Trade routes", "Landmarks"),
                   "Glass Exchange": ("Landmarks", "Markets", "Architecture"),
                   "Amber Coast": ("Landmarks", "Coasts", "Nature reserves"),
                   "Greywash Canal": ("Transport", "Canals", "Waterways")}


class CreateArticle(WikiTask):
    template = "create_article"
    intent_template = ('Create a new wiki article titled "{title}" with the text "{text}" and put it in the '
                       'category {category}.')
    intent_templates = (intent_template,
                        'Start a wiki article called "{title}" that reads "{text}", in the category {category}.',
                        ('The wiki has no article on {title} yet. Write one with the text "{text}" and file it '
                         'under {category}.'),
                        'Add an article "{title}" to the wiki, categorised as {category}, with the text "{text}"')
    user = "Orrin Vale"
    ways = ("search", "narrow")  # a new page has no link on the Main Page
    detours = ("preview",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        title, text = rng.choice(_NEW_ARTICLES)
        category = rng.choice(_NEW_CATEGORIES[title])
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

    def program_html(self) -> list[dict[str, Any]]:
        """The user made the page's first revision; its wikitext has the text; it is in the category."""
        p = self.params
        return [html_target(self.wiki_url(p["title"], action="history"), FIRST_REVISION, self.user),
                html_target(self.wiki_url(p["title"], action="edit"), WIKITEXT, p["text"]),
                html_target(self.wiki_url(p["title"]), CATEGORIES, p["category"])]

    def _narrow(self, title: str) -> tuple[str, tuple[str, ...]] | None:
        word, topic = _TOPICS[title]
        return word, (f"see what the wiki already has on {topic}", f"check which articles mention {topic} so far")

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        title = p["title"]
        if _at(ob, title):
            return kit.why(kit.finish("done"), f"create the {title} article in {p['category']}",
                           f"add a new article on {title} to the wiki")
        if _at(ob, title, "edit") or _at(ob, title, "submit"):
            area = kit.by_id(ob, "wpTextbox1")
            text = f"{p['text']}\n\n[[Category:{p['category']}]]\n"
            if area is None:
                return None
            if _squeeze_spaces(area.value) != _squeeze_spaces(text):
                return kit.why(kit.fill(ob, area, text), f"write the text of {title} and put it in {p['category']}",
                               f"give the new article its text and its category line for {p['category']}")
            return self._check_and_save(ob, memory, (f"see how the new {title} article will look",
                                                     "check the new article before saving it"),
                                        (f"create the {title} article", "save the new article"))
        create = kit.find(ob, lambda e: e.tag == "a" and "action=edit" in e.attrs.get("href", "")
                          and db_key(_href_title(e.attrs["href"])[0]) == db_key(title))
        if create is not None and _on_search(ob):
            return kit.why(kit.click(ob, create), f"start the new {title} article, which does not exist yet",
                           f"create {title} from the search results")
        return self._open(ob, memory, title, (f"check whether an article titled {title} exists",
                                              f"make sure the wiki has no {title} article yet"),
                          (f"see whether {title} exists and get the link to create it",
                           f"search for {title} before creating it"))


_EXTRA_CATEGORIES = {"city": ("Historic towns", "River ports"), "person": ("Featured biographies",),
                     "species": ("Freshwater species", "Species of the Meridian coast")}


class AddCategory(WikiTask):
    template = "add_category"
    intent_template = "Add the wiki article {title} to the category {category}, keeping its existing categories."
    intent_templates = (intent_template,
                        "Put {title} in the category {category} as well.",
                        "Categorise the {title} article under {category} too, without removing its other categories.",
                        "{title} belongs in the category {category}. Add it there.")
    user = "Lise Amberg"
    ways = ("search", "search", "browse")  # the form's scrolls already make long episodes
    detours = ("changes", "look")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The user's edit tops the history; the page lists the new category and its old ones."""
        p = self.params
        return [html_target(self.wiki_url(p["title"], action="history"), LATEST_REVISION, self.user),
                html_target(self.wiki_url(p["title"]), CATEGORIES, p["category"], *p["old"])]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title, cat = p["title"], p["category"]
        if _at(ob, title) and memory.get("saved"):
            return kit.why(kit.finish("done"), f"add {title} to the {cat} category",
                           f"file {title} under {cat} as well")
        if _at(ob, title):
            if detour == "look" and not memory.get("looked"):  # the category bar at the foot of the page first
                here = Decision(ActionType.FINISH)
                step = kit.reach(ob, next(iter(_links_in(ob, kit.by_id(ob, "catlinks"))), None), here)
                if step is not None and step is not here:
                    return step
                memory["looked"] = True
            return kit.why(kit.click(ob, _tab(ob, "ca-edit")), f"open the editor of {title} to add the category",
                           f"edit {title}, whose categories are set in its text")
        if _at(ob, title, "edit") or _at(ob, title, "submit"):
            area = kit.by_id(ob, "wpTextbox1")
            tag = f"[[Category:{cat}]]"
            if area is None:
                return None
            if tag not in (area.value or ""):
                return kit.why(kit.fill(ob, area, (area.value or "").rstrip() + "\n" + tag + "\n"),
                               f"add a {cat} category line below the existing ones",
                               f"put {title} in {cat} while keeping its other categories")
            return self._check_and_save(ob, memory, (f"check that the {cat} line is the only change",
                                                     "review the change before saving it"),
                                        (f"save {title} with the new category", "store the edit"))
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title} to add a category to it", f"reach the {title} article to categorise it"))


class UndoLastEdit(WikiTask):
    template = "undo_last_edit"
    intent_template = "Undo the most recent edit to the wiki article {title}."
    intent_templates = (intent_template,
                        "Revert the last change that was made to {title}.",
                        "The latest edit to the {title} article was a mistake. Undo it.",
                        "Restore {title} to how it read before its most recent edit.")
    user = "Yara Quell"
    ways = ("search", "search", "browse")  # the undo form's scrolls already make long episodes
    detours = ("edit", "diff")

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

    def program_html(self) -> list[dict[str, Any]]:
        """The user's edit tops the history; the wikitext is that of the revision before the last edit."""
        title = self.params["title"]
        return [html_target(self.wiki_url(title, action="history"), LATEST_REVISION, self.user),
                exact_target(self.wiki_url(title, action="edit"), WIKITEXT,
                             self._world().articles[title].revisions[-2].text)]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title = p["title"]
        undoes = (f"undo the latest edit to {title}", f"revert the most recent change to {title}")
        if _at(ob, title) and memory.get("saved"):
            return kit.why(kit.finish("done"), *undoes)
        if _on_diff(ob, title):  # the latest change, with its own undo link
            return kit.why(kit.click(ob, kit.link(ob, href="undoafter=")), *undoes)
        if _at(ob, title, "history"):
            if detour == "diff" and not memory.get("diffed"):
                return kit.once(memory, "diffed", kit.why(
                    kit.click(ob, kit.link(ob, "prev")), f"see what the latest edit to {title} changed before undoing it",
                    "look at the newest change first"))
            return kit.why(kit.click(ob, kit.link(ob, href="undoafter=")), *undoes)
        if _at(ob, title):
            if detour == "edit" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "ca-edit")), f"look for a way to undo the last edit in the editor of {title}",
                    f"open the editor of {title} to put the old text back"))
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), f"find the latest edit to {title} in its history",
                           f"see the edits to {title}, each with its undo link")
        t, q = _href_title(ob.url)
        if db_key(t) == db_key(title) and q.get("action") in ("edit", "submit"):
            if memory.get("strayed") and not memory.get("back") and "undo" not in q:
                return kit.once(memory, "back", kit.why(
                    _BACK, f"return to {title}, whose history has an undo link for each edit",
                    "leave the editor for the history, where the last edit can be undone"))
            return kit.once(memory, "saved", kit.why(_save(ob), f"save {title} as it was before the latest edit",
                                                      "store the undo"))
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title} to get to its history", f"reach the {title} article to undo its last edit"))


class WatchPage(WikiTask):
    template = "watch_page"
    intent_template = "Add the wiki article {title} to your watchlist."
    intent_templates = (intent_template,
                        "Watch the {title} article so that its changes show up in my watchlist.",
                        "I want to follow changes to {title}. Put it on my watchlist.",
                        "Start watching the wiki page {title}.")
    user = "Tobias Renn"
    detours = ("watchlist",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice([a for a in self._world().articles.values() if a.ns == 0 and a.kind != "main"])
        return {"title": art.title}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query(
            "SELECT COUNT(*) FROM watchlist w JOIN actor a ON a.actor_user = w.wl_user WHERE a.actor_name = ? "
            "AND w.wl_namespace = 0 AND w.wl_title = ?", (self.user, db_key(self.params["title"])))
        ok = rows[0][0] > 0
        return ok, f"{self.params['title']} {'is' if ok else 'is not'} on {self.user}'s watchlist"

    def program_html(self) -> list[dict[str, Any]]:
        """The article's watch star offers to unwatch it: it is on the user's watchlist."""
        return [html_target(self.wiki_url(self.params["title"]), UNWATCH_TAB, "Unwatch")]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title = p["title"]
        if _at(ob, title):
            if kit.by_id(ob, "ca-unwatch") is not None:  # the star turned blue: watched
                return kit.why(kit.finish("done"), f"put {title} on your watchlist",
                               f"follow the changes to {title} from the watchlist")
            if memory.get("clicked"):  # the star is saving (an API call): wait, never click twice
                memory["waits"] = memory.get("waits", 0) + 1
                return _WAIT if memory["waits"] <= 6 else None
            if detour == "watchlist" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "pt-watchlist")), f"check whether {title} is on your watchlist already",
                    "look at your watchlist first"))
            return kit.once(memory, "clicked", kit.why(
                kit.click(ob, _tab(ob, "ca-watch")), f"add {title} to your watchlist",
                f"watch {title} so that its changes show up in your watchlist"))
        if memory.get("strayed") and not memory.get("back") and "Watchlist" in urllib.parse.unquote(ob.url or ""):
            return kit.once(memory, "back", kit.why(
                _BACK, f"return to {title} to watch it from the article",
                f"go back to {title}, which is not on the watchlist yet"))
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open the {title} article to watch it", f"reach {title}, whose Watch tab adds it to the watchlist"))


_TALK = (("Population figure", "The population figure needs a source from the latest census."),
         ("Merge proposal", "I propose merging the See also list into the History section."),
         ("Photo request", "Could someone add a photograph of the old town?"),
         ("Infobox", "The infobox should also list the twin towns."))


class TalkNewTopic(WikiTask):
    template = "talk_new_topic"
    intent_template = ('Start a discussion on the talk page of the wiki article {title}: a section headed '
                       '"{subject}" with the message "{message}".')
    intent_templates = (intent_template,
                        'Open a new topic "{subject}" on the talk page of {title}, saying "{message}"',
                        'Post "{message}" on the discussion page of {title}, in a new section headed "{subject}".',
                        'Raise this on the {title} talk page under the heading "{subject}": "{message}"')
    user = "Nico Ferro"
    detours = ("article", "preview")

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

    def program_html(self) -> list[dict[str, Any]]:
        p = self.params
        return self._talk_section_targets(p["title"], p["subject"], p["message"])

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title, talk = p["title"], "Talk:" + p["title"]
        to_talk = (f"open the discussion page of {title}", f"start the topic on the talk page of {title}")
        if _at(ob, talk):
            return kit.why(kit.finish("done"), f"start the {p['subject']} topic on the talk page of {title}",
                           f"raise the {p['subject']} point on {title}'s discussion page")
        if _at(ob, talk, "edit") or _at(ob, talk, "submit"):
            area = kit.by_id(ob, "wpTextbox1")
            text = f"== {p['subject']} ==\n{p['message']} ~~~~\n"
            if area is None:
                return None
            if _squeeze_spaces(area.value) != _squeeze_spaces(text):
                return kit.why(kit.fill(ob, area, text), f"write the {p['subject']} heading and the message, signed",
                               f"put the new topic {p['subject']} and its message on the talk page")
            return self._check_and_save(ob, memory, ("see how the new topic will look", "check the message before posting it"),
                                        (f"post the {p['subject']} topic", "save the new section of the talk page"))
        if _at(ob, title, "edit") and memory.get("strayed"):  # the article's editor: the talk page's tab is here too
            tab = _tab(ob, "ca-talk")
            return kit.why(kit.click(ob, tab), f"switch to the discussion page of {title}, where topics go rather than in "
                           "the article", "leave the article's text alone and open its talk page") if tab else _WAIT
        if _at(ob, title):
            if detour == "article" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "ca-edit")), f"open the editor of {title} to write the message",
                    f"look for a place for the topic in the editor of {title}"))
            tab = _tab(ob, "ca-talk")
            return kit.why(kit.click(ob, tab), *to_talk) if tab is not None else _WAIT
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, whose Discussion tab leads to its talk page",
                           f"reach {title} to start a topic about it"))


_MOVES = ("{title} (city)", "{title} ({country})", "City of {title}")


class MovePage(WikiTask):
    template = "move_page"
    intent_template = 'As an administrator, rename (move) the wiki article {title} to "{new_title}" with the reason "{reason}".'
    intent_templates = (intent_template,
                        'Rename the {title} article to "{new_title}", giving "{reason}" as the reason.',
                        'Move the wiki page {title} to the new title "{new_title}" (reason: "{reason}").',
                        '{title} should be called "{new_title}" from now on. Move it with the reason "{reason}".')
    user = "Admin"
    detours = ("links",)

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

    def program_html(self) -> list[dict[str, Any]]:
        """The move log of the old title names the user, the new title and the reason; the new title
        holds the article's text (no redirect)."""
        p = self.params
        return [html_target(self.wiki_url("Special:Log", type="move", page=p["title"]), LOG_ENTRIES, self.user,
                            p["new_title"], p["reason"]),
                exact_target(self.wiki_url(p["new_title"], action="edit"), WIKITEXT,
                             self._world().articles[p["title"]].text)]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title, new_title = p["title"], p["new_title"]
        if _at(ob, new_title) or kit.by_id(ob, "movepage-newlink") is not None:  # "Move succeeded"
            return kit.why(kit.finish("done"), f"rename {title} to {new_title}",
                           f"move {title} to its new title, {new_title}")
        if "Special:MovePage" in urllib.parse.unquote(ob.url):
            new, reason = kit.field(ob, "wpNewTitleMain", "input"), kit.field(ob, "wpReason")
            if new is None or reason is None:
                return None
            if _squeeze_spaces(new.value) != new_title:
                return kit.why(kit.fill(ob, new, new_title), f"give the article its new title, {new_title}",
                               f"set the title {title} is moved to")
            if _squeeze_spaces(reason.value) != p["reason"]:
                return kit.why(kit.fill(ob, reason, p["reason"]), "record why the article is renamed",
                               f"state the reason for the move, {p['reason']}")
            return kit.why(kit.click(ob, kit.by_name(ob, "wpMove")), f"rename {title} to {new_title}",
                           "carry out the move with the new title and reason")
        if "Special:WhatLinksHere" in urllib.parse.unquote(ob.url) and memory.get("strayed") \
                and not memory.get("back"):
            return kit.once(memory, "back", kit.why(
                _BACK, f"return to {title} to rename it, now that its links are checked",
                "get back to the article and move it"))
        if _at(ob, title):
            if detour == "links" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "t-whatlinkshere")), f"check which pages link to {title} before renaming it",
                    f"see what refers to {title} before moving it"))
            move = _tab(ob, "ca-move")
            if move is not None and kit.visible(ob, move):  # the "More" menu is open
                return kit.why(kit.click(ob, move), f"open the form that renames {title}",
                               f"give {title} a new title through its page actions")
            return kit.why(kit.click(ob, kit.by_id(ob, "p-cactions-checkbox")),
                           f"find the option to rename {title} in the page's menu",
                           "show the page actions, where the move option is")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, the article to rename", f"reach {title} to move it"))


def _has_ancestor(ob: Observation, el: Element, html_id: str) -> bool:
    """Whether ``el`` lies inside the element with HTML ``id`` ``html_id``."""
    p = el.parent
    while p is not None and p in ob.elements:
        if ob.elements[p].attrs.get("id") == html_id:
            return True
        p = ob.elements[p].parent
    return False


# ----------------------------------------------------------------------------- navigation (the page the agent ends on)
def _articles() -> list[wseed.Article]:
    """The seeded articles (namespace 0, the Main Page aside)."""
    return [a for a in wseed.world().articles.values() if a.ns == 0 and a.kind != "main"]


def _plain_link(value: str) -> str:
    """``Quengate`` from an infobox value ``[[Quengate]]``."""
    return value.strip().strip("[]'")


def _cell_links(ob: Observation, label: str) -> list[Element]:
    """The links of the infobox cell next to the header ``label``."""
    cell = kit.find(ob, lambda e: e.tag == "th" and _squeeze_spaces(e.text) == label)
    row = ob.elements.get(cell.parent) if cell is not None and cell.parent else None
    td = next((ob.elements[c] for c in (row.children if row else []) if ob.elements[c].tag == "td"), None)
    return _links_in(ob, td)


class WikiNavigationTask(WikiTask):
    """A navigation task (WebArena's ``url_match``): the agent finishes on a page of the wiki.

    MediaWiki shows a page at two URLs, ``/wiki/Title?...`` and ``/index.php?title=Title&...``;
    :meth:`_on_title` accepts either. Each subclass sets ``kind`` itself (:class:`SiteTask` reads
    it from the class's own namespace).
    """

    def _on_title(self, title: str, action: str | None = "view", **query: str) -> tuple[bool, str]:
        """Did the agent finish on ``title`` (with ``action``; None: any) and these query parameters?"""
        key = db_key(title)
        if self._wiki_target is None:  # the first page the check names: what reference_url() reports
            self._wiki_target = (key, action, query)
        ok, _ = self.on_page("/wiki/" + key, **query)
        if not ok:
            ok, _ = self.on_page("/index.php", title=key, **query)
        if ok and action is not None:
            got = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.final_url or "").query))
            if got.get("action", "view") != action or (action == "view" and ("diff" in got or "oldid" in got)):
                return False, f"ended on {self.final_url}, not on the {action} of {title}"
        where = title if action in (None, "view") else f"the {action} of {title}"
        return ok, (f"ended on {where}" if ok else f"ended on {self.final_url}, not on {where}")

    _wiki_target: tuple[str, str | None, dict[str, str]] | None = None

    def reference_url(self) -> str | None:
        """The page :meth:`check` wants, at the URL MediaWiki's own links give it (WebArena's
        ``url_match`` tells the two forms apart): ``/wiki/Title`` for a page as it is read,
        ``/index.php?title=Title&action=...`` for another action or query."""
        self._wiki_target = None
        self._check_unfinished()
        key, action, query = self._wiki_target
        if action in (None, "view") and not query:
            return f"{self.site.base_url}/wiki/{urllib.parse.quote(key, safe=';@$!*(),/~:')}"
        actions = {} if action in (None, "view") else {"action": action}
        return f"{self.site.base_url}/index.php?" + urllib.parse.urlencode({"title": key, **actions, **query})


class OpenHistory(WikiNavigationTask):
    template = "open_history"
    kind = "navigation"
    intent_template = "Open the revision history of the wiki article {title}."
    intent_templates = (intent_template,
                        "Show me the edit history of {title}.",
                        "I want to see every past revision of the {title} article. Take me there.",
                        "Bring up the list of changes that have been made to {title}.")
    detours = ("edit",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(_articles()).title}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self._on_title(self.params["title"], "history")

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title = p["title"]
        shows = (f"show the revision history of {title}", f"bring up the list of past edits to {title}")
        if _at(ob, title, "history"):
            return kit.why(kit.finish("done"), *shows)
        if _at(ob, title, "edit") and memory.get("strayed"):  # the source view has the History tab too
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), f"switch from the source to the history of {title}",
                           "open the History tab, which lists the revisions rather than the text")
        if _at(ob, title):
            if detour == "edit" and not memory.get("strayed"):  # "View source" for a reader who is not logged in
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "ca-edit") or _tab(ob, "ca-viewsource")),
                    f"look for the earlier versions of {title} in its source",
                    f"open the source of {title}, thinking the old versions are there"))
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), *shows)
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, whose History tab lists its revisions",
                           f"reach the {title} article to get to its history"))


class CapitalArticle(WikiNavigationTask):
    template = "capital_article"
    kind = "navigation"
    intent_template = "Show me the wiki article about the capital of the country that {city} is in."
    intent_templates = (intent_template,
                        "{city} lies in a country of the Meridian continent. Open the article on that country's capital.",
                        "Take me to the wiki page of the capital of {city}'s country.",
                        "I want to read about the capital city of the country where {city} is. Open its article.")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        w = self._world()
        city = rng.choice([a for a in w.of_kind("city") if "Capital cities" not in a.categories])
        country = _plain_link(city.infobox["country"])
        return {"city": city.title, "country": country, "capital": _plain_link(w.articles[country].infobox["capital"])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self._on_title(self.params["capital"])

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        city, country, capital = p["city"], p["country"], p["capital"]
        if _at(ob, capital):
            return kit.why(kit.finish("done"), f"show the article on {capital}, the capital of {country}",
                           f"bring up {country}'s capital, {capital}")
        if _at(ob, country):
            links = _cell_links(ob, "Capital")
            return kit.why(kit.click(ob, links[0] if links else _link_to(ob, capital)),
                           f"follow the Capital row of {country}'s infobox to {capital}",
                           f"open {capital}, named as the capital of {country}")
        if _at(ob, city):
            links = _cell_links(ob, "Country")
            return kit.why(kit.click(ob, links[0] if links else _link_to(ob, country)),
                           f"open {country}, the country {city} is in, whose infobox names its capital",
                           f"follow the Country row of {city}'s infobox to {country}")
        return self._open(ob, memory, city, (f"look up the {city} article", f"find the article on {city}"),
                          (f"open {city} to find out which country it is in",
                           f"read the country of {city} in its infobox"))


class CategoryPage(WikiNavigationTask):
    template = "category_page"
    kind = "navigation"
    intent_template = 'Open the list of pages in the wiki category "{category}".'
    intent_templates = (intent_template,
                        "Show me every page filed under the category {category}.",
                        'Take me to the category page "{category}" on the wiki.',
                        "I want to browse the {category} category. Open it.")
    ways = ("search", "narrow", "member")  # a Main Page link alone would make a two-step episode

    def sample(self, rng: random.Random) -> dict[str, Any]:
        w = self._world()
        cats = [c for c in w.all_categories() if len(w.category_members(c)) >= 2 and c != "Infobox templates"]
        cat = rng.choice(cats)
        member = rng.choice([t for t in w.category_members(cat) if w.articles[t].ns == 0])
        return {"category": cat, "member": member}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self._on_title("Category:" + self.params["category"])

    def _narrow(self, title: str) -> tuple[str, tuple[str, ...]] | None:
        name = title.split(":", 1)[-1]
        return name, (f"search for {name} without the Category: prefix",
                      f"look for {name} in the search box first")

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (way, _) = self.params, self._style(memory)
        cat, member = "Category:" + p["category"], p["member"]
        lists = (f"show the pages of the {p['category']} category", f"bring up the {p['category']} category's list")
        if _at(ob, cat):
            return kit.why(kit.finish("done"), *lists)
        if way == "member":
            if _at(ob, member):
                want = "/wiki/" + urllib.parse.quote(db_key(cat), safe=":/()'!,")
                link = next((e for e in _links_in(ob, kit.by_id(ob, "mw-normal-catlinks"))
                             if e.attrs.get("href") == want), None)
                return kit.why(kit.click(ob, link), f"open {p['category']} from the categories at the foot of {member}",
                               f"follow {member}'s category link to {p['category']}")
            return self._open(ob, memory, member, (f"look up {member}, which is filed under {p['category']}",
                                                   f"find the article on {member}, one of the {p['category']} pages"),
                              (f"open {member}, whose category links lead to {p['category']}",
                               f"reach the {p['category']} category through {member}"))
        return self._open(ob, memory, cat, (f"go straight to the category page {cat}",
                                            f"type the category's full name, {cat}"), lists)


class LatestDiff(WikiNavigationTask):
    template = "latest_diff"
    kind = "navigation"
    intent_template = "Show the differences between the last two revisions of the wiki article {title}."
    intent_templates = (intent_template,
                        "What changed in the most recent edit to {title}? Show me the diff.",
                        "Open the comparison of the latest revision of {title} with the one before it.",
                        "Bring up the diff of the newest change to the {title} article.")
    detours = ("revision",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(_articles()).title}

    def check(self, answer: str | None) -> tuple[bool, str]:
        title = self.params["title"]
        ok, reason = self._on_title(title, None)
        if not ok:
            return ok, reason
        revs = self.site.revisions(title)
        latest, prev = str(revs[-1][0]), str(revs[-2][0])
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.final_url or "").query))
        diff, old = q.get("diff"), q.get("oldid")
        if (old == prev and diff in (latest, "cur")) or (old == latest and diff == "prev") \
                or (diff == latest and old is None):
            return True, f"ended on the diff of revisions {prev} and {latest} of {title}"
        return False, f"ended on {self.final_url}, not on the diff of revisions {prev} and {latest}"

    def reference_url(self) -> str:
        # the newest line's "prev" link in the history, or the "cur" link of the line before it
        # (WebArena's " |OR| ": either diff value, the same oldid)
        revs = self.site.revisions(self.params["title"])
        return " |OR| ".join(f"{self.site.base_url}/index.php?" + urllib.parse.urlencode(
            {"title": db_key(self.params["title"]), "diff": diff, "oldid": revs[-2][0]}) for diff in (revs[-1][0], "cur"))

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title = p["title"]
        shows = (f"compare the latest revision of {title} with the one before it",
                 f"show what the newest edit to {title} changed")
        if _on_diff(ob, title):
            return kit.why(kit.finish("done"), *shows)
        t, q = _href_title(ob.url)
        if db_key(t) == db_key(title) and "oldid" in q and memory.get("strayed") and not memory.get("back"):
            return kit.once(memory, "back", kit.why(
                _BACK, f"return to the history of {title}, since the old text alone does not show the changes",
                "go back to the list of revisions and open the comparison instead"))
        if _at(ob, title, "history"):
            if detour == "revision" and not memory.get("strayed"):
                date = kit.find(ob, lambda e: e.tag == "a" and "mw-changeslist-date" in e.attrs.get("class", ""))
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, date), f"open the latest revision of {title} first",
                    f"look at the newest version of {title} from its date in the history"))
            return kit.why(kit.click(ob, kit.link(ob, "prev")), *shows)
        if _at(ob, title):
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), f"find the two latest revisions of {title} in its history",
                           f"open the history of {title}, where each edit can be compared with the one before")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title} to get to its history", f"reach the {title} article to compare its revisions"))


class EditorContributions(WikiNavigationTask):
    template = "last_editor_contributions"
    kind = "navigation"
    intent_template = "Open the contributions page of the user who made the latest edit to the wiki article {title}."
    intent_templates = (intent_template,
                        "Who last edited {title}? Show me all of that user's contributions.",
                        "I want to see every edit by the person who last changed {title}. Take me to their contributions.",
                        "Show me the list of edits made by whoever edited the {title} article most recently.")
    detours = ("diff",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(_articles())
        return {"title": art.title, "editor": art.last_editor}

    def check(self, answer: str | None) -> tuple[bool, str]:
        editor = self.params["editor"]
        ok, reason = self._on_title("Special:Contributions/" + editor, None)
        if not ok:
            ok, _ = self._on_title("Special:Contributions", None, target=editor)
        return ok, (f"ended on the contributions of {editor}" if ok else reason)

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title, editor = p["title"], p["editor"]
        opens = (f"open the contributions of {editor}, who edited {title} last",
                 f"show every edit by {editor}, the latest editor of {title}")
        if urllib.parse.unquote(kit.path(ob)).startswith("/wiki/Special:Contributions/"):
            return kit.why(kit.finish("done"), f"show the contributions of {editor}, the last editor of {title}",
                           f"list every edit by {editor}")
        if _on_diff(ob, title):  # the newer side names its author with a contribs link
            link = kit.find(ob, lambda e: e.tag == "a" and "mw-usertoollinks-contribs" in e.attrs.get("class", "")
                            and _has_ancestor(ob, e, "mw-diff-ntitle2"))
            return kit.why(kit.click(ob, link), *opens)
        if _at(ob, title, "history"):
            if detour == "diff" and not memory.get("diffed"):
                return kit.once(memory, "diffed", kit.why(
                    kit.click(ob, kit.link(ob, "prev")), f"open the latest change to {title} to see who made it",
                    f"check the newest edit to {title} and its author"))
            link = kit.find(ob, lambda e: e.tag == "a" and "mw-usertoollinks-contribs" in e.attrs.get("class", ""))
            return kit.why(kit.click(ob, link), *opens)
        if _at(ob, title):
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), f"find out from the history who edited {title} last",
                           f"see the edits to {title}, newest first, each with its author")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, whose history names its latest editor",
                           f"reach {title} to find out who edited it last"))


class TalkPage(WikiNavigationTask):
    template = "talk_page"
    kind = "navigation"
    intent_template = "Go to the talk page of the wiki article {title}."
    intent_templates = (intent_template,
                        "Open the discussion page of {title}.",
                        "Take me to where editors discuss the {title} article.",
                        "Show me the talk page for {title} on the wiki.")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(_articles()).title}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self._on_title("Talk:" + self.params["title"], None)  # no talk page yet: its editor

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        title = self.params["title"]
        t, _ = _href_title(ob.url)
        if db_key(t) == db_key("Talk:" + title):
            return kit.why(kit.finish("done"), f"show the discussion page of {title}",
                           f"bring up where editors discuss {title}")
        if _at(ob, title):
            return kit.why(kit.click(ob, _tab(ob, "ca-talk")), f"switch to the discussion page of {title}",
                           f"open the Discussion tab of {title}")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, whose Discussion tab leads to its talk page",
                           f"reach the {title} article to get to its talk page"))


class WhatLinksHere(WikiNavigationTask):
    template = "what_links_here"
    kind = "navigation"
    intent_template = "Show me which wiki pages link to {title}."
    intent_templates = (intent_template,
                        "Open the list of pages that link to the {title} article.",
                        "Which articles refer to {title}? Take me to the list.",
                        "I want to see what links to {title} on the wiki.")
    detours = ("related",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(_articles()).title}

    def check(self, answer: str | None) -> tuple[bool, str]:
        title = self.params["title"]
        ok, reason = self._on_title("Special:WhatLinksHere/" + title, None)
        if not ok:
            ok, _ = self._on_title("Special:WhatLinksHere", None, target=title)
        return ok, (f"ended on the pages that link to {title}" if ok else reason)

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title = p["title"]
        here = urllib.parse.unquote(kit.path(ob))
        lists = (f"list the pages that link to {title}", f"open What links here for {title}")
        if here.startswith("/wiki/Special:WhatLinksHere/"):
            return kit.why(kit.finish("done"), f"show the pages that link to {title}",
                           f"bring up the list of pages referring to {title}")
        if here.startswith("/wiki/Special:RecentChangesLinked/") and not memory.get("back"):
            return kit.once(memory, "back", kit.why(
                _BACK, f"return to {title}, since Related changes lists edits, not the pages that link to it",
                "go back and pick What links here instead"))
        if _at(ob, title):
            if detour == "related" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "t-recentchangeslinked")), f"look for the pages connected to {title}",
                    f"try the Related changes of {title} first"))
            return kit.why(kit.click(ob, _tab(ob, "t-whatlinkshere")), *lists)
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, whose tools list the pages that link to it",
                           f"reach {title} to see what links to it"))


# ----------------------------------------------------------------------------- information seeking, more
def _history_users(ob: Observation) -> list[Element]:
    """The user links of a history page's rows, newest first."""
    return [e for e in kit.find_all(ob, lambda e: e.tag == "a" and "mw-userlink" in e.attrs.get("class", ""))
            if _has_ancestor(ob, e, "pagehistory")]


class FirstEditor(WikiTask):
    template = "first_editor"
    intent_template = "Who made the first edit to the wiki article {title}? Answer with their user name."
    intent_templates = (intent_template,
                        "Who created the {title} article on the wiki?",
                        "Which user started the article {title}?",
                        "Tell me the user name of the person who wrote the first version of {title}.")
    answer_task = True
    detours = ("latest",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(_articles())
        return {"title": art.title, "creator": art.revisions[0].user}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _squash(answer).removeprefix("user:").strip() == _squash(self.params["creator"])
        return ok, f"answer {answer!r} vs first editor {self.params['creator']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["creator"]]}

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title = p["title"]
        if _at(ob, title, "history"):
            users = _history_users(ob)
            if not users:
                return None
            if detour == "latest" and not memory.get("looked"):  # the newest row first, then on to the oldest
                memory["looked"] = True
                return Decision(ActionType.SCROLL, direction="down")
            return kit.why(kit.reach(ob, users[-1], kit.finish(_squeeze_spaces(users[-1].text))),
                           f"name the user who made the first edit to {title}, at the bottom of its history",
                           f"tell the user who created {title}")
        if _at(ob, title):
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), f"see every edit to {title}, the oldest at the bottom",
                           f"find out from the history who created {title}")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, whose history names the user who created it",
                           f"reach the {title} article to look at its first edit"))


class RevisionCount(WikiTask):
    template = "revision_count"
    intent_template = "How many revisions does the wiki article {title} have? Answer with the number."
    intent_templates = (intent_template,
                        "How many times has {title} been edited, counting the edit that created it?",
                        "Count the edits in the history of the {title} article.",
                        "What is the total number of edits made to {title} on the wiki?")
    answer_task = True
    detours = ("info",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(_articles())
        return {"title": art.title, "count": len(art.revisions)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, str(self.params["count"]))
        return ok, f"answer {answer!r} vs {self.params['count']} revisions of {self.params['title']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["count"])]}

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title = p["title"]
        counts = (f"give the number of edits to {title}", f"tell the user how many revisions {title} has")
        if _at(ob, title, "info"):
            row = kit.by_id(ob, "mw-pageinfo-edits")
            cells = [ob.elements[c] for c in (row.children if row else []) if ob.elements[c].tag == "td"]
            if len(cells) < 2:
                return None
            return kit.why(kit.reach(ob, cells[1], kit.finish(_squeeze_spaces(cells[1].text))), *counts)
        if _at(ob, title, "history"):
            users = _history_users(ob)
            if not users:
                return None
            return kit.why(kit.reach(ob, users[-1], kit.finish(str(len(users)))), *counts)
        if _at(ob, title):
            if detour == "info":
                return kit.why(kit.click(ob, _tab(ob, "t-info")), f"open the page information of {title}, "
                               "which gives its total number of edits", f"read the edit count of {title} in its page information")
            return kit.why(kit.click(ob, _tab(ob, "ca-history")), f"count the revisions of {title} in its history",
                           f"list every edit to {title}")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title} to count its edits", f"reach the {title} article and its history"))


class CapitalPopulation(WikiTask):
    template = "capital_population"
    intent_template = "What is the population of the capital of {country}? Answer with the number."
    intent_templates = (intent_template,
                        "How many people live in the capital city of {country}, according to the wiki?",
                        "Find the population of {country}'s capital.",
                        "{country}'s capital has its own article on the wiki. What population does it give?")
    answer_task = True
    detours = ("country",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        country = rng.choice(self._world().of_kind("country"))
        capital = _plain_link(country.infobox["capital"])
        return {"country": country.title, "capital": capital,
                "value": self._world().articles[capital].infobox["population"],
                "country_population": country.infobox["population"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _answer_has(answer, self.params["value"])
        return ok, f"answer {answer!r} vs population {self.params['value']} of {self.params['capital']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["value"]]}

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        country, capital = p["country"], p["capital"]
        if _at(ob, capital):
            value = _infobox_value(ob, "Population")
            return kit.why(kit.finish(value), f"give the population of {capital}, the capital of {country}",
                           f"tell the user how many people live in {capital}") if value else None
        if _at(ob, country):
            if detour == "country" and not memory.get("looked"):  # the country's own figure, then the capital's row
                memory["looked"] = True
                return Decision(ActionType.SCROLL, direction="down")
            links = _cell_links(ob, "Capital")
            return kit.why(kit.click(ob, links[0] if links else _link_to(ob, capital)),
                           f"open {capital}, the capital of {country}, for its own population",
                           f"follow the Capital row of {country}'s infobox")
        return self._open(ob, memory, country, (f"look up the {country} article", f"find the article on {country}"),
                          (f"open {country} to find out which city is its capital",
                           f"read the capital of {country} in its infobox"))


# ----------------------------------------------------------------------------- editing and administration, more
def _open_page_menu(ob: Observation, tab_id: str, opens: tuple[str, ...], menus: tuple[str, ...]) -> Decision | None:
    """Click ``tab_id`` in the page's "More" menu, opening the menu first when it is closed."""
    item = _tab(ob, tab_id)
    if item is not None and kit.visible(ob, item):
        return kit.why(kit.click(ob, item), *opens)
    return kit.why(kit.click(ob, kit.by_id(ob, "p-cactions-checkbox")), *menus)


_PROTECT_REASONS = ("Edit warring", "Excessive vandalism", "High traffic page")
#: The protection form's edit level for administrators only.
_SYSOP_ONLY = "Allow only administrators"


class ProtectPage(WikiTask):
    template = "protect_page"
    intent_template = ('As an administrator, protect the wiki article {title} so that only administrators can edit '
                       'it, with the reason "{reason}".')
    intent_templates = (intent_template,
                        'Lock {title} so that only administrators may edit it (reason: "{reason}").',
                        'There is trouble on {title}. Protect the page against editing by anyone but administrators, '
                        'giving "{reason}" as the reason.',
                        'Restrict editing of the {title} article to administrators; the reason is "{reason}".')
    user = "Petra Lund"
    ways = ("search", "search", "browse")  # the form's steps already make long episodes
    detours = ("history",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(_articles()).title, "reason": rng.choice(_PROTECT_REASONS)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        levels = dict(self.site.query(
            "SELECT r.pr_type, r.pr_level FROM page_restrictions r JOIN page p ON p.page_id = r.pr_page "
            "WHERE p.page_namespace = 0 AND p.page_title = ?", (db_key(p["title"]),)))
        if levels.get("edit") != "sysop":
            return False, f"editing {p['title']} is restricted to {levels.get('edit')!r}, not sysop"
        logs = self.site.query(
            "SELECT c.comment_text FROM logging l JOIN actor a ON a.actor_id = l.log_actor LEFT JOIN comment c "
            "ON c.comment_id = l.log_comment_id WHERE l.log_type = 'protect' AND l.log_namespace = 0 "
            "AND l.log_title = ? AND a.actor_name = ?", (db_key(p["title"]), self.user))
        if not any(p["reason"].lower() in str(c or "").lower() for (c,) in logs):
            return False, f"no protection log entry by {self.user} with the reason {p['reason']!r}"
        return True, "page protected"

    def program_html(self) -> list[dict[str, Any]]:
        """The page information gives the edit protection; the protection log names the user and the reason."""
        p = self.params
        return [html_target(self.wiki_url(p["title"], action="info"), EDIT_PROTECTION, _SYSOP_ONLY),
                html_target(self.wiki_url("Special:Log", type="protect", page=p["title"]), LOG_ENTRIES, self.user,
                            p["reason"])]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title, reason = p["title"], p["reason"]
        if _at(ob, title) and memory.get("saved"):
            return kit.why(kit.finish("done"), f"protect {title} so that only administrators can edit it",
                           f"restrict the editing of {title} to administrators")
        if _at(ob, title, "protect"):
            # the edit level is an OOUI dropdown (its <select> is hidden): open it, then pick the option
            handle = kit.find(ob, lambda e: "oo-ui-dropdownWidget-handle" in e.attrs.get("class", "")
                              and _has_ancestor(ob, e, "mwProtect-level-edit"))
            box = kit.field(ob, "mwProtect-reason", "input")
            if handle is None or box is None:  # the form's script has not built the dropdown yet: wait
                memory["waits"] = memory.get("waits", 0) + 1
                return _WAIT if memory["waits"] <= 8 else None
            if _squeeze_spaces(handle.all_text) != _SYSOP_ONLY:
                menu = handle.attrs.get("aria-owns")
                option = kit.find(ob, lambda e: e.attrs.get("role") == "option" and bool(menu)
                                  and _squeeze_spaces(e.all_text) == _SYSOP_ONLY and _has_ancestor(ob, e, menu))
                if option is not None and kit.visible(ob, option):
                    return kit.why(kit.click(ob, option), f"allow only administrators to edit {title}",
                                   "set the edit protection to administrators")
                return kit.why(kit.click(ob, handle), f"choose who may edit {title}",
                               "open the list of edit protection levels")
            if _squeeze_spaces(box.value) != reason:
                return kit.why(kit.fill(ob, box, reason), f"give {reason} as the reason for the protection",
                               "record why the page is protected")
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.button(ob, "Confirm")),
                                                     f"protect {title} with these settings",
                                                     "confirm the protection"))
        if _at(ob, title, "history") and memory.get("strayed"):
            return _open_page_menu(ob, "ca-protect", (f"open the protection form of {title}",
                                                      "go to the page's protection settings"),
                                   ("show the page actions, where Protect is", f"open the menu of {title}'s actions"))
        if _at(ob, title):
            if detour == "history" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "ca-history")), f"look at the recent edits to {title} before protecting it",
                    f"check the history of {title} for the trouble first"))
            return _open_page_menu(ob, "ca-protect", (f"open the protection form of {title}",
                                                      f"change who may edit {title}"),
                                   (f"find the option to protect {title} in the page's menu",
                                    "show the page actions, where Protect is"))
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, the article to protect", f"reach {title} to protect it"))


def _redirect_aliases() -> list[tuple[str, str]]:
    """(alias, article) pairs a redirect could serve: a species' scientific name (when only one species
    has it), a person's name written surname first."""
    species = wseed.world().of_kind("species")
    latin = [a.infobox["binomial"].strip("'") for a in species]
    out = [(name, a.title) for name, a in zip(latin, species) if latin.count(name) == 1]
    out += [(f"{a.title.split()[-1]}, {' '.join(a.title.split()[:-1])}", a.title)
            for a in wseed.world().of_kind("person")]
    return out


class CreateRedirect(WikiTask):
    template = "create_redirect"
    intent_template = 'Make "{alias}" a redirect to the wiki article {title}.'
    intent_templates = (intent_template,
                        'Readers who look up "{alias}" should land on {title}. Create that redirect.',
                        'Create a redirect page "{alias}" that points to {title}.',
                        'Set up "{alias}" on the wiki so that it redirects to the {title} article.')
    user = "Orrin Vale"
    ways = ("search",)
    detours = ("preview", "target")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        alias, title = rng.choice(_redirect_aliases())
        return {"alias": alias, "title": title}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        row = self.site.page_row(p["alias"])
        if row is None:
            return False, f"no page {p['alias']!r}"
        if not row[2]:
            return False, f"{p['alias']!r} is not a redirect"
        target = self.site.query("SELECT rd_namespace, rd_title FROM redirect WHERE rd_from = ?", (row[0],))
        if not target or tuple(target[0]) != (0, db_key(p["title"])):
            return False, f"{p['alias']!r} redirects to {target}, not to {p['title']}"
        revs = self.site.revisions(p["alias"])
        if not revs or revs[0][1] != self.user:
            return False, f"the redirect was not created by {self.user}"
        return True, "redirect created"

    def program_html(self) -> list[dict[str, Any]]:
        """The alias, shown without following it, redirects to the title; the user made its first revision."""
        p = self.params
        return [exact_target(self.wiki_url(p["alias"], redirect="no"), REDIRECT_TARGET, p["title"]),
                html_target(self.wiki_url(p["alias"], action="history"), FIRST_REVISION, self.user)]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        alias, title = p["alias"], p["title"]
        makes = (f"make {alias} lead to {title}", f"create the redirect from {alias} to {title}")
        t, q = _href_title(ob.url)
        if memory.get("saved") and db_key(t) == db_key(alias) and q.get("action", "view") == "view":
            return kit.why(kit.finish("done"), *makes)
        if db_key(t) == db_key(alias) and q.get("action") in ("edit", "submit"):
            area = kit.by_id(ob, "wpTextbox1")
            text = f"#REDIRECT [[{title}]]\n"
            if area is None:
                return None
            if _squeeze_spaces(area.value) != _squeeze_spaces(text):
                return kit.why(kit.fill(ob, area, text), f"point the new page at {title}",
                               f"write the redirect line to {title}")
            return self._check_and_save(ob, memory, (f"check that the redirect goes to {title}",
                                                     "see the redirect before saving it"), makes)
        if detour == "target" and not memory.get("checked_target"):  # the target's exact title first
            if _at(ob, title):
                box = kit.by_id(ob, "searchInput")
                memory["checked_target"] = True
                return kit.why(kit.fill(ob, box, alias), f"now look up {alias}, the title to redirect",
                               f"check that no page {alias} exists yet")
            return self._open(ob, memory, title, (f"check the exact title of the {title} article",
                                                  f"look up {title}, the redirect's target"),
                              (f"open {title} to make sure of its title", f"see that {title} exists"))
        create = kit.find(ob, lambda e: e.tag == "a" and "action=edit" in e.attrs.get("href", "")
                          and db_key(_href_title(e.attrs["href"])[0]) == db_key(alias))
        if create is not None and _on_search(ob):
            return kit.why(kit.click(ob, create), f"start the page {alias}, which does not exist yet",
                           f"create {alias} from the search results")
        box = kit.by_id(ob, "searchInput")
        if box is not None and _squeeze_spaces(box.value) == alias and not _on_search(ob):
            return kit.why(kit.click(ob, kit.by_id(ob, "searchButton")), f"see whether {alias} exists",
                           f"search for {alias} to get the link that creates it")
        return self._open(ob, memory, alias, (f"check whether a page {alias} exists",
                                              f"make sure the wiki has no page {alias} yet"),
                          (f"see whether {alias} exists and get the link to create it",
                           f"search for {alias} before creating it"))


class UpdatePopulation(WikiTask):
    template = "update_population"
    intent_template = ('The 2024 census counted {new} people in {title}. Update the population in the infobox of its '
                       'wiki article, with the edit summary "{summary}".')
    intent_templates = (intent_template,
                        'Set the infobox population of {title} to {new} (edit summary: "{summary}").',
                        '{title} now has {new} inhabitants. Correct the figure in the article\'s infobox and save '
                        'it with the summary "{summary}".',
                        'Change the population given in the {title} infobox to {new}; use "{summary}" as the edit '
                        'summary.')
    user = "Marta Kell"
    # no look before saving: the long text box's scrolls already make 9-11 steps, a preview would pass 15

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("city"))
        old = int(art.infobox["population"].replace(",", ""))
        new = old + rng.choice((-1, 1)) * rng.randint(500, 9000)
        return {"title": art.title, "old": art.infobox["population"], "new": f"{new:,}",
                "summary": rng.choice(("Population from the 2024 census", "Updated population (2024 census)"))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        mine = self._edited_by_user(p["title"])
        if not mine:
            return False, f"no new revision of {p['title']} by {self.user}"
        if mine[-1][2] != p["summary"]:
            return False, f"edit summary {mine[-1][2]!r} != {p['summary']!r}"
        text = self.site.page_text(p["title"]) or ""
        m = re.search(r"^\|\s*population\s*=\s*([\d,]+)\s*$", text, re.M)
        if m is None or m.group(1).replace(",", "") != p["new"].replace(",", ""):
            return False, f"the infobox population is {m.group(1) if m else None!r}, not {p['new']}"
        seeded = self._world().articles[p["title"]].text
        if "{{Infobox settlement" not in text or len(text) < len(seeded) - 20:
            return False, "the rest of the article was lost"
        return True, "population updated"

    def program_html(self) -> list[dict[str, Any]]:
        """The user's edit with the summary tops the history; the infobox shows the new population
        (with or without thousands separators); the wikitext around that line is the seeded one."""
        p = self.params
        seeded = self._world().articles[p["title"]].text
        line = re.search(r"^\|\s*population\s*=.*$", seeded, re.M)
        assert line is not None, f"{p['title']} has no population line"
        return [html_target(self.wiki_url(p["title"], action="history"), LATEST_REVISION, self.user, p["summary"]),
                html_target(self.wiki_url(p["title"], action="edit"), WIKITEXT, seeded[:line.start()].strip(),
                            seeded[line.end():].strip()),
                html_target(self.wiki_url(p["title"]), infobox_value("Population"),
                            f"{p['new']} |OR| {p['new'].replace(',', '')}")]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p = self.params
        title = p["title"]
        if _at(ob, title) and memory.get("saved"):
            return kit.why(kit.finish("done"), f"update the population of {title} to {p['new']}",
                           f"put the 2024 census figure in the infobox of {title}")
        if _at(ob, title, "edit") or _at(ob, title, "submit"):
            area, summary = kit.by_id(ob, "wpTextbox1"), kit.by_id(ob, "wpSummary")
            if area is None or summary is None:
                return None
            value = area.value or ""
            if not re.search(r"^\|\s*population\s*=\s*" + re.escape(p["new"]) + r"\s*$", value, re.M):
                new = re.sub(r"^(\|\s*population\s*=\s*)[\d,]+", lambda m: m.group(1) + p["new"], value, count=1,
                             flags=re.M)
                return kit.why(kit.fill(ob, area, new), f"replace the population {p['old']} with {p['new']}",
                               f"write the census figure {p['new']} in the infobox")
            if _squeeze_spaces(summary.value) != p["summary"]:
                return kit.why(kit.fill(ob, summary, p["summary"]), "describe the change in the edit summary",
                               "say where the new figure comes from")
            return self._check_and_save(ob, memory, ("check that only the population changes",
                                                     "review the new figure before saving"),
                                        (f"save the new population of {title}", "store the edit"))
        if _at(ob, title):
            return kit.why(kit.click(ob, _tab(ob, "ca-edit")), f"open the editor of {title}, where the infobox is",
                           f"edit {title} to change its population")
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title} to update its population", f"reach the {title} article and its infobox"))


_DELETE_REASONS = ("Duplicate article", "Created in error", "Merged into another article")


class DeletePage(WikiTask):
    template = "delete_page"
    intent_template = 'As an administrator, delete the wiki article {title} with the reason "{reason}".'
    intent_templates = (intent_template,
                        'Remove the page {title} from the wiki; give "{reason}" as the reason.',
                        '{title} should not be on the wiki. Delete it (reason: "{reason}").',
                        'Delete the {title} article, stating the reason "{reason}".')
    user = "Admin"
    detours = ("links",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        art = rng.choice(self._world().of_kind("person") + self._world().of_kind("species"))
        return {"title": art.title, "reason": rng.choice(_DELETE_REASONS)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        if self.site.page_row(p["title"]) is not None:
            return False, f"{p['title']} still exists"
        logs = self.site.query(
            "SELECT c.comment_text FROM logging l JOIN actor a ON a.actor_id = l.log_actor LEFT JOIN comment c "
            "ON c.comment_id = l.log_comment_id WHERE l.log_type = 'delete' AND l.log_action = 'delete' "
            "AND l.log_namespace = 0 AND l.log_title = ? AND a.actor_name = ?", (db_key(p["title"]), self.user))
        if not any(p["reason"].lower() in str(c or "").lower() for (c,) in logs):
            return False, f"no deletion log entry by {self.user} with the reason {p['reason']!r}"
        return True, "page deleted"

    def program_html(self) -> list[dict[str, Any]]:
        """The deletion log names the user and the reason; the page is gone."""
        p = self.params
        return [html_target(self.wiki_url("Special:Log", type="delete", page=p["title"]), LOG_ENTRIES, self.user,
                            "deleted page", p["reason"]),
                html_target(self.wiki_url(p["title"]), CONTENT, "There is currently no text in this page")]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        p, (_, detour) = self.params, self._style(memory)
        title, reason = p["title"], p["reason"]
        if memory.get("saved") and (not _at(ob, title, "delete") or kit.field(ob, "wpReason", "input") is None):
            return kit.why(kit.finish("done"), f"delete {title}", f"remove {title} from the wiki")
        if _at(ob, title, "delete"):
            box = kit.field(ob, "wpReason", "input")
            if box is None:
                return None
            if _squeeze_spaces(box.value) != reason:
                return kit.why(kit.fill(ob, box, reason), f"give {reason} as the reason for the deletion",
                               "replace the suggested reason with the one asked for")
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.by_name(ob, "wpConfirmB")),
                                                     f"delete {title} for good", "confirm the deletion"))
        if "Special:WhatLinksHere" in urllib.parse.unquote(ob.url) and memory.get("strayed") \
                and not memory.get("back"):
            return kit.once(memory, "back", kit.why(
                _BACK, f"return to {title} to delete it, now that its links are checked",
                "get back to the article and delete it"))
        if _at(ob, title):
            if detour == "links" and not memory.get("strayed"):
                return kit.once(memory, "strayed", kit.why(
                    kit.click(ob, _tab(ob, "t-whatlinkshere")), f"check which pages link to {title} before deleting it",
                    f"see what refers to {title} first"))
            return _open_page_menu(ob, "ca-delete", (f"open the deletion form of {title}", f"delete {title}"),
                                   (f"find the option to delete {title} in the page's menu",
                                    "show the page actions, where Delete is"))
        return self._open(ob, memory, title, (f"look up the {title} article", f"find the article on {title}"),
                          (f"open {title}, the article to delete", f"reach {title} to delete it"))


TASKS: tuple[type[SiteTask], ...] = (
    InfoboxFact, BirthplaceFact, LastEditor, CategoryCount, EditSection, CreateArticle, AddCategory, UndoLastEdit,
    WatchPage, TalkNewTopic, MovePage,
    OpenHistory, CapitalArticle, CategoryPage, LatestDiff, EditorContributions, TalkPage, WhatLinksHere,
    FirstEditor, RevisionCount, CapitalPopulation,
    ProtectPage, CreateRedirect, UpdatePopulation, DeletePage,
)
