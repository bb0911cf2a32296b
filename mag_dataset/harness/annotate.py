"""LLM-assisted guide drafting, and human decisions written back into the corpus.

Holds the drafting prompt and run (requests through :mod:`mag_dataset.harness.llm_batch`)
and :func:`apply_decisions` / :func:`apply_adjudications`; not the decision database
(:mod:`mag_dataset.harness.annotation_store`) nor the app
(:mod:`mag_dataset.harness.annotate_app`).

MAG (arXiv 2607.10079) writes gold guides with LLM assistance and human verification:
an LLM drafts one guide per step from what the annotator sees, and a person accepts,
edits or rejects each draft in the verification app (:mod:`mag_dataset.harness.annotate_app`).

Drafting (``mag draft-guides``)
    For every step, an OpenAI-compatible endpoint (:class:`mag_dataset.llm_client.ChatClient`)
    receives :data:`DRAFT_SYSTEM_PROMPT` and a user message with the step's Set-of-Mark
    screenshot and :func:`draft_user_text` (task intent, earlier guides, the gold action and
    its target element). Its answer, cleaned by :func:`clean_draft` to one sentence, is the
    draft. Answers are cached by request hash, so redrafting costs no requests; drafts are
    stored in ``RAW/guide_drafts.jsonl`` (``step_id``, ``draft``, ``model``,
    ``prompt_version``). The checks of :mod:`mag_dataset.harness.preflight` run first
    (screenshots, API key, endpoint, then one request alone); a run in which more than
    :data:`~mag_dataset.harness.preflight.MAX_FAILED_SHARE` of the calls failed, or that
    drafted nothing at all, stops with the first error (HTTP status included) and writes
    no file.

Verification (``mag annotate``)
    Every annotator's response lives in a SQLite database (``RAW/annotations.sqlite`` by
    default; append-only, so the app can be closed and resumed at any time and nobody's
    answer replaces another's: :mod:`mag_dataset.harness.annotation_store`). :func:`apply_decisions` writes each step's *resolved* decision (the
    store's rule, not the last writer) back into the raw episodes:

    * accept → the draft becomes the guide, ``guide_source = "llm"`` (a step without an LLM
      draft shows its current guide; accepting it keeps its source);
    * edit → the edited text becomes the guide, ``guide_source = "human"``;
    * reject → the step keeps (or gets back) the guide it had before annotation.

    Each decided step's metadata gets ``verified_by`` (the deciding annotators, joined by
    ``", "``), ``verification`` (accept / edit / reject), ``guide_decision`` (accepted /
    edited / rejected: a rejected draft stays visible as rejected though the step keeps its
    original guide), ``decided_at`` and ``verification_notes`` (when there are notes). A
    step whose annotators disagree keeps the guide it had before annotation, with
    ``guide_decision = "disputed"`` and no ``verified_by``, until it is adjudicated.

Adjudication
    The same database holds human resolutions of disputed audit steps
    (:meth:`AnnotationStore.adjudicate`); :func:`apply_adjudications` writes them into the
    audit file and :func:`mag_dataset.harness.audit.run_audit` re-applies them on every rerun.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from mag_dataset.actions import ACTION_SPACE
from mag_dataset.fileio import atomic_write_jsonl, read_jsonl
from mag_dataset.harness.annotation_store import AnnotationStore
from mag_dataset.annotation_rules import DECISION_WORDS
from mag_dataset.harness.audit_rules import make_record
from mag_dataset.harness.llm_batch import ask_batch, som_messages
from mag_dataset.harness.preflight import (
    MAX_FAILED_SHARE,
    EndpointFailedError,
    check_endpoints,
    check_failures,
    check_images,
    describe,
)
from mag_dataset.llm_client import ChatClient, LLMError
from mag_dataset.raw import (
    AUDIT_FILE,
    RawEpisode,
    RawStep,
    iter_episode_dirs,
    read_audit,
    read_episode,
    rewrite_episode_json,
    som_image_bytes,
    som_image_path,
    step_id,
    write_audit,
)
from mag_dataset.schema import AuditStatus, GuideSource

PROMPT_VERSION = 1
#: The step metadata :func:`apply_decisions` owns (rewritten from the resolution each time).
PROVENANCE_KEYS = ("verified_by", "verification", "guide_decision", "decided_at", "verification_notes")
DRAFTS_FILE = "guide_drafts.jsonl"
MAX_DRAFT_CHARS = 300

DRAFT_SYSTEM_PROMPT = """\
You write guides for a digital adoption platform: short instructions overlaid on a web page that \
tell a user what to do next to complete their task. You see a screenshot of the page with numbered \
Set-of-Mark boxes, the user's task, the guides already shown for the earlier steps, and the action \
the user must take now (with the element it acts on).

Write the guide for this action: one imperative sentence of about 8 to 20 words that names the \
target the way it reads on screen (its label or visible text), includes any text to type or option \
to choose, and says nothing about element ids, boxes or coordinates. Answer with the sentence only."""

def _action_text(step: RawStep) -> str:
    a = step.action
    parts = [a.type.value]
    for name in ("text", "value", "direction", "key", "url", "answer"):
        v = getattr(a, name)
        if v is not None:
            parts.append(f"{name}={json.dumps(v, ensure_ascii=False)}")
    return " ".join(parts)


def target_of(step: RawStep) -> Any:
    """The candidate the gold action acts on, or None."""
    return next((c for c in step.candidates if c.id == step.action.element_id), None)


def describe_action(step: RawStep) -> str:
    """The gold action in words, as shown to the drafting model and to annotators."""
    text = _action_text(step)
    if not ACTION_SPACE[step.action.type].targeted:
        return text
    t = target_of(step)
    if t is not None:
        return f"{text} on element [{t.id}] ({t.role} {json.dumps(t.text, ensure_ascii=False)})"
    if step.action.coordinate is not None:
        x, y = step.action.coordinate
        return f"{text} at point ({x:g}, {y:g})"
    return text


def draft_user_text(episode: RawEpisode, step: RawStep) -> str:
    """The text part of the drafting prompt for one step."""
    previous = [s.guide for s in episode.steps[: step.step_index]]
    lines = [
        f"Task: {episode.intent}",
        "Guides already shown:" if previous else "Guides already shown: (none, this is the first step)",
        *[f"{i + 1}. {g}" for i, g in enumerate(previous)],
        f"Action to take now: {describe_action(step)}",
        "Guide:",
    ]
    return "\n".join(lines)


def draft_messages(episode: RawEpisode, step: RawStep, som_png: bytes) -> list[dict[str, Any]]:
    """The chat messages sent to draft one step's guide."""
    return som_messages(DRAFT_SYSTEM_PROMPT, som_png, draft_user_text(episode, step))


def clean_draft(text: str) -> str | None:
    """One clean sentence from a model answer, or None when nothing usable is left.

    Keeps the first non-empty line, drops a ``Guide:`` prefix and wrapping quotes, collapses
    whitespace and cuts at :data:`MAX_DRAFT_CHARS`.
    """
    for line in text.strip().splitlines():
        s = " ".join(line.split())
        if s.lower().startswith("guide:"):
            s = s[6:].strip()
        if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'`":
            s = s[1:-1].strip()
        if s:
            return s[:MAX_DRAFT_CHARS]
    return None


@dataclass(frozen=True)
class Draft:
    step_id: str
    draft: str
    model: str
    prompt_version: int = PROMPT_VERSION

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def read_drafts(path: str | os.PathLike) -> dict[str, Draft]:
    """Read a drafts file: ``step_id -> Draft``.

    Raises:
        ValueError: naming the line of a malformed entry.
    """
    drafts = read_jsonl(path, lambda d: Draft(d["step_id"], str(d["draft"]), str(d.get("model", "")),
                                              int(d.get("prompt_version", 0))), "draft")
    return {d.step_id: d for d in drafts}


def write_drafts(path: str | os.PathLike, drafts: dict[str, Draft]) -> None:
    """Write a drafts file atomically, sorted by step id."""
    atomic_write_jsonl(path, (drafts[sid].to_json() for sid in sorted(drafts)), ensure_ascii=False, sort_keys=True)


class DraftingFailedError(EndpointFailedError):
    """Drafting failed too often to be worth writing; nothing was written."""


@dataclass
class DraftReport:
    steps: int = 0
    drafted: int = 0
    empty: int = 0
    failed: int = 0
    requests: int = 0
    cache_hits: int = 0
    path: Path | None = None

    def summary(self) -> str:
        return (
            f"{self.drafted} drafts for {self.steps} steps ({self.empty} empty answers, {self.failed} failed calls); "
            f"requests sent {self.requests}, cached answers {self.cache_hits}; wrote {self.path}"
        )


def draft_guides(
    raw_dir: str | os.PathLike,
    client: ChatClient,
    *,
    out_path: str | os.PathLike | None = None,
    sources: tuple[str, ...] = ("template",),
    progress: Callable[[str], None] | None = None,
    chunk_size: int = 64,
) -> DraftReport:
    """Draft a guide for every step whose guide comes from one of ``sources``.

    Args:
        raw_dir: the raw corpus.
        client: the drafting endpoint (its cache makes redrafting free).
        out_path: drafts file (default ``raw_dir/guide_drafts.jsonl``); drafts of other steps
            already there are kept.
        sources: which steps to draft, by current ``guide_source``.
        progress: called with one line per stage.

    Returns:
        A :class:`DraftReport`.

    Raises:
        LLMConfigError: the endpoint is misconfigured (missing key, HTTP 401/403/404).
        PreflightError: a screenshot is unreadable or the endpoint unreachable (nothing sent).
        DraftingFailedError: the first request failed, more than
            :data:`~mag_dataset.harness.preflight.MAX_FAILED_SHARE` of the calls failed, or
            no draft came back at all; nothing is written.
    """
    raw_dir = Path(raw_dir)
    out = Path(out_path) if out_path is not None else raw_dir / DRAFTS_FILE
    items = _draft_items(raw_dir, sources)
    if items:
        check_images(som_image_path(folder, st) for _, _, st, folder in items)
        check_endpoints([("drafting endpoint", client)])
    if progress:
        progress(f"drafting {len(items)} guides with {client.model}")

    def messages(k: int) -> list[dict[str, Any]]:
        _, ep, st, folder = items[k]
        return draft_messages(ep, st, som_image_bytes(folder, st))  # recorded, or rendered (raw format v2)

    def down(_: str, e: LLMError) -> DraftingFailedError:
        return DraftingFailedError(f"the drafting endpoint is down: its first request failed ({describe(e)}); "
                                   f"no other request was sent and {out.name} was not written")

    answers = ask_batch([("drafter", client)], len(items), messages, who=lambda _: None, down=down,
                        chunk_size=chunk_size)["drafter"]
    failures = [describe(a) for a in answers if isinstance(a, LLMError)]
    problem = check_failures("drafting endpoint", failures, len(items))
    if problem:
        raise DraftingFailedError(f"{problem} (the limit is {MAX_FAILED_SHARE:.0%}); {out.name} was not written. "
                                  "Answers received are cached: rerun when the endpoint is back")
    drafts = read_drafts(out) if out.is_file() else {}
    report = DraftReport(steps=len(items), path=out)
    _add_drafts(drafts, report, [sid for sid, *_ in items], answers, client.model)
    if items and not report.drafted:
        first = f" (first failure: {failures[0]})" if failures else ""
        raise DraftingFailedError(f"no usable draft for any of the {len(items)} steps: {report.empty} empty answers, "
                                  f"{report.failed} failed calls{first}; {out.name} was not written")
    report.requests, report.cache_hits = client.stats["requests"], client.stats["cache_hits"]
    out.parent.mkdir(parents=True, exist_ok=True)
    write_drafts(out, drafts)
    return report


def _draft_items(raw_dir: Path, sources: tuple[str, ...]) -> list[tuple[str, RawEpisode, RawStep, Path]]:
    """``(step_id, episode, step, folder)`` of every step whose guide comes from one of ``sources``."""
    wanted = {GuideSource(s) for s in sources}
    items: list[tuple[str, RawEpisode, RawStep, Path]] = []
    for folder in iter_episode_dirs(raw_dir):
        ep = read_episode(folder)
        items.extend((step_id(ep.task_id, st.step_index), ep, st, folder) for st in ep.steps if st.guide_source in wanted)
    return items


def _add_drafts(drafts: dict[str, Draft], report: DraftReport, step_ids: list[str], answers: list[Any], model: str) -> None:
    """Clean each answer into ``drafts`` and count drafted / empty / failed steps into ``report``."""
    for sid, ans in zip(step_ids, answers):
        if isinstance(ans, LLMError):
            report.failed += 1
            continue
        text = clean_draft(ans)
        if text is None:
            report.empty += 1
            continue
        drafts[sid] = Draft(sid, text, model)
        report.drafted += 1


def _steps(raw_dir: Path) -> Iterator[tuple[Path, RawEpisode]]:
    for folder in iter_episode_dirs(raw_dir):
        yield folder, read_episode(folder)


def apply_decisions(raw_dir: str | os.PathLike, store: AnnotationStore, episode_ids: set[str] | None = None) -> int:
    """Write verification decisions back into the raw episodes (idempotent).

    Args:
        raw_dir: the raw corpus.
        store: the decisions.
        episode_ids: only these episodes (default all).

    Returns:
        The number of episodes rewritten.
    """
    resolutions = store.resolutions("verify")
    originals = store.originals()
    changed = 0
    for folder, ep in _steps(Path(raw_dir)):
        if episode_ids is not None and ep.episode_id not in episode_ids:
            continue
        steps = []
        for st in ep.steps:
            sid = step_id(ep.task_id, st.step_index)
            res = resolutions.get(sid)
            if res is None:
                steps.append(st)
                continue
            meta = {k: v for k, v in st.metadata.items() if k not in PROVENANCE_KEYS}
            guide, source = originals.get(sid, (st.guide, st.guide_source.value))
            if not res.resolved:  # disputed: the guide it had before annotation until someone adjudicates
                meta["guide_decision"] = "disputed"
                steps.append(dataclasses.replace(st, guide=guide, guide_source=GuideSource(source), metadata=meta))
                continue
            meta.update({"verified_by": ", ".join(res.verified_by), "verification": res.decision,
                         "guide_decision": DECISION_WORDS[res.decision], "decided_at": res.decided_at})
            if res.notes:
                meta["verification_notes"] = "; ".join(res.notes)
            if res.decision == "accept":
                st = dataclasses.replace(st, guide=res.guide, guide_source=GuideSource(res.draft_source), metadata=meta)
            elif res.decision == "edit":
                st = dataclasses.replace(st, guide=res.guide, guide_source=GuideSource.HUMAN, metadata=meta)
            else:
                st = dataclasses.replace(st, guide=guide, guide_source=GuideSource(source), metadata=meta)
            steps.append(st)
        new = dataclasses.replace(ep, steps=tuple(steps))
        if new.to_json() != ep.to_json():
            rewrite_episode_json(folder, new)
            changed += 1
    return changed


def apply_adjudications(raw_dir: str | os.PathLike, store: AnnotationStore, audit_path: str | os.PathLike | None = None) -> int:
    """Write resolved human adjudications into the audit file (flags kept). Returns records changed.

    A step whose adjudicators disagree goes back to ``disputed`` (no one's answer stands).

    Raises:
        ValueError: an adjudicated step is not in the corpus, or its remap target is not
            in the step's candidate menu.
    """
    raw_dir = Path(raw_dir)
    path = Path(audit_path) if audit_path is not None else raw_dir / AUDIT_FILE
    adj = store.adjudications()
    split = store.needs_adjudication("adjudicate")  # adjudicators disagree: the step is disputed again
    if not adj and not split:
        return 0
    records = read_audit(path) if path.is_file() else {}
    steps = {step_id(ep.task_id, st.step_index): st for _, ep in _steps(raw_dir) for st in ep.steps}
    out = dict(records)
    for sid, a in adj.items():
        st = steps.get(sid)
        if st is None:
            raise ValueError(f"adjudicated step {sid!r} is not in {raw_dir}")
        if a.status is AuditStatus.REMAPPED and a.element_id not in {c.id for c in st.candidates}:
            raise ValueError(f"step {sid}: adjudicated remap to {a.element_id!r}, which is not in the candidate menu")
        out[sid] = make_record(st, a.status, a.element_id, records.get(sid), adjudicated_by=a.annotator)
    for sid in split:
        rec, st = records.get(sid), steps.get(sid)
        if rec is not None and rec.adjudicated_by and st is not None:
            out[sid] = make_record(st, AuditStatus.DISPUTED, None, rec)
    changed = sum(out.get(s) != records.get(s) for s in out)
    if changed:
        write_audit(path, out)
    return changed
