"""``mag_dataset.board`` as a package: its public names, module sizes, the one ranking
rule, the metric columns read from the scorer's declaration, and the one scoring path
(the isolated child's task and a rescore of the stored file give the same bytes)."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

import mag_dataset.board as board
from mag_dataset.actions import Contract, View
from mag_dataset.board.columns import RANK_COLUMNS, metric_value, ranking_metric
from mag_dataset.board.grading import isolated_score, report_columns, report_fingerprint
from mag_dataset.board.ranking import rank_key, rank_table
from mag_dataset.board.records import Submission
from test_leaderboard_board import gold, jsonl

PACKAGE = Path(board.__file__).parent

#: What ``mag_dataset.board`` exports: the names the leaderboard Space, the benchmarks and
#: ``mag leaderboard`` import from it (every other name is imported from its defining module).
PUBLIC_NAMES = (
    "Board", "BoardConfig", "EXTENSIONS", "Gold", "METRIC_COLUMNS", "MIN_GROUP_STEPS", "PROVENANCE_TAGS", "Ranked",
    "SubmissionRejected", "metric_value",
)


def test_the_package_exports_its_public_names_from_their_modules() -> None:
    assert sorted(board.__all__) == sorted(PUBLIC_NAMES)
    for name in PUBLIC_NAMES:
        obj = getattr(board, name)
        module = getattr(obj, "__module__", None)
        if module is not None and module.startswith("mag_dataset.board."):
            assert getattr(importlib.import_module(module), name) is obj, name
    # what the package's users import from it is in the list (a name they need cannot go unnoticed)
    users = [p for top in ("leaderboard", "benchmarks") for p in (PACKAGE.parents[1] / top).rglob("*.py")]
    users.append(PACKAGE.parent / "commands" / "leaderboard.py")
    used = set()
    for path in users:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "mag_dataset.board":
                used |= {a.name for a in node.names}
    assert used and used <= set(PUBLIC_NAMES), used - set(PUBLIC_NAMES)


def test_the_isolated_task_resolves_to_the_grading_module() -> None:
    from mag_dataset.isolation import TASKS

    module, _, name = TASKS["board.score"].partition(":")
    assert getattr(importlib.import_module(module), name) is isolated_score


def test_modules_are_small_and_documented() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 14, [p.name for p in modules]
    for path in modules:
        tree = ast.parse(path.read_text("utf-8"))
        assert ast.get_docstring(tree), f"{path.name} has no module docstring"
        assert len(path.read_text("utf-8").splitlines()) <= 600, path.name
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno + 1 <= 80, f"{path.name}:{node.name}"


def test_metric_columns_come_from_the_scorer_declaration() -> None:
    from mag_dataset.scoring import BOARD_COLUMNS

    assert board.METRIC_COLUMNS == BOARD_COLUMNS and list(board.METRIC_COLUMNS)[0] == "saa"


def test_one_ranking_rule_orders_by_the_contract_columns() -> None:
    assert {c: ranking_metric(c) for c in Contract} == {Contract.A: "saa", Contract.G: "bleu1", Contract.J: "saa",
                                                          Contract.JG: "saa"}
    assert all(ranking_metric(c) == RANK_COLUMNS[c][0] for c in Contract)
    assert set(RANK_COLUMNS[Contract.G]) <= set(board.METRIC_COLUMNS)

    def sub(i: int, contract: str, **summary: float | None) -> Submission:
        return Submission(i, "2026-12-01T00:00:00Z", "s", f"m{i}", "", "", "self-reported", "som", contract,
                                "test", "0" * 64, ".jsonl", 1, 1, "x", "f", dict(summary), "{}")

    subs = [sub(1, "J", saa=0.5, target_acc=0.6), sub(2, "J", saa=0.5, target_acc=0.7), sub(3, "J", saa=None),
            sub(4, "J", saa=0.9), sub(5, "J", saa=0.5, target_acc=0.7)]
    assert [s.id for s in sorted(subs, key=rank_key)] == [4, 2, 5, 1, 3]
    g = [sub(6, "G", bleu1=0.2, saa=0.9), sub(7, "G", bleu1=0.3)]
    assert [s.id for s in sorted(g, key=rank_key)] == [7, 6]


def test_a_table_is_listed_by_rank_so_the_rank_column_never_decreases() -> None:
    """By mean: 0.93, 0.92, 0.90 (wide interval), 0.89. The 0.90 is beaten significantly by no
    one; the 0.89 by the two first. In mean order the ranks would read 1, 1, 1, 3 only by luck:
    here the 0.92 is beaten by the 0.93 (rank 2) while the 0.90 is not (rank 1), so it is listed
    before the 0.92 instead of after it (ranks 1, 1, 2, 3, never 1, 2, 1, 3)."""
    def sub(i: int, saa: float) -> Submission:
        return Submission(i, "2026-12-01T00:00:00Z", "s", f"m{i}", "", "", "self-reported", "som", "J",
                                "test", "0" * 64, ".jsonl", 1, 1, "x", "f", {"saa": saa}, "{}")

    group = sorted([sub(1, 0.93), sub(2, 0.92), sub(3, 0.90), sub(4, 0.89)], key=rank_key)
    significant = {(2, 1), (4, 1), (4, 2)}  # (worse, better) pairs with p < 0.05
    rows = rank_table(group, "J", lambda sid: True, lambda w, b: 0.01 if (w, b) in significant else 0.5)
    assert [(r.rank, r.submission.id) for r in rows] == [(1, 1), (1, 3), (2, 2), (3, 4)]
    assert [r.beaten_by for r in rows] == [(), (), (1,), (1, 2)]


def test_headline_numbers_are_read_from_the_keys_the_scorer_writes() -> None:
    assert metric_value({"micro": 0.25, "macro": 0.5}) == 0.25  # a report's metric block
    assert metric_value({"value": 0.75, "n": 12}) == 0.75  # a breakdown cell
    assert metric_value(0.5) == 0.5 and metric_value(None) is None and metric_value(True) is None
    # keys the scorer never wrote are not read
    assert metric_value({"mean": 0.5}) is None and metric_value({"score": 0.5}) is None
    with pytest.raises(ValueError, match="no dataset fingerprint"):
        report_fingerprint({"provenance": {"gold_fingerprint": "abc"}})


def test_the_child_task_and_a_rescore_are_one_scoring_path(tmp_path: Path) -> None:
    g = gold()
    steps = g.steps[View.SOM]
    data = jsonl(contract=Contract.J)
    request = {"data": data, "filename": "p.jsonl", "view": "som", "contract": "J", "gold": g.for_view(View.SOM),
               "verdicts": None, "max_bytes": 16384, "max_lines": 50, "max_seeds": 10, "mode": "score",
               "max_format_failure_rate": 0.5}
    child = isolated_score(dict(request))
    b = board.Board(board.BoardConfig(data_dir=tmp_path / "b"), gold=g)
    sub = b.submit(data=data, filename="p.jsonl", model_name="m", view="som", contract="J")
    assert sub.report_json == child["report_json"] == b._rescore(sub).to_json()
    stored = {"scorer_version": sub.scorer_version, "gold_fingerprint": sub.gold_fingerprint,
              "summary_json": json.dumps(sub.summary, sort_keys=True), "report_json": sub.report_json}
    assert report_columns(child["report_json"]) == stored
    assert b.step_values(sub) == child["step_values"] and len(child["step_values"]) == len(steps)
