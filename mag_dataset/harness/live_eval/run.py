"""Running a live evaluation: checks, the run folder, and the episodes on one of three schedulers.

Episodes run in this process (``workers == 1``), in parallel worker processes
(``multiprocessing`` spawn; Playwright objects are bound to the thread that made them, so
each worker owns its browser and agent), or, with ``backend="ray"``, as one Ray task per
episode on a local Ray instance or a cluster (scheduling: :mod:`mag_dataset.harness.ray_backend`);
all give the same report for the same tasks and seeds. This module holds the driver
(:func:`run_live_eval`) and the worker-side task bodies; one episode is
:mod:`mag_dataset.harness.live_eval.episode`, the report :mod:`mag_dataset.harness.live_eval.report`.

The run folder is resumable, and its report can be made again from its episodes
(:func:`rebuild`, ``mag live-eval --report-only RUN_DIR``). It stores the run's configuration (:data:`RUN_MARKER`,
:meth:`LiveEvalConfig.identity`) and one folder per episode that ran; running the same
command again keeps every finished episode and runs only those missing, interrupted or (with
``rerun="errors"``, the default) errored; ``rerun="all"`` runs every episode again. A
different configuration is refused with the difference named, and nothing is deleted
without ``overwrite``. The first Ctrl-C stops the run after the current step of each
episode under way (the local backend; :mod:`mag_dataset.harness.live_eval.interrupt`):
workers, browsers and the agent are closed and :class:`LiveEvalInterrupted` is raised.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable

from mag_dataset.fileio import atomic_write
from mag_dataset.harness.agents import Agent, AgentConfigError, AgentSpec, make_agent
from mag_dataset.harness.live_eval.config import LiveEvalConfig
from mag_dataset.harness.live_eval.episode import run_episode
from mag_dataset.harness.live_eval.interrupt import handling_sigint, install_in_worker, stop_requested
from mag_dataset.harness.live_eval.report import EpisodeResult, action_counts, build_report, format_table
from mag_dataset.harness.live_eval.results import write_results
from mag_dataset.harness.live_eval.tasks import LiveEvalError, LiveEvalInterrupted, check_task
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
from mag_dataset.live.page_step import episode_id_for

#: Written when a run starts: the run's configuration; a folder with it holds this run's episodes.
RUN_MARKER = ".live-eval-run"
#: ``format`` of the marker's JSON
_MARKER_FORMAT = "mag-live-eval-run"


def run_live_eval(config: LiveEvalConfig, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every episode of ``config``, write the run folder, return the report.

    The run folder gets ``report.json``, ``report.md`` and ``results.json``
    (:func:`mag_dataset.harness.live_eval.results.results_record`).

    Args:
        config: the run.
        log: where to print one line per finished episode (default: stderr).

    Returns:
        The report (also written to ``OUT/report.json`` and, as a table, ``OUT/report.md``),
        over every episode of the run: those kept from an earlier run into the same folder
        and those run now.

    Raises:
        LiveEvalError: bad configuration (unknown task, a folder holding another run, no Chromium).
        LiveEvalInterrupted: stopped by Ctrl-C; the finished episodes are on disk, and running
            the same configuration again resumes.
    """
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    _check_run(config)
    kept = _prepare_out_dir(config)
    jobs = [job for job in config.jobs() if job not in kept]
    if kept:
        log(f"resuming {config.out_dir}: {len(kept)} of {len(config.jobs())} episodes kept, {len(jobs)} to run")
    t0 = time.monotonic()
    results: list[EpisodeResult] = list(kept.values())
    bar = _progress(len(jobs), config.progress)
    stopped = False

    def done(r: EpisodeResult) -> None:
        results.append(r)
        bar.update(1)
        status = f"{r.status}: {r.error}" if r.error else r.status
        log(f"{r.episode_id}: {status} (raw reward {r.raw_reward:g}, {r.steps} steps, {r.format_failures} format "
            f"failures, {r.invalid_actions} invalid actions, ended by {r.ended_by}"
            + (f", {r.requests} requests, {r.retries} retries, {r.timeouts} timeouts)" if r.requests else ")"))

    try:
        if config.backend == "ray":  # Ray's driver takes Ctrl-C itself (no Playwright in it)
            run_live_episodes(config, done, jobs)
        else:
            with handling_sigint() as sigint:
                if min(config.workers, len(jobs)) <= 1:
                    _run_here(config, done, jobs)
                else:
                    _run_in_processes(config, done, jobs, sigint)
                stopped = stop_requested()
    except AgentConfigError as e:
        raise LiveEvalError(f"agent {config.agent.label}: {e}") from None
    except RayBackendError as e:
        raise LiveEvalError(str(e)) from None
    finally:
        bar.close()
    if stopped:
        finished = sum(r.status != "interrupted" for r in results)
        raise LiveEvalInterrupted(
            f"interrupted: {finished} of {len(config.jobs())} episodes finished, kept in {config.out_dir}; "
            "run the same command again to run the others", finished, len(config.jobs()))
    report = build_report(config, results, time.monotonic() - t0)
    atomic_write(config.out_dir / "report.json", json.dumps(report, indent=1) + "\n")
    atomic_write(config.out_dir / "report.md", format_table(report))
    write_results(config.out_dir, report)
    return report


def load_run(run_dir: Path) -> tuple[LiveEvalConfig, list[EpisodeResult], float | None]:
    """The configuration, the episode results and the wall time of a run folder.

    Every episode folder of the run's (task, seed) pairs that holds a result is read, whatever
    its status; one without its action counts (written before they were kept) gets them from
    its attempt log. The wall time is the stored report's, else None.

    Raises:
        LiveEvalError: the folder is no live-eval run folder.
    """
    from mag_dataset.harness.agents import AgentSpecError

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise LiveEvalError(f"{run_dir} is not a folder")
    identity = _read_marker(run_dir / RUN_MARKER)
    if identity is None:
        raise LiveEvalError(f"{run_dir} is no live-eval run folder (no readable {RUN_MARKER}; "
                            "a run written before runs stored their configuration cannot be re-reported)")
    stored: dict[tuple[str, int], dict[str, Any]] = {}
    for task, seed in [(t, identity["seed"] + i) for t in identity["tasks"] for i in range(identity["episodes"])]:
        path = run_dir / "episodes" / episode_id_for(task, seed) / "episode.json"
        try:
            stored[(task, seed)] = json.loads(path.read_text("utf-8"))["metadata"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    agent = dict(identity["agent"])
    transport = next((m["live_eval"].get("agent") for m in stored.values() if "live_eval" in m), None) or {}
    try:
        spec = AgentSpec(kind=agent["kind"], model=agent.get("model", ""), max_new_tokens=agent["max_new_tokens"],
                         **{k: transport[k] for k in ("base_url", "timeout", "max_retries") if transport.get(k) is not None})
        config = LiveEvalConfig(agent=spec, tasks=tuple(identity["tasks"]), episodes=identity["episodes"],
                                view=identity["view"], contract=identity["contract"], out_dir=run_dir,
                                max_steps=identity["max_steps"], seed=identity["seed"], progress=False)
    except (AgentSpecError, KeyError, TypeError, ValueError) as e:
        raise LiveEvalError(f"{run_dir}: its stored configuration is unreadable ({type(e).__name__}: {e})") from None
    results = []
    for meta in stored.values():
        try:
            result = EpisodeResult.from_dict(meta["live_eval"])
        except (KeyError, TypeError, ValueError):
            continue
        if result.actions is None:
            result = EpisodeResult.from_dict({**result.to_dict(), "actions": action_counts(meta.get("trajectory") or [])})
        results.append(result)
    try:
        seconds = json.loads((run_dir / "report.json").read_text("utf-8")).get("wall_seconds")
    except (OSError, ValueError, AttributeError):
        seconds = None
    return config, results, seconds


def rebuild(run_dir: Path, exports: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """Make the report, ``results.json`` and the exports of a run folder again from its episodes.

    Returns:
        The report (also written to ``report.json`` and ``report.md``).

    Raises:
        LiveEvalError: the folder is no live-eval run folder.
    """
    config, results, seconds = load_run(run_dir)
    report = build_report(config, results, seconds)
    atomic_write(Path(run_dir) / "report.json", json.dumps(report, indent=1) + "\n")
    atomic_write(Path(run_dir) / "report.md", format_table(report))
    write_results(Path(run_dir), report, exports)
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


def _prepare_out_dir(config: LiveEvalConfig) -> dict[tuple[str, int], EpisodeResult]:
    """Make the run folder ready; returns the finished episodes to keep, by (task, seed).

    A folder holding this run (same :meth:`LiveEvalConfig.identity`) is resumed: its episodes
    are kept but for the unfinished ones, the errored ones (``rerun="errors"``) or all
    (``rerun="all"``), which are run again (each folder replaced once its new run is written).
    Another run, or a folder with a run but no configuration, is refused unless ``overwrite``.

    Raises:
        LiveEvalError: the folder holds another run (the first difference named).
    """
    out = config.out_dir
    if out.exists() and not out.is_dir():
        raise LiveEvalError(f"--out {out} exists and is not a folder")
    marker = out / RUN_MARKER
    has_run = (out / "report.json").exists() or (out / "episodes").exists()
    kept: dict[tuple[str, int], EpisodeResult] = {}
    if config.overwrite:
        for name in ("episodes", "report.json", "report.md", "results.json", "episodes.jsonl", "episodes.csv"):
            p = out / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    elif marker.exists():
        difference = _difference(_read_marker(marker), config.identity())
        if difference:
            raise LiveEvalError(f"{out} holds another live-eval run ({difference}); rerun with its options to "
                                "resume it, or choose another --out (--overwrite deletes its episodes)")
        kept = _finished(config)
    elif has_run:
        raise LiveEvalError(f"{out} already holds a live-eval run without its configuration; choose another --out "
                            "(--overwrite deletes its episodes)")
    if len(kept) < len(config.jobs()):  # the report is rebuilt from the episodes at the end
        for name in ("report.json", "report.md", "results.json", "episodes.jsonl", "episodes.csv"):
            (out / name).unlink(missing_ok=True)
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"format": _MARKER_FORMAT, "config": config.identity()}, indent=1) + "\n")
    return kept


def _read_marker(path: Path) -> dict[str, Any] | None:
    try:
        d = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return d.get("config") if isinstance(d, dict) and d.get("format") == _MARKER_FORMAT else None


def _difference(stored: dict[str, Any] | None, wanted: dict[str, Any]) -> str | None:
    """The first difference between a stored run configuration and this one, in words; None if the same."""
    if stored is None:
        return "its configuration was written by an older version or is unreadable"
    for key, value in wanted.items():
        if key == "agent" and isinstance(stored.get(key), dict):
            for k, v in value.items():
                if stored[key].get(k) != v:
                    return f"agent {k} {stored[key].get(k)!r}, not {v!r}"
            continue
        if stored.get(key) != value:
            return f"{key} {stored.get(key)!r}, not {value!r}"
    return None


def _finished(config: LiveEvalConfig) -> dict[tuple[str, int], EpisodeResult]:
    """The episodes of the run folder to keep (see :func:`_prepare_out_dir`)."""
    if config.rerun == "all":
        return {}
    kept = {}
    for task_id, seed in config.jobs():
        path = config.out_dir / "episodes" / episode_id_for(task_id, seed) / "episode.json"
        try:
            result = EpisodeResult.from_dict(json.loads(path.read_text("utf-8"))["metadata"]["live_eval"])
        except (OSError, ValueError, KeyError, TypeError):  # missing, torn, or not ours: run it
            continue
        if result.status in ("success", "failure") and (result.task, result.seed) == (task_id, seed):
            if result.actions is None:  # written before actions were counted: from its attempt log
                trajectory = json.loads(path.read_text("utf-8"))["metadata"].get("trajectory") or []
                result = EpisodeResult.from_dict({**result.to_dict(), "actions": action_counts(trajectory)})
            kept[(task_id, seed)] = result
    return kept


def _make_agent_or_fail(spec: AgentSpec) -> Agent:
    try:
        return make_agent(spec)
    except ImportError:
        raise
    except Exception as e:  # an unloadable checkpoint or a bad endpoint URL: the user's input
        raise LiveEvalError(f"cannot make agent {spec.label}: {type(e).__name__}: {e}") from None


# ----------------------------------------------------------------------------- local backend


def _run_here(config: LiveEvalConfig, done: Callable[[EpisodeResult], None], jobs: list[tuple[str, int]]) -> None:
    """The episodes in this process, one agent for all."""
    if not jobs:
        return
    agent = _make_agent_or_fail(config.agent)
    try:
        for task_id, seed in jobs:
            if stop_requested():
                break
            done(run_episode(agent, task_id, seed, config, config.out_dir / "episodes"))
    finally:
        agent.close()


_WORKER: dict[str, Any] = {}


def _init_worker(config: LiveEvalConfig, threads: int | None) -> None:
    install_in_worker()  # a Ctrl-C stops the worker's episode after its step (the driver collects it)
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


def _run_in_processes(config: LiveEvalConfig, done: Callable[[EpisodeResult], None], jobs: list[tuple[str, int]],
                      sigint: Any) -> None:
    """The episodes in ``config.workers`` spawned processes.

    A process pool (not threads): Playwright objects are bound to the thread that made
    them, and each worker keeps one agent (one model copy) for all its episodes. Unlike
    multiprocessing.Pool, the executor fails loudly (BrokenProcessPool) when a worker's
    initializer raises instead of respawning it forever. A Ctrl-C reaches the workers too
    (passed on when it reached only this process): the episodes not started are cancelled,
    those under way come back ``interrupted``; a second one kills the workers.
    """
    workers = min(config.workers, len(jobs))
    threads = max(1, (os.cpu_count() or 1) // workers)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(config, threads)) as pool:
        sigint.forward.append(lambda: _signal_workers(pool, signal.SIGINT))
        sigint.on_second.append(lambda: _signal_workers(pool, signal.SIGKILL))
        pending: set[Future] = {pool.submit(_run_job, job) for job in jobs}
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in finished:
                    if not fut.cancelled():
                        done(fut.result())
                if stop_requested():
                    for fut in pending:
                        fut.cancel()
        except AgentConfigError:
            for f in pending:
                f.cancel()
            raise
        except BrokenProcessPool as e:
            if stop_requested():  # a worker the signal reached before its handler was set
                return
            raise LiveEvalError(f"a live-eval worker process died ({e}); rerun with --workers 1 to see why") from e


def _signal_workers(pool: ProcessPoolExecutor, sig: int) -> None:
    for pid in list(getattr(pool, "_processes", None) or {}):
        try:
            os.kill(pid, sig)
        except OSError:
            pass


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


def run_live_episodes(config: LiveEvalConfig, done: Callable[[EpisodeResult], None],
                      jobs: list[tuple[str, int]] | None = None) -> None:
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
        for task_id, seed in config.jobs() if jobs is None else jobs:
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
