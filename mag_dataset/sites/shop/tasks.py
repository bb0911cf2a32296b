"""Live tasks on the shop (WebArena's shopping and shopping_admin intents), with state checks and experts.

Storefront tasks log in as the customer ``emma.smith@shop.test`` (or browse anonymously);
dashboard tasks as the staff user ``admin@shop.test``. Parameters come from
:func:`~mag_dataset.sites.shop.seed_data.seed_data`; checks read the Oscar database after the
episode (house style 18) and each expert decides from the observation only (house style 17).

Each template states its goal in several WebArena-style phrasings (``intent_templates``), and
its expert states what each step is for (:func:`~mag_dataset.live.expert_kit.why`), from which
the recorder writes the step's guide. Experts demonstrate as a person does: some episodes take a
seeded detour and correct it (a broader search refined to the exact product, a wrong account
page or dashboard menu first, a tab that turns out not to hold the field, a quantity fixed in
the basket), drawn once per episode with ``random.Random(f"{task_id}:{seed}:detour")``, so the
lengths of a template's episodes vary.
"""

from __future__ import annotations

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
from mag_dataset.sites.shop.seed_data import (COUNTRY_NAMES, CITIES, FIRST, LAST, ORDER_PIPELINE, STAFF, STREETS,
                                              TASK_CUSTOMERS, seed_data)
from mag_dataset.sites.task import SiteTask

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


TASKS: tuple[type[SiteTask], ...] = (
    AddToBasket, AddToWishlist, ProductCategory, ProductPrice, Checkout, EditProfile, AddAddress,
    ChangeOrderStatus, OrderTotal, CountOrdersByStatus, EditProductStock, MultiProductOrder,
)
