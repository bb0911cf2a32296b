"""Live recording in a real headless Chromium: a fresh episode, determinism against the bundled
corpus, and the recorded gold coordinate clicking the gold element in a live page."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from PIL import Image

import mag_dataset
from mag_dataset.raw import read_episode, rewrite_episode_json, write_episode
from mag_dataset.schema import point_in_box

RAW = Path(mag_dataset.__file__).parent / "data" / "raw"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_record_fresh_login_episode(tmp_path, chromium):
    from mag_dataset.harness.recorder import record_episode

    res = record_episode("login-user", seed=12345)
    assert res.ok, res.reason
    ep = res.episode
    user, pw = re.findall(r'"([^"]*)"', ep.intent)[:2]
    assert [(s.action.type.value, s.action.text) for s in ep.steps] == [("type", user), ("type", pw), ("click", None)]
    assert [s.guide for s in ep.steps] == [f"Type '{user}' into the Username field.",
                                          f"Type '{pw}' into the Password field.", "Click the 'Login' button."]
    for st in ep.steps:
        assert point_in_box(st.action.coordinate, st.target_bbox)
        with Image.open(io.BytesIO(res.images[st.screenshot])) as im:
            assert im.size == (st.image_width, st.image_height)
        assert res.images[st.som_screenshot] != res.images[st.screenshot]  # marks drawn
    folder = write_episode(tmp_path, ep, res.images)
    back = read_episode(folder)  # the on-disk episode passes the raw-format validation
    assert back.steps[2].action == ep.steps[2].action and back.reward == 1.0


def test_a_fill_that_times_out_once_is_retried_and_a_click_is_not(chromium):
    """BrowserGym's element actions time out after 500 ms, which a loaded machine can exceed.
    The first fill of the episode is made to time out for real (the page's inputs disabled while
    BrowserGym runs it, enabled again after); the recorder steps it once more and the episode is
    the usual one. A click is never retried."""
    from mag_dataset.live.env import make_env
    from mag_dataset.harness.recorder import _retry_after_timeout, record_episode

    env = make_env("login-user")
    step, calls = env.step, []

    def first_fill_times_out(action):
        calls.append(action)
        if action.startswith("fill(") and sum(a.startswith("fill(") for a in calls) == 1:
            page = env.unwrapped.page
            page.evaluate("document.querySelectorAll('input').forEach(e => { e.disabled = true; })")
            obs = step(action)  # Playwright waits for an enabled input: BrowserGym's own 500 ms TimeoutError
            page.evaluate("document.querySelectorAll('input').forEach(e => { e.disabled = false; })")
            assert str(obs[0]["last_action_error"]).startswith("TimeoutError"), obs[0]["last_action_error"]
            return obs
        return step(action)

    env.step = first_fill_times_out
    try:
        res = record_episode("login-user", seed=12345, env=env)
    finally:
        env.close()
    assert res.ok, res.reason
    assert [s.action.type.value for s in res.episode.steps] == ["type", "type", "click"]
    assert calls[0] == calls[1] and calls[0].startswith("fill(") and len(calls) == 4  # one retry, then fill, click
    timeout = {"last_action_error": "TimeoutError: Locator.click: Timeout 500ms exceeded."}
    assert not _retry_after_timeout(timeout, "click('12')") and _retry_after_timeout(timeout, "fill('12', 'a')")
    assert not _retry_after_timeout(timeout, "mouse_click(3, 4)\nkeyboard_type('a')")
    assert not _retry_after_timeout({"last_action_error": ""}, "fill('12', 'a')")


def test_evidence_replay_fingerprints_identical_pages_and_stops_at_one_that_differs(tmp_path, chromium, capsys):
    """``mag recapture --evidence`` on a MiniWoB++ recording without fingerprints: the replay
    gives the recorder's own; with step 1's action-time screenshot changed, it stops there."""
    import dataclasses

    import numpy as np

    from mag_dataset.cli import main
    from mag_dataset.harness.recorder import record_episode

    res = record_episode("login-user", seed=12345)
    assert res.ok, res.reason
    raw = tmp_path / "raw"
    folder = write_episode(raw, res.episode, res.images)
    recorded = read_episode(folder)
    had = [st.metadata["dom"] for st in recorded.steps]

    def strip():
        ep = read_episode(folder)
        steps = tuple(dataclasses.replace(st, metadata={k: v for k, v in st.metadata.items() if k != "dom"})
                      for st in ep.steps)
        rewrite_episode_json(folder, dataclasses.replace(ep, steps=steps))

    strip()
    assert main(["recapture", "--raw", str(raw), "--evidence", "--no-progress"]) == 0
    assert "fingerprinted 3 steps of 1 episodes; the replayed page differed in 0 episodes" in capsys.readouterr().out
    assert [st.metadata["dom"] for st in read_episode(folder).steps] == had

    strip()
    shot = folder / recorded.steps[1].screenshot
    with Image.open(shot) as im:
        pixels = np.asarray(im.convert("RGB")).copy()
    pixels[:8, :8] = 255 - pixels[:8, :8]  # another page than the one replayed
    Image.fromarray(pixels).save(shot)
    assert main(["recapture", "--raw", str(raw), "--evidence", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "fingerprinted 1 steps of 1 episodes; the replayed page differed in 1 episodes" in out, out
    assert [("dom" in st.metadata) for st in read_episode(folder).steps] == [True, False, False]


def test_resets_share_one_chromium_and_a_restarted_playwright_gets_its_own(chromium):
    """BrowserGym relaunches Chromium on every reset; the package keeps one per thread (each
    episode still gets a fresh context). When BrowserGym's global Playwright is stopped (as a
    test or a tool that started it may do) and started again, the cached browser of the stopped
    one is not reused: it still says it is connected, and using it fails with "Event loop is
    closed" (in a full suite run, the 10 tests of test_live_record.py that followed test_importer.py
    in one worker failed so)."""
    import browsergym.core as bg_core

    from mag_dataset.live.env import make_env

    env = make_env("click-button")
    try:
        env.reset(seed=1)
        browser, context = env.unwrapped.browser._browser, env.unwrapped.context
        env.reset(seed=2)
        assert env.unwrapped.browser._browser is browser and env.unwrapped.context is not context
        assert browser.contexts == [env.unwrapped.context]  # the first episode's context was closed
    finally:
        env.close()
    pw = bg_core._PLAYWRIGHT
    bg_core._set_global_playwright(None)
    pw.stop()
    env = make_env("click-button")
    try:
        obs, _ = env.reset(seed=1)
        assert env.unwrapped.browser._browser is not browser and obs["screenshot"].size > 0
    finally:
        env.close()


def test_failed_episode_is_not_kept(chromium):
    from mag_dataset.live.experts import Decision
    from mag_dataset.harness.recorder import record_episode
    from mag_dataset.actions import ActionType

    def wrong_button(ob, memory):  # clicks "cancel"-like first button that is not the goal's
        want = re.findall(r'"([^"]*)"', ob.goal)[0].lower()
        other = next(e for e in ob.elements.values() if e.tag == "button" and e.text.lower() != want)
        return Decision(ActionType.CLICK, other.bid)

    res = record_episode("click-button", seed=3, expert=wrong_button)
    assert not res.ok and res.episode is None and "reward" in res.reason


def _bundled(task: str, n: int = 1) -> list:
    eps = sorted(p for p in RAW.iterdir() if p.is_dir() and p.name.startswith(task + ".seed-"))
    assert len(eps) >= n, f"bundled corpus lacks {task} episodes"
    return [read_episode(p) for p in eps[:n]]


def test_rerecording_a_bundled_episode_gives_the_same_actions_candidates_guides(chromium):
    from mag_dataset.harness.recorder import record_episode

    for task in ("login-user", "choose-list"):
        (old,) = _bundled(task)
        new = record_episode(task, seed=old.seed)
        assert new.ok, new.reason
        assert new.episode.intent == old.intent
        assert len(new.episode.steps) == len(old.steps)
        for a, b in zip(new.episode.steps, old.steps):
            assert a.action == b.action
            assert a.candidates == b.candidates
            assert a.guide == b.guide and a.target_bbox == b.target_bbox


def test_recorded_gold_coordinate_clicks_the_gold_element(chromium):
    """Replay bundled episodes up to a click, then click the recorded coordinate converted to
    page pixels with Playwright's own mouse (not BrowserGym) and check who received it."""
    from mag_dataset.live.env import make_env
    from mag_dataset.live.execute import to_browsergym_action
    from mag_dataset.live.observe import Conversion

    checked = []
    for task in ("click-button", "login-user", "navigate-tree", "email-inbox-delete"):
        (ep,) = _bundled(task)
        env = make_env(task)
        try:
            env.reset(seed=ep.seed)
            for st in ep.steps:
                if st.action.type.value != "click":
                    env.step(to_browsergym_action(st.action, "som"))
                    continue
                conv = Conversion.from_dict(st.metadata["conversion"])
                px, py = conv.to_page(st.action.coordinate)
                page = env.unwrapped.page
                page.evaluate("""() => { window.__magClicked = null;
                    document.addEventListener('click', e => {
                        const el = e.target.closest('[bid]');
                        window.__magClicked = el ? el.getAttribute('bid') : null;
                        window.__magPath = [];
                        for (let n = e.target; n && n.getAttribute; n = n.parentElement) window.__magPath.push(n.getAttribute('bid'));
                    }, true); }""")
                page.mouse.click(px, py)
                path = page.evaluate("() => window.__magPath")
                assert path and st.action.element_id in path, (task, st.step_index, path)
                checked.append((task, st.step_index))
                break
        finally:
            env.close()
    assert len(checked) == 4, checked


def test_candidate_menu_keeps_click_handler_spans_and_maps_to_the_page(chromium):
    """Candidates come from DOM + AX tree + BrowserGym properties: MiniWoB's icon spans (no text,
    no ARIA role of their own) and text divs with jQuery click handlers are in the menu, their
    ids are BrowserGym bids, and every box centre maps back onto its element in the page."""
    from mag_dataset.live.env import make_env
    from mag_dataset.live.observe import observe

    env = make_env("email-inbox-delete")
    try:
        obs, _ = env.reset(seed=7)
        ob = observe(obs)
        page = env.unwrapped.page
        by_class = {}
        for c in ob.candidates:
            by_class.setdefault(ob.elements[c.id].attrs.get("class", ""), []).append(c)
        assert len(by_class.get("trash", [])) >= 3 and len(by_class.get("email-sender", [])) >= 3, by_class.keys()
        assert all(c.text == "trash" for c in by_class["trash"])
        assert set(c.id for c in ob.candidates) <= set(obs["extra_element_properties"])
        assert ob.som_png != ob.png
        hits = 0
        for c in ob.candidates:
            x0, y0, x1, y1 = c.bbox
            assert 0 <= x0 <= x1 <= ob.width and 0 <= y0 <= y1 <= ob.height
            px, py = ob.conv.to_page(((x0 + x1) / 2, (y0 + y1) / 2))
            path = page.evaluate(
                "([x, y]) => { const out = []; for (let n = document.elementFromPoint(x, y); n && n.getAttribute;"
                " n = n.parentElement) out.push(n.getAttribute('bid')); return out; }", [px, py])
            hits += c.id in path
        # every centre lands on its element (nothing in this page overlaps)
        assert hits == len(ob.candidates) >= 20
    finally:
        env.close()


def test_mag_record_rerecords_bundled_episodes(tmp_path, chromium, capsys):
    """``mag record`` with the bundled seed re-creates the bundled task instances exactly."""
    import json

    from mag_dataset.cli import main
    from mag_dataset.raw import read_corpus

    out = tmp_path / "raw"
    assert main(["record", "--out", str(out), "--tasks", "click-button", "enter-text", "--episodes", "2"]) == 0
    assert "recorded 4 episodes" in capsys.readouterr().out
    new = {ep.episode_id: ep for ep in read_corpus(out)}
    assert len(new) == 4
    old = {p.name: read_episode(p) for p in RAW.iterdir() if p.name in new}
    assert set(old) == set(new)  # same seeds -> same episode ids as the bundled corpus
    for eid, ep in new.items():
        assert ep.intent == old[eid].intent
        assert [(s.action, s.candidates, s.guide) for s in ep.steps] == \
               [(s.action, s.candidates, s.guide) for s in old[eid].steps]
    manifest = json.loads((out / "corpus.json").read_text())
    assert set(manifest["splits"]) == set(new) and manifest["split_seed"] == 0
    # the stage record starts with the recording: what was asked, the 4 episodes it wrote
    (record,) = manifest["stages"]
    assert record["stage"] == "record" and record["options"] == {
        "tasks": ["click-button", "enter-text"], "episodes": 2, "seed": 0, "point_only_share": 0.0, "held_out": None}
    assert record["changed"]["episodes"] == 4 and record["changed"]["files"] == ["corpus.json"]


@pytest.mark.parametrize("view", ["som", "coord"])
def test_replaying_bundled_gold_actions_solves_the_task(chromium, view):
    """The executor runs gold actions in either view: by element id (som) or at the recorded
    coordinate (coord: click, click+type, click+type+Enter for a drop-down)."""
    from mag_dataset.live.env import episode_outcome, make_env
    from mag_dataset.live.execute import to_browsergym_action
    from mag_dataset.live.observe import Conversion

    solved = []
    for task in ("login-user", "choose-list", "click-checkboxes"):
        (ep,) = _bundled(task)
        env = make_env(task)
        try:
            env.reset(seed=ep.seed)
            for st in ep.steps:
                conv = Conversion.from_dict(st.metadata["conversion"])
                obs, _, terminated, _, info = env.step(to_browsergym_action(st.action, view, conv))
                assert not obs["last_action_error"], (task, st.step_index, obs["last_action_error"])
            done, success, reward = episode_outcome(env, info, terminated)
            assert done and success and reward == 1.0, (task, view, reward)
            solved.append(task)
        finally:
            env.close()
    assert len(solved) == 3
