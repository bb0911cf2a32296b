"""``mag score`` end to end on a real built dataset (Parquet via ``datasets``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mag_dataset.cli import main
from mag_dataset.dataset import load_steps
from mag_dataset.heuristic import heuristic_predictions
from mag_dataset.predictions import Prediction, write_predictions
from mag_dataset.prompts import render_target
from mag_dataset.scoring import METRIC_NAMES, GoldSteps, score_predictions
from mag_dataset.verdicts import UsefulnessVerdict, write_verdicts

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def test_steps(built):
    steps = {v: load_steps(built, v, "test") for v in ("som", "coord")}
    assert len(steps["som"]) == len(steps["coord"]) >= 10
    return steps


def _heuristic_file(path: Path, steps, view: str, contract: str) -> Path:
    return write_predictions(path, heuristic_predictions(GoldSteps.from_views(view, steps), view, contract))


@pytest.mark.parametrize("view", ["som", "coord"])
def test_score_prints_a_table_and_writes_the_same_report_as_the_library(built, test_steps, tmp_path, capsys, view):
    preds = _heuristic_file(tmp_path / "p.jsonl", test_steps, view, "J")
    out = tmp_path / "reports" / "r.json"
    rc = main(["score", "--predictions", str(preds), "--dataset", str(built), "--view", view, "--contract", "J",
               "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    for name in METRIC_NAMES:
        assert name in printed
    assert "by site" in printed and f"report written to {out}" in printed
    # in the coord view mag score's gold brings the som menus for the guide-action consistency extension
    gold = GoldSteps.from_views(view, test_steps)
    expected = score_predictions(heuristic_predictions(gold, view, "J"), gold, view, "J")
    if view == "coord":
        assert expected.metrics["guide_action_consistency"]["n"] == len(gold)
    assert out.read_text("utf-8") == expected.to_json()
    report = json.loads(out.read_text("utf-8"))
    assert report["provenance"]["view"] == view and report["counts"]["steps"] == len(test_steps[view])
    assert report["ofcr"]["micro"] == 1.0
    # re-scoring gives identical bytes
    out2 = tmp_path / "r2.json"
    main(["score", "--predictions", str(preds), "--dataset", str(built), "--view", view, "--contract", "J",
          "--out", str(out2)])
    assert out2.read_bytes() == out.read_bytes()


def test_gold_predictions_score_one_through_the_cli(built, test_steps, tmp_path):
    for view in ("som", "coord"):
        for contract in ("A", "G", "J", "JG"):
            steps = test_steps[view]
            preds = write_predictions(tmp_path / f"{view}{contract}.jsonl",
                                      [Prediction(s.step_id, render_target(s, view, contract)) for s in steps])
            out = tmp_path / f"{view}{contract}.json"
            assert main(["score", "--predictions", str(preds), "--dataset", str(built), "--view", view,
                         "--contract", contract, "--out", str(out)]) == 0
            report = json.loads(out.read_text("utf-8"))
            values = [report[m]["micro"] for m in METRIC_NAMES if report[m]["micro"] is not None]
            assert values and all(v == 1.0 for v in values), (view, contract, report)


def test_bad_predictions_file_is_one_clear_line_exit_2(built, test_steps, tmp_path, capsys):
    steps = test_steps["som"]
    lines = [json.dumps({"step_id": s.step_id, "output": "{}"}) for s in steps]
    lines.insert(3, lines[1])
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    out = tmp_path / "r.json"
    rc = main(["score", "--predictions", str(path), "--dataset", str(built), "--view", "som", "--contract", "A",
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert err.count("\n") == 1 and "line 4: duplicate step_id" in err and "(first on line 2)" in err


def test_missing_ids_need_allow_missing(built, test_steps, tmp_path, capsys):
    steps = test_steps["som"]
    path = write_predictions(tmp_path / "p.jsonl", [Prediction(s.step_id, render_target(s, "som", "A")) for s in steps[1:]])
    rc = main(["score", "--predictions", str(path), "--dataset", str(built), "--view", "som", "--contract", "A"])
    assert rc == 2 and "have no prediction" in capsys.readouterr().err
    out = tmp_path / "r.json"
    rc = main(["score", "--predictions", str(path), "--dataset", str(built), "--view", "som", "--contract", "A",
               "--allow-missing", "--out", str(out), "--per-step"])
    report = json.loads(out.read_text("utf-8"))
    assert rc == 0 and report["counts"]["missing"] == 1 and report["counts"]["format_failures"] == 1
    assert len(report["steps"]) == len(steps)
    assert report["ofcr"]["micro"] == pytest.approx((len(steps) - 1) / len(steps), abs=1e-6)


def test_verdicts_file_enables_usefulness(built, test_steps, tmp_path, capsys):
    steps = test_steps["som"]
    verdicts = [UsefulnessVerdict(s.step_id, s.guide, j, useful=(i % 2 == 0) or j != "c")
                for i, s in enumerate(steps) for j in ("a", "b", "c")]
    judges = write_verdicts(tmp_path / "v.jsonl", verdicts)
    preds = write_predictions(tmp_path / "p.jsonl", [Prediction(s.step_id, render_target(s, "som", "G")) for s in steps])
    out = tmp_path / "r.json"
    base = ["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som", "--contract", "G"]
    assert main([*base, "--verdicts", str(judges), "--out", str(out)]) == 0
    report = json.loads(out.read_text("utf-8"))
    assert report["usefulness"]["n"] == len(steps) and report["usefulness"]["micro"] == 1.0
    assert report["provenance"]["verdicts"]["judges"] == ["a", "b", "c"]
    assert capsys.readouterr().err == ""
    # the spellings of earlier releases still work for one release: the same bytes, one note per old flag
    old = tmp_path / "old.json"
    assert main([*base, "--judges", str(judges), "--output", str(old)]) == 0
    assert old.read_bytes() == out.read_bytes()
    notes = capsys.readouterr().err.splitlines()
    assert notes == ["mag score: note: --judges is deprecated and will be removed; use --verdicts",
                     "mag score: note: --output is deprecated and will be removed; use --out"]


def test_user_errors(built, tmp_path, capsys):
    assert main(["score", "--predictions", str(tmp_path / "none.jsonl"), "--dataset", str(built), "--view", "som",
                 "--contract", "A"]) == 2
    assert "predictions file not found" in capsys.readouterr().err
    p = tmp_path / "p.jsonl"
    p.write_text("", "utf-8")
    assert main(["score", "--predictions", str(p), "--dataset", str(tmp_path / "nodata"), "--view", "som",
                 "--contract", "A"]) == 2
    assert "cannot load som/test" in capsys.readouterr().err
    bad = tmp_path / "v.jsonl"
    bad.write_text('{"key": "x"}\n', "utf-8")
    assert main(["score", "--predictions", str(p), "--dataset", str(built), "--view", "som", "--contract", "G",
                 "--verdicts", str(bad), "--allow-missing"]) == 2
    assert "line 1" in capsys.readouterr().err


def test_unreachable_hub_repo_and_bad_output_path_are_user_errors(built, test_steps, tmp_path, capsys):
    steps = test_steps["som"]
    preds = write_predictions(tmp_path / "p.jsonl", [Prediction(s.step_id, render_target(s, "som", "A")) for s in steps])
    # offline (conftest sets HF_HUB_OFFLINE): a Hub repo id cannot be reached -> one line, exit 2
    assert main(["score", "--predictions", str(preds), "--dataset", "nobody/no-such-dataset", "--view", "som",
                 "--contract", "A"]) == 2
    err = capsys.readouterr().err
    assert "cannot load som/test of dataset 'nobody/no-such-dataset'" in err and "Traceback" not in err
    folder = tmp_path / "reports"
    folder.mkdir()
    assert main(["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som", "--contract", "A",
                 "--out", str(folder)]) == 2
    assert "is a folder" in capsys.readouterr().err and list(folder.iterdir()) == []
    blocker = tmp_path / "file"
    blocker.write_text("x", "utf-8")
    assert main(["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som", "--contract", "A",
                 "--out", str(blocker / "r.json")]) == 2
    assert "cannot write the report" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "p.jsonl", "reports"]


def test_entry_point_and_baseline_script_in_a_subprocess(built, tmp_path):
    preds = tmp_path / "h.jsonl"
    r = subprocess.run([sys.executable, "-m", "baselines.heuristic", "--dataset", str(built), "--view", "coord",
                        "--contract", "JG", "--output", str(preds)], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and preds.is_file()
    r = subprocess.run([sys.executable, "-m", "mag_dataset.cli", "score", "--predictions", str(preds), "--dataset",
                        str(built), "--view", "coord", "--contract", "JG"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "rouge_l" in r.stdout and "Traceback" not in r.stderr


def test_report_bytes_do_not_depend_on_the_process(built, test_steps, tmp_path):
    import os

    preds = _heuristic_file(tmp_path / "p.jsonl", test_steps, "som", "JG")
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"r{hash_seed}.json"
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        r = subprocess.run([sys.executable, "-m", "mag_dataset.cli", "score", "--predictions", str(preds), "--dataset",
                            str(built), "--view", "som", "--contract", "JG", "--out", str(out)],
                           cwd=REPO, capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and len(outs[0]) > 1000


def test_subset_scores_only_the_steps_a_smoke_run_covers(built, test_steps, tmp_path, capsys):
    """A 3-step smoke file: refused as it is, scored with --subset, the report saying 3 of how many."""
    chosen = test_steps["som"][:3]
    assert len(chosen) == 3 < len(test_steps["som"])
    preds = write_predictions(tmp_path / "smoke.jsonl", heuristic_predictions(chosen, "som", "J"))
    base = ["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som", "--contract", "J"]
    assert main(base) == 2  # a file that covers part of the split is refused without --subset
    capsys.readouterr()
    out = tmp_path / "subset.json"
    assert main([*base, "--subset", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    total = len(test_steps["som"])
    assert f"only 3 of the split's {total} steps were scored (--subset)" in captured.err
    report = json.loads(out.read_text("utf-8"))
    assert report["provenance"]["subset"] == {"steps": 3, "of": total}
    assert report["counts"]["steps"] == 3 and report["counts"]["format_failures"] == 0 and report["counts"]["missing"] == 0
    assert report["ofcr"]["micro"] == 1.0  # the heuristic's outputs all parse: nothing scored as a missing step
    assert any("--subset" in w for w in report["warnings"])
    expected = score_predictions(heuristic_predictions(chosen, "som", "J"), chosen, "som", "J")
    assert {m: report[m] for m in METRIC_NAMES} == {m: json.loads(expected.to_json())[m] for m in METRIC_NAMES}
    # a subset is no benchmark result: it cannot be published, nor mixed with --allow-missing
    assert main([*base, "--subset", "--eval-results", str(tmp_path / "hub")]) == 2
    assert "cannot be published" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--subset", "--allow-missing"])
    capsys.readouterr()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["score", "--predictions", str(empty), "--dataset", str(built), "--view", "som", "--contract", "J",
                 "--subset"]) == 2
    assert "no step to score" in capsys.readouterr().err
