"""The wiki's deterministic seed data: an encyclopedia of a fictional continent, as code.

:func:`world` builds (once, from ``random.Random(SEED)``) four countries, their cities,
notable people and native species: 64 articles with infoboxes, sections, cross-links and
categories, each written in 2-5 revisions by different users at fixed timestamps
(2023-02 .. 2024-05), plus the infobox templates, category pages and a Main Page that links
everything. :func:`dump_xml` writes it as a MediaWiki XML export for ``importDump.php``.

Tasks draw their parameters from :func:`world` (no database access needed); their checks
compare the database after the episode with these facts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from xml.sax.saxutils import escape

#: Seed of every random choice in the seed data.
SEED = 20230201
#: Clock of the installer and of maintenance runs (unix time, 2023-01-01 00:00 UTC).
INSTALL_TIME = 1672531200
SITENAME = "Meridian Wiki"


@dataclass(frozen=True)
class User:
    """A seeded account: ``groups`` beyond ``user`` (``sysop``, ``bureaucrat``)."""

    name: str
    password: str
    groups: tuple[str, ...] = ()


#: The seeded users; Admin is created by the installer. Passwords are >= 10 characters (sysop policy).
USERS: tuple[User, ...] = (
    User("Admin", "Admin-pass-2023", ("sysop", "bureaucrat", "interface-admin")),
    User("Petra Lund", "petra-pass-2023", ("sysop",)),
    User("Marta Kell", "marta-pass-2023"),
    User("Orrin Vale", "orrin-pass-2023"),
    User("Lise Amberg", "lise-pass-2023"),
    User("Tobias Renn", "tobias-pass-2023"),
    User("Yara Quell", "yara-pass-2023"),
    User("Nico Ferro", "nico-pass-2023"),
)
EDITORS: tuple[str, ...] = tuple(u.name for u in USERS if u.name != "Admin")


@dataclass(frozen=True)
class Revision:
    user: str
    timestamp: str  # ISO 8601, UTC ("2023-02-01T10:00:00Z")
    comment: str
    text: str


@dataclass
class Article:
    """One page of the seed data with its history (oldest first)."""

    title: str
    kind: str  # country | city | person | species | template | category | main | project
    infobox: dict[str, str] = field(default_factory=dict)
    categories: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    revisions: list[Revision] = field(default_factory=list)
    ns: int = 0

    @property
    def text(self) -> str:
        return self.revisions[-1].text

    @property
    def last_editor(self) -> str:
        return self.revisions[-1].user


@dataclass
class World:
    articles: dict[str, Article]
    users: tuple[User, ...] = USERS

    def of_kind(self, kind: str) -> list[Article]:
        return [a for a in self.articles.values() if a.kind == kind]

    def category_members(self, category: str) -> list[str]:
        """Pages (any namespace) whose final text puts them in ``category``."""
        return sorted(a.title for a in self.articles.values() if category in a.categories)

    def all_categories(self) -> list[str]:
        return sorted({c for a in self.articles.values() for c in a.categories})

    def fingerprint(self) -> str:
        blob = json.dumps([(a.title, [(r.user, r.timestamp, r.comment, r.text) for r in a.revisions])
                           for a in self.articles.values()], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- vocabulary
COUNTRIES = ("Valdoria", "Karesh", "Ostmere", "Lunavia")
_CITY_ROOTS = ("Ash", "Bel", "Cor", "Dun", "Eld", "Fal", "Gar", "Hal", "Ister", "Jor", "Kel", "Lor", "Mar",
               "Nor", "Orm", "Pell", "Quen", "Ros", "Sel", "Tarn", "Ulm", "Ver", "Wend", "Yarl", "Zen", "Brim")
_CITY_ENDS = ("haven", "mere", "ford", "wick", "gate", "holm", "stead", "bridge", "port", "vale", "moor", "crest")
_RIVERS = ("Silverrun", "Ambel", "Korrin", "Whitewater", "Osk", "Lume", "Tessaly", "Greywash")
_FIRST = ("Aldric", "Benedetta", "Casimir", "Delphine", "Emeric", "Fiora", "Gideon", "Hester", "Isolde",
          "Jarek", "Katrin", "Leopold", "Mireille", "Nikolai", "Odessa", "Perrin", "Rosalind", "Silas",
          "Theodora", "Ulric", "Vesna", "Willem")
_LAST = ("Ashcombe", "Brightwater", "Castellane", "Dunmore", "Everly", "Falkenrath", "Greaves", "Holloway",
         "Istvan", "Jessamy", "Korvath", "Lindqvist", "Marchetti", "Northcott", "Oduya", "Penrose",
         "Quillon", "Ravensworth", "Sorensen", "Thackeray", "Umbrecht", "Varga")
OCCUPATIONS = ("Explorer", "Scientist", "Painter", "Politician", "Composer", "Architect", "Poet")
_FIELDS = {"Explorer": "the northern ice fields", "Scientist": "tidal physics", "Painter": "coastal landscapes",
           "Politician": "the Charter of Provinces", "Composer": "the Harbour Symphonies",
           "Architect": "the Glass Exchange", "Poet": "the Salt Road cycle"}
SPECIES_CLASSES = ("Birds", "Mammals", "Fish", "Reptiles", "Insects")
_SPECIES_A = ("Crested", "Lesser", "Golden", "Spotted", "Marsh", "Ridge", "Dusky", "Silver", "Painted",
              "Highland", "Banded", "Ember")
_SPECIES_B = {"Birds": ("heron", "warbler", "kestrel", "plover"), "Mammals": ("vole", "marten", "ibex", "hare"),
              "Fish": ("trout", "darter", "sturgeon"), "Reptiles": ("skink", "gecko", "adder"),
              "Insects": ("beetle", "dragonfly", "moth")}
_LATIN = ("Aquila", "Corvex", "Lutrina", "Pelagis", "Saurina", "Vespera", "Talpina", "Ardeola", "Sylvix")
STATUSES = ("Least concern", "Near threatened", "Vulnerable", "Endangered", "Critically endangered")
_FAMILIES = {"Birds": "Ardeidae", "Mammals": "Mustelidae", "Fish": "Salmonidae", "Reptiles": "Scincidae",
             "Insects": "Carabidae"}
_INDUSTRIES = ("fishing", "textiles", "shipbuilding", "glassmaking", "wine", "timber", "salt", "printing",
               "clockmaking", "tea trading")
_FESTIVALS = ("Lantern Night", "the Harvest Fair", "the River Regatta", "Midwinter Bells", "the Kite Festival")


def _uniq_name(rng: random.Random, make, used: set[str]) -> str:
    while True:
        name = make()
        if name not in used:
            used.add(name)
            return name


def _fmt_int(n: int) -> str:
    return f"{n:,}"


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# ----------------------------------------------------------------------------- wikitext builders
def _infobox(template: str, fields: dict[str, str]) -> str:
    lines = ["{{" + template]
    lines += [f"| {k} = {v}" for k, v in fields.items()]
    return "\n".join(lines) + "\n}}"


def _page(infobox: str, intro: str, sections: list[tuple[str, str]], cats: list[str], extra: str = "") -> str:
    parts = [infobox, intro] if infobox else [intro]
    parts += [f"== {h} ==\n{body}" for h, body in sections]
    if extra:
        parts.append(extra)
    if cats:
        parts.append("\n".join(f"[[Category:{c}]]" for c in cats))
    return "\n\n".join(parts) + "\n"


def _history(rng: random.Random, infobox: str, intro: str, sections: list[tuple[str, str]], cats: list[str],
             extra: str = "", old_fields: tuple[str, str] | None = None) -> list[tuple[str, str]]:
    """(comment, text) of each revision: the page grows section by section, categories come last.

    ``old_fields`` (infobox of the first revision, its comment) models a corrected figure.
    """
    n = rng.randint(2, 5)
    out: list[tuple[str, str]] = []
    first_box = old_fields[0] if old_fields else infobox
    # revision 1: infobox + intro; middle revisions add sections; the last one is the full page
    k = max(1, len(sections) // (n - 1))
    shown = 0
    for i in range(n):
        if i == 0:
            out.append(("Created page with infobox and introduction", _page(first_box, intro, [], [])))
            continue
        if i == n - 1:
            if old_fields and i == 1:
                comment = old_fields[1]
            else:
                comment = rng.choice(("Added categories and see also", "Categorised; copyedit",
                                      "Final copyedit, categories"))
            out.append((comment, _page(infobox, intro, sections, cats, extra)))
            continue
        prev, shown = shown, min(len(sections), shown + k)
        box = infobox if (old_fields and i >= 1) else first_box
        heads = ", ".join(h for h, _ in sections[prev:shown])
        comment = (f"Added {heads} section" + ("s" if "," in heads else "")) if heads else "Copyedit"
        if old_fields and i == 1:
            comment = f"{old_fields[1]}; added {heads}"
        out.append((comment, _page(box, intro, sections[:shown], [])))
    return out


# ----------------------------------------------------------------------------- the world
class _Writer:
    """Writes articles with their histories on one running clock, from the world's one ``rng``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.arts: dict[str, Article] = {}
        # timestamps: one running clock, 1-3 days (and some hours) between article histories
        self.clock = datetime(2023, 2, 1, 9, 0, 0, tzinfo=timezone.utc)

    def add(self, title: str, kind: str, box: dict[str, str], template: str, intro: str,
            sections: list[tuple[str, str]], cats: list[str], links: list[str], extra: str = "",
            old: tuple[dict[str, str], str] | None = None) -> None:
        rng = self.rng
        ib = _infobox(template, box) if template else ""
        old_fields = (_infobox(template, old[0]), old[1]) if old else None
        hist = _history(rng, ib, intro, sections, cats, extra, old_fields)
        users = rng.sample(EDITORS, min(len(hist), len(EDITORS)))
        revs = []
        t = self.clock
        for i, (comment, text) in enumerate(hist):
            user = users[i % len(users)]
            revs.append(Revision(user, _ts(t), comment, text))
            t += timedelta(days=rng.randint(3, 40), hours=rng.randint(0, 23), minutes=rng.randint(0, 59))
        self.clock += timedelta(days=rng.randint(1, 3), hours=rng.randint(1, 20), minutes=rng.randint(0, 59))
        self.arts[title] = Article(title, kind, dict(box), tuple(cats), tuple(h for h, _ in sections), tuple(links), revs)


def _draw_cities(rng: random.Random, used: set[str]) -> dict[str, list[dict]]:
    cities: dict[str, list[dict]] = {c: [] for c in COUNTRIES}
    for country in COUNTRIES:
        for j in range(6):
            name = _uniq_name(rng, lambda: rng.choice(_CITY_ROOTS) + rng.choice(_CITY_ENDS), used)
            pop = rng.randint(18, 900) * 1000 + rng.randint(0, 999)
            cities[country].append({
                "name": name, "country": country, "capital": j == 0,
                "population": pop if j else pop + 1_200_000,
                "founded": rng.randint(780, 1720), "elevation": rng.randint(2, 1400),
                "river": rng.choice(_RIVERS), "industry": rng.sample(_INDUSTRIES, 2),
                "festival": rng.choice(_FESTIVALS),
            })
    return cities


def _draw_people(rng: random.Random, used: set[str], all_cities: list[dict]) -> list[dict]:
    """Twenty people born in the cities; then every city's mayor (a name, drawn after them)."""
    people: list[dict] = []
    for i in range(20):
        name = _uniq_name(rng, lambda: f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", used)
        city = rng.choice(all_cities)
        born = datetime(rng.randint(1712, 1905), rng.randint(1, 12), rng.randint(1, 28))
        occ = OCCUPATIONS[i % len(OCCUPATIONS)]
        people.append({"name": name, "city": city, "born": born, "died": born.year + rng.randint(38, 91),
                       "occupation": occ})
    for c in all_cities:  # every city has a mayor (a person article when one was born there)
        c["mayor"] = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    return people


def _draw_species(rng: random.Random, used: set[str]) -> list[dict]:
    species: list[dict] = []
    for i in range(16):
        cls = SPECIES_CLASSES[i % len(SPECIES_CLASSES)]
        name = _uniq_name(rng, lambda: f"{rng.choice(_SPECIES_A)} {rng.choice(_SPECIES_B[cls])}", used)
        species.append({"name": name, "class": cls, "latin": f"{rng.choice(_LATIN)} {name.split()[0].lower()}is",
                        "status": rng.choice(STATUSES), "length": rng.randint(2, 180),
                        "country": rng.choice(COUNTRIES), "river": rng.choice(_RIVERS),
                        "lifespan": rng.randint(1, 40)})
    return species


def _country_articles(w: _Writer, cities: dict[str, list[dict]], native: dict[str, list[dict]]) -> None:
    rng = w.rng
    for country in COUNTRIES:
        cap = cities[country][0]
        pop = sum(c["population"] for c in cities[country]) * 3 + rng.randint(0, 99999)
        box = {"name": country, "capital": f"[[{cap['name']}]]", "population": _fmt_int(pop),
               "currency": rng.choice(("Crown", "Mark", "Ducat", "Florin")),
               "established": str(rng.randint(1050, 1650)), "language": f"{country[:-1]}ish"}
        others = ", ".join(f"[[{c['name']}]]" for c in cities[country][1:])
        intro = (f"'''{country}''' is a country in the west of the Meridian continent. Its capital and largest "
                 f"city is [[{cap['name']}]]; other major cities include {others}.")
        secs = [("History", f"The {country} crown was established in {box['established']}. The provinces were "
                            f"united after the long river wars along the {cap['river']}."),
                ("Geography", f"{country} spans coastal lowlands and a central plateau; its highest settlement "
                              f"lies at {max(c['elevation'] for c in cities[country])} metres."),
                ("Wildlife", "Native species include " + (", ".join(f"the [[{s['name']}]]" for s in native.get(country, []))
                                                         or "many birds of the coast") + "."),
                ("Cities", "\n".join(f"* [[{c['name']}]] (population {_fmt_int(c['population'])})"
                                     for c in cities[country]))]
        w.add(country, "country", box, "Infobox country", intro, secs, ["Countries"],
              [c["name"] for c in cities[country]])


def _city_articles(w: _Writer, all_cities: list[dict], born_in: dict[str, list[dict]]) -> None:
    rng = w.rng
    for c in all_cities:
        natives = born_in.get(c["name"], [])
        box = {"name": c["name"], "country": f"[[{c['country']}]]", "population": _fmt_int(c["population"]),
               "founded": str(c["founded"]), "elevation_m": str(c["elevation"]), "river": c["river"],
               "mayor": c["mayor"]}
        kind_word = "the capital of" if c["capital"] else "a " + rng.choice(("port city", "market town", "city",
                                                                             "river city")) + " in"
        intro = (f"'''{c['name']}''' is {kind_word} [[{c['country']}]] on the {c['river']} river. "
                 f"It was founded in {c['founded']} and has a population of {_fmt_int(c['population'])}.")
        secs = [("History", f"{c['name']} grew around a {rng.choice(('ford', 'monastery', 'harbour', 'toll bridge'))} "
                            f"founded in {c['founded']}. It received its town charter "
                            f"{rng.randint(40, 260)} years later."),
                ("Geography", f"The city lies at an elevation of {c['elevation']} metres on the banks of the "
                              f"{c['river']}."),
                ("Economy", f"The main industries are {c['industry'][0]} and {c['industry'][1]}."),
                ("Culture", f"Every year the city holds {c['festival']}, which draws visitors from across "
                            f"[[{c['country']}]].")]
        if natives:
            secs.append(("Notable people", "\n".join(f"* [[{p['name']}]], {p['occupation'].lower()}"
                                                      for p in natives)))
        twins = rng.sample([x for x in all_cities if x is not c], 2)
        secs.append(("See also", "\n".join(f"* [[{t['name']}]]" for t in twins)))
        cats = [f"Cities in {c['country']}"] + (["Capital cities"] if c["capital"] else [])
        old = None
        if rng.random() < 0.3:  # an early revision had a wrong population that a later one corrected
            wrong = dict(box, population=_fmt_int(c["population"] - rng.randint(1000, 9000)))
            old = (wrong, "Corrected population figure (census)")
        w.add(c["name"], "city", box, "Infobox settlement", intro, secs, cats,
              [c["country"]] + [p["name"] for p in natives] + [t["name"] for t in twins], old=old)


def _person_articles(w: _Writer, people: list[dict], all_cities: list[dict]) -> None:
    rng = w.rng
    for p in people:
        city = p["city"]
        box = {"name": p["name"], "birth_date": p["born"].strftime("%-d %B %Y"), "birth_place": f"[[{city['name']}]], "
               f"[[{city['country']}]]", "death_year": str(p["died"]), "occupation": p["occupation"],
               "known_for": _FIELDS[p["occupation"]]}
        intro = (f"'''{p['name']}''' ({p['born'].year}-{p['died']}) was a {city['country'][:-1]}ish "
                 f"{p['occupation'].lower()} from [[{city['name']}]], best known for {_FIELDS[p['occupation']]}.")
        secs = [("Early life", f"{p['name'].split()[0]} was born on {box['birth_date']} in [[{city['name']}]]."),
                ("Career", f"After studying in [[{rng.choice(all_cities)['name']}]], {p['name'].split()[1]} "
                           f"worked for {rng.randint(8, 40)} years on {_FIELDS[p['occupation']]}."),
                ("Legacy", f"A {rng.choice(('statue', 'street', 'school', 'prize'))} in [[{city['name']}]] is "
                           f"named after {p['name'].split()[1]}.")]
        w.add(p["name"], "person", box, "Infobox person", intro, secs, ["People", p["occupation"] + "s"],
              [city["name"], city["country"]])


def _species_articles(w: _Writer, species: list[dict]) -> None:
    rng = w.rng
    for s in species:
        box = {"name": s["name"], "binomial": f"''{s['latin']}''", "class": s["class"][:-1] if s["class"] != "Fish"
               else "Fish", "family": _FAMILIES[s["class"]], "status": s["status"], "length_cm": str(s["length"]),
               "range": f"[[{s['country']}]]"}
        intro = (f"The '''{s['name'].lower()}''' (''{s['latin']}'') is a species native to "
                 f"[[{s['country']}]], mostly found along the {s['river']}.")
        secs = [("Description", f"Adults reach a length of about {s['length']} cm and live up to "
                                f"{s['lifespan']} years."),
                ("Habitat", f"It lives in {rng.choice(('reed beds', 'upland meadows', 'cold streams', 'pine forest'))}"
                            f" of [[{s['country']}]]."),
                ("Conservation", f"The species is listed as ''{s['status']}''.")]
        cats = ["Species", s["class"]] + (["Endangered species"] if s["status"] in STATUSES[3:] else [])
        w.add(s["name"], "species", box, "Infobox species", intro, secs, cats, [s["country"]])


@functools.lru_cache(maxsize=1)
def world() -> World:
    """The whole seed data (deterministic; cached).

    Every draw comes from one ``random.Random(SEED)`` in a fixed order (cities, people and
    mayors, species, then the articles of countries, cities, people and species), so the
    steps below must keep their order.
    """
    rng = random.Random(SEED)
    used: set[str] = set()
    cities = _draw_cities(rng, used)
    all_cities = [c for cs in cities.values() for c in cs]
    people = _draw_people(rng, used, all_cities)
    species = _draw_species(rng, used)
    born_in: dict[str, list[dict]] = {}
    for p in people:
        born_in.setdefault(p["city"]["name"], []).append(p)
    native: dict[str, list[dict]] = {}
    for s in species:
        native.setdefault(s["country"], []).append(s)
    w = _Writer(rng)
    _country_articles(w, cities, native)
    _city_articles(w, all_cities, born_in)
    _person_articles(w, people, all_cities)
    _species_articles(w, species)
    _templates(w.arts, w.clock)
    _category_pages(w.arts)
    _main_page(w.arts, cities, people, species)
    return World(w.arts)


def _templates(arts: dict[str, Article], clock: datetime) -> None:
    rows = {
        "Infobox country": ("name", "capital", "population", "currency", "established", "language"),
        "Infobox settlement": ("name", "country", "population", "founded", "elevation_m", "river", "mayor"),
        "Infobox person": ("name", "birth_date", "birth_place", "death_year", "occupation", "known_for"),
        "Infobox species": ("name", "binomial", "class", "family", "status", "length_cm", "range"),
    }
    labels = {"elevation_m": "Elevation (m)", "length_cm": "Length (cm)", "birth_date": "Born",
              "birth_place": "Birthplace", "death_year": "Died", "known_for": "Known for"}
    t = datetime(2023, 1, 20, 12, 0, tzinfo=timezone.utc)
    for name, fields in rows.items():
        body = ['{| class="infobox" style="float:right; width:22em; border:1px solid #a2a9b1; '
                'background:#f8f9fa; margin:0 0 1em 1em; padding:4px"',
                '|+ style="font-size:125%; font-weight:bold" | {{{name}}}']
        for f in fields[1:]:
            body.append(f"|-\n! style=\"text-align:left\" | {labels.get(f, f.capitalize())}\n| {{{{{{{f}|}}}}}}")
        body.append("|}<noinclude>\nInfobox used by the articles of this wiki. Parameters: "
                    + ", ".join(fields) + ".\n[[Category:Infobox templates]]</noinclude>")
        text = "\n".join(body) + "\n"
        arts["Template:" + name] = Article("Template:" + name, "template", categories=("Infobox templates",),
                                           revisions=[Revision("Admin", _ts(t), "Infobox template", text)], ns=10)
        t += timedelta(hours=3)


_CATEGORY_TEXT = {
    "Countries": "Sovereign countries of the Meridian continent.",
    "Capital cities": "Seats of government of the countries of Meridian.",
    "People": "Biographies of notable people.",
    "Species": "Animal species native to Meridian.",
    "Endangered species": "Species listed as endangered or critically endangered.",
}


def _category_pages(arts: dict[str, Article]) -> None:
    cats = sorted({c for a in arts.values() for c in a.categories})
    t = datetime(2023, 1, 25, 10, 0, tzinfo=timezone.utc)
    for c in cats:
        if c.startswith("Cities in "):
            desc = f"Cities and towns of [[{c[len('Cities in '):]}]]."
        elif c in SPECIES_CLASSES:
            desc = f"{c} native to Meridian. See also [[:Category:Species]]."
        elif c[:-1] in OCCUPATIONS:
            desc = f"{c} from Meridian. See also [[:Category:People]]."
        else:
            desc = _CATEGORY_TEXT.get(c, f"Pages about {c.lower()}.")
        title = "Category:" + c
        arts[title] = Article(title, "category", revisions=[Revision("Petra Lund", _ts(t), "New category",
                                                                     desc + "\n")], ns=14)
        t += timedelta(minutes=37)


def _main_page(arts: dict[str, Article], cities: dict[str, list[dict]], people: list[dict],
               species: list[dict]) -> None:
    featured = people[3]
    lines = [
        "__NOTOC__",
        f"'''Welcome to the {SITENAME}''', the free encyclopedia of the Meridian continent that anyone "
        f"with an account can edit. It has {len([a for a in arts.values() if a.ns == 0]) + 1} articles about "
        "its countries, cities, people and wildlife.",
        "",
        "== Featured article ==",
        f"'''[[{featured['name']}]]''' was a {featured['occupation'].lower()} from "
        f"[[{featured['city']['name']}]], best known for {_FIELDS[featured['occupation']]}.",
        "",
        "== Countries and cities ==",
    ]
    for country, cs in cities.items():
        lines.append(f"* '''[[{country}]]''': " + " · ".join(f"[[{c['name']}]]" for c in cs))
    lines += ["", "== People ==",
              " · ".join(f"[[{p['name']}]]" for p in people), "",
              "== Wildlife ==",
              " · ".join(f"[[{s['name']}]]" for s in species), "",
              "== Browse by category ==",
              " · ".join(f"[[:Category:{c}]]" for c in ("Countries", "Capital cities", "People", "Species",
                                                          "Endangered species")), "",
              "== Taking part ==",
              "Log in to edit. Please add an edit summary to every change, and read the "
              f"[[{SITENAME}:Style guide|style guide]] first."]
    text = "\n".join(lines) + "\n"
    first = ("'''Welcome to the Meridian Wiki.''' This wiki is being set up.\n")
    arts["Main Page"] = Article("Main Page", "main", revisions=[
        Revision("Admin", "2023-01-15T08:00:00Z", "Welcome text", first),
        Revision("Admin", "2024-06-01T08:00:00Z", "Main Page: links to every article", text)])
    guide = (f"This is the style guide of the {SITENAME}.\n\n== Articles ==\nStart every article with an "
             "infobox and a one-sentence introduction. Add sections with level-2 headings.\n\n"
             "== Categories ==\nEvery article belongs to at least one category.\n")
    sidebar = ("* navigation\n** mainpage|mainpage-description\n** recentchanges-url|recentchanges\n"
               "** Category:Countries|Countries\n** Category:People|People\n** Category:Species|Species\n"
               f"** {SITENAME}:Style guide|Style guide\n* SEARCH\n* TOOLBOX\n* LANGUAGES\n")
    arts["MediaWiki:Sidebar"] = Article("MediaWiki:Sidebar", "interface", revisions=[
        Revision("Admin", "2023-01-16T09:00:00Z", "Sidebar without external links", sidebar)], ns=8)
    title = f"{SITENAME}:Style guide"
    arts[title] = Article(title, "project", revisions=[Revision("Admin", "2023-01-16T09:30:00Z",
                                                                "Style guide", guide)], ns=4)


# ----------------------------------------------------------------------------- XML dump
def dump_xml(w: World | None = None) -> str:
    """The seed data as a MediaWiki XML export (version 0.11) for ``importDump.php``."""
    w = w or world()
    out = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">']
    for a in w.articles.values():
        out.append(f"  <page>\n    <title>{escape(a.title)}</title>\n    <ns>{a.ns}</ns>")
        for r in a.revisions:
            out.append("    <revision>\n"
                       f"      <timestamp>{r.timestamp}</timestamp>\n"
                       f"      <contributor><username>{escape(r.user)}</username></contributor>\n"
                       f"      <comment>{escape(r.comment)}</comment>\n"
                       "      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
                       f"      <text xml:space=\"preserve\">{escape(r.text)}</text>\n"
                       "    </revision>")
        out.append("  </page>")
    out.append("</mediawiki>\n")
    return "\n".join(out)


def counts(w: World | None = None) -> dict[str, int]:
    """What the seed data holds (what ``setup`` reports)."""
    w = w or world()
    return {"articles": sum(1 for a in w.articles.values() if a.ns == 0 and a.kind != "main"),
            "pages": len(w.articles),
            "revisions": sum(len(a.revisions) for a in w.articles.values()),
            "categories": len(w.all_categories()),
            "users": len(w.users)}
