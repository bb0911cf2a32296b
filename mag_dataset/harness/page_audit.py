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
from mag_dataset.harness.audit_rules import AuditVerdict, Vote
from mag_dataset.harness.page_judges import PAGE_JUDGES_VERSION, PageVote

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

