"""Record expert MiniWoB++ episodes as raw episodes (format v1, :mod:`mag_dataset.raw`).

Usage::

    from mag_dataset.harness.recorder import record_episode, record_corpus
    result = record_episode("login-user", seed=3)       # RecordResult
    if result.ok: write_episode(out_dir, result.episode, result.images)
    record_corpus(out_dir, tasks=["login-user"], episodes=5, seed=0)

Each step is recorded from the observation *before* the action: the cropped raw screenshot,
the Set-of-Mark screenshot, the capture geometry (the page's CSS viewport and the
screenshot pixels per CSS pixel, raw format v2), the candidate menu, and the gold action with both its element id
(the BrowserGym bid) and its coordinate (in screenshot px: the centre of the target's box; on
the sites, a click's point is drawn where a person's would land, :func:`human_click_point`).
Clicks are executed at that coordinate (BrowserGym ``mouse_click``), so every recorded click
coordinate is known to hit its element; typing and selecting run on the element id. Only
episodes that end with MiniWoB's raw reward exactly 1 are kept.

Determinism: episode ``k`` of task ``T`` under corpus seed ``S`` uses the MiniWoB seed
``episode_seed(T, k, S)``; experts are pure functions of the observation, so the same seeds
give the same tasks, actions, candidates and guides (pixels may differ across Chromium builds).

This module records episodes and corpora (here, or one Ray task per attempt:
:func:`record_corpus_ray`); the experts are :mod:`mag_dataset.live.experts`, the page
observation :mod:`mag_dataset.live.observe`, and the train/test split of a recorded corpus
:mod:`mag_dataset.builder.splits`.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mag_dataset.actions import ACTION_SPACE, ActionType, View
from mag_dataset.template_guides import template_guide
from mag_dataset.raw import RawEpisode, RawStep, write_episode
from mag_dataset.live.page_step import episode_id_for, site_and_template, step_from_page
from mag_dataset.schema import Action, GuideSource, box_center, point_in_box

#: Most steps an expert may take before the episode is abandoned.
MAX_STEPS = 15


@dataclass
class RecordResult:
    """Outcome of one recording attempt; ``episode``/``images`` are set when ``ok``."""

    task: str
    seed: int
    ok: bool
    reason: str = ""
    episode: RawEpisode | None = None
    images: dict[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0


def episode_seed(task: str, index: int, seed: int) -> int:
    """MiniWoB seed of episode ``index`` of ``task`` in a corpus recorded with ``seed``."""
    digest = hashlib.sha256(f"{task}|{seed}|{index}".encode()).hexdigest()
    return int(digest[:8], 16) % 1_000_000


def _gold_point(box: tuple[float, float, float, float]) -> tuple[float, float]:
    x, y = box_center(box)
    pt = (round(x, 2), round(y, 2))
    return pt if point_in_box(pt, box) else (x, y)


def record_episode(task: str, seed: int, *, env: Any = None, expert: Callable | None = None,
                   max_steps: int = MAX_STEPS, point_only_share: float = 0.0) -> RecordResult:
    """Run the task's expert on one MiniWoB seed and record the episode.

    Args:
        task: MiniWoB++ task name with an expert in :data:`~mag_dataset.live.experts.EXPERTS`.
        seed: the MiniWoB seed (task instance).
        env: an env from :func:`~mag_dataset.sites.env.make_task_env` for this task to reuse.
        expert: override the expert (tests).
        max_steps: abandon after this many steps.
        point_only_share: site tasks only: the share of clicks recorded the way human
            demonstrations are, as a mouse click at a point with no element id (see
            :func:`point_only_click`); ``mag unify`` restores their element later.

    Returns:
        A :class:`RecordResult`; ``ok`` only for strictly successful episodes.
    """
    from playwright.sync_api import Error as PlaywrightError

    from mag_dataset.live.experts import EXPERTS
    from mag_dataset.sites.env import is_site_task, make_task_env

    start = time.monotonic()
    if not is_site_task(task):
        expert = expert or EXPERTS[task]
    own_env = env is None
    env = env or make_task_env(task)
    result = RecordResult(task=task, seed=seed, ok=False)
    try:
        return _record(task, seed, env, expert, max_steps, result, point_only_share)
    except PlaywrightError as e:  # a page that crashed or hung: drop the episode, keep going
        result.reason = f"browser error: {str(e).splitlines()[0][:200]}"
        result.ok, result.episode, result.images = False, None, {}
        return result
    finally:
        result.seconds = round(time.monotonic() - start, 2)
        if own_env:
            env.close()


def capture_viewport(env: Any) -> tuple[int, int] | None:
    """The CSS viewport ``(width, height)`` of a BrowserGym env's page (Playwright's
    ``page.viewport_size``: 332x214 for MiniWoB++, 1280x720 for the sites), or None."""
    page = getattr(getattr(env, "unwrapped", env), "page", None)
    size = getattr(page, "viewport_size", None) if page is not None else None
    if isinstance(size, dict) and isinstance(size.get("width"), int) and isinstance(size.get("height"), int):
        return size["width"], size["height"]
    return None


def point_only_click(task: str, seed: int, index: int, box: tuple[float, float, float, float],
                     share: float) -> tuple[float, float] | None:
    """Where a human-style click lands, or None to record the click with its element id.

    With probability ``share`` (drawn from ``random.Random(f"{task}:{seed}:{index}:point")``)
    the click is recorded as a point only: a whole-pixel point drawn uniformly from the
    middle 60% of the target's box (people do not click box centres), as WebArena's and
    human demonstrations store clicks. It is executed at that point, so the page decides
    what it hits, exactly as for the person.
    """
    import math
    import random

    rng = random.Random(f"{task}:{seed}:{index}:point")
    if share <= 0 or rng.random() >= share:
        return None
    x0, y0, x1, y1 = box
    for _ in range(20):
        x = math.floor(x0 + (x1 - x0) * (0.2 + 0.6 * rng.random()))
        y = math.floor(y0 + (y1 - y0) * (0.2 + 0.6 * rng.random()))
        if point_in_box((x, y), box):
            return (float(x), float(y))
    return None


#: A person's click around an element's centre: standard deviation as a share of its width / height.
CLICK_SPREAD = 0.17
#: Share of a person's clicks that land near an edge of the element (within its outer fifth).
CLICK_NEAR_EDGE = 0.12


def human_click_point(task: str, seed: int, index: int, box: tuple[float, float, float, float]) -> tuple[float, float]:
    """Where a person's click on ``box`` lands: a whole-pixel point drawn with
    ``random.Random(f"{task}:{seed}:{index}:click")`` around the centre (normal, standard
    deviation :data:`CLICK_SPREAD` of the box's width and height), or, one click in
    :data:`CLICK_NEAR_EDGE`, within the outer fifth of a random side; always inside the box, at
    least one pixel from its edges where it is wider and taller than two pixels.
    People do not click exact centres (WebMRE's human demonstrations: almost none do)."""
    import random

    rng = random.Random(f"{task}:{seed}:{index}:click")
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    if rng.random() < CLICK_NEAR_EDGE:
        side = rng.randrange(4)
        fx, fy = rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9)
        edge = rng.uniform(0.03, 0.2)
        fx, fy = (edge, fy) if side == 0 else (1 - edge, fy) if side == 1 else (fx, edge) if side == 2 else (fx, 1 - edge)
    else:
        fx = min(0.95, max(0.05, rng.gauss(0.5, CLICK_SPREAD)))
        fy = min(0.95, max(0.05, rng.gauss(0.5, CLICK_SPREAD)))
    x, y = _inside(int(x0 + w * fx), x0, x1), _inside(int(y0 + h * fy), y0, y1)
    if not point_in_box((x, y), box):  # a box under two pixels wide or tall: its centre
        return _gold_point(box)
    return (x, y)


def _inside(v: int, lo: float, hi: float) -> float:
    """``v`` moved to at least one pixel inside ``[lo, hi]`` when the span allows it: a whole
    pixel drawn next to a fractional edge (1011.61 -> 1012) would sit under half a norm1000
    unit from it, where a model answering whole grid units cannot name it."""
    import math

    first, last = math.ceil(lo + 1), math.floor(hi - 1)
    return float(min(max(v, first), last) if first <= last else v)


class _Abandoned(Exception):
    """The expert's episode cannot be kept; the message is the attempt's reason."""


@dataclass
class _Recording:
    """What one recording attempt accumulates, step by step."""

    task: str
    seed: int
    site_task: bool
    point_only_share: float
    viewport: tuple[int, int] | None
    goal: str
    memory: dict[str, Any] = field(default_factory=dict)  # the expert's own
    steps: list[RawStep] = field(default_factory=list)
    images: dict[str, bytes] = field(default_factory=dict)
    contexts: list[Any] = field(default_factory=list)  # site tasks: where each step happens, for its context guide
    last: tuple[Any, ...] | None = None


def _record(task: str, seed: int, env: Any, expert: Callable | None, max_steps: int,
            result: RecordResult, point_only_share: float = 0.0) -> RecordResult:
    from mag_dataset.live.execute import to_browsergym_action
    from mag_dataset.live.observe import observe, observe_page
    from mag_dataset.sites.env import is_site_task

    site_task = is_site_task(task)
    obs, info = env.reset(seed=seed)
    if site_task:  # the task instance knows its parameters; its expert reads the observation
        task_obj = env.unwrapped.task
        expert = expert or task_obj.expert
        max_steps = max(max_steps, SITE_MAX_STEPS)
    assert expert is not None
    rec = _Recording(task, seed, site_task, point_only_share, capture_viewport(env), str(obs.get("goal") or ""))
    done = False
    try:
        for index in range(max_steps):
            ob = observe_page(obs) if site_task else observe(obs)
            decision, target = _expert_step(rec, ob, index, expert)
            action, human_point = _gold_action(rec, index, decision, target)
            # clicks run at the gold coordinate (proves it hits), the rest on the element id
            bg_action = to_browsergym_action(action, View.COORD if action.type is ActionType.CLICK else View.SOM, ob.conv)
            _keep_step(rec, ob, index, action, target, human_point, bg_action, getattr(decision, "purpose", ()))
            obs, reward, terminated, truncated, info = env.step(bg_action)
            if _retry_after_timeout(obs, bg_action):
                time.sleep(RETRY_WAIT)
                obs, reward, terminated, truncated, info = env.step(bg_action)
            done, info = _after_step(env, rec, obs, info, terminated or truncated, index)
            if done:
                break
    except _Abandoned as e:
        result.reason = str(e)
        return result
    if not done:
        result.reason = f"not done after {max_steps} steps"
        return result
    if site_task:
        from mag_dataset.context_guides import episode_guides

        return _site_episode(task, seed, rec.goal, episode_guides(task, seed, rec.steps, rec.contexts), rec.images,
                             info, result, params=dict(getattr(task_obj, "params", {}) or {}),
                             intent=(getattr(task_obj, "intent_template", None), getattr(task_obj, "instantiation_dict", None)))
    return _miniwob_episode(rec, info, result)


def _expert_step(rec: _Recording, ob: Any, index: int, expert: Callable) -> tuple[Any, Any]:
    """The expert's decision at step ``index`` and its target candidate (None for an untargeted action).

    Raises:
        _Abandoned: the expert failed, had no action, repeated an action that had no effect,
            or named an element that is not a visible candidate.
    """
    from mag_dataset.live.experts import ExpertError

    try:
        decision = expert(ob, rec.memory)
    except (ExpertError, IndexError, ValueError) as e:
        raise _Abandoned(f"step {index}: expert failed: {e}") from None
    if decision is None:
        raise _Abandoned(f"step {index}: expert has no action")
    if (decision, tuple(ob.candidates)) == rec.last and decision.type not in (ActionType.SCROLL, ActionType.PRESS):
        # the same action on an unchanged page: the previous one had no effect
        raise _Abandoned(f"step {index}: repeated {decision.type.value} had no effect")
    rec.last = (decision, tuple(ob.candidates))
    target = ob.candidate(decision.bid) if decision.bid is not None else None
    if ACTION_SPACE[decision.type].targeted and target is None:
        raise _Abandoned(f"step {index}: target {decision.bid!r} is not a visible candidate")
    return decision, target


def _gold_action(rec: _Recording, index: int, decision: Any, target: Any) -> tuple[Action, tuple[float, float] | None]:
    """The gold action of a decision, with both its element id and its coordinate: on a site, a
    click's point is where a person's would land (:func:`human_click_point`), any other
    target's coordinate its box centre; a site click drawn as point-only (:func:`point_only_click`)
    keeps only its point."""
    point = _gold_point(target.bbox) if target is not None else None
    if rec.site_task and target is not None and decision.type is ActionType.CLICK:
        point = human_click_point(rec.task, rec.seed, index, target.bbox)
    human_point = (point_only_click(rec.task, rec.seed, index, target.bbox, rec.point_only_share)
                   if rec.site_task and target is not None and decision.type is ActionType.CLICK else None)
    action = Action(
        type=decision.type,
        element_id=target.id if target is not None and human_point is None else None,
        coordinate=human_point or point,
        text=decision.text,
        value=decision.value,
        key=decision.key,
        direction=decision.direction,
        url=decision.url,
        answer=decision.answer,
    )
    return action, human_point


def _keep_step(rec: _Recording, ob: Any, index: int, action: Action, target: Any,
               human_point: tuple[float, float] | None, bg_action: str, purpose: tuple[str, ...] = ()) -> None:
    """Record step ``index`` from the observation before its action (``purpose``: the
    expert's plan for it, kept in ``metadata["plan_purpose"]`` for its guide)."""
    from mag_dataset.live.observe import dom_evidence

    if rec.site_task:
        from mag_dataset.context_guides import guide_context

        rec.contexts.append(guide_context(ob.elements, target.id if target is not None else None))
    rec.steps.append(step_from_page(
        ob, rec.images, step_index=index, action=action,
        # a point-only click keeps no box either: `mag unify` restores both from the point
        target_bbox=target.bbox if target is not None and human_point is None else None,
        guide=template_guide(action, target), guide_source=GuideSource.TEMPLATE, url=_short_url(ob.url),
        # capture geometry (raw format v2): the page's CSS viewport, screenshot px per CSS px
        viewport=rec.viewport, device_pixel_ratio=ob.conv.scale,
        metadata={"conversion": ob.conv.to_dict(), "browsergym_action": bg_action,
                  # the audit's evidence: fingerprints of the menu and of the acted element (a
                  # point-only click keeps only its point, as a person's recording would)
                  "dom": dom_evidence(ob, target.id if target is not None and human_point is None else None),
                  **({"recorded_as": "point_only", "expert_element_id": target.id} if human_point else {}),
                  **({"plan_purpose": list(purpose)} if rec.site_task and purpose else {}),
                  **({"viewport": [ob.width, ob.height], "page_url": ob.url, "page_title": ob.title}
                     if rec.site_task else {})},
    ))


#: Seconds the recorder waits before its one retry of an idempotent action that timed out.
RETRY_WAIT = 1.0


def _retry_after_timeout(obs: dict[str, Any], bg_action: str) -> bool:
    """Whether to step ``bg_action`` once more: a single ``fill``/``select_option`` (setting a
    value twice is setting it once) that hit BrowserGym's fixed 500 ms element timeout, which a
    loaded machine can exceed while the page is fine. Clicks and key presses are not retried
    (a second one is a second action); a second failure abandons the episode as before."""
    error = str(obs.get("last_action_error") or "")
    single = "\n" not in bg_action.strip()
    return error.startswith("TimeoutError") and single and bg_action.startswith(("fill(", "select_option("))


def _after_step(env: Any, rec: _Recording, obs: dict[str, Any], info: dict[str, Any], ended: bool,
                index: int) -> tuple[bool, dict[str, Any]]:
    """``(done, info)`` after the expert's action; MiniWoB's outcome is read from the page.

    Raises:
        _Abandoned: BrowserGym reported an error executing the action.
    """
    if ended and not rec.site_task:
        from mag_dataset.live.env import page_task_info

        info = page_task_info(env)
    if obs.get("last_action_error"):
        raise _Abandoned(f"step {index}: action failed: {obs['last_action_error'][:200]}")
    return bool(ended), info


def _miniwob_episode(rec: _Recording, info: dict[str, Any], result: RecordResult) -> RecordResult:
    """Finish recording a MiniWoB++ task: kept only when MiniWoB's raw reward is exactly 1."""
    from mag_dataset.live.env import raw_reward, strict_success

    if not strict_success(info):
        result.reason = f"raw reward {raw_reward(info)} != 1"
        return result
    site, template = site_and_template(rec.task)
    episode_id = episode_id_for(rec.task, rec.seed)
    episode = RawEpisode(
        episode_id=episode_id, task_id=episode_id, site=site, intent=rec.goal, intent_template_id=template,
        steps=tuple(rec.steps), source="miniwob", seed=rec.seed, reward=raw_reward(info), success=True,
        metadata=_provenance(rec.task),
    )
    return _kept(result, episode, rec.images)


def _kept(result: RecordResult, episode: RawEpisode, images: dict[str, bytes]) -> RecordResult:
    result.episode, result.images, result.ok = episode, images, True
    return result


#: Most steps a site expert may take (most site tasks need 4-12; the long ones 40 and more).
SITE_MAX_STEPS = 80


def _site_episode(task: str, seed: int, goal: str, steps: list[RawStep], images: dict[str, bytes],
                  info: dict[str, Any], result: RecordResult, params: dict[str, Any],
                  intent: tuple[str | None, dict[str, Any] | None] = (None, None)) -> RecordResult:
    """Finish recording a site task: success is the task's state check, read after ``finish``."""
    task_info = info.get("task_info") or {}
    if not task_info.get("success"):
        result.reason = f"state check failed: {task_info.get('reason') or 'no finish'}"
        return result
    site, template = site_and_template(task)
    episode_id = episode_id_for(task, seed)
    episode = RawEpisode(
        episode_id=episode_id, task_id=episode_id, site=site, intent=goal, intent_template_id=template,
        steps=tuple(steps), source="sites", seed=seed, reward=1.0, success=True,
        # params: the template's parameters, so splits can keep one template+parameters pair in one split
        metadata={**_provenance(task), "check": str(task_info.get("reason") or ""),
                  "params": json.loads(json.dumps(params, sort_keys=True, default=str)),
                  # WebArena's names: the phrasing the intent was written from, and its filled slots
                  **({"intent_template": intent[0],
                      "instantiation_dict": json.loads(json.dumps(intent[1] or {}, sort_keys=True, default=str))}
                     if intent[0] else {})},
    )
    return _kept(result, episode, images)


def _short_url(url: str) -> str:
    """MiniWoB page URLs point into site-packages; keep them machine-independent."""
    marker = "/miniwob/html/"
    return "miniwob://" + url.split(marker, 1)[1] if marker in url else url


def _provenance(task: str) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, Any] = {"recorder": "mag_dataset.harness.recorder", "expert": task}
    pkgs = ("browsergym-core", "playwright") if task.startswith("sites.") else ("browsergym-core", "miniwob", "playwright")
    for pkg in pkgs:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:  # pragma: no cover
            out[pkg] = None
    if task.startswith("sites."):  # where the sites were served: a replay elsewhere maps the URLs it goes to
        from mag_dataset.sites import task_class

        cls = task_class(task)
        out["site_origins"] = {c.name: c().base_url for c in (cls.site_class, *cls.other_sites)}
    return out


def attempt_log_line(res: RecordResult) -> str:
    """The progress line of one recording attempt."""
    return (f"{res.task} seed={res.seed}: {'ok' if res.ok else 'FAILED ' + res.reason} "
            f"({len(res.episode.steps) if res.episode else 0} steps, {res.seconds}s)")


def record_corpus(out_dir: str | Path, tasks: list[str], episodes: int, seed: int = 0, *,
                  max_attempts: int | None = None, log: Callable[[str], None] | None = None,
                  point_only_share: float = 0.0, ray: Any = None) -> list[RecordResult]:
    """Record ``episodes`` successful episodes per task into ``out_dir`` (raw format v1).

    Episode ``k`` tries MiniWoB seeds ``episode_seed(task, k, seed)``, ``k+1``... in a fixed
    order until one succeeds; failures are reported, never written.

    Args:
        ray: :class:`~mag_dataset.harness.ray_backend.RayOptions` to run one Ray task per
            attempt (same attempts, same episodes, see
            :func:`record_corpus_ray`); None: here, one
            browser per task.

    Returns:
        Every attempt's :class:`RecordResult`, in order.
    """
    from mag_dataset.sites.env import make_task_env

    max_attempts = max_attempts or episodes * 3
    if ray is not None:
        return record_corpus_ray(out_dir, tasks, episodes, seed, max_attempts=max_attempts, log=log,
                                 point_only_share=point_only_share, options=ray)
    results: list[RecordResult] = []
    for task in tasks:
        env = make_task_env(task)
        try:
            kept, k = 0, 0
            intents: set[str] = set()
            while kept < episodes and k < max_attempts:
                s = episode_seed(task, k, seed)
                k += 1
                res = record_episode(task, s, env=env, point_only_share=point_only_share)
                results.append(res)
                if res.ok and res.episode.intent in intents:  # one intent once per template
                    res.ok, res.reason = False, "repeats the intent of an episode already kept"
                if res.ok:
                    write_episode(out_dir, res.episode, res.images)
                    intents.add(res.episode.intent)
                    kept += 1
                if log:
                    log(attempt_log_line(res))
        finally:
            env.close()
    return results


def record_attempt_task(task: str, seed: int, point_only_share: float) -> RecordResult:
    """Ray task body: one recording attempt (its own browser); returns the RecordResult."""
    return record_episode(task, seed, point_only_share=point_only_share)


def record_corpus_ray(out_dir: str | Path, tasks: list[str], episodes: int, seed: int, *, max_attempts: int,
                      log: Callable[[str], None] | None, point_only_share: float, options: Any) -> list[RecordResult]:
    """:func:`record_corpus` with one Ray task per attempt (:mod:`mag_dataset.harness.ray_backend`).

    The local recorder tries attempt ``k = 0, 1, ...`` of a task (seed ``episode_seed(task,
    k, seed)``) until ``episodes`` succeeded or ``max_attempts`` were made. Here attempt ``k``
    is submitted only while the task's successes plus its attempts in flight are fewer than
    ``episodes``: every attempt made here is one the local recorder makes too, and vice versa,
    so both write the same episodes. Returns every attempt's RecordResult in the local order
    (task, then attempt).

    Args:
        options: the :class:`~mag_dataset.harness.ray_backend.RayOptions` of the run.
    """
    from mag_dataset.harness.ray_backend import Crashed, Dispatcher, forwarded_env, ray_session, site_lock

    state = {t: {"next": 0, "ok": 0, "flight": 0} for t in tasks}
    results: dict[tuple[str, int], RecordResult] = {}

    def top_up(dispatcher: Dispatcher, task: str) -> None:
        s = state[task]
        while s["ok"] + s["flight"] < episodes and s["next"] < max_attempts:
            k = s["next"]
            s["next"] += 1
            s["flight"] += 1
            dispatcher.submit((task, k), (task, episode_seed(task, k, seed), point_only_share), site_lock(task))

    with ray_session(options.address) as ray:
        dispatcher = Dispatcher(ray.remote(record_attempt_task), options, forwarded_env())
        for task in tasks:
            top_up(dispatcher, task)
        for (task, k), value in dispatcher.completed():
            s = state[task]
            s["flight"] -= 1
            if isinstance(value, Crashed):
                value = RecordResult(task=task, seed=episode_seed(task, k, seed), ok=False,
                                     reason=value.message(options.max_retries))
            if value.ok:
                write_episode(out_dir, value.episode, value.images)
                s["ok"] += 1
            results[(task, k)] = value
            if log:
                log(attempt_log_line(value))
            top_up(dispatcher, task)
    order = {t: i for i, t in enumerate(tasks)}
    return [results[key] for key in sorted(results, key=lambda key: (order[key[0]], key[1]))]


#: The bundled sample corpus: tasks, successful episodes per task, seeds, held-out templates.
BUNDLED_TASKS: tuple[str, ...] = (
    "click-button", "click-link", "click-dialog", "enter-text", "enter-password", "login-user",
    "login-user-popup", "choose-list", "click-checkboxes", "click-option", "click-tab-2",
    "click-collapsible-2", "navigate-tree", "search-engine", "use-autocomplete",
    "email-inbox-delete", "email-inbox", "social-media", "book-flight",
)
BUNDLED_EPISODES = 10
BUNDLED_SEED = 0
