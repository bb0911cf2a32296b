"""The BrowserGym tasks of a live evaluation: ids, checks, environments and outcomes.

Holds the task catalogue (:data:`BENCHMARK_PACKAGES`), task-id normalisation, the early
check that a task can run here, the env each task is created with, the episode names the
recorder also uses, and how an episode's outcome is read. It holds no agent, no episode
loop (:mod:`mag_dataset.harness.live_eval.episode`) and no scheduling
(:mod:`mag_dataset.harness.live_eval.run`).

Task ids are BrowserGym ids: ``miniwob.click-button`` (or just ``click-button``; the pages
ship in pip ``miniwob``, nothing to serve), ``sites.forum.reply`` (this package's real
web applications), ``webarena.310``, ``workarena.servicenow...``. WebArena and WorkArena
need their BrowserGym package installed and their environment variables set, exactly as
BrowserGym documents.
"""

from __future__ import annotations

import importlib
from typing import Any

from mag_dataset.recording import episode_id_for, site_and_template  # noqa: F401 (re-exported: the recorder's names)

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


class LiveEvalError(ValueError):
    """A live-evaluation configuration is invalid (unknown task, bad numbers, ...)."""


class LiveEvalInterrupted(Exception):
    """A run stopped by Ctrl-C, cleanly: finished episodes are on disk, a rerun resumes.

    Attributes:
        finished: episodes of the run finished (this time or before).
        total: episodes of the run.
    """

    def __init__(self, message: str, finished: int, total: int):
        super().__init__(message)
        self.finished = finished
        self.total = total


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


def make_task_env(task_id: str) -> Any:
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


def task_outcome(env: Any, task_id: str, reward: float, info: dict[str, Any], terminated: bool,
                 truncated: bool) -> tuple[bool, bool, float]:
    """``(done, strict_success, raw_reward)`` after a step.

    MiniWoB++: MiniWoB's own raw reward == 1 (read from the page when BrowserGym terminates,
    see :func:`mag_dataset.live.env.episode_outcome`). Other benchmarks: BrowserGym's
    reward == 1 at termination (strict, as the report states: AssistantBench's partial
    credit in (0, 1) is not a success).
    """
    if task_id.startswith("miniwob."):
        from mag_dataset.live.env import episode_outcome

        done, success, raw = episode_outcome(env, info, terminated)
        return done or truncated, success, raw
    done = bool(terminated or truncated)
    return done, bool(terminated and reward == 1.0), float(reward)
