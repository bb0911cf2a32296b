"""The shop's drift on the real served site (django-oscar): what ``mag recapture --drift`` replays on.

``drift(seed, 1)`` after a reset writes what its counts say (checked row by row against the
seed data), the same seed gives the same tables and another seed other ones, the pages the
task templates start from and walk through change (fetched over HTTP, as the anonymous
visitor, the customer and the staff user), the site stays healthy with the tasks' logins
working, and ``reset()`` brings back the seeded database and search index exactly.

Setup runs once (a no-op when ``mag sites setup --site shop`` already ran).
"""

from __future__ import annotations

import hashlib
import html
import http.cookiejar
import re
import resource
import sqlite3
import time
import urllib.parse
import urllib.request
from decimal import Decimal

import pytest

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site-shop")]

SEED = 3
KINDS = ("products", "orders", "order_lines", "status_changes", "price_changes", "stock_changes", "reviews")


def _healthy(shop, within: float = 60.0) -> bool:
    """Whether the site answers its health check (5 s a try), retried: two shared cores under
    the browser tests can take longer than one try for a page."""
    from mag_dataset.sites.manager import status

    deadline = time.monotonic() + within
    while True:
        st = status(shop)
        if st.healthy or not st.running or time.monotonic() > deadline:
            return st.healthy
        time.sleep(2)


@pytest.fixture(scope="module")
def shop():
    from mag_dataset.sites import site
    from mag_dataset.sites.manager import serve, stop

    s = site("shop")
    s.setup()
    started = serve(s).started
    assert _healthy(s)
    yield s
    s.reset()
    if started:
        stop(s)


def _checksum(db) -> dict[str, tuple[int, str]]:
    """Per table: row count and a hash of all rows (ordered), read-only."""
    con = sqlite3.connect(f"file:{urllib.parse.quote(str(db))}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type = 'table' order by name")]
        out = {}
        for t in tables:
            rows = sorted(repr(r) for r in con.execute(f'select * from "{t}"'))
            out[t] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
        return out
    finally:
        con.close()


def _index_files(shop) -> list[str]:
    return sorted(p.name for p in (shop.home / "search_index").iterdir() if not p.name.endswith("WRITELOCK"))


class _Browser:
    """An HTTP client with a session cookie: logs in through Oscar's form like the tasks do."""

    def __init__(self, shop, user: str | None = None):
        self.base = shop.running_url()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        if user is not None:
            page = self.get("/accounts/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
            data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "login-username": user,
                                           "login-password": shop.users[user], "login_submit": "1"}).encode()
            req = urllib.request.Request(self.base + "/accounts/login/", data=data,
                                         headers={"Referer": self.base + "/accounts/login/"})
            with self.opener.open(req, timeout=60) as r:
                assert "/accounts/login/" not in r.geturl(), f"login of {user} failed"

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=60) as r:
            assert r.status == 200, (path, r.status)
            return r.read().decode()


def _visible(page: str) -> str:
    """The page without what changes on every request: CSRF tokens, the wall-clock minute of
    Oscar's ``<meta name="created">`` (invisible)."""
    page = re.sub(r'<meta name="created"[^>]*>', "", page)
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", page)
    return re.sub(r"csrftoken[^;\n]*", "", page)


def _grid(page: str) -> list[str]:
    """Product titles of a catalogue, category or search page, in order."""
    return [html.unescape(t) for t in re.findall(r'<h3 class="mt-3">\s*<a href="[^"]+" title="([^"]+)"', page)]


#: (user, path) of the templates' start pages (storefront: anonymous and the customer; the staff
#: dashboard) and the lists their experts walk through.
PAGES = ((None, "/"), ("emma.smith@shop.test", "/catalogue/"), ("admin@shop.test", "/dashboard/"),
         ("admin@shop.test", "/dashboard/orders/"), ("admin@shop.test", "/dashboard/catalogue/"))


def _log_in(shop) -> dict[str | None, _Browser]:
    """One browser per user of :data:`PAGES` (sessions live in the database: log in again after a reset)."""
    return {user: _Browser(shop, user) for user in sorted({u for u, _ in PAGES}, key=str)}


def _fetch_pages(browsers: dict[str | None, _Browser]) -> dict[tuple[str | None, str], str]:
    return {(user, path): _visible(browsers[user].get(path)) for user, path in PAGES}


def test_drift_writes_what_its_counts_say(shop):
    from mag_dataset.sites.shop.drift import PROTECTED_EMAILS
    from mag_dataset.sites.shop.seed_data import FROZEN_NOW, ORDER_PIPELINE, seed_data

    data = seed_data()
    shop.reset()
    seeded = _checksum(shop.snapshot_dir / shop.databases()[0].name)
    cpu0, kids0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    counts = shop.drift(SEED, 1)
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu0 + (kids1.ru_utime - kids0.ru_utime) + (kids1.ru_stime - kids0.ru_stime)
    assert cpu < 2.0, f"the drift took {cpu:.2f} s of CPU"
    assert sorted(counts) == sorted(KINDS) and all(counts[k] > 0 for k in KINDS), counts
    q = shop.query

    # new products, each listed in a leaf category with a stock record and an image
    products = q("select p.id, p.title, p.upc, c.depth, s.price, s.num_in_stock, i.original from catalogue_product p "
                 "join catalogue_productcategory pc on pc.product_id = p.id join catalogue_category c on c.id = "
                 "pc.category_id join partner_stockrecord s on s.product_id = p.id join catalogue_productimage i on "
                 "i.product_id = p.id where p.id > 320 order by p.id")
    assert len(products) == counts["products"] == q("select count(*) from catalogue_product")[0][0] - 320
    seeded_titles = {p["title"] for p in data["products"]}
    for _, title, upc, depth, price, stock, image in products:
        assert title not in seeded_titles and re.fullmatch(r"MAG\d{5}", upc) and depth == 2 and stock > 0
        assert (shop.home / "media" / image).is_file()
    # every seeded product keeps its title and category: the templates' parameters are all there
    assert q("select upc, title from catalogue_product where id <= 320 order by id") == [
        (p["upc"], p["title"]) for p in data["products"]]

    # new orders by other customers, from submitted baskets, in the days before the seed's "now"
    orders = q("select o.id, o.number, o.basket_id, o.total_incl_tax, o.date_placed, u.email, o.status "
               "from order_order o join auth_user u on u.id = o.user_id where o.basket_id is not null order by o.id")
    assert len(orders) == counts["orders"] == q("select count(*) from order_order")[0][0] - len(data["orders"])
    lines = q("select count(*) from order_line where order_id > ?", (len(data["orders"]),))[0][0]
    assert lines == counts["order_lines"]
    newest_seeded = max(o["placed"] for o in data["orders"])[:19].replace("T", " ")
    now = FROZEN_NOW.strftime("%Y-%m-%d %H:%M:%S")
    for oid, number, basket, total, placed, email, status in orders:
        assert number == str(100000 + basket) and email not in PROTECTED_EMAILS
        assert newest_seeded < placed < now and status in ORDER_PIPELINE
        line_sum = q("select sum(line_price_incl_tax) from order_line where order_id = ?", (oid,))[0][0]
        assert Decimal(str(line_sum)).quantize(Decimal("0.01")) == Decimal(str(total)).quantize(Decimal("0.01"))
    assert q("select count(*) from order_order where date_placed > datetime(?, '-1 day')", (now,))[0][0] > 0

    # staff moved seeded orders along the pipeline, with Oscar's status-change records
    statuses = dict(q("select number, status from order_order where basket_id is null"))
    moved = [o for o in data["orders"] if statuses[o["number"]] != o["status"]]
    assert len(moved) == counts["status_changes"]
    for o in moved:
        assert statuses[o["number"]] in ORDER_PIPELINE[o["status"]] and o["email"] not in PROTECTED_EMAILS
        assert q("select c.old_status, c.new_status from order_orderstatuschange c join order_order o on "
                 "o.id = c.order_id where o.number = ?", (o["number"],)) == [(o["status"], statuses[o["number"]])]

    # prices and stock of seeded products
    stock = {upc: (Decimal(str(price)).quantize(Decimal("0.01")), n, allocated) for upc, price, n, allocated in q(
        "select p.upc, s.price, s.num_in_stock, s.num_allocated from partner_stockrecord s "
        "join catalogue_product p on p.id = s.product_id where p.id <= 320")}
    assert sum(stock[p["upc"]][0] != Decimal(p["price"]) for p in data["products"]) == counts["price_changes"]
    assert sum(stock[p["upc"]][1:] != (p["stock"], None) for p in data["products"]) == counts["stock_changes"]
    assert all(n >= 0 and n - (a or 0) >= 0 for _, n, a in stock.values())

    # reviews by other customers; each reviewed product's rating is its reviews' mean
    reviews = q("select r.product_id, r.score, u.email from reviews_productreview r join auth_user u on u.id = r.user_id")
    assert len(reviews) == counts["reviews"] and not {e for _, _, e in reviews} & set(PROTECTED_EMAILS)
    for pid, rating in q("select id, rating from catalogue_product where rating is not null"):
        scores = [s for p, s, _ in reviews if p == pid]
        assert scores and abs(rating - sum(scores) / len(scores)) < 1e-9

    # the users, their addresses and everything a login needs are untouched
    now_sums = _checksum(shop.databases()[0])
    for table in ("auth_user", "address_useraddress", "django_site", "offer_conditionaloffer", "voucher_voucher"):
        assert now_sums[table] == seeded[table], table


def test_same_seed_same_tables_other_seed_other_tables(shop):
    db = shop.databases()[0]
    sums = []
    for seed in (SEED, SEED, SEED + 1):
        shop.reset()
        shop.drift(seed, 1)
        sums.append(_checksum(db))
    assert sums[0] == sums[1]
    differ = sorted(t for t in sums[0] if sums[0][t] != sums[2][t])
    assert {"order_order", "order_line", "partner_stockrecord", "catalogue_product", "reviews_productreview"} <= set(differ)
    shop.reset()
    shop.drift(SEED, 2)
    assert _checksum(db) != sums[0]


def test_start_pages_change_and_reset_brings_them_back(shop):
    shop.reset()
    seeded_index = _index_files(shop)
    before = _fetch_pages(_log_in(shop))
    counts = shop.drift(SEED, 1)
    assert _healthy(shop)
    after = _fetch_pages(_log_in(shop))  # the customer's and the staff user's logins still work
    changed = [key for key in PAGES if after[key] != before[key]]
    assert changed == list(PAGES), [key for key in PAGES if key not in changed]
    # the storefront lists come from the search index: re-indexed products moved, new ones are found
    assert _grid(after[(None, "/")]) != _grid(before[(None, "/")])
    newest = shop.query("select number from order_order order by date_placed desc limit 1")[0][0]
    assert int(newest) > 101000 and f">{newest}<" in after[("admin@shop.test", "/dashboard/orders/")]
    assert f">{420 + counts['orders']}<" in after[("admin@shop.test", "/dashboard/")]  # all-time orders
    new_title = shop.query("select title from catalogue_product where id > 320 order by id")[0][0]
    anon, search = _Browser(shop), "/search/?q=" + urllib.parse.quote_plus(new_title)
    assert new_title in _grid(anon.get(search))
    assert _index_files(shop) != seeded_index

    shop.reset()
    db = shop.databases()[0]
    assert _checksum(db) == _checksum(shop.snapshot_dir / db.name)
    assert _index_files(shop) == seeded_index
    assert _fetch_pages(_log_in(shop)) == before  # the same pages again, so the differences were the drift's
    assert new_title not in _grid(anon.get(search))
