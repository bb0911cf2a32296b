"""The integrity rules a predictions file must pass before it is scored (see
:mod:`mag_dataset.board`): its normalised-content hash (duplicates), the format gate of the
declared view and contract against every other one, and the "validate only" summary.
Pure functions over parsed predictions; nothing is scored or stored here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mag_dataset.actions import Contract, View
from mag_dataset.board.errors import SubmissionRejected


def content_sha256(predictions: Any) -> str:
    """SHA-256 of a predictions file's normalised content: its ``(seed, step_id, output,
    coord_space)`` records sorted, each output stripped of surrounding whitespace (which
    the format gate ignores). The same predictions in another line order, with blank
    lines, or as ``.jsonl.gz`` or ``.parquet`` hash the same."""
    records = sorted((p.seed, p.step_id, p.output.strip(), p.coord_space or "") for p in predictions)
    return hashlib.sha256(json.dumps(records, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


def format_gate_counts(predictions: Any) -> dict[tuple[str, str], int]:
    """How many outputs pass the format gate of each (view, contract)."""
    from mag_dataset.parsing import parse_output

    counts = {}
    outputs = [p.output for p in predictions]
    for v in View:
        for c in Contract:
            counts[(v.value, c.value)] = sum(1 for o in outputs if parse_output(o, v, c).ok)
    return counts


def check_integrity(predictions: Any, view: View, contract: Contract, max_failure_rate: float) -> dict[str, Any]:
    """Refuse a file that parses better under another view or contract, or whose format
    failures exceed ``max_failure_rate`` (see the module docstring).

    Returns:
        ``{"passed": n, "total": n, "best": (view, contract), "best_passed": n}``.

    Raises:
        SubmissionRejected: with the reason.
    """
    preds = list(predictions)
    total = len(preds)
    counts = format_gate_counts(preds)
    declared = counts[(view.value, contract.value)]
    best = max(counts, key=lambda k: (counts[k], k == (view.value, contract.value)))
    info = {"passed": declared, "total": total, "best": best, "best_passed": counts[best]}
    if counts[best] > declared:
        bv, bc = best
        raise SubmissionRejected(
            f"the outputs parse better under view {bv}, contract {bc} ({counts[best]:,} of {total:,} pass its "
            f"format gate) than under the declared view {view.value}, contract {contract.value} "
            f"({declared:,} of {total:,}): submit it as view {bv}, contract {bc}, or fix the outputs"
        )
    failures = total - declared
    if total and failures / total > max_failure_rate:
        raise SubmissionRejected(
            f"{failures:,} of {total:,} outputs ({failures / total:.1%}) fail the format gate of view {view.value}, "
            f"contract {contract.value}: the board accepts at most {max_failure_rate:.0%} format failures"
        )
    return info


def validation_summary(predictions: Any, step_ids: list[str], view: View, contract: Contract,
                       max_failure_rate: float) -> dict[str, Any]:
    """What "validate only" reports: step counts, missing ids per seed, the format gate, and
    whether the integrity rules would accept the file. No score, nothing stored."""
    preds = list(predictions)
    seeds = sorted({p.seed for p in preds}) or [0]
    have: dict[int, set[str]] = {sd: set() for sd in seeds}
    for p in preds:
        have[p.seed].add(p.step_id)
    missing = {sd: [i for i in step_ids if i not in have[sd]] for sd in seeds}
    problems = []
    for sd in seeds:
        if missing[sd]:
            problems.append(f"{len(missing[sd]):,} step id(s) have no prediction for seed {sd}")
    try:
        gate = check_integrity(preds, view, contract, max_failure_rate)
    except SubmissionRejected as e:
        problems.append(str(e))
        counts = format_gate_counts(preds)
        gate = {"passed": counts[(view.value, contract.value)], "total": len(preds)}
    return {
        "steps_expected": len(step_ids),
        "predictions": len(preds),
        "seeds": seeds,
        "missing": {str(sd): {"count": len(m), "first": m[:10]} for sd, m in missing.items()},
        "format_passed": gate["passed"],
        "content_sha256": content_sha256(preds),
        "problems": problems,
    }


__all__ = ["check_integrity", "content_sha256", "format_gate_counts", "validation_summary"]
