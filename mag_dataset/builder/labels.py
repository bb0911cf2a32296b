"""Audit application: a raw step and its audit record → the gold labels of both views.

Holds the label rules of the builder (module docstring of :mod:`mag_dataset.builder`): an
audit record's status and flags merged with the raw step's, a ``remapped`` record's new
element and box, the coordinate view's point, and the point-only rule (refused, or built
``unmappable``). Pure: no file is read here; the audit file is read by
:func:`mag_dataset.raw.read_audit`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mag_dataset.actions import ACTION_SPACE
from mag_dataset.raw import RawDataError, RawEpisode, RawStep
from mag_dataset.schema import Action, AuditRecord, AuditStatus, box_center, point_in_box

#: Reason recorded for a point-only step built with ``unmappable_point_only`` that
#: ``mag unify`` never looked at.
POINT_NOT_RESTORED = "point_not_restored"


def verified_by(step: RawStep) -> str | None:
    """The annotator who verified the step's guide (``mag annotate`` sets ``metadata["verified_by"]``)."""
    who = step.metadata.get("verified_by")
    return who.strip() if isinstance(who, str) and who.strip() else None


def verification(step: RawStep) -> dict[str, str | None]:
    """The human verification's provenance columns from the step metadata ``mag annotate`` writes.

    ``guide_decision``: ``accepted``, ``edited``, ``rejected`` (the draft was rejected: the
    step kept the guide it had before annotation) or ``disputed`` (its annotators disagree,
    not adjudicated yet); ``decided_at``: when the deciding round ended (ISO 8601 UTC);
    ``verification_notes``: the annotators' notes. ``None`` where nobody decided.
    """
    out: dict[str, str | None] = {}
    for column, key in (("guide_decision", "guide_decision"), ("decided_at", "decided_at"),
                        ("verification_notes", "verification_notes")):
        v = step.metadata.get(key)
        out[column] = v.strip() if isinstance(v, str) and v.strip() else None
    return out


def _raw_coordinate_restored(step: RawStep) -> bool:
    # Unification (mag unify) may record the flag as a RawStep field or in its metadata.
    return bool(getattr(step, "coordinate_restored", False) or step.metadata.get("coordinate_restored", False))


def _zero_size(box: Any) -> bool:
    return box is not None and (box[2] <= box[0] or box[3] <= box[1])


def _merged_audit(st: RawStep, rec: AuditRecord | None) -> AuditRecord:
    """The step's audit: the record's outcome, with the raw step's stale and restored flags kept."""
    restored = _raw_coordinate_restored(st)
    if rec is None:
        return AuditRecord(stale=st.stale, coordinate_restored=restored)
    return AuditRecord(
        status=rec.status,
        disputed=rec.disputed,
        stale=rec.stale or st.stale,
        coordinate_restored=rec.coordinate_restored or restored,
        original_element_id=rec.original_element_id,
        element_id=rec.element_id,
        reason=rec.reason,
    )


def _remapped_action(ep: RawEpisode, st: RawStep, rec: AuditRecord) -> tuple[Action, Any]:
    """The action and target box after a ``remapped`` record: the new element, its box, and the
    recorded point when it lies in that box (else the box centre)."""
    action = st.action
    if not ACTION_SPACE[action.type].targeted:
        raise RawDataError(ep.episode_id, st.step_index, "audit.status", f"remapped, but a {action.type.value} action has no target")
    target = next((c for c in st.candidates if c.id == rec.element_id), None)
    if target is None:
        raise RawDataError(
            ep.episode_id, st.step_index, "audit.element_id", f"remapped to {rec.element_id!r}, which is not in the candidate menu"
        )
    bbox = target.bbox
    point = action.coordinate if action.coordinate is not None and point_in_box(action.coordinate, bbox) else box_center(bbox)
    return Action(**{**action.to_dict(), "element_id": target.id, "coordinate": list(point)}), bbox


def resolve_labels(
    ep: RawEpisode, st: RawStep, rec: AuditRecord | None, unmappable_point_only: bool = False
) -> tuple[Action, Action, Any, AuditRecord, str | None]:
    """Apply an audit record to a raw step: (som action, coord action, target box, audit, original id).

    A targeted action with no element id (a point-only step ``mag unify`` has not restored)
    is refused, unless the audit marks it ``unmappable`` or ``unmappable_point_only`` is set:
    then it is built ``unmappable`` with no element id and no target box.

    Raises:
        RawDataError: a refused point-only step, a zero-size target box, or a remap that
            names no candidate or a step without a target.
    """
    action, bbox = st.action, st.target_bbox
    audit = _merged_audit(st, rec)
    original = rec.original_element_id if rec is not None else None
    point_only = ACTION_SPACE[action.type].targeted and action.element_id is None
    if point_only and audit.status is not AuditStatus.REMAPPED:
        if audit.status is not AuditStatus.UNMAPPABLE and not unmappable_point_only:
            raise RawDataError(
                ep.episode_id, st.step_index, "action.element_id",
                f"a point-only {action.type.value} (no element id) cannot enter the som view: run `mag unify` on the raw "
                f"corpus to restore its element, or build with --unmappable-point-only to mark it unmappable",
            )
        reason = audit.reason or str(st.metadata.get("unmappable_reason") or POINT_NOT_RESTORED)
        audit = dataclasses.replace(audit, status=AuditStatus.UNMAPPABLE, disputed=False, reason=reason)
        # no element and no trustworthy box: the scorer leaves the step out of element metrics
        return action, action, None, audit, original
    if _zero_size(bbox):
        raise RawDataError(ep.episode_id, st.step_index, "target_bbox", f"zero-size box {list(bbox)}")
    if rec is not None and rec.status is AuditStatus.REMAPPED:
        original = rec.original_element_id or action.element_id
        action, bbox = _remapped_action(ep, st, rec)
    coord_action = action
    if ACTION_SPACE[action.type].targeted:
        point = action.coordinate if action.coordinate is not None else box_center(bbox)
        coord_action = Action(**{**action.to_dict(), "element_id": None, "coordinate": list(point)})
    return action, coord_action, bbox, audit, original
