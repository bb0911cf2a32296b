"""The report of a live-evaluation run: per-episode outcomes, strict success with a Wilson interval, rates.

Success is *strict*: MiniWoB's raw reward == 1 (BrowserGym's own reward counts partial
credit as success); for other benchmarks, BrowserGym's reward == 1. The report gives the
strict success rate with a 95 % Wilson interval, steps per episode, format-failure and
invalid-action rates, per task and overall (denominator: every step the agent took), and
``report.md`` the same as a table. Pure functions over :class:`EpisodeResult`; running
episodes is :mod:`mag_dataset.harness.live_eval.episode`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mag_dataset.harness.live_eval.config import LiveEvalConfig

REPORT_FORMAT = "mag-live-eval-report"
REPORT_VERSION = 1
#: z for a two-sided 95 % interval.
Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of a binomial proportion; None when ``n`` is 0.

    Args:
        successes: number of successes.
        n: number of trials.
        z: normal quantile (1.96 for 95 %).
    """
    if n == 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class EpisodeResult:
    """Outcome of one live episode (what a worker sends back)."""

    task: str
    seed: int
    episode_id: str
    success: bool
    raw_reward: float
    steps: int
    format_failures: int
    invalid_actions: int
    ended_by: str
    seconds: float
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def summarize(results: list[EpisodeResult]) -> dict[str, Any]:
    """Aggregate episodes: strict success rate with Wilson 95 % CI, steps, failure rates.

    Rates are over all agent steps of the episodes; ``None`` when there were no steps.
    """
    n = len(results)
    k = sum(r.success for r in results)
    steps = sum(r.steps for r in results)
    ci = wilson_interval(k, n)
    return {
        "episodes": n,
        "successes": k,
        "success_rate": _rate(k, n),
        "success_ci95": list(ci) if ci is not None else None,
        "steps": steps,
        "steps_per_episode": _rate(steps, n),
        "format_failures": sum(r.format_failures for r in results),
        "format_failure_rate": _rate(sum(r.format_failures for r in results), steps),
        "invalid_actions": sum(r.invalid_actions for r in results),
        "invalid_action_rate": _rate(sum(r.invalid_actions for r in results), steps),
        "errors": sum(r.error is not None for r in results),
    }


def build_report(config: LiveEvalConfig, results: list[EpisodeResult], seconds: float) -> dict[str, Any]:
    """The run's report: configuration, per-task and overall summaries, every episode."""
    from mag_dataset import __version__
    from mag_dataset.prompts import PROMPT_VERSION

    order = {t: i for i, t in enumerate(config.tasks)}
    results = sorted(results, key=lambda r: (order[r.task], r.seed))
    return {
        "format": REPORT_FORMAT,
        "format_version": REPORT_VERSION,
        "mag_dataset_version": __version__,
        "browsergym_version": _browsergym_version(),
        "prompt_version": PROMPT_VERSION,
        "agent": config.agent.to_dict(),
        "view": config.view.value,
        "contract": config.contract.value,
        "max_steps": config.max_steps,
        "episodes_per_task": config.episodes,
        "seeds": [config.seed, config.seed + config.episodes - 1],
        "success": "strict: MiniWoB raw reward == 1 (other benchmarks: reward == 1)",
        "tasks": {t: summarize([r for r in results if r.task == t]) for t in config.tasks},
        "overall": summarize(results),
        "episodes": [r.to_dict() for r in results],
        "wall_seconds": round(seconds, 2),
    }


def _browsergym_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("browsergym-core")
    except Exception:  # pragma: no cover - the [live] extra installs it
        return None


def _fmt(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.2f}"


def format_table(report: dict[str, Any]) -> str:
    """A Markdown table of the report, one row per task and an overall row."""
    head = (
        f"Live evaluation: agent {report['agent']['label']}, view {report['view']}, contract {report['contract']}, "
        f"{report['episodes_per_task']} episode(s)/task, max {report['max_steps']} steps\n\n"
        "| task | episodes | strict success % | 95% CI (Wilson) | steps/episode | format-failure % | invalid-action % | errors |\n"
        "|---|---:|---:|---|---:|---:|---:|---:|\n"
    )
    rows = []
    for name, s in [*report["tasks"].items(), ("overall", report["overall"])]:
        ci = s["success_ci95"]
        ci_txt = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "-"
        rows.append(
            f"| {name} | {s['episodes']} | {_fmt(s['success_rate'], True)} | {ci_txt} | {_fmt(s['steps_per_episode'])} | "
            f"{_fmt(s['format_failure_rate'], True)} | {_fmt(s['invalid_action_rate'], True)} | {s['errors']} |"
        )
    return head + "\n".join(rows) + "\n"
