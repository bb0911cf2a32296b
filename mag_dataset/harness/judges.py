"""The judges of the label audit: who they are and how their file is read.

Holds :class:`JudgeConfig` (one named model behind an OpenAI-compatible endpoint, or one of
the rule-based page judges ``dom``, ``name``, ``pixel`` of
:mod:`mag_dataset.harness.page_judges`) and :func:`load_judges` (``mag audit --judges``: a
YAML/JSON judges file, checked field by field, or a comma list of rule-based judges such as
``dom,name,pixel``). In a file the two kinds mix: ``{name: dom, kind: dom}`` is the rule-based
``dom`` judge on a panel with endpoint judges. It sends nothing: requests are
:mod:`mag_dataset.harness.audit`'s, which re-exports these names.
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
from mag_dataset.harness.page_judges import PAGE_JUDGES, PAGE_JUDGES_VERSION
from mag_dataset.llm_client import ChatClient

#: ``kind`` of a judge behind an OpenAI-compatible endpoint; the others are :data:`PAGE_JUDGES`.
ENDPOINT = "endpoint"


@dataclass(frozen=True)
class JudgeConfig:
    """One judge: a named model behind an OpenAI-compatible endpoint, or a rule-based page judge.

    Attributes:
        name: a short unique name (used in the verdict log).
        base_url: endpoint root including ``/v1`` (endpoint judges only).
        model: model name (endpoint judges only).
        api_key_env: environment variable of the API key (None: no key).
        timeout: seconds per attempt.
        max_retries: retries on 429/5xx/timeouts.
        concurrency: requests in flight to this judge.
        params: extra parameters of every request to this judge (e.g. ``max_tokens``),
            merged over the greedy default ``temperature: 0``.
        kind: ``endpoint`` (default), or ``dom``, ``name`` or ``pixel``: a rule-based judge
            that needs no model (:mod:`mag_dataset.harness.page_judges`).
    """

    name: str
    base_url: str = ""
    model: str = ""
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 2
    concurrency: int = 4
    params: dict[str, Any] = field(default_factory=dict)
    kind: str = ENDPOINT

    @property
    def rule_based(self) -> bool:
        """A page judge computed here, with no endpoint."""
        return self.kind != ENDPOINT

    @property
    def model_label(self) -> str:
        """What the verdict log names as the judge's model."""
        return f"rule-based {self.kind} v{PAGE_JUDGES_VERSION}" if self.rule_based else self.model

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


def rule_based_judges(spec: str) -> list[JudgeConfig] | None:
    """The rule-based panel named by ``spec`` (``dom,name,pixel``), or None when it names none.

    Raises:
        ValueError: a comma list that names an unknown judge.
    """
    names = [n.strip() for n in str(spec).split(",")]
    if not any(n in PAGE_JUDGES for n in names):
        return None
    unknown = [n for n in names if n not in PAGE_JUDGES]
    if unknown:
        raise ValueError(f"unknown rule-based judge(s) {', '.join(map(repr, unknown))}; the rule-based judges are "
                         f"{', '.join(PAGE_JUDGES)} (or give a judges file)")
    return [JudgeConfig(name=n, kind=n) for n in names]


def load_judges(path: str | os.PathLike) -> list[JudgeConfig]:
    """Read the panel: a comma list of rule-based judges (``dom,name,pixel``), or a judges file
    (YAML or JSON): ``{"judges": [{name, base_url, model, ...} or {name, kind: dom}, x3]}``.

    Raises:
        ValueError: naming the judge and field of a problem.
    """
    path = Path(path)
    if not path.is_file():
        builtin = rule_based_judges(str(path))
        if builtin is not None:
            return _checked_panel(str(path), builtin)
        raise ValueError(f"judges file not found: {path} (or name rule-based judges: --judges {','.join(PAGE_JUDGES)})")
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
        kind = j.get("kind", ENDPOINT)
        if kind != ENDPOINT and kind not in PAGE_JUDGES:
            raise ValueError(f"{path}: judge {label}: 'kind' must be {ENDPOINT} or one of {', '.join(PAGE_JUDGES)}, "
                             f"got {kind!r}")
        for key in ("name", "base_url", "model") if kind == ENDPOINT else ("name",):
            if not isinstance(j.get(key), str) or not j[key].strip():
                raise ValueError(f"{path}: judge {label}: '{key}' is required")
        for key, ok, what in _JUDGE_FIELD_TYPES:
            if key in j and not ok(j[key]):
                raise ValueError(f"{path}: judge {j['name']!r}: '{key}' must be {what}, got {j[key]!r}")
        out.append(JudgeConfig(**j))
    return _checked_panel(str(path), out)


def _checked_panel(where: str, out: list[JudgeConfig]) -> list[JudgeConfig]:
    names = [j.name for j in out]
    if len(out) != PANEL_SIZE:
        raise ValueError(f"{where}: the audit uses exactly {PANEL_SIZE} judges, got {len(out)}")
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: judge names must be unique, got {names}")
    return out


__all__ = ["ENDPOINT", "JudgeConfig", "load_judges", "rule_based_judges"]
