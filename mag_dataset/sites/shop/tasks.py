"""Live tasks on the shop (WebArena's shopping and shopping_admin intents), with state checks and experts.

Storefront tasks log in as the customer ``emma.smith@shop.test`` (or browse anonymously);
dashboard tasks as the staff user ``admin@shop.test``. Parameters come from
:func:`~mag_dataset.sites.shop.seed_data.seed_data`; checks read the Oscar database after the
episode (what the shop stored, not what the last page shows) and each expert decides from the
observation only, as an agent must.

Each template states its goal in several WebArena-style phrasings (``intent_templates``), and
its expert states what each step is for (:func:`~mag_dataset.live.expert_kit.why`), from which
the recorder writes the step's guide. Experts demonstrate as a person does: some episodes take a
seeded detour and correct it (a broader search refined to the exact product, a wrong account
page or dashboard menu first, a tab that turns out not to hold the field, a quantity fixed in
the basket), drawn once per episode with ``random.Random(f"{task_id}:{seed}:detour")``, so the
lengths of a template's episodes vary.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import sys
from decimal import Decimal
from typing import Any, ClassVar

from mag_dataset.actions import ActionType
from mag_dataset.live import expert_kit as kit
from mag_dataset.live.expert_kit import Decision
from mag_dataset.live.observe import Element, Observation
from mag_dataset.sites.shop import ShopSite
from mag_dataset.sites.shop.seed_data import (CATEGORY_TREE, COUNTRY_NAMES, CITIES, FIRST, LAST, ORDER_PIPELINE,
                                              STAFF, STREETS, TASK_CUSTOMERS, seed_data)
from mag_dataset.sites.task import SiteTask, js_entries

CUSTOMER = TASK_CUSTOMERS[0]["email"]
ADMIN = STAFF["email"]


# ----------------------------------------------------------------------------- shop page helpers
# generic finding and acting come from the one expert kit (mag_dataset.live.expert_kit); these
# read the shop's own pages
def _h1(ob: Observation) -> str:
    """The page's first heading (a product page's title)."""
    el = kit.find(ob, lambda e: e.tag == "h1")
    return el.text if el is not None else ""


def _money_in(text: str) -> list[Decimal]:
    """The pound amounts written in ``text``, in order."""
    return [Decimal(m.replace(",", "")) for m in re.findall(r"£\s?([0-9][0-9,]*\.[0-9]{2})", text)]


def _shop_in_view(ob: Observation, el: Element | None) -> bool:
    """Whether ``el``'s vertical centre lies in the viewport (any element, candidate or not)."""
    if el is None or el.bbox is None:
        return False
    return 0 <= (el.bbox[1] + el.bbox[3]) / 2 <= kit.view_height(ob)


def _shop_go_back(*purposes: str) -> Decision:
    """The browser's Back button, with what it is for."""
    d = kit.why(Decision(ActionType.GO_BACK), *purposes)
    assert d is not None
    return d


def _shop_broad_query(product: dict[str, Any]) -> str:
    """A product's title without its colour ("Brainy 1000-Piece Puzzle"): a first, broader query."""
    return " ".join(w for w in product["title"].split() if w != product["colour"])


def _shop_submit_search(ob: Observation, box: Element, *purposes: str) -> Decision | None:
    """Submit the search box ``box`` with its form's Search button (not Enter: the recorder's
    observation takes the keyboard focus off the field, so an Enter after typing goes nowhere)."""
    form = box.parent
    while form is not None and form in ob.elements and ob.elements[form].tag != "form":
        form = ob.elements[form].parent
    btn = kit.find(ob, lambda e: ((e.tag == "button" and kit.norm(e.text) == "search")
                                  or (e.tag == "input" and e.attrs.get("type") == "submit"))
                   and form is not None and _shop_inside(ob, e, form))
    return kit.why(kit.click(ob, btn or kit.button(ob, "Search")), *purposes)


def _search_and_open(ob: Observation, memory: dict[str, Any], product: dict[str, Any], aim: str, *,
                     refine: bool = False, stray: bool = False) -> Decision | None:
    """Storefront: search ``product``'s title and open its page (None once on that page).

    Args:
        aim: what the product page is opened for, an infinitive clause ("check its price").
        refine: the detour of a person who first searches the brand and kind without the colour
            (:func:`_shop_broad_query`), then narrows the query to the full title.
        stray: with ``refine``, the person first opens another product of the broader results
            (another colour), sees it is not the one and goes back, then narrows the query.
    """
    title = product["title"]
    path = kit.path(ob)
    if kit.norm(_h1(ob)) == kit.norm(title) and "/catalogue/" in path:
        return None
    broad = _shop_broad_query(product)
    q = kit.norm((kit.query(ob).get("q") or [""])[0])
    results = "/search/" in path
    if refine and stray and memory.get(f"stray:{title}") and not memory.get(f"back:{title}") and not results:
        other = memory[f"stray:{title}"]
        return kit.once(memory, f"back:{title}", _shop_go_back(
            f"return to the results, since the {other} is not the {product['colour'].lower()} one",
            f"leave the {other}, which is not the product asked for"))
    if refine and results and q == kit.norm(broad):
        memory[f"broad:{title}"] = True
        if stray and not memory.get(f"stray:{title}"):
            other = kit.find(ob, lambda e: e.tag == "a" and "/catalogue/" in e.attrs.get("href", "")
                             and bool(e.attrs.get("title")) and kit.norm(e.attrs["title"]) != kit.norm(title),
                             prefer_visible=True)
            d = kit.click(ob, other)
            if other is not None and d is not None:
                name = other.attrs["title"]
                if not kit.is_scroll(d):
                    memory[f"stray:{title}"] = name
                return kit.why(d, f"open the {name} from the results to look at it more closely",
                               f"check whether the {name} is the product you want")
    if results and q == kit.norm(title):
        hit = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.attrs.get("title")) == kit.norm(title))
        if hit is not None:
            return kit.why(kit.click(ob, hit), f"open the page of the {title} to {aim}",
                           f"go to the product page of the {title}, where you can {aim}")
    box = kit.require(kit.field(ob, "q"), "the search box")
    if refine and not memory.get(f"broad:{title}"):
        if (box.value or "") != broad:
            return kit.why(kit.fill(ob, box, broad), f"start with a broader search for {broad}, leaving out the colour",
                           f"look through the {broad} range before picking the {product['colour'].lower()} one")
        return _shop_submit_search(ob, box, f"see every product that matches {broad}",
                       f"run the broader search for {broad} first")
    if (box.value or "") != title:
        if refine:
            return kit.why(kit.fill(ob, box, title),
                           f"narrow the results down to the {product['colour'].lower()} one by searching its full name",
                           f"refine the search to the exact product, the {title}")
        return kit.why(kit.fill(ob, box, title), f"look up the {title} in the catalogue",
                       f"find the {title} so you can {aim}")
    return _shop_submit_search(ob, box, f"run the search for the {title}", f"list the products that match the {title}")


def _dashboard_menu(ob: Observation, menu: str, item: str, menu_why: tuple[str, ...],
                    item_why: tuple[str, ...]) -> Decision | None:
    """Dashboard navigation bar: open ``menu`` then click ``item``, each with what it is for."""
    entry = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == kit.norm(item) and "dropdown-item" in e.attrs.get("class", ""))
    if entry is not None and kit.visible(ob, entry):  # the menu is open
        return kit.why(kit.click(ob, entry), *item_why)
    top = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == kit.norm(menu) and "dropdown-toggle" in e.attrs.get("class", ""))
    return kit.why(kit.click(ob, top), *menu_why)


def _shop_debug(task: ShopTask, ob: Observation, d: Decision | None) -> None:
    if os.environ.get("MAG_SHOP_DEBUG"):
        cands = [f"{c.id}:{c.role}:{c.text[:30]}" for c in ob.candidates]
        print(f"[{task.template}] {kit.location(ob)} -> {d}\n   {cands[:80]}", file=sys.stderr)


class ShopTask(SiteTask):
    """Base of the shop's tasks: the expert wraps :meth:`decide` (debug print with ``MAG_SHOP_DEBUG=1``)."""

    site_class = ShopSite
    template: ClassVar[str]
    #: The detours this template's expert may take, and the share of episodes that take one.
    detours: ClassVar[tuple[str, ...]] = ()
    detour_share: ClassVar[float] = 0.6

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        d = self.decide(ob, memory)
        _shop_debug(self, ob, d)
        return d

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:  # pragma: no cover
        raise NotImplementedError

    # -- how this episode is demonstrated, drawn once from the task's seed and kept in memory
    def detour(self, memory: dict[str, Any]) -> str | None:
        """This episode's detour (one of :attr:`detours`), or None for a straight demonstration."""
        if "detour" not in memory:
            rng = random.Random(f"{self.get_task_id()}:{self.seed}:detour")
            memory["detour"] = rng.choice(self.detours) if self.detours and rng.random() < self.detour_share else None
        return memory["detour"]

    # -- state helpers
    def _user_id(self, email: str) -> int:
        return int(self.site.query("select id from auth_user where email = ?", (email,))[0][0])

    def _product_id(self, upc: str) -> int:
        return int(self.site.query("select id from catalogue_product where upc = ?", (upc,))[0][0])

    # -- WebArena's program_html: what check() reads, as the logged-in user sees it on a shop page
    def _product_path(self, upc: str) -> str:
        slug, pk = self.site.query("select slug, id from catalogue_product where upc = ?", (upc,))[0]
        return f"/catalogue/{slug}_{pk}/"



# ----------------------------------------------------------------------------- WebArena's program_html locators
#: ``entry`` expressions of :func:`_js_entries`: a basket or order line as ``<title> x <quantity>``; an
#: address as its lines joined by commas; a row of a table of headers and values as ``<header>: <value>``
_JS_BASKET_LINE = "x.querySelector('h3').innerText.trim() + ' x ' + x.querySelector('input[name$=quantity]').value"
_JS_ORDER_LINE = "x.querySelector('h3').innerText.trim() + ' x ' + x.querySelector('.text-center').innerText.trim()"
_JS_ADDRESS = "x.innerText.split('\\n').map(s => s.trim()).filter(s => s).join(', ')"
_JS_ROW = "x.cells[0].innerText.trim() + ': ' + x.cells[1].innerText.trim()"
#: a heading with the paragraph under it, as ``<heading>: <text>`` (Oscar's ``linebreaks`` puts a
#: paragraph in a paragraph, which the browser splits into an empty one and the text)
_JS_HEADED_TEXT = ("x.innerText.trim() + ': ' + [x.nextElementSibling, x.nextElementSibling?.nextElementSibling]"
                   ".filter(e => e?.tagName === 'P').map(e => e.innerText.trim()).filter(s => s).join(' ')")
#: The basket page's lines.
_JS_BASKET = js_entries("#basket_formset .basket-items", _JS_BASKET_LINE)
#: The thank-you page of the order just placed: its lines and how many, its shipping address, its
#: delivery instructions and its discounts (``|Discount <offer>|``).
_JS_ORDER_PLACED = " + ".join((js_entries("div.basket-items", _JS_ORDER_LINE),
                               "'|lines: ' + document.querySelectorAll('div.basket-items').length + '|'",
                               js_entries(".shipping-payment address", _JS_ADDRESS),
                               js_entries(".shipping-payment h4", _JS_HEADED_TEXT),
                               js_entries("#basket_totals td .badge", "x.parentElement.innerText.trim()")))


def _address_entry(a: dict[str, Any]) -> str:
    """The entry :data:`_JS_ADDRESS` reads for the address ``a`` (:func:`_shop_address`'s keys)."""
    return "|" + ", ".join((f"{a['first']} {a['last']}", a["line1"], a["city"], a["postcode"], a["country"])) + "|"


def _in_stock(rng: random.Random) -> dict[str, Any]:
    return rng.choice([p for p in seed_data()["products"] if p["stock"] > 0])


def _shop_product_params(p: dict[str, Any]) -> dict[str, Any]:
    return {"title": p["title"], "upc": p["upc"], "colour": p["colour"]}


def _shop_address(rng: random.Random) -> dict[str, Any]:
    """A shipping address drawn from the seed's names, streets and cities."""
    city, cc = rng.choice(CITIES)
    return {"first": rng.choice(FIRST), "last": rng.choice(LAST),
            "line1": f"{rng.randint(1, 240)} {rng.choice(STREETS)}", "city": city,
            "postcode": f"{rng.choice('ABCDEFGH')}{rng.choice('JKLMNP')}{rng.randint(1, 19)} {rng.randint(1, 9)}AB"
            if cc in ("GB", "IE") else str(rng.randint(10000, 99999)), "country": COUNTRY_NAMES[cc], "cc": cc}


def _shop_address_form(ob: Observation, memory: dict[str, Any], p: dict[str, Any], *, always_country: bool,
                       notes: str | None = None) -> Decision | None:
    """Fill an Oscar address form (checkout or address book) with ``p``'s address; None once filled."""
    who = f"{p['first']} {p['last']}"
    steps = (("first_name", p["first"], (f"put the address in {who}'s name",
                                         f"give {p['first']} as the first name on the address")),
             ("last_name", p["last"], (f"complete the name on the address, {who}", f"add {who}'s last name")),
             ("line1", p["line1"], (f"give {p['line1']} as the street address", "say which street the address is on")),
             ("line4", p["city"], (f"set the city to {p['city']}", f"say the address is in {p['city']}")),
             ("postcode", p["postcode"], (f"give the postcode {p['postcode']}",
                                          f"add the postcode of {who}'s address")))
    for name, value, purposes in steps:
        d = kit.fill(ob, kit.field(ob, name), value)
        if d is not None:
            return kit.why(d, *purposes)
    country = kit.field(ob, "country")
    if country is not None and not memory.get("country") and (always_country or (country.value or "") != p["cc"]):
        land = f"the {p['country']}" if p["country"].startswith("United ") else p["country"]
        return kit.why(kit.once(memory, "country", kit.select(ob, country, p["country"])),
                       f"set the country to {land}", f"make the address one in {land}")
    if notes:
        d = kit.fill(ob, kit.field(ob, "notes"), notes)
        if d is not None:
            return kit.why(d, "pass the delivery note on to the courier", "leave the courier the note asked for")
    return None


def _shop_checkout_pages(ob: Observation, memory: dict[str, Any], p: dict[str, Any], what: str,
                         notes: str | None = None) -> Decision | None:
    """The checkout after the basket (shipping address, method, payment, preview), with ``p``'s
    address; ``what`` names what is bought ("the Nova Green Charger"). None off those pages."""
    path, who = kit.path(ob), f"{p['first']} {p['last']}"
    if "/checkout/preview/" in path:
        return kit.why(kit.click(ob, kit.button(ob, "Place order")), f"buy {what} and have the order shipped to {who}",
                       f"place the order for {what}")
    if "/checkout/payment-details/" in path:
        return kit.why(kit.click(ob, kit.button(ob, "Continue") or kit.link(ob, "Continue")),
                       "go on to review the order before placing it", "move past the payment step to the order preview")
    if "/checkout/shipping-method/" in path:
        return kit.why(kit.click(ob, kit.button(ob, "Select option")), "take the shop's delivery method for this order",
                       "choose how the order is delivered")
    if "/checkout/shipping-address/" in path:
        d = _shop_address_form(ob, memory, p, always_country=False, notes=notes)
        if d is not None:
            return d
        return kit.why(kit.click(ob, kit.button(ob, "Continue")), f"ship the order to {who} in {p['city']}",
                       "use this new address for the delivery and go on")
    return None


# ----------------------------------------------------------------------------- storefront
class AddToBasket(ShopTask):
    template = "add_to_basket"
    intent_template = 'Search the shop for "{title}" and add {quantity} of it to your basket.'
    intent_templates = (
        intent_template,
        'Add {quantity} "{title}" to my shopping cart.',
        'I want {quantity} of the "{title}". Put them in my basket.',
        'Put {quantity} units of "{title}" in my cart, please.',
    )
    user = CUSTOMER
    detours = ("refine", "check")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = _in_stock(rng)
        return {**_shop_product_params(p), "quantity": rng.randint(2, min(5, p["stock"]))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query(
            "select l.quantity from basket_line l join basket_basket b on b.id = l.basket_id "
            "join catalogue_product p on p.id = l.product_id where b.owner_id = ? and b.status = 'Open' and p.upc = ?",
            (self._user_id(CUSTOMER), self.params["upc"]))
        got = sum(r[0] for r in rows)
        return got == self.params["quantity"], f"basket holds {got} of {self.params['upc']}, want {self.params['quantity']}"

    def program_html(self) -> list[dict[str, Any]]:
        return self.page_shows("/basket/", _JS_BASKET, f"|{self.params['title']} x {self.params['quantity']}|")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, detour = self.params, self.detour(memory)
        title, n = p["title"], p["quantity"]
        if memory.get("added"):
            if detour == "check" and not kit.path(ob).startswith("/basket/"):
                return kit.why(kit.click(ob, kit.link(ob, "View basket", prefer_visible=True)),
                               f"check that the basket now holds {n} of the {title}",
                               f"make sure all {n} of them made it into the basket")
            return kit.why(kit.finish(), f"put {n} of the {title} in your basket",
                           f"have {n} of the {title} waiting in your basket")
        d = _search_and_open(ob, memory, p, "add it to your basket", refine=detour == "refine")
        if d is not None:
            return d
        d = kit.fill(ob, kit.field(ob, "quantity"), str(n))
        if d is not None:
            return kit.why(d, f"ask for {n} of them instead of one", f"set the quantity to the {n} you want")
        return kit.once(memory, "added", kit.why(kit.click(ob, kit.button(ob, "Add to basket")),
                                                 f"put {n} of the {title} in your basket",
                                                 f"add the {n} units to your basket"))


class AddToWishlist(ShopTask):
    template = "add_to_wishlist"
    intent_template = 'Find "{title}" in the shop and add it to your wish list.'
    intent_templates = (
        intent_template,
        'Save "{title}" to my wish list for later.',
        'Add "{title}" to my wish list.',
        'I like the "{title}"; put it on my wish list.',
    )
    user = CUSTOMER
    detours = ("account", "stray", "refine")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return _shop_product_params(rng.choice(seed_data()["products"]))

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query(
            "select count(*) from wishlists_line l join wishlists_wishlist w on w.id = l.wishlist_id "
            "join catalogue_product p on p.id = l.product_id where w.owner_id = ? and p.upc = ?",
            (self._user_id(CUSTOMER), self.params["upc"]))
        n = rows[0][0]
        return n >= 1, f"{n} wish-list line(s) for {self.params['upc']}"

    def program_html(self) -> list[dict[str, Any]]:
        # the product's page names each of the user's wish lists that hold it
        lists = js_entries("form[action*='/wishlists/'] span", "x.innerText.trim()")
        return self.page_shows(self._product_path(self.params["upc"]), lists, "|Product is in '")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, detour, path = self.params, self.detour(memory), kit.path(ob)
        title = p["title"]
        if memory.get("added"):
            return kit.why(kit.finish(), f"keep the {title} on your wish list for later",
                           f"save the {title} to your wish list")
        if detour == "account" and not memory.get("lists_seen"):
            # a person first looks at the wish lists in the account, then finds the product
            if path.startswith("/accounts/wishlists/"):
                memory["lists_seen"] = True
            elif path.startswith("/accounts/"):
                return kit.why(kit.click(ob, kit.link(ob, "Wish Lists", prefer_visible=True)),
                               "see which wish lists you already keep",
                               f"check whether the {title} is already on a wish list")
            else:
                return kit.why(kit.click(ob, kit.link(ob, "Account", prefer_visible=True)),
                               "look at the wish lists kept in your account first",
                               "find your wish lists among your account pages")
        d = _search_and_open(ob, memory, p, "save it to your wish list", refine=detour in ("refine", "stray"),
                             stray=detour == "stray")
        if d is not None:
            return d
        return kit.once(memory, "added", kit.why(kit.click(ob, kit.button(ob, "Add to wish list")),
                                                 f"save the {title} to your wish list",
                                                 f"keep the {title} for later on your wish list"))


class ProductCategory(ShopTask):
    template = "product_category"
    intent_template = 'Which category of the shop is "{title}" listed in? Answer with the category name.'
    intent_templates = (
        intent_template,
        'What category does "{title}" belong to?',
        'Under which category is the "{title}" sold?',
        'Tell me the product category of "{title}".',
    )
    answer_task = True
    detours = ("section", "refine")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = rng.choice(seed_data()["products"])
        return {**_shop_product_params(p), "category": p["category"], "top": p["top"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = kit.norm(self.params["category"]) in kit.norm(answer)
        return ok, f"answer {answer!r}, want {self.params['category']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["category"]]}

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, detour, path = self.params, self.detour(memory), kit.path(ob)
        title = p["title"]
        if memory.get("section_seen") and "/catalogue/category/" in path:
            back = _shop_go_back(f"return to the page of the {title} to read its exact category",
                                 f"go back to the {title}, whose breadcrumb names its category")
            return kit.once(memory, "back", back)
        d = _search_and_open(ob, memory, p, "see which category it is filed under", refine=detour == "refine")
        if d is not None:
            return d
        crumbs = kit.find_all(ob, lambda e: e.tag == "a" and "/catalogue/category/" in e.attrs["href"]
                              and "breadcrumb" in ob.elements[e.parent].attrs["class"])
        if not crumbs:
            return None
        if detour == "section" and len(crumbs) > 1 and not memory.get("section_seen"):
            # a person first opens the wider section the breadcrumb starts with, then comes back
            return kit.once(memory, "section_seen", kit.why(
                kit.click(ob, crumbs[0]),
                f"look at the wider {crumbs[0].text} section first, to see how the {title} is filed",
                f"check whether the {title} sits straight under {crumbs[0].text}"))
        return kit.why(kit.finish(crumbs[-1].text), f"tell the user which category the {title} is listed in",
                       f"report the category the page's breadcrumb gives for the {title}")


class ProductPrice(ShopTask):
    template = "product_price"
    intent_template = 'How much does "{title}" cost in the shop? Answer with the price.'
    intent_templates = (
        intent_template,
        'What is the price of "{title}"?',
        'How much would one "{title}" cost me?',
        'Tell me the current price of the "{title}".',
    )
    answer_task = True
    detours = ("refine", "details")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = rng.choice(seed_data()["products"])
        return {**_shop_product_params(p), "price": p["price"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"[0-9]+(?:\.[0-9]+)?", (answer or "").replace(",", ""))
        ok = any(Decimal(g) == Decimal(self.params["price"]) for g in got)
        return ok, f"answer {answer!r}, want {self.params['price']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["price"]]}

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, detour = self.params, self.detour(memory)
        d = _search_and_open(ob, memory, p, "check its price", refine=detour == "refine")
        if d is not None:
            return d
        if detour == "details" and not memory.get("details_seen"):
            # a person reads on to the product information table (prices with and without tax) first
            row = kit.find(ob, lambda e: e.tag == "h2" and kit.norm(e.text) == "product information")
            if row is not None and row.bbox is not None and not _shop_in_view(ob, row):
                return Decision(ActionType.SCROLL, direction="down" if row.bbox[1] > 0 else "up")
            memory["details_seen"] = True
        price = kit.find(ob, lambda e: e.tag == "p" and "price_color" in e.attrs.get("class", ""))
        if price is None or not _money_in(price.text):
            return None
        return kit.why(kit.finish(f"£{_money_in(price.text)[0]}"), f"tell the user what the {p['title']} costs",
                       "report the price the product page shows")


class Checkout(ShopTask):
    template = "checkout"
    intent_template = ('Buy one "{title}" and have it shipped to {first} {last}, {line1}, {city}, {postcode}, '
                       '{country}. Place the order.')
    intent_templates = (
        intent_template,
        'Order one "{title}" for delivery to {first} {last} at {line1}, {city}, {postcode}, {country}.',
        'I want to buy a "{title}". Ship it to {first} {last}, {line1}, {city} {postcode}, {country}.',
        'Purchase "{title}" and send it to this address: {first} {last}, {line1}, {city}, {postcode}, {country}.',
    )
    user = CUSTOMER
    detours = ("refine", "basket")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {**_shop_product_params(_in_stock(rng)), **_shop_address(rng)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        seeded = {o["number"] for o in seed_data()["orders"]}
        rows = self.site.query(
            "select o.number, a.first_name, a.last_name, a.line1, a.line4, a.postcode, a.country_id from order_order o "
            "join order_shippingaddress a on a.id = o.shipping_address_id join order_line l on l.order_id = o.id "
            "where o.user_id = ? and l.upc = ?", (self._user_id(CUSTOMER), self.params["upc"]))
        new = [r for r in rows if r[0] not in seeded]
        if not new:
            return False, f"no new order of {self.params['upc']} by the customer"
        p = self.params
        want = (p["first"], p["last"], p["line1"], p["city"], p["postcode"].upper(), p["cc"])
        for r in new:
            got = (r[1], r[2], r[3], r[4], (r[5] or "").upper(), r[6])
            if tuple(kit.norm(x) for x in got) == tuple(kit.norm(x) for x in want):
                return True, f"order {r[0]} ships to {', '.join(got)}"
        return False, f"new order(s) ship elsewhere: {new}"

    def program_html(self) -> list[dict[str, Any]]:
        # Oscar's thank-you page shows the order last placed in the browser's session (none: the home page)
        return self.page_shows("/checkout/thank-you/", _JS_ORDER_PLACED, f"|{self.params['title']} x ",
                                _address_entry(self.params))

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path, detour = self.params, kit.path(ob), self.detour(memory)
        title, who = p["title"], f"{p['first']} {p['last']}"
        if "/checkout/thank-you/" in path:
            return kit.why(kit.finish(), f"buy the {title} and have it shipped to {who} in {p['city']}",
                           f"get the {title} ordered for {who}")
        d = _shop_checkout_pages(ob, memory, p, f"the {title}")
        if d is not None:
            return d
        if path.startswith("/basket/"):
            return kit.why(kit.click(ob, kit.link(ob, "Proceed to checkout")),
                           "start the checkout for what is in your basket",
                           f"pay for the {title} in your basket")
        if memory.get("added"):
            if detour == "basket":  # a person checks the basket before paying
                return kit.why(kit.click(ob, kit.link(ob, "View basket", prefer_visible=True)),
                               "check the items in your basket before paying",
                               f"make sure the {title} is in the basket")
            return kit.why(kit.click(ob, kit.link(ob, "Checkout now", prefer_visible=True)),
                           f"go straight to the checkout with the {title}", "start paying for the order right away")
        d = _search_and_open(ob, memory, p, "buy it", refine=detour == "refine")
        if d is not None:
            return d
        return kit.once(memory, "added", kit.why(kit.click(ob, kit.button(ob, "Add to basket")),
                                                 f"put one {title} in your basket to buy it",
                                                 f"add the {title} to your basket"))


class EditProfile(ShopTask):
    template = "edit_profile"
    intent_template = 'Change the name on your shop account to "{first} {last}".'
    intent_templates = (
        intent_template,
        'Update my account name to {first} {last}.',
        'My name is now {first} {last}; change it in my profile.',
        'Rename my account profile to "{first} {last}".',
    )
    user = CUSTOMER
    start_path = "/catalogue/"
    detours = ("addresses",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        first, last = rng.choice([f for f in FIRST if f != "Emma"]), rng.choice([x for x in LAST if x != "Smith"])
        return {"first": first, "last": last}

    def check(self, answer: str | None) -> tuple[bool, str]:
        row = self.site.query("select first_name, last_name from auth_user where email = ?", (CUSTOMER,))[0]
        return tuple(row) == (self.params["first"], self.params["last"]), f"name is {row[0]} {row[1]}"

    def program_html(self) -> list[dict[str, Any]]:
        return self.page_shows("/accounts/profile/", js_entries("table tr", _JS_ROW),
                                f"|Name: {self.params['first']} {self.params['last']}|")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path, detour = self.params, kit.path(ob), self.detour(memory)
        name = f"{p['first']} {p['last']}"
        if memory.get("saved"):
            return kit.why(kit.finish(), f"rename your account to {name}", f"have {name} as the name on your account")
        if path.startswith("/accounts/profile/edit/"):
            for field, value, purposes in (
                    ("first_name", p["first"], (f"change your first name to {p['first']}",
                                                f"put {p['first']} as your first name")),
                    ("last_name", p["last"], (f"change your last name to {p['last']}",
                                              f"put {p['last']} as your last name"))):
                d = kit.fill(ob, kit.field(ob, field), value)
                if d is not None:
                    return kit.why(d, *purposes)
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.button(ob, "Save")),
                                                     f"keep {name} as the name on your account", "store the new name"))
        if path.startswith("/accounts/profile/"):
            if detour == "addresses" and not memory.get("addresses_seen"):
                return kit.once(memory, "addresses_seen", kit.why(
                    kit.click(ob, kit.link(ob, "Address Book", prefer_visible=True)),
                    "look for your name among the saved addresses first",
                    "check whether the account name is kept with your addresses"))
            return kit.why(kit.click(ob, kit.link(ob, "Edit profile")), "open the form that changes your name",
                           f"make the name on your account editable, to change it to {name}")
        if path.startswith("/accounts/"):
            return kit.why(kit.click(ob, kit.link(ob, "Profile", prefer_visible=True)),
                           "go back to your profile, where the account name is kept",
                           "return to the profile: the name is not part of the address book")
        return kit.why(kit.click(ob, kit.link(ob, "Account", prefer_visible=True)),
                       "open your account settings, where your name is kept", "get to the profile that shows your name")


class AddAddress(ShopTask):
    template = "add_address"
    intent_template = 'Add this address to your address book: {first} {last}, {line1}, {city}, {postcode}, {country}.'
    intent_templates = (
        intent_template,
        'Save {first} {last}, {line1}, {city}, {postcode}, {country} as a new address in my account.',
        'I have a new address: {line1}, {city}, {postcode}, {country}, for {first} {last}. Add it to my address book.',
        'Store the address "{first} {last}, {line1}, {city} {postcode}, {country}" in my account for future orders.',
    )
    user = CUSTOMER
    start_path = "/catalogue/"
    detours = ("profile", "orders")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return _shop_address(rng)

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        rows = self.site.query("select first_name, last_name, line1, line4, postcode, country_id from address_useraddress "
                               "where user_id = ?", (self._user_id(CUSTOMER),))
        want = tuple(kit.norm(x) for x in (p["first"], p["last"], p["line1"], p["city"], p["postcode"], p["cc"]))
        ok = any(tuple(kit.norm(x) for x in r) == want for r in rows)
        return ok, f"{len(rows)} address(es); {'found' if ok else 'none matches'} {want}"

    def program_html(self) -> list[dict[str, Any]]:
        return self.page_shows("/accounts/addresses/", js_entries("address", _JS_ADDRESS),
                                _address_entry(self.params))

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path, detour = self.params, kit.path(ob), self.detour(memory)
        who = f"{p['first']} {p['last']}"
        if memory.get("saved"):
            return kit.why(kit.finish(), f"add {who}'s address in {p['city']} to your address book",
                           f"keep the address {p['line1']}, {p['city']} in your account")
        if path.startswith("/accounts/addresses/add/"):
            d = _shop_address_form(ob, memory, p, always_country=True)
            if d is not None:
                return d
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.button(ob, "Save")),
                                                     f"add the address for {who} to your address book",
                                                     "keep the new address in your account"))
        if path.startswith("/accounts/profile/edit/"):
            back = _shop_go_back("return to the account pages, since addresses live in the address book",
                                 "leave the profile form, which holds no address")
            return kit.once(memory, "back", back)
        if path.startswith("/accounts/addresses/"):
            return kit.why(kit.click(ob, kit.link(ob, "Add a new address")), f"open an empty form for {who}'s address",
                           "start a new entry in the address book")
        if path.startswith("/accounts/"):
            if detour == "profile" and not memory.get("profile_seen"):
                return kit.once(memory, "profile_seen", kit.why(
                    kit.click(ob, kit.link(ob, "Edit profile")), "look for an address field in your profile first",
                    "check whether the profile form takes an address"))
            if detour == "orders" and not memory.get("orders_seen"):  # past orders show their addresses
                return kit.once(memory, "orders_seen", kit.why(
                    kit.click(ob, kit.link(ob, "Order History", prefer_visible=True)),
                    "look for your addresses among your past orders first",
                    "check whether addresses are kept with your orders"))
            return kit.why(kit.click(ob, kit.link(ob, "Address Book", prefer_visible=True)),
                           "open the address book, where saved addresses are kept",
                           f"find where to add {who}'s address")
        return kit.why(kit.click(ob, kit.link(ob, "Account", prefer_visible=True)),
                       "open your account pages, which hold the address book", "get to your saved addresses")


# ----------------------------------------------------------------------------- dashboard
def _shop_orders_menu(ob: Observation, aim: str) -> Decision | None:
    """Dashboard: open Fulfilment > Orders, to ``aim`` (an infinitive clause)."""
    return _dashboard_menu(ob, "Fulfilment", "Orders", ("open the menu that holds the orders",
                                                        f"find the order list to {aim}"),
                           (f"open the list of orders to {aim}", f"see all the shop's orders, where you can {aim}"))


def _open_order(ob: Observation, number: str) -> Decision | None:
    """Dashboard: get to order ``number``'s detail page (None once there)."""
    path = kit.path(ob)
    if path.startswith(f"/dashboard/orders/{number}/"):
        return None
    if path.startswith("/dashboard/orders/") and not path.startswith("/dashboard/orders/statistics/"):
        box = kit.field(ob, "order_number", prefer_visible=True)
        d = kit.fill(ob, box, number)
        if d is not None:
            return kit.why(d, f"look up order #{number}", f"find order #{number} among the orders")
        form = kit.by_id(ob, "search_form")
        btn = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "submit" and e.parent == (form.bid if form else None))
        return kit.why(kit.click(ob, btn or kit.button(ob, "Search")), f"run the search for order #{number}",
                       f"bring up order #{number}")
    return _shop_orders_menu(ob, f"look up order #{number}")


def _shop_customers_detour(ob: Observation, memory: dict[str, Any], number: str) -> Decision | None:
    """The detour of a person who first looks for an order under the Customers menu (then opens Fulfilment)."""
    if memory.get("customers_seen") or kit.path(ob).startswith("/dashboard/orders/"):
        return None
    top = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == "customers"
                   and "dropdown-toggle" in e.attrs.get("class", ""))
    return kit.once(memory, "customers_seen", kit.why(kit.click(ob, top),
                                                      f"look for order #{number} under the Customers menu first",
                                                      "check whether the orders are listed with the customers"))


class ChangeOrderStatus(ShopTask):
    template = "change_order_status"
    intent_template = 'In the shop dashboard, change the status of order #{number} to "{status}".'
    intent_templates = (
        intent_template,
        'Mark order #{number} as "{status}".',
        'Update the status of order #{number} to {status}.',
        'Order #{number} should now be "{status}"; update it in the admin panel.',
    )
    user = ADMIN
    start_path = "/dashboard/"
    detours = ("customers",)
    detour_share = 0.5

    def sample(self, rng: random.Random) -> dict[str, Any]:
        o = rng.choice([o for o in seed_data()["orders"] if ORDER_PIPELINE[o["status"]]])
        return {"number": o["number"], "old": o["status"], "status": rng.choice(ORDER_PIPELINE[o["status"]])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = self.site.query("select status from order_order where number = ?", (self.params["number"],))[0][0]
        return got == self.params["status"], f"order {self.params['number']} is {got!r}"

    def program_html(self) -> list[dict[str, Any]]:
        # the dashboard's "Order information" table: a row of headers over a row of values
        info = ("[...document.querySelectorAll('table')]"
                ".filter(t => t.caption?.innerText.trim() === 'Order information')"
                ".map(t => [...t.rows[0].cells].map((th, i) => '|' + th.innerText.trim() + ': ' + "
                "t.rows[1].cells[i].innerText.trim() + '|').join('')).join('')")
        return self.page_shows(f"/dashboard/orders/{self.params['number']}/", info,
                                f"|Status: {self.params['status']}|")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        number, status = self.params["number"], self.params["status"]
        if memory.get("saved"):
            return kit.why(kit.finish(), f"move order #{number} to {status}",
                           f"set order #{number}'s status to {status}")
        if self.detour(memory) == "customers":
            d = _shop_customers_detour(ob, memory, number)
            if d is not None:
                return d
        d = _open_order(ob, number)
        if d is not None:
            return d
        form = kit.by_id(ob, "order_status_form")
        sel = kit.find(ob, lambda e: e.tag == "select" and e.attrs.get("name") == "new_status" and form is not None
                       and _shop_inside(ob, e, form.bid))
        if sel is None:
            return None
        if not memory.get("chosen"):  # the DOM snapshot does not report a select's value: remember the choice
            d = _select2(ob, sel, status)
            if d is not None and d.bid is not None and (d.type is ActionType.SELECT or ob.elements[d.bid].tag == "li"):
                memory["chosen"] = True
                return kit.why(d, f"pick {status} as the order's new status", f"set the new status to {status}")
            return kit.why(d, f"open the list of statuses order #{number} can move to",
                           f"see the statuses order #{number} can take next")
        btn = kit.find(ob, lambda e: e.tag == "button" and kit.norm(e.text) == "change status"
                       and _shop_inside(ob, e, form.bid))
        return kit.once(memory, "saved", kit.why(kit.click(ob, kit.require(btn, 'the "Change status" button')),
                                                 f"move order #{number} to {status}",
                                                 f"record the status change of order #{number}"))


def _select2(ob: Observation, sel: Element, value: str) -> Decision | None:
    """Choose ``value`` in a select the dashboard shows as a select2 widget (open it, click the option)."""
    if kit.visible(ob, sel):
        return kit.select(ob, sel, value)
    option = kit.find(ob, lambda e: e.tag == "li" and "select2-results__option" in e.attrs.get("class", "")
                      and kit.norm(e.text) == kit.norm(value))
    if option is not None and kit.visible(ob, option):  # the widget is open
        return kit.click(ob, option)
    siblings = ob.elements[sel.parent].children if sel.parent in ob.elements else []
    after = siblings[siblings.index(sel.bid) + 1:] if sel.bid in siblings else []
    widget = next((ob.elements[b] for b in after if "select2" in ob.elements[b].attrs.get("class", "")), None)
    box = kit.find(ob, lambda e: e.role == "combobox" and widget is not None and _shop_inside(ob, e, widget.bid))
    return kit.click(ob, box)


def _shop_inside(ob: Observation, el: Element, ancestor: str) -> bool:
    """Whether ``el`` lies inside the element ``ancestor`` (a bid)."""
    p = el.parent
    while p is not None:
        if p == ancestor:
            return True
        p = ob.elements[p].parent if p in ob.elements else None
    return False


class OrderTotal(ShopTask):
    template = "order_total"
    intent_template = "What is the total of order #{number}? Look it up in the shop dashboard and answer with the amount."
    intent_templates = (
        intent_template,
        "What is the order total of order #{number}?",
        "How much did the customer pay in total for order #{number}?",
        "Tell me the grand total of order #{number}.",
    )
    user = ADMIN
    start_path = "/dashboard/"
    answer_task = True
    detours = ("payment", "customers")

    def sample(self, rng: random.Random) -> dict[str, Any]:
        o = rng.choice(seed_data()["orders"])
        return {"number": o["number"], "total": o["total"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"[0-9]+(?:\.[0-9]+)?", (answer or "").replace(",", ""))
        ok = any(Decimal(g) == Decimal(self.params["total"]) for g in got)
        return ok, f"answer {answer!r}, want {self.params['total']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["total"]]}

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        number, detour = self.params["number"], self.detour(memory)
        if detour == "customers":
            d = _shop_customers_detour(ob, memory, number)
            if d is not None:
                return d
        d = _open_order(ob, number)
        if d is not None:
            return d
        if detour == "payment" and not memory.get("tab_back"):
            # a person first looks under the Payment tab, then back at the order's contents
            tab = "order contents" if memory.get("payment_seen") else "payment"
            link = kit.find(ob, lambda e: e.tag == "a" and "nav-link" in e.attrs.get("class", "")
                            and kit.norm(e.text) == tab and e.attrs.get("href", "").startswith("#"))
            if link is not None:
                if tab == "payment":
                    return kit.once(memory, "payment_seen", kit.why(
                        kit.click(ob, link), f"look for the amount paid for order #{number} under its Payment tab",
                        "check the payment details for the order's total"))
                return kit.once(memory, "tab_back", kit.why(
                    kit.click(ob, link), "go back to the order's contents, where the totals are listed",
                    f"return to the items of order #{number} and their totals"))
        th = kit.find(ob, lambda e: e.tag == "th" and kit.norm(e.text) == "order total")
        if th is None or th.parent not in ob.elements:
            return None
        head = ob.elements[th.parent]  # header row; the values are in the next row, same column
        column = [c for c in head.children if ob.elements[c].tag == "th"].index(th.bid)
        rows = [r for r in ob.elements.values() if r.tag == "tr" and r.parent == head.parent] or \
            [r for r in ob.elements.values() if r.tag == "tr" and _shop_inside(ob, r, ob.elements[head.parent].parent or "")]
        after = rows[rows.index(head) + 1:] if head in rows else []
        cells = [ob.elements[c] for c in (after[0].children if after else []) if ob.elements[c].tag == "td"]
        money = _money_in(cells[column].text) if len(cells) > column else []
        if not money:
            return None
        return kit.why(kit.finish(f"£{money[0]}"), f"tell the user the total of order #{number}",
                       f"report the order total shown in order #{number}'s summary")


class CountOrdersByStatus(ShopTask):
    template = "count_orders_by_status"
    intent_template = 'How many orders in the shop have the status "{status}"? Filter the dashboard\'s order list and answer with the number.'
    intent_templates = (
        intent_template,
        'How many orders are currently "{status}"?',
        'What is the number of orders with the status {status}?',
        'Count the orders whose status is "{status}".',
        'How many "{status}" orders does the shop have?',
        'Tell me how many orders have the status "{status}".',
    )
    user = ADMIN
    start_path = "/dashboard/"
    answer_task = True
    detours = ("statistics",)
    detour_share = 0.5

    def sample(self, rng: random.Random) -> dict[str, Any]:
        status = rng.choice(sorted(ORDER_PIPELINE))
        return {"status": status, "count": sum(o["status"] == status for o in seed_data()["orders"])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"\d+", answer or "")
        ok = bool(got) and int(got[0]) == self.params["count"]
        return ok, f"answer {answer!r}, want {self.params['count']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["count"])]}

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        path, status = kit.path(ob), self.params["status"]
        done = (f"tell the user how many orders are {status}", f"report the number of {status} orders")
        if path.startswith("/dashboard/orders/statistics/"):
            memory["statistics_seen"] = True
        elif path.startswith("/dashboard/orders/") and "status=" in ob.url:
            m = re.search(r"Select all (\d+)", kit.page_text(ob))
            if m:
                return kit.why(kit.finish(m.group(1)), *done)
            rows = {e.text for e in ob.elements.values() if e.tag == "a" and re.fullmatch(r"\d{6}", e.text)
                    and re.search(r"/dashboard/orders/\d+/", e.attrs.get("href", ""))}
            return kit.why(kit.finish(str(len(rows))), *done)
        elif path.startswith("/dashboard/orders/"):
            # the status filter is a select2 widget in the "Advanced Search" modal; the filtered
            # list has its own URL, which the agent may open directly
            base = re.match(r"^https?://[^/]+", ob.url).group(0)  # type: ignore[union-attr]
            return kit.why(Decision(ActionType.GOTO, url=f"{base}/dashboard/orders/?status={status.replace(' ', '+')}"),
                           f"list only the orders whose status is {status}",
                           f"filter the order list by the status {status}")
        if self.detour(memory) == "statistics" and not memory.get("statistics_seen"):
            return _dashboard_menu(ob, "Fulfilment", "Statistics",
                                   ("open the menu with the order figures", "find the order statistics"),
                                   (f"check whether the order statistics count the {status} orders",
                                    "look for a count of orders by status in the statistics first"))
        return _shop_orders_menu(ob, f"count the {status} orders")


class EditProductStock(ShopTask):
    template = "edit_product_stock"
    intent_template = 'In the shop dashboard, set the price of "{title}" to £{price} and its stock to {stock} units.'
    intent_templates = (
        intent_template,
        'Change the price of "{title}" to £{price} and set its stock level to {stock}.',
        'We now have {stock} units of "{title}" and it sells for £{price}. Update the product.',
        'Update "{title}" in the catalogue: price £{price}, {stock} in stock.',
    )
    user = ADMIN
    start_path = "/dashboard/"
    detours = ("tab",)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = rng.choice(seed_data()["products"])
        price = (Decimal(p["price"]) + Decimal(rng.choice((-2, 1, 3, 5, 10)))).quantize(Decimal("0.01"))
        if price <= 0:
            price = Decimal("1.99")
        return {"title": p["title"], "upc": p["upc"], "price": str(price),
                "stock": rng.choice([s for s in (5, 12, 30, 45, 75, 150) if s != p["stock"]])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        row = self.site.query("select s.price, s.num_in_stock from partner_stockrecord s join catalogue_product p "
                              "on p.id = s.product_id where p.upc = ?", (self.params["upc"],))[0]
        ok = abs(Decimal(str(row[0])) - Decimal(self.params["price"])) < Decimal("0.005") and row[1] == self.params["stock"]
        return ok, f"price {row[0]}, stock {row[1]}"

    def program_html(self) -> list[dict[str, Any]]:
        # the product's form in the dashboard: its stock record's fields (``stockrecords-0-price``, ...)
        fields = js_entries("input[name^='stockrecords-0-']:not([type=hidden]):not([type=checkbox])",
                             "x.name.slice(15) + ': ' + x.value")
        return self.page_shows(f"/dashboard/catalogue/products/{self._product_id(self.params['upc'])}/", fields,
                                f"|price: {self.params['price']}|", f"|num_in_stock: {self.params['stock']}|")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path = self.params, kit.path(ob)
        title = p["title"]
        if memory.get("saved"):
            return kit.why(kit.finish(), f"update the {title} to £{p['price']} with {p['stock']} units in stock",
                           f"set the price and stock of the {title} as asked")
        if re.match(r"^/dashboard/catalogue/products/\d+/", path):
            price = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("name", "").endswith("-price")
                             and e.attrs.get("name", "").startswith("stockrecords-0"))
            stock = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("name") == "stockrecords-0-num_in_stock")
            if price is not None and not kit.visible(ob, price) and not memory.get("tab"):
                if self.detour(memory) == "tab" and not memory.get("wrong_tab"):
                    # a person first looks under the product's Categories section
                    return kit.once(memory, "wrong_tab", kit.why(
                        kit.click(ob, kit.link(ob, "Categories", href=r"^#")),
                        f"look for the price of the {title} under its Categories section first",
                        "check the Categories section for the stock fields"))
                return kit.once(memory, "tab", kit.why(kit.click(ob, kit.link(ob, "Stock and pricing")),
                                                       f"get to the price and stock fields of the {title}",
                                                       "open the section that holds the price and stock level"))
            for el, value, purposes in (
                    (price, p["price"], (f"set the price to £{p['price']}",
                                         f"make the {title} sell for £{p['price']}")),
                    (stock, str(p["stock"]), (f"record {p['stock']} units in stock",
                                              f"set the stock level to {p['stock']}"))):
                if el is not None and Decimal((el.value or "0").replace(",", "") or "0") != Decimal(value):
                    return kit.why(kit.fill(ob, el, value), *purposes)
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.button(ob, "Save")),
                                                     f"store the new price and stock level of the {title}",
                                                     f"keep the changes to the {title}"))
        if path.startswith("/dashboard/catalogue/"):
            hit = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == kit.norm(title))
            if hit is not None and "title=" in ob.url:
                return kit.why(kit.click(ob, hit), f"open the {title} for editing",
                               f"edit the product record of the {title}")
            d = kit.fill(ob, kit.field(ob, "title"), title)
            if d is not None:
                return kit.why(d, f"look up the {title} in the product list", f"find the {title} among the products")
            return kit.why(kit.click(ob, kit.button(ob, "Search")), f"filter the product list down to the {title}",
                           f"find the {title} among the products")
        return _dashboard_menu(ob, "Catalogue", "Products", (f"open the catalogue menu to find the {title}",
                                                             "get to the shop's product list"),
                               (f"see the catalogue's products, the {title} among them",
                                f"find the {title} among the products"))


# ----------------------------------------------------------------------------- a long storefront task
#: What customers write in the checkout's delivery instructions.
DELIVERY_NOTES = ("Leave the parcel with the neighbours if nobody is in", "Please ring the bell twice",
                  "Deliver to the side door", "Leave it in the porch if it rains")
#: The seeded voucher (15% off everything, many uses).
VOUCHER = seed_data()["vouchers"][0]["code"]


def _shop_basket_line(ob: Observation, title: str) -> tuple[Element | None, Element | None]:
    """The basket page's quantity field and Update button of ``title``'s line (the ones that
    follow its title link in the document)."""
    els = list(ob.elements.values())
    best: tuple[int, Element, Element] | None = None
    for i, e in enumerate(els):
        if not (e.tag == "a" and kit.norm(e.text) == kit.norm(title) and "/catalogue/" in e.attrs.get("href", "")):
            continue
        field = next(((j, x) for j, x in enumerate(els[i + 1:], i + 1) if x.tag == "input"
                      and re.fullmatch(r"form-\d+-quantity", x.attrs.get("name", ""))), None)
        if field is None:
            continue
        update = next((x for x in els[field[0]:] if x.tag == "button" and kit.norm(x.text) == "update"), None)
        if update is not None and (best is None or field[0] - i < best[0]):
            best = (field[0] - i, field[1], update)
    return (best[1], best[2]) if best else (None, None)


class MultiProductOrder(ShopTask):
    """A long, multi-part goal of WebArena's shopping kind (40 and more expert steps): find four
    products and add each in its quantity, redeem a voucher in the basket, then check out to a
    new shipping address (with delivery instructions when the phrasing gives some)."""

    template = "multi_product_order"
    intent_template = ('Buy {quantity1} "{title1}", {quantity2} "{title2}", {quantity3} "{title3}" and {quantity4} '
                       '"{title4}" with the voucher code {voucher}, and have everything shipped to {first} {last}, '
                       '{line1}, {city}, {postcode}, {country}.')
    intent_templates = (
        intent_template,
        ('I need {quantity1} x "{title1}", {quantity2} x "{title2}", {quantity3} x "{title3}" and {quantity4} x '
         '"{title4}". Order them in one go, use the code {voucher} for the discount, and ship to {first} {last} at '
         '{line1}, {city} {postcode}, {country}.'),
        ('Place a single order for {quantity1} "{title1}", {quantity2} "{title2}", {quantity3} "{title3}" and '
         '{quantity4} "{title4}", delivered to {first} {last}, {line1}, {city}, {postcode}, {country}. Apply the '
         'voucher {voucher}, and add the delivery note "{notes}".'),
        ('Order these for {first} {last} ({line1}, {city}, {postcode}, {country}): {quantity1} of "{title1}", '
         '{quantity2} of "{title2}", {quantity3} of "{title3}" and {quantity4} of "{title4}". Redeem voucher '
         '{voucher} at checkout and leave the courier the note "{notes}".'),
    )
    user = CUSTOMER
    detours = ("refine", "fix")
    detour_share = 0.7
    #: How many products one order buys.
    ITEMS = 4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        pool = [p for p in seed_data()["products"] if p["stock"] >= 3]
        items = rng.sample(pool, self.ITEMS)
        quantities = [rng.choice((1, 2, 2, 3)) for _ in items]
        if max(quantities) < 2:
            quantities[rng.randrange(self.ITEMS)] = 2
        out: dict[str, Any] = {**_shop_address(rng), "voucher": VOUCHER, "notes": rng.choice(DELIVERY_NOTES),
                               "items": [{**_shop_product_params(p), "quantity": q} for p, q in zip(items, quantities)],
                               # the product a detour concerns: one bought in several units (see decide)
                               "detour_item": rng.choice([k for k, q in enumerate(quantities) if q > 1])}
        for k, (p, q) in enumerate(zip(items, quantities), 1):
            out[f"title{k}"], out[f"quantity{k}"] = p["title"], q
        return out

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        seeded = {o["number"] for o in seed_data()["orders"]}
        orders = [r for r in self.site.query(
            "select o.id, o.number, a.first_name, a.last_name, a.line1, a.line4, a.postcode, a.country_id, a.notes "
            "from order_order o join order_shippingaddress a on a.id = o.shipping_address_id where o.user_id = ?",
            (self._user_id(CUSTOMER),)) if r[1] not in seeded]
        if not orders:
            return False, "no new order by the customer"
        want_lines = {it["upc"]: it["quantity"] for it in p["items"]}
        want_addr = tuple(kit.norm(x) for x in (p["first"], p["last"], p["line1"], p["city"], p["postcode"], p["cc"]))
        reasons = []
        for r in orders:
            lines = dict(self.site.query("select upc, quantity from order_line where order_id = ?", (r[0],)))
            vouchers = {v for (v,) in self.site.query("select voucher_code from order_orderdiscount where order_id = ?",
                                                      (r[0],))}
            addr = tuple(kit.norm(x) for x in r[2:8])
            notes_ok = "notes" not in self.instantiation_dict or kit.norm(r[8]) == kit.norm(p["notes"])
            if lines == want_lines and addr == want_addr and p["voucher"] in vouchers and notes_ok:
                return True, f"order {r[1]}: {lines}, voucher {p['voucher']}, ships to {', '.join(r[2:8])}"
            reasons.append(f"order {r[1]}: lines {lines}, vouchers {sorted(vouchers)}, address {addr}, notes {r[8]!r}")
        return False, "; ".join(reasons)

    def program_html(self) -> list[dict[str, Any]]:
        p = self.params
        offer = next(v["offer"] for v in seed_data()["vouchers"] if v["code"] == p["voucher"])
        entries = [f"|{it['title']} x {it['quantity']}|" for it in p["items"]]
        entries += [f"|lines: {len(p['items'])}|", _address_entry(p), f"|Discount {offer}|"]
        if "notes" in self.instantiation_dict:
            entries.append(f"|Instructions: {p['notes']}|")
        return self.page_shows("/checkout/thank-you/", _JS_ORDER_PLACED, *entries)

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path, detour = self.params, kit.path(ob), self.detour(memory)
        who, items = f"{p['first']} {p['last']}", p["items"]
        what = "the four products"
        if "/checkout/thank-you/" in path:
            return kit.why(kit.finish(), f"buy the four products with the voucher and have them shipped to {who}",
                           f"get the whole order placed for delivery to {who} in {p['city']}")
        notes = p["notes"] if "notes" in self.instantiation_dict else None
        d = _shop_checkout_pages(ob, memory, p, what, notes=notes)
        if d is not None:
            return d
        fix = items[p["detour_item"]] if detour == "fix" and items[p["detour_item"]]["quantity"] > 1 else None
        if path.startswith("/basket/"):
            if fix is not None and not memory.get("fixed"):
                # the person added this product without setting its quantity; correct it here
                qty, update = _shop_basket_line(ob, fix["title"])
                d = kit.fill(ob, qty, str(fix["quantity"]))
                if d is not None:
                    return kit.why(d, f"correct the {fix['title']} line to {fix['quantity']}, it went in as one",
                                   f"fix the quantity of the {fix['title']}, which should be {fix['quantity']}")
                d = kit.why(kit.click(ob, update), f"apply the corrected quantity of the {fix['title']}",
                            f"make the basket hold {fix['quantity']} of the {fix['title']}")
                return kit.once(memory, "fixed", d)
            if not memory.get("voucher"):
                code = kit.field(ob, "code")
                if code is None or code.bbox is None or code.bbox[3] - code.bbox[1] < 2:  # the voucher form is folded
                    return kit.why(kit.click(ob, kit.link(ob, "I have a voucher code...")),
                                   f"open the field for the voucher code {p['voucher']}",
                                   "get a discount with the voucher")
                d = kit.fill(ob, code, p["voucher"])
                if d is not None:
                    return kit.why(d, f"enter the voucher code {p['voucher']}", "claim the discount the voucher gives")
                return kit.once(memory, "voucher", kit.why(kit.click(ob, kit.button(ob, "Add voucher")),
                                                           f"apply the voucher {p['voucher']} to the basket",
                                                           "take the voucher's discount off the order"))
            return kit.why(kit.click(ob, kit.link(ob, "Proceed to checkout")),
                           f"pay for the four products and ship them to {who}",
                           "start the checkout with the discounted basket")
        todo = [it for it in items if not memory.get(f"added:{it['title']}")]
        if not todo:
            return kit.why(kit.click(ob, kit.link(ob, "View basket", prefer_visible=True)),
                           "check the basket holds all four products before paying",
                           "go to the basket to add the voucher and check out")
        it, k = todo[0], items.index(todo[0])
        aim = "add it to your basket" if it["quantity"] == 1 else f"add {it['quantity']} of them to your basket"
        d = _search_and_open(ob, memory, it, aim,
                             refine=detour == "refine" and k == p["detour_item"])
        if d is not None:
            return d
        if it is not fix:
            d = kit.fill(ob, kit.field(ob, "quantity"), str(it["quantity"]))
            if d is not None:
                return kit.why(d, f"ask for {it['quantity']} of the {it['title']}",
                               f"set the quantity to the {it['quantity']} the order needs")
        return kit.once(memory, f"added:{it['title']}", kit.why(
            kit.click(ob, kit.button(ob, "Add to basket")),
            f"put the {it['title']} in your basket", f"add product {k + 1} of 4, the {it['title']}, to the basket"))



# ----------------------------------------------------------------------------- storefront: pages to open
#: The second seeded customer (three orders, several lines in stock): tasks about "my orders".
ORDERING_CUSTOMER = TASK_CUSTOMERS[1]["email"]
#: The storefront's sort options (``sort_by`` value -> its label in the "Sort by" list).
SORT_LABELS = {"price-asc": "Price low to high", "price-desc": "Price high to low", "newest": "Newest",
               "title-asc": "Title A to Z"}


def _shop_date(iso: str) -> str:
    """A seeded timestamp as a person writes the day ("16 August 2024")."""
    d = dt.datetime.fromisoformat(iso)
    return f"{d.day} {d:%B %Y}"


def _shop_leaves() -> list[tuple[str, str]]:
    """Every leaf category with its top-level category: ``[(leaf, top)]``."""
    return [(leaf, top) for top, subs in CATEGORY_TREE.items() for leaf in subs]


def _shop_open_category(ob: Observation, memory: dict[str, Any], category: str, top: str, aim: str, *,
                        via_all: bool = False) -> Decision | None:
    """Storefront: get to the product list of the leaf ``category`` (under ``top``), through the
    "Browse store" menu and the category tree, to ``aim`` (an infinitive clause); None once there.

    Args:
        via_all: the person opens "All products" from the menu (not ``top``) and picks the
            category from the tree beside the list.
    """
    path, h1 = kit.path(ob), kit.norm(_h1(ob))
    if "/catalogue/category/" in path and h1 == kit.norm(category):
        return None
    if ("/catalogue/category/" in path and h1 == kit.norm(top)) or (via_all and memory.get("all_products")):
        leaf = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == kit.norm(category)
                        and "/catalogue/category/" in e.attrs.get("href", ""), prefer_visible=True)
        return kit.why(kit.click(ob, leaf), f"open the {category} category to {aim}",
                       f"narrow the products down to {category}, where you can {aim}")
    item = "All products" if via_all else top
    d = _dashboard_menu(ob, "Browse store", item,
                        ("open the store's menu of product categories", f"find the {category} section of the store"),
                        (f"browse every product and pick {category} from the category tree" if via_all else
                         f"go to the {top} department, which holds {category}",
                         f"look through {'all the products' if via_all else top} for the {category} category"))
    if via_all and d is not None and d.bid is not None and "dropdown-item" in ob.elements[d.bid].attrs.get("class", ""):
        memory["all_products"] = True
    return d


def _shop_sort(ob: Observation, sort: str, *purposes: str) -> Decision | None:
    """A product list's "Sort by" choice (the list reloads itself); None once the URL says it is sorted so."""
    if (kit.query(ob).get("sort_by") or [""])[0] == sort:
        return None
    return kit.why(kit.select(ob, kit.field(ob, "sort_by", "select", prefer_visible=True), SORT_LABELS[sort]),
                   *purposes)


def _shop_first_product(ob: Observation) -> Element | None:
    """The first product of a product list (its title link)."""
    return kit.find(ob, lambda e: e.tag == "a" and bool(e.attrs.get("title"))
                    and re.fullmatch(r"/catalogue/[^/]+_\d+/", e.attrs.get("href", "")) is not None)


def _shop_cell_below(ob: Observation, header: str, row: int = 0) -> str | None:
    """The text of a table's cell under the column headed ``header``, in its ``row``-th data row."""
    th = kit.find(ob, lambda e: e.tag == "th" and kit.norm(e.all_text or e.text) == kit.norm(header))
    if th is None or th.parent not in ob.elements:
        return None
    head = ob.elements[th.parent]
    cols = [c for c in head.children if ob.elements[c].tag in ("th", "td")]
    table = head.parent
    while table is not None and table in ob.elements and ob.elements[table].tag != "table":
        table = ob.elements[table].parent
    if th.bid not in cols or table is None:
        return None
    rows = [e for e in ob.elements.values() if e.tag == "tr" and _shop_inside(ob, e, table)]
    after = [r for r in rows[rows.index(head) + 1:] if any(ob.elements[c].tag == "td" for c in r.children)]
    if len(after) <= row:
        return None
    cells = [ob.elements[c] for c in after[row].children if ob.elements[c].tag in ("th", "td")]
    col = cols.index(th.bid)
    return " ".join((cells[col].all_text or cells[col].text).split()) if len(cells) > col else None


def _shop_extreme(category: str, cheapest: bool) -> dict[str, Any] | None:
    """The cheapest (or dearest) product of ``category``; None when two share that price."""
    ps = [p for p in seed_data()["products"] if p["category"] == category]
    best = (min if cheapest else max)(Decimal(p["price"]) for p in ps)
    hits = [p for p in ps if Decimal(p["price"]) == best]
    return hits[0] if len(hits) == 1 else None


class ShopNavTask(ShopTask):
    """Navigation tasks on the shop (each sets ``kind = "navigation"``: judged on the page the agent
    finishes on), with the paths their checks expect, read from the database."""

    def _product_path(self, upc: str) -> str:
        pid, slug = self.site.query("select id, slug from catalogue_product where upc = ?", (upc,))[0]
        return f"/catalogue/{slug}_{pid}/"

    def _category_path(self, category: str, top: str) -> str:
        (leaf_id, leaf_slug), = self.site.query("select id, slug from catalogue_category where name = ?", (category,))
        (top_slug,), = self.site.query("select slug from catalogue_category where name = ? and depth = 1", (top,))
        return f"/catalogue/category/{top_slug}/{leaf_slug}_{leaf_id}/"


class CategorySortedByPrice(ShopNavTask):
    template = "category_sorted_by_price"
    kind = "navigation"
    intent_template = "Show me the products in the {category} category sorted by price, {order}."
    intent_templates = (
        intent_template,
        "I want to browse {category}, {order}. Open that list.",
        "List the {category} products by price, {order}.",
        "Show me all {category} items ordered by price ({order}).",
    )
    detours = ("all",)
    detour_share = 0.5

    def sample(self, rng: random.Random) -> dict[str, Any]:
        category, top = rng.choice(_shop_leaves())
        sort = rng.choice(("price-asc", "price-desc"))
        return {"category": category, "top": top, "sort": sort,
                "order": "cheapest first" if sort == "price-asc" else "most expensive first"}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(self._category_path(self.params["category"], self.params["top"]),
                            sort_by=self.params["sort"])

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        d = _shop_open_category(ob, memory, p["category"], p["top"], f"sort them by price, {p['order']}",
                                via_all=self.detour(memory) == "all")
        if d is not None:
            return d
        d = _shop_sort(ob, p["sort"], f"order the {p['category']} products by price, {p['order']}",
                       f"sort the list so the {p['order'].replace(' first', '')} products come first")
        if d is not None:
            return d
        return kit.why(kit.finish(), f"show the {p['category']} products sorted by price, {p['order']}",
                       f"leave the {p['category']} list open, {p['order']}")


class CheapestInCategoryPage(ShopNavTask):
    template = "cheapest_in_category_page"
    kind = "navigation"
    intent_template = "Open the page of the {extreme} product in the {category} category."
    intent_templates = (
        intent_template,
        "Take me to the {extreme} item sold under {category}.",
        "Show me the product page of the {extreme} {category} product.",
        "Which is the {extreme} thing in {category}? Open its page.",
    )
    detours = ("all",)
    detour_share = 0.5

    def sample(self, rng: random.Random) -> dict[str, Any]:
        options = [(leaf, top, cheap) for leaf, top in _shop_leaves() for cheap in (True, False)
                   if _shop_extreme(leaf, cheap) is not None]
        category, top, cheap = rng.choice(options)
        p = _shop_extreme(category, cheap)
        assert p is not None
        return {"category": category, "top": top, "extreme": "cheapest" if cheap else "most expensive",
                "sort": "price-asc" if cheap else "price-desc", "upc": p["upc"], "title": p["title"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(self._product_path(self.params["upc"]))

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if memory.get("opened") and "/catalogue/category/" not in kit.path(ob):
            return kit.why(kit.finish(), f"show the {p['extreme']} product of {p['category']}",
                           f"leave the page of the {p['extreme']} {p['category']} product open")
        d = _shop_open_category(ob, memory, p["category"], p["top"], f"find its {p['extreme']} product",
                                via_all=self.detour(memory) == "all")
        if d is not None:
            return d
        d = _shop_sort(ob, p["sort"], f"bring the {p['extreme']} {p['category']} product to the top of the list",
                       f"sort the {p['category']} products by price to spot the {p['extreme']} one")
        if d is not None:
            return d
        return kit.once(memory, "opened", kit.why(kit.click(ob, _shop_first_product(ob)),
                                                  f"open the first product of the sorted list, the {p['extreme']} one",
                                                  f"go to the page of the {p['extreme']} {p['category']} product"))


class SearchResultsSorted(ShopNavTask):
    template = "search_results_sorted"
    kind = "navigation"
    intent_template = 'Show me the search results for "{q}", {order}.'
    intent_templates = (
        intent_template,
        'Search the shop for "{q}" and list the results {order}.',
        'I am looking for "{q}". Show me what the shop has, {order}.',
        'Find "{q}" products for me, sorted {order}.',
    )
    ORDERS = {"price-asc": "cheapest first", "price-desc": "most expensive first", "newest": "newest first",
              "title-asc": "in alphabetical order"}

    def sample(self, rng: random.Random) -> dict[str, Any]:
        pool = [p for p in seed_data()["products"] if not re.search(r"[0-9&-]", p["title"])]
        q = _shop_broad_query(rng.choice(pool))
        sort = rng.choice(sorted(self.ORDERS))
        return {"q": q, "sort": sort, "order": self.ORDERS[sort]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page("/search/", q=self.params["q"], sort_by=self.params["sort"])

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if "/search/" in kit.path(ob) and kit.norm((kit.query(ob).get("q") or [""])[0]) == kit.norm(p["q"]):
            d = _shop_sort(ob, p["sort"], f"list the results {p['order']}", f"sort the {p['q']} results {p['order']}")
            if d is not None:
                return d
            return kit.why(kit.finish(), f"show the results for {p['q']} {p['order']}",
                           f"leave the sorted results for {p['q']} on screen")
        box = kit.require(kit.field(ob, "q"), "the search box")
        if (box.value or "") != p["q"]:
            return kit.why(kit.fill(ob, box, p["q"]), f"look up {p['q']} in the shop",
                           f"search the catalogue for {p['q']}")
        return _shop_submit_search(ob, box, f"list every product matching {p['q']}", f"run the search for {p['q']}")


class ReviewFormPage(ShopNavTask):
    template = "review_form_page"
    kind = "navigation"
    intent_template = 'I want to write a review of "{title}". Open the page where I can write it.'
    intent_templates = (
        intent_template,
        'Take me to the review form of the "{title}".',
        'Open the page to leave a review for "{title}".',
        'I\'d like to rate the "{title}"; bring up its review form.',
    )
    user = CUSTOMER
    detours = ("refine",)
    detour_share = 0.4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return _shop_product_params(rng.choice(seed_data()["products"]))

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(self._product_path(self.params["upc"]) + "reviews/add/")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        if kit.path(ob).endswith("/reviews/add/"):
            return kit.why(kit.finish(), f"show the form for reviewing the {p['title']}",
                           f"leave the review form of the {p['title']} open")
        d = _search_and_open(ob, memory, p, "find its review form", refine=self.detour(memory) == "refine")
        if d is not None:
            return d
        return kit.why(kit.click(ob, kit.link(ob, "Write a review", prefer_visible=True)),
                       f"open the form for reviewing the {p['title']}", "get to the page where reviews are written")


class MyOrderPage(ShopNavTask):
    template = "my_order_page"
    kind = "navigation"
    intent_template = "Show me the details of my order #{number}."
    intent_templates = (
        intent_template,
        "Open my order #{number}.",
        "I want to see what was in the order I placed on {date}. Open it.",
        "Take me to the page of the order I placed on {date}.",
    )
    user = ORDERING_CUSTOMER
    detours = ("profile",)
    detour_share = 0.4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        # the customer has three orders: consecutive seeds take each in turn
        orders = [o for o in seed_data()["orders"] if o["email"] == ORDERING_CUSTOMER]
        o = orders[self.seed % len(orders)]
        return {"number": o["number"], "date": _shop_date(o["placed"])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(f"/accounts/orders/{self.params['number']}/")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        number, path = self.params["number"], kit.path(ob)
        if path.startswith(f"/accounts/orders/{number}/"):
            return kit.why(kit.finish(), f"show the details of order #{number}",
                           f"leave order #{number} open on screen")
        if path.startswith("/accounts/orders/"):
            return kit.why(kit.click(ob, kit.link(ob, number, href=r"/accounts/orders/\d+/")),
                           f"open order #{number}, placed on {self.params['date']}",
                           f"see the items and address of order #{number}")
        if path.startswith("/accounts/"):
            if self.detour(memory) == "profile" and not memory.get("edit_seen"):
                return kit.once(memory, "edit_seen", kit.why(
                    kit.click(ob, kit.link(ob, "Email History", prefer_visible=True)),
                    "look for the order confirmation among the e-mails first",
                    f"check whether order #{number} is listed with your e-mails"))
            return kit.why(kit.click(ob, kit.link(ob, "Order History", prefer_visible=True)),
                           "list the orders you have placed", f"find order #{number} among your past orders")
        return kit.why(kit.click(ob, kit.link(ob, "Account", prefer_visible=True)),
                       "open your account, which keeps your orders", "get to your order history")


class OpenDashboardOrder(ShopNavTask):
    template = "open_dashboard_order"
    kind = "navigation"
    intent_template = "Open order #{number} in the shop dashboard."
    intent_templates = (
        intent_template,
        "Show me the admin page of order #{number}.",
        "Bring up order #{number} in the admin panel.",
        "I need to look at order #{number}; open it in the dashboard.",
    )
    user = ADMIN
    start_path = "/dashboard/"
    detours = ("customers",)
    detour_share = 0.4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"number": rng.choice(seed_data()["orders"])["number"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(f"/dashboard/orders/{self.params['number']}/")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        number = self.params["number"]
        if self.detour(memory) == "customers":
            d = _shop_customers_detour(ob, memory, number)
            if d is not None:
                return d
        d = _open_order(ob, number)
        if d is not None:
            return d
        return kit.why(kit.finish(), f"show order #{number} in the dashboard", f"leave order #{number} open")


def _shop_open_customer(ob: Observation, email: str, who: str, aim: str) -> Decision | None:
    """Dashboard: get to the customer page of ``email`` (``who``: the name), to ``aim``; None once there."""
    path = kit.path(ob)
    if re.match(r"^/dashboard/users/\d+/$", path):
        return None
    if path.startswith("/dashboard/users/"):
        hit = kit.link(ob, email, href=r"^/dashboard/users/\d+/$")
        if hit is not None and "email=" in ob.url:
            return kit.why(kit.click(ob, hit), f"open {who}'s customer page to {aim}",
                           f"go to the record of {who} ({email})")
        d = kit.fill(ob, kit.field(ob, "email"), email)
        if d is not None:
            return kit.why(d, f"look {who} up by e-mail address", f"find {email} among the customers")
        return kit.why(kit.click(ob, kit.button(ob, "Search")), f"filter the customers down to {email}",
                       f"find {who} among the customers")
    return _dashboard_menu(ob, "Customers", "Customers", ("open the customers menu", f"find {who}'s account"),
                           (f"see the shop's customers, {who} among them", f"list the customers to {aim}"))


class OpenCustomerPage(ShopNavTask):
    template = "open_customer_page"
    kind = "navigation"
    intent_template = "Open the dashboard page of the customer {first} {last} ({email})."
    intent_templates = (
        intent_template,
        "Show me the customer record of {email} in the admin panel.",
        "Bring up {first} {last}'s account ({email}) in the dashboard.",
        "I need the customer details of {first} {last}, e-mail {email}. Open them.",
    )
    user = ADMIN
    start_path = "/dashboard/"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        c = rng.choice(seed_data()["customers"][len(TASK_CUSTOMERS):])
        return {"email": c["email"], "first": c["first"], "last": c["last"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        return self.on_page(f"/dashboard/users/{self._user_id(self.params['email'])}/")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        who = f"{p['first']} {p['last']}"
        d = _shop_open_customer(ob, p["email"], who, "show their details")
        if d is not None:
            return d
        return kit.why(kit.finish(), f"show {who}'s customer page", f"leave the record of {p['email']} open")


# ----------------------------------------------------------------------------- information
class ProductStock(ShopTask):
    template = "product_stock"
    intent_template = 'How many units of "{title}" are in stock? Answer with the number.'
    intent_templates = (
        intent_template,
        'How many "{title}" does the shop have left?',
        'What is the stock level of the "{title}"?',
        'Tell me how many "{title}" are available.',
    )
    answer_task = True
    detours = ("refine",)
    detour_share = 0.4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = _in_stock(rng)
        return {**_shop_product_params(p), "stock": p["stock"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"\d+", answer or "")
        ok = bool(got) and int(got[0]) == self.params["stock"]
        return ok, f"answer {answer!r}, want {self.params['stock']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["stock"])]}

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        d = _search_and_open(ob, memory, p, "see how many are in stock", refine=self.detour(memory) == "refine")
        if d is not None:
            return d
        m = re.search(r"In stock \((\d+) available\)", kit.page_text(ob))
        if m is None:
            return None
        return kit.why(kit.finish(m.group(1)), f"tell the user how many {p['title']} are in stock",
                       "report the number of units the product page says are available")


class OrderCustomer(ShopTask):
    template = "order_customer"
    intent_template = "Who placed order #{number}? Answer with the customer's name."
    intent_templates = (
        intent_template,
        "Which customer placed order #{number}?",
        "Tell me the name of the customer behind order #{number}.",
        "Whose order is #{number}?",
    )
    user = ADMIN
    start_path = "/dashboard/"
    answer_task = True
    detours = ("customers",)
    detour_share = 0.4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        o = rng.choice(seed_data()["orders"])
        c = next(c for c in seed_data()["customers"] if c["email"] == o["email"])
        return {"number": o["number"], "name": f"{c['first']} {c['last']}"}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = kit.norm(self.params["name"]) in kit.norm(answer)
        return ok, f"answer {answer!r}, want {self.params['name']!r}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [self.params["name"]]}

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        number = self.params["number"]
        if self.detour(memory) == "customers":
            d = _shop_customers_detour(ob, memory, number)
            if d is not None:
                return d
        d = _open_order(ob, number)
        if d is not None:
            return d
        name = _shop_cell_below(ob, "Name")
        if not name:
            return None
        return kit.why(kit.finish(name), f"tell the user who placed order #{number}",
                       f"report the customer named in order #{number}'s details")


class CustomerLastOrderItems(ShopTask):
    template = "customer_last_order_items"
    intent_template = "How many items did {first} {last} ({email}) buy in their most recent order?"
    intent_templates = (
        intent_template,
        "What is the number of items in the latest order of the customer {email}?",
        "How many items were in {first} {last}'s last order? Their e-mail is {email}.",
        "Count the items of the most recent order placed by {email}.",
    )
    user = ADMIN
    start_path = "/dashboard/"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        orders = seed_data()["orders"]
        pool = [c for c in seed_data()["customers"] if sum(o["email"] == c["email"] for o in orders) >= 2]
        c = rng.choice(pool)
        last = max((o for o in orders if o["email"] == c["email"]), key=lambda o: o["placed"])
        return {"email": c["email"], "first": c["first"], "last": c["last"], "number": last["number"],
                "items": sum(ln["quantity"] for ln in last["lines"])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"\d+", answer or "")
        ok = bool(got) and int(got[0]) == self.params["items"]
        return ok, f"answer {answer!r}, want {self.params['items']}"

    def reference_answers(self) -> dict[str, Any]:
        return {"must_include": [str(self.params["items"])]}

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        who = f"{p['first']} {p['last']}"
        d = _shop_open_customer(ob, p["email"], who, "see their orders")
        if d is not None:
            return d
        items = _shop_cell_below(ob, "Num items")
        if not items or not items.isdigit():
            return None
        return kit.why(kit.finish(items), f"tell the user how many items {who}'s latest order held",
                       "report the item count of the newest order in the customer's list")


# ----------------------------------------------------------------------------- state
#: Reviews a customer writes, by score: (title, text).
REVIEWS = {
    1: ("Broke within a week", "Stopped working after a few days. I would not buy it again."),
    2: ("Not what I expected", "It does the job, but it feels cheap and the colour is off."),
    3: ("Decent for the price", "Does what it says. Nothing special, but fine for everyday use."),
    4: ("Very good", "Well made and arrived quickly. Only a small scratch on the box."),
    5: ("Absolutely love it", "Excellent quality and great value. I would recommend it to anyone."),
}


class WriteReview(ShopTask):
    template = "write_review"
    intent_template = 'Write a review of "{title}": {score} stars, titled "{review_title}", saying "{body}"'
    intent_templates = (
        intent_template,
        'Rate the "{title}" {score} out of 5 with the title "{review_title}" and the text "{body}"',
        'Post a {score}-star review for "{title}". Title: "{review_title}". Review: "{body}"',
        'Leave a review on the "{title}" page: score {score}, title "{review_title}", comment "{body}"',
    )
    user = CUSTOMER
    detours = ("refine",)
    detour_share = 0.4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        score = rng.randint(1, 5)
        title, body = REVIEWS[score]
        return {**_shop_product_params(rng.choice(seed_data()["products"])), "score": score,
                "review_title": title, "body": body}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        rows = self.site.query("select r.score, r.title, r.body from reviews_productreview r join catalogue_product p "
                               "on p.id = r.product_id where p.upc = ? and r.user_id = ?",
                               (p["upc"], self._user_id(CUSTOMER)))
        ok = any(r[0] == p["score"] and kit.norm(r[1]) == kit.norm(p["review_title"])
                 and kit.norm(r[2]) == kit.norm(p["body"]) for r in rows)
        return ok, f"reviews of {p['upc']} by the customer: {rows}"

    def program_html(self) -> list[dict[str, Any]]:
        # each review: its stars (the heading's class, "star-rating Three"), title, text and byline
        # ("Reviewed by you" for the user's own)
        p = self.params
        review = ("x.querySelector('h3').className.replace('star-rating', '').trim() + ' stars: ' + "
                  "x.querySelector('h3').innerText.trim() + ': ' + x.querySelector('p').innerText.trim() + ': ' + "
                  "x.querySelector('small').innerText.trim()")
        stars = ("One", "Two", "Three", "Four", "Five")[p["score"] - 1]
        return self.page_shows(self._product_path(p["upc"]) + "reviews/?sort_by=recency",
                                js_entries("article.review", review),
                                f"|{stars} stars: {p['review_title']}: {p['body']}: Reviewed by you")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p = self.params
        title, n = p["title"], p["score"]
        if memory.get("saved"):
            return kit.why(kit.finish(), f"post your {n}-star review of the {title}",
                           f"have your review of the {title} published")
        if kit.path(ob).endswith("/reviews/add/"):
            d = kit.fill(ob, kit.field(ob, "title"), p["review_title"])
            if d is not None:
                return kit.why(d, f"give the review the title {p['review_title']}", "name your review")
            if not memory.get("starred"):
                box = kit.find(ob, lambda e: e.tag == "div" and "star-rating" in e.attrs.get("class", "").split())
                stars = kit.find_all(ob, lambda e: e.tag == "i" and box is not None and _shop_inside(ob, e, box.bid))
                if len(stars) < n:
                    return None
                return kit.once(memory, "starred", kit.why(kit.click(ob, stars[n - 1]),
                                                           f"give the {title} {n} out of 5 stars",
                                                           f"rate the product {n} stars"))
            d = kit.fill(ob, kit.field(ob, "body", "textarea"), p["body"])
            if d is not None:
                return kit.why(d, "say what you think of the product", f"write the text of your review of the {title}")
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.button(ob, "Save review")),
                                                     f"publish your review of the {title}", "submit the review"))
        d = _search_and_open(ob, memory, p, "review it", refine=self.detour(memory) == "refine")
        if d is not None:
            return d
        return kit.why(kit.click(ob, kit.link(ob, "Write a review", prefer_visible=True)),
                       f"open the form for reviewing the {title}", "start writing your review")


class ReorderItem(ShopTask):
    template = "reorder_item"
    intent_template = 'I want the "{title}" from my order #{number} again. Put it back in my basket.'
    intent_templates = (
        intent_template,
        'Re-order the "{title}" I bought in order #{number}.',
        'Add the "{title}" from my order of {date} to my basket again.',
        'Buy again: the "{title}" from order #{number}. Just add it to the basket for now.',
    )
    user = ORDERING_CUSTOMER
    detours = ("all",)
    detour_share = 0.3

    def sample(self, rng: random.Random) -> dict[str, Any]:
        stock = {p["upc"]: p["stock"] for p in seed_data()["products"]}
        pool = [(o, ln) for o in seed_data()["orders"] if o["email"] == ORDERING_CUSTOMER for ln in o["lines"]
                if stock[ln["upc"]] >= ln["quantity"]]
        o, ln = rng.choice(pool)
        return {"number": o["number"], "date": _shop_date(o["placed"]), "title": ln["title"], "upc": ln["upc"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query(
            "select p.upc, l.quantity from basket_line l join basket_basket b on b.id = l.basket_id "
            "join catalogue_product p on p.id = l.product_id where b.owner_id = ? and b.status = 'Open'",
            (self._user_id(ORDERING_CUSTOMER),))
        ok = any(u == self.params["upc"] and q >= 1 for u, q in rows)
        return ok, f"open basket lines {rows}"

    def program_html(self) -> list[dict[str, Any]]:
        return self.page_shows("/basket/", _JS_BASKET, f"|{self.params['title']} x ")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path = self.params, kit.path(ob)
        title, number = p["title"], p["number"]
        if memory.get("added"):
            return kit.why(kit.finish(), f"have the {title} in your basket again",
                           f"re-order the {title} from order #{number}")
        if path.startswith(f"/accounts/orders/{number}/"):
            els = list(ob.elements.values())
            at = next((i for i, e in enumerate(els) if e.tag == "a" and kit.norm(e.text) == kit.norm(title)), None)
            btn = next((e for e in els[at:] if e.tag == "button" and kit.norm(e.text) == "re-order"), None) \
                if at is not None else None
            return kit.once(memory, "added", kit.why(kit.click(ob, kit.require(btn, f"the Re-order button of {title}")),
                                                     f"put the {title} back in your basket",
                                                     f"buy the {title} again, as in order #{number}"))
        if path.startswith("/accounts/orders/"):
            return kit.why(kit.click(ob, kit.link(ob, number, href=r"/accounts/orders/\d+/")),
                           f"open order #{number}, which had the {title}",
                           f"find the {title} in order #{number}")
        if path.startswith("/accounts/"):
            return kit.why(kit.click(ob, kit.link(ob, "Order History", prefer_visible=True)),
                           "list the orders you have placed", f"find order #{number} among your past orders")
        return kit.why(kit.click(ob, kit.link(ob, "Account", prefer_visible=True)),
                       "open your account, which keeps your past orders",
                       f"get to order #{number} through your account")


#: Notes staff add to an order.
ORDER_NOTES = ("Customer called to ask about the delivery date", "Gift wrap requested by phone",
               "Parcel was damaged in transit; replacement promised", "Customer asked for an invoice by e-mail",
               "Please double-check the address before shipping")


class AddOrderNote(ShopTask):
    template = "add_order_note"
    intent_template = 'Add the note "{note}" to order #{number} in the dashboard.'
    intent_templates = (
        intent_template,
        'Leave a note on order #{number}: "{note}".',
        'Record "{note}" as a note on order #{number}.',
        'Order #{number} needs a staff note saying "{note}". Add it.',
    )
    user = ADMIN
    start_path = "/dashboard/"
    detours = ("customers",)
    detour_share = 0.4

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return {"number": rng.choice(seed_data()["orders"])["number"], "note": rng.choice(ORDER_NOTES)}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query("select n.message from order_ordernote n join order_order o on o.id = n.order_id "
                               "where o.number = ?", (self.params["number"],))
        ok = any(kit.norm(r[0]) == kit.norm(self.params["note"]) for r in rows)
        return ok, f"notes of order {self.params['number']}: {rows}"

    def program_html(self) -> list[dict[str, Any]]:
        # the Notes tab of the order in the dashboard: a table of date, user, type, message
        notes = js_entries("#notes td:nth-child(4)", "x.innerText.trim()")
        return self.page_shows(f"/dashboard/orders/{self.params['number']}/", notes, f"|{self.params['note']}|")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        number, note = self.params["number"], self.params["note"]
        if memory.get("saved"):
            return kit.why(kit.finish(), f"keep the note on order #{number}", f"add the staff note to order #{number}")
        if self.detour(memory) == "customers":
            d = _shop_customers_detour(ob, memory, number)
            if d is not None:
                return d
        d = _open_order(ob, number)
        if d is not None:
            return d
        box = kit.field(ob, "message", "textarea")
        if box is None:
            return None
        if not kit.visible(ob, box) and not memory.get("tab"):
            return kit.once(memory, "tab", kit.why(kit.click(ob, kit.link(ob, "Notes", href=r"^#notes$")),
                                                   f"open the notes of order #{number}",
                                                   "go to the tab where staff notes are written"))
        d = kit.fill(ob, box, note)
        if d is not None:
            return kit.why(d, "write the note", f"type the note for order #{number}")
        return kit.once(memory, "saved", kit.why(kit.click(ob, kit.button(ob, "Save note")),
                                                 f"save the note on order #{number}", "store the note with the order"))


class UpdateOrderAddress(ShopTask):
    template = "update_order_address"
    intent_template = ("The customer of order #{number} has moved: change the order's shipping address to {line1}, "
                       "{city}, {postcode}.")
    intent_templates = (
        intent_template,
        "Update the shipping address of order #{number} to {line1}, {city} {postcode}.",
        "Order #{number} should be delivered to {line1}, {city}, {postcode} instead. Fix the address.",
        "Change where order #{number} ships: the new address is {line1}, {city}, {postcode}.",
    )
    user = ADMIN
    start_path = "/dashboard/"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        o = rng.choice(seed_data()["orders"])
        cc = o["address"]["country"]
        city = rng.choice([c for c, k in CITIES if k == cc])
        postcode = (f"{rng.choice('ABCDEFGH')}{rng.choice('JKLMNP')}{rng.randint(1, 19)} {rng.randint(1, 9)}AB"
                    if cc in ("GB", "IE") else str(rng.randint(10000, 99999)))
        return {"number": o["number"], "line1": f"{rng.randint(1, 240)} {rng.choice(STREETS)}", "city": city,
                "postcode": postcode}

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        row = self.site.query("select a.line1, a.line4, a.postcode from order_order o join order_shippingaddress a "
                              "on a.id = o.shipping_address_id where o.number = ?", (p["number"],))[0]
        ok = tuple(kit.norm(x) for x in row) == tuple(kit.norm(x) for x in (p["line1"], p["city"], p["postcode"]))
        return ok, f"order {p['number']} ships to {', '.join(row)}"

    def program_html(self) -> list[dict[str, Any]]:
        # the Shipping tab of the order in the dashboard: the address's lines in the "Address" row
        p = self.params
        lines = ("[...document.querySelectorAll('#shipping tr')].filter(x => x.cells[0].innerText.trim() === 'Address')"
                 ".map(x => x.cells[1].innerText.split('\\n').filter(s => s.trim())"
                 ".map(s => '|' + s.trim() + '|').join('')).join('')")
        return self.page_shows(f"/dashboard/orders/{p['number']}/", lines, f"|{p['line1']}|", f"|{p['city']}|",
                                f"|{p['postcode']}|")

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path = self.params, kit.path(ob)
        number = p["number"]
        if memory.get("saved"):
            return kit.why(kit.finish(), f"ship order #{number} to {p['line1']}, {p['city']}",
                           f"have order #{number} delivered to the new address")
        if path.startswith(f"/dashboard/orders/{number}/shipping-address/"):
            for name, value, purposes in (
                    ("line1", p["line1"], (f"give {p['line1']} as the new street address",
                                           "replace the old street address")),
                    ("line4", p["city"], (f"set the city to {p['city']}", f"say the new address is in {p['city']}")),
                    ("postcode", p["postcode"], (f"give the postcode {p['postcode']}", "update the postcode"))):
                d = kit.fill(ob, kit.field(ob, name), value)
                if d is not None:
                    return kit.why(d, *purposes)
            return kit.once(memory, "saved", kit.why(kit.click(ob, kit.button(ob, "Update address")),
                                                     f"save the new shipping address of order #{number}",
                                                     "store the corrected address"))
        d = _open_order(ob, number)
        if d is not None:
            return d
        # its text is not rendered while the Shipping tab is folded: found by where it leads
        update = kit.find(ob, lambda e: e.tag == "a"
                          and e.attrs.get("href", "").endswith(f"/{number}/shipping-address/"))
        if update is not None and not kit.visible(ob, update) and not memory.get("tab"):
            return kit.once(memory, "tab", kit.why(kit.click(ob, kit.link(ob, "Shipping", href=r"^#shipping$")),
                                                   f"see where order #{number} is being shipped",
                                                   "open the order's shipping details"))
        return kit.why(kit.click(ob, update), f"change the shipping address of order #{number}",
                       "open the form that edits the delivery address")


TASKS: tuple[type[SiteTask], ...] = (
    AddToBasket, AddToWishlist, ProductCategory, ProductPrice, Checkout, EditProfile, AddAddress,
    ChangeOrderStatus, OrderTotal, CountOrdersByStatus, EditProductStock, MultiProductOrder,
    CategorySortedByPrice, CheapestInCategoryPage, SearchResultsSorted, ReviewFormPage, MyOrderPage,
    OpenDashboardOrder, OpenCustomerPage, ProductStock, OrderCustomer, CustomerLastOrderItems, WriteReview,
    ReorderItem, AddOrderNote, UpdateOrderAddress,
)
