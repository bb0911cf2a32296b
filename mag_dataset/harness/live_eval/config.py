"""The configuration of one live-evaluation run (:class:`LiveEvalConfig`), validated on construction.

Holds what a run is (agent, tasks, seeds, view, contract, backend) and nothing it does: the
episode loop is :mod:`mag_dataset.harness.live_eval.episode`, the scheduling
:mod:`mag_dataset.harness.live_eval.run`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.actions import Contract, View
from mag_dataset.harness.agents import AgentSpec
from mag_dataset.harness.live_eval.tasks import LiveEvalError, normalize_task_id
from mag_dataset.harness.ray_backend import BACKENDS, RayOptions

#: Contracts a live agent can run under (G has no action to execute).
LIVE_CONTRACTS: tuple[Contract, ...] = (Contract.A, Contract.J, Contract.JG)

#: What a rerun into an existing run folder redoes besides the unfinished episodes
#: (``errors``: the errored ones too; ``all``: every episode, replacing the finished ones).
RERUN_CHOICES: tuple[str, ...] = ("errors", "all")

#: Agent fields that do not change what a run measures (where the endpoint answers, how long
#: to wait, how often to retry): a resume may change them (a server restarted on another port).
_AGENT_TRANSPORT = ("base_url", "timeout", "max_retries")


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
        overwrite: replace an existing run in ``out_dir`` (its finished episodes are deleted).
        rerun: what a run into a folder holding this run's episodes redoes besides the
            unfinished ones: ``errors`` (the errored ones) or ``all`` (every episode).
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
    rerun: str = "errors"
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
        if self.rerun not in RERUN_CHOICES:
            raise LiveEvalError(f"rerun must be one of {list(RERUN_CHOICES)}, got {self.rerun!r}")
        self._check_backend()

    def _check_backend(self) -> None:
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

    def identity(self) -> dict[str, Any]:
        """What the run measures; a resume into its folder must have the same (stored in the folder).

        Leaves out how the episodes are scheduled (workers, backend), where the run folder is,
        and the endpoint's address, timeout and retries.
        """
        agent = {k: v for k, v in self.agent.to_dict().items() if k not in _AGENT_TRANSPORT}
        return {"agent": agent, "tasks": list(self.tasks), "episodes": self.episodes, "seed": self.seed,
                "view": self.view.value, "contract": self.contract.value, "max_steps": self.max_steps}

    def jobs(self) -> list[tuple[str, int]]:
        """(task id, seed) of every episode, in report order."""
        return [(t, self.seed + i) for t in self.tasks for i in range(self.episodes)]
