"""The report of a live-evaluation run: per-episode outcomes, strict success with a Wilson interval, rates.

Success is *strict*: MiniWoB's raw reward == 1 (BrowserGym's own reward counts partial
credit as success); for other benchmarks, BrowserGym's reward == 1. Every episode ends in
one of :data:`STATUSES`:

* ``success``;
* ``failure`` — the model's: its outputs did not parse, its actions could not be executed,
  or the task's check did not pass (``check`` says what it expected and what it found);
* ``error`` — the infrastructure's: the endpoint still failing after its retries, a browser
  that crashed, a site that did not answer. Not the model's doing, so an errored episode is
  left out of the success rate and the step rates and counted apart (``errors``); a rerun
  of the same command redoes it;
* ``interrupted`` — stopped by Ctrl-C; redone by a rerun, never in a finished report.

The report gives, per task and overall, the strict success rate over the *scored*
episodes (success or failure) with a 95 % Wilson interval, steps per episode, format-failure
and invalid-action rates (denominator: every step of the scored episodes), the errors, and
the endpoint's traffic (requests, retries, timed-out attempts, over all episodes). The same
summary is given per site, per template and per kind of task (:data:`BREAKDOWNS`;
:func:`breakdowns`), and per action type of the agent's steps (:func:`action_breakdown`).
``report.md`` is the same as tables, with one line per failed or errored episode saying why.
Pure functions over :class:`EpisodeResult`; running episodes is
:mod:`mag_dataset.harness.live_eval.episode`, the export and the results file
:mod:`mag_dataset.harness.live_eval.results`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mag_dataset.actions import ActionType
from mag_dataset.harness.live_eval.config import LiveEvalConfig
from mag_dataset.harness.live_eval.tasks import task_site
from mag_dataset.live.page_step import site_and_template

REPORT_FORMAT = "mag-live-eval-report"
#: 2: episode status (errors left out of the rates), endpoint traffic, the check's expected/found;
#: 3: breakdowns per site, template, kind and action type; each episode's site, template,
#: kind, action counts and environment; provenance
REPORT_VERSION = 3
#: How an episode ended (see the module docstring).
STATUSES = ("success", "failure", "error", "interrupted")
#: Endpoint traffic counted per episode (all zero for an agent without an endpoint).
TRAFFIC = ("requests", "retries", "timeouts")
#: z for a two-sided 95 % interval.
Z95 = 1.959963984540054
#: How episodes are grouped besides per task (:func:`episode_labels`): the site (family), the
#: intent template, the kind of task. Per action type is :func:`action_breakdown`.
BREAKDOWNS = ("site", "template", "kind")


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
    # at 0 or n the bound is exactly 0 or 1 (rounding left 3e-17 in one of them)
    return (0.0 if successes == 0 else max(0.0, centre - half), 1.0 if successes == n else min(1.0, centre + half))


@dataclass(frozen=True)
class EpisodeResult:
    """Outcome of one live episode (what a worker sends back).

    Attributes:
        status: one of :data:`STATUSES`; derived from ``success`` and ``error`` when left empty.
        error: what went wrong in the infrastructure (status ``error``), else None.
        requests, retries, timeouts: the endpoint's HTTP attempts, retries among them, and
            attempts that timed out, during this episode.
        check: for a failed episode, what the task's check expected and found
            (``{"expected", "found", "reason", ...}``, see :mod:`mag_dataset.harness.live_eval.why`).
        actions: the agent's parsed actions by type, ``{type: {"steps", "invalid"}}``
            (:func:`action_counts`); None in a result written before they were counted.
        environment: what the episode ran against
            (:func:`mag_dataset.harness.live_eval.tasks.task_environment`), or None.
    """

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
    status: str = ""
    requests: int = 0
    retries: int = 0
    timeouts: int = 0
    check: dict[str, Any] | None = None
    actions: dict[str, dict[str, int]] | None = None
    environment: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.status:
            object.__setattr__(self, "status", "error" if self.error else "success" if self.success else "failure")
        if self.status not in STATUSES:
            raise ValueError(f"episode status {self.status!r} is not one of {STATUSES}")
        if (self.status == "success") != bool(self.success):
            raise ValueError(f"episode {self.episode_id}: status {self.status} with success={self.success}")

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EpisodeResult":
        """The result :meth:`to_dict` wrote (also one an older version wrote, without the newer fields)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def action_counts(trajectory: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """The agent's parsed actions of an episode's attempt log by type: ``{type: {"steps", "invalid"}}``.

    A step counts under the type of the action its output parsed to (a format failure or an
    agent error under none); ``invalid`` are those that could not be executed. Types in
    :class:`~mag_dataset.actions.ActionType` order.
    """
    counts: dict[str, dict[str, int]] = {}
    for attempt in trajectory:
        action = attempt.get("action") if attempt.get("format_ok") else None
        if not isinstance(action, dict) or not action.get("type"):
            continue
        c = counts.setdefault(str(action["type"]), {"steps": 0, "invalid": 0})
        c["steps"] += 1
        c["invalid"] += attempt.get("invalid_action") is not None
    return {t: counts[t] for t in _action_order(counts)}


def _action_order(types: Any) -> list[str]:
    order = {a.value: i for i, a in enumerate(ActionType)}
    return sorted(types, key=lambda t: (order.get(t, len(order)), t))


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def summarize(results: list[EpisodeResult]) -> dict[str, Any]:
    """Aggregate episodes: strict success rate with Wilson 95 % CI, steps, failure rates.

    The success rate and the step rates are over the *scored* episodes (success or
    failure): an errored or interrupted episode says nothing about the model. Step rates
    are over the steps of those episodes; ``None`` when there were none. The endpoint's
    traffic is over every episode.
    """
    scored = [r for r in results if r.status in ("success", "failure")]
    n = len(scored)
    k = sum(r.success for r in scored)
    steps = sum(r.steps for r in scored)
    ci = wilson_interval(k, n)
    return {
        "episodes": len(results),
        "scored": n,
        "successes": k,
        "failures": n - k,
        "success_rate": _rate(k, n),
        "success_ci95": list(ci) if ci is not None else None,
        "steps": steps,
        "steps_per_episode": _rate(steps, n),
        "format_failures": sum(r.format_failures for r in scored),
        "format_failure_rate": _rate(sum(r.format_failures for r in scored), steps),
        "invalid_actions": sum(r.invalid_actions for r in scored),
        "invalid_action_rate": _rate(sum(r.invalid_actions for r in scored), steps),
        "errors": sum(r.status == "error" for r in results),
        "interrupted": sum(r.status == "interrupted" for r in results),
        **{name: sum(getattr(r, name) for r in results) for name in TRAFFIC},
    }


def episode_labels(task: str, kind: str) -> dict[str, str]:
    """The groups of :data:`BREAKDOWNS` an episode of ``task`` falls in (``kind``: its task's kind,
    :func:`mag_dataset.harness.live_eval.tasks.task_kind`)."""
    return {"site": task_site(task), "template": site_and_template(task)[1], "kind": kind}


def breakdowns(results: list[EpisodeResult], kinds: dict[str, str]) -> dict[str, dict[str, dict[str, Any]]]:
    """:func:`summarize` per site, per template and per kind of task, and :func:`action_breakdown`.

    Args:
        results: the episodes, in report order (groups are listed in order of first appearance).
        kinds: task id -> its kind.

    Returns:
        ``{"site": {group: summary}, "template": ..., "kind": ..., "action": ...}``.
    """
    groups: dict[str, dict[str, list[EpisodeResult]]] = {name: {} for name in BREAKDOWNS}
    for r in results:
        for name, label in episode_labels(r.task, kinds[r.task]).items():
            groups[name].setdefault(label, []).append(r)
    out: dict[str, dict[str, dict[str, Any]]] = {
        name: {label: summarize(rs) for label, rs in by.items()} for name, by in groups.items()}
    out["action"] = action_breakdown(results)
    return out


def action_breakdown(results: list[EpisodeResult]) -> dict[str, dict[str, Any]]:
    """Per action type of the agent's steps: the episodes that used it and how its steps went.

    For each type: ``episodes`` (those with at least one step of the type), ``scored`` and
    ``successes`` among them, ``success_rate`` with its Wilson interval over the scored ones
    (how often an episode that used the action succeeded), ``errors`` (errored or interrupted
    episodes that used it, counted apart), and over the steps of the scored episodes:
    ``steps`` of the type, ``invalid`` ones, ``invalid_action_rate`` with its Wilson interval.
    Episodes written before actions were counted (``actions`` None) are left out.
    """
    per: dict[str, dict[str, Any]] = {}
    for r in results:
        for action, c in (r.actions or {}).items():
            if not c.get("steps"):
                continue
            a = per.setdefault(action, {"episodes": 0, "scored": 0, "successes": 0, "errors": 0, "steps": 0,
                                        "invalid": 0})
            a["episodes"] += 1
            if r.status in ("success", "failure"):
                a["scored"] += 1
                a["successes"] += r.success
                a["steps"] += c["steps"]
                a["invalid"] += c.get("invalid", 0)
            else:
                a["errors"] += 1
    out = {}
    for action in _action_order(per):
        a = per[action]
        ci = wilson_interval(a["successes"], a["scored"])
        ici = wilson_interval(a["invalid"], a["steps"])
        out[action] = {**a, "success_rate": _rate(a["successes"], a["scored"]),
                       "success_ci95": list(ci) if ci is not None else None,
                       "invalid_action_rate": _rate(a["invalid"], a["steps"]),
                       "invalid_action_ci95": list(ici) if ici is not None else None}
    return out


def build_report(config: LiveEvalConfig, results: list[EpisodeResult], seconds: float | None,
                 kinds: dict[str, str] | None = None) -> dict[str, Any]:
    """The run's report: configuration, per-task, per-group and overall summaries, every episode.

    Args:
        config: the run.
        results: its episodes (any order).
        seconds: the run's wall time (None when the report is rebuilt from a run folder).
        kinds: task id -> kind of task (default :func:`~mag_dataset.harness.live_eval.tasks.task_kind`).
    """
    from mag_dataset import __version__
    from mag_dataset.harness.live_eval.tasks import task_kind
    from mag_dataset.prompts import PROMPT_VERSION

    order = {t: i for i, t in enumerate(config.tasks)}
    results = sorted(results, key=lambda r: (order[r.task], r.seed))
    kinds = kinds if kinds is not None else {t: task_kind(t) for t in config.tasks}
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
        "seeds": [config.seed + i for i in range(config.episodes)],
        "success": "strict: MiniWoB raw reward == 1 (other benchmarks: reward == 1); over the scored episodes "
                   "(errored ones, the infrastructure's, are left out and counted under errors)",
        "tasks": {t: summarize([r for r in results if r.task == t]) for t in config.tasks},
        "overall": summarize(results),
        "breakdowns": breakdowns(results, kinds),
        "episodes": [{**r.to_dict(), **episode_labels(r.task, kinds[r.task])} for r in results],
        "wall_seconds": round(seconds, 2) if seconds is not None else None,
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
    """A Markdown table of the report, one row per task and an overall row, then one line per
    failed episode (what its check expected and found) and per errored episode (what broke)."""
    head = (
        f"Live evaluation: agent {report['agent']['label']}, view {report['view']}, contract {report['contract']}, "
        f"{report['episodes_per_task']} episode(s)/task, max {report['max_steps']} steps\n\n"
        "| task | episodes | scored | strict success % | 95% CI (Wilson) | steps/episode | format-failure % | "
        "invalid-action % | errors | requests | retries | timeouts |\n"
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for name, s in [*report["tasks"].items(), ("overall", report["overall"])]:
        ci = s["success_ci95"]
        ci_txt = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "-"
        rows.append(
            f"| {name} | {s['episodes']} | {s['scored']} | {_fmt(s['success_rate'], True)} | {ci_txt} | "
            f"{_fmt(s['steps_per_episode'])} | {_fmt(s['format_failure_rate'], True)} | "
            f"{_fmt(s['invalid_action_rate'], True)} | {s['errors']} | {s['requests']} | {s['retries']} | "
            f"{s['timeouts']} |"
        )
    text = head + "\n".join(rows) + "\n" + format_breakdowns(report)
    failed = [e for e in report["episodes"] if e.get("status") == "failure"]
    errored = [e for e in report["episodes"] if e.get("status") in ("error", "interrupted")]
    if failed:
        text += "\nFailed episodes (the model's):\n\n" + "".join(f"- {failure_line(e)}\n" for e in failed)
    if errored:
        text += ("\nErrored episodes (the infrastructure's; left out of the rates, redone by running the same "
                 "command again):\n\n" + "".join(f"- {why_line(e)}\n" for e in errored))
    return text


def _ci_txt(ci: list[float] | None) -> str:
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "-"


#: The title of each breakdown's table in report.md.
_TITLES = {"site": "Per site", "template": "Per template", "kind": "Per kind of task"}


def format_breakdowns(report: dict[str, Any]) -> str:
    """The report's breakdowns as Markdown tables (empty for a report without them).

    The per-template table is left out when every template is one task (it would repeat the
    per-task table); report.json has it all the same.
    """
    groups = report.get("breakdowns")
    if not groups:
        return ""
    text = ""
    for name, title in _TITLES.items():
        by = groups.get(name) or {}
        if name == "template" and len(by) == len(report.get("tasks", {})):
            continue
        text += (f"\n{title} (strict success over the scored episodes; errored ones counted apart):\n\n"
                 f"| {name} | episodes | scored | errors | strict success % | 95% CI (Wilson) | steps/episode |\n"
                 "|---|---:|---:|---:|---:|---|---:|\n")
        for label, s in by.items():
            text += (f"| {label} | {s['episodes']} | {s['scored']} | {s['errors']} | {_fmt(s['success_rate'], True)} | "
                     f"{_ci_txt(s['success_ci95'])} | {_fmt(s['steps_per_episode'])} |\n")
    actions = groups.get("action") or {}
    if actions:
        text += ("\nPer action type (episodes whose agent took the action at least once; steps of the scored "
                 "episodes):\n\n| action | episodes | scored | errors | strict success % | 95% CI (Wilson) | steps | "
                 "invalid-action % | 95% CI (Wilson) |\n|---|---:|---:|---:|---:|---|---:|---:|---|\n")
        for action, a in actions.items():
            text += (f"| {action} | {a['episodes']} | {a['scored']} | {a['errors']} | {_fmt(a['success_rate'], True)} | "
                     f"{_ci_txt(a['success_ci95'])} | {a['steps']} | {_fmt(a['invalid_action_rate'], True)} | "
                     f"{_ci_txt(a['invalid_action_ci95'])} |\n")
    return text


def why_line(episode: dict[str, Any]) -> str:
    """Why an episode ended as it did, in one line: empty for a success, :func:`failure_line`
    for a failure, the error for an errored or interrupted one."""
    status = episode.get("status")
    if status == "failure":
        return failure_line(episode)
    if status in ("error", "interrupted"):
        return f"{episode['episode_id']}: {status}: {episode.get('error') or '-'}"
    return ""


def failure_line(episode: dict[str, Any]) -> str:
    """One line saying why an episode failed: how it ended, what the check expected and found."""
    e = episode
    parts = [f"{e['episode_id']}: ended by {e['ended_by']} after {e['steps']} step(s)"]
    if e.get("format_failures"):
        parts.append(f"{e['format_failures']} format failure(s)")
    if e.get("invalid_actions"):
        parts.append(f"{e['invalid_actions']} invalid action(s)")
    check = e.get("check") or {}
    if check.get("expected") is not None:
        parts.append(f"expected {check['expected']}")
    if check.get("found") is not None:
        parts.append(f"found {check['found']}")
    if check.get("reason"):
        parts.append(f"check: {check['reason']}")
    return "; ".join(parts)
