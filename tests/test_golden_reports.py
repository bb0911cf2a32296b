"""Golden reports of the scorer's hard cases, checked byte for byte.

``tests/golden/reports_hard_cases.json`` holds gold built by the real builder with an
audit file (disputed, unmappable, remapped, confirmed, stale steps), predictions over two
seeds that mix right answers with real format failures and missing steps, three judges'
cached verdicts, and the report JSON (per-step scores, breakdowns, ``ci95``) and text that
``mag score`` gives for each, in both views and one coord run in ``norm1000``. Any change of
a number, a key, an order or a line of the rendering shows up here; regenerate deliberately
with ``python tests/golden/make_golden_reports.py --rescore`` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mag_dataset.dataset import step_from_record
from mag_dataset.predictions import Prediction
from mag_dataset.scoring import SCORER_VERSION, GoldSteps, format_report, score_predictions
from mag_dataset.verdicts import read_usefulness_verdicts

GOLDEN = Path(__file__).parent / "golden" / "reports_hard_cases.json"


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text("utf-8"))


@pytest.fixture(scope="module")
def verdicts(golden, tmp_path_factory):
    path = tmp_path_factory.mktemp("verdicts") / "verdicts.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in golden["verdicts"]), "utf-8")
    return read_usefulness_verdicts(path)


def test_the_file_pins_every_hard_case(golden):
    assert golden["scorer_version"] == SCORER_VERSION, "scorer version changed: regenerate the golden reports"
    conds = {(r["view"], r["contract"], r.get("coord_space")) for r in golden["runs"]}
    assert conds == {(v, c, None) for v in ("som", "coord") for c in ("A", "G", "J", "JG")} | {("coord", "J", "norm1000")}
    statuses = {r["audit_status"] for r in golden["gold"]["som"]}
    assert {"disputed", "unmappable", "remapped", "confirmed", "unaudited"} <= statuses
    assert any(r["stale"] for r in golden["gold"]["coord"])
    for run in golden["runs"]:
        rep = json.loads(run["report_json"])
        c = rep["counts"]
        assert c["seeds"] == [0, 1] and c["missing"] > 0 and c["format_failures"] > c["missing"]
        assert c["disputed"] > 0 and c["unmappable"] > 0 and c["element_level_excluded"] == c["disputed"] + c["unmappable"]
        if run["contract"] != "A":
            assert rep["usefulness"]["micro"] is not None and c["usefulness_unjudged"] > 0
        headline = "bleu1" if run["contract"] == "G" else "saa"
        lo, hi = rep[headline]["ci95"]
        assert lo < rep[headline]["micro"] < hi


@pytest.mark.parametrize("index", range(9))
def test_report_is_byte_identical(golden, verdicts, index):
    run = golden["runs"][index]
    view = run["view"]
    gold = GoldSteps.from_views(view, {v: [step_from_record(r) for r in rs] for v, rs in golden["gold"].items()})
    preds = [Prediction(p["step_id"], p["output"], p["seed"]) for p in run["predictions"]]
    report = score_predictions(
        preds, gold, view, run["contract"], verdicts=verdicts, allow_missing=True, keep_steps=True,
        coord_space=run.get("coord_space"),
    )
    assert report.to_json(include_steps=True) == run["report_json"], (view, run["contract"])
    assert format_report(report) == run["report_text"], (view, run["contract"])


def test_the_generator_rebuilds_the_same_file(golden):
    """The stored gold, outputs and verdicts are what the real builder, the heuristic
    baseline and the generator's rules give today (so the builder is pinned as well)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_golden_reports", GOLDEN.parent / "make_golden_reports.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = gen.build()
    assert fresh["gold"] == golden["gold"]
    assert fresh["verdicts"] == golden["verdicts"]
    for new, old in zip(fresh["runs"], golden["runs"], strict=True):
        assert new["predictions"] == old["predictions"], (old["view"], old["contract"])
        assert new["report_json"] == old["report_json"], (old["view"], old["contract"])
