"""Record expert MiniWoB++ episodes as raw episodes (format v1, :mod:`mag_dataset.raw`).

Usage::

    from mag_dataset.live.recorder import record_episode, record_corpus
    result = record_episode("login-user", seed=3)       # RecordResult
    if result.ok: write_episode(out_dir, result.episode, result.images)
    record_corpus(out_dir, tasks=["login-user"], episodes=5, seed=0)

Each step is recorded from the observation *before* the action: the cropped raw screenshot,
the Set-of-Mark screenshot, the capture geometry (the page's CSS viewport and the
screenshot pixels per CSS pixel, raw format v2), the candidate menu, and the gold action with both its element id
(the BrowserGym bid) and its coordinate (the centre of the target's box, in screenshot px).
Clicks are executed at that coordinate (BrowserGym ``mouse_click``), so every recorded click
coordinate is known to hit its element; typing and selecting run on the element id. Only
episodes that end with MiniWoB's raw reward exactly 1 are kept.

Determinism: episode ``k`` of task ``T`` under corpus seed ``S`` uses the MiniWoB seed
``episode_seed(T, k, S)``; experts are pure functions of the observation, so the same seeds
give the same tasks, actions, candidates and guides (pixels may differ across Chromium builds).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mag_dataset.actions import ACTION_SPACE, ActionType, View
from mag_dataset.guides import template_guide
from mag_dataset.raw import RawEpisode, RawStep
from mag_dataset.recording import step_from_page
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
        env: an env from :func:`~mag_dataset.live.env.make_env` for this task to reuse.
        expert: override the expert (tests).
        max_steps: abandon after this many steps.
        point_only_share: site tasks only: the share of clicks recorded the way human
            demonstrations are, as a mouse click at a point with no element id (see
            :func:`point_only_click`); ``mag unify`` restores their element later.

    Returns:
        A :class:`RecordResult`; ``ok`` only for strictly successful episodes.
    """
    from playwright.sync_api import Error as PlaywrightError

    from mag_dataset.live.env import is_site_task, make_task_env
    from mag_dataset.live.experts import EXPERTS

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


def _record(task: str, seed: int, env: Any, expert: Callable | None, max_steps: int,
            result: RecordResult, point_only_share: float = 0.0) -> RecordResult:
    from mag_dataset.live.env import is_site_task, page_task_info, raw_reward, strict_success
    from mag_dataset.live.execute import to_browsergym_action
    from mag_dataset.live.experts import ExpertError
    from mag_dataset.live.observe import observe, observe_page

    site_task = is_site_task(task)
    obs, info = env.reset(seed=seed)
    if site_task:  # the task instance knows its parameters; its expert reads the observation
        task_obj = env.unwrapped.task
        expert = expert or task_obj.expert
        max_steps = max(max_steps, SITE_MAX_STEPS)
    assert expert is not None
    memory: dict[str, Any] = {}
    steps: list[RawStep] = []
    images: dict[str, bytes] = {}
    goal = str(obs.get("goal") or "")
    done = False
    last: tuple[Any, ...] | None = None
    contexts: list[Any] = []  # site tasks: where each step happens, for its context guide
    viewport = capture_viewport(env)
    for index in range(max_steps):
        ob = observe_page(obs) if site_task else observe(obs)
        try:
            decision = expert(ob, memory)
        except (ExpertError, IndexError, ValueError) as e:
            result.reason = f"step {index}: expert failed: {e}"
            return result
        if decision is None:
            result.reason = f"step {index}: expert has no action"
            return result
        if (decision, tuple(ob.candidates)) == last and decision.type not in (ActionType.SCROLL, ActionType.PRESS):
            # the same action on an unchanged page: the previous one had no effect
            result.reason = f"step {index}: repeated {decision.type.value} had no effect"
            return result
        last = (decision, tuple(ob.candidates))
        targeted = ACTION_SPACE[decision.type].targeted
        target = ob.candidate(decision.bid) if decision.bid is not None else None
        if targeted and target is None:
            result.reason = f"step {index}: target {decision.bid!r} is not a visible candidate"
            return result
        point = _gold_point(target.bbox) if target is not None else None
        human_point = (point_only_click(task, seed, index, target.bbox, point_only_share)
                       if site_task and target is not None and decision.type is ActionType.CLICK else None)
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
        # clicks run at the gold coordinate (proves it hits), the rest on the element id
        view = View.COORD if action.type is ActionType.CLICK else View.SOM
        bg_action = to_browsergym_action(action, view, ob.conv)
        if site_task:
            from mag_dataset.page_guides import guide_context

            contexts.append(guide_context(ob.elements, target.id if target is not None else None))
        steps.append(step_from_page(
            ob, images, step_index=index, action=action,
            # a point-only click keeps no box either: `mag unify` restores both from the point
            target_bbox=target.bbox if target is not None and human_point is None else None,
            guide=template_guide(action, target), guide_source=GuideSource.TEMPLATE, url=_short_url(ob.url),
            # capture geometry (raw format v2): the page's CSS viewport, screenshot px per CSS px
            viewport=viewport, device_pixel_ratio=ob.conv.scale,
            metadata={"conversion": ob.conv.to_dict(), "browsergym_action": bg_action,
                      **({"recorded_as": "point_only", "expert_element_id": target.id} if human_point else {}),
                      **({"viewport": [ob.width, ob.height], "page_url": ob.url} if site_task else {})},
        ))
        obs, reward, terminated, truncated, info = env.step(bg_action)
        if site_task:
            if obs.get("last_action_error"):
                result.reason = f"step {index}: action failed: {obs['last_action_error'][:200]}"
                return result
            if terminated or truncated:
                done = True
                break
            continue
        if terminated or truncated:
            info = page_task_info(env)
            terminated = terminated or bool(info["task_info"].get("DONE_GLOBAL"))
        if obs.get("last_action_error"):
            result.reason = f"step {index}: action failed: {obs['last_action_error'][:200]}"
            return result
        if terminated or truncated:
            done = True
            break
    if not done:
        result.reason = f"not done after {max_steps} steps"
        return result
    if site_task:
        return _site_episode(task, seed, goal, _context_guides(task, seed, steps, contexts), images, info, result,
                             params=dict(getattr(task_obj, "params", {}) or {}))
    if not strict_success(info):
        result.reason = f"raw reward {raw_reward(info)} != 1"
        return result
    episode_id = f"{task}.seed-{seed}"
    result.episode = RawEpisode(
        episode_id=episode_id,
        task_id=episode_id,
        site=task,
        intent=goal,
        intent_template_id=task,
        steps=tuple(steps),
        source="miniwob",
        seed=seed,
        reward=raw_reward(info),
        success=True,
        metadata=_provenance(task),
    )
    result.images = images
    result.ok = True
    return result


#: Most steps a site expert may take (site tasks need 4-12, a few more on long lists).
SITE_MAX_STEPS = 30


def _context_guides(task: str, seed: int, steps: list[RawStep], contexts: list[Any]) -> list[RawStep]:
    """Site steps get context guides (:mod:`mag_dataset.page_guides`); a scroll names what it reveals."""
    import dataclasses

    from mag_dataset.page_guides import context_guide, noun

    out = []
    for i, (st, ctx) in enumerate(zip(steps, contexts)):
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        nxt_target = next((c for c in nxt.candidates if c.id == _acted(nxt)), None) if nxt else None
        if nxt_target is not None:
            ctx = dataclasses.replace(ctx, next_label=nxt_target.text, next_noun=noun(nxt_target))
        target = next((c for c in st.candidates if c.id == _acted(st)), None)
        guide = context_guide(st.action, target, ctx, f"{task}:{seed}:{i}")
        out.append(dataclasses.replace(st, guide=guide, guide_source=GuideSource.CONTEXT_TEMPLATE,
                                       metadata={**st.metadata, "guide_context": dataclasses.asdict(ctx)}))
    return out


def _acted(st: RawStep) -> str | None:
    """The element a step acts on; for a point-only click, the one the expert meant (guides name it)."""
    return st.action.element_id or st.metadata.get("expert_element_id")


def _site_episode(task: str, seed: int, goal: str, steps: list[RawStep], images: dict[str, bytes],
                  info: dict[str, Any], result: RecordResult, params: dict[str, Any]) -> RecordResult:
    """Finish recording a site task: success is the task's state check, read after ``finish``."""
    task_info = info.get("task_info") or {}
    if not task_info.get("success"):
        result.reason = f"state check failed: {task_info.get('reason') or 'no finish'}"
        return result
    _, site, template = task.split(".", 2)
    episode_id = f"{task}.seed-{seed}"
    result.episode = RawEpisode(
        episode_id=episode_id,
        task_id=episode_id,
        site=site,
        intent=goal,
        intent_template_id=f"{site}.{template}",
        steps=tuple(steps),
        source="sites",
        seed=seed,
        reward=1.0,
        success=True,
        # params: the template's parameters, so splits can keep one template+parameters pair in one split
        metadata={**_provenance(task), "check": str(task_info.get("reason") or ""),
                  "params": json.loads(json.dumps(params, sort_keys=True, default=str))},
    )
    result.images = images
    result.ok = True
    return result


def _short_url(url: str) -> str:
    """MiniWoB page URLs point into site-packages; keep them machine-independent."""
    marker = "/miniwob/html/"
    return "miniwob://" + url.split(marker, 1)[1] if marker in url else url


def _provenance(task: str) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, Any] = {"recorder": "mag_dataset.live.recorder", "expert": task}
    pkgs = ("browsergym-core", "playwright") if task.startswith("sites.") else ("browsergym-core", "miniwob", "playwright")
    for pkg in pkgs:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:  # pragma: no cover
            out[pkg] = None
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
            :func:`~mag_dataset.harness.ray_backend.record_corpus_ray`); None: here, one
            browser per task.

    Returns:
        Every attempt's :class:`RecordResult`, in order.
    """
    from mag_dataset.live.env import make_task_env
    from mag_dataset.raw import write_episode

    max_attempts = max_attempts or episodes * 3
    if ray is not None:
        from mag_dataset.harness.ray_backend import record_corpus_ray

        return record_corpus_ray(out_dir, tasks, episodes, seed, max_attempts=max_attempts, log=log,
                                 point_only_share=point_only_share, options=ray)
    results: list[RecordResult] = []
    for task in tasks:
        env = make_task_env(task)
        try:
            kept, k = 0, 0
            while kept < episodes and k < max_attempts:
                s = episode_seed(task, k, seed)
                k += 1
                res = record_episode(task, s, env=env, point_only_share=point_only_share)
                results.append(res)
                if res.ok:
                    write_episode(out_dir, res.episode, res.images)
                    kept += 1
                if log:
                    log(attempt_log_line(res))
        finally:
            env.close()
    return results


#: The bundled sample corpus: tasks, successful episodes per task, seeds, held-out templates.
BUNDLED_TASKS: tuple[str, ...] = (
    "click-button", "click-link", "click-dialog", "enter-text", "enter-password", "login-user",
    "login-user-popup", "choose-list", "click-checkboxes", "click-option", "click-tab-2",
    "click-collapsible-2", "navigate-tree", "search-engine", "use-autocomplete",
    "email-inbox-delete", "email-inbox", "social-media", "book-flight",
)
BUNDLED_EPISODES = 10
BUNDLED_SEED = 0
#: Templates kept out of train entirely, so test has ``unseen_template`` steps.
HELD_OUT_TEMPLATES: tuple[str, ...] = ("login-user-popup", "click-tab-2")
#: Share of each seen template's tasks assigned to test.
TEST_FRACTION = 0.3


#: Templates held out of train per site family when ``corpus.json`` is written without an
#: explicit list (fewer when a family has fewer than three templates: one stays in train).
HELD_OUT_PER_FAMILY = 2


def site_family(source: str, site: str) -> str:
    """The site family of an episode, the unit of held-out templates and statistics: the
    episode's site (shop, tracker, wiki, forum, ...), except that every MiniWoB++ episode
    (``source == "miniwob"``) is in the one family ``miniwob``."""
    return "miniwob" if source == "miniwob" else site


def params_key(template: str, params: Any) -> str | None:
    """The (template, parameters) pair of a site episode as one string, or None without
    parameters (``metadata["params"]``, written by the site recorder)."""
    if not isinstance(params, dict):
        return None
    return f"{template}|{json.dumps(params, sort_keys=True, separators=(',', ':'), default=str)}"


def choose_held_out(template_families: dict[str, str], split_seed: int,
                    per_family: int = HELD_OUT_PER_FAMILY) -> list[str]:
    """Templates kept out of train: ``per_family`` of each site family, drawn by seed.

    A family's templates are sorted and sampled with ``random.Random(f"{split_seed}:held-out:{family}")``;
    a family with ``n <= per_family`` templates gives ``n - 1`` (one template stays in train).

    Args:
        template_families: intent_template_id -> site family.
        split_seed: the corpus' split seed.
        per_family: templates to hold out per family.

    Returns:
        The held-out templates, sorted.
    """
    import random

    by_family: dict[str, list[str]] = {}
    for template, family in template_families.items():
        by_family.setdefault(family, []).append(template)
    held: list[str] = []
    for family in sorted(by_family):
        templates = sorted(set(by_family[family]))
        k = min(per_family, len(templates) - 1)
        if k > 0:
            held.extend(random.Random(f"{split_seed}:held-out:{family}").sample(templates, k))
    return sorted(held)


def split_tasks(task_templates: dict[str, str], split_seed: int, held_out: tuple[str, ...] | list[str],
                test_fraction: float = TEST_FRACTION, task_groups: dict[str, str] | None = None) -> dict[str, str]:
    """Assign every task to train or test, by task, with a fixed seed.

    Tasks of a held-out template all go to test. Every other template's tasks are split
    in *groups*: tasks with the same template and parameters (``task_groups``) form one
    group, so a (template, parameters) pair never lands in both splits; without
    ``task_groups`` each task is its own group. A template's groups are sorted, shuffled
    with ``random.Random(f"{split_seed}:{template}")`` and the first
    ``ceil(n_groups * test_fraction)`` go to test, keeping at least one group in train
    when there are two or more (a single group stays in train).

    Args:
        task_templates: task_id -> intent_template_id.
        split_seed: the corpus' split seed.
        held_out: templates that never appear in train.
        test_fraction: share of a seen template's groups put in test.
        task_groups: task_id -> group key (e.g. :func:`params_key`); tasks absent or
            mapped to None are their own group.

    Returns:
        task_id -> "train" | "test".
    """
    import math
    import random

    groups = {t: (task_groups or {}).get(t) or f"task|{t}" for t in task_templates}
    by_template: dict[str, dict[str, list[str]]] = {}
    for task_id, template in task_templates.items():
        by_template.setdefault(template, {}).setdefault(groups[task_id], []).append(task_id)
    splits: dict[str, str] = {}
    for template in sorted(by_template):
        members = by_template[template]
        if template in held_out:
            splits.update({t: "test" for ids in members.values() for t in ids})
            continue
        keys = sorted(members)
        if all(k == f"task|{members[k][0]}" for k in keys):
            keys = sorted(keys, key=lambda k: members[k][0])  # plain tasks: the task id order
        random.Random(f"{split_seed}:{template}").shuffle(keys)
        n_test = math.ceil(len(keys) * test_fraction)
        n_test = min(n_test, len(keys) - 1) if len(keys) >= 2 else 0
        for i, k in enumerate(keys):
            splits.update({t: "test" if i < n_test else "train" for t in members[k]})
    return dict(sorted(splits.items()))


def write_corpus_manifest(root: str | Path, split_seed: int, held_out: tuple[str, ...] | list[str] | None = None,
                          test_fraction: float = TEST_FRACTION, held_out_per_family: int = HELD_OUT_PER_FAMILY) -> Path:
    """Write ``corpus.json`` (split seed, held-out templates, split per task) for a raw corpus.

    Reads (and validates) every episode under ``root``; written atomically. The split is
    :func:`split_tasks` with tasks grouped by (template, parameters) (:func:`params_key`);
    the held-out templates are ``held_out`` (those present in the corpus) when given, else
    :func:`choose_held_out` by site family (:func:`site_family`).

    Args:
        root: the raw corpus folder.
        split_seed: the split seed (stored).
        held_out: templates to keep out of train; None: ``held_out_per_family`` per family, by seed.
        test_fraction: share of each seen template's groups put in test.
        held_out_per_family: see :func:`choose_held_out`.

    Returns:
        The path of ``corpus.json``.
    """
    from mag_dataset.fileio import atomic_write
    from mag_dataset.raw import CORPUS_FILE, CORPUS_FORMAT, FORMAT_VERSION, read_corpus

    root = Path(root)
    templates: dict[str, str] = {}
    families: dict[str, str] = {}
    groups: dict[str, str] = {}
    for ep in read_corpus(root):
        templates[ep.task_id] = ep.intent_template_id
        families[ep.intent_template_id] = site_family(ep.source, ep.site)
        key = params_key(ep.intent_template_id, ep.metadata.get("params"))
        if key is not None:
            groups[ep.task_id] = key
    if held_out is None:
        held = choose_held_out(families, split_seed, held_out_per_family)
        chosen_by = "seed"
    else:
        held = sorted(t for t in held_out if t in families)
        chosen_by = "given"
    manifest = {
        "format": CORPUS_FORMAT,
        "format_version": FORMAT_VERSION,
        "split_seed": split_seed,
        "test_fraction": test_fraction,
        "held_out_templates": held,
        "held_out_chosen_by": chosen_by,
        "held_out_per_family": held_out_per_family if held_out is None else None,
        "families": {f: sorted(t for t, fam in families.items() if fam == f) for f in sorted(set(families.values()))},
        "splits": split_tasks(templates, split_seed, held, test_fraction, groups),
    }
    return atomic_write(root / CORPUS_FILE, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
