"""The shop site (django-oscar) end to end: setup, serve, seeded counts, a rich home page with no
request leaving 127.0.0.1, every template's expert judged successful by its state check, a
no-op failing every check, reset back to the exact seeded database, stop leaving no process.

Setup runs once (a no-op when ``mag sites setup --site shop`` already ran; about 2 minutes from
nothing). Expert episodes take 20-70 s each on 2 shared cores, so by default every template
runs on one seed; ``MAG_SITE_EXPERT_SEEDS=3`` runs the 3 seeds of the issue's acceptance check.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
import urllib.parse

import pytest

from conftest import expert_episode_judged, site_browser, site_expert_seeds

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-shop")]

SEEDS = site_expert_seeds(1)
TEMPLATES = ("add_to_basket", "add_to_wishlist", "product_category", "product_price", "checkout", "edit_profile",
             "add_address", "change_order_status", "order_total", "count_orders_by_status", "edit_product_stock",
             "multi_product_order",
             # pages to open (navigation), answers to find (information), changes to make (state)
             "category_sorted_by_price", "cheapest_in_category_page", "search_results_sorted", "review_form_page",
             "my_order_page", "open_dashboard_order", "open_customer_page", "product_stock", "order_customer",
             "customer_last_order_items", "write_review", "reorder_item", "add_order_note", "update_order_address")


@pytest.fixture(scope="module")
def shop():
    from mag_dataset.sites import site
    from mag_dataset.sites.manager import serve, stop

    s = site("shop")
    s.setup()
    status = serve(s)
    assert status.healthy, status
    yield s
    if status.started:
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


def test_task_table_lists_every_template():
    from mag_dataset.sites import tasks_of
    from mag_dataset.sites.shop.tasks import TASKS

    assert sorted(c.get_task_id() for c in TASKS) == sorted(f"sites.shop.{t}" for t in TEMPLATES)
    assert sorted(tasks_of("shop", cross_site=False)) == sorted(f"sites.shop.{t}" for t in TEMPLATES)
    assert set(tasks_of("shop")) > set(tasks_of("shop", cross_site=False))  # + the cross-site ones ending here


def test_templates_cover_the_site():
    """WebArena's three kinds of shopping task: pages to open, answers to find, changes to make."""
    from collections import Counter

    from mag_dataset.sites.shop.tasks import TASKS

    kinds = Counter(c.kind for c in TASKS)
    assert len(TASKS) >= 25, kinds
    assert kinds["navigation"] >= 6 and kinds["information"] >= 6 and kinds["state"] >= 10, kinds
    assert {c.user for c in TASKS} >= {None, "admin@shop.test", "emma.smith@shop.test", "liam.johnson@shop.test"}


def test_setup_record_shows_seeded_counts(shop):
    import json

    info = json.loads(shop.setup_file.read_text())
    seeded = info["seeded"]
    assert seeded["products"] == 320 and seeded["customers"] == 200 and seeded["orders"] == 420
    assert seeded["categories"] == 24 and seeded["partners"] == 3 and seeded["offers"] == 3
    assert shop.query("select count(*) from order_order where date_placed < '2025-01-01'") == [(420,)]


def test_home_page_is_rich_and_local(shop):
    outside: list[str] = []
    with site_browser() as browser:
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.on("request", lambda r: outside.append(r.url)
                    if (urllib.parse.urlsplit(r.url).hostname or "") not in ("127.0.0.1", "localhost")
                    and not r.url.startswith("data:") else None)
            for path in ("/", "/accounts/login/"):
                page.goto(shop.running_url() + path)
                page.wait_for_load_state("networkidle")
            page.goto(shop.running_url() + "/")
            page.wait_for_load_state("networkidle")
            n = page.eval_on_selector_all("a, button, input, select, textarea, [role=button]", "els => els.length")
            shop.login(page, "admin@shop.test")
            page.goto(shop.running_url() + "/dashboard/")
            page.wait_for_load_state("networkidle")
            hours = page.eval_on_selector_all("#order_graph dd.bar-layer em", "els => els.map(e => e.textContent)")
        finally:
            browser.close()
    assert n >= 40
    assert outside == []
    # the staff dashboard's chart of the last 24 hours ends at the seed's "now", not the wall
    # clock's (shop_serve.py), so the page is the same on every run: 2-hour bars, Django's "P" times
    import datetime as dt

    from mag_dataset.sites.shop.seed_data import FROZEN_NOW

    def django_p(t: dt.datetime) -> str:
        return {0: "midnight", 12: "noon"}.get(t.hour, f"{t.hour % 12} {'a.m.' if t.hour < 12 else 'p.m.'}")

    first = FROZEN_NOW - dt.timedelta(hours=23)
    assert hours == [django_p(first + dt.timedelta(hours=2 * (k + 1))) for k in range(12)]


@pytest.mark.parametrize("template", TEMPLATES)
def test_expert_succeeds(shop, template, tmp_path):
    from mag_dataset.sites.env import make_site_env

    task = f"sites.shop.{template}"
    env = make_site_env(task)
    try:
        for seed in SEEDS:  # WebArena's evaluators fail a no-op and pass the expert
            result = expert_episode_judged(task, seed, env, tmp_path)
            assert env.unwrapped.task.external_requests == []
            assert len(result.episode.steps) >= 4
    finally:
        env.close()


def test_noop_fails_every_check(shop):
    from mag_dataset.sites import tasks_of

    classes = tasks_of("shop", cross_site=False)
    assert len(classes) == len(TEMPLATES)
    for task_id, cls in classes.items():
        for seed in (1, 2, 3):
            task = cls(seed=seed, site=shop)
            shop.reset()
            ok, reason = task.check("done")
            assert not ok, f"{task_id} seed {seed} passes without acting: {reason}"


def _edit_last_name_through_the_app(shop, email: str, last: str) -> None:
    """Log in and post Oscar's profile form over HTTP (a second sync Playwright cannot run
    in a process where BrowserGym's global one already does)."""
    import http.cookiejar
    import re
    import urllib.request

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = shop.running_url()

    def post(path: str, fields: dict[str, str]) -> None:
        html = opener.open(base + path).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}).encode()
        req = urllib.request.Request(base + path, data=data, headers={"Referer": base + path})
        opener.open(req).read()

    post("/accounts/login/", {"login-username": email, "login-password": shop.users[email], "login_submit": "1"})
    post("/accounts/profile/edit/", {"first_name": "Emma", "last_name": last, "email": email})


def test_reset_restores_the_seeded_database(shop):
    db = shop.databases()[0]
    shop.reset()
    seeded = _checksum(shop.snapshot_dir / db.name)
    _edit_last_name_through_the_app(shop, "emma.smith@shop.test", "Changed")
    assert shop.query("select last_name from auth_user where email = 'emma.smith@shop.test'") == [("Changed",)]
    assert _checksum(db) != seeded
    shop.reset()
    assert _checksum(db) == seeded
    assert shop.query("select last_name from auth_user where email = 'emma.smith@shop.test'") == [("Smith",)]


def test_stop_leaves_no_process(shop):
    from mag_dataset.sites.manager import serve, status, stop

    pid = status(shop).pid
    assert pid is not None
    assert stop(shop) is True
    deadline = time.monotonic() + 3.0  # a just-killed group can linger a moment as an unreaped zombie
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert status(shop).running is False
    serve(shop)  # the module fixture stops it again at the end
