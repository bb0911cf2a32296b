"""Leaderboard v2's library rules on the default gold (the bundled corpus; sizes are derived
from it, never typed): integrity checks, the breakdown granularity rule, significance-shared
ranks (the same paired test as ``mag compare``), validate-only, coord consistency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mag_dataset.actions import Contract, View
from mag_dataset.board import MIN_GROUP_STEPS, Board, BoardConfig, Gold, SubmissionRejected
from mag_dataset.board.grading import step_values
from mag_dataset.board.granularity import coarsen_breakdown, public_report
from mag_dataset.compare import compare_reports, paired_test
from mag_dataset.heuristic import heuristic_predictions
from mag_dataset.prompts import render_target
from mag_dataset.scoring import score_predictions


@pytest.fixture(scope="module")
def gold() -> Gold:
    return Gold.load(None, "test")


@pytest.fixture()
def board(tmp_path: Path, gold: Gold) -> Board:
    return Board(BoardConfig(data_dir=tmp_path / "board", daily_cap=100), gold=gold)


def lines(records) -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


def heuristic_file(gold: Gold, view: str, contract: str) -> bytes:
    steps = gold.steps[View(view)]
    return lines({"step_id": p.step_id, "output": p.output} for p in heuristic_predictions(steps, view, contract))


def gold_file(gold: Gold, contract: str, right_every: int) -> bytes:
    """Gold answers on the steps whose index is not a multiple of ``right_every``, a wrong
    (but well-formed) finish elsewhere."""
    steps = gold.steps[View.SOM]
    wrong = '{"action": {"type": "finish"}, "guide": "Done."}' if contract != "A" else '{"action": {"type": "finish"}}'
    return lines({"step_id": s.step_id, "output": render_target(s, View.SOM, Contract(contract)) if i % right_every else wrong}
                 for i, s in enumerate(steps))


def submit(b: Board, data: bytes, **kw):
    args = {"model_name": "m", "view": "som", "contract": "J", "filename": "p.jsonl"}
    args.update(kw)
    return b.submit(data=data, **args)


# ----------------------------------------------------------------------------- integrity


def test_near_empty_file_is_rejected_with_its_format_failure_rate(board: Board, gold: Gold) -> None:
    steps = gold.steps[View.SOM]
    n = len(steps)
    data = lines([{"step_id": steps[0].step_id, "output": render_target(steps[0], View.SOM, Contract.J)}]
                 + [{"step_id": s.step_id, "output": ""} for s in steps[1:]])
    with pytest.raises(SubmissionRejected) as e:
        submit(board, data)
    assert str(e.value) == (f"{n - 1:,} of {n:,} outputs ({(n - 1) / n:.1%}) fail the format gate of view som, contract J: "
                            "the board accepts at most 50% format failures")
    assert board.count() == 0


def test_wrong_contract_file_is_rejected_naming_the_better_contract(board: Board, gold: Gold) -> None:
    n = len(gold.steps[View.SOM])
    with pytest.raises(SubmissionRejected) as e:
        submit(board, heuristic_file(gold, "som", "J"), contract="A")
    assert str(e.value).startswith(f"the outputs parse better under view som, contract J ({n:,} of {n:,} pass its format "
                                   f"gate) than under the declared view som, contract A (0 of {n:,})")
    with pytest.raises(SubmissionRejected, match="parse better under view som, contract J"):
        submit(board, heuristic_file(gold, "som", "J"), view="coord")  # element ids, declared as coord
    assert board.count() == 0


def test_trailing_blank_line_does_not_defeat_the_duplicate_check(board: Board, gold: Gold) -> None:
    data = heuristic_file(gold, "som", "J")
    first = submit(board, data)
    with pytest.raises(SubmissionRejected, match=rf"the same predictions .*\(submission #{first.id}\)"):
        submit(board, data + b"\n", model_name="again")
    assert board.count() == 1


def test_validate_only_reports_counts_and_missing_ids_and_stores_nothing(board: Board, gold: Gold) -> None:
    steps = gold.steps[View.SOM]
    data = heuristic_file(gold, "som", "J").splitlines(keepends=True)
    out = board.validate(data=b"".join(data[:-3]), filename="p.jsonl", view="som", contract="J")
    assert out["steps_expected"] == len(steps) and out["predictions"] == len(steps) - 3
    assert out["missing"] == {"0": {"count": 3, "first": [s.step_id for s in steps[-3:]]}}
    assert out["problems"] == ["3 step id(s) have no prediction for seed 0"] and out["duplicate_of"] is None
    assert "saa" not in json.dumps(out)  # no score: validating is not a free probe of the gold
    wrong = board.validate(data=b"".join(data), filename="p.jsonl", view="som", contract="JG")
    assert wrong["problems"] and "parse better under view som, contract J" in wrong["problems"][0]
    assert board.count() == 0 and not board.config.files_dir.exists()


# ----------------------------------------------------------------------------- granularity


def test_coarsen_pools_small_groups_and_withholds_what_cannot_be_shown() -> None:
    def g(steps, saa_n=None):
        return {"steps": steps, "saa": {"value": 0.5, "n": steps if saa_n is None else saa_n}}

    out = coarsen_breakdown({"a": g(30), "b": g(12, saa_n=4), "c": g(3), "d": g(2)})
    # c + d = 5 < 10: the next smallest kept group (b) joins them
    assert sorted(out) == ["a", "other"] and out["other"]["pooled"] == ["b", "c", "d"] and out["other"]["steps"] == 17
    assert "saa" not in out["other"]  # scored on 4 + 3 + 2 = 9 steps only
    assert out["a"]["saa"] == {"value": 0.5, "n": 30}
    assert coarsen_breakdown({"true": g(4), "false": g(100)}) == {}  # would equal the total
    kept = coarsen_breakdown({"x": g(10), "y": g(11, saa_n=9)})
    assert sorted(kept) == ["x", "y"] and "saa" in kept["x"] and "saa" not in kept["y"]


def test_public_report_shows_no_figure_on_fewer_than_the_minimum_steps(gold: Gold) -> None:
    steps = gold.steps[View.SOM]
    report = json.loads(score_predictions(heuristic_predictions(steps, "som", "J"), steps, "som", "J",
                                          bootstrap_resamples=0).to_json())
    small = [(k, g) for k, groups in report["breakdowns"].items() for g, v in groups.items() if v["steps"] < MIN_GROUP_STEPS]
    assert small, "the gold has no small group: this test would prove nothing"
    pub = public_report(report)
    shown = 0
    for key, groups in pub["breakdowns"].items():
        for name, block in groups.items():
            assert block["gold_steps"] >= MIN_GROUP_STEPS, (key, name)
            for m, v in block.items():
                if isinstance(v, dict):
                    assert v["gold_n"] >= MIN_GROUP_STEPS, (key, name, m)
                    shown += 1
        if groups:  # pooled groups add up to the whole split (one seed: scores = gold steps)
            assert sum(b["gold_steps"] for b in groups.values()) == sum(b["steps"] for b in groups.values()) == len(steps)
    assert shown > 0 and pub["saa"] == report["saa"] and "breakdown_rule" in pub["provenance"]


def _shown(pub: dict) -> dict[str, set[str]]:
    """The groups a public report shows, by dimension ("other" holds its pooled names)."""
    return {dim: {name if "pooled" not in block else f"{name}={'+'.join(block['pooled'])}" for name, block in groups.items()}
            for dim, groups in pub["breakdowns"].items()}


def test_seeds_add_no_granularity_and_the_seed_probe_learns_nothing(board: Board, gold: Gold) -> None:
    """Counted as scores, ten identical seeds made a site of 2 gold steps a shown group of
    "20 steps"; one file that varied a step's guess per site across its seeds then read each
    probed element off the per-site accuracy. Counted as gold steps, a 10-seed gold echo
    shows exactly the groups a 1-seed one does, none under the minimum, and a probe file
    (per small site one step, right on one seed of ten) shows no probed site on its own."""
    steps = gold.steps[View.SOM]

    def echo(seeds: int, probe_right: dict[str, int] | None = None) -> bytes:
        rows = []
        for k in range(seeds):
            for s in steps:
                out = render_target(s, View.SOM, Contract.J)
                if probe_right is not None and s.step_id in probe_right and probe_right[s.step_id] != k:
                    out = '{"action": {"type": "finish"}, "guide": "Done."}'
                rows.append({"step_id": s.step_id, "output": out, "seed": k})
        return lines(rows)

    one = board.public_report(submit(board, echo(1), model_name="one seed"))
    ten = board.public_report(submit(board, echo(10), model_name="ten seeds"))
    raw = board.get(board.count()).report["breakdowns"]
    assert any(v["gold_steps"] < MIN_GROUP_STEPS <= v["steps"] for groups in raw.values() for v in groups.values()), \
        "no group is small in gold steps yet large in scores: this test would prove nothing"
    assert _shown(ten) == _shown(one)
    for dim, groups in ten["breakdowns"].items():
        for name, block in groups.items():
            assert block["gold_steps"] >= MIN_GROUP_STEPS and block["steps"] == 10 * block["gold_steps"], (dim, name)
    # the probe: per site with fewer gold steps than the minimum, one step right on one seed only
    small_sites = {name for name, v in raw["site"].items() if v["gold_steps"] < MIN_GROUP_STEPS}
    probed = {site: next(s.step_id for s in steps if s.site == site) for site in sorted(small_sites)}
    probe = board.public_report(submit(board, echo(10, {sid: 0 for sid in probed.values()}), model_name="probe"))
    assert _shown(probe) == _shown(one)
    assert small_sites and not (set(probe["breakdowns"]["site"]) & small_sites)  # no probed site on its own


# ----------------------------------------------------------------------------- ranking


def test_paired_test_matches_mag_compare_on_the_ranking_metric(gold: Gold) -> None:
    from mag_dataset.predictions import read_predictions

    steps = gold.steps[View.SOM]
    ids = [s.step_id for s in steps]
    reports = [score_predictions(read_predictions(gold_file(gold, "J", k), ids), steps, "som", "J", keep_steps=True,
                                 bootstrap_resamples=0) for k in (2, 3)]
    comp = compare_reports(reports[0], reports[1], steps).metrics
    tasks = [s.task_id for s in steps]
    for metric in ("saa", "bleu1"):
        a, b = (step_values(r, ids, metric) for r in reports)
        got = paired_test(a, b, tasks)
        assert got["diff"] == comp[metric]["diff"] and got["ci95"] == comp[metric]["ci95"], metric
        assert got["p_value"] == comp[metric]["p_value"], metric


def test_ranks_are_shared_when_the_paired_difference_is_not_significant(board: Board, gold: Gold) -> None:
    steps = gold.steps[View.SOM]
    assert len(steps) >= 40, "too few steps for a significant difference: this test would prove nothing"
    wrong = '{"action": {"type": "finish"}, "guide": "Done."}'

    def file(missed) -> bytes:
        return lines({"step_id": s.step_id, "output": wrong if missed(i) else render_target(s, View.SOM, Contract.J)}
                     for i, s in enumerate(steps))

    extra = {1, 3, 5}  # three more misses, in at most three tasks: the task sign-flip p is >= 1/8
    best = submit(board, file(lambda i: i % 4 == 0), model_name="one miss in four")
    near = submit(board, file(lambda i: i % 2 == 0), model_name="one miss in two")
    close = submit(board, file(lambda i: i % 2 == 0 or i in extra), model_name="three more misses")
    rows = {r.submission.id: r for r in board.ranking("som", "J")}
    tasks = [s.task_id for s in steps]
    p = lambda a, b: paired_test(board.step_values(a), board.step_values(b), tasks)["p_value"]  # noqa: E731
    assert best.summary["saa"] > near.summary["saa"] > close.summary["saa"]
    assert p(near, best) < 0.05 and p(close, best) < 0.05 and p(close, near) >= 0.05  # the premise
    assert rows[best.id].rank == 1 and rows[best.id].beaten_by == ()
    assert rows[near.id].rank == rows[close.id].rank == 2  # not significantly apart: shared
    assert rows[close.id].beaten_by == (best.id,)
    for r in rows.values():  # every ranked row carries its interval
        assert r.ci95 is not None and r.ci95[0] <= r.value <= r.ci95[1]
    # a restart: the ranks come back from the stored per-step values
    again = Board(board.config, gold=gold)
    assert [(r.rank, r.submission.id) for r in again.ranking("som", "J")] == \
        [(r.rank, r.submission.id) for r in board.ranking("som", "J")]


def test_coord_consistency_uses_the_som_menus_as_mag_score_does(board: Board, gold: Gold, tmp_path: Path) -> None:
    from mag_dataset.score_file import score_file

    steps = gold.steps[View.COORD]
    data = lines({"step_id": s.step_id, "output": render_target(s, View.COORD, Contract.J)} for s in steps)
    sub = submit(board, data, view="coord", contract="J")
    cons = sub.report["extensions"]["guide_action_consistency"]
    assert cons["micro"] is not None and cons["micro"] >= 0.9  # gold guides describe gold actions
    assert cons["n"] == len(steps)
    coord = gold.for_view("coord")
    assert coord.menus is not None and len(coord.menus) == len(steps) and gold.for_view("som").menus is None
    expected = score_file(data, coord, "coord", "J")
    assert sub.report_json == expected.to_json()


def test_a_database_from_before_v2_gains_the_columns_and_its_rows_are_filled_lazily(tmp_path: Path) -> None:
    import sqlite3

    from test_leaderboard_board import gold as hand_gold
    from test_leaderboard_board import jsonl

    cfg = BoardConfig(data_dir=tmp_path / "old", daily_cap=100)
    first = submit(Board(cfg, gold=hand_gold(30)), jsonl(tag="a", n=30), model_name="a")
    second = submit(Board(cfg, gold=hand_gold(30)), jsonl(tag="b", perfect_every=1, n=30), model_name="b")
    with sqlite3.connect(cfg.db_path) as con:  # what a schema-1 database looks like (written before migrations)
        con.execute("ALTER TABLE submissions DROP COLUMN content_sha256")
        con.execute("ALTER TABLE submissions DROP COLUMN step_values_json")
        con.execute("PRAGMA user_version=0")
    board = Board(cfg, gold=hand_gold(30))  # a restart with the new code
    # 30 of 30 vs 15 of 30 right, every one of the 10 tasks favouring b: task sign-flip p ~ 2 / 2**10 < 0.05
    assert [(r.rank, r.submission.id) for r in board.ranking("som", "J")] == [(1, second.id), (2, first.id)]
    assert board.step_values(board.get(first.id)) is not None  # re-scored once from the stored file, then kept
    with pytest.raises(SubmissionRejected, match=rf"the same predictions .*\(submission #{first.id}\)"):
        submit(board, jsonl(tag="a", n=30) + b"\n\n", model_name="again")
    with sqlite3.connect(cfg.db_path) as con:
        assert con.execute("SELECT COUNT(*) FROM submissions WHERE content_sha256 IS NULL OR step_values_json IS NULL"
                           ).fetchone()[0] == 0
