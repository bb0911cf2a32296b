"""Live tasks on the shop (WebArena's shopping and shopping_admin intents), with state checks and experts.

Storefront tasks log in as the customer ``emma.smith@shop.test`` (or browse anonymously);
dashboard tasks as the staff user ``admin@shop.test``. Parameters come from
:func:`~mag_dataset.sites.shop.seed_data.seed_data`; checks read the Oscar database after the
episode (house style 18) and each expert decides from the observation only (house style 17).
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


def _search_and_open(ob: Observation, title: str) -> Decision | None:
    """Storefront: search the title and open its product page (None once on that page)."""
    if kit.norm(_h1(ob)) == kit.norm(title) and "/catalogue/" in kit.path(ob):
        return None
    hit = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.attrs.get("title")) == kit.norm(title))
    if hit is not None and "/search/" in kit.path(ob):
        return kit.click(ob, hit)
    d = kit.fill(ob, kit.require(kit.field(ob, "q"), "the search box"), title)
    if d is not None:
        return d
    return kit.click(ob, kit.button(ob, "Search"))


def _dashboard_menu(ob: Observation, menu: str, item: str) -> Decision | None:
    """Dashboard navigation bar: open ``menu`` then click ``item``."""
    entry = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == kit.norm(item) and "dropdown-item" in e.attrs.get("class", ""))
    if entry is not None and kit.visible(ob, entry):  # the menu is open
        return kit.click(ob, entry)
    top = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == kit.norm(menu) and "dropdown-toggle" in e.attrs.get("class", ""))
    return kit.click(ob, top)


def _shop_debug(task: ShopTask, ob: Observation, d: Decision | None) -> None:
    if os.environ.get("MAG_SHOP_DEBUG"):
        cands = [f"{c.id}:{c.role}:{c.text[:30]}" for c in ob.candidates]
        print(f"[{task.template}] {kit.location(ob)} -> {d}\n   {cands[:80]}", file=sys.stderr)


class ShopTask(SiteTask):
    """Base of the shop's tasks: the expert wraps :meth:`decide` (debug print with ``MAG_SHOP_DEBUG=1``)."""

    site_class = ShopSite
    template: ClassVar[str]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        d = self.decide(ob, memory)
        _shop_debug(self, ob, d)
        return d

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:  # pragma: no cover
        raise NotImplementedError

    # -- state helpers
    def _user_id(self, email: str) -> int:
        return int(self.site.query("select id from auth_user where email = ?", (email,))[0][0])

    def _product_id(self, upc: str) -> int:
        return int(self.site.query("select id from catalogue_product where upc = ?", (upc,))[0][0])


def _in_stock(rng: random.Random) -> dict[str, Any]:
    return rng.choice([p for p in seed_data()["products"] if p["stock"] > 0])


# ----------------------------------------------------------------------------- storefront
class AddToBasket(ShopTask):
    template = "add_to_basket"
    intent_template = 'Search the shop for "{title}" and add {quantity} of it to your basket.'
    user = CUSTOMER

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = _in_stock(rng)
        return {"title": p["title"], "upc": p["upc"], "quantity": rng.randint(2, min(5, p["stock"]))}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query(
            "select l.quantity from basket_line l join basket_basket b on b.id = l.basket_id "
            "join catalogue_product p on p.id = l.product_id where b.owner_id = ? and b.status = 'Open' and p.upc = ?",
            (self._user_id(CUSTOMER), self.params["upc"]))
        got = sum(r[0] for r in rows)
        return got == self.params["quantity"], f"basket holds {got} of {self.params['upc']}, want {self.params['quantity']}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        if memory.get("added"):
            return kit.finish()
        d = _search_and_open(ob, self.params["title"])
        if d is not None:
            return d
        d = kit.fill(ob, kit.field(ob, "quantity"), str(self.params["quantity"]))
        if d is not None:
            return d
        return kit.once(memory, "added", kit.click(ob, kit.button(ob, "Add to basket")))


class AddToWishlist(ShopTask):
    template = "add_to_wishlist"
    intent_template = 'Find "{title}" in the shop and add it to your wish list.'
    user = CUSTOMER

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = rng.choice(seed_data()["products"])
        return {"title": p["title"], "upc": p["upc"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        rows = self.site.query(
            "select count(*) from wishlists_line l join wishlists_wishlist w on w.id = l.wishlist_id "
            "join catalogue_product p on p.id = l.product_id where w.owner_id = ? and p.upc = ?",
            (self._user_id(CUSTOMER), self.params["upc"]))
        n = rows[0][0]
        return n >= 1, f"{n} wish-list line(s) for {self.params['upc']}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        if memory.get("added"):
            return kit.finish()
        d = _search_and_open(ob, self.params["title"])
        if d is not None:
            return d
        return kit.once(memory, "added", kit.click(ob, kit.button(ob, "Add to wish list")))


class ProductCategory(ShopTask):
    template = "product_category"
    intent_template = 'Which category of the shop is "{title}" listed in? Answer with the category name.'
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = rng.choice(seed_data()["products"])
        return {"title": p["title"], "category": p["category"], "top": p["top"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = kit.norm(self.params["category"]) in kit.norm(answer)
        return ok, f"answer {answer!r}, want {self.params['category']!r}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        d = _search_and_open(ob, self.params["title"])
        if d is not None:
            return d
        crumbs = kit.find_all(ob, lambda e: e.tag == "a" and "/catalogue/category/" in e.attrs["href"]
                              and "breadcrumb" in ob.elements[e.parent].attrs["class"])
        if not crumbs:
            return None
        return kit.finish(crumbs[-1].text)


class ProductPrice(ShopTask):
    template = "product_price"
    intent_template = 'How much does "{title}" cost in the shop? Answer with the price.'
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = rng.choice(seed_data()["products"])
        return {"title": p["title"], "price": p["price"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"[0-9]+(?:\.[0-9]+)?", (answer or "").replace(",", ""))
        ok = any(Decimal(g) == Decimal(self.params["price"]) for g in got)
        return ok, f"answer {answer!r}, want {self.params['price']}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        d = _search_and_open(ob, self.params["title"])
        if d is not None:
            return d
        price = kit.find(ob, lambda e: e.tag == "p" and "price_color" in e.attrs.get("class", ""))
        if price is None or not _money_in(price.text):
            return None
        return kit.finish(f"£{_money_in(price.text)[0]}")


class Checkout(ShopTask):
    template = "checkout"
    intent_template = ('Buy one "{title}" and have it shipped to {first} {last}, {line1}, {city}, {postcode}, '
                       '{country}. Place the order.')
    user = CUSTOMER

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = _in_stock(rng)
        city, cc = rng.choice(CITIES)
        return {"title": p["title"], "upc": p["upc"], "first": rng.choice(FIRST), "last": rng.choice(LAST),
                "line1": f"{rng.randint(1, 240)} {rng.choice(STREETS)}", "city": city,
                "postcode": f"{rng.choice('ABCDEFGH')}{rng.choice('JKLMNP')}{rng.randint(1, 19)} {rng.randint(1, 9)}AB"
                if cc in ("GB", "IE") else str(rng.randint(10000, 99999)), "country": COUNTRY_NAMES[cc], "cc": cc}

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
        p, path = self.params, kit.path(ob)
        if "/checkout/thank-you/" in path:
            return kit.finish()
        if "/checkout/preview/" in path:
            return kit.click(ob, kit.button(ob, "Place order"))
        if "/checkout/payment-details/" in path:
            return kit.click(ob, kit.button(ob, "Continue") or kit.link(ob, "Continue"))
        if "/checkout/shipping-method/" in path:
            return kit.click(ob, kit.button(ob, "Select option"))
        if "/checkout/shipping-address/" in path:
            for name, value in (("first_name", p["first"]), ("last_name", p["last"]), ("line1", p["line1"]),
                                ("line4", p["city"]), ("postcode", p["postcode"])):
                d = kit.fill(ob, kit.field(ob, name), value)
                if d is not None:
                    return d
            country = kit.field(ob, "country")
            if country is not None and (country.value or "") != p["cc"] and not memory.get("country"):
                return kit.once(memory, "country", kit.select(ob, country, p["cc"]))
            return kit.click(ob, kit.button(ob, "Continue"))
        if path.startswith("/basket/"):
            return kit.click(ob, kit.link(ob, "Proceed to checkout"))
        if memory.get("added"):
            return kit.click(ob, kit.link(ob, "View basket") or kit.button(ob, "View basket"))
        d = _search_and_open(ob, p["title"])
        if d is not None:
            return d
        return kit.once(memory, "added", kit.click(ob, kit.button(ob, "Add to basket")))


class EditProfile(ShopTask):
    template = "edit_profile"
    intent_template = 'Change the name on your shop account to "{first} {last}".'
    user = CUSTOMER
    start_path = "/catalogue/"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        first, last = rng.choice([f for f in FIRST if f != "Emma"]), rng.choice([x for x in LAST if x != "Smith"])
        return {"first": first, "last": last}

    def check(self, answer: str | None) -> tuple[bool, str]:
        row = self.site.query("select first_name, last_name from auth_user where email = ?", (CUSTOMER,))[0]
        return tuple(row) == (self.params["first"], self.params["last"]), f"name is {row[0]} {row[1]}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        path = kit.path(ob)
        if memory.get("saved"):
            return kit.finish()
        if path.startswith("/accounts/profile/edit/"):
            for name, value in (("first_name", self.params["first"]), ("last_name", self.params["last"])):
                d = kit.fill(ob, kit.field(ob, name), value)
                if d is not None:
                    return d
            return kit.once(memory, "saved", kit.click(ob, kit.button(ob, "Save")))
        if path.startswith("/accounts/profile/"):
            return kit.click(ob, kit.link(ob, "Edit profile"))
        if path.startswith("/accounts/"):
            return kit.click(ob, kit.link(ob, "Profile"))
        return kit.click(ob, kit.link(ob, "Account"))


class AddAddress(ShopTask):
    template = "add_address"
    intent_template = 'Add this address to your address book: {first} {last}, {line1}, {city}, {postcode}, {country}.'
    user = CUSTOMER
    start_path = "/catalogue/"

    sample = Checkout.sample

    def check(self, answer: str | None) -> tuple[bool, str]:
        p = self.params
        rows = self.site.query("select first_name, last_name, line1, line4, postcode, country_id from address_useraddress "
                               "where user_id = ?", (self._user_id(CUSTOMER),))
        want = tuple(kit.norm(x) for x in (p["first"], p["last"], p["line1"], p["city"], p["postcode"], p["cc"]))
        ok = any(tuple(kit.norm(x) for x in r) == want for r in rows)
        return ok, f"{len(rows)} address(es); {'found' if ok else 'none matches'} {want}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path = self.params, kit.path(ob)
        if memory.get("saved"):
            return kit.finish()
        if path.startswith("/accounts/addresses/add/"):
            for name, value in (("first_name", p["first"]), ("last_name", p["last"]), ("line1", p["line1"]),
                                ("line4", p["city"]), ("postcode", p["postcode"])):
                d = kit.fill(ob, kit.field(ob, name), value)
                if d is not None:
                    return d
            country = kit.field(ob, "country")
            if country is not None and not memory.get("country"):
                return kit.once(memory, "country", kit.select(ob, country, p["cc"]))
            return kit.once(memory, "saved", kit.click(ob, kit.button(ob, "Save")))
        if path.startswith("/accounts/addresses/"):
            return kit.click(ob, kit.link(ob, "Add a new address"))
        if path.startswith("/accounts/"):
            return kit.click(ob, kit.link(ob, "Address Book"))
        return kit.click(ob, kit.link(ob, "Account"))


# ----------------------------------------------------------------------------- dashboard
def _open_order(ob: Observation, number: str) -> Decision | None:
    """Dashboard: get to order ``number``'s detail page (None once there)."""
    path = kit.path(ob)
    if path.startswith(f"/dashboard/orders/{number}/"):
        return None
    if path.startswith("/dashboard/orders/"):
        d = kit.fill(ob, kit.field(ob, "order_number"), number)
        if d is not None:
            return d
        form = kit.by_id(ob, "search_form")
        btn = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "submit" and e.parent == (form.bid if form else None))
        return kit.click(ob, btn or kit.button(ob, "Search"))
    return _dashboard_menu(ob, "Fulfilment", "Orders")


class ChangeOrderStatus(ShopTask):
    template = "change_order_status"
    intent_template = 'In the shop dashboard, change the status of order #{number} to "{status}".'
    user = ADMIN
    start_path = "/dashboard/"

    def sample(self, rng: random.Random) -> dict[str, Any]:
        o = rng.choice([o for o in seed_data()["orders"] if ORDER_PIPELINE[o["status"]]])
        return {"number": o["number"], "old": o["status"], "status": rng.choice(ORDER_PIPELINE[o["status"]])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = self.site.query("select status from order_order where number = ?", (self.params["number"],))[0][0]
        return got == self.params["status"], f"order {self.params['number']} is {got!r}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        if memory.get("saved"):
            return kit.finish()
        d = _open_order(ob, self.params["number"])
        if d is not None:
            return d
        form = kit.by_id(ob, "order_status_form")
        sel = kit.find(ob, lambda e: e.tag == "select" and e.attrs.get("name") == "new_status" and form is not None
                       and _shop_inside(ob, e, form.bid))
        if sel is None:
            return None
        if not memory.get("chosen"):  # the DOM snapshot does not report a select's value: remember the choice
            d = _select2(ob, sel, self.params["status"])
            if d is not None and d.bid is not None and (d.type is ActionType.SELECT or ob.elements[d.bid].tag == "li"):
                memory["chosen"] = True
            return d
        btn = kit.find(ob, lambda e: e.tag == "button" and kit.norm(e.text) == "change status"
                       and _shop_inside(ob, e, form.bid))
        return kit.once(memory, "saved", kit.click(ob, kit.require(btn, 'the "Change status" button')))


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
    user = ADMIN
    start_path = "/dashboard/"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        o = rng.choice(seed_data()["orders"])
        return {"number": o["number"], "total": o["total"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"[0-9]+(?:\.[0-9]+)?", (answer or "").replace(",", ""))
        ok = any(Decimal(g) == Decimal(self.params["total"]) for g in got)
        return ok, f"answer {answer!r}, want {self.params['total']}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        d = _open_order(ob, self.params["number"])
        if d is not None:
            return d
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
        return kit.finish(f"£{money[0]}")


class CountOrdersByStatus(ShopTask):
    template = "count_orders_by_status"
    intent_template = 'How many orders in the shop have the status "{status}"? Filter the dashboard\'s order list and answer with the number.'
    user = ADMIN
    start_path = "/dashboard/"
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        status = rng.choice(sorted(ORDER_PIPELINE))
        return {"status": status, "count": sum(o["status"] == status for o in seed_data()["orders"])}

    def check(self, answer: str | None) -> tuple[bool, str]:
        got = re.findall(r"\d+", answer or "")
        ok = bool(got) and int(got[0]) == self.params["count"]
        return ok, f"answer {answer!r}, want {self.params['count']}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        path = kit.path(ob)
        if path.startswith("/dashboard/orders/") and "status=" in ob.url:
            m = re.search(r"Select all (\d+)", kit.page_text(ob))
            if m:
                return kit.finish(m.group(1))
            rows = {e.text for e in ob.elements.values() if e.tag == "a" and re.fullmatch(r"\d{6}", e.text)
                    and re.search(r"/dashboard/orders/\d+/", e.attrs.get("href", ""))}
            return kit.finish(str(len(rows)))
        if path.startswith("/dashboard/orders/"):
            # the status filter is a select2 widget in the "Advanced Search" modal; the filtered
            # list has its own URL, which the agent may open directly
            base = re.match(r"^https?://[^/]+", ob.url).group(0)  # type: ignore[union-attr]
            return Decision(ActionType.GOTO, url=f"{base}/dashboard/orders/?status={self.params['status'].replace(' ', '+')}")
        return _dashboard_menu(ob, "Fulfilment", "Orders")


class EditProductStock(ShopTask):
    template = "edit_product_stock"
    intent_template = 'In the shop dashboard, set the price of "{title}" to £{price} and its stock to {stock} units.'
    user = ADMIN
    start_path = "/dashboard/"

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
        if memory.get("saved"):
            return kit.finish()
        if re.match(r"^/dashboard/catalogue/products/\d+/", path):
            price = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("name", "").endswith("-price")
                             and e.attrs.get("name", "").startswith("stockrecords-0"))
            stock = kit.find(ob, lambda e: e.tag == "input" and e.attrs.get("name") == "stockrecords-0-num_in_stock")
            if price is not None and not kit.visible(ob, price) and not memory.get("tab"):
                return kit.once(memory, "tab", kit.click(ob, kit.link(ob, "Stock and pricing")))
            for el, value in ((price, p["price"]), (stock, str(p["stock"]))):
                if el is not None and Decimal((el.value or "0").replace(",", "") or "0") != Decimal(value):
                    return kit.fill(ob, el, value)
            return kit.once(memory, "saved", kit.click(ob, kit.button(ob, "Save")))
        if path.startswith("/dashboard/catalogue/"):
            hit = kit.find(ob, lambda e: e.tag == "a" and kit.norm(e.text) == kit.norm(p["title"]))
            if hit is not None and "title=" in ob.url:
                return kit.click(ob, hit)
            d = kit.fill(ob, kit.field(ob, "title"), p["title"])
            if d is not None:
                return d
            return kit.click(ob, kit.button(ob, "Search"))
        return _dashboard_menu(ob, "Catalogue", "Products")


TASKS: tuple[type[SiteTask], ...] = (
    AddToBasket, AddToWishlist, ProductCategory, ProductPrice, Checkout, EditProfile, AddAddress,
    ChangeOrderStatus, OrderTotal, CountOrdersByStatus, EditProductStock,
)
