"""The committed sample corpus (mag_dataset/data/raw): geometry of every step, coverage, split, size."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

import mag_dataset
from mag_dataset.actions import ACTION_SPACE
from mag_dataset.guides import template_guide
from mag_dataset.raw import CORPUS_FILE, read_corpus
from mag_dataset.schema import GuideSource, box_inside_image, point_in_box

RAW = Path(mag_dataset.__file__).parent / "data" / "raw"
APP_LIKE_FAMILIES = ("email-inbox", "social-media", "search-engine", "book-flight", "login-user-popup",
                     "navigate-tree", "use-autocomplete")


@pytest.fixture(scope="module")
def episodes():
    eps = list(read_corpus(RAW))  # validates every episode (format v1, files present, ids in menu)
    assert eps, f"no bundled episodes under {RAW}"
    return eps


def test_every_gold_coordinate_lies_in_its_target_box_inside_the_image(episodes):
    checked = 0
    for ep in episodes:
        folder = RAW / ep.episode_id
        for st in ep.steps:
            where = f"{ep.episode_id}:{st.step_index}"
            for name in (st.screenshot, st.som_screenshot):
                with Image.open(folder / name) as im:
                    assert im.size == (st.image_width, st.image_height), where
            if not ACTION_SPACE[st.action.type].targeted:
                assert st.target_bbox is None and st.action.coordinate is None, where
                continue
            box, pt = st.target_bbox, st.action.coordinate
            assert box is not None and pt is not None and st.action.element_id is not None, where
            assert box_inside_image(box, st.image_width, st.image_height), where
            assert point_in_box(pt, box), where
            # the gold coordinate is the centre of the target box (rounded to 0.01 px)
            assert abs(pt[0] - (box[0] + box[2]) / 2) <= 0.01 and abs(pt[1] - (box[1] + box[3]) / 2) <= 0.01, where
            assert 0 <= pt[0] <= st.image_width and 0 <= pt[1] <= st.image_height, where
            # the gold element is in the menu with exactly the target box
            menu = {c.id: c for c in st.candidates}
            assert menu[st.action.element_id].bbox == box, where
            checked += 1
    n_targeted = sum(ACTION_SPACE[s.action.type].targeted for ep in episodes for s in ep.steps)
    assert checked == n_targeted and checked >= 350


def test_coverage_steps_sites_types(episodes):
    steps = [s for ep in episodes for s in ep.steps]
    sites = Counter(ep.site for ep in episodes)
    types = Counter(s.action.type.value for s in steps)
    assert len(steps) >= 400, len(steps)
    assert len(sites) >= 12, sites
    assert len(types) >= 4 and {"click", "type", "select"} <= set(types), types
    # the issue counts app-like *families*: email-inbox-delete and email-inbox are one
    app_like = {f for f in APP_LIKE_FAMILIES for s in sites if s == f or s.startswith(f + "-")}
    assert len(app_like) >= 4, app_like
    assert sum(len(ep.steps) > 1 for ep in episodes) >= 50  # multi-step episodes
    assert all(ep.success and ep.reward == 1 for ep in episodes)
    assert all(ep.site == ep.intent_template_id and ep.intent for ep in episodes)


def test_guides_are_the_templates_of_the_gold_actions(episodes):
    n = 0
    for ep in episodes:
        for st in ep.steps:
            target = next((c for c in st.candidates if c.id == st.action.element_id), None)
            assert st.guide_source is GuideSource.TEMPLATE
            assert st.guide == template_guide(st.action, target), f"{ep.episode_id}:{st.step_index}"
            n += 1
    assert n >= 400


def test_split_by_task_with_held_out_templates(episodes):
    manifest = json.loads((RAW / CORPUS_FILE).read_text("utf-8"))
    assert manifest["format"] == "mag-raw-corpus" and isinstance(manifest["split_seed"], int)
    splits = manifest["splits"]
    assert set(splits) == {ep.task_id for ep in episodes}
    assert set(splits.values()) == {"train", "test"}
    held = manifest["held_out_templates"]
    assert len(held) >= 2
    by_template: dict[str, set[str]] = {}
    for ep in episodes:
        by_template.setdefault(ep.intent_template_id, set()).add(splits[ep.task_id])
    for t in held:
        assert by_template[t] == {"test"}, t
    seen = [t for t in by_template if t not in held]
    assert len(seen) >= 10 and all(by_template[t] == {"train", "test"} for t in seen)
    # the stored assignment is exactly what the seeded split gives
    from mag_dataset.live.recorder import split_tasks

    tmpl = {ep.task_id: ep.intent_template_id for ep in episodes}
    assert split_tasks(tmpl, manifest["split_seed"], held, manifest["test_fraction"]) == splits


def test_repository_size_under_budget():
    total = sum(p.stat().st_size for p in RAW.rglob("*") if p.is_file())
    assert total < 25 * 1024 * 1024, f"{total / 1e6:.1f} MB"
    # and nothing outside the format is committed there
    stray = [p for p in RAW.rglob("*") if p.is_file() and p.suffix not in (".png", ".json", ".jsonl")]
    assert not stray, stray
