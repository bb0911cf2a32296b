"""The app's data for human verification and adjudication: :class:`Session` (no Gradio).

The Gradio layout (:mod:`mag_dataset.harness.annotate_app`) shows what a :class:`Session`
returns and calls its methods; everything it knows about the corpus, the drafts, the audit
and the people's decisions is here, so it is testable without a browser and the store's
rules (:mod:`mag_dataset.harness.annotation_store`) are applied in one place. The decision
rules and the write-back into episodes are :mod:`mag_dataset.harness.annotate`'s.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.fileio import atomic_write_jsonl
from mag_dataset.harness.annotate import (
    DRAFTS_FILE,
    AnnotationStore,
    apply_adjudications,
    apply_decisions,
    describe_action,
    read_drafts,
)
from mag_dataset.harness.annotation_store import DEFAULT_DB
from mag_dataset.annotation_rules import Agreement, agreement
from mag_dataset.harness.audit import VERDICTS_FILE, AuditItem, audit_staleness, read_audit_verdicts
from mag_dataset.raw import (
    AUDIT_FILE,
    RawEpisode,
    RawStep,
    iter_episode_dirs,
    read_audit,
    read_episode,
    som_image_bytes,
    step_id,
)
from mag_dataset.schema import AuditStatus


@dataclass(frozen=True)
class _Ref:
    step_id: str
    folder: Path
    index: int
    site: str = ""


_DONE = {"accept": "accepted", "edit": "edited", "reject": "rejected"}


class Session:
    """The app's data: the corpus, drafts, audit and decisions (no Gradio here, testable).

    Args:
        raw_dir: the raw corpus (episodes are rewritten as decisions are made).
        drafts_path: drafts file (default ``RAW/guide_drafts.jsonl`` if present).
        db_path: decision database (default ``RAW/annotations.sqlite``).
        audit_path: audit file (default ``RAW/audit.jsonl``).
    """

    def __init__(self, raw_dir: str | os.PathLike, drafts_path: str | os.PathLike | None = None,
                 db_path: str | os.PathLike | None = None, audit_path: str | os.PathLike | None = None):
        self.raw_dir = Path(raw_dir)
        if not self.raw_dir.is_dir():
            raise FileNotFoundError(f"raw corpus folder not found: {self.raw_dir}")
        dp = Path(drafts_path) if drafts_path is not None else self.raw_dir / DRAFTS_FILE
        if drafts_path is not None and not dp.is_file():
            raise FileNotFoundError(f"drafts file not found: {dp}")
        self.drafts = read_drafts(dp) if dp.is_file() else {}
        self.audit_path = Path(audit_path) if audit_path is not None else self.raw_dir / AUDIT_FILE
        self.store = AnnotationStore(Path(db_path) if db_path is not None else self.raw_dir / DEFAULT_DB)
        self.refs: list[_Ref] = []
        for folder in iter_episode_dirs(self.raw_dir):
            ep = read_episode(folder)
            self.refs.extend(_Ref(step_id(ep.task_id, s.step_index), folder, s.step_index, ep.site) for s in ep.steps)
        if not self.refs:
            raise ValueError(f"{self.raw_dir} holds no episodes")
        self.by_id = {r.step_id: r for r in self.refs}
        self._log: tuple[float, dict] | None = None  # (mtime, verdicts) of the verdict log
        self._next_calls: dict[str, tuple[bool, int]] | None = None  # step id -> (stale, calls)

    def close(self) -> None:
        self.store.close()

    def load(self, i: int) -> tuple[RawEpisode, RawStep]:
        ref = self.refs[i]
        ep = read_episode(ref.folder)
        return ep, ep.steps[ref.index]

    def draft(self, i: int) -> str:
        """The draft shown for step ``i``: its LLM draft, or the guide it had before annotation."""
        sid = self.refs[i].step_id
        if sid in self.drafts:
            return self.drafts[sid].draft
        return self.original(i)[0]

    def original(self, i: int) -> tuple[str, str]:
        """``(guide, guide_source)`` of step ``i`` before any decision (what Reject restores)."""
        orig = self.store.originals().get(self.refs[i].step_id)
        if orig:
            return orig
        st = self.load(i)[1]
        return st.guide, st.guide_source.value

    def index(self, sid: str) -> int:
        """The position of step ``sid`` (for a jump to a step id).

        Raises:
            ValueError: no such step in the corpus.
        """
        ref = self.by_id.get(sid.strip())
        if ref is None:
            raise ValueError(f"no step {sid.strip()!r} in {self.raw_dir}")
        return self.refs.index(ref)

    def first_undecided(self, annotator: str | None = None) -> int:
        """The first step of ``annotator``'s queue when they have assigned steps left, else
        the first step nobody has answered (0 when every step has an answer)."""
        if annotator and annotator.strip():
            queue = self.queue(annotator)
            if queue:
                return queue[0]
        answered = {r.step_id for r in self.store.responses(kind="verify")}
        return next((i for i, r in enumerate(self.refs) if r.step_id not in answered), 0)

    # -- the team: versions, queues, progress, agreement ----------------------------------

    def version(self, i: int) -> int:
        """Step ``i``'s version: pass it back as ``seen_version`` with a decision on this view."""
        return self.store.step_version(self.refs[i].step_id)

    def to_verify(self) -> list[str]:
        """The steps to verify: those with an LLM draft (every step when there are no drafts)."""
        if not self.drafts:
            return [r.step_id for r in self.refs]
        return [r.step_id for r in self.refs if r.step_id in self.drafts]

    def queue(self, annotator: str) -> list[int]:
        """Positions of the steps assigned to ``annotator`` still without their answer, in corpus order."""
        left = set(self.store.queue(annotator))
        return [i for i, r in enumerate(self.refs) if r.step_id in left]

    def progress(self, annotator: str | None = None) -> str:
        """``"M of N verified"``: ``annotator``'s (M of their N assigned steps answered) or,
        without one, everybody's (M of the N steps to verify with a resolved decision). "M of N
        to verify" read as M still to do: 4 of 4 to verify beside an empty queue."""
        counts = self.store.progress(self.to_verify())
        key = annotator.strip() if annotator and annotator.strip() in counts else ""
        if annotator and annotator.strip() and not key:  # someone with no answer and no assignment yet
            return f"0 of {len(self.to_verify())} verified"
        m, n = counts[key]
        return f"{m} of {n} verified"

    def guide_disputes(self) -> list[str]:
        """Steps whose verifications disagree (to adjudicate by a response in a new round)."""
        split = set(self.store.needs_adjudication("verify"))
        return [r.step_id for r in self.refs if r.step_id in split]

    def agreement(self) -> Agreement:
        """Agreement on the overlap, overall, per annotator pair and per site."""
        return agreement(self.store.responses(), lambda sid: self.by_id[sid].site if sid in self.by_id else "?")

    def assign(self, annotators: list[str], overlap: float, seed: int, *, force: bool = False) -> list[str]:
        """Split the steps to verify among ``annotators`` (:meth:`AnnotationStore.assign`).

        Returns:
            The split in words, one line per annotator and one for the overlap.

        Raises:
            ValueError: see :meth:`AnnotationStore.assign`.
        """
        plan = self.store.assign(self.to_verify(), annotators, overlap, seed, force=force)
        shared = [who for who in plan.values() if len(who) == 2]
        lines = [f"assigned {len(plan)} steps to verify among {len(annotators)} annotators "
                 f"(seed {seed}); {len(shared)} of them to two annotators (overlap {overlap:g})"]
        for who in dict.fromkeys(a.strip() for a in annotators):
            mine = sum(who in names for names in plan.values())
            lines.append(f"  {who}: {mine} steps, {sum(who in pair for pair in shared)} shared")
        pairs: dict[tuple[str, ...], int] = {}
        for pair in shared:
            pairs[tuple(sorted(pair))] = pairs.get(tuple(sorted(pair)), 0) + 1
        lines += [f"  overlap {a} × {b}: {n} steps" for (a, b), n in sorted(pairs.items())]
        return lines

    def report(self) -> list[str]:
        """Progress, resolutions and agreement as text lines (``mag annotate --report``)."""
        counts = self.store.progress(self.to_verify())
        m, n = counts.pop("")
        res = self.store.resolutions("verify")
        wanted = set(self.to_verify())
        by_status: dict[str, int] = {}
        for sid in wanted:
            st = res[sid].status if sid in res else "undecided"
            by_status[st] = by_status.get(st, 0) + 1
        lines = [f"{self.raw_dir}: {m} of {n} steps to verify decided ("
                 + ", ".join(f"{k} {by_status.get(k, 0)}" for k in ("undecided", "decided", "needs_adjudication",
                                                                       "adjudicated")) + ")"]
        lines += [f"  {who}: {a} of {b} verified" for who, (a, b) in counts.items()]
        queue_total = {who: len(self.store.queue(who)) for who in counts if self.store.assignments()}
        lines += [f"  {who}: {q} left in their queue" for who, q in queue_total.items()]
        return lines + self.agreement().lines()

    def export(self, path: str | os.PathLike) -> int:
        """Write every response, oldest first, as JSONL (atomically). Returns how many."""
        rows = [{**r.to_json(), "site": self.by_id[r.step_id].site if r.step_id in self.by_id else None}
                for r in self.store.responses()]
        atomic_write_jsonl(path, rows, ensure_ascii=False, sort_keys=True)
        return len(rows)

    def resolve_dispute(self, i: int, decision: str, text: str, annotator: str, *, seen_version: int | None = None,
                        note: str = "") -> None:
        """Adjudicate step ``i``'s disagreeing verifications: the answer opens the next round and
        decides the step, whoever gives it (one of the disagreeing annotators too).

        Raises:
            ValueError: the step's verifications do not disagree; see :meth:`decide`.
        """
        res = self.store.resolution(self.refs[i].step_id)
        if res.status != "needs_adjudication":
            raise ValueError(f"step {self.refs[i].step_id} has no disagreement to adjudicate ({res.status})")
        self.decide(i, decision, text, annotator, seen_version=seen_version, note=note, round=res.round + 1)

    def decide(self, i: int, decision: str, text: str, annotator: str, *, seen_version: int | None = None,
               note: str = "", round: int | None = None) -> None:
        """Record ``annotator``'s decision on step ``i`` and write the step's resolution into the raw episode.

        Args:
            seen_version: :meth:`version` of the view the decision was made on (``None``:
                the current one, no stale-view check).
            note: the annotator's note (it reaches the built dataset's ``verification_notes``).
            round: the response's round (default: the store's rule; :meth:`resolve_dispute`).

        Raises:
            StaleView: someone answered the step since ``seen_version`` (nothing written).
            ValueError: an unknown decision, an empty edit or no annotator name.
        """
        ep, st = self.load(i)
        sid = self.refs[i].step_id
        draft = self.draft(i)
        original = self.store.originals().get(sid, (st.guide, st.guide_source.value))
        if decision == "edit":
            same = " ".join(text.split())
            if same == " ".join(draft.split()):
                decision = "accept"
            elif same == " ".join(original[0].split()):
                decision = "reject"  # the box of a rejected step holds the original guide
        guide = {"accept": draft, "edit": text, "reject": original[0]}.get(decision, text)
        source = "llm" if sid in self.drafts else original[1]
        self.store.decide(sid, decision, guide, draft, annotator, original, draft_source=source,
                          seen_version=seen_version, note=note, round=round)
        apply_decisions(self.raw_dir, self.store, {ep.episode_id})
        if self._next_calls is not None:  # a guide change can only make this episode's verdicts stale
            for r in self.refs:
                if r.folder == self.refs[i].folder:
                    self._next_calls.pop(r.step_id, None)

    # -- audit state --------------------------------------------------------------------

    def _verdicts(self) -> dict:
        path = self.audit_path.with_name(VERDICTS_FILE)
        mtime = path.stat().st_mtime if path.is_file() else -1.0
        if self._log is None or self._log[0] != mtime:  # the audit ran again: reread, recompute
            self._log = (mtime, read_audit_verdicts(path) if mtime >= 0 else {})
            self._next_calls = None
        return self._log[1]

    def _step_calls(self, sid: str) -> tuple[bool, int]:
        verdicts = self._verdicts()
        if self._next_calls is None:
            self._next_calls = {}
        if sid not in self._next_calls:
            ref = self.by_id[sid]
            ep = read_episode(ref.folder)
            item = AuditItem(sid, ep, ep.steps[ref.index], ref.folder)
            st = audit_staleness(self.raw_dir, verdicts=verdicts, index={sid: item}, step_ids=[sid])
            self._next_calls[sid] = (bool(st.stale), st.calls)
        return self._next_calls[sid]

    def next_audit_calls(self) -> int:
        """Calls the next audit will make for the steps in the verdict log (stale or failed)."""
        return sum(self._step_calls(sid)[1] for sid in self._verdicts() if sid in self.by_id)

    def audit_line(self, i: int) -> str:
        """The step's audit status, its screenshot's stale flag and whether its verdicts are stale."""
        sid = self.refs[i].step_id
        st = self.load(i)[1]
        rec = (read_audit(self.audit_path) if self.audit_path.is_file() else {}).get(sid)
        if rec is None:
            status = "not audited"
        else:
            status = rec.status.value + (f" → [{rec.element_id}]" if rec.element_id else "")
            if rec.adjudicated_by:
                status += f" (adjudicated by {rec.adjudicated_by})"
        stale_shot = st.stale or (rec is not None and rec.stale)
        line = f"**Audit:** {status} · **screenshot stale:** {'yes' if stale_shot else 'no'}"
        if sid in self._verdicts():
            stale, _ = self._step_calls(sid)
            if stale:
                line += (" · **verdicts stale**: a guide changed after the audit, "
                         f"the next audit will make {self.next_audit_calls()} calls")
            else:
                line += " · verdicts current"
        return line

    # -- views ---------------------------------------------------------------------------

    def view(self, i: int) -> dict[str, Any]:
        """Everything the verify tab shows for step ``i``."""
        ep, st = self.load(i)
        sid = self.refs[i].step_id
        res = self.store.resolution(sid)
        decisions = self.store.decisions()
        d = decisions.get(sid) if res.resolved else None
        decided = sum(r.step_id in decisions for r in self.refs)
        status = f"**Step {i + 1} / {len(self.refs)}** · `{sid}` · {decided} decided · "
        if res.status == "needs_adjudication":
            status += "disputed: " + "; ".join(r.describe() for r in res.responses if r.round == res.round)
        else:
            status += "undecided" if d is None else f"{_DONE[d.decision]} by {d.annotator}"
        status += f" · {self.progress()}"
        previous = "\n".join(f"{k + 1}. {s.guide}" for k, s in enumerate(ep.steps[: st.step_index])) or "(first step)"
        a = st.action
        point = ""
        if a.coordinate is not None and a.element_id is None:
            point = f"\n\n**Point-only step:** the recorded point ({a.coordinate[0]:g}, {a.coordinate[1]:g}) is marked in red"
        context = (
            f"**Task:** {ep.intent}\n\n**Earlier guides:**\n\n{previous}\n\n"
            f"**Gold action:** `{describe_action(st)}`{point}"
        )
        original = self.original(i)
        draft_from = "LLM draft" if sid in self.drafts else f"no LLM draft: the current guide ({original[1]})"
        guides = (
            f"**Draft** ({draft_from}): {self.draft(i)}\n\n"
            f"**Original** (Reject restores it; {original[1]}): {original[0]}\n\n"
            f"**Result** ({st.guide_source.value}" + (f", {_DONE[d.decision]}" if d else ", undecided") + f"): {st.guide}"
        )
        text = st.guide if d is not None else self.draft(i)
        return {"status": status, "image": self.image_or_none(i), "context": context, "guides": guides,
                "audit": self.audit_line(i), "guide": text, "version": self.version(i), "resolution": res.status}

    def image_or_none(self, i: int) -> Any:
        """:meth:`image`, or ``None`` for a step imported without a screenshot (the app
        shows the step, with a line naming ``mag recapture``, rather than failing)."""
        from mag_dataset.raw import RawDataError

        try:
            return self.image(i)
        except RawDataError:
            return None

    def image(self, i: int) -> Any:
        """The Set-of-Mark screenshot; a point-only step gets its recorded point drawn in red."""
        from PIL import Image, ImageDraw

        _, st = self.load(i)
        with Image.open(io.BytesIO(som_image_bytes(self.refs[i].folder, st))) as img:  # recorded or rendered (v2)
            out = img.convert("RGB")
        a = st.action
        if a.coordinate is not None and a.element_id is None:
            x, y = a.coordinate
            r = max(4, min(out.size) // 40)
            d = ImageDraw.Draw(out)
            d.ellipse((x - r, y - r, x + r, y + r), outline=(255, 0, 0), width=2)
            d.line((x - 2 * r, y, x + 2 * r, y), fill=(255, 0, 0), width=1)
            d.line((x, y - 2 * r, x, y + 2 * r), fill=(255, 0, 0), width=1)
        return out

    # -- adjudication ------------------------------------------------------------------

    def disputed(self) -> list[str]:
        """Steps to adjudicate: disputed in the audit file, plus those already adjudicated."""
        recs = read_audit(self.audit_path) if self.audit_path.is_file() else {}
        adj = self.store.adjudications()
        ids = {s for s, r in recs.items() if r.status is AuditStatus.DISPUTED or r.adjudicated_by} | set(adj)
        return [r.step_id for r in self.refs if r.step_id in ids]

    def disputed_choices(self) -> list[tuple[str, str]]:
        """``(label, step id)`` of :meth:`disputed`, each marked open or resolved."""
        adj = self.store.adjudications()
        recs = read_audit(self.audit_path) if self.audit_path.is_file() else {}
        out = []
        for sid in self.disputed():
            a = adj.get(sid)
            rec = recs.get(sid)
            if a is not None:
                label = f"{sid} · resolved: {a.status.value}" + (f" → [{a.element_id}]" if a.element_id else "")
            elif rec is not None and rec.adjudicated_by:
                label = f"{sid} · resolved: {rec.status.value}" + (f" → [{rec.element_id}]" if rec.element_id else "")
            else:
                label = f"{sid} · open"
            out.append((label, sid))
        return out

    def first_open(self) -> str | None:
        """The first disputed step nobody resolved yet (else None)."""
        return next((sid for label, sid in self.disputed_choices() if label.endswith("· open")), None)

    def verdict_lines(self, sid: str) -> str:
        rows = self._verdicts().get(sid, [])
        if not self._verdicts():
            return "(no verdict log)"
        out = []
        for v in rows:
            vote = (v.vote.value + (f" → [{v.element_id}]" if v.element_id else "")) if v.vote else f"no vote ({v.error})"
            out.append(f"- **{v.judge}**: {vote}" + (f" — {v.reason}" if v.reason else ""))
        return "\n".join(out) or "(no verdicts)"

    def adjudication_view(self, sid: str) -> dict[str, Any]:
        i = self.refs.index(self.by_id[sid])
        ep, st = self.load(i)
        a = self.store.adjudications().get(sid)
        menu = "\n".join(f"- [{c.id}] {c.role} “{c.text}”" for c in st.candidates)
        info = (
            (f"**Adjudicated:** {a.status.value}" + (f" → [{a.element_id}]" if a.element_id else "") + f" by {a.annotator}\n\n" if a else "**Not adjudicated yet.**\n\n")
            + f"**Task:** {ep.intent}\n\n**Recorded action:** `{describe_action(st)}`\n\n**Guide:** {st.guide}\n\n"
            f"**Judges:**\n\n{self.verdict_lines(sid)}\n\n"
            f"**Candidate menu:**\n\n{menu}"
        )
        return {"image": self.image_or_none(i), "info": info, "ids": [c.id for c in st.candidates],
                "version": self.store.step_version(sid)}

    def adjudicate(self, sid: str, status: str, element: str | None, annotator: str, note: str = "", *,
                   seen_version: int | None = None) -> None:
        """Resolve a disputed step and write the outcome into the audit file.

        ``seen_version`` as in :meth:`decide`.

        Raises:
            StaleView: someone answered the step since ``seen_version`` (nothing written).
            ValueError: an unknown step, a remap without an element or to one outside the
                menu, or no annotator name.
        """
        if sid not in self.by_id:
            raise ValueError(f"step {sid!r} is not in {self.raw_dir}")
        _, st = self.load(self.refs.index(self.by_id[sid]))
        if status == AuditStatus.REMAPPED.value:
            if not element:
                raise ValueError("pick the element to remap to")
            if element not in {c.id for c in st.candidates}:
                raise ValueError(f"step {sid}: element {element!r} is not in the candidate menu")
        self.store.adjudicate(sid, status, element, annotator, note, seen_version=seen_version)
        apply_adjudications(self.raw_dir, self.store, self.audit_path)


__all__ = ["Session"]
