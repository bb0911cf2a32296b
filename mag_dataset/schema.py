"""Typed contracts for a benchmark step: action, candidate element, audit record, step.

All records are frozen dataclasses validated on construction, so a malformed row fails
where it is made, with the field named. ``to_dict``/``from_dict`` convert to and from the
plain structures stored in Parquet (see :mod:`mag_dataset.features`).

Coordinates and boxes are in *screenshot pixels*: ``coordinate`` is ``(x, y)``, a box is
``(x0, y0, x1, y1)`` with ``x0 <= x1`` and ``y0 <= y1``. A point is inside a box when
``x0 <= x <= x1`` and ``y0 <= y <= y1`` (edges included).
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from mag_dataset.actions import ACTION_SPACE, ARG_FIELDS, ActionType


class SchemaError(ValueError):
    """A record violates the schema; the message names the field."""


class AuditStatus(str, enum.Enum):
    """Outcome of the three-judge label audit (WebMRE §3)."""

    UNAUDITED = "unaudited"
    CONFIRMED = "confirmed"
    REMAPPED = "remapped"
    UNMAPPABLE = "unmappable"
    DISPUTED = "disputed"

    def __str__(self) -> str:
        return self.value


class GuideSource(str, enum.Enum):
    """Who wrote the gold guide."""

    TEMPLATE = "template"
    #: :mod:`mag_dataset.context_guides`: region + action + purpose, phrasing varied by seed (the sites)
    CONTEXT_TEMPLATE = "context_template"
    #: :mod:`mag_dataset.context_guides`: the expert's plan says what the step is for in the task,
    #: written once per template step with the task's parameters (the sites)
    PLAN = "plan"
    LLM = "llm"
    HUMAN = "human"

    def __str__(self) -> str:
        return self.value


class Split(str, enum.Enum):
    TRAIN = "train"
    TEST = "test"

    def __str__(self) -> str:
        return self.value


Box = tuple[float, float, float, float]
Point = tuple[float, float]


def _finite(name: str, values: Any, n: int) -> tuple[float, ...]:
    if not isinstance(values, (list, tuple)) or len(values) != n:
        raise SchemaError(f"{name} must be a list of {n} numbers, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SchemaError(f"{name} must hold finite numbers, got {values!r}")
        out.append(float(v))
    return tuple(out)


def as_box(name: str, values: Any) -> Box:
    """Validate and return a box ``(x0, y0, x1, y1)``."""
    box = _finite(name, values, 4)
    if box[0] > box[2] or box[1] > box[3]:
        raise SchemaError(f"{name} must satisfy x0 <= x1 and y0 <= y1, got {list(box)}")
    return box  # type: ignore[return-value]


def as_point(name: str, values: Any) -> Point:
    """Validate and return a point ``(x, y)``."""
    return _finite(name, values, 2)  # type: ignore[return-value]


def point_in_box(point: Point, box: Box) -> bool:
    """Whether ``point`` lies inside ``box``, edges included."""
    x, y = point
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def box_center(box: Box) -> Point:
    """Centre of a box, in the same pixels."""
    return ((box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0)


def box_inside_image(box: Box, width: int, height: int) -> bool:
    return 0 <= box[0] and 0 <= box[1] and box[2] <= width and box[3] <= height


@dataclass(frozen=True)
class Action:
    """A grounded gold action.

    Attributes:
        type: the action type.
        element_id: the target's Set-of-Mark id (targeted actions), else None.
        coordinate: the target point in screenshot pixels (targeted actions), else None.
        text, value, direction, key, url, answer: arguments; see
            :data:`mag_dataset.actions.ACTION_SPACE` for which type uses which.
    """

    type: ActionType
    element_id: str | None = None
    coordinate: Point | None = None
    text: str | None = None
    value: str | None = None
    direction: str | None = None
    key: str | None = None
    url: str | None = None
    answer: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "type", ActionType(self.type))
        except ValueError:
            raise SchemaError(f"action.type: unknown action type {self.type!r}") from None
        spec = ACTION_SPACE[self.type]
        if self.coordinate is not None:
            object.__setattr__(self, "coordinate", as_point("action.coordinate", self.coordinate))
        if self.element_id is not None:
            if isinstance(self.element_id, bool) or not isinstance(self.element_id, (str, int)):
                raise SchemaError(f"action.element_id must be a string, got {self.element_id!r}")
            object.__setattr__(self, "element_id", str(self.element_id))
        if spec.targeted and self.element_id is None and self.coordinate is None:
            raise SchemaError(f"action.{self.type.value} needs an element_id or a coordinate")
        if not spec.targeted and (self.element_id is not None or self.coordinate is not None):
            raise SchemaError(f"action.{self.type.value} takes no target")
        used = set(spec.arg_names)
        for name in ARG_FIELDS:
            v = getattr(self, name)
            if v is None:
                if name in used and next(a for a in spec.args if a.name == name).required:
                    raise SchemaError(f"action.{self.type.value} needs action.{name}")
                continue
            if name not in used:
                raise SchemaError(f"action.{name} is not an argument of {self.type.value}")
            if not isinstance(v, str):
                raise SchemaError(f"action.{name} must be a string, got {v!r}")
            choices = next(a for a in spec.args if a.name == name).choices
            if choices is not None and v not in choices:
                raise SchemaError(f"action.{name} must be one of {list(choices)}, got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["type"] = self.type.value
        d["coordinate"] = list(self.coordinate) if self.coordinate is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Action":
        if not isinstance(d, dict):
            raise SchemaError(f"action must be an object, got {type(d).__name__}")
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise SchemaError(f"action has unknown fields {sorted(unknown)}")
        if "type" not in d:
            raise SchemaError("action.type is missing")
        return cls(**d)


@dataclass(frozen=True)
class Candidate:
    """One entry of the candidate menu (Set-of-Mark element).

    Attributes:
        id: the Set-of-Mark label drawn on the screenshot.
        role: ARIA role or tag name.
        text: visible text / accessible name (may be empty).
        bbox: box in screenshot pixels.
    """

    id: str
    role: str
    text: str
    bbox: Box

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise SchemaError(f"candidate.id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.role, str) or not isinstance(self.text, str):
            raise SchemaError(f"candidate {self.id}: role and text must be strings")
        object.__setattr__(self, "bbox", as_box(f"candidate {self.id}.bbox", self.bbox))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "text": self.text, "bbox": list(self.bbox)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Candidate":
        return cls(id=d["id"], role=d["role"], text=d["text"], bbox=d["bbox"])


@dataclass(frozen=True)
class AuditRecord:
    """Label-audit outcome for one step.

    Attributes:
        status: audit status.
        disputed: excluded from element-level scoring (true exactly when status is disputed).
        stale: the screenshot was recaptured and may not match the action-time state.
        coordinate_restored: the element id was restored from a coordinate-only action.
        original_element_id: the element id before a remap, else None.
        element_id: the remapped element id (status remapped), else None.
        adjudicated_by: the annotator whose adjudication set this outcome, else None.
            Kept in the audit file, so a rerun of the audit keeps the human decision
            whatever annotation database it reads.
        reason: why the step has its status, when a rule set it (``mag unify`` marks a
            point-only step ``unmappable`` with ``point_outside_candidates`` or
            ``point_ambiguous``), else None.
    """

    status: AuditStatus = AuditStatus.UNAUDITED
    disputed: bool = False
    stale: bool = False
    coordinate_restored: bool = False
    original_element_id: str | None = None
    element_id: str | None = None
    adjudicated_by: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "status", AuditStatus(self.status))
        except ValueError:
            raise SchemaError(f"audit.status: unknown status {self.status!r}") from None
        if self.disputed != (self.status is AuditStatus.DISPUTED):
            raise SchemaError("audit.disputed must be true exactly when audit.status is disputed")
        if self.status is AuditStatus.REMAPPED and self.element_id is None:
            raise SchemaError("audit.element_id is required when audit.status is remapped")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        for key in ("adjudicated_by", "reason"):
            if d[key] is None:  # audit files without adjudications or reasons keep their bytes
                del d[key]
        return d


@dataclass(frozen=True)
class Step:
    """One benchmark step, as it appears in a built dataset row (without the image bytes).

    ``candidates`` is empty in the coord view. ``split`` is stored at build time.
    """

    step_id: str
    task_id: str
    site: str
    intent: str
    intent_template_id: str
    step_index: int
    num_steps: int
    image_width: int
    image_height: int
    previous_guides: tuple[str, ...]
    guide: str
    guide_source: GuideSource
    action: Action
    target_bbox: Box | None
    audit_status: AuditStatus = AuditStatus.UNAUDITED
    disputed: bool = False
    stale: bool = False
    coordinate_restored: bool = False
    original_element_id: str | None = None
    unseen_template: bool = False
    split: Split = Split.TRAIN
    url: str = ""
    candidates: tuple[Candidate, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "guide_source", GuideSource(self.guide_source))
        object.__setattr__(self, "audit_status", AuditStatus(self.audit_status))
        object.__setattr__(self, "split", Split(self.split))
        object.__setattr__(self, "previous_guides", tuple(self.previous_guides))
        object.__setattr__(self, "candidates", tuple(self.candidates))
        if self.target_bbox is not None:
            object.__setattr__(self, "target_bbox", as_box(f"{self.step_id}.target_bbox", self.target_bbox))
        if not 0 <= self.step_index < self.num_steps:
            raise SchemaError(f"{self.step_id}: step_index {self.step_index} outside 0..{self.num_steps - 1}")
        if self.disputed != (self.audit_status is AuditStatus.DISPUTED):
            raise SchemaError(f"{self.step_id}: disputed must be true exactly when audit_status is disputed")

    @property
    def has_target(self) -> bool:
        """Whether the gold action acts on an element."""
        return ACTION_SPACE[self.action.type].targeted

    @property
    def element_scored(self) -> bool:
        """Whether element-level metrics apply (not disputed, not unmappable)."""
        return self.audit_status not in (AuditStatus.DISPUTED, AuditStatus.UNMAPPABLE)
