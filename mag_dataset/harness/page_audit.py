"""The rule-based audit's glue: a raw step's evidence for :mod:`mag_dataset.harness.page_judges`,
and their votes as the audit's verdicts (``mag audit --judges dom,name,pixel``).

What the judges read from a step (written by the recorder and by ``mag recapture``):

* ``metadata["dom"]``: ``{"target": <fingerprint>, "target_box": [x0, y0, x1, y1],
  "candidates": {id: <fingerprint>}}``: the acted element's fingerprint and box at action
  time, and the fingerprint of every candidate of the action-time menu;
* ``metadata["shown_page"]`` (a recaptured step): the recaptured page's elements, ``[{"id",
  "role", "text", "bbox", "fingerprint"}]``, boxes on the recaptured screenshot;
* the step's screenshot (the one it shows) and, for a recaptured step, the action-time
  screenshot named in ``metadata["action_time_screenshot"]``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from mag_dataset.harness.audit_rules import AuditVerdict, Vote
from mag_dataset.harness.page_judges import (
    PAGE_JUDGES_VERSION,
    Fingerprint,
    PageElement,
    PageVote,
    StepEvidence,
    run_page_judges,
)
from mag_dataset.raw import RawStep, image_bytes, screenshot_bytes

#: PageVote.verdict -> the audit's vote (``ambiguous`` is no vote: the panel cannot confirm).
_VOTES = {"confirm": Vote.CONFIRM, "remap": Vote.REMAP, "unmappable": Vote.UNMAPPABLE}


def as_verdict(vote: PageVote, recorded_id: str | None) -> AuditVerdict:
    """One rule-based vote as an :class:`AuditVerdict` (its evidence, as JSON, is the ``answer``)."""
    answer = json.dumps({"verdict": vote.verdict, "element": vote.element, "evidence": vote.evidence,
                         "judges_version": PAGE_JUDGES_VERSION}, sort_keys=True)
    if vote.verdict == "ambiguous":
        return AuditVerdict(vote.judge, None, error="ambiguous", answer=answer, reason="several equally good matches")
    v = _VOTES[vote.verdict]
    if v is Vote.REMAP and vote.element == recorded_id:
        v = Vote.CONFIRM
    reason = vote.evidence.get("why") if isinstance(vote.evidence.get("why"), str) else None
    return AuditVerdict(vote.judge, v, element_id=vote.element if v is Vote.REMAP else None, answer=answer,
                        reason=reason)



class MissingEvidenceError(ValueError):
    """Steps lack what the rule-based judges read (recorded before the recorder stored fingerprints)."""


def has_page_evidence(step: RawStep) -> bool:
    """Whether a step holds what the rule-based judges read (see the module docstring)."""
    m = step.metadata
    if not isinstance(m.get("dom"), dict):
        return False
    shows_other = m.get("recaptured") and not m.get("recaptured_identical") and m.get("action_time_screenshot")
    return not shows_other or isinstance(m.get("shown_page"), dict)


def _rgb(source: Path | bytes) -> np.ndarray:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as im:
        return np.asarray(im.convert("RGB"))


def _elements(items: Iterable[dict[str, Any]]) -> tuple[PageElement, ...]:
    out = []
    for d in items:
        fp = d.get("fingerprint")
        out.append(PageElement(str(d["id"]), str(d.get("role") or ""), str(d.get("text") or ""),
                               tuple(float(v) for v in d["bbox"]), Fingerprint.from_dict(fp) if fp else None))
    return tuple(out)


def step_evidence(folder: Path, step: RawStep) -> StepEvidence:
    """The judges' inputs for one raw step (its screenshots are read from ``folder``).

    Raises:
        MissingEvidenceError: the step has no DOM fingerprints (or, recaptured, no shown page).
    """
    if not has_page_evidence(step):
        raise MissingEvidenceError(f"step {step.step_index} has no DOM fingerprints")
    m = step.metadata
    dom = m["dom"]
    fps = dom.get("candidates") or {}
    action_elements = _elements({"id": c.id, "role": c.role, "text": c.text, "bbox": c.bbox,
                                 "fingerprint": fps.get(c.id)} for c in step.candidates)
    shown_image = _rgb(screenshot_bytes(folder, step))
    other = m.get("recaptured") and not m.get("recaptured_identical") and m.get("action_time_screenshot")
    if other:
        shown = _elements(m["shown_page"].get("elements") or [])
        action_image = _rgb(image_bytes(folder, m["action_time_screenshot"]))
    else:
        shown, action_image = action_elements, shown_image
    point = step.action.coordinate if step.action.coordinate is not None and not dom.get("target") else None
    return StepEvidence(
        recorded_id=step.action.element_id,
        menu=tuple((c.id, c.bbox) for c in step.candidates),
        shown=shown,
        shown_image=shown_image,
        target=Fingerprint.from_dict(dom["target"]) if dom.get("target") else None,
        target_box=tuple(dom["target_box"]) if dom.get("target_box") else None,
        point=tuple(point) if point is not None else None,
        action_image=action_image,
        same_page=not other,
        action_elements=action_elements,
    )


def page_verdicts(folder: Path, step: RawStep, names: Sequence[str]) -> list[AuditVerdict]:
    """The rule-based judges' verdicts on one step, in the order of ``names``."""
    ev = step_evidence(folder, step)
    return [as_verdict(v, step.action.element_id) for v in run_page_judges(ev, names)]
