"""One model output on one gold step -> :class:`StepScore`.

The format gate (:mod:`mag_dataset.parsing`), the conversion of a coord-view point from its
declared space to screenshot pixels (:mod:`mag_dataset.coords`), every rule of
:data:`~mag_dataset.scoring.metrics.METRIC_TABLE`, and the error taxonomy (why an output
is wrong; see :mod:`mag_dataset.scoring`). Pure. Not here: the metrics' definitions
(:mod:`mag_dataset.scoring.metrics`) and aggregation (:mod:`mag_dataset.scoring.aggregate`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, Contract, View
from mag_dataset.coords import PIXELS, CoordSpace, parse_coord_space
from mag_dataset.parsing import Parsed, parse_output
from mag_dataset.schema import Box, Candidate, Point, Step
from mag_dataset.scoring.gold import MENU_CONTRACTS
from mag_dataset.scoring.metrics import METRIC_TABLE, StepInput, arg_norm, target_match

#: The fields of a :class:`StepScore` before its metrics (what identifies and flags the step).
_HEAD: tuple[tuple[str, str], ...] = (
    ("step_id", "str"), ("task_id", "str"), ("site", "str"), ("gold_type", "str"), ("stale", "bool"),
    ("unseen_template", "bool"), ("seed", "int"), ("format_ok", "bool"), ("reason", "str | None"),
    ("unjudged", "bool"),
)
#: The fields after its metrics (the error taxonomy), all defaulting to None.
_TAIL: tuple[str, ...] = ("error", "pred_type", "box_distance")


class _StepScoreMethods:
    __slots__ = ()

    def metric(self, name: str) -> float | None:
        """The value of one metric (``None`` = not applicable)."""
        return getattr(self, name)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]


# A frozen dataclass whose metric fields come from METRIC_TABLE, in its order: the papers'
# metrics are required, the extensions default to None (as do the error fields).
StepScore = dataclasses.make_dataclass(
    "StepScore",
    [*_HEAD]
    + [(m.name, "float | None") if not m.extension else (m.name, "float | None", dataclasses.field(default=None))
       for m in METRIC_TABLE]
    + [(name, "str | float | None", dataclasses.field(default=None)) for name in _TAIL],
    bases=(_StepScoreMethods,),
    frozen=True,
)
StepScore.__module__ = __name__
StepScore.__doc__ = """Scores of one output on one step (``None`` = not applicable).

    Attributes:
        step_id, task_id, site: identify the step.
        gold_type: the gold action type (breakdown key).
        stale, unseen_template: the step's flags (breakdown keys).
        seed: the prediction's seed.
        format_ok: the output passed the format gate.
        reason: why it failed the gate (None when it passed).
        unjudged: verdicts were given but none covers this guide.
        <metric>: one field per row of :data:`~mag_dataset.scoring.metrics.METRIC_TABLE`, in
            its order (``ofcr`` ... ``usefulness``, then the extensions
            ``guide_action_consistency``, ``joint_step_acc``).
        error: the error-taxonomy class (see :mod:`mag_dataset.scoring`), None where it
            does not apply.
        pred_type: the predicted action type (output passed the gate), else None.
        box_distance: coord view, a target miss: distance from the point to the gold box
            in screenshot pixels.
    """

_RULES = tuple((m.name, m.rule) for m in METRIC_TABLE)

#: Taxonomy class of a wrong scored argument, by argument name.
_ARG_ERRORS: dict[str, str] = {
    "text": "wrong_text",
    "value": "wrong_value",
    "direction": "wrong_direction",
    "key": "wrong_key",
    "url": "wrong_url",
}


def box_distance(point: Point, box: Box) -> float:
    """Euclidean distance in px from a point to a box (0 inside or on an edge)."""
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return round(math.hypot(dx, dy), 4)


def _error(p: Parsed, step: Step, view: View, contract: Contract, saa: float | None) -> tuple[str | None, float | None]:
    """The error-taxonomy class of one scored output, and the box distance of a coord miss."""
    if not p.ok:
        return "format:" + (p.kind or "not_json"), None
    if "action" not in CONTRACT_KEYS[contract] or saa is None or p.action is None:
        return None, None
    pred, gold = p.action, step.action
    if pred.type is not gold.type:
        return "wrong_action_type", None
    if step.has_target and not target_match(pred, step, view):
        if view is View.SOM:
            return "wrong_element", None
        dist = box_distance(pred.coordinate, step.target_bbox) if pred.coordinate and step.target_bbox else None
        x, y = pred.coordinate or (0.0, 0.0)
        inside = 0 <= x <= step.image_width and 0 <= y <= step.image_height
        return ("point_outside_box" if inside else "point_outside_image"), dist
    if saa == 1.0:
        return "correct", None
    for arg in ACTION_SPACE[gold.type].args:
        if not arg.scored or getattr(gold, arg.name) is None:
            continue
        g, q = getattr(gold, arg.name), getattr(pred, arg.name)
        norm = arg_norm(arg.name)
        if q is None or norm(q) != norm(g):
            return _ARG_ERRORS.get(arg.name, "wrong_" + arg.name), None
    return "wrong_argument", None  # pragma: no cover - saa is 0 only for the reasons above


def convert_coordinate(parsed: Parsed, step: Step, space: CoordSpace) -> Parsed:
    """The parsed output with its point converted from ``space`` to screenshot pixels."""
    if space.kind == "pixels" or not parsed.ok or parsed.action is None or parsed.action.coordinate is None:
        return parsed
    pt = space.to_pixels(parsed.action.coordinate, step.image_width, step.image_height)
    return dataclasses.replace(parsed, action=dataclasses.replace(parsed.action, coordinate=pt))


def score_parsed(
    parsed: Parsed,
    step: Step,
    view: View | str,
    contract: Contract | str,
    verdicts: Any = None,
    *,
    seed: int = 0,
    menu: Sequence[Candidate] | None = None,
) -> StepScore:
    """Score an already parsed output whose point is in screenshot pixels (see :func:`score_step`).

    Returns:
        The step's :class:`StepScore`.
    """
    if type(view) is not View:
        view = View(view)
    if type(contract) is not Contract:
        contract = Contract(contract)
    if menu is None and view is View.COORD and contract in MENU_CONTRACTS:
        raise ValueError(
            f"step {step.step_id!r}: scoring the coord view under {contract.value} needs the step's som menu "
            "(menu=GoldSteps.menu(step_id)); without it the guide-action consistency would be a silent n/a"
        )
    x = StepInput(parsed, step, view, contract, verdicts, menu)
    values: dict[str, float | None] = {}
    for name, rule in _RULES:
        values[name] = rule(x, values)
    unjudged = (verdicts is not None and parsed.ok and values["usefulness"] is None
                and "guide" in CONTRACT_KEYS[contract])
    error, dist = _error(parsed, step, view, contract, values["saa"])
    pred_type = parsed.action.type.value if parsed.ok and parsed.action is not None else None
    return StepScore(
        step.step_id,
        step.task_id,
        step.site,
        step.action.type.value,
        step.stale,
        step.unseen_template,
        seed,
        parsed.ok,
        parsed.reason,
        unjudged,
        *values.values(),
        error=error,
        pred_type=pred_type,
        box_distance=dist,
    )


def score_step(
    output: Any,
    step: Step,
    view: View | str,
    contract: Contract | str,
    verdicts: Any = None,
    *,
    seed: int = 0,
    coord_space: CoordSpace | str | None = None,
    menu: Sequence[Candidate] | None = None,
) -> StepScore:
    """Score one raw model output on one step.

    Args:
        output: the raw model text.
        step: the gold step.
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        verdicts: cached judge verdicts (:class:`mag_dataset.verdicts.Verdicts`) or None.
        seed: the prediction's seed, carried into the score.
        coord_space: the space of a coord-view point (:mod:`mag_dataset.coords`;
            default screenshot pixels).
        menu: coord view: the step's som candidate menu (:meth:`GoldSteps.menu
            <mag_dataset.scoring.gold.GoldSteps.menu>`), required under J and JG, where the
            consistency check reads which element the point hits.

    Returns:
        The step's :class:`StepScore`; metrics that do not apply are None.
    """
    parsed = parse_output(output, view, contract)
    space = parse_coord_space(coord_space)
    if space is not PIXELS:
        parsed = convert_coordinate(parsed, step, space)
    return score_parsed(parsed, step, view, contract, verdicts, seed=seed, menu=menu)


#: The parsed form of a step without a prediction (a format failure of kind ``missing``).
MISSING = Parsed(ok=False, reason="no prediction for this step", kind="missing")


__all__ = ["MISSING", "StepScore", "box_distance", "convert_coordinate", "score_parsed", "score_step"]
