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
    vote**, as does a *failed call*: a judge that times out, is unreachable or answers an
    HTTP error after its retries.

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

Merge rule (:func:`merge_verdicts`), over the panel of three judges:
    * all three judges confirm → ``confirmed``;
    * at least two judges remap to the same element X → ``remapped`` (the step's element id
      becomes X; the recorded one is kept in ``original_element_id``);
    * at least two judges answer unmappable → ``unmappable``;
    * anything else → ``disputed`` (including any panel with a missing vote that reaches
      none of the above: two confirms and a timeout is disputed, because "all confirm" is
      not established).

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
    ``mag audit --replay`` say how many, and how many calls the next audit will make.

Human adjudication (the ``mag annotate`` app) resolves disputed steps. A resolution is
stored in the annotation database and in the audit record itself (``adjudicated_by``),
so every later audit or replay keeps it, whichever database it is given (``--db``); a
command warns when another database next to the corpus holds decisions for its steps.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import hashlib
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
from mag_dataset.harness.preflight import (
    FATAL_STATUSES,  # noqa: F401 (re-exported: part of this module's documented rules)
    MAX_FAILED_SHARE,
    EndpointFailedError,
    check_endpoints,
    check_failures,
    check_images,
    describe,
    probe,
    raise_if_fatal,
)
from mag_dataset.llm_client import ChatClient, LLMError, LLMHTTPError, image_part
from mag_dataset.raw import (
    AUDIT_FILE,
    CORPUS_FILE,
    RawEpisode,
    RawStep,
    iter_episode_dirs,
    read_audit,
    read_episode,
    som_image_bytes,
    som_image_path,
    step_id,
    write_audit,
)
from mag_dataset.schema import AuditRecord, AuditStatus

PROMPT_VERSION = 1
VERDICTS_FILE = "audit_verdicts.jsonl"
PANEL_SIZE = 3

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


class NoVotesError(EndpointFailedError):
    """Not one judge answered usably on any step: the endpoints are down or all misbehave."""


class JudgeDownError(EndpointFailedError):
    """A judge failed its first request, or more than MAX_FAILED_SHARE of its calls; nothing was written."""


#: Outcomes that a failed call never turns into ``disputed``.
DECIDED = (AuditStatus.CONFIRMED, AuditStatus.REMAPPED, AuditStatus.UNMAPPABLE)


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
        error: why there is no vote (``timeout``, ``unavailable``, ``http <status>``,
            ``malformed``, ``response``), else None.
        answer: the judge's raw answer text (None when the call failed).
        reason: the judge's optional reason (or the failed call's message).
        prompt: :func:`prompt_key` of the messages the judge was asked, if known.
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
        return self.error is not None and self.error != "malformed"

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
    def from_json(cls, d: dict[str, Any]) -> "Verdict":
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


def prompt_key(messages: Sequence[dict[str, Any]]) -> str:
    """sha256 hex of a step's judge messages: equal exactly when every judge would be asked the
    same thing (the same screenshot, intent, guides, action and menu)."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


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
        label = repr(j["name"]) if isinstance(j.get("name"), str) and j["name"].strip() else str(i)
        unknown = sorted(set(map(str, j)) - allowed)
        if unknown:  # before "required": a typo such as base-url is the real problem
            hints = [f"{k!r} (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(k.replace("-", "_"), allowed, 1))
                     else repr(k) for k in unknown]
            raise ValueError(f"{path}: judge {label}: unknown key {', '.join(hints)}; known keys: {', '.join(sorted(allowed))}")
        for key in ("name", "base_url", "model"):
            if not isinstance(j.get(key), str) or not j[key].strip():
                raise ValueError(f"{path}: judge {label}: '{key}' is required")
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
        kept: steps that kept their earlier outcome because a failed call cost their panel
            a vote (see "No silent downgrade" in the module docstring).
        agreement: per judge pair ``"a~b"``, ``(same verdict, both voted)`` over the steps
            (a remap agrees only with a remap to the same element).
        partial: the audit was written beside the audit file (``allow_partial``).
        problems: why the audit is partial (one line per judge).
        warnings: things the maintainer should know (e.g. another decision database).
        stale_steps, next_calls: for a replay, steps whose verdicts are stale and the calls
            the next audit will make (:func:`audit_staleness`).
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
    return f"http {e.status}" if isinstance(e, LLMHTTPError) else "http"


def _in_threads(judges: Sequence[tuple[str, ChatClient]], fn: Callable[[str, ChatClient], None]) -> None:
    """``fn(name, client)`` for every judge at once; the first exception is re-raised here."""
    errors: list[BaseException] = []

    def run(name: str, client: ChatClient) -> None:
        try:
            fn(name, client)
        except BaseException as e:  # re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=j, name=f"judge-{j[0]}") for j in judges]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _som(it: AuditItem) -> bytes:
    return som_image_bytes(it.folder, it.step)  # recorded, or rendered from the screenshot (raw format v2)


def ask_judges(
    items: Sequence[AuditItem],
    judges: Sequence[tuple[str, ChatClient]],
    chunk_size: int = 64,
    progress: Callable[[str], None] | None = None,
    stop_when_down: bool = True,
) -> dict[str, list[Verdict]]:
    """Ask every judge about every item (judges in parallel, each with its own concurrency).

    Each judge's first uncached request goes out alone (:func:`~mag_dataset.harness.preflight.probe`).

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
    answers: dict[str, list[Any]] = {name: [None] * len(items) for name, _ in judges}
    probed: dict[str, int] = {}

    def first(name: str, client: ChatClient) -> None:
        got = probe(client, (lambda it=it: judge_messages(it.episode, it.step, _som(it)) for it in items))
        if got is not None:
            probed[name] = got[0]
            answers[name][got[0]] = got[1]

    _in_threads(judges, first)
    for name, _ in judges:
        if name in probed:
            ans = answers[name][probed[name]]
            raise_if_fatal(ans, f"judge {name}")
            if stop_when_down and isinstance(ans, LLMError):
                raise JudgeDownError(
                    f"judge {name} is down: its first request failed ({describe(ans)}); no other request was sent "
                    "to it and nothing was written"
                )
    keys: dict[str, str] = {}
    # in chunks, so that a large corpus never holds every base64 screenshot in memory at once
    for start in range(0, len(items), chunk_size):
        chunk = items[start : start + chunk_size]
        requests = [judge_messages(it.episode, it.step, _som(it)) for it in chunk]
        for it, req in zip(chunk, requests):
            keys[it.step_id] = prompt_key(req)

        def run(name: str, client: ChatClient) -> None:
            todo = [k for k in range(len(chunk)) if probed.get(name) != start + k]
            for k, ans in zip(todo, client.map([requests[k] for k in todo], return_exceptions=True)):
                answers[name][start + k] = ans

        _in_threads(judges, run)
        for name, _ in judges:  # stop at the first misconfigured judge, not after the whole corpus
            for ans in answers[name][start : start + len(chunk)]:
                raise_if_fatal(ans, f"judge {name}")
        if progress:
            progress(f"judged {start + len(chunk)}/{len(items)} steps")
    out: dict[str, list[Verdict]] = {}
    for i, it in enumerate(items):
        ids = [c.id for c in it.step.candidates]
        row = []
        for name, _ in judges:
            ans = answers[name][i]
            if isinstance(ans, LLMError):
                v = Verdict(name, None, error=_call_error(ans), reason=describe(ans))
            else:
                v = parse_verdict(name, ans, ids, it.step.action.element_id)
            row.append(dataclasses.replace(v, prompt=keys[it.step_id]))
        out[it.step_id] = row
    return out


#: Human decisions over the judges' outcome: ``step_id -> (status, element_id[, annotator])``.
Adjudications = dict[str, tuple]


def audit_records(
    items: Sequence[AuditItem],
    verdicts: dict[str, list[Verdict]],
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


def partial_path(path: Path) -> Path:
    """Where a partial audit goes: ``audit.jsonl`` → ``audit.partial.jsonl`` (same folder)."""
    return path.with_name(f"{path.stem}.partial{path.suffix}")


def _tally(report: AuditReport, verdicts: dict[str, list[Verdict]]) -> None:
    for row in verdicts.values():
        for v in row:
            report.votes[v.judge][v.vote.value if v.vote else f"no_vote:{v.error}"] += 1
    report.agreement = pairwise_agreement(verdicts)


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
    if adjudications is None:
        adjudications = stored_adjudications(raw_dir, db_path)
    warnings = other_decision_dbs(raw_dir, db_path, {it.step_id for it in items}, out.parent)
    if items:
        check_images(som_image_path(it.folder, it.step) for it in items)
        check_endpoints([(f"judge {n}", c) for n, c in pairs])
    if progress:
        progress(f"auditing {len(items)} steps with judges {', '.join(names)}")
    verdicts = ask_judges(items, pairs, progress=progress, stop_when_down=not allow_partial)
    if items and not any(v.vote is not None for row in verdicts.values() for v in row):
        first = next((v for row in verdicts.values() for v in row), None)
        detail = f" (first error: {first.judge}: {first.reason or first.error})" if first is not None else ""
        raise NoVotesError(
            f"no judge gave a vote on any of the {len(items)} steps{detail}; nothing was written. "
            "Check that the endpoints are up; answers already received are cached."
        )
    problems = [p for name in names if (p := check_failures(
        f"judge {name}", [v.reason or v.error or "" for row in verdicts.values() for v in row if v.judge == name and v.failed],
        len(items)))]
    if problems and not allow_partial:
        raise JudgeDownError(
            "; ".join(problems) + f" (the limit is {MAX_FAILED_SHARE:.0%} of the steps); nothing was written. Answers "
            "received are cached: rerun when the endpoint is back, or pass --allow-partial to write the audit beside "
            f"{out.name}"
        )
    existing = read_audit(out) if out.is_file() else {}
    if problems:
        out, vpath = partial_path(out), partial_path(vpath)
    records, statuses, adjudicated, kept = audit_records(items, verdicts, existing, adjudications)
    report = AuditReport(steps=len(items), statuses=statuses, adjudicated=adjudicated, kept=kept, audit_path=out,
                         verdicts_path=vpath, partial=bool(problems), problems=problems, warnings=warnings)
    _tally(report, verdicts)
    for _, c in pairs:
        report.requests += c.stats["requests"]
        report.cache_hits += c.stats["cache_hits"]
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_verdicts(vpath, items, verdicts, {n: c.model for n, c in pairs})
    write_audit(out, records)
    return report


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
    verdicts = read_verdicts(verdicts_path)
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
    _tally(report, verdicts)
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
    verdicts: dict[str, list[Verdict]] | None = None,
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
        verdicts = read_verdicts(path)
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


def stored_adjudications(raw_dir: str | os.PathLike, db_path: str | os.PathLike | None = None) -> Adjudications:
    """Adjudications of the annotation database ``db_path`` (default ``raw_dir/annotations.sqlite``).

    Raises:
        ValueError: an explicit ``db_path`` that does not exist.
    """
    from mag_dataset.harness.annotate import DEFAULT_DB, AnnotationStore

    db = Path(db_path) if db_path is not None else Path(raw_dir) / DEFAULT_DB
    if not db.is_file():
        if db_path is not None:
            raise ValueError(f"annotation database not found: {db}")
        return {}
    with AnnotationStore(db) as store:
        return {sid: (a.status, a.element_id, a.annotator) for sid, a in store.adjudications().items()}


def other_decision_dbs(raw_dir: str | os.PathLike, db_path: str | os.PathLike | None, step_ids: set[str],
                       *folders: Path) -> list[str]:
    """Warnings for SQLite files beside the corpus (or in ``folders``), other than the database
    in use, that hold decisions for ``step_ids``: decisions a command would otherwise ignore."""
    from mag_dataset.harness.annotate import DEFAULT_DB, decision_counts

    raw_dir = Path(raw_dir)
    used = (Path(db_path) if db_path is not None else raw_dir / DEFAULT_DB).resolve()
    out = []
    seen = set()
    for folder in (raw_dir, *folders):
        for db in sorted(Path(folder).glob("*.sqlite")):
            if db.resolve() in seen or db.resolve() == used:
                continue
            seen.add(db.resolve())
            n = decision_counts(db, step_ids)
            if n:
                out.append(f"{db} holds {n} decisions for these steps but is not the database in use "
                           f"({used}); pass --db {db} to use it")
    return out
