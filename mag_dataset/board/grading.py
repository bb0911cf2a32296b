"""The board's one scoring path: uploaded bytes -> predictions -> report -> the columns a
report determines. :meth:`Board.submit <mag_dataset.board.Board.submit>` runs it in an
isolated child (:func:`isolated_score`); re-scoring a stored file (rescore, ranks,
comparisons, content backfill) runs the same functions in the server.

Every figure comes from :func:`mag_dataset.scoring.score_predictions`, the call ``mag
score`` makes; nothing here re-implements a scoring rule, and nothing here touches the
database.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from mag_dataset.actions import Contract, View
from mag_dataset.board.columns import ranking_metric, summary_from_report
from mag_dataset.board.errors import SubmissionRejected
from mag_dataset.board.integrity import check_integrity, content_sha256, validation_summary
from mag_dataset.board.upload import decode_upload
from mag_dataset.scoring import SCORER_VERSION, GoldSteps, score_predictions


def read_upload(data: bytes, filename: str, step_ids: Sequence[str], *, max_bytes: int, max_lines: int,
                max_seeds: int | None = None, allow_missing: bool = False) -> list[Any]:
    """Decode an upload (:func:`mag_dataset.board.upload.decode_upload`) and read its
    predictions against ``step_ids``.

    Raises:
        SubmissionRejected: the file cannot be decoded, or a line is not a valid prediction.
    """
    from mag_dataset.predictions import PredictionsError, read_predictions

    jsonl = decode_upload(data, filename, max_bytes=max_bytes, max_lines=max_lines)
    del data  # the caller passes its only reference: the raw bytes go before the predictions come
    try:
        return read_predictions(jsonl, step_ids, max_lines=max_lines, max_seeds=max_seeds, allow_missing=allow_missing)
    except PredictionsError as e:
        raise SubmissionRejected(str(e)) from None


def score_report(predictions: Any, gold: GoldSteps, view: View, contract: Contract, *, verdicts: Any,
                 keep_steps: bool = False, bootstrap: bool = True) -> Any:
    """The library report of ``predictions`` against ``gold`` (a :class:`mag_dataset.scoring.Report`).

    Args:
        predictions: parsed predictions (:func:`read_upload`).
        gold: the gold of ``view`` with its som menus (:meth:`Gold.for_view <mag_dataset.board.gold.Gold.for_view>`).
        view, contract: the declared condition.
        verdicts: cached judge verdicts for usefulness, or ``None``.
        keep_steps: keep the per-step scores (for per-step values and comparisons).
        bootstrap: compute the task-level bootstrap interval.
    """
    kwargs: dict[str, Any] = {} if bootstrap else {"bootstrap_resamples": 0}
    return score_predictions(predictions, gold, view, contract, verdicts=verdicts, keep_steps=keep_steps, **kwargs)


def report_fingerprint(report: dict[str, Any]) -> str:
    """The gold fingerprint recorded in a report's provenance block."""
    fingerprint = (report.get("provenance") or {}).get("dataset_fingerprint")
    if not fingerprint:
        raise ValueError("the report's provenance carries no dataset fingerprint")
    return str(fingerprint)


def report_columns(report_json: str) -> dict[str, str]:
    """The stored columns a report's JSON determines: itself, its summary (the board's
    metric columns), its scorer version and its gold fingerprint."""
    report = json.loads(report_json)
    version = (report.get("provenance") or {}).get("scorer_version")
    if not version:
        raise ValueError("the report's provenance carries no scorer version")
    return {
        "scorer_version": str(version),
        "gold_fingerprint": report_fingerprint(report),
        "summary_json": json.dumps(summary_from_report(report), sort_keys=True),
        "report_json": report_json,
    }


def step_values(report: Any, step_ids: list[str], metric: str) -> list[float | None]:
    """Per-step mean over seeds of ``metric`` from a report kept with its steps, in
    ``step_ids`` order (``None`` where the metric does not apply)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for sc in report.steps or ():
        v = getattr(sc, metric)
        if v is not None:
            sums[sc.step_id] = sums.get(sc.step_id, 0.0) + float(v)
            counts[sc.step_id] = counts.get(sc.step_id, 0) + 1
    return [round(sums[i] / counts[i], 10) if counts.get(i) else None for i in step_ids]


def scorer_version() -> str:
    """The library scorer's version (what a report made now records)."""
    return str(SCORER_VERSION)


def isolated_score(request: dict[str, Any]) -> dict[str, Any]:
    """Child side of :meth:`Board._score_isolated <mag_dataset.board.Board>`: decode,
    validate and score one upload (or, with ``mode="validate"``, only check it: nothing is
    scored).

    Runs in :mod:`mag_dataset.isolation`'s limited child; returns plain data only.
    """
    gold = request["gold"]
    validate = request.get("mode") == "validate"
    ids = gold.step_ids
    predictions = read_upload(request.pop("data"), request["filename"], ids, max_bytes=request["max_bytes"],
                              max_lines=request["max_lines"], max_seeds=request["max_seeds"], allow_missing=validate)
    view, contract = View(request["view"]), Contract(request["contract"])
    if validate:
        return validation_summary(predictions, ids, view, contract, request["max_format_failure_rate"])
    check_integrity(predictions, view, contract, request["max_format_failure_rate"])
    report = score_report(predictions, gold, view, contract, verdicts=request["verdicts"], keep_steps=True)
    return {
        "report_json": report.to_json(),
        "seeds": len({p.seed for p in predictions}) or 1,
        "content_sha256": content_sha256(predictions),
        "step_values": step_values(report, ids, ranking_metric(contract)),
    }


def warm_up() -> None:
    """What the first :func:`isolated_score` of a process would import and build on its own
    (numpy, sacrebleu and its BLEU objects: about 1.3 s), done by an isolated child before it
    waits for an upload (:mod:`mag_dataset.isolation`). pyarrow, which only
    a ``.parquet`` upload needs, is left to those: each child would pay for it, and 40
    concurrent uploads took 29.8 s with it against 27.3 s for children started on demand."""
    import numpy  # noqa: F401 - imported for its side effect: loaded once, before any upload

    from mag_dataset.scoring.text import bleu_1_4, rouge_l

    bleu_1_4("click the submit button", "click submit")
    rouge_l("click the submit button", "click submit")


__all__ = [
    "isolated_score", "read_upload", "report_columns", "report_fingerprint", "score_report", "scorer_version",
    "step_values", "warm_up",
]
