"""One live-evaluation episode, closed loop: observe, ask, parse, ground, execute, record.

Each attempt of an episode (:func:`run_episode` is a loop over :func:`_attempt`):

1. observe the page (:func:`mag_dataset.live.observe.observe`: raw and Set-of-Mark
   screenshots, candidate menu with BrowserGym bids as ids, screenshot<->page conversion);
2. build a :class:`~mag_dataset.schema.Step` from it (:func:`live_step`): the goal as intent,
   the agent's *own* earlier guides as ``previous_guides`` (empty under contract A), the menu;
3. ask the agent for its output text (:func:`_ask`) and parse it for the view and contract;
4. ground the action in the live menu (:func:`resolve_target`) and execute it
   (:func:`mag_dataset.live.execute.to_browsergym_action`: som acts on the element id = bid;
   coord clicks the point converted from screenshot to page pixels);
5. record it as a raw step when the raw format can hold it (:func:`_keep`).

Outcomes per attempt (denominator: every attempt the agent made):

* **format failure** — the output does not parse. Nothing is executed; BrowserGym's
  ``noop()`` is stepped so the page keeps its own time.
* **agent error** — the agent raised instead of answering (an endpoint still failing after
  its retries, a body that is no chat completion): the infrastructure's, not the model's.
  The attempt is logged (``agent_error``) and the episode ends with status ``error``, left
  out of the rates (:mod:`mag_dataset.harness.live_eval.report`); so does a browser or a
  site that fails.
* **invalid action** — the output parses but cannot be executed: the element id is not in
  the candidate menu, the action lacks what its view needs, or BrowserGym reports an error
  executing it — except a timeout that struck after Playwright had performed the action
  (:func:`performed_despite_timeout`; BrowserGym's element actions have a fixed 500 ms
  timeout). A coord-view point on no candidate is executed (the page decides what it hits).
* ``finish`` ends the episode (its answer, if any, is sent to the chat first); so do the
  task ending (MiniWoB's ``DONE``) and ``max_steps``.

Each attempt logs the endpoint's traffic it caused (``requests``, ``retries``,
``timeouts``); a failed episode records what its task's check expected and found
(:mod:`mag_dataset.harness.live_eval.why`). A Ctrl-C ends the episode after its current
attempt (an agent call in progress is cut short) with status ``interrupted``
(:mod:`mag_dataset.harness.live_eval.interrupt`).

This module holds one episode; the task catalogue is
:mod:`mag_dataset.harness.live_eval.tasks`, the report
:mod:`mag_dataset.harness.live_eval.report`, and running many episodes (processes, Ray)
:mod:`mag_dataset.harness.live_eval.run`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mag_dataset.actions import ACTION_SPACE, ActionType, Contract, View
from mag_dataset.template_guides import template_guide
from mag_dataset.harness.agents import Agent, AgentConfigError
from mag_dataset.harness.live_eval.config import LiveEvalConfig
from mag_dataset.harness.live_eval.interrupt import agent_call, stop_requested
from mag_dataset.harness.live_eval.report import TRAFFIC, EpisodeResult, action_counts
from mag_dataset.harness.live_eval.tasks import make_task_env, task_environment, task_outcome
from mag_dataset.live.execute import to_browsergym_action
from mag_dataset.live.observe import Observation, observe, page_scale
from mag_dataset.parsing import Parsed, parse_output
from mag_dataset.raw import RawEpisode, RawStep, write_episode
from mag_dataset.live.page_step import episode_id_for, site_and_template, step_from_page, store_step_images
from mag_dataset.schema import Action, Candidate, GuideSource, Split, Step, box_center


def live_step(
    task_id: str, episode_id: str, index: int, max_steps: int, ob: Any, guides: list[str], view: View
) -> Step:
    """The benchmark step an agent sees at attempt ``index`` of a live episode.

    The gold fields (``guide``, ``action``, ``target_bbox``) are unknown live; they hold a
    ``finish`` placeholder that neither the prompt builder nor the heuristic reads. The
    candidate menu is kept in both views: the prompt builder shows it only in the som view,
    and the heuristic reference needs it in the coord view too.
    """
    site, template = site_and_template(task_id)
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
        the coordinate-restoration tie-break of :func:`mag_dataset.coords.restore_element`).
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
    from mag_dataset.coords import restore_element

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


# ----------------------------------------------------------------------------- the episode's state


@dataclass
class Attempt:
    """One attempt of an episode as logged in ``metadata["trajectory"]`` (fields in log order).

    ``action`` and ``guide`` are logged only when the output parsed (``format_ok``).
    ``agent_error`` is what the agent raised instead of answering (then ``format_ok`` is
    False but the attempt is no format failure); ``requests``, ``retries`` and ``timeouts``
    are the endpoint's HTTP attempts during the agent call. ``target_bbox`` is the box of the
    candidate the action was grounded to (screenshot pixels), None when it has none.
    """

    attempt: int
    screenshot: str
    som_screenshot: str
    url: str
    conversion: dict[str, Any]
    candidates: int
    agent_seconds: float = 0.0
    agent_error: str | None = None
    requests: int = 0
    retries: int = 0
    timeouts: int = 0
    output: str = ""
    format_ok: bool = False
    format_reason: str | None = None
    action: dict[str, Any] | None = None
    guide: str | None = None
    target_bbox: list[float] | None = None
    browsergym_action: str = "noop()"
    browsergym_error: str | None = None
    invalid_action: str | None = None
    reward: float = 0.0
    done: bool = False
    recorded_step: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.format_ok:
            del d["action"], d["guide"], d["target_bbox"]
        return d


@dataclass
class _Episode:
    """What one episode accumulates while it runs."""

    task_id: str
    seed: int
    config: LiveEvalConfig
    scale: float = 1.0
    goal: str = ""
    images: dict[str, bytes] = field(default_factory=dict)
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    steps: list[RawStep] = field(default_factory=list)
    guides: list[str] = field(default_factory=list)  # the agent's own guides, fed back (not under A)
    format_failures: int = 0
    invalid_actions: int = 0
    success: bool = False
    raw: float = 0.0
    ended_by: str = "max_steps"
    error: str | None = None
    interrupted: bool = False
    traffic: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TRAFFIC, 0))
    last_info: dict[str, Any] | None = None
    check: dict[str, Any] | None = None

    @property
    def episode_id(self) -> str:
        return episode_id_for(self.task_id, self.seed)

    def observe(self, obs: dict[str, Any]) -> Observation:
        # MiniWoB: the task area is cropped; real pages (the sites): whole viewport, interactive-only menu
        return observe(obs, crop=self.task_id.startswith("miniwob."), scale=self.scale,
                       interactive_only=self.task_id.startswith("sites."))

    def result(self, seconds: float) -> EpisodeResult:
        if self.interrupted:
            status = "interrupted"
        else:
            status = "error" if self.error else "success" if self.success else "failure"
        return EpisodeResult(
            task=self.task_id, seed=self.seed, episode_id=self.episode_id, success=status == "success",
            raw_reward=self.raw, steps=len(self.trajectory), format_failures=self.format_failures,
            invalid_actions=self.invalid_actions, ended_by=self.ended_by, seconds=round(seconds, 2), error=self.error,
            status=status, check=self.check if status == "failure" else None, **self.traffic,
            actions=action_counts(self.trajectory), environment=task_environment(self.task_id),
        )

    def raw_episode(self, result: EpisodeResult) -> RawEpisode:
        config = self.config
        site, template = site_and_template(self.task_id)
        return RawEpisode(
            episode_id=self.episode_id, task_id=self.episode_id, site=site, intent=self.goal,
            intent_template_id=template, steps=tuple(self.steps), source=f"live-eval:{self.task_id.split('.', 1)[0]}",
            seed=self.seed, reward=self.raw, success=self.success,
            metadata={
                "live_eval": {"browsergym_task": self.task_id, "agent": config.agent.to_dict(),
                              "view": config.view.value, "contract": config.contract.value,
                              "max_steps": config.max_steps, **result.to_dict()},
                "trajectory": self.trajectory,
            },
        )


# ----------------------------------------------------------------------------- the loop


def run_episode(agent: Agent, task_id: str, seed: int, config: LiveEvalConfig, episodes_dir: Path) -> EpisodeResult:
    """Run one episode closed-loop, write its raw episode folder, return its outcome.

    Must be called from the thread that will own the browser (it creates and closes it).
    The episode folder holds every attempt's screenshots; its ``steps`` are the executed
    actions the raw format can hold (see :func:`_keep`), and ``metadata["trajectory"]`` the
    full attempt log (:class:`Attempt`). Nothing is written for an episode that made no
    attempt and raised no error. Once a stop was requested (Ctrl-C), an episode not yet
    begun returns at once as ``interrupted``, and one under way ends so after its current
    attempt; a failure of the browser then (the signal reached it too) is that interruption.
    """
    ep = _Episode(task_id, seed, config)
    t0 = time.monotonic()
    if stop_requested():
        ep.interrupted, ep.ended_by = True, "interrupted"
        return ep.result(0.0)
    env = None
    try:
        env = make_task_env(task_id)
        obs, _ = env.reset(seed=seed)
        ep.scale = page_scale(env)
        for k in range(config.max_steps):
            if stop_requested():
                raise KeyboardInterrupt
            obs, ended_by = _attempt(agent, env, obs, k, ep)
            if ended_by is not None:
                ep.ended_by = ended_by
                break
        if stop_requested():
            raise KeyboardInterrupt
        _final_picture(obs, ep)
        if not ep.success:
            from mag_dataset.harness.live_eval.why import explain

            ep.check = explain(env, task_id, ep.last_info, ep.raw)
    except AgentConfigError:
        raise
    except KeyboardInterrupt:
        if not stop_requested():  # not ours: a plain KeyboardInterrupt outside a run's handler
            raise
        ep.interrupted, ep.ended_by, ep.success = True, "interrupted", False
        ep.error = "interrupted (SIGINT)"
    except Exception as e:
        if stop_requested():
            ep.interrupted, ep.ended_by, ep.success = True, "interrupted", False
            ep.error = f"interrupted (SIGINT; then {type(e).__name__}: {_first_line(e)})"
        else:
            ep.error = str(e) if isinstance(e, _AgentFailed) else f"{type(e).__name__}: {e}"
            ep.ended_by, ep.success = "error", False
    finally:
        _close(env)
    result = ep.result(time.monotonic() - t0)
    if ep.trajectory or ep.error:
        write_episode(episodes_dir, ep.raw_episode(result), ep.images)
    return result


def _attempt(agent: Agent, env: Any, obs: dict[str, Any], k: int, ep: _Episode) -> tuple[dict[str, Any], str | None]:
    """Attempt ``k``: observe, ask, ground, execute, record. Returns the next observation and
    what ended the episode (``finish``, ``task_done``), or None to go on."""
    ob = ep.observe(obs)
    ep.goal = ep.goal or ob.goal
    shot, som = store_step_images(ep.images, k, ob)
    att = Attempt(attempt=k, screenshot=shot, som_screenshot=som, url=ob.url, conversion=ob.conv.to_dict(),
                  candidates=len(ob.candidates))
    parsed = _ask(agent, ob, k, ep, att)
    if att.agent_error is not None:  # the infrastructure's: the episode ends as an error
        ep.trajectory.append(att.to_dict())
        raise _AgentFailed(att.agent_error)
    action, target, problem = _ground(parsed, ob, ep, att)
    obs, reward, terminated, truncated, info = env.step(att.browsergym_action)
    ep.last_info = info
    done, ep.success, ep.raw = task_outcome(env, ep.task_id, float(reward), info, terminated, truncated)
    att.browsergym_error = obs.get("last_action_error") or None
    if att.format_ok and problem is None and att.browsergym_error and not performed_despite_timeout(att.browsergym_error):
        problem = f"BrowserGym: {att.browsergym_error}"
    if problem is not None:
        ep.invalid_actions += 1
    att.invalid_action, att.reward, att.done = problem, ep.raw, done
    _keep(ep, ob, att, parsed, action, target)
    ep.trajectory.append(att.to_dict())
    if att.format_ok and ep.config.contract is not Contract.A and parsed.guide:
        ep.guides.append(parsed.guide)
    if action is not None and action.type is ActionType.FINISH:
        return obs, "finish"
    return obs, "task_done" if done else None


def _ask(agent: Agent, ob: Observation, k: int, ep: _Episode, att: Attempt) -> Parsed:
    """The agent's output for attempt ``k``, parsed; a format failure is counted here, an
    agent that raised is logged in ``att.agent_error`` (no format failure)."""
    view, contract = ep.config.view, ep.config.contract
    step = live_step(ep.task_id, ep.episode_id, k, ep.config.max_steps, ob, ep.guides, view)
    ts = time.monotonic()
    before = agent.counters()
    try:
        with agent_call():
            output = agent.act(step, view, contract, ob.som_png if view is View.SOM else ob.png)
    except (AgentConfigError, KeyboardInterrupt):
        raise
    except Exception as e:  # an endpoint that kept failing after its retries, a broken body, a crashed model
        output, att.agent_error = "", f"{type(e).__name__}: {e}"
    finally:
        after = agent.counters()
        for name in TRAFFIC:
            n = after.get(name, 0) - before.get(name, 0)
            setattr(att, name, n)
            ep.traffic[name] += n
    att.agent_seconds = round(time.monotonic() - ts, 3)
    att.output = output
    parsed = parse_output(output, view, contract)
    att.format_ok = bool(parsed.ok and att.agent_error is None)
    att.format_reason = None if parsed.ok or att.agent_error is not None else parsed.reason
    if not att.format_ok and att.agent_error is None:
        ep.format_failures += 1
    return parsed


def _ground(parsed: Parsed, ob: Observation, ep: _Episode, att: Attempt) -> tuple[Action | None, Candidate | None, str | None]:
    """``(action, target, problem)`` of a parsed output; sets the BrowserGym action to step
    (``noop()`` for a format failure or an action that cannot be executed)."""
    if not att.format_ok:
        return None, None, None
    action, target, problem = resolve_target(parsed.action, ep.config.view, ob.candidates)
    att.action, att.guide = action.to_dict(), parsed.guide
    att.target_bbox = [round(float(v), 2) for v in target.bbox] if target is not None else None
    if problem is None:
        try:
            att.browsergym_action = to_browsergym_action(action, ep.config.view, ob.conv)
        except (ValueError, KeyError, TypeError) as e:
            problem = f"not executable: {e}"
    return action, target, problem


def _keep(ep: _Episode, ob: Observation, att: Attempt, parsed: Parsed, action: Action | None,
          target: Candidate | None) -> None:
    """Record an executed action as a raw step when the raw format can hold it: not
    ``finish``, and a targeted action only with a target candidate (the format needs its box).
    Its guide is the agent's (J, JG) or, under contract A, the template guide of its action."""
    if not (att.format_ok and att.invalid_action is None and action.type is not ActionType.FINISH and (
            target is not None or not ACTION_SPACE[action.type].targeted)):
        return
    guide = parsed.guide if ep.config.contract is not Contract.A else None
    att.recorded_step = len(ep.steps)
    ep.steps.append(step_from_page(
        ob, ep.images, step_index=len(ep.steps), image_index=att.attempt, action=action,
        target_bbox=target.bbox if target is not None else None,
        guide=guide if guide else template_guide(action, target),
        guide_source=GuideSource.LLM if guide and ep.config.agent.kind != "heuristic" else GuideSource.TEMPLATE,
        metadata={"attempt": att.attempt, "conversion": ob.conv.to_dict(), "browsergym_action": att.browsergym_action},
    ))


def _final_picture(obs: dict[str, Any] | None, ep: _Episode) -> None:
    """The page after the last attempt, as ``final.png`` (a convenience, never a failure)."""
    if obs is not None and "screenshot" in obs:
        try:
            ep.images["final.png"] = observe(obs, crop=ep.task_id.startswith("miniwob."), scale=ep.scale).png
        except Exception:
            pass


class _AgentFailed(Exception):
    """The agent raised instead of answering (logged in the attempt); ends the episode as an error."""

    def __str__(self) -> str:
        return f"agent error: {self.args[0]}"


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:200]


def _close(env: Any) -> None:
    if env is not None:
        try:
            env.close()
        except Exception:
            pass
