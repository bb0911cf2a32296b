"""The leaderboard's details panel shows the guide-action consistency extension and the top
error classes of a submission's report."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import json  # noqa: E402

from mag_dataset.dataset import bundled_dataset, load_steps  # noqa: E402
from mag_dataset.heuristic import heuristic_predictions  # noqa: E402
from mag_dataset.scoring import score_predictions  # noqa: E402


def test_report_extras_lines():
    from leaderboard.app import report_extras

    steps = load_steps(str(bundled_dataset()), "som", "test")
    rep = json.loads(score_predictions(heuristic_predictions(steps, "som", "J"), steps, "som", "J",
                                       bootstrap_resamples=0).to_json())
    text = report_extras(rep)
    cons = rep["extensions"]["guide_action_consistency"]["micro"]
    assert f"guide-action consistency {cons:.3f}" in text and "not a metric of the papers" in text
    assert "top errors: " in text and "wrong_" in text
    rep_a = json.loads(score_predictions(heuristic_predictions(steps, "som", "A"), steps, "som", "A",
                                         bootstrap_resamples=0).to_json())
    assert "consistency" not in report_extras(rep_a) and "top errors" in report_extras(rep_a)
    assert report_extras({}) == "" and report_extras({"extensions": "x", "counts": {"errors": 3}}) == ""
