"""mag compare: paired task-bootstrap differences, exact McNemar, Holm (mag_dataset.compare)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import binomtest

from mag_dataset.compare import (
    BINARY_METRICS,
    CompareError,
    compare_reports,
    format_comparison,
    holm,
    mcnemar_exact,
)
from mag_dataset.dataset import bundled_dataset, load_steps
from mag_dataset.heuristic import heuristic_predictions
from mag_dataset.predictions import Prediction, write_predictions
from mag_dataset.prompts import render_target
from mag_dataset.scoring import aggregate, score_predictions, score_step


@pytest.fixture(scope="module")
def steps():
    s = load_steps(str(bundled_dataset()), "som", "test")
    assert len(s) >= 100
    return s


def _seeds(preds, seeds):
    return [Prediction(p.step_id, p.output, seed) for seed in seeds for p in preds]


def _report(preds, steps, contract):
    return score_predictions(preds, steps, "som", contract, keep_steps=True, bootstrap_resamples=0)


def _all_cells(comp):
    cells = list(comp.metrics.values())
    for groups in comp.breakdowns.values():
        for ms in groups.values():
            cells += list(ms.values())
    return cells


def test_identical_files_give_zero_differences_and_p_one(steps):
    preds = _seeds(heuristic_predictions(steps, "som", "J"), (0, 1, 2))
    rep = _report(preds, steps, "J")
    comp = compare_reports(rep, _report(preds, steps, "J"), steps, resamples=500)
    cells = _all_cells(comp)
    # every metric that applies (no usefulness without verdicts), and breakdown groups
    assert set(comp.metrics) == {"ofcr", "action_type_acc", "target_acc", "text_f1", "saa", "bleu1", "bleu4",
                                 "rouge_l", "guide_action_consistency", "joint_step_acc"}
    assert len(cells) > 20
    for m in cells:
        assert m["diff"] == 0.0 and m["ci95"] == [0.0, 0.0]
        assert m["p_value"] == 1.0 and m["p_holm"] == 1.0 and m["p_sign_flip"] == 1.0
        assert m["a"] == m["b"]
    assert comp.counts["seeds_a"] == comp.counts["seeds_b"] == [0, 1, 2]
    assert comp.metrics["saa"]["mcnemar"] == {"a_only": 0, "b_only": 0, "ties_dropped": 0}


@pytest.mark.parametrize("k", [1, 4, 9])
def test_hand_countable_mcnemar(steps, k):
    base = heuristic_predictions(steps, "som", "A")
    wrong = [p for p, s in zip(base, steps) if score_step(p.output, s, "som", "A").saa == 0.0]
    assert len(wrong) >= 9
    fixed = {p.step_id for p in wrong[:k]}
    by_id = {s.step_id: s for s in steps}
    cand = [Prediction(p.step_id, render_target(by_id[p.step_id], "som", "A")) if p.step_id in fixed else p
            for p in base]
    comp = compare_reports(_report(base, steps, "A"), _report(cand, steps, "A"), steps, resamples=200)
    saa = comp.metrics["saa"]
    assert saa["mcnemar"] == {"a_only": 0, "b_only": k, "ties_dropped": 0}
    assert saa["test"] == "mcnemar_exact"
    assert saa["p_value"] == pytest.approx(binomtest(0, k, 0.5).pvalue, abs=1e-6)
    assert saa["p_value"] == pytest.approx(min(1.0, 2 * 0.5**k), abs=1e-6)
    assert saa["diff"] == pytest.approx(k / saa["n_steps"], abs=1e-6)
    assert saa["ci95"][0] >= 0.0 and saa["ci95"][1] > 0.0


def test_mcnemar_matches_the_binomial_test():
    for a, b in [(0, 5), (3, 10), (7, 7), (40, 60), (900, 1100), (1, 0)]:
        assert mcnemar_exact(a, b) == pytest.approx(binomtest(min(a, b), a + b, 0.5).pvalue, rel=1e-9)
    assert mcnemar_exact(0, 0) == 1.0


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([]) == []
    assert holm([0.2, 0.9]) == pytest.approx([0.4, 0.9])


def test_holm_is_applied_to_the_metrics_and_to_the_breakdowns(steps):
    base = heuristic_predictions(steps, "som", "A")
    cand = [Prediction(s.step_id, render_target(s, "som", "A")) for s in steps]
    comp = compare_reports(_report(base, steps, "A"), _report(cand, steps, "A"), steps, resamples=300)
    head = list(comp.metrics.values())
    assert [m["p_holm"] for m in head] == pytest.approx(holm([m["p_value"] for m in head]), abs=1e-6)
    rest = [m for groups in comp.breakdowns.values() for ms in groups.values() for m in ms.values()]
    assert len(rest) == comp.counts["breakdown_tests"] > 10
    assert [m["p_holm"] for m in rest] == pytest.approx(holm([m["p_value"] for m in rest]), abs=1e-6)
    assert comp.metrics["saa"]["p_holm"] < 0.05 and comp.metrics["saa"]["diff"] > 0.4


def test_deterministic_and_seeded(steps):
    base = _seeds(heuristic_predictions(steps, "som", "A"), (0, 1))
    cand = _seeds([Prediction(s.step_id, render_target(s, "som", "A")) for s in steps], (0, 1))
    ra, rb = _report(base, steps, "A"), _report(cand, steps, "A")
    one = compare_reports(ra, rb, steps, resamples=400, seed=3).to_json()
    assert compare_reports(ra, rb, steps, resamples=400, seed=3).to_json() == one
    assert compare_reports(ra, rb, steps, resamples=400, seed=4).to_json() != one


def test_step_excluded_on_one_side_is_excluded_for_both(steps):
    preds = heuristic_predictions(steps, "som", "A")
    scores = [score_step(p.output, s, "som", "A") for p, s in zip(preds, steps)]
    n_saa = sum(1 for sc in scores if sc.saa is not None)
    # B's first 10 scored steps are treated as disputed (saa None) on B's side only
    drop = {sc.step_id for sc in scores if sc.saa is not None}
    drop = set(sorted(drop)[:10])
    scores_b = [dataclasses.replace(sc, saa=None) if sc.step_id in drop else sc for sc in scores]
    ra = aggregate(scores, steps, "som", "A", keep_steps=True, bootstrap_resamples=0)
    rb = aggregate(scores_b, steps, "som", "A", keep_steps=True, bootstrap_resamples=0)
    comp = compare_reports(ra, rb, steps, resamples=100)
    assert comp.metrics["saa"]["n_steps"] == n_saa - 10
    assert comp.metrics["saa"]["diff"] == 0.0 and comp.metrics["saa"]["p_value"] == 1.0
    kept = [sc.saa for sc in scores if sc.saa is not None and sc.step_id not in drop]
    assert comp.metrics["saa"]["a"] == pytest.approx(sum(kept) / len(kept), abs=1e-6)


def test_seeds_majority_and_even_split_dropped(steps):
    base = heuristic_predictions(steps, "som", "A")
    gold = [Prediction(s.step_id, render_target(s, "som", "A")) for s in steps]
    wrong = {p.step_id for p, s in zip(base, steps) if score_step(p.output, s, "som", "A").saa == 0.0}
    # A: seed 0 heuristic, seed 1 gold -> every wrong step is an even split on A's side
    a = _seeds(base, (0,)) + _seeds(gold, (1,))
    b = _seeds(gold, (0, 1))
    comp = compare_reports(_report(a, steps, "A"), _report(b, steps, "A"), steps, resamples=100)
    mc = comp.metrics["saa"]["mcnemar"]
    assert mc == {"a_only": 0, "b_only": 0, "ties_dropped": len(wrong)}
    # the difference uses the seed means: half of each wrong step
    assert comp.metrics["saa"]["diff"] == pytest.approx(0.5 * len(wrong) / comp.metrics["saa"]["n_steps"], abs=1e-6)


def test_contract_a_vs_j_compares_only_shared_metrics(steps):
    ra = _report(heuristic_predictions(steps, "som", "A"), steps, "A")
    rb = _report(heuristic_predictions(steps, "som", "J"), steps, "J")
    comp = compare_reports(ra, rb, steps, resamples=100)
    assert set(comp.metrics) == {"ofcr", "action_type_acc", "target_acc", "text_f1", "saa"}
    assert comp.not_compared["bleu1"] == "scored for B only"
    assert comp.not_compared["guide_action_consistency"] == "scored for B only"
    assert comp.metrics["text_f1"]["test"] == "task_sign_flip" and "mcnemar" not in comp.metrics["text_f1"]
    assert all(comp.metrics[m]["test"] == "mcnemar_exact" for m in comp.metrics if m in BINARY_METRICS)
    text = format_comparison(comp)
    assert "saa" in text and "not compared" in text and "by site" in text


def test_reports_need_steps_and_the_same_gold(steps):
    preds = heuristic_predictions(steps, "som", "A")
    full = _report(preds, steps, "A")
    with pytest.raises(CompareError, match="keep_steps"):
        compare_reports(score_predictions(preds, steps, "som", "A", bootstrap_resamples=0), full, steps)
    with pytest.raises(CompareError, match="fingerprint"):
        compare_reports(full, full, steps[:-1])


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mag_dataset.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_mag_compare_cli(tmp_path: Path, steps):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_predictions(a, heuristic_predictions(steps, "som", "A"))
    write_predictions(b, [Prediction(s.step_id, render_target(s, "som", "J")) for s in steps])
    out = tmp_path / "cmp.json"
    r = _cli("compare", "--dataset", "bundled", "--view", "som", "--baseline", str(a), "--contract-a", "A",
             "--candidate", str(b), "--contract-b", "J", "--resamples", "200", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "saa" in r.stdout and "McNemar" in r.stdout
    d = json.loads(out.read_text())
    assert d["provenance"]["contract_a"] == "A" and d["provenance"]["contract_b"] == "J"
    assert d["metrics"]["saa"]["diff"] > 0 and d["metrics"]["saa"]["p_holm"] < 0.05
    # same command again: byte-identical JSON
    out2 = tmp_path / "cmp2.json"
    r = _cli("compare", "--dataset", "bundled", "--view", "som", "--baseline", str(a), "--contract-a", "A",
             "--candidate", str(b), "--contract-b", "J", "--resamples", "200", "--out", str(out2))
    assert r.returncode == 0 and out2.read_bytes() == out.read_bytes()


def test_mag_compare_user_errors(tmp_path: Path, steps):
    a = tmp_path / "a.jsonl"
    write_predictions(a, heuristic_predictions(steps, "som", "A"))
    r = _cli("compare", "--dataset", "bundled", "--view", "som", "--baseline", str(a), "--contract-a", "A",
             "--candidate", str(tmp_path / "nope.jsonl"), "--contract-b", "J")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "nope.jsonl" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step_id": "x", "output": "y"}\n')
    out = tmp_path / "o.json"
    r = _cli("compare", "--dataset", "bundled", "--view", "som", "--baseline", str(a), "--contract-a", "A",
             "--candidate", str(bad), "--contract-b", "J", "--out", str(out))
    assert r.returncode == 2 and "unknown step_id" in r.stderr and not out.exists()
    r = _cli("compare", "--dataset", "bundled", "--view", "som", "--baseline", str(a), "--contract-a", "A",
             "--candidate", str(a), "--contract-b", "A", "--coord-space-a", "norm1")
    assert r.returncode == 2 and "coord view only" in r.stderr
