"""Three-judge label audit (WebMRE, arXiv 2609.27353, §3).

WebMRE audited 465 flagged steps with three judges: 225 were remapped, 128 marked
unmappable, 54 confirmed and 58 disputed; disputed test steps are excluded from
element-level scoring. This module runs that audit against any three OpenAI-compatible
endpoints (:mod:`mag_dataset.llm_client`) and writes the audit file the builder reads
(:func:`mag_dataset.raw.read_audit`).

What a judge sees
    The step's Set-of-Mark screenshot, the task intent, the guides of the earlier steps,
    the recorded action (with its element id and/or point), the recorded guide and the
    whole candidate menu (id, role, text, box). The prompt is :data:`JUDGE_SYSTEM_PROMPT`
    plus :func:`judge_user_text`; greedy decoding.

What a judge answers: exactly one JSON object, nothing else (a single ```json fence
    is tolerated)::

        {"verdict": "confirm"}
        {"verdict": "remap", "element": "<candidate id>"}
        {"verdict": "unmappable"}

    An optional ``"reason"`` string is kept in the verdict log. A remap to the recorded
    element counts as confirm. Anything else — other keys, another verdict, a remap to an
    id outside the menu, text around the object — is *malformed* and counts as **no
    vote**, as does a judge that times out, is unreachable or answers an HTTP error after
    its retries. No single judge failure stops the audit; a misconfiguration does (a
    missing API key, HTTP 401/403/404 from an endpoint), with one clear message, and so
    does a run in which no judge gave a single vote on any step (every endpoint down):
    that writes nothing, rather than an audit file marking every step disputed.

Merge rule (:func:`merge_verdicts`), over the panel of three judges:
    * all three judges confirm → ``confirmed``;
    * at least two judges remap to the same element X → ``remapped`` (the step's element id
      becomes X; the recorded one is kept in ``original_element_id``);
    * at least two judges answer unmappable → ``unmappable``;
    * anything else → ``disputed`` (including any panel with a missing vote that reaches
      none of the above: two confirms and a timeout is disputed, because "all confirm" is
      not established).

Caching and replay
    Every judge answer is cached by the client (request hash → answer), so a rerun of the
    same audit makes zero requests; failures are never cached, so a rerun asks a
    timed-out judge again. Every verdict (answer, parsed vote, or why there was no vote)
    is also logged to ``audit_verdicts.jsonl`` next to the audit file;
    :func:`replay_audit` recomputes the audit file from that log without any endpoint.

Human adjudication (the ``mag annotate`` app) resolves disputed steps; those decisions
are stored in the annotation database and re-applied on top of the judges' outcome
whenever the audit is rerun.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mag_dataset.actions import ACTION_SPACE
from mag_dataset.fileio import atomic_write_jsonl
from mag_dataset.llm_client import ChatClient, LLMConfigError, LLMError, LLMHTTPError, image_part
from mag_dataset.raw import (
    AUDIT_FILE,
    CORPUS_FILE,
    RawEpisode,
    RawStep,
    iter_episode_dirs,
    read_audit,
    read_episode,
    step_id,
    write_audit,
)
from mag_dataset.schema import AuditRecord, AuditStatus

PROMPT_VERSION = 1
VERDICTS_FILE = "audit_verdicts.jsonl"
PANEL_SIZE = 3
#: HTTP statuses that mean the judge is misconfigured, not flaky: the audit stops.
FATAL_STATUSES = frozenset({401, 403, 404})

JUDGE_SYSTEM_PROMPT = """\
You audit the gold labels of a web-agent benchmark. You see a screenshot of a web page on which every \
candidate element carries a numbered Set-of-Mark box, the user's task, the guides written for the \
earlier steps, the action that was recorded at this step and the candidate menu (id, role, text and \
box in screenshot pixels of every labelled element).

Decide whether the recorded element is the element this action should act on, on this screenshot.
Answer with exactly one JSON object and nothing else:
{"verdict": "confirm"}  - the recorded element is right;
{"verdict": "remap", "element": "<id>"}  - the action belongs to another element of the menu; give its id;
{"verdict": "unmappable"}  - no element of the menu fits the action (the target is not visible, not \
listed, or the screenshot does not show the state the action was taken in).
You may add a short "reason" string to the object."""


class NoVotesError(ValueError):
    """Not one judge answered usably on any step: the endpoints are down or all misbehave."""


class Vote(str, enum.Enum):
    CONFIRM = "confirm"
    REMAP = "remap"
    UNMAPPABLE = "unmappable"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Verdict:
    """One judge's answer on one step.

    Attributes:
        judge: the judge's name.
        vote: its vote, or None for no vote.
        element_id: the element of a remap vote, else None.
        error: why there is no vote (``timeout``, ``unavailable``, ``http``, ``malformed``,
            ``response``), else None.
        answer: the judge's raw answer text (None when the call failed).
        reason: the judge's optional reason.
    """

    judge: str
    vote: Vote | None
    element_id: str | None = None
    error: str | None = None
    answer: str | None = None
    reason: str | None = None

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
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Verdict":
        return cls(
            judge=d["judge"],
            vote=Vote(d["vote"]) if d.get("vote") else None,
            element_id=d.get("element_id"),
            error=d.get("error"),
            answer=d.get("answer"),
            reason=d.get("reason"),
        )


_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)


def parse_verdict(judge: str, text: str, candidate_ids: Iterable[str], recorded_id: str | None) -> Verdict:
    """Parse a judge's answer strictly (see the module docstring); never raises."""
    s = text.strip()
    m = _FENCE.match(s)
    if m:
        s = m.group(1).strip()

    def bad(why: str) -> Verdict:
        return Verdict(judge, None, error="malformed", answer=text, reason=why)

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
            return Verdict(judge, Vote.CONFIRM, answer=text, reason=reason)
        return Verdict(judge, Vote.REMAP, element_id=el, answer=text, reason=reason)
    if "element" in d:
        return bad(f"'element' given with verdict {vote.value}")
    return Verdict(judge, vote, answer=text, reason=reason)


def merge_verdicts(verdicts: Sequence[Verdict], panel_size: int = PANEL_SIZE) -> tuple[AuditStatus, str | None]:
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


# -- prompts ------------------------------------------------------------------------------


def _cand_line(c: Any) -> str:
    box = ", ".join(f"{v:g}" for v in c.bbox)
    return f"[{c.id}] {c.role} {json.dumps(c.text, ensure_ascii=False)} [{box}]"


def judge_user_text(episode: RawEpisode, step: RawStep) -> str:
    """The text part of a judge's user message for one step."""
    a = step.action
    rec = {k: v for k, v in a.to_dict().items() if v is not None}
    target = next((c for c in step.candidates if c.id == a.element_id), None)
    previous = [s.guide for s in episode.steps[: step.step_index]]
    lines = [
        f"Task: {episode.intent}",
        f"Step {step.step_index + 1} of {len(episode.steps)}.",
        "Guides of the earlier steps:" if previous else "Guides of the earlier steps: (none, this is the first step)",
        *[f"- {g}" for g in previous],
        f"Recorded action: {json.dumps(rec, ensure_ascii=False)}",
        "Recorded element: " + (_cand_line(target) if target is not None else "none (the action was recorded as a point only)"),
        f"Recorded guide: {step.guide}",
        f"Candidate menu ({len(step.candidates)} elements):",
        *[_cand_line(c) for c in step.candidates],
        "Answer with one JSON object.",
    ]
    return "\n".join(lines)


def judge_messages(episode: RawEpisode, step: RawStep, som_png: bytes) -> list[dict[str, Any]]:
    """The chat messages sent to every judge for one step."""
    return [
        {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
        {"role": "user", "content": [image_part(som_png), {"type": "text", "text": judge_user_text(episode, step)}]},
    ]


# -- configuration ------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeConfig:
    """One judge: a named model behind an OpenAI-compatible endpoint.

    Attributes:
        name: a short unique name (used in the verdict log).
        base_url: endpoint root including ``/v1``.
        model: model name.
        api_key_env: environment variable of the API key (None: no key).
        timeout: seconds per attempt.
        max_retries: retries on 429/5xx/timeouts.
        concurrency: requests in flight to this judge.
        params: extra parameters of every request to this judge (e.g. ``max_tokens``),
            merged over the greedy default ``temperature: 0``.
    """

    name: str
    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 2
    concurrency: int = 4
    params: dict[str, Any] = field(default_factory=dict)

    def client(self, cache_dir: str | os.PathLike | None, backoff: float = 1.0) -> ChatClient:
        return ChatClient(
            self.base_url,
            self.model,
            api_key_env=self.api_key_env,
            timeout=self.timeout,
            max_retries=self.max_retries,
            cache_dir=cache_dir,
            concurrency=self.concurrency,
            backoff=backoff,
            default_params=self.params,
        )


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: (field, check, what it must be) of the optional judge fields.
_JUDGE_FIELD_TYPES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("api_key_env", lambda v: v is None or (isinstance(v, str) and v.strip() != ""), "a variable name or null"),
    ("timeout", lambda v: (_is_int(v) or isinstance(v, float)) and v > 0, "a positive number of seconds"),
    ("max_retries", lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    ("concurrency", lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    ("params", lambda v: isinstance(v, dict) and not {"model", "messages", "stream"} & set(v),
     "a mapping of request parameters (not model, messages or stream)"),
)


def load_judges(path: str | os.PathLike) -> list[JudgeConfig]:
    """Read a judges file (YAML or JSON): ``{"judges": [{name, base_url, model, ...}, x3]}``.

    Raises:
        ValueError: naming the judge and field of a problem.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"judges file not found: {path}")
    text = path.read_text("utf-8")
    try:
        if path.suffix.lower() == ".json":
            d = json.loads(text)
        else:
            import yaml

            d = yaml.safe_load(text)
    except Exception as e:  # yaml and json raise several types; all mean "unreadable"
        raise ValueError(f"{path}: cannot parse: {e}") from None
    items = d.get("judges") if isinstance(d, dict) else d
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a 'judges' list")
    allowed = {f.name for f in dataclasses.fields(JudgeConfig)}
    out = []
    for i, j in enumerate(items):
        if not isinstance(j, dict):
            raise ValueError(f"{path}: judge {i} must be a mapping")
        for key in ("name", "base_url", "model"):
            if not isinstance(j.get(key), str) or not j[key].strip():
                raise ValueError(f"{path}: judge {i}: '{key}' is required")
        unknown = set(j) - allowed
        if unknown:
            raise ValueError(f"{path}: judge {j['name']!r}: unknown keys {sorted(unknown)}")
        for key, ok, what in _JUDGE_FIELD_TYPES:
            if key in j and not ok(j[key]):
                raise ValueError(f"{path}: judge {j['name']!r}: '{key}' must be {what}, got {j[key]!r}")
        out.append(JudgeConfig(**j))
    names = [j.name for j in out]
    if len(out) != PANEL_SIZE:
        raise ValueError(f"{path}: the audit uses exactly {PANEL_SIZE} judges, got {len(out)}")
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: judge names must be unique, got {names}")
    return out


# -- running ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditItem:
    """A step selected for the audit."""

    step_id: str
    episode: RawEpisode
    step: RawStep
    folder: Path


def _is_flagged(st: RawStep) -> bool:
    m = st.metadata
    return bool(st.stale or m.get("coordinate_restored") or m.get("coordinate_unrestorable") or m.get("flagged"))


def select_steps(raw_dir: str | os.PathLike, select: str = "all", split: str = "all") -> list[AuditItem]:
    """The steps an audit covers: targeted actions with a candidate menu, in corpus order.

    Args:
        raw_dir: the raw corpus.
        select: ``all`` targeted steps, or only ``flagged`` ones (stale, coordinate-restored,
            unrestorable, or ``metadata["flagged"]``).
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
        splits = json.loads(manifest.read_text("utf-8")).get("splits") or {}
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
        agreement: per judge pair ``"a~b"``, ``(same verdict, both voted)`` over the steps
            (a remap agrees only with a remap to the same element).
        audit_path, verdicts_path: files written.
    """

    steps: int = 0
    statuses: Counter = field(default_factory=Counter)
    votes: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    requests: int = 0
    cache_hits: int = 0
    adjudicated: int = 0
    agreement: dict[str, tuple[int, int]] = field(default_factory=dict)
    audit_path: Path | None = None
    verdicts_path: Path | None = None

    def summary(self) -> str:
        st = ", ".join(f"{s.value} {self.statuses.get(s, 0)}" for s in
                       (AuditStatus.CONFIRMED, AuditStatus.REMAPPED, AuditStatus.UNMAPPABLE, AuditStatus.DISPUTED))
        lines = [f"audited {self.steps} steps: {st}" + (f" ({self.adjudicated} by human adjudication)" if self.adjudicated else "")]
        for judge in sorted(self.votes):
            c = self.votes[judge]
            lines.append(f"  judge {judge}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        for pair, (same, both) in sorted(self.agreement.items()):
            lines.append(f"  agreement {pair}: {same}/{both}" + (f" = {same / both:.2f}" if both else ""))
        lines.append(f"requests sent {self.requests}, cached answers {self.cache_hits}")
        return "\n".join(lines)


def pairwise_agreement(verdicts: dict[str, list[Verdict]]) -> dict[str, tuple[int, int]]:
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


def _call_error(e: LLMError) -> str:
    from mag_dataset.llm_client import LLMResponseError, LLMTimeoutError, LLMUnavailableError

    if isinstance(e, LLMTimeoutError):
        return "timeout"
    if isinstance(e, LLMUnavailableError):
        return "unavailable"
    if isinstance(e, LLMResponseError):
        return "response"
    return "http"


def _raise_if_fatal(name: str, ans: Any) -> None:
    if isinstance(ans, LLMConfigError):
        raise ans
    if isinstance(ans, LLMHTTPError) and ans.status in FATAL_STATUSES:
        raise LLMConfigError(f"judge {name}: {ans}")


def ask_judges(
    items: Sequence[AuditItem],
    judges: Sequence[tuple[str, ChatClient]],
    chunk_size: int = 64,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[Verdict]]:
    """Ask every judge about every item (judges in parallel, each with its own concurrency).

    Returns:
        ``step_id -> verdicts`` in judge order.

    Raises:
        LLMConfigError: a judge is misconfigured (no API key, HTTP 401/403/404).
    """
    answers: dict[str, list[Any]] = {name: [] for name, _ in judges}
    # in chunks, so that a large corpus never holds every base64 screenshot in memory at once
    for start in range(0, len(items), chunk_size):
        chunk = items[start : start + chunk_size]
        requests = [judge_messages(it.episode, it.step, (it.folder / it.step.som_screenshot).read_bytes()) for it in chunk]
        errors: list[BaseException] = []

        def run(name: str, client: ChatClient) -> None:
            try:
                answers[name].extend(client.map(requests, return_exceptions=True))
            except BaseException as e:  # re-raised in the caller's thread
                errors.append(e)

        threads = [threading.Thread(target=run, args=j, name=f"judge-{j[0]}") for j in judges]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        for name, _ in judges:  # stop at the first misconfigured judge, not after the whole corpus
            for ans in answers[name][start:]:
                _raise_if_fatal(name, ans)
        if progress:
            progress(f"judged {start + len(chunk)}/{len(items)} steps")
    out: dict[str, list[Verdict]] = {}
    for i, it in enumerate(items):
        ids = [c.id for c in it.step.candidates]
        row = []
        for name, _ in judges:
            ans = answers[name][i]
            if isinstance(ans, LLMError):
                row.append(Verdict(name, None, error=_call_error(ans), reason=str(ans)))
            else:
                row.append(parse_verdict(name, ans, ids, it.step.action.element_id))
        out[it.step_id] = row
    return out


def audit_records(
    items: Sequence[AuditItem],
    verdicts: dict[str, list[Verdict]],
    existing: dict[str, AuditRecord],
    adjudications: dict[str, tuple[AuditStatus, str | None]] | None = None,
    panel_size: int = PANEL_SIZE,
) -> tuple[dict[str, AuditRecord], Counter, int]:
    """Merge verdicts into audit records, keeping flags and every record not audited now.

    Returns:
        ``(records, status counts, number adjudicated)``.
    """
    records = dict(existing)
    statuses: Counter = Counter()
    adjudicated = 0
    for it in items:
        status, element = merge_verdicts(verdicts.get(it.step_id, []), panel_size)
        if adjudications and it.step_id in adjudications:
            status, element = adjudications[it.step_id]
            adjudicated += 1
        old = existing.get(it.step_id, AuditRecord())
        records[it.step_id] = make_record(it.step, status, element, old)
        statuses[records[it.step_id].status] += 1
    return records, statuses, adjudicated


def make_record(step: RawStep, status: AuditStatus, element: str | None, old: AuditRecord | None = None) -> AuditRecord:
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
    )


def _write_verdicts(path: Path, items: Sequence[AuditItem], verdicts: dict[str, list[Verdict]], models: dict[str, str]) -> None:
    rows = (v.to_json(it.step_id, models.get(v.judge, "")) for it in items for v in verdicts[it.step_id])
    atomic_write_jsonl(path, rows, ensure_ascii=False, sort_keys=True)


def read_verdicts(path: str | os.PathLike) -> dict[str, list[Verdict]]:
    """Read a verdict log: ``step_id -> verdicts`` in logged order.

    Raises:
        ValueError: naming the line of a malformed entry.
    """
    out: dict[str, list[Verdict]] = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                out[d["step_id"]].append(Verdict.from_json(d))
            except (json.JSONDecodeError, KeyError, ValueError, TypeError) as e:
                raise ValueError(f"{path}:{n}: bad verdict entry: {e}") from None
    return dict(out)


def default_cache_dir() -> Path:
    """``$MAG_CACHE/llm`` or ``~/.cache/mag_dataset/llm`` (kept out of the raw corpus on purpose)."""
    base = os.environ.get("MAG_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "mag_dataset")
    return Path(base) / "llm"


def run_audit(
    raw_dir: str | os.PathLike,
    judges: Sequence[JudgeConfig] | Sequence[tuple[str, ChatClient]],
    *,
    out_path: str | os.PathLike | None = None,
    verdicts_path: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    select: str = "all",
    split: str = "all",
    adjudications: dict[str, tuple[AuditStatus, str | None]] | None = None,
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
        adjudications: human decisions ``step_id -> (status, element_id)`` applied over the
            judges' outcome; default: read from the annotation database of ``raw_dir`` if any.
        progress: called with one line per stage.

    Returns:
        An :class:`AuditReport`.

    Raises:
        LLMConfigError: a judge is misconfigured.
        NoVotesError: no judge voted on any step (nothing is written).
        ValueError / RawDataError: bad arguments or raw data.
    """
    raw_dir = Path(raw_dir)
    out = Path(out_path) if out_path is not None else raw_dir / AUDIT_FILE
    vpath = Path(verdicts_path) if verdicts_path is not None else out.with_name(VERDICTS_FILE)
    if len(judges) != PANEL_SIZE:
        raise ValueError(f"the audit uses exactly {PANEL_SIZE} judges, got {len(judges)}")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    pairs: list[tuple[str, ChatClient]] = [
        (j.name, j.client(cache)) if isinstance(j, JudgeConfig) else (j[0], j[1]) for j in judges
    ]
    names = [n for n, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError(f"judge names must be unique, got {names}")
    items = select_steps(raw_dir, select, split)
    if progress:
        progress(f"auditing {len(items)} steps with judges {', '.join(names)}")
    verdicts = ask_judges(items, pairs, progress=progress)
    if items and not any(v.vote is not None for row in verdicts.values() for v in row):
        first = next((v for row in verdicts.values() for v in row), None)
        detail = f" (first error: {first.judge}: {first.error})" if first is not None else ""
        raise NoVotesError(
            f"no judge gave a vote on any of the {len(items)} steps{detail}; nothing was written. "
            "Check that the endpoints are up; answers already received are cached."
        )
    existing = read_audit(out) if out.is_file() else {}
    if adjudications is None:
        adjudications = _stored_adjudications(raw_dir)
    records, statuses, adjudicated = audit_records(items, verdicts, existing, adjudications)
    report = AuditReport(steps=len(items), statuses=statuses, adjudicated=adjudicated, audit_path=out, verdicts_path=vpath)
    for row in verdicts.values():
        for v in row:
            report.votes[v.judge][v.vote.value if v.vote else f"no_vote:{v.error}"] += 1
    report.agreement = pairwise_agreement(verdicts)
    for _, c in pairs:
        report.requests += c.stats["requests"]
        report.cache_hits += c.stats["cache_hits"]
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_verdicts(vpath, items, verdicts, {n: c.model for n, c in pairs})
    write_audit(out, records)
    return report


def replay_audit(
    raw_dir: str | os.PathLike,
    verdicts_path: str | os.PathLike,
    *,
    out_path: str | os.PathLike | None = None,
    adjudications: dict[str, tuple[AuditStatus, str | None]] | None = None,
) -> AuditReport:
    """Recompute the audit file from a verdict log, without any endpoint.

    Every logged step must still exist in the raw corpus. The merge uses the current
    merge rule, so a replay is how a rule change is applied to old verdicts.
    """
    raw_dir = Path(raw_dir)
    out = Path(out_path) if out_path is not None else raw_dir / AUDIT_FILE
    verdicts = read_verdicts(verdicts_path)
    index = {}
    for folder in iter_episode_dirs(raw_dir):
        ep = read_episode(folder)
        for st in ep.steps:
            index[step_id(ep.task_id, st.step_index)] = AuditItem(step_id(ep.task_id, st.step_index), ep, st, folder)
    missing = sorted(set(verdicts) - set(index))
    if missing:
        raise ValueError(f"{verdicts_path}: verdicts for {len(missing)} steps not in {raw_dir}, e.g. {missing[0]!r}")
    items = [index[s] for s in index if s in verdicts]
    existing = read_audit(out) if out.is_file() else {}
    if adjudications is None:
        adjudications = _stored_adjudications(raw_dir)
    records, statuses, adjudicated = audit_records(items, verdicts, existing, adjudications)
    report = AuditReport(steps=len(items), statuses=statuses, adjudicated=adjudicated, audit_path=out, verdicts_path=Path(verdicts_path))
    for row in verdicts.values():
        for v in row:
            report.votes[v.judge][v.vote.value if v.vote else f"no_vote:{v.error}"] += 1
    report.agreement = pairwise_agreement(verdicts)
    write_audit(out, records)
    return report


def _stored_adjudications(raw_dir: Path) -> dict[str, tuple[AuditStatus, str | None]]:
    from mag_dataset.harness.annotate import DEFAULT_DB, AnnotationStore

    db = raw_dir / DEFAULT_DB
    if not db.is_file():
        return {}
    with AnnotationStore(db) as store:
        return {sid: (a.status, a.element_id) for sid, a in store.adjudications().items()}
