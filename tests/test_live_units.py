"""Unit tests of the live layer that need no browser: conversion, executor strings, split, CLI errors."""

from __future__ import annotations

import json

import pytest

from mag_dataset.actions import View
from mag_dataset.live.execute import ExecutionError, to_browsergym_action
from mag_dataset.live.observe import Conversion
from mag_dataset.harness.recorder import episode_seed
from mag_dataset.builder.splits import split_tasks
from mag_dataset.schema import Action


def test_conversion_round_trip_and_browsergym_pixels():
    conv = Conversion(scale=1.5, crop=(30, 12, 270, 327))
    shot = (100.0, 50.0)
    page = conv.to_page(shot)
    assert page == pytest.approx(((100 + 30) / 1.5, (50 + 12) / 1.5))
    assert conv.to_screenshot(page) == pytest.approx(shot)
    # BrowserGym's mouse_* divide by the scale themselves: hand them page px times the scale
    assert conv.to_browsergym(shot) == pytest.approx((130.0, 62.0))
    assert Conversion.from_dict(json.loads(json.dumps(conv.to_dict()))) == conv


def test_executor_strings_per_view():
    conv = Conversion(scale=1.5, crop=(0, 0, 240, 315))
    click = Action(type="click", element_id="19", coordinate=(44.45, 206.25))
    assert to_browsergym_action(click, View.SOM, conv) == "click('19')"
    assert to_browsergym_action(click, "coord", conv) == "mouse_move(44.45, 206.25)\nnoop(100)\nmouse_click(44.45, 206.25)"
    typ = Action(type="type", element_id="16", coordinate=(10, 10), text="it's")
    assert to_browsergym_action(typ, View.SOM, conv) == "fill('16', \"it's\")"
    assert "keyboard_type(\"it's\")" in to_browsergym_action(typ, View.COORD, conv)
    sel = Action(type="select", element_id="13", value="Norfolk Island")
    assert to_browsergym_action(sel, View.SOM, conv) == "select_option('13', 'Norfolk Island')"
    assert to_browsergym_action(Action(type="press", key="Enter"), View.SOM) == "keyboard_press('Enter')"
    assert to_browsergym_action(Action(type="scroll", direction="down"), View.COORD, conv) == "scroll_at(120.0, 157.5, 0.0, 150.0)"
    assert to_browsergym_action(Action(type="go_back"), View.SOM) == "go_back()"


def test_executor_rejects_what_the_view_lacks():
    with pytest.raises(ExecutionError, match="coordinate"):
        to_browsergym_action(Action(type="click", element_id="3"), View.COORD, Conversion(1.5, (0, 0, 9, 9)))
    with pytest.raises(ExecutionError, match="element id"):
        to_browsergym_action(Action(type="click", coordinate=(1, 1)), View.SOM)


def test_split_is_by_task_seeded_and_holds_out_templates():
    tasks = {f"{t}.seed-{i}": t for t in ("a", "b", "c", "held") for i in range(10)}
    s1 = split_tasks(tasks, 0, ["held"])
    assert s1 == split_tasks(dict(reversed(list(tasks.items()))), 0, ["held"])  # order-free
    assert set(s1) == set(tasks)
    assert all(s1[t] == "test" for t in tasks if tasks[t] == "held")
    for tpl in ("a", "b", "c"):
        got = [s1[t] for t in tasks if tasks[t] == tpl]
        assert got.count("test") == 3 and got.count("train") == 7
    assert split_tasks(tasks, 1, ["held"]) != s1  # the seed matters


def test_episode_seeds_are_fixed():
    # pinned: the bundled corpus' seeds are sha256("task|seed|index") mod 10^6, recorded once
    assert (episode_seed("login-user", 0, 0), episode_seed("login-user", 1, 0)) == (890950, 905926)
    assert len({episode_seed("login-user", k, 0) for k in range(50)}) == 50
    assert episode_seed("login-user", 0, 0) != episode_seed("login-user", 0, 1)


def test_record_cli_rejects_bad_input(tmp_path, capsys):
    from mag_dataset.cli import main

    assert main(["record", "--out", str(tmp_path / "x"), "--tasks", "no-such-task"]) == 2
    assert "no expert for task(s) no-such-task" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    assert main(["record", "--out", str(tmp_path / "full"), "--tasks", "click-button"]) == 2
    assert "is not an empty folder" in capsys.readouterr().err
    assert main(["record", "--out", str(tmp_path / "y"), "--episodes", "0"]) == 2
    assert "--episodes must be at least 1" in capsys.readouterr().err
    assert main(["record", "--out", str(tmp_path / "z"), "--tasks", "click-button", "--held-out", "click-tab-2"]) == 2
    assert "--held-out click-tab-2: not among --tasks, so nothing would be held out" in capsys.readouterr().err
    (tmp_path / "a-file").write_text("x")
    assert main(["record", "--out", str(tmp_path / "a-file" / "raw"), "--tasks", "click-button"]) == 2
    assert f"cannot write --out {tmp_path / 'a-file' / 'raw'}: [Errno" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists() and not (tmp_path / "z").exists()


def test_record_cli_records_a_task_named_twice_once(tmp_path, monkeypatch, capsys):
    from mag_dataset.cli import main
    from mag_dataset.harness import recorder

    calls = {}

    def fake_record_corpus(out, tasks, episodes, seed, log=None, point_only_share=0.0, ray=None):  # the browser part is tested in test_live_record
        calls.update(tasks=tasks, episodes=episodes, seed=seed)
        return []

    monkeypatch.setattr(recorder, "record_corpus", fake_record_corpus)
    assert main(["record", "--out", str(tmp_path / "r"), "--tasks", "click-button", "enter-text", "click-button"]) == 2
    assert calls == {"tasks": ["click-button", "enter-text"], "episodes": 10, "seed": 0}
    assert "no episode succeeded; nothing written" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_live_modules_import_no_browser_stack():
    import subprocess
    import sys

    code = ("import sys, mag_dataset.live.env, mag_dataset.live.observe, mag_dataset.live.execute, "
            "mag_dataset.live.experts, mag_dataset.sites.env, mag_dataset.harness.recorder, mag_dataset.commands.record; "
            "bad = [m for m in ('playwright', 'browsergym', 'torch', 'datasets', 'PIL') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_bundled_task_has_an_expert():
    from mag_dataset.live.experts import APP_LIKE, EXPERTS
    from mag_dataset.harness.recorder import BUNDLED_TASKS
    from mag_dataset.builder.splits import HELD_OUT_TEMPLATES

    assert len(BUNDLED_TASKS) >= 12 and set(BUNDLED_TASKS) <= set(EXPERTS)
    assert len(set(BUNDLED_TASKS) & APP_LIKE) >= 4
    assert len(HELD_OUT_TEMPLATES) >= 2 and set(HELD_OUT_TEMPLATES) <= set(BUNDLED_TASKS)


def test_strict_success_is_raw_reward_exactly_one():
    from mag_dataset.live.env import episode_outcome, raw_reward, strict_success

    def info(done, raw):
        return {"task_info": {"DONE_GLOBAL": done, "RAW_REWARD_GLOBAL": raw}}

    # BrowserGym's own reward is RAW_REWARD > 0: partial credit would count as success there
    assert [strict_success(info(True, r)) for r in (1, 1.0, 0.5, 0.01, 0.0, -1.0, 1.5)] == [True, True] + [False] * 5
    assert not strict_success(info(False, 1.0)) and not strict_success({}) and raw_reward({}) == 0.0
    assert episode_outcome(None, info(True, 0.5), terminated=False) == (True, False, 0.5)


def test_step_from_page_names_images_once_and_copies_the_page(tmp_path):
    import io

    from PIL import Image

    from mag_dataset.raw import RawEpisode, read_episode, write_episode
    from mag_dataset.live.page_step import PageCapture, step_from_page, step_image_names
    from mag_dataset.schema import Candidate

    assert step_image_names(7) == ("step_007.png", "step_007_som.png")

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(buf, "PNG")
    cand = Candidate(id="3", role="button", text="OK", bbox=(1, 1, 20, 10))
    page = PageCapture(png=buf.getvalue(), som_png=buf.getvalue(), width=40, height=30, candidates=(cand,),
                       url="http://127.0.0.1/x")
    images: dict[str, bytes] = {}
    click = Action(type="click", element_id="3", coordinate=(10.5, 5.5))
    a = step_from_page(page, images, step_index=0, image_index=4, action=click, target_bbox=cand.bbox, guide="Click OK.")
    b = step_from_page(page, images, step_index=1, action=Action(type="scroll", direction="down"), target_bbox=None,
                       guide="Scroll.", som=False, url="page", viewport=(40, 30), device_pixel_ratio=1.0)
    assert (a.screenshot, a.som_screenshot, b.screenshot, b.som_screenshot) == (
        "step_004.png", "step_004_som.png", "step_001.png", "")
    assert sorted(images) == ["step_001.png", "step_004.png", "step_004_som.png"]
    assert (a.url, b.url, a.viewport_width, b.viewport_height, b.device_pixel_ratio) == ("http://127.0.0.1/x", "page",
                                                                                          None, 30, 1.0)
    assert a.candidates == (cand,) and (a.image_width, a.image_height) == (40, 30) and a.metadata == {}
    ep = RawEpisode(episode_id="e", task_id="e", site="s", intent="i", intent_template_id="t", steps=(a, b))
    assert read_episode(write_episode(tmp_path, ep, images)).steps == (a, b)  # valid raw data, files present



def test_strict_success_outside_miniwob_is_reward_exactly_one():
    from mag_dataset.harness.live_eval.tasks import task_outcome

    assert task_outcome(None, "webarena.310", 1.0, {}, True, False) == (True, True, 1.0)
    assert task_outcome(None, "assistantbench.x", 0.5, {}, True, False) == (True, False, 0.5)  # partial credit
    assert task_outcome(None, "webarena.310", 2.0, {}, True, False) == (True, False, 2.0)  # == 1, as reported
    assert task_outcome(None, "webarena.310", 1.0, {}, False, False) == (False, False, 1.0)  # not terminated


def test_attempt_log_keeps_its_key_order_and_logs_the_action_only_when_parsed():
    from mag_dataset.harness.live_eval.episode import Attempt

    a = Attempt(attempt=0, screenshot="step_000.png", som_screenshot="step_000_som.png", url="u",
                conversion={"scale_factor": 1.0, "crop": [0, 0, 1, 1]}, candidates=3)
    keys = ["attempt", "screenshot", "som_screenshot", "url", "conversion", "candidates", "agent_seconds",
            "agent_error", "requests", "retries", "timeouts", "output", "format_ok", "format_reason",
            "browsergym_action", "browsergym_error", "invalid_action", "reward", "done", "recorded_step"]
    assert list(a.to_dict()) == keys and a.to_dict()["browsergym_action"] == "noop()"  # a format failure
    a.format_ok, a.action, a.guide = True, {"type": "scroll", "direction": "down"}, None
    assert list(a.to_dict()) == keys[:14] + ["action", "guide", "target_bbox"] + keys[14:]


def test_a_site_click_lands_where_a_person_would_click():
    """Seeded, whole-pixel, always inside the box, rarely the exact centre, some near an edge."""
    from mag_dataset.harness.recorder import human_click_point
    from mag_dataset.schema import box_center, point_in_box

    box = (100.0, 200.0, 260.0, 236.0)
    points = [human_click_point("sites.shop.checkout", 7, i, box) for i in range(400)]
    assert points == [human_click_point("sites.shop.checkout", 7, i, box) for i in range(400)]
    assert all(point_in_box(p, box) and p == (int(p[0]), int(p[1])) for p in points)
    cx, cy = box_center(box)
    assert sum(abs(x - cx) <= 1 and abs(y - cy) <= 1 for x, y in points) <= 0.2 * len(points)
    near_edge = sum(min(x - box[0], box[2] - x) <= 0.2 * 160 and min(y - box[1], box[3] - y) > 0 for x, y in points)
    assert near_edge >= 0.1 * len(points)
    narrow = (1011.61, 15.0, 1026.47, 33.0)  # the near-edge draw that gave 1012, 0.39 px from the edge
    assert all(min(x - narrow[0], narrow[2] - x, y - narrow[1], narrow[3] - y) >= 1
               for x, y in (human_click_point("sites.forum.search_phrase", 814497, i, narrow) for i in range(400)))
    tiny = (10.5, 10.5, 11.0, 11.5)  # under a pixel wide: no whole pixel inside, its centre
    assert human_click_point("t", 0, 0, tiny) == box_center(tiny)
