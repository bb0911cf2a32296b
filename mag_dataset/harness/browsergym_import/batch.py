"""A batch of experiment folders imported into a raw corpus (``mag import-browsergym``).

:func:`import_experiments` finds the folders, converts each in a child process with a
memory and a time limit (:mod:`mag_dataset.isolation`,
:data:`~mag_dataset.harness.browsergym_import.limits.IMPORT_LIMITS`, entry point
:func:`~mag_dataset.harness.browsergym_import.convert.isolated_convert`), groups repeats of one task
under a task key (:data:`TASK_KEYS`), keeps every, the first or the best run of each
(:data:`KEEP_CHOICES`) and writes the episodes. One bad folder costs one skipped folder,
never the batch. Converting one folder is :mod:`~mag_dataset.harness.browsergym_import.convert`'s.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from mag_dataset.harness.browsergym_import.folders import find_experiments
from mag_dataset.harness.browsergym_import.limits import IMPORT_LIMITS, ImportErrorForEpisode
from mag_dataset.harness.import_common import BatchReport
from mag_dataset.isolation import Limits, run_isolated
from mag_dataset.raw import RawEpisode, parse_step


def _episode_from_json(d: dict[str, Any]) -> RawEpisode:
    eid = str(d["episode_id"])
    return RawEpisode(
        episode_id=eid, task_id=str(d["task_id"]), site=str(d["site"]), intent=str(d["intent"]),
        intent_template_id=str(d["intent_template_id"]),
        steps=tuple(parse_step(s, eid, None) for s in d["steps"]), source=str(d["source"]), seed=d["seed"],
        reward=d["reward"], success=bool(d["success"]), metadata=dict(d["metadata"]),
    )


@dataclass
class ImportReport(BatchReport):
    """What :func:`import_experiments` did (a :class:`~mag_dataset.harness.import_common.BatchReport`
    whose sources are experiment directories)."""

    def summary(self) -> str:
        reasons = Counter(r.split(":")[0] for _, r in self.skipped)
        lines = [f"{self.found} experiments: imported {len(self.imported)} episodes ({self.steps} steps), "
                 f"skipped {len(self.skipped)}" + (f" ({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))})" if reasons else "")]
        lines += [f"  skipped {d}: {r}" for d, r in self.skipped]
        return "\n".join(lines)


def _task_seed_key(ep: RawEpisode) -> str:
    task = str(ep.metadata.get("browsergym_task") or ep.intent_template_id)
    return f"{task}.seed-{ep.seed}" if ep.seed is not None else task


#: ``--task-key`` rules: which imported runs are repeats of one task. Repeats are kept in one
#: split (the key is stored as the episode's ``metadata["task_key"]``, which the builder's
#: default split groups by) and ``keep="first"/"best"`` keeps one run per key.
TASK_KEYS: dict[str, Callable[[RawEpisode], str]] = {
    "task-seed": _task_seed_key,  # the same task and seed (BrowserGym's task_name + task_seed)
    "task": lambda ep: str(ep.metadata.get("browsergym_task") or ep.intent_template_id),  # every seed of a task
    "template": lambda ep: f"{ep.site}/{ep.intent_template_id}",  # every task of an intent template
}

#: ``keep`` choices: every run, the first run of each task key (experiment folders sort by
#: their date prefix), or the best (highest cum_reward, then fewest steps, then the first).
KEEP_CHOICES = ("all", "first", "best")


def _rank(ep: RawEpisode) -> tuple[float, int]:
    n = ep.metadata.get("n_steps")  # BrowserGym's step count (noops included)
    return (float(ep.reward or 0.0), -(n if isinstance(n, int) and not isinstance(n, bool) else len(ep.steps)))


#: An earlier run that a better one replaces: its episode id, experiment name and steps written.
_Kept = tuple[str, str, int]


@dataclass
class _Repeats:
    """Which run of each task key is kept (``keep``), and the episode ids taken so far."""

    keep: str
    taken: set[str] = field(default_factory=set)
    kept: dict[str, tuple[tuple[float, int], str, str, int]] = field(default_factory=dict)  # key -> (rank, id, exp, steps)

    def admit(self, ep: RawEpisode, key: str, exp_name: str, report: ImportReport) -> tuple[RawEpisode, _Kept | None] | None:
        """``ep`` with an episode id of its own and the run it replaces (None: none), or None
        when an earlier run of its key is kept instead (recorded as skipped)."""
        replaced = None
        if self.keep != "all" and key in self.kept:
            rank, old_id, old_exp, old_steps = self.kept[key]
            if self.keep == "first" or _rank(ep) <= rank:
                why = "the first" if self.keep == "first" else "a better or equal earlier"
                report.skip(exp_name, f"a repeat: task key {key!r} already has {why} run ({old_exp})")
                return None
            replaced = (old_id, old_exp, old_steps)
            self.taken.discard(old_id)
        base, n = ep.episode_id, 2
        while ep.episode_id in self.taken:  # a repeat of a task: its own id, the same task key
            ep = dataclasses.replace(ep, episode_id=f"{base}-{n}", task_id=f"{base}-{n}")
            n += 1
        self.taken.add(ep.episode_id)
        return ep, replaced


def _drop_replaced(out: Path, report: ImportReport, replaced: _Kept, key: str, ep: RawEpisode, exp_name: str) -> None:
    """Remove the earlier run ``replaced`` of ``key``, which ``ep`` (from ``exp_name``) beats."""
    old_id, old_exp, old_steps = replaced
    if old_id != ep.episode_id:
        shutil.rmtree(out / old_id, ignore_errors=True)
    report.imported.remove(old_id)
    report.steps -= old_steps
    report.skipped.append((old_exp, f"a repeat: task key {key!r} has a better run ({exp_name})"))


def _convert_isolated(exp: Path, min_reward: float, templates: dict[str, str] | None,
                      limits: Limits) -> tuple[RawEpisode, dict[str, bytes]]:
    """Convert ``exp`` in a limited child process.

    Raises:
        ImportErrorForEpisode: it cannot be converted, or the child hit a limit (why).
    """
    # the child starts in the package's root: a relative path would name another folder there.
    # Absolute, not resolved: a symlinked experiment folder keeps its own name
    request = {"exp": os.path.abspath(exp), "min_reward": float(min_reward), "templates": dict(templates or {})}
    got = run_isolated("browsergym_import.convert", request, limits)
    if got.kind == "refused":
        raise ImportErrorForEpisode(got.message)
    if got.kind == "time":
        raise ImportErrorForEpisode(f"refused: converting it took longer than the limit of {limits.seconds:g} s")
    if got.kind == "memory":
        raise ImportErrorForEpisode(f"refused: converting it needs more than the memory limit of {limits.memory_mb:,} MiB")
    if got.kind != "ok":
        raise ImportErrorForEpisode(f"cannot be converted: {got.message}")
    try:
        return _episode_from_json(got.value["episode"]), dict(got.value["images"])
    except (KeyError, TypeError, ValueError) as e:
        raise ImportErrorForEpisode(f"cannot be converted: a malformed result ({type(e).__name__})") from None


def import_experiments(
    paths: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    min_reward: float = 1.0,
    templates: dict[str, str] | None = None,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
    limits: Limits | None = None,
    task_key: str = "task-seed",
    keep: str = "all",
) -> ImportReport:
    """Import every successful experiment under ``paths`` into the raw corpus ``out_dir``.

    Args:
        paths: experiment directories or roots holding many.
        out_dir: the raw corpus to add episodes to (created when missing).
        min_reward: the least ``cum_reward`` of a successful episode.
        templates: optional ``task_name -> intent_template_id`` map.
        overwrite: replace an episode that already exists in ``out_dir`` (default: skip it).
        progress: called with one line per experiment.
        limits: memory and time limits of the child process that converts each experiment
            folder (default :data:`IMPORT_LIMITS`); a folder that exhausts them is skipped.
        task_key: a :data:`TASK_KEYS` rule: runs with one key are repeats of one task and
            land in one split.
        keep: a :data:`KEEP_CHOICES` entry: every run, or the first or best run per task key.

    Returns:
        An :class:`ImportReport`; each episode is written atomically. One bad folder never
        stops the batch: it is skipped with its reason.
    """
    if task_key not in TASK_KEYS:
        raise ValueError(f"unknown task key rule {task_key!r}; choose from {', '.join(TASK_KEYS)}")
    if keep not in KEEP_CHOICES:
        raise ValueError(f"unknown keep choice {keep!r}; choose from {', '.join(KEEP_CHOICES)}")
    out = Path(out_dir)
    limits = limits or IMPORT_LIMITS
    exps = find_experiments(paths)
    report = ImportReport(found=len(exps))
    repeats = _Repeats(keep)
    for exp in exps:
        try:
            ep, images = _convert_isolated(exp, min_reward, templates, limits)
        except ImportErrorForEpisode as e:
            report.skip(exp.name, str(e), progress)
            continue
        key = TASK_KEYS[task_key](ep)
        admitted = repeats.admit(dataclasses.replace(ep, metadata={**ep.metadata, "task_key": key}), key, exp.name, report)
        if admitted is None:
            continue
        ep, replaced = admitted
        if report.skip_existing(out, ep, exp.name, overwrite or (replaced is not None and replaced[0] == ep.episode_id)):
            continue
        if replaced is not None:
            _drop_replaced(out, report, replaced, key, ep, exp.name)
        report.write(out, ep, images, exp.name, progress)
        repeats.kept[key] = (_rank(ep), ep.episode_id, exp.name, len(ep.steps))
    return report
