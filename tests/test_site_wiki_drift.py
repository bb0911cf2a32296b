"""The wiki's drift on the real served MediaWiki: what it writes, that it is seeded, visible, harmless, undone by reset.

``Site.drift`` moves a reset site on before ``mag recapture --drift`` replays an episode on it
(:mod:`mag_dataset.sites.wiki.drift`). Here, against the site served for the module: the rows
match the counts the drift returns, the same seed gives the same tables and another seed other
ones, the pages the templates start from and walk through change, every seeded page and login
still works, and ``reset()`` gives back the seeded databases exactly.
"""

from __future__ import annotations

import hashlib
import http.cookiejar
import json
import re
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from mag_dataset.sites import manager, site, tasks_of
from mag_dataset.sites.wiki import drift as wdrift
from mag_dataset.sites.wiki import seed as wseed

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site-wiki")]

SEED_LATEST = "20240601080000"  # the seed's last edit (the Main Page, 2024-06-01 08:00 UTC)


@pytest.fixture(scope="module")
def wiki():
    s = site("wiki")
    s.setup()
    started = manager.serve(s).started
    s.reset()
    yield s
    s.reset()
    if started:
        manager.stop(s)


def _tables(path) -> dict[str, list[str]]:
    """Every table's rows (sorted reprs), the FTS index's shadow tables included."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: sorted(repr(r) for r in con.execute(f'SELECT * FROM "{t}"')) for t in names}
    finally:
        con.close()


def _digest(path) -> str:
    h = hashlib.sha256()
    for t, rows in _tables(path).items():
        h.update(t.encode())
        for r in rows:
            h.update(r.encode())
    return h.hexdigest()


def _count(s, sql: str, params: tuple = ()) -> int:
    return int(s.query(sql, params)[0][0])


def _get(url: str, opener=None) -> tuple[int, str]:
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _get_all(base: str, paths) -> dict[str, tuple[int, str]]:
    """Fetch pages four at a time (the server has four PHP workers)."""
    paths = list(paths)
    with ThreadPoolExecutor(4) as pool:
        return dict(zip(paths, pool.map(lambda p: _get(base + p), paths)))


def _content(html: str) -> str:
    """What a page shows of the wiki (title, body, categories), without its footer and scripts."""
    body = html.split('<h1 id="firstHeading"', 1)[-1].split('<div id="footer"', 1)[0]
    body = re.sub(r"<script.*?</script>", "", body, flags=re.S)
    return body


def _tags_before_search(html: str) -> list[str]:
    return re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)\b", html.split('id="searchInput"', 1)[0])


def _login(base: str, user: str, password: str):
    """A cookie-holding opener logged in as ``user`` through the action API (the login form's checks)."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(post: bool = False, **params: str) -> dict:
        data = urllib.parse.urlencode({**params, "format": "json"}).encode()
        url = base + "/api.php" + ("" if post else "?" + data.decode())
        with opener.open(url, data=data if post else None, timeout=60) as r:
            return json.loads(r.read().decode())

    token = call(action="query", meta="tokens", type="login")["query"]["tokens"]["logintoken"]
    r = call(post=True, action="clientlogin", username=user, password=password, logintoken=token,
             loginreturnurl=base + "/")
    assert r["clientlogin"]["status"] == "PASS", (user, r)
    return opener


def _walked_pages(s) -> dict[str, str]:
    """The start page and the article of every template's first three instances: path -> task id."""
    pages: dict[str, str] = {}
    templates = tasks_of("wiki", cross_site=False)
    assert len(templates) >= 10
    for task_id, cls in sorted(templates.items()):
        pages.setdefault(cls.start_path, task_id)
        for seed in range(3):
            params = cls(seed, site=s, reset_site=False).params
            for key in ("title", "person"):
                if params.get(key) in wseed.world().articles:
                    pages.setdefault("/wiki/" + urllib.parse.quote(params[key].replace(" ", "_")), task_id)
    return pages


def test_drift_writes_what_its_counts_say(wiki):
    s = wiki
    s.reset()
    before = {t: len(rows) for t, rows in _tables(s.databases()[0]).items()}
    seeded_pages = set(s.query("SELECT page_namespace, page_title FROM page"))
    users = s.query("SELECT * FROM user ORDER BY user_id")
    start = time.process_time()  # CPU time: SQLite runs in this process, and the test machine may be busy
    counts = s.drift(0, 1)
    took = time.process_time() - start
    assert took < 2.0, took
    assert set(counts) == set(wdrift.KINDS)
    after = {t: len(rows) for t, rows in _tables(s.databases()[0]).items()}
    grew = {t: after[t] - before.get(t, 0) for t in after}
    # a few days of a small wiki: dozens of revisions of every kind
    assert 20 <= counts["revisions"] <= 60, counts
    assert all(counts[k] >= 1 for k in ("infobox_updates", "paragraphs_added", "rephrasings", "template_edits",
                                        "new_articles", "new_categories", "category_links", "talk_posts",
                                        "main_page_edits")), counts
    assert grew["revision"] == grew["text"] == grew["content"] == grew["slots"] == counts["revisions"]
    assert grew["recentchanges"] == counts["recent_changes"] == counts["revisions"]
    assert grew["categorylinks"] == counts["category_links"]
    assert grew["watchlist"] == counts["watchlist_rows"]
    new = "SELECT COUNT(*) FROM revision r JOIN page p ON p.page_id = r.rev_page WHERE r.rev_timestamp > ? "
    assert _count(s, new + "AND p.page_namespace IN (1, 3)", (SEED_LATEST,)) == counts["talk_posts"]
    assert _count(s, new + "AND p.page_namespace = 10", (SEED_LATEST,)) == counts["template_edits"]
    assert _count(s, new + "AND p.page_namespace = 0 AND p.page_title = 'Main_Page'", (SEED_LATEST,)) == 1
    assert _count(s, "SELECT COUNT(*) FROM page WHERE page_namespace = 0") == 65 + counts["new_articles"]
    assert _count(s, "SELECT COUNT(*) FROM page WHERE page_namespace = 14") == 22 + counts["new_categories"]
    seeded_article_edits = [
        t for (t,) in s.query("SELECT p.page_title FROM revision r JOIN page p ON p.page_id = r.rev_page WHERE "
                              "r.rev_timestamp > ? AND p.page_namespace = 0 AND p.page_title != 'Main_Page'",
                              (SEED_LATEST,)) if t.replace("_", " ") in wseed.world().articles]
    assert len(seeded_article_edits) == counts["article_edits"] >= (
        counts["infobox_updates"] + counts["paragraphs_added"] + counts["rephrasings"])
    marked = _count(s, "SELECT COUNT(*) FROM watchlist WHERE wl_notificationtimestamp IS NOT NULL")
    assert marked + _count(s, "SELECT COUNT(*) FROM user_newtalk") == counts["notifications"]
    # fixed dates after the seed's last edit, within the drift's days
    first, last = s.query("SELECT MIN(rev_timestamp), MAX(rev_timestamp) FROM revision WHERE rev_id > 259")[0]
    assert SEED_LATEST < first <= last < "20240606000000", (first, last)
    # every page is a consistent revision: page_latest, the newest revision, its length and text
    assert s.query("SELECT COUNT(*) FROM page p WHERE p.page_latest != (SELECT MAX(rev_id) FROM revision "
                   "WHERE rev_page = p.page_id) OR p.page_len != (SELECT rev_len FROM revision "
                   "WHERE rev_id = p.page_latest)") == [(0,)]
    assert s.query("SELECT SUM(cat_pages) FROM category") == s.query("SELECT COUNT(*) FROM categorylinks")
    assert s.query("SELECT ss_total_edits, ss_total_pages FROM site_stats") == [
        (_count(s, "SELECT COUNT(*) FROM revision"), _count(s, "SELECT COUNT(*) FROM page"))]
    # nothing is deleted, no account is touched
    assert seeded_pages <= set(s.query("SELECT page_namespace, page_title FROM page"))
    assert s.query("SELECT * FROM user ORDER BY user_id") == users
    assert all(grew[t] == 0 for t in ("user", "actor", "user_groups")), grew


def test_same_seed_same_tables_other_seed_other_ones(wiki):
    s = wiki
    db = s.databases()[0]
    states = []
    for seed in (3, 3, 4):
        s.reset()
        counts = s.drift(seed, 1)
        states.append((counts, _tables(db)))
    assert states[0] == states[1]
    assert states[0][1] != states[2][1]
    # level 2: about twice as much happens
    s.reset()
    twice = s.drift(3, 2)
    assert twice["revisions"] >= 1.5 * states[0][0]["revisions"], (twice, states[0][0])
    s.reset()


def test_template_pages_show_the_drift(wiki):
    s = wiki
    pages = _walked_pages(s)
    assert "/" in pages and len(pages) >= 15, pages
    s.reset()
    before = _get_all(s.base_url, pages)
    counts = s.drift(0, 1)
    after = _get_all(s.base_url, pages)
    assert all(code == 200 for code, _ in before.values()), before.keys()
    assert all(code == 200 for code, _ in after.values())  # every walked page still exists
    changed = sorted(p for p in pages if _content(before[p][1]) != _content(after[p][1]))
    assert "/" in changed  # the start page of every template: the Main Page
    assert "This week:" in after["/"][1] and "This week:" not in before["/"][1]
    # ... with the same elements above its search box, so that every recorded first action (a bid
    # in document order) still finds its target
    assert _tags_before_search(after["/"][1]) == _tags_before_search(before["/"][1])
    assert len(changed) >= 0.4 * len(pages), (len(changed), len(pages), counts)
    # the history of a changed article lists the new revision first, by another editor
    title = s.query("SELECT p.page_title FROM revision r JOIN page p ON p.page_id = r.rev_page WHERE "
                    "r.rev_timestamp > ? AND p.page_namespace = 0 AND p.page_title != 'Main_Page' "
                    "ORDER BY r.rev_id LIMIT 1", (SEED_LATEST,))[0][0]
    code, history = _get(s.base_url + f"/index.php?title={urllib.parse.quote(title)}&action=history")
    assert code == 200 and "June 2024" in history.split('id="pagehistory"', 1)[1][:3000]
    # the search index knows the new articles
    new_title = s.query("SELECT page_title FROM page WHERE page_namespace = 0 ORDER BY page_id DESC LIMIT 1")[0][0]
    code, found = _get(s.base_url + "/index.php?" + urllib.parse.urlencode(
        {"search": new_title.replace("_", " "), "fulltext": "1", "title": "Special:Search"}))
    assert code == 200 and "mw-search-result-heading" in found and new_title.replace("_", " ") in found


def test_drifted_site_is_healthy_and_logins_work(wiki):
    s = wiki
    s.reset()
    s.drift(0, 1)
    st = manager.status(s)
    assert st.running and st.healthy, st
    told = {name for (name,) in s.query("SELECT u.user_name FROM user_newtalk n JOIN user u ON u.user_id = n.user_id")}
    assert told  # an editor left the sysop a message

    def main_page_as(user: str) -> tuple[int, str]:
        return _get(s.base_url + "/wiki/Main_Page", _login(s.base_url, user, s.users[user]))

    users = sorted(s.users)
    assert len(users) == 8
    with ThreadPoolExecutor(4) as pool:
        pages = dict(zip(users, pool.map(main_page_as, users)))
    for user, (code, html) in pages.items():
        assert code == 200 and 'id="pt-userpage"' in html and user in html
        # MediaWiki announces the message to its addressee, and only to them
        assert ("new message" in html) == (user in told), user


def test_reset_restores_the_seeded_state_exactly(wiki):
    s = wiki
    snaps = [_digest(s.snapshot_dir / p.name) for p in s.databases()]
    s.reset()
    s.drift(5, 2)
    assert _digest(s.databases()[0]) != snaps[0]
    s.reset()
    assert [_digest(p) for p in s.databases()] == snaps
    code, raw = _get(s.base_url + "/index.php?title=Main_Page&action=raw")
    assert code == 200 and raw.rstrip() == wseed.world().articles["Main Page"].text.rstrip()
