"""The board's records: :class:`Submission` (one stored row, as the board and its API show
it) and :class:`RescoreResult` (one re-scored row). Plain frozen data; reading and writing
rows is :mod:`mag_dataset.board.storage`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mag_dataset.board.columns import ranking_metric


@dataclass(frozen=True)
class Submission:
    """One stored submission (a row of the board)."""

    id: int
    created_at: str
    submitter: str
    model_name: str
    organisation: str
    link: str
    provenance_tag: str
    view: str
    contract: str
    split: str
    file_sha256: str
    file_ext: str
    file_size: int
    seeds: int
    scorer_version: str
    gold_fingerprint: str
    summary: dict[str, float | None]
    report_json: str
    content_sha256: str | None = None

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(self.report_json)

    @property
    def metric(self) -> str:
        """The report key that ranks this submission (:func:`ranking_metric`)."""
        return ranking_metric(self.contract)

    @property
    def ci95(self) -> tuple[float, float] | None:
        """The report's task-level bootstrap 95% interval of the ranking metric's micro mean."""
        block = self.report.get(self.metric)
        ci = block.get("ci95") if isinstance(block, dict) else None
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci):
            return float(ci[0]), float(ci[1])
        return None

    @property
    def date(self) -> str:
        return self.created_at[:10]

    def public_dict(self) -> dict[str, Any]:
        """What the board shows: everything but the submitter's name and the report body."""
        return {
            "id": self.id,
            "date": self.date,
            "model_name": self.model_name,
            "organisation": self.organisation,
            "link": self.link,
            "provenance_tag": self.provenance_tag,
            "view": self.view,
            "contract": self.contract,
            "split": self.split,
            "seeds": self.seeds,
            "file_sha256": self.file_sha256,
            "scorer_version": self.scorer_version,
            "gold_fingerprint": self.gold_fingerprint,
            **self.summary,
            "ranking_metric": self.metric,
            "ci95_low": None if self.ci95 is None else self.ci95[0],
            "ci95_high": None if self.ci95 is None else self.ci95[1],
        }


@dataclass(frozen=True)
class RescoreResult:
    """Outcome of re-scoring one stored submission."""

    id: int
    identical: bool
    stored_version: str
    current_version: str
    detail: str = ""
    failed: bool = False  # the stored file could not be re-scored (missing, altered, gold without its ids)


__all__ = ["RescoreResult", "Submission"]
