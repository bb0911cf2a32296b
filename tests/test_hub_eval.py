"""The benchmark on the Hub: ``eval.yaml`` in a build, ``mag score --eval-results`` and ``--eee``.

The schema copies below are taken from:
- ``eval.yaml``: huggingface/hub-docs ``docs/hub/eval-results.md`` ("Eval.yaml specification"),
  commit b695d61c888a48332765d6b30de7e6c897a5bd60; the framework ids from huggingface.js
  ``packages/tasks/src/eval.ts`` (``EVALUATION_FRAMEWORKS``), commit
  fe42e68017ffc76d09922ea8f9b38a6964345710.
- ``.eval_results/*.yaml``: huggingface/hub-docs ``eval_results.yaml``, commit
  2be4979eec528db07ad8cec06514a176fff50066.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from mag_dataset.cli import main
from mag_dataset.dataset import load_gold
from mag_dataset.score_file import score_file
from mag_dataset.eee import EEEError, schema, validate_records
from mag_dataset.hub_eval import (
    EVALUATION_FRAMEWORK,
    TASKS,
    EvalFileError,
    card_configs,
    eval_result_entry,
    eval_yaml_data,
    parse_eval_results,
)
from mag_dataset.predictions import Prediction, write_predictions
from mag_dataset.prompts import render_target

# --- copy of the eval.yaml specification (hub-docs b695d61, eval.ts fe42e68) -----------------
EVAL_YAML_REQUIRED = {"name": str, "description": str, "evaluation_framework": str, "tasks": list}
EVAL_TASK_REQUIRED = {"id": str}
EVAL_TASK_OPTIONAL = {"config": str, "split": str}
INSPECT_AI_TASK_REQUIRED = ("field_spec", "solvers", "scorers")  # only when evaluation_framework is inspect-ai
REGISTERED_FRAMEWORKS = frozenset({
    "exgentic", "inspect-ai", "math-arena", "mteb", "olmocr-bench", "harbor", "ifstruct", "pier", "redline-bench",
    "archipelago", "benchflow", "apex-evals", "screenspot-pro", "swe-bench", "swe-bench-pro", "nemo-evaluator",
    "yc-bench", "open-asr-leaderboard", "mdpbench", "real5-omnidocbench", "parsebench", "video-mme-v2", "claw-eval",
    "researchclawbench", "pbench", "wildclawbench", "wbench", "nanofold", "mmmu", "extractbench",
})

# --- copy of the .eval_results entry specification (hub-docs eval_results.yaml 2be4979) -------
RESULT_REQUIRED = {"dataset": dict, "value": (int, float)}
RESULT_OPTIONAL = {"verifyToken": str, "date": str, "source": dict, "notes": str}
RESULT_DATASET_REQUIRED = {"id": str, "task_id": str}
RESULT_DATASET_OPTIONAL = {"revision": str}
RESULT_SOURCE = {"url": str, "name": str, "user": str, "org": str}  # url required when source is given


def eval_yaml_problems(doc: dict) -> list[str]:
    """Where ``doc`` departs from the copied eval.yaml specification (framework registration aside)."""
    out = [f"{k}: missing or not {t.__name__}" for k, t in EVAL_YAML_REQUIRED.items() if not isinstance(doc.get(k), t)]
    allowed = set(EVAL_YAML_REQUIRED)
    out += [f"unknown top-level field {k}" for k in doc if k not in allowed]
    ids = []
    for i, task in enumerate(doc.get("tasks") or []):
        out += [f"tasks[{i}].{k} missing" for k, t in EVAL_TASK_REQUIRED.items() if not isinstance(task.get(k), t)]
        out += [f"tasks[{i}].{k} not str" for k, t in EVAL_TASK_OPTIONAL.items() if k in task and not isinstance(task[k], t)]
        if doc.get("evaluation_framework") == "inspect-ai":
            out += [f"tasks[{i}].{k} required by inspect-ai" for k in INSPECT_AI_TASK_REQUIRED if k not in task]
        elif set(task) - set(EVAL_TASK_REQUIRED) - set(EVAL_TASK_OPTIONAL):
            out.append(f"tasks[{i}] has fields outside the specification: {sorted(set(task) - {'id', 'config', 'split'})}")
        ids.append(task.get("id"))
    if len(ids) != len(set(ids)):
        out.append("task ids are not unique")
    return out


def eval_result_problems(doc: list) -> list[str]:
    """Where a parsed ``.eval_results`` file departs from the copied specification."""
    out = []
    if not isinstance(doc, list) or not doc:
        return ["not a non-empty list"]
    for i, e in enumerate(doc):
        out += [f"[{i}].{k} missing" for k, t in RESULT_REQUIRED.items() if not isinstance(e.get(k), t)]
        out += [f"[{i}].{k} not {t.__name__}" for k, t in RESULT_OPTIONAL.items() if k in e and not isinstance(e[k], t)]
        out += [f"[{i}] unknown field {k}" for k in e if k not in RESULT_REQUIRED and k not in RESULT_OPTIONAL]
        ds = e.get("dataset") or {}
        out += [f"[{i}].dataset.{k} missing" for k, t in RESULT_DATASET_REQUIRED.items() if not isinstance(ds.get(k), t)]
        out += [f"[{i}].dataset unknown field {k}" for k in ds if k not in RESULT_DATASET_REQUIRED and k not in RESULT_DATASET_OPTIONAL]
        if "source" in e and not isinstance(e["source"].get("url"), str):
            out.append(f"[{i}].source.url required")
    return out


def _predictions(built: Path, view: str, contract: str, path: Path, seeds=(0, 1)) -> Path:
    """Gold renderings for two of three (step, seed) pairs, a broken string for the rest."""
    steps = load_gold(str(built), view, "test")
    assert len(steps) >= 6
    preds = [
        Prediction(s.step_id, render_target(s, view, contract) if (i + seed) % 3 else '{"action": broken', seed)
        for i, s in enumerate(steps) for seed in seeds
    ]
    return write_predictions(path, preds)


# --------------------------------------------------------------------------- eval.yaml


def test_build_writes_an_eval_yaml_whose_tasks_exist_in_the_card_configs(built):
    doc = yaml.safe_load((built / "eval.yaml").read_text("utf-8"))
    assert eval_yaml_problems(doc) == []
    configs = card_configs(built)
    assert configs == {"som": {"train", "test"}, "coord": {"train", "test"}}
    ids = [t["id"] for t in doc["tasks"]]
    assert len(ids) == 8 and {"som_J", "coord_J"} <= set(ids)  # one per view x contract the board ranks
    for t in doc["tasks"]:
        assert t["split"] in configs[t["config"]]
        assert t["id"] == f"{t['config']}_{t['id'].split('_')[1]}"
    assert "step action accuracy (SAA)" in doc["description"] and "BLEU-1" in doc["description"]
    # the framework id is this benchmark's own, pending registration in huggingface.js eval.ts
    assert doc["evaluation_framework"] == EVALUATION_FRAMEWORK and EVALUATION_FRAMEWORK not in REGISTERED_FRAMEWORKS
    # the file is covered by the checksum manifest, so `mag publish` verifies and uploads it
    assert "eval.yaml" in (built / "checksums.sha256").read_text()


def test_the_copied_check_catches_a_bad_eval_yaml():
    assert eval_yaml_problems({"name": "x", "tasks": [{"config": "som"}, {"id": "a", "split": 3}]}) == [
        "description: missing or not str", "evaluation_framework: missing or not str",
        "tasks[0].id missing", "tasks[1].split not str",
    ]
    assert eval_yaml_problems({"name": "x", "description": "d", "evaluation_framework": "inspect-ai", "tasks": [{"id": "a"}]}) == [
        "tasks[0].field_spec required by inspect-ai", "tasks[0].solvers required by inspect-ai",
        "tasks[0].scorers required by inspect-ai",
    ]


def test_eval_yaml_lists_only_the_tasks_the_dataset_has():
    doc = eval_yaml_data({"som": {"test"}, "coord": {"train"}})
    assert [t["id"] for t in doc["tasks"]] == ["som_A", "som_G", "som_J", "som_JG"]
    with pytest.raises(EvalFileError, match="no test split"):
        eval_yaml_data({"som": {"train"}})


def test_a_build_without_a_test_split_gets_no_eval_yaml(built, tmp_path):
    import shutil

    from mag_dataset.hub_eval import write_eval_yaml

    folder = Path(shutil.copytree(built, tmp_path / "b"))
    (folder / "eval.yaml").unlink()
    card = folder / "README.md"
    card.write_text(card.read_text().replace("  - split: test\n", "  - split: held\n"))
    assert card_configs(folder) == {"som": {"train", "held"}, "coord": {"train", "held"}}
    assert write_eval_yaml(folder) is None and not (folder / "eval.yaml").exists()
    assert write_eval_yaml(built) == built / "eval.yaml"


# --------------------------------------------------------------------------- .eval_results


@pytest.mark.parametrize(("view", "contract", "metric"), [("som", "J", "saa"), ("coord", "J", "saa"), ("som", "G", "bleu1")])
def test_eval_results_round_trip(built, tmp_path, capsys, view, contract, metric):
    preds = _predictions(built, view, contract, tmp_path / "preds.jsonl")
    rev = "5503434ddd753f426f4b38109466949a1217c2bb"
    argv = ["score", "--predictions", str(preds), "--dataset", str(built), "--view", view, "--contract", contract,
            "--out", str(tmp_path / "report.json"), "--eval-results", str(tmp_path / "model"),
            "--dataset-revision", rev, "--source-url", "https://huggingface.co/acme/m/tree/main/logs", "--source-name", "logs"]
    assert main(argv) == 0, capsys.readouterr().err
    out = tmp_path / "model" / ".eval_results" / f"webmre_{view}_{contract}.yaml"
    assert f"Hub result written to {out}" in capsys.readouterr().out
    text = out.read_text("utf-8")
    assert eval_result_problems(yaml.safe_load(text)) == []
    report = json.loads((tmp_path / "report.json").read_text())
    [entry] = parse_eval_results(text)
    assert (entry.dataset_id, entry.task_id, entry.dataset_revision) == ("mag/webmre", f"{view}_{contract}", rev)
    assert entry.value == report[metric]["micro"] and 0 < entry.value < 1
    assert (entry.source_url, entry.source_name) == ("https://huggingface.co/acme/m/tree/main/logs", "logs")
    assert entry.notes.startswith(f"contract {contract}, view {view}, split test, seeds 0,1;")
    assert report["provenance"]["dataset_fingerprint"] in entry.notes and f"over {report[metric]['n']} steps" in entry.notes
    # re-scoring writes the same bytes; the entry equals the library call on the report
    assert main(argv) == 0
    assert out.read_text("utf-8") == text
    assert eval_result_entry(report, dataset_revision=rev, source_url=entry.source_url, source_name="logs") == entry


def test_eval_results_into_a_folder_named_eval_results_and_without_a_revision(built, tmp_path, capsys):
    preds = _predictions(built, "som", "A", tmp_path / "p.jsonl", seeds=(0,))
    target = tmp_path / ".eval_results"
    assert main(["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som", "--contract", "A",
                 "--eval-results", str(target), "--dataset-id", "acme/webmre-mirror"]) == 0
    assert "no dataset revision recorded; pass --dataset-revision SHA" in capsys.readouterr().err
    [entry] = parse_eval_results((target / "webmre_som_A.yaml").read_text())
    assert entry.dataset_id == "acme/webmre-mirror" and entry.dataset_revision is None and entry.source_url is None
    assert entry.notes.startswith("contract A, view som, split test, seeds 0;") and "no prediction" not in entry.notes
    # a partial file (--allow-missing) says so in the notes
    lines = preds.read_text().splitlines()
    preds.write_text("\n".join(lines[:-2]) + "\n")
    assert main(["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som", "--contract", "A",
                 "--eval-results", str(target), "--allow-missing"]) == 0
    [entry] = parse_eval_results((target / "webmre_som_A.yaml").read_text())
    assert entry.notes.endswith("; 2 steps had no prediction and count as format failures")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--eval-results", "M", "--split", "train"], "--eval-results: only the test split is a benchmark task, not train"),
        (["--eee", "E"], "--eee needs --model-id owner/name (the model the predictions come from)"),
        (["--eee", "E", "--model-id", "gpt"], "--model-id: the model id must look like owner/name (e.g. Qwen/Qwen3.5-9B), got 'gpt'"),
        (["--eval-results", "M", "--source-name", "logs"], "--source-name needs --source-url"),
        (["--model-id", "a/b"], "--model-id applies only with --eval-results or --eee"),
        (["--eval-results", "M", "--dataset-id", "webmre"], "--dataset-id must look like owner/name, got 'webmre'"),
    ],
)
def test_publishing_flag_mistakes_get_one_line(built, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    preds = _predictions(built, "som", "J", tmp_path / "p.jsonl", seeds=(0,))
    argv = ["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som", "--contract", "J", *extra]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"mag score: error: {message}"
    assert not (tmp_path / "M").exists() and not (tmp_path / "E").exists()


def test_the_leaderboard_download_is_the_same_file(built, tmp_path):
    # a board stores the report JSON; the "download for your model repo" file comes from it
    from mag_dataset.hub_eval import eval_results_file

    preds = _predictions(built, "coord", "JG", tmp_path / "p.jsonl", seeds=(0,))
    report = score_file(preds, load_gold(str(built), "coord", "test"), "coord", "JG")
    stored = json.loads(report.to_json())
    name, text = eval_results_file(stored, source_url="https://huggingface.co/spaces/mag/webmre-leaderboard")
    assert name == "webmre_coord_JG.yaml" and eval_results_file(report, source_url="https://huggingface.co/spaces/mag/webmre-leaderboard") == (name, text)
    [entry] = parse_eval_results(text)
    assert entry.value == report.value("saa") and entry.task_id == "coord_JG"
    with pytest.raises(EvalFileError, match="only the test split is a benchmark task, not 'train'"):
        eval_results_file(stored, split="train")
    with pytest.raises(EvalFileError, match="no valid view/contract"):
        eval_results_file({"provenance": {"view": "som"}})


def test_the_gold_revision_is_read_from_cache_paths(tmp_path):
    from mag_dataset.hub_eval import cache_revision, hub_snapshot_revision

    sha = "5503434ddd753f426f4b38109466949a1217c2bb"
    # datasets' prepared cache of a repo id: <cache>/<owner>___<name>/<config>/<version>/<commit>/
    files = [{"filename": f"/root/.cache/huggingface/datasets/mag___webmre/som/0.0.0/{sha}/webmre-test.arrow"}]
    assert cache_revision(files) == sha
    assert cache_revision([{"filename": f"/data/{sha}/0.0.0/x.arrow"}]) is None  # hex not under a version folder
    assert cache_revision([]) is None
    snap = tmp_path / "datasets--mag--webmre" / "snapshots" / sha
    snap.mkdir(parents=True)
    assert hub_snapshot_revision(snap) == sha and hub_snapshot_revision(tmp_path) is None


def test_parse_eval_results_rejects_broken_files():
    with pytest.raises(EvalFileError, match="holds a YAML list"):
        parse_eval_results("dataset: {id: a/b}\n")
    with pytest.raises(EvalFileError, match="lacks a required field"):
        parse_eval_results("- dataset: {id: a/b}\n  value: 1\n")


# --------------------------------------------------------------------------- Every Eval Ever


def test_eee_export_validates_and_matches_the_report(built, tmp_path, capsys):
    preds = _predictions(built, "coord", "J", tmp_path / "preds.jsonl")
    argv = ["score", "--predictions", str(preds), "--dataset", str(built), "--view", "coord", "--contract", "J",
            "--out", str(tmp_path / "r.json"), "--eee", str(tmp_path / "eee"), "--model-id", "acme/tiny-vlm"]
    assert main(argv) == 0, capsys.readouterr().err
    folder = tmp_path / "eee" / "data" / "webmre" / "acme" / "tiny-vlm"
    files = sorted(p.name for p in folder.iterdir())
    assert len(files) == 2 and re.fullmatch(r"[0-9a-f-]{36}\.json", files[0]) and files[1] == files[0][:-5] + "_samples.jsonl"
    agg = json.loads((folder / files[0]).read_text())
    samples = [json.loads(line) for line in (folder / files[1]).read_text().splitlines()]
    # the copied schemas, checked here with jsonschema directly, and the validator's datastore rules
    jsonschema.validate(agg, schema("eval.schema.json"))
    for row in samples:
        jsonschema.validate(row, schema("instance_level_eval.schema.json"))
    assert validate_records(agg, samples, f"data/webmre/acme/tiny-vlm/{files[0]}") == []
    report = json.loads((tmp_path / "r.json").read_text())
    by_id = {r["evaluation_result_id"]: r for r in agg["evaluation_results"]}
    assert by_id["coord_J/saa"]["score_details"]["score"] == report["saa"]["micro"]
    assert by_id["coord_J/bleu1"]["score_details"]["score"] == report["bleu1"]["micro"]
    assert by_id["coord_J/saa"]["metric_config"]["additional_details"] == {"headline": "true"}
    # one sample row per (seed, step) where SAA applies; per seed their mean is the report's micro
    assert len(samples) == report["saa"]["n"] == agg["detailed_evaluation_results"]["total_rows"]
    for seed in ("0", "1"):
        rows = [r["evaluation"]["score"] for r in samples if r["sample_id"].endswith(f"@seed{seed}")]
        assert round(sum(rows) / len(rows), 6) == report["saa"]["per_seed"][seed]["micro"]
    assert {r["evaluation"]["is_correct"] for r in samples} == {True, False}
    broken = next(r for r in samples if r["output"]["raw"] == ['{"action": broken'])
    assert broken["evaluation"] == {"score": 0.0, "is_correct": False}


def test_eee_validation_names_what_is_wrong(built, tmp_path):
    preds = _predictions(built, "som", "J", tmp_path / "p.jsonl", seeds=(0,))
    steps = load_gold(str(built), "som", "test")
    report = score_file(preds, steps, "som", "J", keep_steps=True)
    from mag_dataset.eee import build_records

    uid, agg, samples = build_records(report, steps, {}, model_id="acme/m", retrieved_timestamp="1700000000")
    assert uid == build_records(report, steps, {}, model_id="acme/m", retrieved_timestamp="1")[0]  # same inputs, same id
    path = f"data/webmre/acme/m/{uid}.json"
    assert validate_records(agg, samples, path) == []
    del agg["model_info"]["additional_details"]
    samples[0]["evaluation"]["score"] = "1"
    problems = validate_records(agg, samples, "data/webmre/m/x.json")
    assert "aggregate model_info: 'additional_details' is a required property" in problems
    assert "sample 0 evaluation/score: '1' is not of type 'number'" in problems
    assert any(p.startswith("expected data/<benchmark>/<developer>/<model>/<uuid4>.json") for p in problems)
    with pytest.raises(EEEError, match="no per-step scores"):
        build_records(score_file(preds, steps, "som", "J"), steps, {}, model_id="acme/m")
