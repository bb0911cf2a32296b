"""Judge verdict files for guide usefulness: cached, replayable, never a live call.

WebMRE (arXiv 2609.27353) rates a guide useful when the majority of three judges say so;
usefulness is the share of steps whose guide the majority rated useful. The scorer never
calls a model: it reads verdicts that a judging run cached earlier. (The label audit's
judge answers are another kind of verdict: :mod:`mag_dataset.harness.audit_rules`.)

A verdict file is JSONL, one verdict per line::

    {"key": "<sha256 hex>", "step_id": "...", "judge": "judge-a", "useful": true}

``key`` is :func:`verdict_key` of (step id, guide text, judge id), so a verdict applies to
exactly the guide that was judged: a different guide for the same step has no verdict
(usefulness is then not applicable for that step and is counted as unjudged). The guide
text is hashed as the parser returns it (surrounding whitespace stripped). Exactly three
distinct judges must appear in a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from mag_dataset.fileio import atomic_write

#: Number of judges whose majority decides usefulness.
NUM_JUDGES = 3

_HEX64 = re.compile(r"[0-9a-f]{64}")


class VerdictsError(ValueError):
    """A verdict file is invalid; the message names the line and the problem."""


def verdict_key(step_id: str, guide: str, judge: str) -> str:
    """sha256 hex of step id, guide text (stripped) and judge id, NUL-separated."""
    payload = "\x00".join((step_id, guide.strip(), judge)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(payload).hexdigest()


@dataclass(frozen=True)
class UsefulnessVerdict:
    """One judge's rating of one guide for one step (not a label-audit verdict:
    :class:`mag_dataset.harness.audit_rules.AuditVerdict`)."""

    step_id: str
    guide: str
    judge: str
    useful: bool

    @property
    def key(self) -> str:
        return verdict_key(self.step_id, self.guide, self.judge)

    def to_json(self) -> str:
        return json.dumps(
            {"key": self.key, "step_id": self.step_id, "judge": self.judge, "useful": self.useful},
            ensure_ascii=False,
        )


@dataclass(frozen=True)
class Verdicts:
    """The verdicts of three judges, looked up by hash.

    Attributes:
        judges: the judge ids, sorted.
        table: verdict key -> useful.
    """

    judges: tuple[str, ...]
    table: dict[str, bool]

    def __post_init__(self) -> None:
        if len(self.judges) != NUM_JUDGES or len(set(self.judges)) != NUM_JUDGES:
            raise VerdictsError(f"verdicts need exactly {NUM_JUDGES} distinct judges, got {list(self.judges)}")

    def useful(self, step_id: str, guide: str) -> bool | None:
        """Majority verdict on ``guide`` for ``step_id``; None when any judge has no verdict."""
        votes = [self.table.get(verdict_key(step_id, guide, j)) for j in self.judges]
        if any(v is None for v in votes):
            return None
        return sum(bool(v) for v in votes) * 2 > len(votes)

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for k in sorted(self.table):
            h.update(f"{k}:{int(self.table[k])}\n".encode())
        return "sha256:" + h.hexdigest()

    @classmethod
    def from_verdicts(cls, verdicts: Iterable[UsefulnessVerdict]) -> "Verdicts":
        table: dict[str, bool] = {}
        judges: set[str] = set()
        for v in verdicts:
            table[v.key] = bool(v.useful)
            judges.add(v.judge)
        return cls(tuple(sorted(judges)), table)


def read_usefulness_verdicts(path: str | os.PathLike) -> Verdicts:
    """Read a usefulness verdict file.

    Raises:
        VerdictsError: naming the line and the problem (bad JSON, missing or mistyped
            field, a key seen twice with different verdicts, not three judges).
    """
    path = Path(path)
    if not path.is_file():
        raise VerdictsError(f"verdict file not found: {path}")
    table: dict[str, bool] = {}
    judges: set[str] = set()
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise VerdictsError(f"{path}: line {n}: not valid UTF-8") from None
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError) as e:  # JSONDecodeError, huge ints, deep nesting
                msg = e.msg if isinstance(e, json.JSONDecodeError) else type(e).__name__
                raise VerdictsError(f"{path}: line {n}: not a JSON object ({msg})") from None
            if not isinstance(obj, dict):
                raise VerdictsError(f"{path}: line {n}: not a JSON object")
            key, judge, useful = obj.get("key"), obj.get("judge"), obj.get("useful")
            if not isinstance(key, str) or _HEX64.fullmatch(key) is None:
                raise VerdictsError(f"{path}: line {n}: 'key' must be a sha256 hex string")
            if not isinstance(judge, str) or not judge:
                raise VerdictsError(f"{path}: line {n}: 'judge' must be a non-empty string")
            if not isinstance(useful, bool):
                raise VerdictsError(f"{path}: line {n}: 'useful' must be true or false")
            if key in table and table[key] != useful:
                raise VerdictsError(f"{path}: line {n}: conflicting verdicts for key {key[:12]}…")
            table[key] = useful
            judges.add(judge)
    try:
        return Verdicts(tuple(sorted(judges)), table)
    except VerdictsError as e:
        raise VerdictsError(f"{path}: {e}") from None


def write_verdicts(path: str | os.PathLike, verdicts: Iterable[UsefulnessVerdict]) -> Path:
    """Write verdicts as JSONL, atomically."""
    return atomic_write(path, (v.to_json() + "\n" for v in verdicts))


__all__ = [
    "NUM_JUDGES", "UsefulnessVerdict", "Verdicts", "VerdictsError", "read_usefulness_verdicts", "verdict_key",
    "write_verdicts",
]
