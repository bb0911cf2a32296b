"""Three-judge label audit (WebMRE, arXiv 2609.27353, §3): the runner.

WebMRE audited 465 flagged steps with three judges: 225 were remapped, 128 marked
unmappable, 54 confirmed and 58 disputed; disputed test steps are excluded from
element-level scoring. This module runs that audit against any three OpenAI-compatible
endpoints (:mod:`mag_dataset.llm_client`) and writes the audit file the builder reads
(:func:`mag_dataset.raw.read_audit`). It holds the prompt, the requests, the cache and
the files; the rules it applies (answer format, parser, merge rule, records, agreement)
are pure functions in :mod:`mag_dataset.harness.audit_rules`, the judges file is read by
:mod:`mag_dataset.harness.judges`.

What a judge sees
    The step's Set-of-Mark screenshot, the task intent, the guides of the earlier steps,
    the recorded action (with its element id and/or point), the recorded guide and the
    whole candidate menu (id, role, text, box). The prompt is :data:`JUDGE_SYSTEM_PROMPT`
    plus :func:`judge_user_text`; greedy decoding.

What a judge answers
    Exactly one JSON object: ``{"verdict": "confirm"}``, ``{"verdict": "remap", "element":
    "<candidate id>"}`` or ``{"verdict": "unmappable"}`` (:func:`parse_verdict`, documented
    in :mod:`mag_dataset.harness.audit_rules`). A malformed answer counts as **no vote**,
    as does a *failed call*: a judge that times out, is unreachable or answers an HTTP
    error after its retries.

No silent downgrade
    Before the first request every screenshot is decoded and every judge's API key and
    host are checked (:mod:`mag_dataset.harness.preflight`); then each judge gets its
    first uncached request alone, and a judge that fails it is down: the audit stops
    before sending anything else. A misconfiguration (missing API key, HTTP
    401/403/404) stops it too. After the run, a judge whose calls failed on more than
    :data:`~mag_dataset.harness.preflight.MAX_FAILED_SHARE` (20%) of the audited steps
    stops the audit with a non-zero exit and **nothing is written** (answers received
    are cached, so a rerun pays only for the failed calls); with ``allow_partial`` the
    audit is written beside the old one (``audit.partial.jsonl``,
    ``audit_verdicts.partial.jsonl``) and the old files are left as they are. Below the
    threshold, a step whose panel lost a vote to a failed call never goes from an earlier
    confirmed / remapped / unmappable outcome to ``disputed``: the earlier outcome is kept
    (:attr:`AuditReport.kept`). Malformed answers are the judge's answer (cached,
    logged) and do not stop the audit.

Merge rule
    :func:`merge_verdicts` (:mod:`mag_dataset.harness.audit_rules`): all three confirm →
    ``confirmed``; two or more remap to the same element → ``remapped``; two or more
    unmappable → ``unmappable``; anything else → ``disputed``.

Caching, replay and the verify-before-audit order
    Every judge answer is cached by the client (request hash → answer), so a rerun of the
    same audit makes zero requests; failures are never cached, so a rerun asks a
    timed-out judge again. Every verdict (answer, parsed vote, or why there was no vote)
    is also logged to ``audit_verdicts.jsonl`` next to the audit file, with
    ``prompt_sha256``, the hash of the exact messages the judge saw (:func:`prompt_key`);
    :func:`replay_audit` recomputes the audit file from that log without any endpoint.

    The judge's prompt holds the step's guide and the guides of the earlier steps, so the
    request hash — the cache key — changes when a guide is verified or edited: **verify
    guides before the audit**. A guide changed after the audit makes the verdicts of its
    step and of the later steps of its episode *stale* (:func:`audit_staleness`: their
    logged ``prompt_sha256`` differs from the current prompt); the app and
    ``mag audit --raw RAW --replay`` say how many, and how many calls the next audit will make.

Human adjudication (the ``mag annotate`` app) resolves disputed steps. A resolution is
stored in the annotation database and in the audit record itself (``adjudicated_by``),
so every later audit or replay keeps it, whichever database it is given (``--db``); a
command warns when another database next to the corpus holds decisions for its steps.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mag_dataset.actions import ACTION_SPACE
from mag_dataset.cache import llm_cache_dir
from mag_dataset.fileio import atomic_write_jsonl, read_jsonl
from mag_dataset.harness.annotation_store import other_decision_dbs, stored_adjudications
from mag_dataset.harness.audit_prompt import judge_messages, prompt_key
from mag_dataset.harness.audit_rules import (
    PANEL_SIZE,
    Adjudications,
    AuditItem,
    AuditReport,
    AuditVerdict,
    audit_records,
    parse_verdict,
    tally,
)
from mag_dataset.harness.judges import JudgeConfig
from mag_dataset.harness.page_audit import MissingEvidenceError, has_page_evidence, page_verdicts
from mag_dataset.harness.llm_batch import ask_batch
from mag_dataset.harness.preflight import (
    MAX_FAILED_SHARE,
    EndpointFailedError,
    check_endpoints,
    check_failures,
    check_images,
    describe,
)
from mag_dataset.llm_client import (
    ChatClient,
    LLMError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    LLMUnavailableError,
)
from mag_dataset.raw import (  # noqa: F401 (VERDICTS_FILE re-exported)
    AUDIT_FILE,
    CORPUS_FILE,
    VERDICTS_FILE,
    RawStep,
    iter_episode_dirs,
    read_audit,
    read_episode,
    som_image_bytes,
    som_image_path,
    step_id,
    write_audit,
)



class NoVotesError(EndpointFailedError):
    """Not one judge answered usably on any step: the endpoints are down or all misbehave."""


class JudgeDownError(EndpointFailedError):
    """A judge failed its first request, or more than MAX_FAILED_SHARE of its calls; nothing was written."""


# -- steps --------------------------------------------------------------------------------


def _is_flagged(st: RawStep) -> bool:
    m = st.metadata
    return bool(st.stale or m.get("coordinate_restored") or m.get("coordinate_unrestorable") or m.get("flagged")
                or m.get("recaptured") or m.get("recapture_ended"))


def select_steps(raw_dir: str | os.PathLike, select: str = "all", split: str = "all") -> list[AuditItem]:
    """The steps an audit covers: targeted actions with a candidate menu, in corpus order.

    Args:
        raw_dir: the raw corpus.
        select: ``all`` targeted steps, or only ``flagged`` ones (as WebMRE: restored and
            recaptured steps: stale, coordinate-restored, unrestorable, recaptured, a recapture
            that ended there, or ``metadata["flagged"]``).
        split: ``all``, ``train`` or ``test`` (from ``corpus.json``).
    """
    if select not in ("all", "flagged"):
        raise ValueError(f"select must be 'all' or 'flagged', got {select!r}")
    if split not in ("all", "train", "test"):
        raise ValueError(f"split must be all, train or test, got {split!r}")
    raw_dir = Path(raw_dir)
    splits: dict[str, str] = {}
    if split != "all":
        manifest = raw_dir / CORPUS_FILE
        if not manifest.is_file():
            raise ValueError(f"--split {split} needs {manifest} (the corpus split manifest)")
        doc = json.loads(manifest.read_text("utf-8"))
        if not isinstance(doc, dict) or not isinstance(doc.get("splits"), dict):
            raise ValueError(f"--split {split} needs a split in {manifest} (it holds none: a stage record only?)")
        splits = doc["splits"]
    items = []
    for folder in iter_episode_dirs(raw_dir):
        ep = read_episode(folder)
        if split != "all" and splits.get(ep.task_id) != split:
            continue
        for st in ep.steps:
            if not ACTION_SPACE[st.action.type].targeted or not st.candidates:
                continue
            if select == "flagged" and not _is_flagged(st):
                continue
            items.append(AuditItem(step_id(ep.task_id, st.step_index), ep, st, folder))
    return items



# -- asking the judges --------------------------------------------------------------------


def _call_error(e: LLMError) -> str:
    """Why a failed call is no vote, as logged: ``timeout``, ``unavailable``, ``response`` or ``http <status>``."""
    if isinstance(e, LLMTimeoutError):
        return "timeout"
    if isinstance(e, LLMUnavailableError):
        return "unavailable"
    if isinstance(e, LLMResponseError):
        return "response"
    return f"http {e.status}" if isinstance(e, LLMHTTPError) else "http"


def _som(it: AuditItem) -> bytes:
    return som_image_bytes(it.folder, it.step)  # recorded, or rendered from the screenshot (raw format v2)


def _verdict(judge: str, answer: Any, it: AuditItem, prompt: str) -> AuditVerdict:
    """The verdict of one answer (or failed call) of ``judge`` on ``it``, with its prompt hash."""
    if isinstance(answer, LLMError):
        v = AuditVerdict(judge, None, error=_call_error(answer), reason=describe(answer))
    else:
        v = parse_verdict(judge, answer, [c.id for c in it.step.candidates], it.step.action.element_id)
    return dataclasses.replace(v, prompt=prompt)


def ask_judges(
    items: Sequence[AuditItem],
    judges: Sequence[tuple[str, ChatClient]],
    chunk_size: int = 64,
    progress: Callable[[str], None] | None = None,
    stop_when_down: bool = True,
) -> dict[str, list[AuditVerdict]]:
    """Ask every judge about every item (judges in parallel, each with its own concurrency).

    Each judge's first uncached request goes out alone (:func:`~mag_dataset.harness.llm_batch.ask_batch`).

    Args:
        items: the steps.
        judges: ``(name, client)`` pairs.
        chunk_size: steps whose screenshots are held in memory at once.
        progress: called with one line per chunk.
        stop_when_down: raise when a judge fails its first request (else it is a no vote).

    Returns:
        ``step_id -> verdicts`` in judge order.

    Raises:
        LLMConfigError: a judge is misconfigured (no API key, HTTP 401/403/404).
        JudgeDownError: a judge failed its first request (``stop_when_down``).
    """
    keys: dict[str, str] = {}

    def messages(k: int) -> list[dict[str, Any]]:
        it = items[k]
        msgs = judge_messages(it.episode, it.step, _som(it))
        if it.step_id not in keys:  # hashed once per step, however often its request is built
            keys[it.step_id] = prompt_key(msgs)
        return msgs

    def down(name: str, e: LLMError) -> JudgeDownError:
        return JudgeDownError(f"judge {name} is down: its first request failed ({describe(e)}); no other request "
                              "was sent to it and nothing was written")

    answers = ask_batch(
        judges, len(items), messages, who=lambda name: f"judge {name}", down=down if stop_when_down else None,
        chunk_size=chunk_size, progress=(lambda done: progress(f"judged {done}/{len(items)} steps")) if progress else None,
    )
    return {it.step_id: [_verdict(name, answers[name][i], it, keys[it.step_id]) for name, _ in judges]
            for i, it in enumerate(items)}


# -- running ------------------------------------------------------------------------------


def _judge_clients(judges: Sequence[JudgeConfig] | Sequence[tuple[str, ChatClient]],
                   cache_dir: str | os.PathLike | None) -> list[tuple[str, ChatClient]]:
    """``(name, client)`` of the panel (clients of JudgeConfigs cache in ``cache_dir``).

    Raises:
        ValueError: not :data:`PANEL_SIZE` judges, or two judges with one name.
    """
    if len(judges) != PANEL_SIZE:
        raise ValueError(f"the audit uses exactly {PANEL_SIZE} judges, got {len(judges)}")
    names = [j.name if isinstance(j, JudgeConfig) else j[0] for j in judges]
    if len(set(names)) != len(names):
        raise ValueError(f"judge names must be unique, got {names}")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return [(j.name, j.client(cache)) if isinstance(j, JudgeConfig) else (j[0], j[1])
            for j in judges if not (isinstance(j, JudgeConfig) and j.rule_based)]


def _rule_based_verdicts(items: Sequence[AuditItem], judges: Sequence[JudgeConfig],
                         progress: Callable[[str], None] | None) -> dict[str, list[AuditVerdict]]:
    """The rule-based judges' verdicts (:mod:`mag_dataset.harness.page_judges`), with their evidence.

    Raises:
        MissingEvidenceError: naming how many steps lack DOM fingerprints, and the first.
    """
    missing = [it for it in items if not has_page_evidence(it.step)]
    if missing:
        raise MissingEvidenceError(
            f"{len(missing)} of the {len(items)} steps to audit have no DOM fingerprints for the rule-based judges "
            f"(first: {missing[0].step_id}); give action-time steps theirs with `mag recapture --raw RAW --evidence` "
            "(a pixel-identical replay), recapture recaptured ones again (`mag recapture` stores the page they show), "
            "or audit them with endpoint judges")
    kinds = [j.kind for j in judges]
    out: dict[str, list[AuditVerdict]] = {}
    for k, it in enumerate(items):
        votes = page_verdicts(it.folder, it.step, kinds)
        out[it.step_id] = [dataclasses.replace(v, judge=j.name) for v, j in zip(votes, judges)]
        if progress and (k + 1) % 100 == 0:
            progress(f"rule-based judges: {k + 1}/{len(items)} steps")
    return out


def _require_votes(items: Sequence[AuditItem], verdicts: dict[str, list[AuditVerdict]]) -> None:
    """Raise :class:`NoVotesError` when there were steps to audit and no judge voted on any."""
    if items and not any(v.vote is not None for row in verdicts.values() for v in row):
        first = next((v for row in verdicts.values() for v in row), None)
        detail = f" (first error: {first.judge}: {first.reason or first.error})" if first is not None else ""
        raise NoVotesError(
            f"no judge gave a vote on any of the {len(items)} steps{detail}; nothing was written. "
            "Check that the endpoints are up; answers already received are cached."
        )


def _failed_judges(names: Sequence[str], verdicts: dict[str, list[AuditVerdict]], steps: int, out: Path,
                   allow_partial: bool) -> list[str]:
    """One line per judge that failed more than MAX_FAILED_SHARE of its calls.

    Raises:
        JudgeDownError: there is such a judge and ``allow_partial`` is off.
    """
    problems = [p for name in names if (p := check_failures(
        f"judge {name}", [v.reason or v.error or "" for row in verdicts.values() for v in row if v.judge == name and v.failed],
        steps))]
    if problems and not allow_partial:
        raise JudgeDownError(
            "; ".join(problems) + f" (the limit is {MAX_FAILED_SHARE:.0%} of the steps); nothing was written. Answers "
            "received are cached: rerun when the endpoint is back, or pass --allow-partial to write the audit beside "
            f"{out.name}"
        )
    return problems


def run_audit(
    raw_dir: str | os.PathLike,
    judges: Sequence[JudgeConfig] | Sequence[tuple[str, ChatClient]],
    *,
    out_path: str | os.PathLike | None = None,
    verdicts_path: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    select: str = "all",
    split: str = "all",
    adjudications: Adjudications | None = None,
    db_path: str | os.PathLike | None = None,
    allow_partial: bool = False,
    progress: Callable[[str], None] | None = None,
) -> AuditReport:
    """Run the three-judge audit over a raw corpus and write the audit file.

    Args:
        raw_dir: the raw corpus.
        judges: three :class:`JudgeConfig` (clients are made with ``cache_dir``), or
            ``(name, ChatClient)`` pairs.
        out_path: the audit file (default ``raw_dir/audit.jsonl``); records of steps not
            audited now are kept.
        verdicts_path: the verdict log (default ``audit_verdicts.jsonl`` next to ``out_path``).
        cache_dir: the answer cache (default :func:`default_cache_dir`).
        select, split: which steps (:func:`select_steps`).
        adjudications: human decisions ``step_id -> (status, element_id[, annotator])``
            applied over the judges' outcome; default: read from ``db_path``.
        db_path: the annotation database (default ``raw_dir/annotations.sqlite``).
        allow_partial: when a judge failed too many calls, write ``audit.partial.jsonl``
            (and the partial verdict log) beside the audit file instead of stopping.
        progress: called with one line per stage.

    Returns:
        An :class:`AuditReport`.

    Raises:
        LLMConfigError: a judge is misconfigured (missing API key, HTTP 401/403/404).
        PreflightError: a screenshot is unreadable or an endpoint unreachable (nothing sent).
        JudgeDownError: a judge failed its first request, or more than
            :data:`~mag_dataset.harness.preflight.MAX_FAILED_SHARE` of its calls (nothing written).
        NoVotesError: no judge voted on any step (nothing is written).
        ValueError / RawDataError: bad arguments or raw data.
    """
    raw_dir = Path(raw_dir)
    out = Path(out_path) if out_path is not None else raw_dir / AUDIT_FILE
    vpath = Path(verdicts_path) if verdicts_path is not None else out.with_name(VERDICTS_FILE)
    raw_dir = Path(raw_dir)
    out = Path(out_path) if out_path is not None else raw_dir / AUDIT_FILE
    vpath = Path(verdicts_path) if verdicts_path is not None else out.with_name(VERDICTS_FILE)
    pairs = _judge_clients(judges, cache_dir)
    rule_based = [j for j in judges if isinstance(j, JudgeConfig) and j.rule_based]
    names = [j.name if isinstance(j, JudgeConfig) else j[0] for j in judges]
    items = select_steps(raw_dir, select, split)
    if adjudications is None:
        adjudications = stored_adjudications(raw_dir, db_path)
    warnings = other_decision_dbs(raw_dir, db_path, {it.step_id for it in items}, out.parent)
    if items and pairs:
        check_images(som_image_path(it.folder, it.step) for it in items)
        check_endpoints([(f"judge {n}", c) for n, c in pairs])
    if progress:
        progress(f"auditing {len(items)} steps with judges {', '.join(names)}")
    ruled = _rule_based_verdicts(items, rule_based, progress) if rule_based else {}
    asked = ask_judges(items, pairs, progress=progress, stop_when_down=not allow_partial) if pairs else {}
    verdicts = {}
    for it in items:  # in panel order
        row = {v.judge: v for v in ruled.get(it.step_id, []) + asked.get(it.step_id, [])}
        verdicts[it.step_id] = [row[n] for n in names]
    _require_votes(items, verdicts)
    problems = _failed_judges(names, verdicts, len(items), out, allow_partial)
    existing = read_audit(out) if out.is_file() else {}
    if problems:
        out, vpath = partial_path(out), partial_path(vpath)
    records, statuses, adjudicated, kept = audit_records(items, verdicts, existing, adjudications)
    report = AuditReport(steps=len(items), statuses=statuses, adjudicated=adjudicated, kept=kept, audit_path=out,
                         verdicts_path=vpath, partial=bool(problems), problems=problems, warnings=warnings)
    tally(report, verdicts)
    for _, c in pairs:
        report.requests += c.stats["requests"]
        report.cache_hits += c.stats["cache_hits"]
    out.parent.mkdir(parents=True, exist_ok=True)
    models = {j.name: j.model_label for j in rule_based} | {n: c.model for n, c in pairs}
    _write_verdicts(vpath, items, verdicts, models)
    write_audit(out, records)
    return report


# -- files --------------------------------------------------------------------------------


def _write_verdicts(path: Path, items: Sequence[AuditItem], verdicts: dict[str, list[AuditVerdict]], models: dict[str, str]) -> None:
    rows = (v.to_json(it.step_id, models.get(v.judge, "")) for it in items for v in verdicts[it.step_id])
    atomic_write_jsonl(path, rows, ensure_ascii=False, sort_keys=True)


def read_audit_verdicts(path: str | os.PathLike) -> dict[str, list[AuditVerdict]]:
    """Read a label-audit verdict log: ``step_id -> verdicts`` in logged order.

    Raises:
        ValueError: naming the line of a malformed entry.
    """
    out: dict[str, list[AuditVerdict]] = defaultdict(list)
    for sid, v in read_jsonl(path, lambda d: (d["step_id"], AuditVerdict.from_json(d)), "verdict"):
        out[sid].append(v)
    return dict(out)



#: The LLM answer cache (``llm/`` below :func:`mag_dataset.cache.default_cache_dir`); kept
#: under its former name for ``mag draft-guides`` and user code.
default_cache_dir = llm_cache_dir


def partial_path(path: Path) -> Path:
    """Where a partial audit goes: ``audit.jsonl`` → ``audit.partial.jsonl`` (same folder)."""
    return path.with_name(f"{path.stem}.partial{path.suffix}")



# -- replay and staleness ----------------------------------------------------------------


def _corpus_items(raw_dir: Path) -> dict[str, AuditItem]:
    index = {}
    for folder in iter_episode_dirs(raw_dir):
        ep = read_episode(folder)
        for st in ep.steps:
            sid = step_id(ep.task_id, st.step_index)
            index[sid] = AuditItem(sid, ep, st, folder)
    return index


def replay_audit(
    raw_dir: str | os.PathLike,
    verdicts_path: str | os.PathLike,
    *,
    out_path: str | os.PathLike | None = None,
    adjudications: Adjudications | None = None,
    db_path: str | os.PathLike | None = None,
) -> AuditReport:
    """Recompute the audit file from a verdict log, without any endpoint.

    Every logged step must still exist in the raw corpus. The merge uses the current
    merge rule, so a replay is how a rule change is applied to old verdicts. The report
    counts the steps whose verdicts are stale (:func:`audit_staleness`).
    """
    raw_dir = Path(raw_dir)
    out = Path(out_path) if out_path is not None else raw_dir / AUDIT_FILE
    verdicts = read_audit_verdicts(verdicts_path)
    index = _corpus_items(raw_dir)
    missing = sorted(set(verdicts) - set(index))
    if missing:
        raise ValueError(f"{verdicts_path}: verdicts for {len(missing)} steps not in {raw_dir}, e.g. {missing[0]!r}")
    items = [index[s] for s in index if s in verdicts]
    existing = read_audit(out) if out.is_file() else {}
    if adjudications is None:
        adjudications = stored_adjudications(raw_dir, db_path)
    records, statuses, adjudicated, kept = audit_records(items, verdicts, existing, adjudications)
    report = AuditReport(steps=len(items), statuses=statuses, adjudicated=adjudicated, kept=kept, audit_path=out,
                         verdicts_path=Path(verdicts_path),
                         warnings=other_decision_dbs(raw_dir, db_path, set(verdicts), out.parent))
    tally(report, verdicts)
    stale = audit_staleness(raw_dir, verdicts_path, verdicts=verdicts, index=index)
    report.stale_steps, report.next_calls = len(stale.stale), stale.calls
    write_audit(out, records)
    return report


@dataclass(frozen=True)
class Staleness:
    """Which logged verdicts no longer match the corpus.

    Attributes:
        stale: step ids whose current judge prompt differs from the one their verdicts
            were given on (a guide of the step or of an earlier step changed), in log order.
        calls: calls the next audit of the logged steps will make: every judge of a stale
            step, plus every failed call (failures are never cached).
    """

    stale: tuple[str, ...] = ()
    calls: int = 0


def audit_staleness(
    raw_dir: str | os.PathLike,
    verdicts_path: str | os.PathLike | None = None,
    *,
    step_ids: Iterable[str] | None = None,
    verdicts: dict[str, list[AuditVerdict]] | None = None,
    index: dict[str, AuditItem] | None = None,
) -> Staleness:
    """Compare the verdict log with the judge prompts the corpus gives now.

    Args:
        raw_dir: the raw corpus.
        verdicts_path: the verdict log (default ``raw_dir/audit_verdicts.jsonl``); none: nothing is stale.
        step_ids: only these steps (default every logged step).
        verdicts, index: already read log and corpus (internal, saves a reread).

    Returns:
        A :class:`Staleness`. Verdicts logged without a prompt hash are never stale.
    """
    raw_dir = Path(raw_dir)
    if verdicts is None:
        path = Path(verdicts_path) if verdicts_path is not None else raw_dir / VERDICTS_FILE
        if not path.is_file():
            return Staleness()
        verdicts = read_audit_verdicts(path)
    index = index if index is not None else _corpus_items(raw_dir)
    wanted = set(step_ids) if step_ids is not None else None
    stale: list[str] = []
    calls = 0
    for sid, row in verdicts.items():
        it = index.get(sid)
        if it is None or (wanted is not None and sid not in wanted):
            continue
        logged = {v.prompt for v in row if v.prompt}
        if logged and logged != {prompt_key(judge_messages(it.episode, it.step, _som(it)))}:
            stale.append(sid)
            calls += len(row)
        else:
            calls += sum(v.failed for v in row)
    return Staleness(tuple(stale), calls)
