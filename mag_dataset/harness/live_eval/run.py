"""Running a live evaluation: checks, the run folder, and the episodes on one of three schedulers.

Episodes run in this process (``workers == 1``), in parallel worker processes
(``multiprocessing`` spawn; Playwright objects are bound to the thread that made them, so
each worker owns its browser and agent), or, with ``backend="ray"``, as one Ray task per
episode on a local Ray instance or a cluster (scheduling: :mod:`mag_dataset.harness.ray_backend`);
all give the same report for the same tasks and seeds. This module holds the driver
(:func:`run_live_eval`) and the worker-side task bodies; one episode is
:mod:`mag_dataset.harness.live_eval.episode`, the report :mod:`mag_dataset.harness.live_eval.report`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable

from mag_dataset.fileio import atomic_write
from mag_dataset.harness.agents import Agent, AgentConfigError, AgentSpec, make_agent
from mag_dataset.harness.live_eval.config import LiveEvalConfig
from mag_dataset.harness.live_eval.episode import run_episode
from mag_dataset.harness.live_eval.report import EpisodeResult, build_report, format_table
from mag_dataset.harness.live_eval.tasks import LiveEvalError, check_task, episode_id_for
from mag_dataset.harness.ray_backend import (
    Crashed,
    Dispatcher,
    RayBackendError,
    forwarded_env,
    ray_session,
    read_folder,
    site_lock,
    write_files,
)

#: Written when a run starts; a folder with it but no report.json is an interrupted run.
RUN_MARKER = ".live-eval-run"


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
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    _check_run(config)
    _prepare_out_dir(config)
    t0 = time.monotonic()
    results: list[EpisodeResult] = []
    bar = _progress(len(config.jobs()), config.progress)

    def done(r: EpisodeResult) -> None:
        results.append(r)
        bar.update(1)
        status = "success" if r.success else (f"error: {r.error}" if r.error else "failure")
        log(f"{r.episode_id}: {status} (raw reward {r.raw_reward:g}, {r.steps} steps, {r.format_failures} format "
            f"failures, {r.invalid_actions} invalid actions, ended by {r.ended_by})")

    try:
        if config.backend == "ray":
            run_live_episodes(config, done)
        elif min(config.workers, len(config.jobs())) == 1:
            _run_here(config, done)
        else:
            _run_in_processes(config, done)
    except AgentConfigError as e:
        raise LiveEvalError(f"agent {config.agent.label}: {e}") from None
    except RayBackendError as e:
        raise LiveEvalError(str(e)) from None
    bar.close()
    report = build_report(config, results, time.monotonic() - t0)
    atomic_write(config.out_dir / "report.json", json.dumps(report, indent=1) + "\n")
    atomic_write(config.out_dir / "report.md", format_table(report))
    return report


def _check_run(config: LiveEvalConfig) -> None:
    """Everything that can be checked before a browser starts.

    Raises:
        LiveEvalError: no Chromium, a task that cannot run here, site tasks in parallel
            workers, an unloadable checkpoint for the workers, an unreachable Ray cluster.
    """
    from mag_dataset.live.env import LiveEnvError, chromium_executable

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


def _make_agent_or_fail(spec: AgentSpec) -> Agent:
    try:
        return make_agent(spec)
    except ImportError:
        raise
    except Exception as e:  # an unloadable checkpoint or a bad endpoint URL: the user's input
        raise LiveEvalError(f"cannot make agent {spec.label}: {type(e).__name__}: {e}") from None


# ----------------------------------------------------------------------------- local backend


def _run_here(config: LiveEvalConfig, done: Callable[[EpisodeResult], None]) -> None:
    """Every episode in this process, one agent for all."""
    agent = _make_agent_or_fail(config.agent)
    try:
        for task_id, seed in config.jobs():
            done(run_episode(agent, task_id, seed, config, config.out_dir / "episodes"))
    finally:
        agent.close()


_WORKER: dict[str, Any] = {}


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


def _run_in_processes(config: LiveEvalConfig, done: Callable[[EpisodeResult], None]) -> None:
    """The episodes in ``config.workers`` spawned processes.

    A process pool (not threads): Playwright objects are bound to the thread that made
    them, and each worker keeps one agent (one model copy) for all its episodes. Unlike
    multiprocessing.Pool, the executor fails loudly (BrokenProcessPool) when a worker's
    initializer raises instead of respawning it forever.
    """
    jobs = config.jobs()
    workers = min(config.workers, len(jobs))
    threads = max(1, (os.cpu_count() or 1) // workers)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(config, threads)) as pool:
        futures = [pool.submit(_run_job, job) for job in jobs]
        try:
            for fut in as_completed(futures):
                done(fut.result())
        except AgentConfigError:
            for f in futures:
                f.cancel()
            raise
        except BrokenProcessPool as e:
            raise LiveEvalError(f"a live-eval worker process died ({e}); rerun with --workers 1 to see why") from e


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


# ----------------------------------------------------------------------------- Ray backend

_AGENTS: dict[Any, Any] = {}


def _worker_agent(spec: AgentSpec) -> Agent:
    """The agent of ``spec``, made once per Ray worker process (one model copy for its episodes)."""
    if spec not in _AGENTS:
        _AGENTS[spec] = _make_agent_or_fail(spec)
    return _AGENTS[spec]


def live_episode_task(config: LiveEvalConfig, task_id: str, seed: int) -> tuple[EpisodeResult, dict[str, bytes]]:
    """Ray task body: one live-eval episode in its own browser; returns (result, episode files)."""
    agent = _worker_agent(config.agent)
    with tempfile.TemporaryDirectory(prefix="mag-ray-episode-") as tmp:
        result = run_episode(agent, task_id, seed, config, Path(tmp))
        folder = Path(tmp) / result.episode_id
        files = read_folder(folder) if folder.is_dir() else {}
    return result, files


def run_live_episodes(config: LiveEvalConfig, done: Callable[[EpisodeResult], None]) -> None:
    """Run every episode of a live-eval ``config`` as Ray tasks; ``done(result)`` as each ends.

    Episode folders are written under ``config.out_dir / "episodes"`` by the driver. An
    episode whose worker died on every try is reported as an error (no folder).

    Raises:
        RayBackendError: Ray missing or unreachable.
        mag_dataset.harness.agents.AgentConfigError: the agent cannot run at all (wrong key).
    """
    options = config.ray
    env = forwarded_env((config.agent.api_key_env,) if config.agent.kind == "openai" else ())
    episodes_dir = config.out_dir / "episodes"
    with ray_session(options.address) as ray:
        dispatcher = Dispatcher(ray.remote(live_episode_task), options, env)
        for task_id, seed in config.jobs():
            dispatcher.submit((task_id, seed), (config, task_id, seed), site_lock(task_id))
        for (task_id, seed), value in dispatcher.completed():
            if isinstance(value, Crashed):
                result = EpisodeResult(
                    task=task_id, seed=seed, episode_id=episode_id_for(task_id, seed), success=False,
                    raw_reward=0.0, steps=0, format_failures=0, invalid_actions=0, ended_by="error", seconds=0.0,
                    error=value.message(options.max_retries),
                )
            else:
                result, files = value
                if files:
                    write_files(episodes_dir, result.episode_id, files)
            done(result)
