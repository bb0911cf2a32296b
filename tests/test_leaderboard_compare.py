"""Board.compare: two stored submissions compared with the library call behind mag compare."""

from __future__ import annotations

from pathlib import Path

import pytest

from mag_dataset.actions import View
from mag_dataset.board import Board, BoardConfig, Gold, SubmissionRejected
from mag_dataset.compare import compare_reports
from mag_dataset.dataset import bundled_dataset, load_steps
from mag_dataset.heuristic import heuristic_predictions
from mag_dataset.predictions import Prediction
from mag_dataset.prompts import render_target
from mag_dataset.scoring import score_predictions


def _bytes(preds) -> bytes:
    return "".join(p.to_json() + "\n" for p in preds).encode()


def test_board_compare_matches_the_library(tmp_path: Path):
    folder = str(bundled_dataset())
    steps = {v: load_steps(folder, v, "test") for v in View}
    board = Board(BoardConfig(data_dir=tmp_path / "b", daily_cap=100), gold=Gold("bundled", "test", steps))
    heur = heuristic_predictions(steps[View.SOM], "som", "A")
    gold_j = [Prediction(s.step_id, render_target(s, "som", "J")) for s in steps[View.SOM]]
    a = board.submit(data=_bytes(heur), filename="a.jsonl", model_name="heur", view="som", contract="A")
    b = board.submit(data=_bytes(gold_j), filename="b.jsonl", model_name="gold", view="som", contract="J")
    comp = board.compare(a.id, b.id, resamples=200)
    ra = score_predictions(heur, steps[View.SOM], "som", "A", keep_steps=True, bootstrap_resamples=0)
    rb = score_predictions(gold_j, steps[View.SOM], "som", "J", keep_steps=True, bootstrap_resamples=0)
    full = compare_reports(ra, rb, steps[View.SOM], resamples=200)
    # the library's comparison, with breakdowns that hold a group under the granularity rule withheld
    from mag_dataset.board import MIN_GROUP_STEPS

    assert comp.metrics == full.metrics and comp.counts == full.counts
    small = [dim for dim, groups in full.breakdowns.items()
             if any(c["n_steps"] < MIN_GROUP_STEPS for ms in groups.values() for c in ms.values())]
    assert small, "no breakdown with a small group: this check would prove nothing"
    for dim, groups in comp.breakdowns.items():
        assert groups == ({} if dim in small else full.breakdowns[dim]), dim
    assert all(d in comp.provenance["breakdowns_withheld"] for d in small)
    assert comp.metrics["saa"]["diff"] > 0.4 and comp.metrics["saa"]["p_holm"] < 0.05
    c = board.submit(data=_bytes([Prediction(s.step_id, render_target(s, "coord", "A")) for s in steps[View.COORD]]),
                     filename="c.jsonl", model_name="c", view="coord", contract="A")
    with pytest.raises(SubmissionRejected, match="different views"):
        board.compare(a.id, c.id)
    with pytest.raises(SubmissionRejected, match="two stored submissions"):
        board.compare(a.id, 999)


def test_compare_tab_endpoint(tmp_path: Path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from leaderboard import app

    folder = str(bundled_dataset())
    steps = {v: load_steps(folder, v, "test") for v in View}
    board = Board(BoardConfig(data_dir=tmp_path / "b", daily_cap=100), gold=Gold("bundled", "test", steps))
    heur = heuristic_predictions(steps[View.SOM], "som", "J")
    a = board.submit(data=_bytes(heur), filename="a.jsonl", model_name="heur", view="som", contract="J")
    b = board.submit(data=_bytes(heuristic_predictions(steps[View.SOM], "som", "JG")), filename="b.jsonl",
                     model_name="heur-jg", view="som", contract="JG")
    demo = app.build_app(board)
    fn = next(f.fn for f in demo.fns.values() if f.api_name == "compare")
    text = fn(str(a.id), f"#{b.id}")
    assert "saa" in text and "task sign-flip" in text and "+0.000" in text
    assert "McNemar p 1.000 (A-only 0, B-only 0)" in text  # one seed a side: McNemar beside it
    assert fn("x", "1").startswith("Give the ids")
    assert fn(str(a.id), "999") == "choose two stored submissions"
