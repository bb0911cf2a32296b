"""Scoring a predictions file: the provenance sidecar, the declared coordinate space, the
streamed scoring call. What ``mag score``, ``mag compare``, the scripts and the benchmarks
share; the commands only turn flags into these calls and errors into one line.

The gold comes whole from :func:`mag_dataset.dataset.load_gold` (a
:class:`~mag_dataset.scoring.gold.GoldSteps`: the steps and, in the coord view, the som
menus), so no caller re-joins the menus by hand.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Sequence

from mag_dataset.actions import Contract, View
from mag_dataset.schema import Step
from mag_dataset.scoring.gold import GoldSteps


class CoordSpaceError(ValueError):
    """A predictions file whose coordinate space cannot be told: an unreadable sidecar, a
    bad space, or a flag that contradicts the sidecar (the message is one line for the user)."""


def sidecar_path(predictions: Path) -> Path:
    """The provenance sidecar of a predictions file: ``preds.jsonl`` -> ``preds.provenance.json``."""
    p = Path(predictions)
    return p.with_name(p.name[: -len(p.suffix)] + ".provenance.json" if p.suffix else p.name + ".provenance.json")


def declared_coord_space(predictions: Path, flag: str | None) -> tuple[str | None, str]:
    """The coordinate space of a predictions file and where it was declared.

    Args:
        predictions: the predictions file (its sidecar sits beside it).
        flag: the space given on the command line (``--coord-space``), or None.

    Returns:
        ``(space, source)``: the flag (``flag``), else the sidecar's ``coord_space``
        (``sidecar``), else ``(None, "default")`` (screenshot pixels).

    Raises:
        CoordSpaceError: an unreadable sidecar, a bad space, or a flag that contradicts the sidecar.
    """
    from mag_dataset.coords import parse_coord_space

    side = None
    path = sidecar_path(predictions)
    if path.is_file():
        try:
            meta = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as e:
            raise CoordSpaceError(f"cannot read the provenance sidecar {path}: {e}") from None
        side = meta.get("coord_space") if isinstance(meta, dict) else None
        if side is not None:
            try:
                side = parse_coord_space(side).name
            except ValueError as e:
                raise CoordSpaceError(f"{path}: {e}") from None
    if flag is not None:
        try:
            flag = parse_coord_space(flag).name
        except ValueError as e:
            raise CoordSpaceError(f"--coord-space: {e}") from None
        if side is not None and side != flag:
            raise CoordSpaceError(f"--coord-space {flag} contradicts coord_space {side!r} in {path}; drop one of them")
        return flag, "flag"
    if side is not None:
        return side, "sidecar"
    return None, "default"


def score_file(
    predictions: Path | str | bytes,
    gold: GoldSteps | Sequence[Step],
    view: View | str,
    contract: Contract | str,
    *,
    verdicts: Path | None = None,
    allow_missing: bool = False,
    max_lines: int | None = None,
    keep_steps: bool = False,
    coord_space: str | None = None,
    coord_space_source: str | None = None,
    subset: bool = False,
) -> Any:
    """Validate and score a predictions file (streamed) against the gold; returns a Report.

    Args:
        predictions: the predictions JSONL (a path, or its text or bytes).
        gold: the gold of ``view`` (:func:`mag_dataset.dataset.load_gold`); bare steps only
            where no som menu is read apart from them (not the coord view under J or JG).
        view, contract: the condition scored.
        verdicts: a cached judge verdicts file for usefulness, or None.
        allow_missing: score steps without a prediction as format failures.
        max_lines: reject files with more lines than this.
        keep_steps: keep the per-step scores in the report.
        coord_space, coord_space_source: the points' declared space and where it was declared
            (:func:`declared_coord_space`).
        subset: score only the steps the file has predictions for (the file is read twice);
            the report's provenance holds ``subset: {"steps": n, "of": m}`` and a warning says
            so. Without it, a step without a prediction fails (or, with ``allow_missing``, is
            a format failure).

    Raises:
        PredictionsError: a bad predictions file.
        VerdictsError: a bad verdicts file.
        ValueError: ``subset`` with ``allow_missing``; bare steps where the menus are needed.
    """
    from mag_dataset.predictions import PredictionsError, iter_predictions
    from mag_dataset.scoring import score_predictions
    from mag_dataset.verdicts import read_usefulness_verdicts

    ids = gold.step_ids if isinstance(gold, GoldSteps) else [s.step_id for s in gold]
    cached = read_usefulness_verdicts(verdicts) if verdicts is not None else None  # a bad verdicts file fails first
    if subset:
        if allow_missing:
            raise ValueError("subset and allow_missing exclude each other")
        covered = {p.step_id for p in iter_predictions(predictions, ids, allow_missing=True, max_lines=max_lines)}
        chosen = gold.subset(covered) if isinstance(gold, GoldSteps) else [s for s in gold if s.step_id in covered]
        if not len(chosen):
            raise PredictionsError("no predictions: --subset has no step to score")
        report = score_file(predictions, chosen, view, contract, verdicts=verdicts, max_lines=max_lines,
                            keep_steps=keep_steps, coord_space=coord_space, coord_space_source=coord_space_source)
        note = (f"subset: only {len(chosen)} of the split's {len(ids)} steps were scored (--subset); "
                "not a benchmark result")
        return dataclasses.replace(report, provenance={**report.provenance, "subset": {"steps": len(chosen),
                                                                                         "of": len(ids)}},
                                   warnings=tuple(sorted((*report.warnings, note))))
    stream = iter_predictions(predictions, ids, allow_missing=allow_missing, max_lines=max_lines)
    return score_predictions(
        stream, gold, view, contract, verdicts=cached, allow_missing=allow_missing, keep_steps=keep_steps,
        coord_space=coord_space, coord_space_source=coord_space_source,
    )


__all__ = ["CoordSpaceError", "declared_coord_space", "score_file", "sidecar_path"]
