"""The ``evaluate`` module in loaders/webmre_metric: loads offline, runs its doc examples,
and returns exactly what the library scorer returns."""

from __future__ import annotations

import doctest
import importlib.util
import json
from pathlib import Path

import pytest

from mag_dataset.dataset import bundled_raw_dir, gold_records, load_gold, load_view, step_from_record
from mag_dataset.predictions import Prediction
from mag_dataset.prompts import render_target
from mag_dataset.scoring import score_predictions
from mag_dataset.verdicts import UsefulnessVerdict, write_verdicts

REPO = Path(__file__).resolve().parents[1]
MODULE_DIR = REPO / "loaders" / "webmre_metric"


@pytest.fixture(scope="module")
def metric():
    import evaluate

    return evaluate.load(str(MODULE_DIR))


def test_folder_has_the_evaluate_layout():
    names = sorted(p.name for p in MODULE_DIR.iterdir() if not p.name.startswith((".", "__")))
    assert names == ["README.md", "app.py", "requirements.txt", "webmre_metric.py"]
    card = (MODULE_DIR / "README.md").read_text("utf-8")
    assert "2609.27353" in card and "2607.10079" in card and "app_file: app.py" in card
    assert "mag_dataset" in (MODULE_DIR / "requirements.txt").read_text("utf-8")


@pytest.mark.slow
def test_doc_examples_run(monkeypatch, tmp_path):
    if not bundled_raw_dir().is_dir():
        pytest.fail("the bundled corpus (mag_dataset/data/raw) is required by the doc examples")
    monkeypatch.chdir(REPO)  # the examples load "loaders/webmre_metric"
    spec = importlib.util.spec_from_file_location("webmre_metric_doc", MODULE_DIR / "webmre_metric.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(module._KWARGS_DESCRIPTION, {}, "webmre_metric", str(MODULE_DIR / "webmre_metric.py"), 0)
    assert len(test.examples) >= 12  # the examples were found
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted == len(test.examples)


@pytest.mark.parametrize("view,contract", [("som", "J"), ("coord", "JG"), ("coord", "A"), ("som", "G")])
def test_compute_equals_the_library(metric, built, view, contract):
    gold = load_gold(built, view, "test")  # coord: each record carries its som menu
    refs = gold_records(gold)
    steps = [step_from_record(r) for r in refs]
    preds = [render_target(s, view, contract) for s in steps]
    preds[1] = "```json\n" + preds[1] + "\n```"
    preds[2] = "I think " + preds[2]
    got = metric.compute(predictions=preds, references=refs, view=view, contract=contract)
    want = score_predictions([Prediction(s.step_id, p) for s, p in zip(steps, preds)], gold, view, contract)
    assert json.dumps(got) == json.dumps(want.to_dict())
    if (view, contract) == ("coord", "JG"):  # the menus travelled with the records
        assert got["extensions"]["guide_action_consistency"]["n"] == len(steps)
    assert got["counts"]["format_failures"] == 1 and got["provenance"]["view"] == view


def test_add_batch_and_judges(metric, built, tmp_path):
    refs = gold_records(load_view(built, "som", "test"))
    steps = [step_from_record(r) for r in refs]
    judges = write_verdicts(tmp_path / "v.jsonl", [UsefulnessVerdict(s.step_id, s.guide, j, j != "c") for s in steps for j in "abc"])
    half = len(refs) // 2
    preds = [render_target(s, "som", "G") for s in steps]
    metric.add_batch(predictions=preds[:half], references=refs[:half])
    for p, r in zip(preds[half:], refs[half:]):
        metric.add(prediction=p, reference=r)
    got = metric.compute(view="som", contract="G", judges=str(judges))
    assert got["usefulness"]["micro"] == 1.0 and got["usefulness"]["n"] == len(steps)
    assert got["saa"]["micro"] is None and got["bleu1"]["micro"] == 1.0
