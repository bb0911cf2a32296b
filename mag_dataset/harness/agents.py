"""Agents for live evaluation: the heuristic baseline, a local checkpoint, an API endpoint.

An agent turns one benchmark :class:`~mag_dataset.schema.Step` (built from a live
observation) and its screenshot into the raw text a model would write. It never formats a
prompt or parses an output itself: every agent that reads a prompt gets it from
:func:`mag_dataset.prompts.build_messages`, and the caller parses the text with
:func:`mag_dataset.parsing.parse_output`, exactly as in the offline protocol (MAG, arXiv
2607.10079, §"evaluation in live environments"; WebMRE, arXiv 2609.27353, uses the same
locked prompts offline).

Agent specifications (``mag live-eval --agent``):

* ``heuristic`` — :func:`mag_dataset.heuristic.heuristic_output`, the no-model baseline.
* ``PATH`` or ``hf:PATH`` — a local transformers checkpoint folder, loaded with
  ``AutoModelForImageTextToText`` + ``AutoProcessor``, greedy decoding.
* ``openai:MODEL@BASE_URL`` (or ``openai:MODEL``, base URL from ``OPENAI_BASE_URL``) — an
  OpenAI-compatible chat-completions endpoint through :mod:`mag_dataset.llm_client`,
  temperature 0, key from ``OPENAI_API_KEY`` (or ``--api-key-env``).

Each agent is a thin wrapper over a runner of :mod:`mag_dataset.runners` (the one
``generate(messages) -> str`` interface the baselines use too): the prompt is
:func:`mag_dataset.runners.step_messages`. Heavy dependencies (torch, transformers) are
imported only when a checkpoint agent is made.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.actions import Contract, View
from mag_dataset.schema import Step


class AgentSpecError(ValueError):
    """An ``--agent`` value names no agent this module can make."""


class AgentConfigError(RuntimeError):
    """The agent cannot work at all (no API key, key refused, unknown model): stop the run.

    Any other exception from :meth:`Agent.act` is one failed step, counted and recorded.
    """


AGENT_KINDS: dict[str, str] = {
    "heuristic": "the no-model heuristic baseline (mag_dataset.heuristic)",
    "hf": "a local transformers checkpoint folder (greedy decoding)",
    "openai": "an OpenAI-compatible chat-completions endpoint (temperature 0)",
}

_OPENAI_RE = re.compile(r"^openai:(?P<model>[^@]+?)(?:@(?P<url>https?://\S+))?$")


@dataclass(frozen=True)
class AgentSpec:
    """What agent to run; picklable, so each worker process makes its own agent from it.

    Attributes:
        kind: one of :data:`AGENT_KINDS`.
        model: checkpoint folder (``hf``), model name (``openai``), ``""`` (``heuristic``).
        base_url: endpoint base URL (``openai`` only).
        max_new_tokens: generation budget per step (``hf`` and ``openai``).
        api_key_env: environment variable holding the API key (``openai``).
        cache_dir: on-disk response cache of the API client (``openai``), or None.
        device: torch device for ``hf`` (default: cuda if available, else cpu).
        timeout: seconds per HTTP attempt (``openai``).
        max_retries: extra attempts on 408/409/429/5xx, timeouts and connection errors (``openai``).
    """

    kind: str
    model: str = ""
    base_url: str | None = None
    max_new_tokens: int = 256
    api_key_env: str = "OPENAI_API_KEY"
    cache_dir: str | None = None
    device: str | None = None
    timeout: float = 60.0
    max_retries: int = 3

    def __post_init__(self) -> None:
        if self.kind not in AGENT_KINDS:
            raise AgentSpecError(f"unknown agent kind {self.kind!r}; expected one of {sorted(AGENT_KINDS)}")
        if self.kind != "heuristic" and not self.model:
            raise AgentSpecError(f"a {self.kind} agent needs a model")
        if self.max_new_tokens < 1:
            raise AgentSpecError(f"max_new_tokens must be positive, got {self.max_new_tokens}")
        if not self.timeout > 0:
            raise AgentSpecError(f"timeout must be positive, got {self.timeout}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise AgentSpecError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")

    @classmethod
    def parse(cls, text: str, **options: Any) -> "AgentSpec":
        """Parse an ``--agent`` value (see the module docstring).

        Args:
            text: the value.
            **options: the other fields (``max_new_tokens``, ``api_key_env``, ...).

        Raises:
            AgentSpecError: naming what is wrong with ``text``.
        """
        text = (text or "").strip()
        if text == "heuristic":
            return cls(kind="heuristic", **options)
        if text.startswith("openai:"):
            m = _OPENAI_RE.match(text)
            if not m:
                raise AgentSpecError(f"bad OpenAI agent {text!r}; expected openai:MODEL@http(s)://HOST[:PORT]/v1")
            url = m.group("url") or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
            return cls(kind="openai", model=m.group("model"), base_url=url, **options)
        path = text[3:] if text.startswith("hf:") else text
        if path and Path(path).is_dir():
            if not (Path(path) / "config.json").is_file():
                raise AgentSpecError(f"checkpoint folder {path!r} has no config.json")
            return cls(kind="hf", model=str(Path(path).resolve()), **options)
        if text.startswith("hf:") or "/" in text or os.sep in text:
            raise AgentSpecError(f"checkpoint folder {path!r} not found (the Hub is not used: give a local folder)")
        raise AgentSpecError(
            f"unknown agent {text!r}: use 'heuristic', a local checkpoint folder, or openai:MODEL@BASE_URL"
        )

    @property
    def label(self) -> str:
        """A short, stable name for reports (``heuristic``, ``hf:<folder>``, ``openai:<model>``)."""
        if self.kind == "heuristic":
            return "heuristic"
        if self.kind == "hf":
            return f"hf:{Path(self.model).name}"
        return f"openai:{self.model}"

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "model": self.model, "label": self.label, "max_new_tokens": self.max_new_tokens}
        if self.kind == "openai":
            d.update(base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries)
        return d


class Agent:
    """Base class: ``act`` returns the model's raw output text for one step."""

    spec: AgentSpec

    def act(self, step: Step, view: View, contract: Contract, screenshot_png: bytes) -> str:
        """Return the raw output text for ``step``.

        Args:
            step: the live step (intent, previous guides, candidate menu in the som view).
            view: the grounding view.
            contract: the output contract.
            screenshot_png: the screenshot shown to the model (SoM-labelled in the som view).
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release the agent's resources (models, connections)."""

    def counters(self) -> dict[str, int]:
        """Running totals of the agent's endpoint traffic (``requests``, ``retries``, ``timeouts``,
        ``cache_hits``); empty for an agent without an endpoint. The caller takes differences."""
        return {}


class HeuristicAgent(Agent):
    """The no-model baseline; it reads the candidate menu of the step, never a prompt.

    It tracks its progress through the previous guides (a value already typed is named in
    an earlier guide), so live it is meaningful under contracts J and JG, where its own
    guides are fed back; under A it sees no history and repeats its first action.
    """

    def __init__(self, spec: AgentSpec):
        from mag_dataset.runners import HeuristicRunner

        self.spec = spec
        self.runner = HeuristicRunner()

    def act(self, step: Step, view: View, contract: Contract, screenshot_png: bytes) -> str:
        from mag_dataset.runners import step_messages

        return self.runner.generate(step_messages(step, view, contract))


class HFAgent(Agent):
    """A local transformers checkpoint (image-text-to-text), greedy decoding
    (:class:`mag_dataset.runners.HFRunner`)."""

    def __init__(self, spec: AgentSpec):
        import torch

        from mag_dataset.runners import HFRunner

        self.spec = spec
        device = spec.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.runner = HFRunner(spec.model, device=device, max_new_tokens=spec.max_new_tokens)
        self.device = device

    def act(self, step: Step, view: View, contract: Contract, screenshot_png: bytes) -> str:
        from mag_dataset.runners import step_messages

        return self.runner.generate(step_messages(step, view, contract, screenshot_png))

    def close(self) -> None:
        self.runner.close()


class OpenAIAgent(Agent):
    """An OpenAI-compatible endpoint (:class:`mag_dataset.runners.OpenAIRunner`)."""

    def __init__(self, spec: AgentSpec):
        from mag_dataset.runners import OpenAIRunner

        self.spec = spec
        self.runner = OpenAIRunner(
            spec.base_url, spec.model, params={"max_tokens": spec.max_new_tokens}, api_key_env=spec.api_key_env,
            cache_dir=spec.cache_dir, timeout=spec.timeout, max_retries=spec.max_retries,
        )
        self.client = self.runner.client

    def counters(self) -> dict[str, int]:
        return {k: self.client.stats[k] for k in ("requests", "retries", "timeouts", "cache_hits")}

    def close(self) -> None:
        self.runner.close()

    def act(self, step: Step, view: View, contract: Contract, screenshot_png: bytes) -> str:
        from mag_dataset.harness.preflight import FATAL_STATUSES
        from mag_dataset.llm_client import LLMConfigError, LLMHTTPError
        from mag_dataset.runners import step_messages

        try:
            return self.runner.generate(step_messages(step, view, contract, screenshot_png))
        except LLMConfigError as e:
            raise AgentConfigError(str(e)) from None
        except LLMHTTPError as e:
            if e.status in FATAL_STATUSES:  # wrong key or model name: every step would fail alike
                raise AgentConfigError(f"{self.spec.label} at {self.spec.base_url}: {e}") from None
            raise


#: agent kind -> class. A literal table on purpose: anyone can grep it, and nothing registers itself on import.
AGENTS: dict[str, type[Agent]] = {"heuristic": HeuristicAgent, "hf": HFAgent, "openai": OpenAIAgent}


def make_agent(spec: AgentSpec) -> Agent:
    """Make the agent ``spec`` describes (loads the model for ``hf``)."""
    return AGENTS[spec.kind](spec)
