"""The deterministic scorer: per-step metrics, then aggregates. Pure: no I/O, no clock.

Implements the offline protocol of WebMRE (arXiv 2609.27353, "Protocol"): a format gate
(OFCR), action-type and target matching, typed-text token F1, step action accuracy, guide
BLEU and ROUGE, and judge-rated usefulness from cached verdicts. The same inputs always
give byte-identical report JSON; the only randomness is the task-level bootstrap, drawn
from an explicit ``random.Random(BOOTSTRAP_SEED)`` (:mod:`.aggregate`).

Per step (``None`` = not applicable, ``0.0`` = wrong; a failed output scores 0 on every
applicable metric and stays in every denominator):

{metric_table}

The table is :data:`METRIC_TABLE` (:mod:`mag_dataset.scoring.metrics`), where each metric is
declared once; the extensions (``guide_action_consistency``, ``joint_step_acc``) are
reported apart from the papers' metrics, under ``extensions`` in the JSON.

Coordinate spaces: in the coord view a predicted point is converted from its declared
space (:mod:`mag_dataset.coords`; default screenshot pixels) to screenshot pixels before
the point-in-box test. The space is recorded in the provenance; points that look like
another space give a warning in the report.

Error taxonomy (``error`` per step; counts in ``counts["errors"]``): ``format:<class>``
(:data:`mag_dataset.parsing.FORMAT_CLASSES`) for an output failing the gate; else, where
``saa`` applies, the first check that fails in ``saa``'s order: ``wrong_action_type``,
``wrong_element`` (som), ``point_outside_image`` / ``point_outside_box`` (coord; with the
distance to the gold box in px), ``wrong_text``, ``wrong_value`` (select / tab), ``wrong_direction``,
``wrong_key``, ``wrong_url``; ``correct`` when ``saa`` = 1. ``None`` where ``saa`` does
not apply and the output passed the gate. ``counts["type_confusion"]`` is the gold x
predicted action-type matrix of outputs that passed the gate, ``counts["near_miss"]``
the share of coord misses within :data:`~.aggregate.NEAR_MISS_PX` of the gold box.

Aggregates: micro mean over steps, macro mean over tasks (mean of per-task means), each
with its denominator; several seeds give the mean over seeds and the sample std; ``ci95``
is a task-level bootstrap of the micro mean (tasks resampled with replacement, seeds
pooled). Breakdowns by site, gold action type, stale and unseen_template.

The package is the scorer: its public names are importable from ``mag_dataset.scoring``
(the names of :data:`__all__`), and the code of the package imports each from the module
that defines it:

- :mod:`.metrics`: every metric declared once (name, titles, where it applies, its per-step
  rule, a one-line description), and the names derived from that table.
- :mod:`.gold`: :class:`~.gold.GoldSteps`, the one scoring input (one view's steps and, in the
  coord view, the som menus).
- :mod:`.text`: the text metrics (argument normalisation, token F1, BLEU, ROUGE-L).
- :mod:`.step`: one output on one step -> :class:`~.step.StepScore` (format gate, coordinate
  conversion, every metric, the error taxonomy).
- :mod:`.fingerprint`: the dataset fingerprint of the gold steps.
- :mod:`.aggregate`: per-step scores -> :class:`~.aggregate.Report` (means, denominators,
  breakdowns, seeds, the task-level bootstrap, counts, provenance).
- :mod:`.render`: the plain-text table ``mag score`` prints.
- here: :func:`score_predictions`, which streams a predictions file through them against a
  :class:`~.gold.GoldSteps` (the steps and, in the coord view, the som menus: the one scoring
  input the dataset loader builds).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mag_dataset.actions import Contract, View
from mag_dataset.coords import CoordSpace, SpaceCheck, parse_coord_space
from mag_dataset.parsing import Parsed, parse_output
from mag_dataset.predictions import Prediction, PredictionsError, SeenSteps
from mag_dataset.schema import Candidate, Step
from mag_dataset.scoring.aggregate import (
    BOOTSTRAP_RESAMPLES,
    BREAKDOWNS,
    Aggregator,
    Report,
    aggregate,
    round_value,
)
from mag_dataset.scoring.fingerprint import dataset_fingerprint
from mag_dataset.scoring.gold import GoldSteps, menus_needed
from mag_dataset.scoring.metrics import (
    ALL_METRICS,
    BOARD_COLUMNS,
    EXTENSION_METRICS,
    HEADLINE_METRIC,
    MCNEMAR_METRICS,
    METRIC_BY_NAME,
    METRIC_NAMES,
    METRIC_TABLE,
    METRICS,
    SCORER_VERSION,
    metric_table_markdown,
    metric_table_rst,
)
from mag_dataset.scoring.render import format_report
from mag_dataset.scoring.step import MISSING, StepScore, box_distance, convert_coordinate, score_parsed, score_step
from mag_dataset.scoring.text import bleu, bleu_1_4, normalize_arg, rouge_l, token_f1

__doc__ = (__doc__ or "").replace("{metric_table}", metric_table_rst())


class _Points:
    """Coord view: each prediction's point converted from its declared space, and the look-alike check."""

    def __init__(self, space: CoordSpace, gold: GoldSteps | None) -> None:
        self.space, self.gold = space, gold
        self.spaces: dict[str, CoordSpace] = {}  # a line's own declared space, parsed once
        self.check = SpaceCheck()

    def convert(self, n: int, pred: Prediction, parsed: Parsed, step: Step) -> Parsed:
        """The parsed output with its point in screenshot pixels (checked for look-alike spaces)."""
        own = getattr(pred, "coord_space", None)
        sp = self.space
        if own is not None:
            sp = self.spaces.get(own)
            if sp is None:
                try:
                    sp = self.spaces[own] = parse_coord_space(own)
                except ValueError as e:
                    raise PredictionsError(f"prediction {n}: {e}") from None
        if parsed.ok and parsed.action is not None and parsed.action.coordinate is not None:
            self.check.add(parsed.action.coordinate, sp, step.image_width, step.image_height)
            parsed = convert_coordinate(parsed, step, sp)
        return parsed

    def menu(self, step_id: str) -> Sequence[Candidate] | None:
        """The step's som menu for the consistency check (None under A and G, which never read it)."""
        return None if self.gold is None else self.gold.menu(step_id)


def score_predictions(
    predictions: Iterable[Prediction],
    gold: GoldSteps | Sequence[Step] | Mapping[str, Step],
    view: View | str,
    contract: Contract | str,
    *,
    verdicts: Any = None,
    allow_missing: bool = False,
    keep_steps: bool = False,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
    coord_space: CoordSpace | str | None = None,
    coord_space_source: str | None = None,
) -> Report:
    """Score predictions against the gold steps of a split (streams the predictions).

    Args:
        predictions: one :class:`Prediction` per (step, seed); an iterator is consumed once.
        gold: every gold step of the split: a :class:`GoldSteps` (from
            :func:`mag_dataset.dataset.load_gold`), which the coord view under J and JG
            needs for its som menus, or, where no menu is read apart from the steps, a
            sequence or step_id -> Step mapping.
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        verdicts: cached judge verdicts for usefulness, or None.
        allow_missing: score steps without a prediction as format failures instead of
            raising.
        keep_steps: keep the per-step scores in ``Report.steps``.
        bootstrap_resamples: bootstrap size (0 disables the interval).
        coord_space: the coordinate space of the file's points (coord view; default
            screenshot pixels); a prediction's own ``coord_space`` overrides it.
        coord_space_source: where the space was declared (``flag``, ``sidecar``...),
            recorded in the provenance; ``default`` when no space is given.

    Returns:
        The report.

    Raises:
        PredictionsError: an unknown step id, a duplicate (step id, seed), a bad
            coordinate space, or (without ``allow_missing``) a step with no prediction.
        ValueError: gold of another view, duplicate step ids, or bare steps where the som
            menus are needed (the consistency would otherwise be an n/a nobody asked for).
    """
    view, contract = View(view), Contract(contract)
    try:
        space = parse_coord_space(coord_space)
    except ValueError as e:
        raise PredictionsError(str(e)) from None
    gold = _as_gold(gold, view, contract)
    step_list = list(gold.steps) if isinstance(gold, GoldSteps) else gold
    by_id = {s.step_id: s for s in step_list}
    if len(by_id) != len(step_list):
        raise ValueError("steps contain duplicate step ids")
    seen = SeenSteps(list(by_id))
    agg = Aggregator(
        step_list, view, contract, verdicts=verdicts, keep_steps=keep_steps, bootstrap_resamples=bootstrap_resamples
    )
    points = None
    if view is View.COORD:
        points = _Points(space, gold if menus_needed(view, contract) else None)
        source = coord_space_source or ("default" if coord_space is None else "argument")
        agg.coord_space = {"space": space.name, "source": source}
        agg.space_check = points.check
    for n, pred in enumerate(predictions, start=1):
        i = seen.index.get(pred.step_id)
        if i is None:
            raise PredictionsError(f"prediction {n}: unknown step_id {pred.step_id[:200]!r}")
        if seen.add(i, pred.seed):
            raise PredictionsError(f"prediction {n}: duplicate step_id {pred.step_id[:200]!r} for seed {pred.seed}")
        step = by_id[pred.step_id]
        parsed = parse_output(pred.output, view, contract)
        menu = None
        if points is not None:
            parsed, menu = points.convert(n, pred, parsed, step), points.menu(pred.step_id)
        agg.add(score_parsed(parsed, step, view, contract, verdicts, seed=pred.seed, menu=menu))
    _add_missing(agg, seen, by_id, points, allow_missing=allow_missing)
    return agg.report()


def _as_gold(gold: GoldSteps | Sequence[Step] | Mapping[str, Step], view: View,
             contract: Contract) -> GoldSteps | list[Step]:
    """The gold as given when it can score ``view`` under ``contract``; else a clear error."""
    if isinstance(gold, GoldSteps):
        if gold.view is not view:
            raise ValueError(f"the gold is of the {gold.view.value} view, not {view.value}")
        return gold
    steps = list(gold.values()) if isinstance(gold, Mapping) else list(gold)
    if menus_needed(view, contract):
        raise ValueError(
            f"scoring the coord view under {contract.value} needs the som menus (guide-action consistency reads "
            "which element a point hits): pass a GoldSteps (mag_dataset.dataset.load_gold, GoldSteps.from_views), "
            "not bare steps"
        )
    return steps


def _add_missing(agg: Aggregator, seen: SeenSteps, by_id: Mapping[str, Step], points: _Points | None, *,
                 allow_missing: bool) -> None:
    """Score each seed's steps without a prediction as format failures (or refuse them)."""
    for seed in seen.seeds:
        missing = seen.missing(seed)
        if missing and not allow_missing:
            shown = ", ".join(repr(m) for m in missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise PredictionsError(f"{len(missing)} step id(s) have no prediction for seed {seed}: {shown}")
        for sid in missing:
            menu = None if points is None else points.menu(sid)
            agg.add(score_parsed(MISSING, by_id[sid], agg.view, agg.contract, agg.verdicts, seed=seed, menu=menu),
                    missing=True)


__all__ = [
    "ALL_METRICS",
    "BOARD_COLUMNS",
    "BREAKDOWNS",
    "EXTENSION_METRICS",
    "GoldSteps",
    "HEADLINE_METRIC",
    "MCNEMAR_METRICS",
    "METRICS",
    "METRIC_BY_NAME",
    "METRIC_NAMES",
    "METRIC_TABLE",
    "Report",
    "SCORER_VERSION",
    "StepScore",
    "aggregate",
    "bleu",
    "bleu_1_4",
    "box_distance",
    "dataset_fingerprint",
    "format_report",
    "metric_table_markdown",
    "normalize_arg",
    "rouge_l",
    "round_value",
    "score_predictions",
    "score_step",
    "token_f1",
]
