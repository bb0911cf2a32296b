"""Cross-site tasks (:mod:`mag_dataset.sites.cross_site`) end to end: every site they need served,
every template's no-op fails and its expert succeeds, crossing sites by ``goto``.

Real parts only: the four applications served on 127.0.0.1 (set up once; ``site.setup()`` is a
no-op when ``mag sites setup`` already ran), driven by the system Chromium through BrowserGym.
"""

from __future__ import annotations

import pytest

from conftest import expert_episode_judged, site_expert_seeds

from mag_dataset.sites import manager
from mag_dataset.sites import site as get_site

# A cross-site task resets and drives two or three sites, while every per-site module serves, resets
# and stops its own site in its xdist group ("site-<name>"), and a test joins one group only. So
# scripts/test.sh runs this module in a pass of its own, in one process beside the main pass (whose
# modules touch no site), never beside the site pass: no other module touches a site under it. (The group marker keeps a bare `pytest -n 2 --dist
# loadgroup tests/` from running it beside the forum's modules; the other sites' may still overlap.)
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-forum")]

EXPERT_SEEDS = site_expert_seeds(0)


def _tasks():
    from mag_dataset.sites.cross_site import TASKS

    return TASKS


def _pair(cls) -> frozenset[str]:
    return frozenset({cls.site_class.name, *(s.name for s in cls.other_sites)})


@pytest.fixture(scope="module")
def sites():
    """Every site the cross-site templates need, set up and served; stops only those it started."""
    names = sorted({name for cls in _tasks() for name in _pair(cls)})
    served = [get_site(n) for n in names]
    started = []
    try:
        for s in served:
            s.setup(print)
            if manager.serve(s).started:
                started.append(s)
        yield {s.name: s for s in served}
    finally:
        for s in started:
            manager.stop(s)


def test_at_least_ten_cross_templates_over_four_pairs_and_three_kinds():
    from mag_dataset.sites import tasks_of

    tasks = _tasks()
    ids = [c.get_task_id() for c in tasks]
    assert len(ids) >= 10 and len(set(ids)) == len(ids)
    pairs = {_pair(c) for c in tasks}
    assert all(len(p) == 2 for p in pairs)
    assert len(pairs) >= 4, sorted(map(sorted, pairs))
    assert {c.kind for c in tasks} == {"state", "information", "navigation"}
    for c in tasks:  # each is listed under the site it ends on, with that site's own templates
        assert c.get_task_id() in tasks_of(c.site_class.name)
        assert c.site_class not in c.other_sites and c.other_sites
        assert len(c.intent_templates) >= 3
    # parameters come from the seed data and vary across seeds
    for c in tasks:
        params = [repr(sorted(c(seed).params.items())) for seed in range(6)]
        assert len(set(params)) >= 2, c.get_task_id()


@pytest.mark.parametrize("task_cls", _tasks(), ids=lambda c: c.template)
def test_noop_fails_and_expert_succeeds(sites, task_cls, tmp_path):
    from mag_dataset.actions import ActionType
    from mag_dataset.sites.env import make_site_env

    task_id = task_cls.get_task_id()
    env = make_site_env(task_id)
    try:
        for seed in EXPERT_SEEDS:  # the task's check and WebArena's evaluators fail a no-op, pass the expert
            r = expert_episode_judged(task_id, seed, env, tmp_path, finish_noop=seed == EXPERT_SEEDS[0])
            assert env.unwrapped.task.external_requests == []
            steps = r.episode.steps
            assert 3 <= len(steps) <= 15, f"{task_id} seed {seed}: {len(steps)} steps"
            # the expert crossed to another site by its address
            assert any(s.action.type is ActionType.GOTO for s in steps)
            print(f"{task_id} seed {seed}: ok in {len(steps)} steps, {r.seconds} s")
    finally:
        env.close()


def test_one_browser_context_stays_logged_in_on_every_site(sites, monkeypatch):
    """Each site's login (an HTTP form post in the page's context) keeps its own cookies: logged
    in on all four sites of 127.0.0.1 at once, every one still shows its user, and the page
    itself never left about:blank. A wrong password, and a page without the form, are SiteErrors."""
    from conftest import site_browser

    from mag_dataset.sites.base import SiteError, form_login

    users = {"shop": "admin@shop.test", "tracker": "alice", "wiki": "Marta Kell", "forum": "alice_w"}
    # where each site shows who is logged in, and what it shows then
    shows = {"shop": ("/accounts/profile/", "admin@shop.test"), "tracker": ("/", "logged in as"),
             "wiki": ("/wiki/Main_Page", 'id="pt-userpage"'), "forum": ("/user/", "alice_w")}
    with site_browser() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        for name, user in users.items():
            sites[name].login(page, user)
        assert page.url == "about:blank"
        cookies = sorted(c["name"] for c in page.context.cookies())
        assert {"shop_sessionid", "forum_sessionid", "trac_auth"} <= set(cookies), cookies
        for name, (path, marker) in shows.items():
            page.goto(sites[name].running_url() + path)
            assert marker in page.content(), f"{name}: no longer logged in ({page.url})"

        fresh = browser.new_context().new_page()
        for name, user in users.items():
            site = sites[name]
            monkeypatch.setattr(site, "users", {**site.users, user: "not-the-password"})  # this object only
            with pytest.raises(SiteError, match=f"site {name}: login as '{user}' failed"):
                site.login(fresh, user)
        with pytest.raises(SiteError, match="no login form with fields"):
            form_login(fresh, sites["tracker"].running_url() + "/roadmap", {"username": "alice", "password": "x"})
