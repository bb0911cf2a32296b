"""Stale screenshots from their real cause: `mag recapture` replays a recorded forum episode, `mag unify` flags it.

Real parts only: the forum (Spirit) served on 127.0.0.1, the system Chromium through
BrowserGym, PNG screenshots compared pixel by pixel (:mod:`mag_dataset.harness.unify`'s
stale rule). One short template (``like_opening_post``, 5 steps) is recorded once and
replayed twice:

* on a **reset** site (what ``mag recapture`` does before a site's first episode) the
  replay sees the pages the action was taken on: no step may be flagged stale (the
  threshold does not fire on rendering noise);
* on the site **as the recording and that replay left it** (``--no-reset``: the opening
  post is already liked) the topic page shows "remove like" where the action-time page
  showed "like": exactly the steps on that page are stale, the board and index pages are not.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from mag_dataset.cli import main
from mag_dataset.harness.unify import PIXEL_FRACTION
from mag_dataset.raw import read_episode, read_stages

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-forum")]

TASK = "sites.forum.like_opening_post"


@pytest.fixture(scope="module")
def recorded(forum, tmp_path_factory):
    """One recorded like_opening_post episode (the forum is served for the module by conftest's ``forum``)."""
    from mag_dataset.harness.recorder import record_corpus

    raw = tmp_path_factory.mktemp("recapture") / "raw"
    results = record_corpus(raw, [TASK], episodes=1, seed=0)
    assert [r.ok for r in results] == [True], [r.reason for r in results]
    return raw


def _episode(raw: Path):
    folders = [p for p in raw.iterdir() if p.is_dir()]
    assert len(folders) == 1
    return folders[0], read_episode(folders[0])


def _unify(raw: Path, capsys) -> str:
    capsys.readouterr()
    assert main(["unify", "--raw", str(raw)]) == 0
    return capsys.readouterr().out


def test_recapture_on_reset_site_is_not_stale_then_on_moved_on_site_is(recorded, tmp_path, capsys):
    folder0, original = _episode(recorded)
    n = len(original.steps)
    assert n >= 4
    topic_steps = [st.step_index for st in original.steps if "/topic/" in st.url]
    assert topic_steps and len(topic_steps) < n  # some steps on the topic page, some before it

    # 1. replay on a reset site: the same pages, nothing stale
    reset_raw = tmp_path / "reset"
    shutil.copytree(recorded, reset_raw)
    assert main(["recapture", "--raw", str(reset_raw), "--share", "1", "--seed", "0"]) == 0
    assert "recaptured 1 episodes" in capsys.readouterr().out
    folder, ep = _episode(reset_raw)
    assert ep.metadata["recaptured"] == {"diverged": False, "site_reset_before": True}
    for old, st in zip(original.steps, ep.steps):
        assert st.metadata["recaptured"] is True
        assert st.metadata["action_time_screenshot"] == old.screenshot
        assert (folder / old.screenshot).is_file()  # the action-time screenshot is kept
        assert old.som_screenshot  # the recorder stores Set-of-Mark files (raw v1 style)
        if st.metadata["recaptured_identical"]:  # stored once
            assert (st.screenshot, st.som_screenshot) == (old.screenshot, old.som_screenshot)
            assert (folder / st.som_screenshot).is_file()
        else:
            assert st.screenshot.endswith("_recaptured.png") and (folder / st.screenshot).is_file()
            assert (folder / st.som_screenshot).is_file()  # redrawn on the recaptured screenshot
            assert not (folder / old.som_screenshot).exists()  # no longer referenced
        assert st.candidates == old.candidates and st.action == old.action  # the labels stay the recorded ones
    # the seeded pages render the same pixels again: most replayed screenshots are not stored twice
    assert sum(st.metadata["recaptured_identical"] for st in ep.steps) >= n // 2
    assert f"{n} recaptured, 0 stale" in _unify(reset_raw, capsys)
    _, ep = _episode(reset_raw)
    checks = [st.metadata["stale_check"] for st in ep.steps]
    assert [c["stale"] for c in checks] == [False] * n, checks
    assert max(c["pixel_fraction"] for c in checks) < PIXEL_FRACTION / 10  # far below the threshold
    # a second run changes nothing
    assert main(["recapture", "--raw", str(reset_raw), "--share", "1"]) == 0
    out = capsys.readouterr().out
    assert "recaptured 0 episodes" in out and "skipped 1" in out

    # 2. replay on the site as it is now: the opening post was liked by the recording and the replay
    moved_raw = tmp_path / "moved"
    shutil.copytree(recorded, moved_raw)
    assert main(["recapture", "--raw", str(moved_raw), "--per-template", "1", "--no-reset"]) == 0
    out = _unify(moved_raw, capsys)
    _, ep = _episode(moved_raw)
    assert ep.metadata["recaptured"]["site_reset_before"] is False
    stale = [st.step_index for st in ep.steps if st.stale]
    assert f"{n} recaptured, {len(stale)} stale" in out
    evidence = [(st.step_index, st.url, st.metadata["stale_check"]) for st in ep.steps]
    assert stale and set(stale) <= set(topic_steps), (evidence, topic_steps)
    for st in ep.steps:
        check = st.metadata["stale_check"]
        if st.stale:
            assert check["reason"] == "pixels" and check["pixel_fraction"] > PIXEL_FRACTION
    # the builder reads the flag from the raw step; the evidence is in the episode file
    saved = json.loads((moved_raw / folder0.name / "episode.json").read_text())
    assert sum(s["stale"] for s in saved["steps"]) == len(stale)

    # 3. undone: the episode as recorded again (a recaptured step's Set-of-Mark file is gone: rendered at build)
    assert main(["recapture", "--raw", str(moved_raw), "--undo", "--no-progress"]) == 0
    assert "undid the recapture of 1 episodes" in capsys.readouterr().out
    assert "0 recaptured, 0 stale" in _unify(moved_raw, capsys)
    _, undone = _episode(moved_raw)
    assert undone.metadata == original.metadata and not list((moved_raw / folder0.name).glob("*_recaptured*"))
    for st, old in zip(undone.steps, original.steps):
        assert dataclasses.replace(st, som_screenshot=old.som_screenshot) == old and st.metadata == old.metadata
        assert st.som_screenshot in (old.som_screenshot, "") and (moved_raw / folder0.name / st.screenshot).is_file()

    # 4. compacted (action-time screenshots stored as differences, `<stem>~<base>`) and recaptured
    # again: a recaptured file is named from the difference's own stem, never `<stem>~<base>_recaptured`
    # (which reads as a difference from a file that does not exist)
    assert main(["compact", "--raw", str(moved_raw)]) == 0
    _, compacted = _episode(moved_raw)
    assert any("~" in st.screenshot for st in compacted.steps)
    assert main(["recapture", "--raw", str(moved_raw), "--per-template", "1", "--no-reset", "--no-progress"]) == 0
    capsys.readouterr()
    folder, again = _episode(moved_raw)  # every step reads: every file it names is there
    new = [st.screenshot for st in again.steps if st.screenshot != st.metadata["action_time_screenshot"]]
    assert new and all("~" not in name and name.endswith("_recaptured.png") for name in new), new
    assert f"{n} recaptured" in _unify(moved_raw, capsys)
    # every command left its entry in the corpus's stage record, in the order it ran
    assert [e.stage for e in read_stages(moved_raw)] == [
        "recapture", "unify", "recapture --undo", "unify", "compact", "recapture", "unify"]


def _strip_evidence(raw: Path) -> dict[int, dict]:
    """Make the recording look like one made before the recorder stored fingerprints; returns what it had."""
    from mag_dataset.raw import rewrite_episode_json

    folder, ep = _episode(raw)
    had = {st.step_index: st.metadata["dom"] for st in ep.steps}
    steps = tuple(dataclasses.replace(st, metadata={k: v for k, v in st.metadata.items() if k not in ("dom", "page_title")})
                  for st in ep.steps)
    rewrite_episode_json(folder, dataclasses.replace(ep, steps=steps))
    return had


def _dom_differences(recorded: dict, replayed: dict, path: str = "") -> list[str]:
    """The leaves where two fingerprint trees differ, as ``path: recorded != replayed`` (a readable failure)."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out = []
        for key in sorted(set(recorded) | set(replayed), key=str):
            out += _dom_differences(recorded.get(key, "<absent>"), replayed.get(key, "<absent>"), f"{path}/{key}")
        return out
    return [] if recorded == replayed else [f"{path}: {recorded!r} != {replayed!r}"]


def test_evidence_replay_gives_the_recorders_fingerprints_and_the_rule_based_audit_confirms(recorded, tmp_path, capsys):
    raw = tmp_path / "evidence"
    shutil.copytree(recorded, raw)
    _, recorded_ep = _episode(raw)
    assert all(isinstance(st.metadata.get("dom"), dict) for st in recorded_ep.steps)  # the recorder stores them
    had = _strip_evidence(raw)
    capsys.readouterr()
    assert main(["recapture", "--raw", str(raw), "--evidence"]) == 0
    out = capsys.readouterr().out
    n = len(recorded_ep.steps)
    assert f"fingerprinted {n} steps of 1 episodes; the replayed page differed in 0 episodes" in out, out
    _, ep = _episode(raw)
    # a reset site replays the same DOM on every step the judges read (the targeted ones); the last
    # step's page is read while the like's request settles, which the judges never look at
    targeted = {st.step_index for st in ep.steps if st.action.element_id or st.action.coordinate}
    replayed = {st.step_index: st.metadata["dom"] for st in ep.steps if st.step_index in targeted}
    recorded_dom = {i: dom for i, dom in had.items() if i in targeted}
    assert len(targeted) >= 4 and replayed == recorded_dom, _dom_differences(recorded_dom, replayed)
    assert all(st.metadata["page_title"] for st in ep.steps)
    # the three rule-based judges confirm every targeted step of an action-time recording
    assert main(["audit", "--raw", str(raw), "--judges", "dom,name,pixel", "--steps", "all"]) == 0
    records = [json.loads(line) for line in (raw / "audit.jsonl").read_text().splitlines()]
    targeted = [st for st in ep.steps if st.action.element_id or st.action.coordinate]
    assert len(records) == len(targeted) > 0
    assert {r["status"] for r in records} == {"confirmed"}, records
    verdicts = (raw / "audit_verdicts.jsonl").read_text()
    assert main(["audit", "--raw", str(raw), "--judges", "dom,name,pixel", "--steps", "all"]) == 0
    assert (raw / "audit_verdicts.jsonl").read_text() == verdicts  # a rerun is byte-identical
    assert [e.stage for e in read_stages(raw)] == ["recapture --evidence", "audit"]  # the rerun changed nothing


def test_recapture_ends_where_the_server_stopped_and_keeps_the_action_time_screenshots(recorded, forum, tmp_path,
                                                                                       monkeypatch, capsys):
    """The server stops before the first replayed action: the next page is Chromium's error page, and
    the recapture of the episode ends there instead of storing it (the sample once shipped one)."""
    from mag_dataset.sites import env as site_env
    from mag_dataset.sites import manager

    raw = tmp_path / "down"
    shutil.copytree(recorded, raw)
    make = site_env.make_site_env

    def make_and_stop_before_the_first_action(*args, **kwargs):
        env = make(*args, **kwargs)
        step = env.step

        def stop_then_step(action):
            os.killpg(manager.status(forum).pid, signal.SIGKILL)  # the server dies: the click's page load fails
            env.step = step
            return step(action)

        env.step = stop_then_step
        return env

    monkeypatch.setattr(site_env, "make_site_env", make_and_stop_before_the_first_action)
    try:
        assert main(["recapture", "--raw", str(raw), "--share", "1"]) == 0
    finally:
        manager.stop(forum)  # forgets the dead server's record
        manager.serve(forum)
    folder, ep = _episode(raw)
    first, second, *rest = ep.steps
    assert first.metadata["recaptured"] is True  # observed while the server answered
    ended = second.metadata["recapture_ended"]
    assert ended["step"] == 1 and (ended["reason"] == "the site's server stopped answering"
                                   or ended["reason"].startswith("a browser error page")), ended
    assert second.metadata["recaptured"] is False and "action_time_screenshot" not in second.metadata
    assert all(st.metadata["recaptured"] is False and st.metadata["recapture_ended_before"] == 1 for st in rest)
    assert ep.metadata["recaptured"]["ended"] == ended
    from PIL import Image

    from mag_dataset.error_pages import is_browser_error_page

    for st in ep.steps:  # no error page was stored
        with Image.open(folder / st.screenshot) as im:
            assert not is_browser_error_page(im)
    assert main(["build", "--raw", str(raw), "--out", str(tmp_path / "built")]) == 0
