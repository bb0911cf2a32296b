"""Corpus unification: restore coordinate-only steps and flag stale screenshots.

WebMRE (arXiv 2609.27353) §3 unifies trajectories recorded by different agents: steps
whose action carries only a point are restored to an element, and steps whose screenshot
was recaptured after the fact are flagged ``stale`` when the recaptured observation does
not match the one the action was taken on (WebMRE restored 859 steps and flagged 59% as
stale). This module implements both rules on a raw corpus (:mod:`mag_dataset.raw`).

Coordinate restoration
    A *coordinate-only* step is a targeted action (click, type, select, hover) with a
    ``coordinate`` and no ``element_id``. Its element is the candidate whose box contains
    the point (edges included) with the **smallest area**. Ties are broken, in order, by the
    distance from the point to the box centre (nearer first), then by the candidate's
    position in the menu (earlier first), then by the id (string order) — so the result
    never depends on dict or file order. The step's ``element_id`` becomes that id, its
    ``target_bbox`` becomes the candidate's box, ``metadata["coordinate_restored"]`` is set
    to true (the builder reads it as the ``coordinate_restored`` flag) and the original
    point is kept in ``action.coordinate``.

    A point is **unmappable** — left without an element, counted as *unrestorable*
    (``metadata["coordinate_unrestorable"] = true``, ``metadata["unmappable_reason"]``) and
    marked ``unmappable`` with that reason in the audit file — when:

    * ``point_outside_candidates``: no candidate box contains it;
    * ``point_ambiguous``: another box containing the point competes with the smallest one,
      ``S``: a box equal to ``S`` (every side within :data:`AMBIGUITY_TOLERANCE` px: two
      elements in one place), or a box that does not contain ``S`` (partly overlapping
      elements, same tolerance) and is less than ``1 / AMBIGUITY_AREA_RATIO`` times the area
      of ``S``. Nested boxes are never ambiguous: the innermost element is what a click on
      it hits (the 1 px tolerance keeps a link that sticks out of its row by a pixel
      nested). A far larger partly-overlapping box (a page strip under a button) does not
      compete either.

    Only an ``unaudited`` record is marked (a judge's or a person's decision stays); a rerun
    that finds the point restorable clears a mark the rule set.

Stale rule
    A step is *recaptured* when ``metadata["recaptured"]`` is true or it stores an
    action-time observation (``metadata["action_time_screenshot"]``: an image file in the
    episode folder, and/or ``metadata["action_time_candidates"]``: the candidate menu at
    action time). A recaptured step is stale when **any** of these holds:

    1. no action-time observation is stored (the recapture cannot be verified);
    2. the two screenshots differ in size, or more than ``pixel_fraction`` (default 0.5%)
       of their pixels differ by more than ``pixel_tolerance`` (default 24 of 255) in some
       RGB channel — small enough to ignore antialiasing and caret blink, large enough to
       catch a changed text, an opened menu or a scrolled page;
    3. the candidate menus differ: a different multiset of (role, text) entries, or the
       target element is missing from either menu or its box moved by more than
       ``box_tolerance`` (default 4 px) on any side.

    Steps that were not recaptured keep their flag. ``stale`` is written to the raw step
    (the builder reads it) and the measured evidence to ``metadata["stale_check"]``.

Both flags are also merged into the corpus' audit file (``RAW/audit.jsonl``) without
changing any audit status, so the builder sees them whichever of ``unify`` and ``audit``
ran last.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from mag_dataset.actions import ACTION_SPACE
from mag_dataset.coords import AMBIGUITY_AREA_RATIO, AMBIGUITY_TOLERANCE, restore_element
from mag_dataset.raw import (
    AUDIT_FILE,
    RawDataError,
    RawEpisode,
    RawStep,
    image_bytes,
    iter_episode_dirs,
    read_audit,
    read_episode,
    rewrite_episode_json,
    screenshot_bytes,
    step_id,
    write_audit,
)
from mag_dataset.schema import AuditRecord, AuditStatus, Candidate, Point, SchemaError, point_in_box

PIXEL_TOLERANCE = 24
PIXEL_FRACTION = 0.005
BOX_TOLERANCE = 4.0
#: Reasons ``mag unify`` writes for an unmappable point (audit record ``reason``).
POINT_OUTSIDE = "point_outside_candidates"
POINT_AMBIGUOUS = "point_ambiguous"
UNIFY_REASONS = (POINT_OUTSIDE, POINT_AMBIGUOUS)


def _area(box: Sequence[float]) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def _contains(outer: Sequence[float], inner: Sequence[float], tol: float) -> bool:
    return outer[0] - tol <= inner[0] and outer[1] - tol <= inner[1] and inner[2] <= outer[2] + tol and inner[3] <= outer[3] + tol


def map_point(point: Point, candidates: Sequence[Candidate]) -> tuple[Candidate | None, str | None]:
    """Map a point to its element under the unify rule (module docstring).

    Returns:
        ``(candidate, None)`` when the point maps to one element; ``(None, reason)`` with
        :data:`POINT_OUTSIDE` or :data:`POINT_AMBIGUOUS` when it is unmappable.
    """
    chosen = restore_element(point, candidates)
    if chosen is None:
        return None, POINT_OUTSIDE
    tol = AMBIGUITY_TOLERANCE
    for c in candidates:
        if c is chosen or not point_in_box(point, c.bbox):
            continue
        same = all(abs(p - q) <= tol for p, q in zip(c.bbox, chosen.bbox))
        overlapping = not _contains(c.bbox, chosen.bbox, tol) and _area(chosen.bbox) > AMBIGUITY_AREA_RATIO * _area(c.bbox)
        if same or overlapping:
            return None, POINT_AMBIGUOUS
    return chosen, None


def is_coordinate_only(step: RawStep) -> bool:
    """Whether a step's targeted action has a point but no element id."""
    return ACTION_SPACE[step.action.type].targeted and step.action.element_id is None and step.action.coordinate is not None


def restore_step(step: RawStep) -> tuple[RawStep, str]:
    """Apply coordinate restoration to one step.

    Returns:
        ``(step, outcome)`` with outcome ``"restored"``, ``"unrestorable"`` (the reason in
        ``metadata["unmappable_reason"]``) or ``"unchanged"``.
    """
    if not is_coordinate_only(step):
        return step, "unchanged"
    assert step.action.coordinate is not None
    target, reason = map_point(step.action.coordinate, step.candidates)
    meta = dict(step.metadata)
    if target is None:
        meta["coordinate_unrestorable"] = True
        meta["unmappable_reason"] = reason
        return dataclasses.replace(step, metadata=meta), "unrestorable"
    meta.pop("coordinate_unrestorable", None)
    meta.pop("unmappable_reason", None)
    meta["coordinate_restored"] = True
    action = dataclasses.replace(step.action, element_id=target.id)
    return dataclasses.replace(step, action=action, target_bbox=target.bbox, metadata=meta), "restored"


@dataclass(frozen=True)
class StaleCheck:
    """Evidence of the stale rule for one recaptured step.

    Attributes:
        stale: the verdict.
        reason: why (``no_action_time_observation``, ``image_size``, ``pixels``,
            ``candidates``, ``target_moved``) or ``""`` when not stale.
        pixel_fraction: share of pixels that differ beyond the tolerance (None if not compared).
    """

    stale: bool
    reason: str = ""
    pixel_fraction: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"stale": self.stale, "reason": self.reason, "pixel_fraction": self.pixel_fraction}


def pixel_diff_fraction(a: bytes, b: bytes, tolerance: int = PIXEL_TOLERANCE) -> float | None:
    """Share of pixels whose largest RGB channel difference exceeds ``tolerance``.

    Returns:
        The fraction in [0, 1], or None when the images differ in size.
    """
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(a)) as ia, Image.open(io.BytesIO(b)) as ib:
        if ia.size != ib.size:
            return None
        xa = np.asarray(ia.convert("RGB"), dtype=np.int16)
        xb = np.asarray(ib.convert("RGB"), dtype=np.int16)
    diff = np.abs(xa - xb).max(axis=2) > tolerance
    return float(diff.mean()) if diff.size else 0.0


def _menu_signature(cands: Iterable[Candidate]) -> Counter:
    return Counter((c.role, " ".join(c.text.split())) for c in cands)


def check_stale(
    step: RawStep,
    folder: Path,
    *,
    pixel_tolerance: int = PIXEL_TOLERANCE,
    pixel_fraction: float = PIXEL_FRACTION,
    box_tolerance: float = BOX_TOLERANCE,
) -> StaleCheck | None:
    """Apply the stale rule (module docstring) to one step.

    Returns:
        The evidence, or None when the step was not recaptured (its flag stays as it is).

    Raises:
        RawDataError: a named action-time file is missing or the stored menu is malformed.
    """
    meta = step.metadata
    shot_name = meta.get("action_time_screenshot")
    raw_cands = meta.get("action_time_candidates")
    if not (meta.get("recaptured") or shot_name or raw_cands is not None):
        return None
    if not shot_name and raw_cands is None:
        return StaleCheck(True, "no_action_time_observation")
    frac = None
    if shot_name:
        path = folder / str(shot_name)
        if not path.is_file():
            raise RawDataError(folder.name, step.step_index, "metadata.action_time_screenshot", f"missing image file {shot_name!r}")
        frac = pixel_diff_fraction(image_bytes(folder, str(shot_name)), screenshot_bytes(folder, step), pixel_tolerance)
        if frac is None:
            return StaleCheck(True, "image_size")
        if frac > pixel_fraction:
            return StaleCheck(True, "pixels", frac)
    if raw_cands is not None:
        try:
            then = [Candidate.from_dict(c) for c in raw_cands]
        except (SchemaError, KeyError, TypeError) as e:
            raise RawDataError(folder.name, step.step_index, "metadata.action_time_candidates", str(e)) from None
        if _menu_signature(then) != _menu_signature(step.candidates):
            return StaleCheck(True, "candidates", frac)
        target = step.action.element_id
        if target is not None:
            now_box = next((c.bbox for c in step.candidates if c.id == target), None)
            then_box = next((c.bbox for c in then if c.id == target), None)
            if now_box is None or then_box is None:
                return StaleCheck(True, "target_moved", frac)
            if max(abs(p - q) for p, q in zip(now_box, then_box)) > box_tolerance:
                return StaleCheck(True, "target_moved", frac)
    return StaleCheck(False, "", frac)


@dataclass
class UnifyReport:
    """What :func:`unify_corpus` did.

    Attributes:
        episodes: episodes read.
        steps: steps read.
        coordinate_only: coordinate-only steps found.
        restored: of those, restored to an element.
        unrestorable: of those, unmappable (no box, or ambiguous boxes).
        unmappable_reasons: count per unmappable reason.
        recaptured: steps the stale rule applied to.
        stale: of those, flagged stale.
        stale_reasons: count per reason.
        changed_episodes: episode ids whose episode file was rewritten (in the form it had).
    """

    episodes: int = 0
    steps: int = 0
    coordinate_only: int = 0
    restored: int = 0
    unrestorable: int = 0
    unmappable_reasons: Counter = field(default_factory=Counter)
    recaptured: int = 0
    stale: int = 0
    stale_reasons: Counter = field(default_factory=Counter)
    changed_episodes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.stale_reasons.items())) or "none"
        unmappable = "".join(f", {k} {v}" for k, v in sorted(self.unmappable_reasons.items()))
        return (
            f"{self.episodes} episodes, {self.steps} steps: {self.coordinate_only} coordinate-only "
            f"({self.restored} restored, {self.unrestorable} unrestorable{unmappable}); {self.recaptured} recaptured, "
            f"{self.stale} stale ({reasons}); {len(self.changed_episodes)} episodes updated"
        )


def unify_episode(episode: RawEpisode, folder: Path, report: UnifyReport, **stale_kw: Any) -> RawEpisode:
    """Apply both rules to one episode (pure apart from reading its images)."""
    steps = []
    for st in episode.steps:
        report.steps += 1
        if is_coordinate_only(st):
            report.coordinate_only += 1
        st, outcome = restore_step(st)
        if outcome == "restored":
            report.restored += 1
        elif outcome == "unrestorable":
            report.unrestorable += 1
            report.unmappable_reasons[st.metadata["unmappable_reason"]] += 1
        check = check_stale(st, folder, **stale_kw)
        if check is not None:
            report.recaptured += 1
            if check.stale:
                report.stale += 1
                report.stale_reasons[check.reason] += 1
            st = dataclasses.replace(st, stale=check.stale, metadata={**st.metadata, "stale_check": check.to_json()})
        steps.append(st)
    return dataclasses.replace(episode, steps=tuple(steps))


def unify_corpus(
    raw_dir: str | os.PathLike,
    *,
    dry_run: bool = False,
    audit_path: str | os.PathLike | None = None,
    pixel_tolerance: int = PIXEL_TOLERANCE,
    pixel_fraction: float = PIXEL_FRACTION,
    box_tolerance: float = BOX_TOLERANCE,
) -> UnifyReport:
    """Restore coordinate-only steps and flag stale ones in a raw corpus, in place.

    Args:
        raw_dir: the raw corpus folder.
        dry_run: only count; write nothing.
        audit_path: the audit file to merge the flags into (default ``raw_dir/audit.jsonl``).
        pixel_tolerance, pixel_fraction, box_tolerance: the stale rule's thresholds.

    Returns:
        A :class:`UnifyReport`. Rerunning on a unified corpus changes nothing.
    """
    raw_dir = Path(raw_dir)
    report = UnifyReport()
    kw = {"pixel_tolerance": pixel_tolerance, "pixel_fraction": pixel_fraction, "box_tolerance": box_tolerance}
    updated: list[tuple[Path, RawEpisode]] = []
    flags: dict[str, tuple[bool, bool]] = {}
    unmappable: dict[str, str] = {}
    for folder in iter_episode_dirs(raw_dir):
        ep = read_episode(folder)
        report.episodes += 1
        new = unify_episode(ep, folder, report, **kw)
        if new.to_json() != ep.to_json():
            updated.append((folder, new))
            report.changed_episodes.append(ep.episode_id)
        for st in new.steps:
            restored = bool(st.metadata.get("coordinate_restored"))
            if restored or st.stale:
                flags[step_id(new.task_id, st.step_index)] = (st.stale, restored)
            if is_coordinate_only(st) and st.metadata.get("unmappable_reason"):
                unmappable[step_id(new.task_id, st.step_index)] = str(st.metadata["unmappable_reason"])
    if dry_run:
        return report
    for folder, ep in updated:
        # validate before writing: a restored step must still be a valid raw step
        from mag_dataset.raw import parse_step

        for st in ep.steps:
            parse_step(st.to_json(), ep.episode_id, folder)
        rewrite_episode_json(folder, ep)
    audit_file = Path(audit_path) if audit_path is not None else raw_dir / AUDIT_FILE
    if flags or unmappable or audit_file.is_file():
        merge_flags(audit_file, flags, unmappable)
    return report


def merge_flags(audit_file: Path, flags: dict[str, tuple[bool, bool]], unmappable: dict[str, str] | None = None) -> None:
    """Set ``stale`` / ``coordinate_restored`` and the unmappable marks in an audit file.

    Args:
        audit_file: the audit file (created when missing).
        flags: ``step_id -> (stale, coordinate_restored)`` for the flagged steps; a step
            absent here has both flags cleared in an existing record.
        unmappable: ``step_id -> reason`` for unmappable points: an ``unaudited`` record
            becomes ``unmappable`` with the reason; any other status (a judge's or a
            person's) is kept. A record the rule marked earlier (status ``unmappable`` with
            one of :data:`UNIFY_REASONS`) that is absent here goes back to ``unaudited``.
    """
    unmappable = unmappable or {}
    records = read_audit(audit_file) if audit_file.is_file() else {}
    out: dict[str, AuditRecord] = {}
    for sid in sorted(set(records) | set(flags) | set(unmappable)):
        rec = records.get(sid, AuditRecord())
        stale, restored = flags.get(sid, (False, False))
        rec = dataclasses.replace(rec, stale=stale, coordinate_restored=restored)
        ours = rec.status is AuditStatus.UNMAPPABLE and rec.reason in UNIFY_REASONS
        if sid in unmappable and (rec.status is AuditStatus.UNAUDITED or ours):
            rec = dataclasses.replace(rec, status=AuditStatus.UNMAPPABLE, reason=unmappable[sid])
        elif sid not in unmappable and ours:
            rec = dataclasses.replace(rec, status=AuditStatus.UNAUDITED, reason=None)
        out[sid] = rec
    if out != records or not audit_file.is_file():
        write_audit(audit_file, out)
