"""What a board row shows and what ranks it: the metric columns (read from the scorer's
metric declaration, :data:`mag_dataset.scoring.BOARD_COLUMNS`), the ranking columns of
each contract, and a report's headline numbers. Pure functions over report dicts; the
significance rule that turns them into ranks is :mod:`mag_dataset.board.ranking`.
"""

from __future__ import annotations

from typing import Any

from mag_dataset.actions import Contract
from mag_dataset.scoring import BOARD_COLUMNS, HEADLINE_METRIC

#: Report metrics shown on the board, in column order: report key -> column title.
METRIC_COLUMNS: dict[str, str] = dict(BOARD_COLUMNS)

#: Tie-breakers after a headline metric, in order (the submission id breaks exact ties).
TIE_BREAKERS: dict[str, tuple[str, ...]] = {
    "saa": ("target_acc", "action_type_acc", "bleu1"),
    "bleu1": ("rouge_l", "bleu4"),
}

#: The columns that order a contract's table, most important first: the scorer's headline
#: metric (:data:`mag_dataset.scoring.HEADLINE_METRIC`: SAA for contracts with an action,
#: BLEU-1 for G), then its tie-breakers.
RANK_COLUMNS: dict[Contract, tuple[str, ...]] = {
    c: (HEADLINE_METRIC[c], *TIE_BREAKERS[HEADLINE_METRIC[c]]) for c in Contract
}


def ranking_metric(contract: Contract | str) -> str:
    """The report key that ranks a contract's table: BLEU-1 for G, SAA for the rest."""
    return RANK_COLUMNS[Contract(contract)][0]


def metric_value(v: Any) -> float | None:
    """A report entry's headline number: a bare number, a metric block's ``micro`` mean or
    a breakdown cell's ``value``; ``None`` when not applicable."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        for key in ("value", "micro"):
            if key in v:
                return metric_value(v[key])
    return None


def summary_from_report(report: dict[str, Any]) -> dict[str, float | None]:
    """The board's metric columns from a report dict (``None`` where not applicable)."""
    return {key: metric_value(report.get(key)) for key in METRIC_COLUMNS}


__all__ = ["METRIC_COLUMNS", "RANK_COLUMNS", "TIE_BREAKERS", "metric_value", "ranking_metric", "summary_from_report"]
