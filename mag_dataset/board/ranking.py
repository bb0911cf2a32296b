"""The board's one ranking rule (see :mod:`mag_dataset.board`): within a view and a
contract, give each submission the rank one plus the number of submissions of its table that
beat it *significantly* (a higher ranking-metric mean and a paired p < :data:`RANK_ALPHA`), and
order the table by that rank, then by the contract's ranking columns (:data:`RANK_COLUMNS`:
SAA for contracts with an action, BLEU-1 for G, then tie-breakers, then the older submission).

The leaderboard app and the API read this module; the paired test itself is
:func:`mag_dataset.compare.paired_test`, run by :class:`mag_dataset.board.Board`, which
keeps the per-step values and caches the p-values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mag_dataset.actions import Contract
from mag_dataset.board.columns import RANK_COLUMNS, ranking_metric
from mag_dataset.board.records import Submission

#: Significance level of the rank rule.
RANK_ALPHA = 0.05


def rank_key(sub: Submission) -> tuple:
    """Sort key within one (view, contract): the contract's :data:`RANK_COLUMNS` descending.

    The primary metric is SAA for contracts with an action (A, J, JG) and BLEU-1 for G;
    missing values sort last; the submission id (older first) breaks exact ties.
    """
    columns = RANK_COLUMNS[Contract(sub.contract)]
    key = tuple(-(sub.summary.get(m) if sub.summary.get(m) is not None else -1.0) for m in columns)
    return (*key, sub.id)


@dataclass(frozen=True)
class Ranked:
    """One row of a ranked table (:meth:`Board.ranking <mag_dataset.board.Board.ranking>`).

    Attributes:
        rank: one plus the number of submissions of the table that beat this one
            significantly (shared when differences are not significant).
        submission: the submission.
        metric: the ranking metric's report key.
        value: its micro mean (``None`` if the file scored none).
        ci95: the report's 95% interval of that mean, or ``None``.
        beaten_by: ids of the submissions that beat it significantly.
    """

    rank: int
    submission: Submission
    metric: str
    value: float | None
    ci95: tuple[float, float] | None
    beaten_by: tuple[int, ...] = ()


def rank_table(group: list[Submission], contract: Contract | str, has_values: Callable[[int], bool],
               p_value: Callable[[int, int], float]) -> list[Ranked]:
    """Rank one table by the significance rule.

    Args:
        group: the table's submissions, sorted by :func:`rank_key`.
        contract: the table's contract (its ranking metric).
        has_values: whether a submission's per-step values are known (a stored file that
            no longer scores has none: it is then compared by the means alone).
        p_value: ``p_value(worse_id, better_id)``, the two-sided paired p-value.

    Returns:
        One row per submission, by rank and then in ``group``'s order: a submission with a
        wider interval can be beaten significantly by fewer others than one above it by its
        mean, and a table in mean order would then show ranks going down and up again (=5
        above =4); in rank order the rank column never decreases down the table, as in
        Chatbot Arena's table of ranks by significance.
    """
    metric = ranking_metric(contract)
    beaten: dict[int, list[int]] = {s.id: [] for s in group}
    for i, better in enumerate(group):
        for worse in group[i + 1:]:
            hi, lo = better.summary.get(metric), worse.summary.get(metric)
            if hi is None or (lo is not None and hi <= lo):
                continue
            known = has_values(worse.id) and has_values(better.id)
            p = p_value(worse.id, better.id) if known else 0.0
            if p < RANK_ALPHA:
                beaten[worse.id].append(better.id)
    rows = [Ranked(rank=1 + len(beaten[s.id]), submission=s, metric=metric, value=s.summary.get(metric),
                   ci95=s.ci95, beaten_by=tuple(beaten[s.id])) for s in group]
    return sorted(rows, key=lambda r: r.rank)  # stable: the group's order within a rank


__all__ = ["RANK_ALPHA", "RANK_COLUMNS", "Ranked", "rank_key", "rank_table", "ranking_metric"]
