"""The judges of the label audit: who they are and how their file is read.

Holds :class:`JudgeConfig` (one named model behind an OpenAI-compatible endpoint) and
:func:`load_judges` (the YAML/JSON judges file of ``mag audit --judges``, checked field by
field). It sends nothing: requests are :mod:`mag_dataset.harness.audit`'s, which
re-exports both names.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mag_dataset.harness.audit_rules import PANEL_SIZE
from mag_dataset.llm_client import ChatClient


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
        """A :class:`ChatClient` for this judge, caching its answers in ``cache_dir``."""
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


__all__ = ["JudgeConfig", "load_judges"]
