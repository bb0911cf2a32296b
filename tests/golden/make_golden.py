"""Regenerate the golden file of real heuristic-baseline predictions (deliberately!).

    python tests/golden/make_golden.py              # from the bundled corpus as it is now
    python tests/golden/make_golden.py --rescore    # keep the stored gold and outputs
    python tests/golden/make_golden.py --rerun      # keep the stored gold, run the baseline again

Writes ``tests/golden/heuristic_bundled_test.json``: the gold records of the bundled
corpus' test split (both views, so the file is self-contained), the heuristic baseline's
raw outputs in every contract and view, and the expected per-step scores and micro means.
``tests/test_golden.py`` re-scores the stored outputs against the stored gold and checks
every number exactly. Run this only when a scorer change is intended, and review the diff.
``--rescore`` re-scores the stored outputs against the stored gold (for a scorer change
that must not move the gold or the outputs in the same diff). ``--rerun`` keeps the stored
gold and runs the heuristic baseline on it again (for an intended change of the baseline's
outputs, such as its guide templates, that must not move the gold in the same diff).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "heuristic_bundled_test.json"


def build() -> dict:
    from mag_dataset.actions import Contract, View
    from mag_dataset.dataset import bundled_dataset, gold_records, load_view, step_from_record
    from mag_dataset.heuristic import heuristic_predictions
    from mag_dataset.scoring import SCORER_VERSION, GoldSteps, dataset_fingerprint

    folder = bundled_dataset()
    gold = {v.value: gold_records(load_view(folder, v, "test")) for v in View}
    steps = {v: [step_from_record(r) for r in recs] for v, recs in gold.items()}
    runs = []
    for view in View:
        for contract in Contract:
            preds = heuristic_predictions(GoldSteps.from_views(view, steps), view, contract)
            runs.append({
                "view": view.value,
                "contract": contract.value,
                "predictions": [{"step_id": p.step_id, "output": p.output} for p in preds],
                **_expected(GoldSteps.from_views(view, steps), preds, view.value, contract.value),
            })
    return {
        "about": "real heuristic-baseline predictions on the bundled test split; regenerate with "
                 "python tests/golden/make_golden.py (only for an intended scorer change)",
        "scorer_version": SCORER_VERSION,
        "dataset_fingerprint": {v: dataset_fingerprint(s) for v, s in steps.items()},
        "gold": gold,
        "runs": runs,
    }


def _expected(gold, preds: list, view: str, contract: str) -> dict:
    from mag_dataset.scoring import ALL_METRICS, score_predictions

    # coord: the gold's som menus feed the guide-action consistency extension
    report = score_predictions(preds, gold, view, contract, keep_steps=True)
    by_id = {s.step_id: s for s in report.steps}
    return {
        "expected_steps": [by_id[p.step_id].to_dict() for p in preds],
        "expected_micro": {m: report.value(m) for m in ALL_METRICS},
        "expected_macro": {m: report.metrics[m]["macro"] for m in ALL_METRICS},
    }


def rescore() -> dict:
    """The stored golden file with its expected scores recomputed (gold and outputs kept)."""
    from mag_dataset.dataset import step_from_record
    from mag_dataset.predictions import Prediction
    from mag_dataset.scoring import SCORER_VERSION, GoldSteps

    data = json.loads(GOLDEN.read_text("utf-8"))
    steps = {v: [step_from_record(r) for r in recs] for v, recs in data["gold"].items()}
    for run in data["runs"]:
        preds = [Prediction(p["step_id"], p["output"]) for p in run["predictions"]]
        view = run["view"]
        run.update(_expected(GoldSteps.from_views(view, steps), preds, view, run["contract"]))
    data["scorer_version"] = SCORER_VERSION
    return data


def rerun() -> dict:
    """The stored golden file with the baseline run again on its stored gold, and rescored."""
    from mag_dataset.dataset import step_from_record
    from mag_dataset.heuristic import heuristic_predictions
    from mag_dataset.scoring import SCORER_VERSION, GoldSteps

    data = json.loads(GOLDEN.read_text("utf-8"))
    steps = {v: [step_from_record(r) for r in recs] for v, recs in data["gold"].items()}
    for run in data["runs"]:
        view = run["view"]
        gold = GoldSteps.from_views(view, steps)
        preds = heuristic_predictions(gold, view, run["contract"])
        run["predictions"] = [{"step_id": p.step_id, "output": p.output} for p in preds]
        run.update(_expected(gold, preds, view, run["contract"]))
    data["scorer_version"] = SCORER_VERSION
    return data


def main() -> int:
    from mag_dataset.fileio import atomic_write

    args = sys.argv[1:]
    data = rescore() if "--rescore" in args else rerun() if "--rerun" in args else build()
    atomic_write(GOLDEN, json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False) + "\n")
    n = sum(len(r["predictions"]) for r in data["runs"])
    print(f"wrote {GOLDEN} ({n} scored predictions, {len(data['runs'])} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
