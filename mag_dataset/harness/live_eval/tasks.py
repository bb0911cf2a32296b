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
        from mag_dataset.sites.env import make_site_env

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


def task_site(task_id: str) -> str:
    """The site a task's episodes are reported under: its site family (as the builder's
    ``site_family``): ``miniwob`` for every MiniWoB++ task, the site's name for a site task
    (``sites.forum.reply`` -> ``forum``), the benchmark for other BrowserGym ids (``webarena``)."""
    prefix = task_id.split(".", 1)[0]
    if prefix == "sites":
        return task_id.split(".")[1]
    return prefix


def task_kind(task_id: str) -> str:
    """The kind of task a report groups episodes by: a site task's :attr:`SiteTask.kind`
    (``information``, ``navigation`` or ``state``: what its check reads); ``miniwob`` for the
    MiniWoB++ family; the benchmark for other BrowserGym ids."""
    prefix = task_id.split(".", 1)[0]
    if prefix == "sites":
        from mag_dataset.sites import SiteError, task_class as site_task_class

        try:
            return site_task_class(task_id).kind
        except (SiteError, KeyError):  # a task renamed since the run: still reported, under its benchmark
            return prefix
    return prefix


def _distribution_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def task_environment(task_id: str) -> dict[str, Any]:
    """What a task's episode ran against, for a results file's provenance.

    Returns:
        ``{"benchmark", "packages": {distribution: version}}`` and, for a site task,
        ``"sites": {name: {"app", "version", "fingerprint"}}`` for its site and the other
        sites of a cross-site task (``fingerprint``: the seed data's, from the install's
        ``setup.json``, when the site records one; a site's ``version`` changes with its
        setup or seed data). Nothing here fails: a value that cannot be read is None.
    """
    prefix = task_id.split(".", 1)[0]
    packages = {"browsergym-core": _distribution_version("browsergym-core")}
    if prefix == "miniwob":
        packages["miniwob"] = _distribution_version("miniwob")
    elif prefix != "sites" and prefix in BENCHMARK_PACKAGES:
        name = BENCHMARK_PACKAGES[prefix].replace(".", "-")
        packages[name] = _distribution_version(name)
    out: dict[str, Any] = {"benchmark": prefix, "packages": packages}
    if prefix == "sites":
        out["sites"] = _site_versions(task_id)
    return out


def _site_versions(task_id: str) -> dict[str, dict[str, Any]]:
    import json

    from mag_dataset.sites import SiteError, task_class as site_task_class

    try:
        cls = site_task_class(task_id)
    except (SiteError, KeyError):
        return {}
    sites: dict[str, dict[str, Any]] = {}
    for site_cls in (cls.site_class, *cls.other_sites):
        try:
            seeded = json.loads(site_cls().setup_file.read_text("utf-8")).get("seeded") or {}
        except (OSError, ValueError, AttributeError):
            seeded = {}
        sites[site_cls.name] = {"app": site_cls.app, "version": site_cls.version,
                                "fingerprint": seeded.get("fingerprint")}
    return sites
