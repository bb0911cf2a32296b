"""Regenerate the golden file of real heuristic-baseline predictions (deliberately!).

    python tests/golden/make_golden.py

Writes ``tests/golden/heuristic_bundled_test.json``: the gold records of the bundled
corpus' test split (both views, so the file is self-contained), the heuristic baseline's
raw outputs in every contract and view, and the expected per-step scores and micro means.
``tests/test_golden.py`` re-scores the stored outputs against the stored gold and checks
every number exactly. Run this only when a scorer change is intended, and review the diff.
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
    from mag_dataset.scoring import METRIC_NAMES, SCORER_VERSION, dataset_fingerprint, score_predictions

    folder = bundled_dataset()
    gold = {v.value: gold_records(load_view(folder, v, "test")) for v in View}
    steps = {v: [step_from_record(r) for r in recs] for v, recs in gold.items()}
    menus = {s.step_id: s.candidates for s in steps["som"]}
    runs = []
    for view in View:
        for contract in Contract:
            preds = heuristic_predictions(steps[view.value], view, contract, menus=menus)
            report = score_predictions(preds, steps[view.value], view, contract, keep_steps=True)
            by_id = {s.step_id: s for s in report.steps}
            runs.append({
                "view": view.value,
                "contract": contract.value,
                "predictions": [{"step_id": p.step_id, "output": p.output} for p in preds],
                "expected_steps": [by_id[p.step_id].to_dict() for p in preds],
                "expected_micro": {m: report.value(m) for m in METRIC_NAMES},
                "expected_macro": {m: report.metrics[m]["macro"] for m in METRIC_NAMES},
            })
    return {
        "about": "real heuristic-baseline predictions on the bundled test split; regenerate with "
                 "python tests/golden/make_golden.py (only for an intended scorer change)",
        "scorer_version": SCORER_VERSION,
        "dataset_fingerprint": {v: dataset_fingerprint(s) for v, s in steps.items()},
        "gold": gold,
        "runs": runs,
    }


def main() -> int:
    from mag_dataset.fileio import atomic_write

    data = build()
    atomic_write(GOLDEN, json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False) + "\n")
    n = sum(len(r["predictions"]) for r in data["runs"])
    print(f"wrote {GOLDEN} ({n} scored predictions, {len(data['runs'])} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
