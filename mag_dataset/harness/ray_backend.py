"""Ray backend for ``mag live-eval`` and ``mag record``: one Ray task per episode, on one machine or a cluster.

AgentLab runs large BrowserGym evaluations as Ray tasks; this module does the same for the
package's live evaluation (:mod:`mag_dataset.harness.live_eval`) and expert recording
(:mod:`mag_dataset.harness.recorder`), so a user who outgrows one machine keeps the same
commands::

    ray start --head                       # on the head node; `ray start --address HEAD:6379` on the others
    mag live-eval --backend ray --ray-address auto --agent heuristic --tasks click-button --episodes 100 ...
    mag record --backend ray --ray-address auto --tasks 'sites.shop.*' --episodes 3 --out raw/

Without ``--ray-address`` Ray's own rule applies: ``RAY_ADDRESS``, else a cluster started
with ``ray start`` on this machine, else a local Ray instance started for the run and shut
down after it. Ray's servers listen on the node's address, not only 127.0.0.1 (a cluster
framework's design; Ray 2.60 protects them with its token authentication, on by default);
the sites themselves still listen on 127.0.0.1 only.

How episodes run:

* **One task per episode**, each creating and closing its own browser (BrowserGym env);
  a worker process keeps one agent (one model copy) across the episodes it runs.
* **Outputs travel back to the driver.** A task writes its episode folder in a temporary
  folder on its node and returns the files; the driver writes them under ``--out``. No shared
  file system is needed, and a worker that dies mid-episode leaves nothing half-written.
* **Crashed workers are retried.** A task whose worker process dies (Chromium taking the
  process down, the OOM killer, a lost node) is rerun up to ``max_retries`` times; after
  that the episode is counted as an error (live-eval) or a failed attempt (record), and the
  run goes on. Exceptions inside an episode are not retried: they are the episode's outcome.
* **The real sites run one episode at a time.** A site (:mod:`mag_dataset.sites`) is served
  once, on the driver's machine, and every site episode resets its database; so the driver
  never has two episodes of one site in flight (a per-site lock held by the scheduler, which
  a crashed worker cannot leave locked), and site episodes are pinned to the driver's node,
  where ``127.0.0.1`` reaches the site. MiniWoB++ and other tasks run fully in parallel.
* **Same results as the local backend.** Episodes depend only on their task and seed; the
  report and the recorded corpus are put in the local backend's order, so completion order
  changes nothing (``mag record`` also tries the same seeds: see
  :func:`mag_dataset.harness.recorder.record_corpus_ray`).
* **Environment.** Workers get the driver's ``MAG_*`` variables (sites home and ports,
  Chromium path), ``HF_HUB_OFFLINE`` / ``HF_HOME``, and the agent's API-key variable, through
  Ray's ``runtime_env``; every node needs this package (``pip install "mag_dataset[live,ray]"``)
  and Chromium installed.

This module is the scheduling layer only (options and flags, the session, the
:class:`Dispatcher`, moving episode folders between worker and driver); it imports neither
driver. The drivers are :func:`mag_dataset.harness.live_eval.run.run_live_episodes` and
:func:`mag_dataset.harness.recorder.record_corpus_ray`, each with its task body next to it.

Ray is an optional dependency (``pip install "mag_dataset[ray]"``); importing this module
does not import it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: How to install Ray, for messages.
RAY_INSTALL = 'pip install "mag_dataset[ray]"'
#: Variables every worker gets from the driver, besides those starting with ``MAG_``.
FORWARDED_ENV: tuple[str, ...] = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME")
#: The backends ``--backend`` accepts.
BACKENDS: tuple[str, ...] = ("local", "ray")


class RayBackendError(ValueError):
    """Ray is missing, or the cluster cannot be reached / used as asked."""


@dataclass(frozen=True)
class RayOptions:
    """How episodes are scheduled on Ray.

    Attributes:
        address: a running cluster (``auto``, ``HOST:6379`` or ``ray://HOST:10001``); None:
            ``RAY_ADDRESS``, else a ``ray start`` cluster on this machine, else a local
            instance started for the run.
        max_retries: reruns of an episode whose worker process died.
        cpus_per_episode: CPUs Ray reserves per episode (a browser plus the agent).
        gpus_per_episode: GPUs Ray reserves per episode (a checkpoint agent on GPU nodes).
    """

    address: str | None = None
    max_retries: int = 2
    cpus_per_episode: float = 1.0
    gpus_per_episode: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise RayBackendError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")
        if not self.cpus_per_episode > 0:
            raise RayBackendError(f"cpus_per_episode must be > 0, got {self.cpus_per_episode!r}")
        if not self.gpus_per_episode >= 0:
            raise RayBackendError(f"gpus_per_episode must be >= 0, got {self.gpus_per_episode!r}")


# ----------------------------------------------------------------------------- CLI flags


def add_ray_arguments(parser: argparse.ArgumentParser, what: str, unit: str = "episode") -> None:
    """Add ``--backend``, ``--ray-address``, ``--ray-max-retries`` and the per-episode resources.

    Args:
        parser: the command's parser.
        what: how the local backend runs (for the help text).
        unit: what one Ray task runs (``episode``; ``attempt`` for ``mag record``).
    """
    group = parser.add_argument_group("Ray backend (run on a cluster; pip install \"mag_dataset[ray]\")")
    group.add_argument("--backend", choices=BACKENDS, default="local",
                       help=f"local: {what} on this machine; ray: one Ray task per {unit} (default: local)")
    group.add_argument("--ray-address", default=None, metavar="ADDR",
                       help="Ray cluster to use (auto, HOST:6379, ray://HOST:10001); default: RAY_ADDRESS, "
                            "else a local Ray instance for this run")
    group.add_argument("--ray-max-retries", type=int, default=2, metavar="N",
                       help="reruns of an episode whose worker process died (default: %(default)s)")
    group.add_argument("--ray-cpus-per-episode", type=float, default=1.0, metavar="N",
                       help="CPUs reserved per episode (default: %(default)s)")
    group.add_argument("--ray-gpus-per-episode", type=float, default=0.0, metavar="N",
                       help="GPUs reserved per episode, for a checkpoint agent (default: %(default)s)")


def ray_options_from_args(args: argparse.Namespace) -> RayOptions | None:
    """The :class:`RayOptions` of parsed flags; None for ``--backend local``.

    Raises:
        RayBackendError: a Ray flag given with ``--backend local``, or a bad number.
    """
    if args.backend != "ray":
        given = [f for f, v, default in (("--ray-address", args.ray_address, None),
                                         ("--ray-max-retries", args.ray_max_retries, 2),
                                         ("--ray-cpus-per-episode", args.ray_cpus_per_episode, 1.0),
                                         ("--ray-gpus-per-episode", args.ray_gpus_per_episode, 0.0)) if v != default]
        if given:
            raise RayBackendError(f"{', '.join(given)} needs --backend ray")
        return None
    return RayOptions(address=args.ray_address, max_retries=args.ray_max_retries,
                      cpus_per_episode=args.ray_cpus_per_episode, gpus_per_episode=args.ray_gpus_per_episode)


# ----------------------------------------------------------------------------- session


def import_ray() -> Any:
    """``import ray``, or a clear error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise RayBackendError(f"--backend ray needs Ray: {RAY_INSTALL}") from None
    return ray


def forwarded_env(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """The driver's variables that workers need (see the module docstring)."""
    names = set(FORWARDED_ENV) | set(extra) | {k for k in os.environ if k.startswith("MAG_")}
    return {k: os.environ[k] for k in sorted(names) if k in os.environ}


#: Seconds to wait for a cluster's port to answer before giving up (Ray itself retries for minutes).
CONNECT_TIMEOUT_S = 5.0


def check_ray(address: str | None = None) -> None:
    """Fail fast, before anything is written, if Ray is missing or ``address`` does not answer.

    ``HOST:PORT`` and ``ray://HOST:PORT`` addresses are probed with one TCP connection (Ray's
    own ``ray.init`` keeps retrying an unreachable address for minutes); ``auto`` must find a
    cluster started on this machine.

    Raises:
        RayBackendError: Ray not installed, or nothing listening at ``address``.
    """
    import socket

    ray = import_ray()
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None or address == "local":
        return
    if address == "auto":  # a cluster started on this machine with `ray start`
        try:
            from ray._private.services import canonicalize_bootstrap_address_or_die
        except ImportError:  # pragma: no cover - a Ray without it: ray.init reports it later
            return
        try:
            canonicalize_bootstrap_address_or_die("auto")
        except ConnectionError as e:
            raise RayBackendError(f"--ray-address auto: {e}") from None
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise RayBackendError(f"Ray address {address!r} is not 'auto', HOST:PORT or ray://HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise RayBackendError(f"cannot reach a Ray cluster at {address} ({e.strerror or e}); start it with "
                              "`ray start --head` on the head node, or leave out --ray-address for a local instance") from None


@contextmanager
def ray_session(address: str | None = None, runtime_env: dict[str, Any] | None = None) -> Iterator[Any]:
    """Connect to Ray for the duration of a run; yields the ``ray`` module.

    An already initialised Ray (a test's, or a script's own ``ray.init``) is used as it is.
    Otherwise ``address`` (or ``RAY_ADDRESS``, or a ``ray start`` cluster on this machine) is
    connected to, or a local instance is started (no dashboard); this call disconnects (and
    so stops a local instance) at the end.

    Args:
        address: the cluster, see :class:`RayOptions`.
        runtime_env: the job's Ray runtime environment when this call connects (local
            folders in ``py_modules`` are uploaded to every node only at this level).

    Raises:
        RayBackendError: Ray missing, or the cluster unreachable.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    check_ray(address)
    address = address or os.environ.get("RAY_ADDRESS") or None
    try:
        if address is None:
            ray.init(include_dashboard=False, log_to_driver=False, runtime_env=runtime_env)
        else:
            ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RayBackendError(f"cannot connect to Ray at {address or 'a new local instance'}: {first}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


# ----------------------------------------------------------------------------- scheduling


@dataclass(frozen=True)
class Crashed:
    """What a task returns when its worker died on every try (``max_retries`` + 1)."""

    reason: str

    def message(self, max_retries: int) -> str:
        """The error a driver reports for the call (its worker died ``max_retries + 1`` times)."""
        return f"worker crashed {max_retries + 1} time(s): {self.reason}"


class Dispatcher:
    """Submit Ray tasks, at most one in flight per *exclusive* key, and yield them as they finish.

    Args:
        remote_fn: a ``ray.remote`` function.
        options: the run's scheduling options.
        env: environment variables for the workers.
    """

    def __init__(self, remote_fn: Any, options: RayOptions, env: dict[str, str]):
        import ray

        self._ray = ray
        self._fn = remote_fn
        self._options: dict[str, Any] = dict(
            max_retries=options.max_retries, retry_exceptions=False, num_cpus=options.cpus_per_episode,
            num_gpus=options.gpus_per_episode,
        )
        if env:
            self._options["runtime_env"] = {"env_vars": env}
        self._node = ray.get_runtime_context().get_node_id()
        self._queue: list[tuple[Hashable, tuple[Any, ...], str | None]] = []
        self._running: dict[Any, tuple[Hashable, str | None]] = {}  # object ref -> (job key, exclusive key)
        self._busy: set[str] = set()

    def submit(self, key: Hashable, args: tuple[Any, ...], exclusive: str | None = None) -> None:
        """Queue one call; ``exclusive``: a resource two calls may not use at once (a site).

        Calls with an ``exclusive`` key also run on the driver's node (the site is served there).
        """
        self._queue.append((key, args, exclusive))
        self._launch()

    def _launch(self) -> None:
        waiting = []
        for key, args, exclusive in self._queue:
            if exclusive is not None and exclusive in self._busy:
                waiting.append((key, args, exclusive))
                continue
            opts = self._options
            if exclusive is not None:
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                self._busy.add(exclusive)
                opts = {**opts, "scheduling_strategy": NodeAffinitySchedulingStrategy(self._node, soft=False)}
            self._running[self._fn.options(**opts).remote(*args)] = (key, exclusive)
        self._queue = waiting

    def cancel(self) -> None:
        """Drop the queue and cancel the calls in flight."""
        self._queue = []
        for ref in self._running:
            self._ray.cancel(ref, force=True)
        self._running = {}

    def completed(self) -> Iterator[tuple[Hashable, Any]]:
        """``(key, value)`` of each call as it finishes (also the calls submitted meanwhile).

        ``value`` is the function's return value, or :class:`Crashed` when its worker died on
        every try. An exception raised by the function itself is re-raised here (the
        original exception, not Ray's wrapper) after the other calls are cancelled.
        """
        from ray.exceptions import RayError, RayTaskError

        while self._running:
            ready, _ = self._ray.wait(list(self._running), num_returns=1)
            ref = ready[0]
            key, exclusive = self._running.pop(ref)
            if exclusive is not None:
                self._busy.discard(exclusive)
            try:
                value = self._ray.get(ref)
            except RayTaskError as e:
                self.cancel()
                cause = e.cause if isinstance(getattr(e, "cause", None), Exception) else None
                raise (cause or e) from None
            except RayError as e:  # the worker died (after the retries), was killed, or its node was lost
                first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                value = Crashed(f"{type(e).__name__}: {first}"[:300])
            self._launch()
            yield key, value


# ----------------------------------------------------------------------------- helpers for drivers


def read_folder(folder: Path) -> dict[str, bytes]:
    """The files of an episode folder a worker wrote, to send back to the driver."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def write_files(root: Path, name: str, files: dict[str, bytes]) -> Path:
    """Write an episode folder the worker sent back, atomically (:func:`mag_dataset.raw.write_folder`)."""
    from mag_dataset.raw import write_folder

    return write_folder(root, name, files)


def site_lock(task_id: str) -> str | None:
    """The site a task's episodes must not share (``sites.forum.x`` -> ``forum``), else None:
    the ``exclusive`` key of :meth:`Dispatcher.submit`."""
    return task_id.split(".")[1] if task_id.startswith("sites.") else None
