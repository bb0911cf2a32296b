"""Loading built folders with ``datasets``: both views agree, Steps round-trip, loads are fast."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets
import pytest

from mag_dataset.builder import BUILD_INFO_FILE, raw_fingerprint
from mag_dataset.commands import demo
from mag_dataset.dataset import (
    is_local,
    bundled_dataset,
    bundled_raw_dir,
    gold_records,
    load_steps,
    load_view,
    row_to_step,
    step_from_record,
)
from mag_dataset.schema import Split, Step
from synthetic_raw import make_corpus

SHARED = ("step_id", "task_id", "guide", "previous_guides", "split", "split_seed", "target_bbox", "audit_status",
          "disputed", "stale", "unseen_template", "coordinate_restored", "intent")


@pytest.fixture(scope="module")
def bundled() -> Path:
    assert bundled_raw_dir().is_dir(), "the bundled raw corpus is missing"
    return bundled_dataset()  # the shared cached build (building the corpus costs a minute or more)


def _columns(folder: Path, view: str, split: str) -> list[dict]:
    return datasets.load_dataset(str(folder), view, split=split).select_columns(list(SHARED)).to_list()


def _assert_views_agree(folder: Path) -> int:
    n = 0
    for split in ("train", "test"):
        som, coord = _columns(folder, "som", split), _columns(folder, "coord", split)
        assert len(som) == len(coord) > 0
        assert [r["step_id"] for r in som] == [r["step_id"] for r in coord]
        assert som == coord  # guides, splits, flags, target boxes: all the same
        assert {r["split"] for r in som} == {split}
        n += len(som)
    return n


def test_views_return_the_same_steps_guides_and_splits(built):
    assert _assert_views_agree(built) == 40


def test_bundled_views_agree(bundled):
    n = _assert_views_agree(bundled)
    info = json.loads((bundled / BUILD_INFO_FILE).read_text())
    # the corpus' own size target (>= 400 steps) is checked in test_bundled_corpus.py
    assert n == sum(v["num_examples"] for v in info["views"]["som"].values()) >= 100


def test_screenshots_differ_between_views_but_share_sizes(built):
    som = load_view(built, "som", "test")
    coord = load_view(built, "coord", "test")
    for i in (0, len(som) - 1):
        a, b = som[i], coord[i]
        assert a["screenshot"].size == b["screenshot"].size == (a["image_width"], a["image_height"])
        assert a["screenshot"].tobytes() != b["screenshot"].tobytes()  # SoM labels drawn


def test_second_load_reads_the_cache(built):
    """The second load memory-maps the Arrow cache the first one wrote (how fast: benchmarks/bench_load.py)."""
    for view in ("som", "coord"):
        first = load_view(built, view, "test")
        files = [f["filename"] for f in first.cache_files]
        stamps = {f: os.stat(f).st_mtime_ns for f in files}
        ds = load_view(built, view, "test")
        assert len(ds) == 28 and files
        assert [f["filename"] for f in ds.cache_files] == files
        assert {f: os.stat(f).st_mtime_ns for f in files} == stamps  # not written again


def test_load_steps_gold_records_round_trip(built):
    for view in ("som", "coord"):
        steps = load_steps(built, view, "test")
        assert len(steps) == 28 and all(isinstance(s, Step) for s in steps)
        assert all(s.split is Split.TEST for s in steps)
        records = gold_records(load_view(built, view, "test"))
        text = json.dumps(records)  # JSON-able, no image bytes
        assert "screenshot" not in text
        assert [step_from_record(r) for r in json.loads(text)] == steps
    som = load_steps(built, "som", "test")
    coord = load_steps(built, "coord", "test")
    assert all(len(s.candidates) == 3 for s in som)
    assert all(s.candidates == () and s.action.element_id is None for s in coord)
    assert sum(s.has_target for s in coord) > 10


def test_row_to_step_every_row(built):
    n = 0
    for split in ("train", "test"):
        ds = load_view(built, "som", split)
        for row in ds.remove_columns("screenshot"):
            step = row_to_step(row)
            assert step.step_id == f"{step.task_id}:{step.step_index}"
            assert list(step.previous_guides) == row["previous_guides"]
            n += 1
    assert n == 40


def test_repo_ids_and_paths_are_told_apart(tmp_path):
    assert not is_local("mag/webmre")
    assert not is_local("webmre")
    assert is_local(tmp_path)
    assert is_local(str(tmp_path))
    assert is_local("./webmre")
    with pytest.raises(FileNotFoundError, match="dataset folder not found"):
        load_view(tmp_path / "missing", "som", "test")


def test_fingerprint_follows_the_raw_files(tmp_path):
    raw = tmp_path / "raw"
    make_corpus(raw, seeds_per_template=1)
    before = raw_fingerprint(raw)
    assert raw_fingerprint(raw) == before
    ep = sorted(p for p in raw.iterdir() if p.is_dir())[0]
    (ep / "step_000.png").write_bytes((ep / "step_001.png").read_bytes())
    assert raw_fingerprint(raw) != before


def test_bundled_dataset_is_built_once(bundled):
    info = bundled / BUILD_INFO_FILE
    stamp = info.stat().st_mtime_ns
    assert bundled_dataset(cache_dir=bundled.parent) == bundled
    assert info.stat().st_mtime_ns == stamp
    assert bundled.name == f"webmre-sample-{raw_fingerprint(bundled_raw_dir())[:16]}"


def test_a_cached_build_without_a_later_build_info_field_is_not_reused(bundled, tmp_path):
    from mag_dataset.builder.layout import LATE_BUILD_INFO_FIELDS
    from mag_dataset.dataset import _current_build

    info = json.loads((bundled / BUILD_INFO_FILE).read_text("utf-8"))
    assert _current_build(bundled) and set(LATE_BUILD_INFO_FIELDS) <= set(info)
    old = tmp_path / bundled.name  # a build made before build_info had corpus_stages
    old.mkdir()
    (old / BUILD_INFO_FILE).write_text(json.dumps({k: v for k, v in info.items() if k != "corpus_stages"}), "utf-8")
    assert not _current_build(old)
    (old / BUILD_INFO_FILE).write_text("{", "utf-8")  # a torn file is no build either
    assert not _current_build(old) and not _current_build(tmp_path / "missing")


def test_a_caller_waiting_for_the_bundled_build_takes_the_one_made_meanwhile(tmp_path):
    """Two callers at once (two xdist workers on a fresh machine): the second waits on the first's
    lock and finds the folder built, instead of spending a minute building it again."""
    import threading

    import filelock

    out = tmp_path / f"webmre-sample-{raw_fingerprint(bundled_raw_dir())[:16]}"
    got = []
    with filelock.FileLock(str(out) + ".lock"):  # a build in progress
        waiter = threading.Thread(target=lambda: got.append(bundled_dataset(cache_dir=tmp_path)))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not got  # waiting, not building alongside
        (out / BUILD_INFO_FILE).parent.mkdir()
        (out / BUILD_INFO_FILE).write_text('{"corpus_stages": []}')  # ... the build finished
    waiter.join(30)
    assert got == [out] and sorted(p.name for p in out.iterdir()) == [BUILD_INFO_FILE]


def test_demo_stages_print_a_table_per_view_and_split(built, capsys):
    loaded = demo.stage_load(built)
    stats = demo.stage_statistics(loaded)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("| som |", "| coord |"))]
    assert len(rows) == 4
    assert stats["som"]["test"] == stats["coord"]["test"]
    assert stats["som"]["test"]["unseen_template"] == 16
    assert stats["som"]["train"]["action_types"] == {"click": 2, "type": 3, "select": 3, "scroll": 3, "finish": 1}


@pytest.mark.slow
def test_mag_demo_on_the_bundled_corpus(bundled, capsys):
    """The README's main command, ``mag demo``, as a user runs it: on the cached build of the
    bundled corpus (built from the raw episodes by the ``bundled`` fixture, as a user's first
    ``mag demo`` builds it). A second full build of the corpus (``mag demo --out DIR``, 166 s of
    the suite's 2 cores) is not repeated here: the builder's byte-identity is tested in
    tests/test_builder.py (twice in one process, and in another process)."""
    from mag_dataset.cli import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert f"[build] {bundled} (" in out
    rows = [line for line in out.splitlines() if line.startswith(("| som |", "| coord |"))]
    assert len(rows) == 4
    # the scores: the consistency extensions under J and JG in both views (the coord view's gold
    # brings the som menus; without them coord J/JG showed "—" while mag score computed it)
    head = next(line for line in out.splitlines() if line.startswith("view  contract"))
    assert head.split()[-3:] == ["consistency", "joint", "acc"]
    scores = {tuple(line.split()[:2]): line.split()[-2:] for line in out.splitlines()
              if line.startswith(("som ", "coord "))}
    assert len(scores) == 8
    for (view, contract), (cons, joint) in scores.items():
        assert (cons != "—" and joint != "—") == (contract in ("J", "JG")), (view, contract, cons, joint)


def test_loading_api_imports_cheaply():
    import subprocess
    import sys

    code = (
        "import sys, mag_dataset.dataset, mag_dataset.card, mag_dataset.publish, mag_dataset.commands.demo, "
        "mag_dataset.commands.build, mag_dataset.commands.publish\n"
        "heavy = [m for m in ('datasets', 'torch', 'gradio', 'pyarrow', 'huggingface_hub') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_bundled_gold_targets_are_menu_elements_and_coord_hides_them(bundled):
    n_targeted = 0
    for split in ("train", "test"):
        som = load_steps(bundled, "som", split)
        coord = load_steps(bundled, "coord", split)
        assert [s.step_id for s in som] == [s.step_id for s in coord]
        for s, c in zip(som, coord):
            assert c.candidates == () and c.action.element_id is None and c.original_element_id is None
            assert c.target_bbox == s.target_bbox and c.action.coordinate == s.action.coordinate
            if s.has_target:
                n_targeted += 1
                menu = {cand.id: cand for cand in s.candidates}
                assert menu[s.action.element_id].bbox == s.target_bbox, s.step_id
        unseen = {s.intent_template_id for s in som if s.unseen_template}
        assert (len(unseen) >= 2) if split == "test" else (unseen == set())
    assert n_targeted >= 100


def test_card_yaml_declares_features_and_split_sizes(built):
    from mag_dataset.features import view_features

    for view in ("som", "coord"):
        builder = datasets.load_dataset_builder(str(built), view)
        assert builder.info.features == view_features(view)
        assert {k: v.num_examples for k, v in builder.info.splits.items()} == {"train": 12, "test": 28}
        assert load_view(built, view, "train").features == view_features(view)
