"""The label-audit rules (WebMRE, arXiv 2609.27353, §3): pure functions over answers and records.

Holds what a judge's answer means and what a panel decides: the answer format and its
strict parser (:func:`parse_verdict`), the merge rule (:func:`merge_verdicts`), the audit
record of an outcome (:func:`make_record`, :func:`audit_records`), judge agreement
(:func:`pairwise_agreement`) and the counts of a run (:class:`AuditReport`). No I/O, no
network, no clock: like a grading module kept apart from execution. The runner (prompts,
requests, cache, files) is :mod:`mag_dataset.harness.audit`, which re-exports every name
here.

What a judge answers: exactly one JSON object, nothing else (a single ```json fence
    is tolerated)::

        {"verdict": "confirm"}
        {"verdict": "remap", "element": "<candidate id>"}
        {"verdict": "unmappable"}

    An optional ``"reason"`` string is kept in the verdict log. A remap to the recorded
    element counts as confirm. Anything else — other keys, another verdict, a remap to an
    id outside the menu, text around the object — is *malformed* and counts as **no
    vote**, as does a *failed call* (the runner records why: ``timeout``,
    ``unavailable``, ``http <status>``, ``response``).

Merge rule (:func:`merge_verdicts`), over the panel of three judges:
    * all three judges confirm → ``confirmed``;
    * at least two judges remap to the same element X → ``remapped`` (the step's element id
      becomes X; the recorded one is kept in ``original_element_id``);
    * at least two judges answer unmappable → ``unmappable``;
    * anything else → ``disputed`` (including any panel with a missing vote that reaches
      none of the above: two confirms and a timeout is disputed, because "all confirm" is
      not established).

Records (:func:`audit_records`): a human decision wins over the judges; a step whose
panel lost a vote to a failed call never goes from an earlier confirmed / remapped /
unmappable outcome to ``disputed`` (it is *kept*); the stale and coordinate-restored
flags of a record survive every new outcome.
"""

from __future__ import annotations

import enum
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from mag_dataset.schema import AuditRecord, AuditStatus

if TYPE_CHECKING:
    from mag_dataset.raw import RawEpisode, RawStep

#: Version of the judge prompt and answer format, logged with every verdict.
PROMPT_VERSION = 1
#: Judges on the panel.
PANEL_SIZE = 3

#: Outcomes that a failed call never turns into ``disputed``.
DECIDED = (AuditStatus.CONFIRMED, AuditStatus.REMAPPED, AuditStatus.UNMAPPABLE)


class Vote(str, enum.Enum):
    """A judge's vote on a step's recorded element."""

    CONFIRM = "confirm"
    REMAP = "remap"
    UNMAPPABLE = "unmappable"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class AuditVerdict:
    """One judge's answer on one step.

    Attributes:
        judge: the judge's name.
        vote: its vote, or None for no vote.
        element_id: the element of a remap vote, else None.
        error: why there is no vote (``timeout``, ``unavailable``, ``http <status>``,
            ``malformed``, ``response``; a rule-based judge's ``ambiguous``), else None.
        answer: the judge's raw answer text (None when the call failed).
        reason: the judge's optional reason (or the failed call's message).
        prompt: :func:`mag_dataset.harness.audit.prompt_key` of the messages the judge was asked, if known.
    """

    judge: str
    vote: Vote | None
    element_id: str | None = None
    error: str | None = None
    answer: str | None = None
    reason: str | None = None
    prompt: str | None = None

    @property
    def failed(self) -> bool:
        """The call failed (no answer), as opposed to a vote or a malformed answer."""
        return self.error is not None and self.error not in ("malformed", "ambiguous")

    def to_json(self, sid: str, model: str = "") -> dict[str, Any]:
        return {
            "step_id": sid,
            "judge": self.judge,
            "model": model,
            "prompt_version": PROMPT_VERSION,
            "vote": self.vote.value if self.vote is not None else None,
            "element_id": self.element_id,
            "error": self.error,
            "reason": self.reason,
            "answer": self.answer,
            "prompt_sha256": self.prompt,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "AuditVerdict":
        return cls(
            judge=d["judge"],
            vote=Vote(d["vote"]) if d.get("vote") else None,
            element_id=d.get("element_id"),
            error=d.get("error"),
            answer=d.get("answer"),
            reason=d.get("reason"),
            prompt=d.get("prompt_sha256"),
        )


_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)


def parse_verdict(judge: str, text: str, candidate_ids: Iterable[str], recorded_id: str | None) -> AuditVerdict:
    """Parse a judge's answer strictly (see the module docstring); never raises."""
    s = text.strip()
    m = _FENCE.match(s)
    if m:
        s = m.group(1).strip()

    def bad(why: str) -> AuditVerdict:
        return AuditVerdict(judge, None, error="malformed", answer=text, reason=why)

    try:
        d = json.loads(s)
    except (json.JSONDecodeError, RecursionError):
        return bad("not a JSON object")
    if not isinstance(d, dict):
        return bad("not a JSON object")
    extra = set(d) - {"verdict", "element", "reason"}
    if extra:
        return bad(f"unexpected keys {sorted(extra)}")
    reason = d.get("reason")
    reason = reason if isinstance(reason, str) else None
    try:
        vote = Vote(d.get("verdict"))
    except ValueError:
        return bad(f"unknown verdict {d.get('verdict')!r}")
    if vote is Vote.REMAP:
        el = d.get("element")
        if isinstance(el, bool) or not isinstance(el, (str, int)) or str(el).strip() == "":
            return bad("remap without an element id")
        el = str(el).strip()
        if el not in set(candidate_ids):
            return bad(f"remap to {el!r}, which is not in the candidate menu")
        if el == recorded_id:
            return AuditVerdict(judge, Vote.CONFIRM, answer=text, reason=reason)
        return AuditVerdict(judge, Vote.REMAP, element_id=el, answer=text, reason=reason)
    if "element" in d:
        return bad(f"'element' given with verdict {vote.value}")
    return AuditVerdict(judge, vote, answer=text, reason=reason)


def merge_verdicts(verdicts: Sequence[AuditVerdict], panel_size: int = PANEL_SIZE) -> tuple[AuditStatus, str | None]:
    """The merge rule (module docstring).

    Args:
        verdicts: the panel's verdicts (no-vote verdicts included or left out alike).
        panel_size: number of judges on the panel.

    Returns:
        ``(status, element_id)``; the element id is set for ``remapped`` only.
    """
    votes = [v for v in verdicts if v.vote is not None]
    majority = panel_size // 2 + 1
    if len(votes) == panel_size and all(v.vote is Vote.CONFIRM for v in votes):
        return AuditStatus.CONFIRMED, None
    remaps = Counter(v.element_id for v in votes if v.vote is Vote.REMAP)
    if remaps:
        (element, n), = remaps.most_common(1)
        if n >= majority:
            return AuditStatus.REMAPPED, element
    if sum(v.vote is Vote.UNMAPPABLE for v in votes) >= majority:
        return AuditStatus.UNMAPPABLE, None
    return AuditStatus.DISPUTED, None




# -- records ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditItem:
    """A step selected for the audit."""

    step_id: str
    episode: RawEpisode
    step: RawStep
    folder: Path


#: Human decisions over the judges' outcome: ``step_id -> (status, element_id[, annotator])``.
Adjudications = dict[str, tuple]


def audit_records(
    items: Sequence[AuditItem],
    verdicts: dict[str, list[AuditVerdict]],
    existing: dict[str, AuditRecord],
    adjudications: Adjudications | None = None,
    panel_size: int = PANEL_SIZE,
) -> tuple[dict[str, AuditRecord], Counter, int, int]:
    """Merge verdicts into audit records, keeping flags and every record not audited now.

    A human decision wins over the judges: one in ``adjudications``, else one already in the
    existing record (``adjudicated_by``). A step whose panel lost a vote to a failed call
    and would become ``disputed`` keeps an earlier decided outcome.

    Returns:
        ``(records, status counts, number adjudicated, number kept)``.
    """
    records = dict(existing)
    statuses: Counter = Counter()
    adjudicated = kept = 0
    for it in items:
        row = verdicts.get(it.step_id, [])
        status, element = merge_verdicts(row, panel_size)
        old = existing.get(it.step_id)
        who = None
        if adjudications and it.step_id in adjudications:
            status, element, *rest = adjudications[it.step_id]
            who = (rest[0] if rest else None) or "unknown"
            adjudicated += 1
        elif old is not None and old.adjudicated_by:
            status, element, who = old.status, old.element_id, old.adjudicated_by
            adjudicated += 1
        elif status is AuditStatus.DISPUTED and old is not None and old.status in DECIDED and any(v.failed for v in row):
            status, element = old.status, old.element_id
            kept += 1
        records[it.step_id] = make_record(it.step, AuditStatus(status), element, old, adjudicated_by=who)
        statuses[records[it.step_id].status] += 1
    return records, statuses, adjudicated, kept


def make_record(step: RawStep, status: AuditStatus, element: str | None, old: AuditRecord | None = None,
                adjudicated_by: str | None = None) -> AuditRecord:
    """The audit record of an outcome, keeping the stale / coordinate-restored flags."""
    old = old or AuditRecord()
    if status is AuditStatus.REMAPPED and element == step.action.element_id:
        status, element = AuditStatus.CONFIRMED, None  # a "remap" to the recorded element confirms it
    remapped = status is AuditStatus.REMAPPED
    return AuditRecord(
        status=status,
        disputed=status is AuditStatus.DISPUTED,
        stale=old.stale or step.stale,
        coordinate_restored=old.coordinate_restored or bool(step.metadata.get("coordinate_restored")),
        original_element_id=step.action.element_id if remapped else None,
        element_id=element if remapped else None,
        adjudicated_by=adjudicated_by,
    )


# -- counts -------------------------------------------------------------------------------


@dataclass
class AuditReport:
    """Counts of one audit run.

    Attributes:
        steps: steps audited.
        statuses: steps per outcome.
        votes: per judge, count per vote (and per no-vote reason as ``no_vote:<reason>``).
        requests: HTTP requests sent (0 on a fully cached rerun or a replay).
        cache_hits: answers read from the cache.
        adjudicated: audited steps whose outcome a human adjudication replaced.
        kept: steps that kept their earlier outcome because a failed call cost their panel
            a vote (see "No silent downgrade" in :mod:`mag_dataset.harness.audit`).
        agreement: per judge pair ``"a~b"``, ``(same verdict, both voted)`` over the steps
            (a remap agrees only with a remap to the same element).
        partial: the audit was written beside the audit file (``allow_partial``).
        problems: why the audit is partial (one line per judge).
        warnings: things the maintainer should know (e.g. another decision database).
        stale_steps, next_calls: for a replay, steps whose verdicts are stale and the calls
            the next audit will make (:func:`mag_dataset.harness.audit.audit_staleness`).
        audit_path, verdicts_path: files written.
    """

    steps: int = 0
    statuses: Counter = field(default_factory=Counter)
    votes: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    requests: int = 0
    cache_hits: int = 0
    adjudicated: int = 0
    kept: int = 0
    agreement: dict[str, tuple[int, int]] = field(default_factory=dict)
    partial: bool = False
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stale_steps: int = 0
    next_calls: int = 0
    audit_path: Path | None = None
    verdicts_path: Path | None = None

    def summary(self) -> str:
        st = ", ".join(f"{s.value} {self.statuses.get(s, 0)}" for s in
                       (AuditStatus.CONFIRMED, AuditStatus.REMAPPED, AuditStatus.UNMAPPABLE, AuditStatus.DISPUTED))
        lines = [f"audited {self.steps} steps: {st}" + (f" ({self.adjudicated} by human adjudication)" if self.adjudicated else "")]
        if self.kept:
            lines.append(f"  kept the earlier outcome of {self.kept} steps whose panel lost a vote to a failed call")
        for judge in sorted(self.votes):
            c = self.votes[judge]
            lines.append(f"  judge {judge}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        for pair, (same, both) in sorted(self.agreement.items()):
            lines.append(f"  agreement {pair}: {same}/{both}" + (f" = {same / both:.2f}" if both else ""))
        lines.append(f"requests sent {self.requests}, cached answers {self.cache_hits}")
        if self.stale_steps:
            lines.append(f"{self.stale_steps} steps have stale verdicts (a guide changed after the audit); "
                         f"the next audit will make {self.next_calls} calls")
        if self.partial:
            lines.append("PARTIAL audit, written beside the audit file: " + "; ".join(self.problems))
        return "\n".join(lines)


def pairwise_agreement(verdicts: dict[str, list[AuditVerdict]]) -> dict[str, tuple[int, int]]:
    """Per judge pair ``"a~b"``: ``(steps with the same verdict, steps where both voted)``."""
    out: dict[str, list[int]] = {}
    for row in verdicts.values():
        for i, a in enumerate(row):
            for b in row[i + 1 :]:
                key = "~".join(sorted((a.judge, b.judge)))
                cell = out.setdefault(key, [0, 0])
                if a.vote is None or b.vote is None:
                    continue
                cell[1] += 1
                cell[0] += (a.vote, a.element_id) == (b.vote, b.element_id)
    return {k: (v[0], v[1]) for k, v in out.items()}


def tally(report: AuditReport, verdicts: dict[str, list[AuditVerdict]]) -> None:
    """Count ``verdicts`` into ``report``: votes (and no-vote reasons) per judge, pairwise agreement."""
    for row in verdicts.values():
        for v in row:
            report.votes[v.judge][v.vote.value if v.vote else f"no_vote:{v.error}"] += 1
    report.agreement = pairwise_agreement(verdicts)


__all__ = [
    "DECIDED", "PANEL_SIZE", "PROMPT_VERSION", "Adjudications", "AuditItem", "AuditReport", "AuditVerdict",
    "Vote", "audit_records", "make_record", "merge_verdicts", "pairwise_agreement", "parse_verdict", "tally",
]
