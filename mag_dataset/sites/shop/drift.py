"""The shop's drift: a few days of other users' activity written into the seeded Oscar database.

:meth:`mag_dataset.sites.base.Site.drift` moves a reset site on the way a live shop moves on
between a demonstration and its re-rendering (the path of the stale screenshots of WebMRE,
arXiv 2609.27353, see :mod:`mag_dataset.harness.recapture`). Each level is about :data:`DAYS_PER_LEVEL` days of it, in
the days just before the seed's "now" (``FROZEN_NOW``, the server's clock at start), so the
staff dashboard's last-24-hours chart and counters show part of it:

* **orders** by other customers (never the tasks' users), each from a submitted basket and
  numbered ``100000 + basket id`` as Oscar numbers them, shipped to the customer's address;
  the older ones already moved along the status pipeline (with Oscar's status-change
  records) and the stock they take is allocated (until shipped) or consumed (shipped);
* **status changes** of seeded orders along ``ORDER_PIPELINE`` (staff fulfilling orders);
* **price changes** (sales and rises) and **stock changes** (deliveries, stock-take
  corrections, and the new orders' sales) on many products;
* **reviews** by customers of products they bought, with the product's rating recomputed;
* a few **new products** in the leaf categories, with stock record and image.

Products that staff edited or that got a review carry a new ``date_updated``: the dashboard's
product list (newest first) shows them on top, and :func:`sync_search_index` re-indexes them
in the Whoosh index the storefront browses and searches, as a nightly ``update_index --age``
would (re-indexed products move to the end of the catalogue's default order).

Everything is drawn from the given ``random.Random`` over rows read in a fixed order, names
and words come from :mod:`mag_dataset.sites.shop.seed_data`, and every timestamp is a whole
minute in the drift's window: the same seed and level on a reset site give the same rows.
Nothing is deleted, no user, address or credential is touched, and no product's title or
category changes, so the task templates' parameters all still exist. It writes with plain SQL
in one short transaction (Django's formats: UTC ``YYYY-MM-DD HH:MM:SS``, decimals as numbers);
the server may keep running.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import unicodedata
import urllib.parse
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

from mag_dataset.sites.base import Site, SiteError
from mag_dataset.sites.shop.seed_data import (CATEGORY_TREE, COLOURS, COUNTRY_NAMES, FROZEN_NOW, ORDER_PIPELINE,
                                              PARTNERS, STAFF, TASK_CUSTOMERS)

#: Days of other users' activity per drift level.
DAYS_PER_LEVEL = 3
#: Per level: (fewest, most) of each kind of change.
PER_LEVEL: dict[str, tuple[int, int]] = {
    "products": (2, 4), "orders": (10, 14), "status_changes": (10, 16), "price_changes": (28, 40),
    "restocks": (40, 60), "reviews": (10, 16),
}
#: Users the drift never acts as or for: the accounts tasks log in as.
PROTECTED_EMAILS = (STAFF["email"], *(c["email"] for c in TASK_CUSTOMERS))
#: Seed values reused for new products (seed_data.seed_data's draws).
PRICE_POINTS = ("4.99", "9.50", "12.00", "14.99", "19.99", "24.50", "29.00", "34.99", "49.99", "59.00", "79.99",
                "99.00", "129.00", "149.99", "199.00", "249.99", "399.00")
STOCK_LEVELS = (3, 8, 15, 25, 40, 60, 100)
#: Product image colours, as the seeding script draws them (``project/seed.py``).
RGB = {"Black": (40, 40, 40), "White": (235, 235, 235), "Red": (200, 50, 50), "Blue": (50, 90, 200),
       "Green": (60, 160, 80), "Grey": (140, 140, 140), "Orange": (240, 140, 40), "Teal": (40, 150, 150),
       "Navy": (30, 40, 110), "Olive": (120, 130, 50)}
#: Review titles and sentences by score; ``{noun}``, ``{brand}`` and ``{colour}`` come from the product.
REVIEW_TITLES: dict[int, tuple[str, ...]] = {
    5: ("Excellent {noun}", "Exactly as described", "Would buy again", "Great value for money", "Love this {noun}"),
    4: ("Very good {noun}", "Does the job well", "Solid {brand} quality", "Happy with it"),
    3: ("Decent but not perfect", "Okay for the price", "An average {noun}"),
    2: ("Disappointing", "Not as pictured", "Expected more from {brand}"),
    1: ("Stopped working after a week", "Poor quality", "Arrived damaged"),
}
REVIEW_SENTENCES: dict[int, tuple[str, ...]] = {
    5: ("The {colour} finish looks even better in person.", "Arrived in two days and works perfectly.",
        "Best {noun} I have owned.", "Well made and sturdy."),
    4: ("Good quality for the price.", "Arrived quickly and well packed.", "The {colour} is slightly darker than "
        "the photo, but I like it.", "Does everything I need."),
    3: ("It is fine, nothing special.", "Took a while to arrive.", "Smaller than I expected.",
        "Works, but the {colour} colour fades."),
    2: ("The {colour} looks different from the picture.", "Feels cheaper than other {brand} products.",
        "Had to send the first one back."),
    1: ("Broke within days.", "The box was damaged and parts were missing.", "Would not recommend this {noun}."),
}
SCORES = (5, 5, 5, 5, 4, 4, 4, 3, 3, 2, 1)
_TIME = "%Y-%m-%d %H:%M:%S"


@dataclass
class _Product:
    id: int
    upc: str
    title: str
    price: Decimal
    stock: int
    allocated: int | None
    stockrecord: int
    partner: int
    partner_name: str
    sku: str
    staff_edit: dt.datetime | None = None  # a staff edit or a review (Product.save): new date_updated
    stock_edit: dt.datetime | None = None  # the stock record's last save (price, stock or allocation)
    reviews: list[int] = field(default_factory=list)


def drift(site: Site, rng: Any, level: int) -> dict[str, int]:
    """Write ``level`` x :data:`DAYS_PER_LEVEL` days of other users' activity into the shop's database.

    Call on a reset site (:meth:`mag_dataset.sites.base.Site.drift` holds the lock and then
    runs ``after_reset``, which re-indexes the updated products: :func:`sync_search_index`).

    Args:
        site: the shop.
        rng: a ``random.Random``; every choice is drawn from it.
        level: how many times :data:`DAYS_PER_LEVEL` days of activity.

    Returns:
        Counts per kind of change: ``products`` (new), ``orders`` and ``order_lines`` (new),
        ``status_changes`` (seeded orders whose status moved on), ``price_changes`` and
        ``stock_changes`` (products whose price, or stock or allocation, changed), ``reviews``.
    """
    db = site.databases()[0]
    end = FROZEN_NOW.replace(tzinfo=None) - dt.timedelta(minutes=10)
    con = sqlite3.connect(str(db), timeout=30, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            latest = _parse(con.execute("select max(date_placed) from order_order where basket_id is null").fetchone()[0])
            start = max(end - dt.timedelta(days=DAYS_PER_LEVEL * level), latest + dt.timedelta(hours=1))
            counts = _Drift(con, rng, level, start, end, site.home / "media").run()
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    return counts


class _Drift:
    """One drift's draws and writes, on an open transaction."""

    def __init__(self, con: sqlite3.Connection, rng: Any, level: int, start: dt.datetime, end: dt.datetime,
                 media: Path):
        self.con, self.rng, self.level, self.start, self.end, self.media = con, rng, level, start, end, media
        self.products = [_Product(r[0], r[1], r[2], _money(r[3]), r[4] or 0, r[5], r[6], r[7], r[8], r[9])
                         for r in con.execute(
            "select p.id, p.upc, p.title, s.price, s.num_in_stock, s.num_allocated, s.id, s.partner_id, pa.name, "
            "s.partner_sku from catalogue_product p join partner_stockrecord s on s.product_id = p.id "
            "join partner_partner pa on pa.id = s.partner_id where p.parent_id is null order by p.id")]
        self.seeded = {p.id: (p.price, p.stock, p.allocated) for p in self.products}
        protected = ",".join("?" * len(PROTECTED_EMAILS))
        self.customers = con.execute(
            "select u.id, a.first_name, a.last_name, a.line1, a.line4, a.postcode, a.country_id from auth_user u "
            "join address_useraddress a on a.user_id = u.id and a.is_default_for_shipping "
            f"where not u.is_staff and u.email not in ({protected}) order by u.id", PROTECTED_EMAILS).fetchall()
        self.customer_ids = {c[0] for c in self.customers}

    def when(self, after: dt.datetime | None = None) -> dt.datetime:
        """A whole minute in the window (after ``after`` when given)."""
        lo = self.start if after is None else max(self.start, after)
        span = max(1, int((self.end - lo).total_seconds() // 60))
        return lo + dt.timedelta(minutes=self.rng.randrange(span))

    def count(self, kind: str) -> int:
        lo, hi = PER_LEVEL[kind]
        return sum(self.rng.randint(lo, hi) for _ in range(self.level))

    def run(self) -> dict[str, int]:
        counts = {"products": self.new_products(), "price_changes": self.price_changes()}
        self.restocks()
        counts["orders"], counts["order_lines"] = self.new_orders()
        counts["status_changes"] = self.status_changes()
        counts["reviews"] = self.reviews()
        for p in self.products:
            if p.stock_edit is not None:
                self.con.execute("update partner_stockrecord set price = ?, num_in_stock = ?, num_allocated = ?, "
                                 "date_updated = ? where id = ?",
                                 (str(p.price), p.stock, p.allocated, _fmt(p.stock_edit), p.stockrecord))
            if p.staff_edit is not None:
                self.con.execute("update catalogue_product set date_updated = ? where id = ?", (_fmt(p.staff_edit), p.id))
        counts["stock_changes"] = sum(1 for p in self.products if p.id in self.seeded
                                      and (p.stock, p.allocated) != self.seeded[p.id][1:])
        return counts

    # ------------------------------------------------------------------ catalogue
    def new_products(self) -> int:
        """A few new products in random leaf categories, as staff add them in the dashboard."""
        cats = {name: cid for cid, name in self.con.execute("select id, name from catalogue_category where depth = 2")}
        partners = dict(self.con.execute("select name, id from partner_partner"))
        goods = self.con.execute("select id from catalogue_productclass order by id").fetchone()[0]
        titles = {p.title.lower() for p in self.products}
        leaves = [(top, leaf) for top, subs in CATEGORY_TREE.items() for leaf in subs]
        n = self.count("products")
        made = 0
        while made < n:
            top, leaf = self.rng.choice(leaves)
            brands, nouns = CATEGORY_TREE[top][leaf]
            title = f"{self.rng.choice(brands)} {self.rng.choice(COLOURS)} {self.rng.choice(nouns)}"
            if title.lower() in titles:
                title = f"{title} {self.rng.choice(('Pro', 'Mini', 'Plus', 'Lite', 'Max', 'II', 'Classic'))}"
            if title.lower() in titles:
                continue
            titles.add(title.lower())
            k = 1 + max(int(p.upc[3:]) for p in self.products if re.fullmatch(r"MAG\d{5}", p.upc))
            upc, sku, partner = f"MAG{k:05d}", f"SKU-{k:05d}", PARTNERS[(k - 1) % len(PARTNERS)]
            price, stock = Decimal(self.rng.choice(PRICE_POINTS)), self.rng.choice(STOCK_LEVELS)
            at = _fmt(self.when())
            slug = _slugify(title)
            pid = self.con.execute(
                "insert into catalogue_product (structure, upc, title, slug, description, rating, date_created, "
                "date_updated, is_discountable, product_class_id, is_public, meta_description, meta_title, priority, "
                "code, parent_id) values ('standalone', ?, ?, ?, ?, null, ?, ?, 1, ?, 1, null, null, 0, null, null)",
                (upc, title, slug, f"The {title} from our {leaf.lower()} range. Sturdy, well reviewed and shipped "
                 f"within two working days.", at, at, goods)).lastrowid
            self.con.execute("insert into catalogue_productcategory (category_id, product_id) values (?, ?)",
                             (cats[leaf], pid))
            sid = self.con.execute(
                "insert into partner_stockrecord (partner_sku, price, num_in_stock, num_allocated, low_stock_threshold, "
                "date_created, date_updated, partner_id, product_id, price_currency) "
                "values (?, ?, ?, null, null, ?, ?, ?, ?, 'GBP')",
                (sku, str(price), stock, at, at, partners[partner], pid)).lastrowid
            colour = next(c for c in COLOURS if c in title.split())
            image = f"images/products/drift/{slug}.png"
            _write_image(self.media / image, colour, title)
            self.con.execute("insert into catalogue_productimage (original, caption, display_order, date_created, "
                             "product_id, code) values (?, ?, 0, ?, ?, null)", (image, title, at, pid))
            self.products.append(_Product(pid, upc, title, price, stock, None, sid, partners[partner], partner, sku))
            made += 1
        return made

    def seeded_products(self) -> list[_Product]:
        return [p for p in self.products if p.id in self.seeded]

    def price_changes(self) -> int:
        """Sales (60%) and rises on many products, at x.99 / x.49 prices."""
        pool = self.seeded_products()
        chosen = self.rng.sample(pool, min(len(pool), self.count("price_changes")))
        for p in chosen:
            share = Decimal(self.rng.choice(("0.05", "0.10", "0.15", "0.20", "0.25")))
            sale = self.rng.random() < 0.6
            target = p.price * (1 - share if sale else 1 + share)
            new = target.to_integral_value(ROUND_FLOOR) + Decimal(self.rng.choice(("0.99", "0.49", "0.00")))
            if new == p.price:
                new += -1 if sale else 1
            new = max(Decimal("1.99"), new)
            p.price = new
            _edited(p, self.when(), staff=True)
        return len(chosen)

    def restocks(self) -> None:
        """Deliveries (mostly to sold-out and low products) and stock-take corrections, by staff."""
        pool = self.seeded_products()
        weights = [4 if p.stock <= 3 else 1 for p in pool]
        chosen: list[_Product] = []
        n = min(len(pool), self.count("restocks"))
        while len(chosen) < n:
            p = self.rng.choices(pool, weights)[0]
            if p not in chosen:
                chosen.append(p)
        for p in chosen:
            if p.stock > 3 and self.rng.random() < 0.25:
                p.stock -= self.rng.randint(1, 3)  # a stock-take correction
            else:
                p.stock += self.rng.choice((10, 12, 20, 24, 25, 40, 50))
            _edited(p, self.when(), staff=True)

    # ------------------------------------------------------------------ orders
    def new_orders(self) -> tuple[int, int]:
        """Orders by other customers; a third in the last 24 hours (the dashboard's chart)."""
        n = self.count("orders")
        recent = self.end - dt.timedelta(hours=23)
        times = sorted([self.when(recent) for _ in range((n + 2) // 3)] + [self.when() for _ in range(n - (n + 2) // 3)])
        names = dict(self.con.execute("select iso_3166_1_a2, printable_name from address_country"))
        n_orders = n_lines = 0
        for placed in times:
            cust = self.rng.choice(self.customers)
            lines = self.order_lines()
            if not lines:
                continue
            basket_at = placed - dt.timedelta(minutes=self.rng.randint(4, 90))
            basket = self.con.execute(
                "insert into basket_basket (status, date_created, date_merged, date_submitted, owner_id) "
                "values ('Submitted', ?, null, ?, ?)", (_fmt(basket_at), _fmt(placed), cust[0])).lastrowid
            for p, qty in lines:
                self.con.execute(
                    "insert into basket_line (line_reference, quantity, price_currency, price_excl_tax, price_incl_tax, "
                    "date_created, basket_id, product_id, stockrecord_id, date_updated, tax_code) "
                    "values (?, ?, 'GBP', ?, ?, ?, ?, ?, ?, ?, null)",
                    (f"{p.id}_{p.stockrecord}", qty, str(p.price), str(p.price), _fmt(basket_at), basket, p.id,
                     p.stockrecord, _fmt(basket_at)))
            first, last, line1, city, postcode, country = cust[1:]
            country_name = names.get(country) or COUNTRY_NAMES.get(country, country)
            ship = self.con.execute(
                "insert into order_shippingaddress (title, first_name, last_name, line1, line2, line3, line4, state, "
                "postcode, search_text, phone_number, notes, country_id, code) "
                "values ('', ?, ?, ?, '', '', ?, '', ?, ?, '', '', ?, null)",
                (first, last, line1, city, postcode, " ".join((first, last, line1, city, postcode, country_name)),
                 country)).lastrowid
            statuses = self.progress(placed)
            total = sum((p.price * qty for p, qty in lines), Decimal("0"))
            oid = self.con.execute(
                "insert into order_order (number, currency, total_incl_tax, total_excl_tax, shipping_incl_tax, "
                "shipping_excl_tax, shipping_method, shipping_code, status, guest_email, date_placed, basket_id, "
                "billing_address_id, shipping_address_id, site_id, user_id, shipping_tax_code, analytics_tracked) "
                "values (?, 'GBP', ?, ?, 0, 0, 'Free shipping', 'free-shipping', ?, '', ?, ?, null, ?, 1, ?, null, 0)",
                (str(100000 + basket), str(total), str(total), statuses[-1][0], _fmt(placed), basket, ship,
                 cust[0])).lastrowid
            for (old, _), (new, at) in zip(statuses, statuses[1:]):
                self.con.execute("insert into order_orderstatuschange (old_status, new_status, order_id, date_created) "
                                 "values (?, ?, ?, ?)", (old, new, oid, _fmt(at)))
            status = statuses[-1][0]
            for p, qty in lines:
                self.con.execute(
                    "insert into order_line (partner_name, partner_sku, partner_line_reference, partner_line_notes, "
                    "title, upc, quantity, line_price_incl_tax, line_price_excl_tax, "
                    "line_price_before_discounts_incl_tax, line_price_before_discounts_excl_tax, unit_price_incl_tax, "
                    "unit_price_excl_tax, status, order_id, partner_id, product_id, stockrecord_id, tax_code, "
                    "allocation_cancelled, num_allocated) "
                    "values (?, ?, '', '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, ?, ?)",
                    (p.partner_name, p.sku, p.title, p.upc, qty, *(str(p.price * qty),) * 4, str(p.price),
                     str(p.price), status, oid, p.partner, p.id, p.stockrecord, int(status == "Cancelled"), qty))
                if status in ("Pending", "Being processed"):  # allocated at placement (Oscar's StockRecord.allocate)
                    p.allocated = (p.allocated or 0) + qty
                elif status == "Shipped":  # the allocation consumed on dispatch
                    p.stock -= qty
                _edited(p, placed, staff=False)
            n_orders, n_lines = n_orders + 1, n_lines + len(lines)
        return n_orders, n_lines

    def order_lines(self) -> list[tuple[_Product, int]]:
        """1-3 lines of in-stock seeded products (the net stock covers the quantity)."""
        pool = [p for p in self.seeded_products() if p.stock - (p.allocated or 0) >= 3]
        picked = self.rng.sample(pool, min(len(pool), self.rng.choice((1, 1, 1, 2, 2, 3))))
        return [(p, self.rng.choice((1, 1, 1, 2, 3))) for p in picked]

    def progress(self, placed: dt.datetime) -> list[tuple[str, dt.datetime]]:
        """A new order's statuses with their times: older orders moved further along the pipeline."""
        statuses = [("Pending", placed)]
        age = (self.end - placed).total_seconds() / 3600
        steps = 0 if age < 6 else 1 if age < 30 else 2
        if self.rng.random() < 0.08:  # the customer cancelled it
            return statuses + [("Cancelled", self.when(placed))]
        for nxt in ("Being processed", "Shipped")[:steps]:
            statuses.append((nxt, self.when(statuses[-1][1])))
        return statuses

    def status_changes(self) -> int:
        """Staff move seeded orders of other customers along the pipeline (Oscar's Order.set_status)."""
        open_orders = [r for r in self.con.execute(
            "select id, status, user_id from order_order where basket_id is null order by id")
            if ORDER_PIPELINE.get(r[1]) and r[2] in self.customer_ids]
        chosen = self.rng.sample(open_orders, min(len(open_orders), self.count("status_changes")))
        for oid, old, _ in sorted(chosen):
            nexts = ORDER_PIPELINE[old]
            forward = [s for s in nexts if s not in ("Cancelled", "Returned")]
            new = self.rng.choice(forward) if forward and self.rng.random() < 0.85 else self.rng.choice(nexts)
            self.con.execute("update order_order set status = ? where id = ?", (new, oid))
            self.con.execute("insert into order_orderstatuschange (old_status, new_status, order_id, date_created) "
                             "values (?, ?, ?, ?)", (old, new, oid, _fmt(self.when())))
        return len(chosen)

    # ------------------------------------------------------------------ reviews
    def reviews(self) -> int:
        """Customers review products they received (a completed seeded order); ratings follow."""
        bought = self.con.execute(
            "select distinct l.product_id, o.user_id from order_line l join order_order o on o.id = l.order_id "
            "where o.status = 'Complete' and l.product_id is not null order by l.product_id, o.user_id").fetchall()
        bought = [(pid, uid) for pid, uid in bought if uid in self.customer_ids]
        taken = set(self.con.execute("select product_id, user_id from reviews_productreview").fetchall())
        by_id = {p.id: p for p in self.products}
        made = 0
        for pid, uid in self.rng.sample(bought, min(len(bought), self.count("reviews"))):
            if (pid, uid) in taken or pid not in by_id:
                continue
            taken.add((pid, uid))
            p, score = by_id[pid], self.rng.choice(SCORES)
            words = _words(p.title)
            title = self.rng.choice(REVIEW_TITLES[score]).format(**words)
            body = " ".join(self.rng.sample(REVIEW_SENTENCES[score], 2)).format(**words)
            at = self.when()
            rid = self.con.execute(
                "insert into reviews_productreview (score, title, body, name, email, homepage, status, total_votes, "
                "delta_votes, date_created, product_id, user_id, code) values (?, ?, ?, '', '', '', 1, 0, 0, ?, ?, ?, null)",
                (score, title, body, _fmt(at), pid, uid)).lastrowid
            p.reviews.append(rid)
            p.staff_edit = max(p.staff_edit or at, at)  # Product.update_rating saves the product
            made += 1
        for p in self.products:
            if p.reviews:
                avg = self.con.execute("select avg(score) from reviews_productreview where product_id = ? and status = 1",
                                       (p.id,)).fetchone()[0]
                self.con.execute("update catalogue_product set rating = ? where id = ?", (float(avg), p.id))
        return made


# ----------------------------------------------------------------------------- search index
#: Runs in the site's venv (Whoosh only, no Django): update the index from JSON documents on stdin.
_INDEX_SCRIPT = """
import datetime, json, sys
from whoosh.index import open_dir
from whoosh.query import Or, Term
docs = json.load(sys.stdin)
ix = open_dir(sys.argv[1])
w = ix.writer(timeout=30.0)
w.delete_by_query(Or([Term("id", d["id"]) for d in docs]))  # haystack's update_document, in one pass
for d in docs:
    for k in ("date_created", "date_updated"):
        d[k] = datetime.datetime.fromisoformat(d[k])
    w.add_document(**d)
w.commit(merge=False)
"""
MARKER = "mag_drift.json"


def sync_search_index(site: Site, python: Path) -> None:
    """Make the Whoosh index match the database: seeded, or re-indexed for the drifted products.

    The storefront's catalogue, category and search pages list the Whoosh index's hits in
    index order (and draw each product from the database). Products with a ``date_updated``
    after every seeded one (a drift's, or staff edits) are (re)indexed as haystack's
    ``update_index`` would, in id order. ``search_index/mag_drift.json`` records which
    documents were written and a copy of the seeded index (``search_index.seeded/``) is taken
    first; when the database no longer matches (a reset), the seeded files come back. A reset
    with nothing drifted costs two small queries.

    Args:
        site: the shop.
        python: the site's venv Python (it has Whoosh): writes the documents.

    Raises:
        SiteError: when the site's Python cannot write the index.
    """
    index = site.home / "search_index"
    snapshot = site.snapshot_dir / site.databases()[0].name
    if not index.is_dir() or not snapshot.is_file():
        return
    docs = _index_documents(site.databases()[0], _read(snapshot, "select max(date_updated) from catalogue_product")[0][0])
    marker = index / MARKER
    want = hashlib.sha256(json.dumps(docs, sort_keys=True).encode()).hexdigest() if docs else None
    have = json.loads(marker.read_text()).get("documents") if marker.is_file() else None
    if want == have:
        return
    seeded = site.home / "search_index.seeded"
    if marker.is_file():
        _restore_index(seeded, index)
    if not docs:
        return
    shutil.rmtree(seeded, ignore_errors=True)
    shutil.copytree(index, seeded, ignore=shutil.ignore_patterns("*WRITELOCK", MARKER))
    marker.write_text(json.dumps({"documents": "writing"}))  # a crash from here on restores at the next reset
    try:
        proc = subprocess.run([str(python), "-c", _INDEX_SCRIPT, str(index)], input=json.dumps(docs),
                              capture_output=True, text=True, timeout=120, env={"PATH": os.environ.get("PATH", "")})
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SiteError(f"site shop: re-indexing the drifted products failed ({e}); reset the site") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SiteError(f"site shop: re-indexing the drifted products failed ({tail[:200]}); reset the site")
    marker.write_text(json.dumps({"documents": want, "products": [d["upc"] for d in docs]}))


def _restore_index(seeded: Path, index: Path) -> None:
    """Put the seeded index files back, then remove the later ones (readers always see a whole index)."""
    if not seeded.is_dir():
        raise SiteError("site shop: the search index was drifted but its seeded copy is gone; "
                        "run `mag sites setup --site shop --force`")
    keep = {f.name for f in seeded.iterdir()}
    for name in sorted(keep):
        if not (index / name).exists():
            shutil.copy2(seeded / name, index / name)
    extra = [f for f in index.iterdir() if f.name not in keep and not f.name.endswith("WRITELOCK") and f.name != MARKER]
    for f in sorted(extra, key=lambda f: not f.name.endswith(".toc")):  # the newer table of contents first
        f.unlink()
    (index / MARKER).unlink()


def _index_documents(db: Path, since: str) -> list[dict[str, Any]]:
    """Oscar's ProductIndex documents (as haystack's Whoosh backend writes them) of the products
    updated after ``since`` (Django's datetime text), in id order."""
    rows = _read(db, "select p.id, p.upc, p.title, p.description, p.rating, p.date_created, p.date_updated, "
                     "p.is_public, p.structure, c.name, s.price, s.num_in_stock, s.num_allocated, "
                     "(select group_concat(category_id) from (select category_id from catalogue_productcategory "
                     " where product_id = p.id order by id)) "
                     "from catalogue_product p join catalogue_productclass c on c.id = p.product_class_id "
                     "left join partner_stockrecord s on s.product_id = p.id "
                     "where p.date_updated > ? and p.parent_id is null order by p.id, s.id", (since,))
    docs: list[dict[str, Any]] = []
    for (pid, upc, title, desc, rating, created, updated, public, structure, pclass, price, stock, allocated,
         cats) in rows:
        if docs and docs[-1]["django_id"] == str(pid):
            continue  # first stock record only (Oscar's default strategy)
        doc: dict[str, Any] = {
            "id": f"catalogue.product.{pid}", "django_ct": "catalogue.product", "django_id": str(pid),
            "text": f"{_escape(upc or '')}\n{_escape(title)}\n{_escape(desc or '')}\n", "upc": upc, "title": title,
            "title_exact": title, "suggestions": title, "product_class": pclass, "category": cats or "",
            "category_exact": cats or "", "date_created": _parse(created).replace(tzinfo=dt.timezone.utc).isoformat(),
            "date_updated": _parse(updated).replace(tzinfo=dt.timezone.utc).isoformat(),
            "is_public": "true" if public else "false", "structure": structure,
        }
        if price is not None:
            doc["price"] = doc["price_exact"] = str(_money(price))
            doc["num_in_stock"] = doc["num_in_stock_exact"] = int(stock or 0) - int(allocated or 0)
        if rating is not None:
            doc["rating"] = doc["rating_exact"] = int(rating)
        docs.append(doc)
    return docs


# ----------------------------------------------------------------------------- helpers
def _edited(p: _Product, at: dt.datetime, *, staff: bool) -> None:
    """Note a save of the product's stock record at ``at`` (by staff: through the product form,
    which saves the product too)."""
    p.stock_edit = max(p.stock_edit or at, at)
    if staff:
        p.staff_edit = max(p.staff_edit or at, at)


def _read(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{urllib.parse.quote(str(db))}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _money(value: Any) -> Decimal:
    """A price as Django reads it back (two decimal places) from SQLite's number."""
    return Decimal(str(value)).quantize(Decimal("0.01"))


def _fmt(t: dt.datetime) -> str:
    """Django's SQLite datetime text (UTC, naive)."""
    return t.strftime(_TIME)


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=None)


def _escape(text: str) -> str:
    """Django's HTML escaping, as the index's text template renders fields."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&#x27;"))


def _slugify(text: str) -> str:
    """Django's ``slugify`` (Oscar's default slugifier)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text.lower())
    return re.sub(r"[-\s]+", "-", text).strip("-_")


def _words(title: str) -> dict[str, str]:
    """Brand, colour and noun of a product title (``"<brand> <colour> <noun>[ <edition>]"``)."""
    parts = title.split()
    i = next((k for k, w in enumerate(parts) if w in COLOURS), 0)
    return {"brand": " ".join(parts[:i]) or parts[0], "colour": parts[i].lower(),
            "noun": " ".join(parts[i + 1:]).lower() or "product"}


def _write_image(path: Path, colour: str, title: str) -> None:
    """The product image in the seeding script's style (a coloured square with initials); kept once written."""
    if path.is_file():
        return
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (160, 160), RGB[colour])
    draw = ImageDraw.Draw(img)
    ink = (255, 255, 255) if colour != "White" else (0, 0, 0)
    draw.rectangle((20, 20, 140, 140), outline=ink, width=4)
    draw.text((60, 72), "".join(w[0] for w in title.split()[:3] if w[0].isalnum()), fill=ink)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(path)
