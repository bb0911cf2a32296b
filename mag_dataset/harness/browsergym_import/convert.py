"""One experiment folder converted into a raw episode (run in an isolated child).

:func:`convert_experiment` reads a folder (:mod:`~mag_dataset.harness.browsergym_import.folders`),
checks each observation (:mod:`~mag_dataset.harness.browsergym_import.limits`), reads it
(:mod:`~mag_dataset.harness.browsergym_import.observation`), maps its action
(:mod:`~mag_dataset.harness.browsergym_import.actions`) and builds each step with
:func:`mag_dataset.live.page_step.step_from_page`; the site and template come from the task name
and the first URL. :func:`isolated_convert` is its child-process entry point. Writing
episodes and choosing among repeats is :mod:`~mag_dataset.harness.browsergym_import.batch`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mag_dataset.template_guides import template_guide
from mag_dataset.harness.browsergym_import.actions import map_action
from mag_dataset.harness.browsergym_import.folders import (
    NO_SCREENSHOTS,
    _goal_text,
    _miniwob_raw_reward,
    _screenshot,
    _task_and_seed,
    has_screenshots,
    read_step_infos,
    read_summary,
)
from mag_dataset.harness.browsergym_import.limits import MAX_ACTION_CHARS, MAX_DOM_DEPTH, ImportErrorForEpisode, _a, check_observation
from mag_dataset.harness.browsergym_import.observation import _redraw_som, process_observation
from mag_dataset.harness.import_common import check_converted, episode_id_from
from mag_dataset.raw import RawEpisode, RawStep
from mag_dataset.live.page_step import step_from_page

#: WebArena's standard ports -> WebMRE site names.
WEBARENA_PORTS: dict[int, str] = {
    7770: "shopping",
    7780: "shopping_admin",
    9999: "reddit",
    8023: "gitlab",
    3000: "map",
    443: "map",
    8888: "wikipedia",
}


def convert_experiment(exp: Path, min_reward: float = 1.0, templates: dict[str, str] | None = None) -> tuple[RawEpisode, dict[str, bytes]]:
    """Convert one experiment directory into a raw episode and its images.

    Raises:
        ImportErrorForEpisode: the episode is unsuccessful or cannot be converted (why).
    """
    summary, reward = read_summary(exp, min_reward)
    task_name, seed, agent = _task_and_seed(exp)
    infos = read_step_infos(exp)
    raw = _miniwob_raw_reward(infos) if task_name.startswith("miniwob.") else None
    if raw is not None and not raw >= min_reward:  # NaN is a failure
        raise ImportErrorForEpisode(
            f"unsuccessful: MiniWoB raw reward {raw:g} < {min_reward:g} (BrowserGym's reward counts partial credit)"
        )
    if not has_screenshots(exp, infos):  # said once for the run, not as the first step's failure
        raise ImportErrorForEpisode(NO_SCREENSHOTS)
    steps, images, intent, first_url = _convert_steps(exp, infos, task_name)
    if not steps:
        raise ImportErrorForEpisode("no step with an action")
    if not intent:
        raise ImportErrorForEpisode("the observation holds no goal text")
    site, template = _site_and_template(task_name, first_url, templates or {})
    episode_id = episode_id_from(f"{task_name}.seed-{seed}" if seed is not None else task_name)
    ep = RawEpisode(
        episode_id=episode_id, task_id=episode_id, site=site, intent=intent, intent_template_id=template,
        steps=tuple(steps), source="browsergym", seed=seed, reward=float(reward), success=True,
        metadata={"browsergym_task": task_name, "agent": agent, "experiment": exp.name,
                  "n_steps": summary.get("n_steps"), "cum_reward": reward},
    )
    check_converted(ep, ImportErrorForEpisode)  # against the raw format, before anything is written
    return ep, images


def _convert_steps(exp: Path, infos: list[Any], task_name: str) -> tuple[list[RawStep], dict[str, bytes], str, str]:
    """The raw steps and images of the step infos, the goal and the first URL.

    Each info with an action is a step, except ``noop()`` (and actions that change nothing).
    """
    steps: list[RawStep] = []
    images: dict[str, bytes] = {}
    intent, first_url = "", ""
    for n, info in enumerate(infos):
        obs = getattr(info, "obs", None)
        action_text = getattr(info, "action", None)
        check_observation(obs, n)
        if action_text is not None and not isinstance(action_text, str):
            raise ImportErrorForEpisode(f"step {n}: the action is {_a(action_text)}, not a string")
        if action_text is not None and len(action_text) > MAX_ACTION_CHARS:
            raise ImportErrorForEpisode(f"step {n}: the action is {len(action_text):,} characters, over the cap of {MAX_ACTION_CHARS:,}")
        if n == 0:
            intent = _goal_text(obs, exp)
            first_url = str(obs.get("url") or "")
        if action_text is None:
            continue
        step = _convert_step(exp, n, obs, action_text, task_name, len(steps), images)
        if step is not None:
            steps.append(step)
    return steps, images, intent, first_url


def _convert_step(exp: Path, n: int, obs: dict[str, Any], action_text: str, task_name: str, k: int,
                  images: dict[str, bytes]) -> RawStep | None:
    """Step info ``n`` as raw step ``k`` (its images go into ``images``); None for a noop."""
    obs = dict(obs)
    if obs.get("screenshot") is None:
        obs["screenshot"] = _screenshot(exp, n)
    if obs.get("screenshot") is None:
        raise ImportErrorForEpisode(f"step {n} has no screenshot (screenshot_step_{n}.png)")
    view = process_observation(obs, task_name)
    n_marked = len(view.candidates)
    mapped = map_action(action_text, view)
    if mapped is None:
        return None
    if len(view.candidates) != n_marked:  # the target was added to the menu: label it too
        view.som_png = _redraw_som(view)
    action, target, box = mapped
    return step_from_page(
        view, images, step_index=k, action=action, target_bbox=box, guide=template_guide(action, target),
        metadata={"browsergym_action": str(action_text), "browsergym_step": n,
                  "conversion": {"scale_factor": view.scale, "crop": list(view.crop)}},
    )


def _site_and_template(task_name: str, url: str, templates: dict[str, str]) -> tuple[str, str]:
    bench, _, rest = task_name.partition(".")
    if bench == "miniwob":
        return rest, templates.get(task_name, rest)
    site = bench or "unknown"
    try:
        parsed = urlparse(url)
        port, host = parsed.port, parsed.hostname
    except ValueError:  # a malformed URL (port out of range...) names no site
        port, host = None, None
    if bench in ("webarena", "visualwebarena") and port in WEBARENA_PORTS:
        site = WEBARENA_PORTS[port]
    elif host:
        site = host
    return site, templates.get(task_name, task_name)



def isolated_convert(request: dict[str, Any]) -> dict[str, Any]:
    """Child side of :func:`~mag_dataset.harness.browsergym_import.batch.import_experiments`: convert one experiment folder.

    Runs in :mod:`mag_dataset.isolation`'s limited child; returns plain data only.
    """
    import sys

    # live.observe's text walk recurses ~5 frames per DOM level; check_dom caps the depth at
    # MAX_DOM_DEPTH, and this child's stack holds that comfortably (measured: 1,000 levels)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 6 * MAX_DOM_DEPTH))
    exp = Path(request["exp"])
    if not exp.is_absolute():  # this child runs in the package's root, not in the caller's directory
        raise ValueError(f"isolated_convert needs an absolute experiment path, got {str(exp)[:200]!r}")
    ep, images = convert_experiment(exp, request["min_reward"], request["templates"])
    return {"episode": ep.to_json(), "images": dict(images)}
