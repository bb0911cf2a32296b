"""Live evaluation of an agent in BrowserGym tasks (MiniWoB++ offline; WebArena/WorkArena too).

MAG (arXiv 2607.10079) evaluates the same agent offline and in live environments; WebMRE
(arXiv 2609.27353) notes that live deployments drifted by up to 20 points, which is why the
offline protocol exists. This module is the live half: it runs an agent closed-loop, with
the *same* prompt builder and output parser as the offline protocol
(:func:`mag_dataset.prompts.build_messages`, :func:`mag_dataset.parsing.parse_output`).

Each step of an episode:

1. observe the page (:func:`mag_dataset.live.observe.observe`: raw and Set-of-Mark
   screenshots, candidate menu with BrowserGym bids as ids, screenshot<->page conversion);
2. build a :class:`~mag_dataset.schema.Step` from it: the goal as intent, the agent's *own*
   earlier guides as ``previous_guides`` (empty under contract A), the candidate menu;
3. ask the agent for its output text and parse it for the view and contract;
4. execute the action (:func:`mag_dataset.live.execute.to_browsergym_action`: som acts on the
   element id = bid; coord clicks the point converted from screenshot to page pixels).

Outcomes per step (denominator: every step the agent took):

* **format failure** — the output does not parse (or the agent raised, e.g. an endpoint
  that kept failing after its retries). Nothing is executed; BrowserGym's ``noop()`` is
  stepped so the page keeps its own time.
* **invalid action** — the output parses but cannot be executed: the element id is not in
  the candidate menu, the action lacks what its view needs, or BrowserGym reports an error
  executing it — except a timeout that struck after Playwright had performed the action
  (:func:`performed_despite_timeout`; BrowserGym's element actions have a fixed 500 ms
  timeout). A coord-view point on no candidate is executed (the page decides what it hits).
* ``finish`` ends the episode (its answer, if any, is sent to the chat first); so do the
  task ending (MiniWoB's ``DONE``) and ``max_steps``.

Success is *strict*: MiniWoB's raw reward == 1 (BrowserGym's own reward counts partial
credit as success); for other benchmarks, BrowserGym's reward == 1. The report gives the
strict success rate with a 95 % Wilson interval, steps per episode, format-failure and
invalid-action rates, per task and overall.

Trajectories are written in the raw episode format (:mod:`mag_dataset.raw`), one folder
per episode under ``OUT/episodes/``, so a live run can be inspected or rebuilt into a
dataset with ``mag build --raw OUT/episodes --include-failed`` (the builder skips failed
episodes otherwise). Every attempt's screenshots are saved; the
episode's ``steps`` are the executed actions that resolve to a candidate element (the raw
format requires a target box for targeted actions), each with the agent's guide (or, under
contract A, the template guide of its action); the full attempt log — raw output, parse
result, BrowserGym action, error, reward — is ``metadata["trajectory"]``. An episode in
which nothing executable happened has no steps and ``success: false``.

Episodes run in parallel across worker processes (``multiprocessing`` spawn; Playwright
objects are bound to the thread that made them, so each worker owns its browser and agent),
or, with ``backend="ray"``, as one Ray task per episode on a local Ray instance or a cluster
(:mod:`mag_dataset.harness.ray_backend`); both give the same report for the same tasks and seeds.

Task ids are BrowserGym ids: ``miniwob.click-button`` (or just ``click-button``; the pages
ship in pip ``miniwob``, nothing to serve), ``webarena.310``, ``workarena.servicenow...``.
WebArena and WorkArena need their BrowserGym package installed (``pip install
browsergym-webarena`` / ``browsergym-workarena``) and their environment variables set
(``WA_SHOPPING``, ``WA_REDDIT``, ... for WebArena; ``SNOW_INSTANCE_URL`` and credentials
for WorkArena), exactly as BrowserGym documents; this module then creates them through the
same patched launcher (system Chromium, no chat browser).
"""

from __future__ import annotations

import importlib
import json
import math
import multiprocessing
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mag_dataset.actions import ACTION_SPACE, ActionType, Contract, View
from mag_dataset.fileio import atomic_write
from mag_dataset.harness.agents import Agent, AgentConfigError, AgentSpec, make_agent
from mag_dataset.harness.ray_backend import BACKENDS, RayBackendError, RayOptions
from mag_dataset.raw import RawEpisode, RawStep, write_episode
from mag_dataset.recording import step_from_page, store_step_images
from mag_dataset.schema import Action, Candidate, GuideSource, Split, Step, box_center

REPORT_FORMAT = "mag-live-eval-report"
REPORT_VERSION = 1
#: Written when a run starts; a folder with it but no report.json is an interrupted run.
RUN_MARKER = ".live-eval-run"
#: z for a two-sided 95 % interval.
Z95 = 1.959963984540054

#: BrowserGym benchmark prefix -> the package whose import registers its tasks.
BENCHMARK_PACKAGES: dict[str, str] = {
    "miniwob": "browsergym.miniwob",
    "webarena": "browsergym.webarena",
    "visualwebarena": "browsergym.visualwebarena",
    "workarena": "browsergym.workarena",
    "assistantbench": "browsergym.assistantbench",
    "weblinx": "browsergym.weblinx",
    "sites": "mag_dataset.sites",  # this package's real web applications, see mag_dataset.sites
}

#: Contracts a live agent can run under (G has no action to execute).
LIVE_CONTRACTS: tuple[Contract, ...] = (Contract.A, Contract.J, Contract.JG)


class LiveEvalError(ValueError):
    """A live-evaluation configuration is invalid (unknown task, bad numbers, ...)."""


# ----------------------------------------------------------------------------- config


def normalize_task_id(task: str) -> str:
    """``click-button`` / ``browsergym/miniwob.click-button`` -> ``miniwob.click-button``.

    Raises:
        LiveEvalError: for an empty id or an unknown benchmark prefix.
    """
    t = task.strip()
    if t.startswith("browsergym/"):
        t = t[len("browsergym/") :]
    if not t:
        raise LiveEvalError("empty task id")
    if "." not in t:
        t = f"miniwob.{t}"
    prefix = t.split(".", 1)[0]
    if prefix not in BENCHMARK_PACKAGES:
        raise LiveEvalError(f"unknown BrowserGym benchmark {prefix!r} in task {task!r}; known: {sorted(BENCHMARK_PACKAGES)}")
    return t


def check_task(task_id: str) -> None:
    """Fail early, with a clear message, if ``task_id`` cannot be created here.

    Raises:
        LiveEvalError: unknown MiniWoB++ task, or benchmark package not installed.
    """
    prefix, name = task_id.split(".", 1)
    if prefix == "miniwob":
        from mag_dataset.live.env import LiveEnvError, task_class

        try:
            task_class(name)
        except LiveEnvError as e:
            raise LiveEvalError(str(e)) from None
        return
    if prefix == "sites":
        from mag_dataset.sites import SiteError, task_class as site_task_class

        try:
            site_task_class(task_id).site_class().running_url()
        except SiteError as e:
            raise LiveEvalError(str(e)) from None
        return
    package = BENCHMARK_PACKAGES[prefix]
    try:
        importlib.import_module(package)
    except ImportError:
        raise LiveEvalError(
            f"task {task_id!r} needs {package} (pip install {package.replace('.', '-')}) and its environment "
            "variables; see mag_dataset.harness.live_eval"
        ) from None
    import gymnasium

    if f"browsergym/{task_id}" not in gymnasium.registry:
        raise LiveEvalError(f"unknown BrowserGym task {task_id!r}")


@dataclass(frozen=True)
class LiveEvalConfig:
    """One live evaluation run.

    Attributes:
        agent: what to run.
        tasks: BrowserGym task ids (normalised, see :func:`normalize_task_id`).
        episodes: episodes per task; episode ``i`` of a task uses seed ``seed + i``.
        view: grounding view (som: element ids; coord: pixel coordinates).
        contract: output contract (A, J or JG).
        out_dir: run folder (``report.json``, ``report.md``, ``episodes/``).
        max_steps: agent steps per episode before it is cut off.
        workers: worker processes running episodes in parallel.
        seed: first task seed.
        overwrite: replace an existing run in ``out_dir``.
        progress: show a progress bar.
        backend: ``local`` (``workers`` processes on this machine) or ``ray`` (one Ray task
            per episode, see :mod:`mag_dataset.harness.ray_backend`).
        ray: scheduling options of the Ray backend (default :class:`RayOptions`).
    """

    agent: AgentSpec
    tasks: tuple[str, ...]
    episodes: int
    view: View
    contract: Contract
    out_dir: Path
    max_steps: int = 10
    workers: int = 1
    seed: int = 0
    overwrite: bool = False
    progress: bool = True
    backend: str = "local"
    ray: RayOptions | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "view", View(self.view))
        object.__setattr__(self, "contract", Contract(self.contract))
        object.__setattr__(self, "out_dir", Path(self.out_dir))
        if self.contract not in LIVE_CONTRACTS:
            raise LiveEvalError(f"contract {self.contract.value} has no action to execute; use one of A, J, JG")
        if not self.tasks:
            raise LiveEvalError("no tasks given")
        tasks = tuple(normalize_task_id(t) for t in self.tasks)
        if len(set(tasks)) != len(tasks):
            raise LiveEvalError(f"duplicate task ids in {list(tasks)}")
        object.__setattr__(self, "tasks", tasks)
        for name in ("episodes", "max_steps", "workers"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise LiveEvalError(f"{name} must be a positive integer, got {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            # BrowserGym refuses a negative seed inside every episode: each would be a counted failure
            raise LiveEvalError(f"seed must be an integer >= 0, got {self.seed!r}")
        if self.backend not in BACKENDS:
            raise LiveEvalError(f"unknown backend {self.backend!r}; choose one of {list(BACKENDS)}")
        if self.backend == "ray":
            if self.workers != 1:
                raise LiveEvalError("--workers is for the local backend; under --backend ray as many episodes run "
                                    "at once as the cluster has CPUs for (--ray-cpus-per-episode)")
            if self.ray is None:
                object.__setattr__(self, "ray", RayOptions())
        elif self.ray is not None:
            raise LiveEvalError("Ray options need backend 'ray'")

    def jobs(self) -> list[tuple[str, int]]:
        """(task id, seed) of every episode, in report order."""
        return [(t, self.seed + i) for t in self.tasks for i in range(self.episodes)]


# ----------------------------------------------------------------------------- metrics


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


# ----------------------------------------------------------------------------- one episode


def _make_env(task_id: str) -> Any:
    """A BrowserGym env for ``task_id`` launched with the system Chromium (see live.env)."""
    prefix, name = task_id.split(".", 1)
    if prefix == "miniwob":
        from mag_dataset.live.env import make_env

        return make_env(name)
    if prefix == "sites":
        from mag_dataset.live.env import make_site_env

        return make_site_env(task_id)
    from mag_dataset.live.env import make_browsergym_env

    return make_browsergym_env(task_id, BENCHMARK_PACKAGES[prefix])


def _outcome(env: Any, task_id: str, reward: float, info: dict[str, Any], terminated: bool, truncated: bool) -> tuple[bool, bool, float]:
    """``(done, strict_success, raw_reward)`` after a step.

    MiniWoB++: MiniWoB's own raw reward == 1 (read from the page when BrowserGym terminates,
    see :func:`mag_dataset.live.env.episode_outcome`). Other benchmarks: BrowserGym's
    reward >= 1 at termination.
    """
    if task_id.startswith("miniwob."):
        from mag_dataset.live.env import episode_outcome

        done, success, raw = episode_outcome(env, info, terminated)
        return done or truncated, success, raw
    done = bool(terminated or truncated)
    return done, bool(terminated and reward >= 1.0), float(reward)


def _site_and_template(task_id: str) -> tuple[str, str]:
    """``(site, intent_template_id)`` of a task id, as the recorder names them."""
    if task_id.startswith("miniwob."):
        name = task_id.split(".", 1)[1]
        return name, name
    if task_id.startswith("sites."):
        _, site, template = task_id.split(".", 2)
        return site, f"{site}.{template}"
    return task_id, task_id


def episode_id_for(task_id: str, seed: int) -> str:
    """The episode (folder) id of ``task_id`` at ``seed``, as the recorder names it."""
    return f"{task_id if task_id.startswith('sites.') else _site_and_template(task_id)[0]}.seed-{seed}"


def live_step(
    task_id: str, episode_id: str, index: int, max_steps: int, ob: Any, guides: list[str], view: View
) -> Step:
    """The benchmark step an agent sees at attempt ``index`` of a live episode.

    The gold fields (``guide``, ``action``, ``target_bbox``) are unknown live; they hold a
    ``finish`` placeholder that neither the prompt builder nor the heuristic reads. The
    candidate menu is kept in both views: the prompt builder shows it only in the som view,
    and the heuristic reference needs it in the coord view too.
    """
    site, template = _site_and_template(task_id)
    return Step(
        step_id=f"{episode_id}:{index}",
        task_id=episode_id,
        site=site,
        intent=ob.goal,
        intent_template_id=template,
        step_index=index,
        num_steps=max_steps,
        image_width=ob.width,
        image_height=ob.height,
        previous_guides=tuple(guides),
        guide="",
        guide_source=GuideSource.TEMPLATE,
        action=Action(type=ActionType.FINISH),
        target_bbox=None,
        split=Split.TEST,
        url=ob.url,
        candidates=tuple(ob.candidates),
    )


def resolve_target(action: Action, view: View, candidates: list[Candidate]) -> tuple[Action, Candidate | None, str | None]:
    """Check a parsed action against the live candidate menu.

    Returns:
        ``(grounded action, target candidate, problem)``: for a targeted action the grounded
        action carries both the element id and a coordinate (som: the candidate's box centre;
        coord: the predicted point, element = the smallest candidate box containing it, with
        the coordinate-restoration tie-break of :func:`mag_dataset.harness.unify.restore_element`).
        ``problem`` is a reason the action cannot be executed, else None.
        A coord point on no candidate is executable (the page decides) but has no target.
    """
    if not ACTION_SPACE[action.type].targeted:
        return action, None, None
    by_id = {c.id: c for c in candidates}
    if view is View.SOM:
        if action.element_id is None or action.element_id not in by_id:
            return action, None, f"element {action.element_id!r} is not in the candidate menu"
        target = by_id[action.element_id]
        point = box_center(target.bbox)
        return _with_target(action, target.id, point), target, None
    if action.coordinate is None:
        return action, None, "no coordinate"
    from mag_dataset.harness.unify import restore_element

    target = restore_element(action.coordinate, candidates)
    if target is None:
        return action, None, None
    return _with_target(action, target.id, action.coordinate), target, None


def _with_target(action: Action, element_id: str, point: tuple[float, float]) -> Action:
    d = action.to_dict()
    d["element_id"] = element_id
    d["coordinate"] = [round(point[0], 2), round(point[1], 2)]
    return Action.from_dict(d)


def performed_despite_timeout(error: str) -> bool:
    """Whether a BrowserGym error is a timeout that struck *after* Playwright performed the action.

    BrowserGym gives element actions a fixed 500 ms timeout; with MiniWoB's ``slow_mo`` on a
    loaded machine, a click is often dispatched (Playwright's call log reaches "performing
    click action") and then times out waiting for its acknowledgement, although the page
    received it (the task may even be solved). Such a step is not an invalid action. A
    timeout while Playwright was still retrying (element covered, not visible, detached)
    is one.
    """
    return error.startswith("TimeoutError") and "performing " in error and "retrying" not in error


def _template_guide(action: Action, target: Candidate | None) -> str:
    try:
        from mag_dataset.guides import template_guide
    except ImportError:  # pragma: no cover - engineer A's module
        return ""
    return template_guide(action, target)


def run_episode(agent: Agent, task_id: str, seed: int, config: LiveEvalConfig, episodes_dir: Path) -> EpisodeResult:
    """Run one episode closed-loop, write its raw episode folder, return its outcome.

    Must be called from the thread that will own the browser (it creates and closes it).
    """
    from mag_dataset.live.execute import to_browsergym_action
    from mag_dataset.live.observe import observe, page_scale
    from mag_dataset.parsing import parse_output

    view, contract = config.view, config.contract
    site, template = _site_and_template(task_id)
    episode_id = episode_id_for(task_id, seed)
    crop = task_id.startswith("miniwob.")
    # real pages (the sites): whole viewport, interactive-only candidate menu
    interactive_only = task_id.startswith("sites.")
    t0 = time.monotonic()
    images: dict[str, bytes] = {}
    trajectory: list[dict[str, Any]] = []
    steps: list[RawStep] = []
    guides: list[str] = []
    format_failures = invalid_actions = 0
    success, raw, ended_by, error = False, 0.0, "max_steps", None
    goal = ""
    env = obs = None
    try:
        env = _make_env(task_id)
        obs, info = env.reset(seed=seed)
        scale = page_scale(env)
        for k in range(config.max_steps):
            ob = observe(obs, crop=crop, scale=scale, interactive_only=interactive_only)
            goal = goal or ob.goal
            shot, som = store_step_images(images, k, ob)
            step = live_step(task_id, episode_id, k, config.max_steps, ob, guides, view)
            entry: dict[str, Any] = {"attempt": k, "screenshot": shot, "som_screenshot": som, "url": ob.url,
                                     "conversion": ob.conv.to_dict(), "candidates": len(ob.candidates)}
            ts = time.monotonic()
            try:
                output = agent.act(step, view, contract, ob.som_png if view is View.SOM else ob.png)
                agent_error = None
            except AgentConfigError:
                raise
            except Exception as e:  # an endpoint that kept failing: a step without a valid output
                output, agent_error = "", f"{type(e).__name__}: {e}"
            entry["agent_seconds"] = round(time.monotonic() - ts, 3)
            entry["output"] = output
            parsed = parse_output(output, view, contract)
            entry["format_ok"] = bool(parsed.ok and agent_error is None)
            entry["format_reason"] = agent_error or (None if parsed.ok else parsed.reason)
            bg_action, problem, target, action = "noop()", None, None, None
            if entry["format_ok"]:
                action, target, problem = resolve_target(parsed.action, view, ob.candidates)
                entry["action"] = action.to_dict()
                entry["guide"] = parsed.guide
                if problem is None:
                    try:
                        bg_action = to_browsergym_action(action, view, ob.conv)
                    except (ValueError, KeyError, TypeError) as e:
                        problem = f"not executable: {e}"
            else:
                format_failures += 1
            entry["browsergym_action"] = bg_action
            obs, reward, terminated, truncated, info = env.step(bg_action)
            done, success, raw = _outcome(env, task_id, float(reward), info, terminated, truncated)
            env_error = obs.get("last_action_error") or None
            entry["browsergym_error"] = env_error
            if entry["format_ok"] and problem is None and env_error and not performed_despite_timeout(env_error):
                problem = f"BrowserGym: {env_error}"
            if problem is not None:
                invalid_actions += 1
            entry["invalid_action"] = problem
            entry["reward"] = raw
            entry["done"] = done
            if entry["format_ok"] and problem is None and action.type is not ActionType.FINISH and (
                target is not None or not ACTION_SPACE[action.type].targeted
            ):
                guide = parsed.guide if contract is not Contract.A else None
                entry["recorded_step"] = len(steps)
                steps.append(step_from_page(
                    ob, images, step_index=len(steps), image_index=k, action=action,
                    target_bbox=target.bbox if target is not None else None,
                    guide=guide if guide else _template_guide(action, target),
                    guide_source=GuideSource.LLM if guide and config.agent.kind != "heuristic" else GuideSource.TEMPLATE,
                    metadata={"attempt": k, "conversion": ob.conv.to_dict(), "browsergym_action": bg_action},
                ))
            else:
                entry["recorded_step"] = None
            trajectory.append(entry)
            if entry["format_ok"] and contract is not Contract.A and parsed.guide:
                guides.append(parsed.guide)
            if action is not None and action.type is ActionType.FINISH:
                ended_by = "finish"
                break
            if done:
                ended_by = "task_done"
                break
        if env is not None and obs is not None and "screenshot" in obs:
            try:
                images["final.png"] = observe(obs, crop=crop, scale=scale).png
            except Exception:  # the final picture is a convenience, never a failure
                pass
    except AgentConfigError:
        raise
    except Exception as e:
        error, ended_by = f"{type(e).__name__}: {e}", "error"
        success = False
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                pass
    seconds = time.monotonic() - t0
    result = EpisodeResult(
        task=task_id, seed=seed, episode_id=episode_id, success=success, raw_reward=raw, steps=len(trajectory),
        format_failures=format_failures, invalid_actions=invalid_actions, ended_by=ended_by,
        seconds=round(seconds, 2), error=error,
    )
    if trajectory or error:
        episode = RawEpisode(
            episode_id=episode_id,
            task_id=episode_id,
            site=site,
            intent=goal,
            intent_template_id=template,
            steps=tuple(steps),
            source=f"live-eval:{task_id.split('.', 1)[0]}",
            seed=seed,
            reward=raw,
            success=success,
            metadata={
                "live_eval": {"browsergym_task": task_id, "agent": config.agent.to_dict(), "view": view.value,
                              "contract": contract.value, "max_steps": config.max_steps, **result.to_dict()},
                "trajectory": trajectory,
            },
        )
        write_episode(episodes_dir, episode, images)
    return result


# ----------------------------------------------------------------------------- workers

_WORKER: dict[str, Any] = {}


def _make_agent_or_fail(spec: AgentSpec) -> Agent:
    try:
        return make_agent(spec)
    except ImportError:
        raise
    except Exception as e:  # an unloadable checkpoint or a bad endpoint URL: the user's input
        raise LiveEvalError(f"cannot make agent {spec.label}: {type(e).__name__}: {e}") from None


def _init_worker(config: LiveEvalConfig, threads: int | None) -> None:
    if threads:
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    _WORKER["config"] = config
    _WORKER["agent"] = make_agent(config.agent)
    if threads and config.agent.kind == "hf":
        import torch

        torch.set_num_threads(threads)


def _run_job(job: tuple[str, int]) -> EpisodeResult:
    config: LiveEvalConfig = _WORKER["config"]
    return run_episode(_WORKER["agent"], job[0], job[1], config, config.out_dir / "episodes")


def _prepare_out_dir(config: LiveEvalConfig) -> Path:
    out = config.out_dir
    if out.exists() and not out.is_dir():
        raise LiveEvalError(f"--out {out} exists and is not a folder")
    incomplete = (out / RUN_MARKER).exists() and not (out / "report.json").exists()
    if ((out / "report.json").exists() or (out / "episodes").exists()) and not incomplete:
        if not config.overwrite:
            raise LiveEvalError(f"{out} already holds a live-eval run; pass --overwrite to replace it")
    if incomplete or config.overwrite:  # an interrupted run of ours is replaced without asking
        for name in ("episodes", "report.json", "report.md"):
            p = out / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    (out / RUN_MARKER).write_text(json.dumps({"agent": config.agent.to_dict(), "tasks": list(config.tasks)}) + "\n")
    return out


def run_live_eval(config: LiveEvalConfig, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every episode of ``config``, write the run folder, return the report.

    Args:
        config: the run.
        log: where to print one line per finished episode (default: stderr).

    Returns:
        The report (also written to ``OUT/report.json`` and, as a table, ``OUT/report.md``).

    Raises:
        LiveEvalError: bad configuration (unknown task, run folder in use, no Chromium).
    """
    from mag_dataset.live.env import LiveEnvError, chromium_executable

    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    try:
        chromium_executable()
    except LiveEnvError as e:
        raise LiveEvalError(str(e)) from None
    for t in config.tasks:
        check_task(t)
    if config.workers > 1 and any(t.startswith("sites.") for t in config.tasks):
        raise LiveEvalError("site tasks share one server per site and reset it at every episode; "
                            "run them with --workers 1 (or --backend ray, which runs one episode per site at a time)")
    if config.agent.kind == "hf" and (config.workers > 1 or config.backend == "ray"):
        # workers load it; fail here, clearly, if unloadable
        try:
            from transformers import AutoConfig

            AutoConfig.from_pretrained(config.agent.model)
        except Exception as e:
            raise LiveEvalError(f"cannot load checkpoint {config.agent.model}: {type(e).__name__}: {e}") from None
    if config.backend == "ray":
        from mag_dataset.harness.ray_backend import check_ray

        try:
            check_ray(config.ray.address)
        except RayBackendError as e:
            raise LiveEvalError(str(e)) from None
    _prepare_out_dir(config)
    jobs = config.jobs()
    workers = min(config.workers, len(jobs))
    t0 = time.monotonic()
    results: list[EpisodeResult] = []
    bar = _progress(len(jobs), config.progress)

    def done(r: EpisodeResult) -> None:
        results.append(r)
        bar.update(1)
        status = "success" if r.success else (f"error: {r.error}" if r.error else "failure")
        log(f"{r.episode_id}: {status} (raw reward {r.raw_reward:g}, {r.steps} steps, {r.format_failures} format "
            f"failures, {r.invalid_actions} invalid actions, ended by {r.ended_by})")

    if config.backend == "ray":
        from mag_dataset.harness.ray_backend import run_live_episodes

        try:
            run_live_episodes(config, done)
        except AgentConfigError as e:
            raise LiveEvalError(f"agent {config.agent.label}: {e}") from None
        except RayBackendError as e:
            raise LiveEvalError(str(e)) from None
    elif workers == 1:
        agent = _make_agent_or_fail(config.agent)
        try:
            for task_id, seed in jobs:
                done(run_episode(agent, task_id, seed, config, config.out_dir / "episodes"))
        except AgentConfigError as e:
            raise LiveEvalError(f"agent {config.agent.label}: {e}") from None
        finally:
            agent.close()
    else:
        # A process pool (not threads): Playwright objects are bound to the thread that made
        # them, and each worker keeps one agent (one model copy) for all its episodes. Unlike
        # multiprocessing.Pool, the executor fails loudly (BrokenProcessPool) when a worker's
        # initializer raises instead of respawning it forever.
        threads = max(1, (os.cpu_count() or 1) // workers)
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(config, threads)) as pool:
            futures = [pool.submit(_run_job, job) for job in jobs]
            try:
                for fut in as_completed(futures):
                    done(fut.result())
            except AgentConfigError as e:
                for f in futures:
                    f.cancel()
                raise LiveEvalError(f"agent {config.agent.label}: {e}") from None
            except BrokenProcessPool as e:
                raise LiveEvalError(f"a live-eval worker process died ({e}); rerun with --workers 1 to see why") from e
    bar.close()
    report = build_report(config, results, time.monotonic() - t0)
    atomic_write(config.out_dir / "report.json", json.dumps(report, indent=1) + "\n")
    atomic_write(config.out_dir / "report.md", format_table(report))
    return report


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="live-eval episodes", unit="episode")
