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
from typing import Any, Callable, ClassVar

from mag_dataset.actions import ActionType
from mag_dataset.live.experts import Decision
from mag_dataset.live.observe import Element, Observation
from mag_dataset.sites.shop import ShopSite
from mag_dataset.sites.shop.seed_data import (COUNTRY_NAMES, CITIES, FIRST, LAST, ORDER_PIPELINE, STAFF, STREETS,
                                              TASK_CUSTOMERS, seed_data)
from mag_dataset.sites.task import SiteTask

CUSTOMER = TASK_CUSTOMERS[0]["email"]
ADMIN = STAFF["email"]


# ----------------------------------------------------------------------------- observation helpers
def _norm(s: str | None) -> str:
    return " ".join((s or "").split()).lower()


def _find(ob: Observation, pred: Callable[[Element], bool]) -> Element | None:
    """First element (document order) matching ``pred``, visible or not."""
    return next((el for el in ob.elements.values() if pred(el)), None)


def _link(ob: Observation, text: str, exact: bool = True) -> Element | None:
    want = _norm(text)
    return _find(ob, lambda e: e.tag == "a" and (_norm(e.text) == want if exact else want in _norm(e.text)))


def _button(ob: Observation, text: str) -> Element | None:
    want = _norm(text)
    return _find(ob, lambda e: (e.tag == "button" and _norm(e.text) == want)
                 or (e.tag == "input" and e.attrs.get("type") == "submit" and _norm(e.attrs.get("value")) == want))


def _field(ob: Observation, name: str) -> Element | None:
    return _find(ob, lambda e: e.tag in ("input", "select", "textarea") and e.attrs.get("name") == name
                 and e.attrs.get("type") != "hidden")


def _path(ob: Observation) -> str:
    return re.sub(r"^https?://[^/]+", "", ob.url)


def _reach(ob: Observation, el: Element | None, make: Callable[[Element], Decision]) -> Decision | None:
    """Act on ``el`` when it is a visible candidate, else scroll towards it (None: not on the page)."""
    if el is None:
        return None
    if ob.candidate(el.bid) is not None:
        return make(el)
    if el.bbox is None or (0 <= el.bbox[1] < 720 and el.bbox[3] - el.bbox[1] < 2):
        return None  # hidden where it stands (a select behind a select2 widget): scrolling will not help
    focused = ob.elements.get(ob.focused or "")
    typing = focused is not None and focused.tag in ("input", "textarea", "select")
    if el.bbox[1] > 3 * 720 and not typing:  # far below: jump to the end of the page, as a user would
        return Decision(ActionType.PRESS, key="End")
    return Decision(ActionType.SCROLL, direction="up" if el.bbox[1] < 0 else "down")


def _click(ob: Observation, el: Element | None) -> Decision | None:
    return _reach(ob, el, lambda e: Decision(ActionType.CLICK, e.bid))


def _fill(ob: Observation, el: Element | None, text: str) -> Decision | None:
    """Type ``text`` into the field unless it already holds it (None when it does or is absent)."""
    if el is None or (el.value or "") == text:
        return None
    return _reach(ob, el, lambda e: Decision(ActionType.TYPE, e.bid, text=text))


def _select(ob: Observation, el: Element | None, value: str) -> Decision | None:
    if el is None:
        return None
    return _reach(ob, el, lambda e: Decision(ActionType.SELECT, e.bid, value=value))


def _flag(memory: dict[str, Any], key: str, d: Decision | None) -> Decision | None:
    """Remember ``key`` once the decision really clicks (not while it scrolls towards the target)."""
    if d is not None and d.type is ActionType.CLICK:
        memory[key] = True
    return d


def _finish(answer: str = "done") -> Decision:
    return Decision(ActionType.FINISH, answer=answer)


def _page_text(ob: Observation) -> str:
    root = _find(ob, lambda e: e.tag == "body") or _find(ob, lambda e: e.parent is None)
    return root.all_text if root is not None else " ".join(e.own_text for e in ob.elements.values())


def _h1(ob: Observation) -> str:
    el = _find(ob, lambda e: e.tag == "h1")
    return el.text if el is not None else ""


def _money_in(text: str) -> list[Decimal]:
    return [Decimal(m.replace(",", "")) for m in re.findall(r"£\s?([0-9][0-9,]*\.[0-9]{2})", text)]


def _search_and_open(ob: Observation, title: str) -> Decision | None:
    """Storefront: search the title and open its product page (None once on that page)."""
    if _norm(_h1(ob)) == _norm(title) and "/catalogue/" in _path(ob):
        return None
    hit = _find(ob, lambda e: e.tag == "a" and _norm(e.attrs.get("title")) == _norm(title))
    if hit is not None and "/search/" in _path(ob):
        return _click(ob, hit)
    box = _field(ob, "q")
    if box is None:
        raise ValueError("no search box on the page")
    d = _fill(ob, box, title)
    if d is not None:
        return d
    return _click(ob, _button(ob, "Search"))


def _dashboard_menu(ob: Observation, menu: str, item: str) -> Decision | None:
    """Dashboard navigation bar: open ``menu`` then click ``item``."""
    entry = _find(ob, lambda e: e.tag == "a" and _norm(e.text) == _norm(item) and "dropdown-item" in e.attrs.get("class", ""))
    if entry is not None and ob.candidate(entry.bid) is not None:
        return Decision(ActionType.CLICK, entry.bid)
    top = _find(ob, lambda e: e.tag == "a" and _norm(e.text) == _norm(menu) and "dropdown-toggle" in e.attrs.get("class", ""))
    return _click(ob, top)


def _debug(task: "ShopTask", ob: Observation, d: Decision | None) -> None:
    if os.environ.get("MAG_SHOP_DEBUG"):
        cands = [f"{c.id}:{c.role}:{c.text[:30]}" for c in ob.candidates]
        print(f"[{task.template}] {_path(ob)} -> {d}\n   {cands[:80]}", file=sys.stderr)


class ShopTask(SiteTask):
    """Base of the shop's tasks: the expert wraps :meth:`decide` (debug print with ``MAG_SHOP_DEBUG=1``)."""

    site_class = ShopSite
    template: ClassVar[str]

    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        d = self.decide(ob, memory)
        _debug(self, ob, d)
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
            return _finish()
        d = _search_and_open(ob, self.params["title"])
        if d is not None:
            return d
        d = _fill(ob, _field(ob, "quantity"), str(self.params["quantity"]))
        if d is not None:
            return d
        return _flag(memory, "added", _click(ob, _button(ob, "Add to basket")))


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
            return _finish()
        d = _search_and_open(ob, self.params["title"])
        if d is not None:
            return d
        return _flag(memory, "added", _click(ob, _button(ob, "Add to wish list")))


class ProductCategory(ShopTask):
    template = "product_category"
    intent_template = 'Which category of the shop is "{title}" listed in? Answer with the category name.'
    answer_task = True

    def sample(self, rng: random.Random) -> dict[str, Any]:
        p = rng.choice(seed_data()["products"])
        return {"title": p["title"], "category": p["category"], "top": p["top"]}

    def check(self, answer: str | None) -> tuple[bool, str]:
        ok = _norm(self.params["category"]) in _norm(answer)
        return ok, f"answer {answer!r}, want {self.params['category']!r}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        d = _search_and_open(ob, self.params["title"])
        if d is not None:
            return d
        crumbs = [e for e in ob.elements.values() if e.tag == "a" and "/catalogue/category/" in e.attrs.get("href", "")
                  and _find(ob, lambda x: x.bid == e.parent and "breadcrumb" in x.attrs.get("class", "")) is not None]
        if not crumbs:
            return None
        return _finish(crumbs[-1].text)


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
        price = _find(ob, lambda e: e.tag == "p" and "price_color" in e.attrs.get("class", ""))
        if price is None or not _money_in(price.text):
            return None
        return _finish(f"£{_money_in(price.text)[0]}")


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
            if tuple(_norm(x) for x in got) == tuple(_norm(x) for x in want):
                return True, f"order {r[0]} ships to {', '.join(got)}"
        return False, f"new order(s) ship elsewhere: {new}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path = self.params, _path(ob)
        if "/checkout/thank-you/" in path:
            return _finish()
        if "/checkout/preview/" in path:
            return _click(ob, _button(ob, "Place order"))
        if "/checkout/payment-details/" in path:
            return _click(ob, _button(ob, "Continue") or _link(ob, "Continue"))
        if "/checkout/shipping-method/" in path:
            return _click(ob, _button(ob, "Select option"))
        if "/checkout/shipping-address/" in path:
            for name, value in (("first_name", p["first"]), ("last_name", p["last"]), ("line1", p["line1"]),
                                ("line4", p["city"]), ("postcode", p["postcode"])):
                d = _fill(ob, _field(ob, name), value)
                if d is not None:
                    return d
            country = _field(ob, "country")
            if country is not None and (country.value or "") != p["cc"]:
                if not memory.get("country"):
                    memory["country"] = True
                    return _select(ob, country, p["cc"])
            return _click(ob, _button(ob, "Continue"))
        if path.startswith("/basket/"):
            return _click(ob, _link(ob, "Proceed to checkout"))
        if memory.get("added"):
            return _click(ob, _link(ob, "View basket") or _button(ob, "View basket"))
        d = _search_and_open(ob, p["title"])
        if d is not None:
            return d
        return _flag(memory, "added", _click(ob, _button(ob, "Add to basket")))


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
        path = _path(ob)
        if memory.get("saved"):
            return _finish()
        if path.startswith("/accounts/profile/edit/"):
            for name, value in (("first_name", self.params["first"]), ("last_name", self.params["last"])):
                d = _fill(ob, _field(ob, name), value)
                if d is not None:
                    return d
            return _flag(memory, "saved", _click(ob, _button(ob, "Save")))
        if path.startswith("/accounts/profile/"):
            return _click(ob, _link(ob, "Edit profile"))
        if path.startswith("/accounts/"):
            return _click(ob, _link(ob, "Profile"))
        return _click(ob, _link(ob, "Account"))


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
        want = tuple(_norm(x) for x in (p["first"], p["last"], p["line1"], p["city"], p["postcode"], p["cc"]))
        ok = any(tuple(_norm(x) for x in r) == want for r in rows)
        return ok, f"{len(rows)} address(es); {'found' if ok else 'none matches'} {want}"

    def decide(self, ob: Observation, memory: dict[str, Any]) -> Decision | None:
        p, path = self.params, _path(ob)
        if memory.get("saved"):
            return _finish()
        if path.startswith("/accounts/addresses/add/"):
            for name, value in (("first_name", p["first"]), ("last_name", p["last"]), ("line1", p["line1"]),
                                ("line4", p["city"]), ("postcode", p["postcode"])):
                d = _fill(ob, _field(ob, name), value)
                if d is not None:
                    return d
            country = _field(ob, "country")
            if country is not None and not memory.get("country"):
                memory["country"] = True
                return _select(ob, country, p["cc"])
            return _flag(memory, "saved", _click(ob, _button(ob, "Save")))
        if path.startswith("/accounts/addresses/"):
            return _click(ob, _link(ob, "Add a new address"))
        if path.startswith("/accounts/"):
            return _click(ob, _link(ob, "Address Book"))
        return _click(ob, _link(ob, "Account"))


# ----------------------------------------------------------------------------- dashboard
def _open_order(ob: Observation, number: str) -> Decision | None:
    """Dashboard: get to order ``number``'s detail page (None once there)."""
    path = _path(ob)
    if path.startswith(f"/dashboard/orders/{number}/"):
        return None
    if path.startswith("/dashboard/orders/"):
        d = _fill(ob, _field(ob, "order_number"), number)
        if d is not None:
            return d
        form = _find(ob, lambda e: e.attrs.get("id") == "search_form")
        btn = _find(ob, lambda e: e.tag == "input" and e.attrs.get("type") == "submit" and e.parent == (form.bid if form else None))
        return _click(ob, btn or _button(ob, "Search"))
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
            return _finish()
        d = _open_order(ob, self.params["number"])
        if d is not None:
            return d
        form = _find(ob, lambda e: e.attrs.get("id") == "order_status_form")
        sel = _find(ob, lambda e: e.tag == "select" and e.attrs.get("name") == "new_status" and form is not None
                    and _inside(ob, e, form.bid))
        if sel is None:
            return None
        if not memory.get("chosen"):  # the DOM snapshot does not report a select's value: remember the choice
            d = _select2(ob, sel, self.params["status"])
            if d is not None and (d.type is ActionType.SELECT or ob.elements[d.bid].tag == "li" if d.bid else False):
                memory["chosen"] = True
            return d
        memory["saved"] = True
        btn = _find(ob, lambda e: e.tag == "button" and _norm(e.text) == "change status" and _inside(ob, e, form.bid))
        return _click(ob, btn)


def _select2(ob: Observation, sel: Element, value: str) -> Decision | None:
    """Choose ``value`` in a select the dashboard shows as a select2 widget (open it, click the option)."""
    if ob.candidate(sel.bid) is not None:
        return _select(ob, sel, value)
    option = _find(ob, lambda e: e.tag == "li" and "select2-results__option" in e.attrs.get("class", "")
                   and _norm(e.text) == _norm(value))
    if option is not None and ob.candidate(option.bid) is not None:
        return Decision(ActionType.CLICK, option.bid)
    siblings = ob.elements[sel.parent].children if sel.parent in ob.elements else []
    after = siblings[siblings.index(sel.bid) + 1:] if sel.bid in siblings else []
    widget = next((ob.elements[b] for b in after if "select2" in ob.elements[b].attrs.get("class", "")), None)
    box = _find(ob, lambda e: e.role == "combobox" and widget is not None and _inside(ob, e, widget.bid))
    return _click(ob, box)


def _inside(ob: Observation, el: Element, ancestor: str) -> bool:
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
        th = _find(ob, lambda e: e.tag == "th" and _norm(e.text) == "order total")
        if th is None or th.parent not in ob.elements:
            return None
        head = ob.elements[th.parent]  # header row; the values are in the next row, same column
        column = [c for c in head.children if ob.elements[c].tag == "th"].index(th.bid)
        rows = [r for r in ob.elements.values() if r.tag == "tr" and r.parent == head.parent] or \
            [r for r in ob.elements.values() if r.tag == "tr" and _inside(ob, r, ob.elements[head.parent].parent or "")]
        after = rows[rows.index(head) + 1:] if head in rows else []
        cells = [ob.elements[c] for c in (after[0].children if after else []) if ob.elements[c].tag == "td"]
        money = _money_in(cells[column].text) if len(cells) > column else []
        if not money:
            return None
        return _finish(f"£{money[0]}")


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
        path = _path(ob)
        if path.startswith("/dashboard/orders/") and "status=" in ob.url:
            m = re.search(r"Select all (\d+)", _page_text(ob))
            if m:
                return _finish(m.group(1))
            rows = {e.text for e in ob.elements.values() if e.tag == "a" and re.fullmatch(r"\d{6}", e.text)
                    and re.search(r"/dashboard/orders/\d+/", e.attrs.get("href", ""))}
            return _finish(str(len(rows)))
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
        p, path = self.params, _path(ob)
        if memory.get("saved"):
            return _finish()
        if re.match(r"^/dashboard/catalogue/products/\d+/", path):
            price = _find(ob, lambda e: e.tag == "input" and e.attrs.get("name", "").endswith("-price")
                          and e.attrs.get("name", "").startswith("stockrecords-0"))
            stock = _find(ob, lambda e: e.tag == "input" and e.attrs.get("name") == "stockrecords-0-num_in_stock")
            if price is not None and ob.candidate(price.bid) is None and not memory.get("tab"):
                return _flag(memory, "tab", _click(ob, _link(ob, "Stock and pricing")))
            for el, value in ((price, p["price"]), (stock, str(p["stock"]))):
                if el is not None and Decimal((el.value or "0").replace(",", "") or "0") != Decimal(value):
                    return _reach(ob, el, lambda e, v=value: Decision(ActionType.TYPE, e.bid, text=v))
            return _flag(memory, "saved", _click(ob, _button(ob, "Save")))
        if path.startswith("/dashboard/catalogue/"):
            hit = _find(ob, lambda e: e.tag == "a" and _norm(e.text) == _norm(p["title"]))
            if hit is not None and "title=" in ob.url:
                return _click(ob, hit)
            d = _fill(ob, _field(ob, "title"), p["title"])
            if d is not None:
                return d
            return _click(ob, _button(ob, "Search"))
        return _dashboard_menu(ob, "Catalogue", "Products")


TASKS: tuple[type[SiteTask], ...] = (
    AddToBasket, AddToWishlist, ProductCategory, ProductPrice, Checkout, EditProfile, AddAddress,
    ChangeOrderStatus, OrderTotal, CountOrdersByStatus, EditProductStock,
)
