"""The builder: layout, determinism, atomicity, rejected inputs, audit labels, splits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import pytest
import yaml

from mag_dataset.actions import View
from mag_dataset.builder import (
    BuildError,
    WebMREBuilder,
    build_dataset,
    prepare_corpus,
    raw_fingerprint,
    verify_checksums,
)
from mag_dataset.cli import main
from mag_dataset.raw import AUDIT_FILE, CORPUS_FILE, RawDataError, write_audit
from mag_dataset.schema import AuditRecord, point_in_box
from synthetic_raw import BOXES, TEMPLATES, edit_episode

N_TEMPLATES = len(TEMPLATES)


@pytest.fixture()
def raw_copy(synthetic_corpus, tmp_path) -> Path:
    dst = tmp_path / "raw"
    shutil.copytree(synthetic_corpus[0], dst)
    return dst


def _load(folder: Path, view: str, split: str) -> datasets.Dataset:
    return datasets.load_dataset(str(folder), view, split=split)


# --------------------------------------------------------------------------- layout


def test_layout_card_and_manifest(built, synthetic_corpus):
    shards = sorted(p.relative_to(built).as_posix() for p in built.rglob("*.parquet"))
    assert shards == [
        "coord/test-00000-of-00001.parquet",
        "coord/train-00000-of-00001.parquet",
        "som/test-00000-of-00001.parquet",
        "som/train-00000-of-00001.parquet",
    ]
    checked = verify_checksums(built)
    assert sorted(checked) == sorted(["README.md", "build_info.json", "eval.yaml", *shards])
    lines = (built / "checksums.sha256").read_text().splitlines()
    assert len(lines) == 7 and all(len(line.split("  ")[0]) == 64 for line in lines)

    card = (built / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert [c["config_name"] for c in header["configs"]] == ["som", "coord"]
    for cfg in header["configs"]:
        assert {f["split"]: f["path"] for f in cfg["data_files"]} == {
            "train": f"{cfg['config_name']}/train-*.parquet",
            "test": f"{cfg['config_name']}/test-*.parquet",
        }
    info = {d["config_name"]: d for d in header["dataset_info"]}
    n_steps = sum(3 + (10 * t + k) % 3 for t in range(N_TEMPLATES) for k in range(2))
    assert sum(s["num_examples"] for s in info["som"]["splits"]) == n_steps
    assert "screenshot" in [f["name"] for f in info["coord"]["features"]]
    for must in ("arXiv 2607.10079", "2609.27353", "## Fields", "## Views", "## Flags", "## Splits", "## Statistics"):
        assert must in card, must
    # the statistics table has one row per view and split
    assert sum(1 for line in card.splitlines() if line.startswith(("| som |", "| coord |"))) == 4
    build_info = json.loads((built / "build_info.json").read_text())
    assert build_info["split_seed"] == 7 and build_info["raw_fingerprint"] == raw_fingerprint(synthetic_corpus[0])


def test_builder_is_a_generator_based_builder_with_two_configs(synthetic_corpus, tmp_path):
    assert issubclass(WebMREBuilder, datasets.GeneratorBasedBuilder)
    assert [c.name for c in WebMREBuilder.BUILDER_CONFIGS] == ["som", "coord"]
    builder = WebMREBuilder(config_name="coord", raw_dir=str(synthetic_corpus[0]), cache_dir=str(tmp_path / "cache"))
    builder.download_and_prepare()
    ds = builder.as_dataset(split="test")
    assert len(ds) == len(prepare_corpus(synthetic_corpus[0], progress=False).steps_in("test")) > 0
    assert ds.features["screenshot"] == datasets.Image()
    assert all(r["candidates"] == [] for r in ds.remove_columns("screenshot"))


# --------------------------------------------------------------------------- determinism / atomicity


def test_build_is_byte_identical(built, raw_copy, tmp_path):
    # a copy of the raw corpus at another path, built into another folder
    again = build_dataset(raw_copy, tmp_path / "elsewhere" / "again", progress=False)
    files = sorted(p.relative_to(built) for p in built.rglob("*") if p.is_file())
    assert len([f for f in files if f.suffix == ".parquet"]) == 4
    for rel in files:
        assert (again / rel).read_bytes() == (built / rel).read_bytes(), rel
    assert sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file()) == files


def test_screenshots_are_stored_as_the_raw_png_bytes(built, synthetic_corpus):
    raw = synthetic_corpus[0]
    for view, suffix in (("som", "_som.png"), ("coord", ".png")):
        ds = _load(built, view, "train").cast_column("screenshot", datasets.Image(decode=False))
        rows = ds.select_columns(["task_id", "step_index", "screenshot"]).to_list()
        assert len(rows) > 0
        for r in rows:
            expected = (raw / r["task_id"] / f"step_{r['step_index']:03d}{suffix}").read_bytes()
            assert r["screenshot"]["bytes"] == expected
            assert r["screenshot"]["path"] is None


def test_failed_build_leaves_nothing(raw_copy, tmp_path):
    out_parent = tmp_path / "target"
    out_parent.mkdir()
    last = sorted(p for p in raw_copy.iterdir() if p.is_dir())[-1]
    # passes the raw-format checks (file exists), fails while generating rows
    (last / "step_001_som.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    with pytest.raises(RawDataError) as e:
        build_dataset(raw_copy, out_parent / "webmre", progress=False)
    assert f"episode {last.name!r}, step 1, field 'som_screenshot'" in str(e.value)
    assert "not a readable PNG" in str(e.value)
    assert list(out_parent.iterdir()) == []


def test_failed_rebuild_keeps_the_earlier_build(raw_copy, tmp_path):
    out = build_dataset(raw_copy, tmp_path / "webmre", progress=False)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    last = sorted(p for p in raw_copy.iterdir() if p.is_dir())[-1]
    (last / "step_000.png").write_bytes(b"not a png")
    with pytest.raises(RawDataError, match="field 'screenshot'"):
        build_dataset(raw_copy, out, progress=False)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before and len(before) == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw", "webmre"]  # no temp folder left


def test_refuses_a_foreign_non_empty_output_folder(raw_copy, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(BuildError, match="not empty and holds no earlier build"):
        build_dataset(raw_copy, out, progress=False)
    assert (out / "notes.txt").read_text() == "keep me"


def test_progress_bars_are_shown(raw_copy, tmp_path, capfd):
    build_dataset(raw_copy, tmp_path / "p", progress=True)
    err = capfd.readouterr().err
    assert "reading raw episodes" in err and "Generating test split" in err


def test_unsuccessful_episodes_are_skipped_unless_asked_for(raw_copy, tmp_path):
    n_all = len(prepare_corpus(raw_copy, progress=False).steps)
    ep = sorted(p for p in raw_copy.iterdir() if p.is_dir())[0]
    n_ep = len(json.loads((ep / "episode.json").read_text())["steps"])
    edit_episode(ep, lambda d: d.update(success=False))
    assert len(prepare_corpus(raw_copy, progress=False).steps) == n_all - n_ep
    assert len(prepare_corpus(raw_copy, progress=False, include_failed=True).steps) == n_all
    built = build_dataset(raw_copy, tmp_path / "with", progress=False, include_failed=True)
    ids = {r for s in ("train", "test") for r in _load(built, "som", s)["task_id"]}
    assert json.loads((ep / "episode.json").read_text())["task_id"] in ids


# --------------------------------------------------------------------------- rejected inputs


def _episode(raw: Path, k: int = 0) -> Path:
    return sorted(p for p in raw.iterdir() if p.is_dir())[k]


def _build_error(raw: Path, tmp_path: Path) -> str:
    with pytest.raises(RawDataError) as e:
        build_dataset(raw, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    return str(e.value)


def test_rejects_missing_image(raw_copy, tmp_path):
    ep = _episode(raw_copy, 2)
    (ep / "step_001.png").unlink()
    msg = _build_error(raw_copy, tmp_path)
    assert msg == f"episode {ep.name!r}, step 1, field 'screenshot': missing image file 'step_001.png'"


def test_rejects_target_box_outside_image(raw_copy, tmp_path):
    ep = _episode(raw_copy, 1)
    edit_episode(ep, lambda d: d["steps"][0].update(target_bbox=[100, 10, 170, 30]))
    msg = _build_error(raw_copy, tmp_path)
    assert msg == f"episode {ep.name!r}, step 0, field 'target_bbox': box [100.0, 10.0, 170.0, 30.0] outside the 160x120 image"


def test_rejects_gold_coordinate_outside_target_box(raw_copy, tmp_path):
    ep = _episode(raw_copy, 3)
    edit_episode(ep, lambda d: d["steps"][1]["action"].update(coordinate=[150.0, 5.0]))
    msg = _build_error(raw_copy, tmp_path)
    assert msg.startswith(f"episode {ep.name!r}, step 1, field 'action.coordinate': gold coordinate [150.0, 5.0]")
    assert "outside target box [10.0, 40.0, 110.0, 60.0]" in msg


def test_rejects_unknown_action_type(raw_copy, tmp_path):
    ep = _episode(raw_copy, 0)
    edit_episode(ep, lambda d: d["steps"][2]["action"].update(type="double_click"))
    msg = _build_error(raw_copy, tmp_path)
    assert msg == f"episode {ep.name!r}, step 2, field 'action.type': unknown action type 'double_click'"


def test_rejects_duplicate_step_ids_within_an_episode(raw_copy, tmp_path):
    ep = _episode(raw_copy, 4)
    edit_episode(ep, lambda d: d["steps"][1].update(step_index=0))
    msg = _build_error(raw_copy, tmp_path)
    assert msg == f"episode {ep.name!r}, step 0, field 'step_index': duplicate step id '{ep.name}:0'"


def test_rejects_duplicate_step_ids_across_episodes(raw_copy, tmp_path):
    first, second = _episode(raw_copy, 0), _episode(raw_copy, 1)
    copy = raw_copy / "zz-copy"
    shutil.copytree(first, copy)
    edit_episode(copy, lambda d: d.update(episode_id="zz-copy"))
    msg = _build_error(raw_copy, tmp_path)
    assert msg == f"episode 'zz-copy', step 0, field 'step_id': duplicate step id '{first.name}:0', also in episode {first.name!r}"
    assert second.exists()


def test_rejects_image_size_mismatch(raw_copy, tmp_path):
    ep = _episode(raw_copy, 0)
    edit_episode(ep, lambda d: d["steps"][0].update(image_width=200))
    msg = _build_error(raw_copy, tmp_path)
    assert msg == f"episode {ep.name!r}, step 0, field 'screenshot': 'step_000.png' is 160x120 but the step says 200x120"


def test_rejects_truncated_image(raw_copy, tmp_path):
    ep = _episode(raw_copy, 1)
    data = (ep / "step_002_som.png").read_bytes()
    (ep / "step_002_som.png").write_bytes(data[: len(data) // 2])
    msg = _build_error(raw_copy, tmp_path)
    assert msg.startswith(f"episode {ep.name!r}, step 2, field 'som_screenshot': 'step_002_som.png' is not a readable PNG")


def test_cli_reports_rejected_input_in_one_line(raw_copy, tmp_path, capsys):
    ep = _episode(raw_copy, 2)
    (ep / "step_000_som.png").unlink()
    rc = main(["build", "--raw", str(raw_copy), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err == f"mag build: error: episode {ep.name!r}, step 0, field 'som_screenshot': missing image file 'step_000_som.png'"
    assert not (tmp_path / "out").exists()


def test_rejects_a_corpus_without_steps(raw_copy, tmp_path):
    # only failed live-eval episodes without steps: the folder would hold no Parquet and not load
    folders = [p for p in raw_copy.iterdir() if p.is_dir()]
    for ep in folders:
        edit_episode(ep, lambda d: d.update(steps=[], success=False))
    with pytest.raises(BuildError, match=f"the {len(folders)} episodes hold no steps; nothing to build"):
        build_dataset(raw_copy, tmp_path / "out", progress=False, include_failed=True)
    with pytest.raises(BuildError, match=f"all {len(folders)} episodes are marked unsuccessful"):
        build_dataset(raw_copy, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_rejects_an_output_folder_inside_the_raw_corpus(raw_copy, tmp_path):
    # it would be read as an (invalid) episode folder by the next build of that corpus
    for out in (raw_copy / "built", raw_copy):
        with pytest.raises(BuildError, match="is inside the raw corpus"):
            build_dataset(raw_copy, out, progress=False)
    assert not (raw_copy / "built").exists()


def test_cli_unwritable_output_is_one_line(raw_copy, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for argv in (["build", "--raw", str(raw_copy)], ["demo"]):
        assert main([*argv, "--out", str(blocker / "out"), *(["--no-progress"] if argv[0] == "build" else [])]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]  # after demo's progress bar
        assert err.startswith(f"mag {argv[0]}: error: [Errno") and str(blocker) in err, err
    assert main(["publish", "--repo-id", "mag/webmre", "--dataset", str(blocker / "out"), "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("mag publish: error: [Errno")


def test_cli_builds(raw_copy, tmp_path, capsys):
    assert main(["build", "--raw", str(raw_copy), "--out", str(tmp_path / "cli"), "--no-progress"]) == 0
    assert f"built {tmp_path / 'cli'}" in capsys.readouterr().out
    assert len(verify_checksums(tmp_path / "cli")) == 7  # with eval.yaml


# --------------------------------------------------------------------------- splits


def test_splits_and_unseen_templates_follow_corpus_json(built, synthetic_corpus):
    _, manifest = synthetic_corpus
    for view in ("som", "coord"):
        seen_tasks = {}
        for split in ("train", "test"):
            rows = _load(built, view, split).select_columns(["task_id", "intent_template_id", "split", "split_seed", "unseen_template"]).to_list()
            assert rows and all(r["split"] == split and r["split_seed"] == 7 for r in rows)
            seen_tasks.update({r["task_id"]: split for r in rows})
            unseen = {r["intent_template_id"] for r in rows if r["unseen_template"]}
            assert unseen == ({"held-out-a", "held-out-b"} if split == "test" else set())
        assert seen_tasks == manifest["splits"]


def test_default_split_without_corpus_json(raw_copy, tmp_path):
    (raw_copy / CORPUS_FILE).unlink()
    out = build_dataset(raw_copy, tmp_path / "d", progress=False)
    info = json.loads((out / "build_info.json").read_text())
    assert info["split_seed"] == 0 and info["split_source"] == "default"
    n_test = info["views"]["som"]["test"]["num_examples"]
    n_train = info["views"]["som"]["train"]["num_examples"]
    assert n_test > 0 and n_train > 0
    tasks = {r["task_id"] for r in _load(out, "coord", "test").select_columns(["task_id"]).to_list()}
    assert len(tasks) == 3  # round(0.3 * 10)


def test_rejects_task_without_split(raw_copy, tmp_path):
    d = json.loads((raw_copy / CORPUS_FILE).read_text())
    task = sorted(d["splits"])[0]
    del d["splits"][task]
    (raw_copy / CORPUS_FILE).write_text(json.dumps(d))
    with pytest.raises(BuildError, match=f"task '{task}' .* has no split"):
        build_dataset(raw_copy, tmp_path / "x", progress=False)


def test_rejects_held_out_template_in_train(raw_copy, tmp_path):
    d = json.loads((raw_copy / CORPUS_FILE).read_text())
    d["splits"]["held-out-a.seed-30"] = "train"
    (raw_copy / CORPUS_FILE).write_text(json.dumps(d))
    with pytest.raises(BuildError, match="template 'held-out-a' is held out but task 'held-out-a.seed-30' is in train"):
        build_dataset(raw_copy, tmp_path / "x", progress=False)


# --------------------------------------------------------------------------- audit labels


def _rows(folder: Path, view: str) -> dict[str, dict]:
    out = {}
    for split in ("train", "test"):
        for r in _load(folder, view, split).remove_columns("screenshot").to_list():
            out[r["step_id"]] = r
    return out


def test_without_audit_every_step_is_unaudited(built):
    for view in ("som", "coord"):
        rows = _rows(built, view)
        assert len(rows) == 40
        assert {r["audit_status"] for r in rows.values()} == {"unaudited"}
        assert not any(r["disputed"] or r["stale"] or r["coordinate_restored"] for r in rows.values())
        assert all(r["original_element_id"] is None for r in rows.values())


def test_raw_stale_flag_survives_without_audit(raw_copy, tmp_path):
    ep = _episode(raw_copy, 0)
    edit_episode(ep, lambda d: d["steps"][1].update(stale=True))
    rows = _rows(build_dataset(raw_copy, tmp_path / "s", progress=False), "som")
    stale = sorted(sid for sid, r in rows.items() if r["stale"])
    assert stale == [f"{ep.name}:1"]
    assert rows[f"{ep.name}:1"]["audit_status"] == "unaudited"


def test_unified_coordinate_restored_flag_survives_without_audit(raw_copy, tmp_path):
    # `mag unify` records restored steps as metadata["coordinate_restored"] in the raw step
    ep = _episode(raw_copy, 2)
    edit_episode(ep, lambda d: d["steps"][0]["metadata"].update(coordinate_restored=True))
    out = build_dataset(raw_copy, tmp_path / "u", progress=False)
    for view in ("som", "coord"):
        rows = _rows(out, view)
        assert sorted(sid for sid, r in rows.items() if r["coordinate_restored"]) == [f"{ep.name}:0"]


def test_audit_file_sets_labels_in_both_views(raw_copy, tmp_path):
    task = _episode(raw_copy, 0).name  # steps: type(1), select(2), scroll, ...
    other = _episode(raw_copy, 1).name
    records = {
        f"{task}:0": AuditRecord(status="remapped", element_id="2", original_element_id="1"),
        f"{task}:1": AuditRecord(status="confirmed", stale=True),
        f"{task}:2": AuditRecord(status="unmappable", coordinate_restored=True),
        f"{other}:0": AuditRecord(status="disputed", disputed=True),
    }
    write_audit(raw_copy / AUDIT_FILE, records)  # picked up by default from RAW/audit.jsonl
    out = build_dataset(raw_copy, tmp_path / "a", progress=False)
    som, coord = _rows(out, "som"), _rows(out, "coord")
    assert set(som) == set(coord)
    for rows in (som, coord):
        assert {sid: r["audit_status"] for sid, r in rows.items() if r["audit_status"] != "unaudited"} == {
            f"{task}:0": "remapped",
            f"{task}:1": "confirmed",
            f"{task}:2": "unmappable",
            f"{other}:0": "disputed",
        }
        assert [sid for sid, r in rows.items() if r["disputed"]] == [f"{other}:0"]
        assert [sid for sid, r in rows.items() if r["stale"]] == [f"{task}:1"]
        assert [sid for sid, r in rows.items() if r["coordinate_restored"]] == [f"{task}:2"]
        remapped = rows[f"{task}:0"]
        assert remapped["target_bbox"] == list(BOXES["2"])
        assert point_in_box(tuple(remapped["action"]["coordinate"]), BOXES["2"])
    assert som[f"{task}:0"]["action"]["element_id"] == "2"
    assert som[f"{task}:0"]["original_element_id"] == "1"
    assert coord[f"{task}:0"]["action"]["element_id"] is None
    assert coord[f"{task}:0"]["original_element_id"] is None
    assert json.loads((out / "build_info.json").read_text())["audited"] is True


def test_verified_by_and_card_counts_of_audit_outcomes_and_guide_sources(raw_copy, tmp_path):
    """``verified_by`` comes from the annotation app's step metadata; the card counts audit
    outcomes, guide sources and verified steps per split."""
    from mag_dataset.card import split_statistics

    task = _episode(raw_copy, 0).name

    def verify(d):
        d["steps"][0]["metadata"] = {**d["steps"][0].get("metadata", {}), "verified_by": "ann", "verification": "edit",
                                     "guide_decision": "edited", "decided_at": "2026-12-04T03:00:00.000Z"}
        d["steps"][0]["guide_source"] = "human"
        d["steps"][1]["metadata"] = {**d["steps"][1].get("metadata", {}), "verified_by": "bob, cy", "verification": "accept",
                                     "guide_decision": "accepted", "verification_notes": "cy: fine"}
        d["steps"][1]["guide_source"] = "llm"

    edit_episode(_episode(raw_copy, 0), verify)
    write_audit(raw_copy / AUDIT_FILE, {
        f"{task}:0": AuditRecord(status="remapped", element_id="2", original_element_id="1", adjudicated_by="ann"),
        f"{task}:1": AuditRecord(status="disputed", disputed=True),
        f"{task}:2": AuditRecord(status="unmappable"),
    })
    out = build_dataset(raw_copy, tmp_path / "a", progress=False)
    again = build_dataset(raw_copy, tmp_path / "b", progress=False)
    for f in sorted(p.relative_to(out) for p in out.rglob("*.parquet")):
        assert (out / f).read_bytes() == (again / f).read_bytes(), f
    som, coord = _rows(out, "som"), _rows(out, "coord")
    for rows in (som, coord):
        assert {sid: r["verified_by"] for sid, r in rows.items() if r["verified_by"]} == {f"{task}:0": "ann", f"{task}:1": "bob, cy"}
        assert {sid: (r["guide_decision"], r["decided_at"], r["verification_notes"]) for sid, r in rows.items()
                if r["guide_decision"]} == {f"{task}:0": ("edited", "2026-12-04T03:00:00.000Z", None),
                                            f"{task}:1": ("accepted", None, "cy: fine")}
    split = som[f"{task}:0"]["split"]
    stats = split_statistics(r for r in som.values() if r["split"] == split)
    assert stats["audit"]["remapped"] == 1 and stats["audit"]["disputed"] == 1 and stats["audit"]["unmappable"] == 1
    assert stats["audit"]["unaudited"] == stats["steps"] - 3 and stats["verified"] == 2
    assert stats["guide_sources"]["human"] == 1 and stats["guide_sources"]["llm"] == 1
    assert sum(stats["guide_sources"].values()) == stats["steps"]
    card = (out / "README.md").read_text("utf-8")
    assert "| `verified_by` | string |" in card and "audit: remapped" in card and "guide: human" in card
    line = next(ln for ln in card.splitlines() if ln.startswith(f"| {split} | ") and ln.count("|") > 10)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[-5:] == ["2", "1", "1", "0", "0"]  # verified by a person; guide accepted, edited, rejected, disputed
    assert "| `guide_decision` | string |" in card


def test_explicit_audit_path_and_unknown_steps(raw_copy, tmp_path):
    audit = tmp_path / "elsewhere.jsonl"
    write_audit(audit, {"no-such-task:0": AuditRecord(status="confirmed")})
    with pytest.raises(BuildError, match="audit records for 1 unknown step ids, e.g. 'no-such-task:0'"):
        build_dataset(raw_copy, tmp_path / "x", audit_path=audit, progress=False)
    assert not (tmp_path / "x").exists()


def test_remap_to_an_element_outside_the_menu_is_rejected(raw_copy, tmp_path):
    task = _episode(raw_copy, 0).name
    write_audit(raw_copy / AUDIT_FILE, {f"{task}:0": AuditRecord(status="remapped", element_id="99")})
    msg = _build_error(raw_copy, tmp_path)
    assert msg == f"episode {task!r}, step 0, field 'audit.element_id': remapped to '99', which is not in the candidate menu"


def test_coord_view_gives_no_element_ids(built):
    rows = _rows(built, View.COORD.value)
    targeted = [r for r in rows.values() if r["target_bbox"] is not None]
    assert len(targeted) > 20
    assert all(r["candidates"] == [] and r["action"]["element_id"] is None for r in rows.values())
    assert all(point_in_box(tuple(r["action"]["coordinate"]), tuple(r["target_bbox"])) for r in targeted)


def test_overwrite_false_keeps_a_finished_build_and_fills_an_empty_folder(raw_copy, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = build_dataset(raw_copy, empty, progress=False, overwrite=False)
    assert len(verify_checksums(out)) == 7
    stamp = (out / "build_info.json").stat().st_mtime_ns
    assert build_dataset(raw_copy, out, progress=False, overwrite=False) == out
    assert (out / "build_info.json").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "raw"]


def test_build_in_another_process_is_byte_identical(built, synthetic_corpus, tmp_path):
    import os
    import subprocess
    import sys

    out = tmp_path / "sub"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, "-m", "mag_dataset.cli", "build", "--raw", str(synthetic_corpus[0]), "--out", str(out), "--no-progress"],
        env=env, check=True, capture_output=True, timeout=300,
    )
    files = sorted(p.relative_to(built) for p in built.rglob("*") if p.is_file())
    assert len(files) == 8
    assert all((out / f).read_bytes() == (built / f).read_bytes() for f in files)


def test_built_folder_has_normal_permissions(built, tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    assert built.stat().st_mode & 0o777 == probe.stat().st_mode & 0o777


def test_build_info_says_audited_only_when_steps_were_and_the_card_names_the_judges(raw_copy, tmp_path):
    task = _episode(raw_copy, 0).name
    # an audit file that only carries `mag unify`'s flags: no step was audited
    write_audit(raw_copy / AUDIT_FILE, {f"{task}:1": AuditRecord(stale=True)})
    out = build_dataset(raw_copy, tmp_path / "flags", progress=False)
    info = json.loads((out / "build_info.json").read_text())
    assert info["audited"] is False and info["audit_judges"] == []
    assert "no label audit was run on these steps" in (out / "README.md").read_text()
    # audited by the rule-based judges: their verdict log names them
    write_audit(raw_copy / AUDIT_FILE, {f"{task}:0": AuditRecord(status="confirmed"),
                                        f"{task}:1": AuditRecord(status="disputed", disputed=True, stale=True)})
    said = {(0, "dom"): ("confirm", None, None), (0, "name"): ("confirm", None, None), (0, "pixel"): ("confirm", None, None),
            (1, "dom"): ("confirm", None, None), (1, "name"): ("remap", "3", None),
            (1, "pixel"): ("unmappable", None, "best match 0.41 under 0.80")}
    log = [{"step_id": f"{task}:{k}", "judge": j, "model": f"rule-based {j} v1", "vote": said[k, j][0],
            "element_id": said[k, j][1],
            "answer": json.dumps({"verdict": said[k, j][0], "evidence": {"why": said[k, j][2]} if said[k, j][2] else {}})}
           for k in (0, 1) for j in ("dom", "name", "pixel")]
    (raw_copy / "audit_verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    out = build_dataset(raw_copy, tmp_path / "judged", progress=False)
    info = json.loads((out / "build_info.json").read_text())
    assert info["audited"] is True
    assert info["audit_judges"] == [{"name": j, "model": f"rule-based {j} v1"} for j in ("dom", "name", "pixel")]
    card = (out / "README.md").read_text()
    assert ("labels audited by the 3 rule-based page judges `dom`, `name`, `pixel` of "
            "`mag_dataset.harness.page_judges` (v1; no language model): 2 steps with an audit outcome "
            "(confirmed 1, remapped 0, unmappable 0, disputed 1;") in card
    # an example of each outcome present, with what each judge said of it
    assert set(info["audit_examples"]) == {"confirmed", "disputed"}
    assert info["audit_examples"]["disputed"]["step_id"] == f"{task}:1"
    assert (f"- **disputed**: `{task}:1`: `dom` confirm; `name` remap → `3`; "
            "`pixel` unmappable (best match 0.41 under 0.80).") in card
    assert f"- **confirmed**: `{task}:0`: `dom` confirm; `name` confirm; `pixel` confirm." in card
