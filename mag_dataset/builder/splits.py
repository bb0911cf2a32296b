"""Task-level splits of a raw corpus: ``corpus.json`` read and checked, or the documented default.

Holds :class:`CorpusSplits` and :func:`read_splits` (the held-out template and
same-parameters rules included), and the two keys every split rule groups by,
:func:`site_family` and :func:`params_key`: here, in the core, because the builder reads
them and the recorder (:mod:`mag_dataset.live.splits`) writes ``corpus.json`` with them. It does not read episodes or images: the caller passes the
episodes it read.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.builder.layout import BuildError
from mag_dataset.raw import CORPUS_FILE, CORPUS_FORMAT, READ_VERSIONS, RawEpisode
from mag_dataset.schema import Split

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


#: Split seed and test share used when a raw corpus has no ``corpus.json``.
DEFAULT_SPLIT_SEED = 0
DEFAULT_TEST_FRACTION = 0.3


@dataclass(frozen=True)
class CorpusSplits:
    """Task-level split assignment (from ``corpus.json`` or the documented default)."""

    seed: int
    splits: dict[str, Split]
    held_out_templates: tuple[str, ...] = ()
    source: str = CORPUS_FILE
    #: ``corpus.json``'s ``drop_test_echoes``: leave out of test every step that repeats a train
    #: step's screenshot and gold action (:func:`mag_dataset.builder.corpus.test_echoes`).
    drop_test_echoes: bool = False


def read_splits(raw_dir: Path, episodes: list[RawEpisode]) -> CorpusSplits:
    """Read ``corpus.json``; without one (or with one that declares no split, only the stage
    record), split tasks with the documented default.

    Episodes that store their template parameters (``metadata["params"]``) and share
    template and parameters must be in one split (checked).

    The default shuffles the sorted task ids with ``random.Random(DEFAULT_SPLIT_SEED)`` and
    puts the first ``round(DEFAULT_TEST_FRACTION * n)`` (at least one) into test. Episodes
    whose ``metadata["task_key"]`` is the same (repeats of one task, set by
    ``mag import-browsergym``) are one unit of that shuffle, so they land in one split.

    Raises:
        BuildError: a malformed manifest, a task without a split, or a held-out template
            that occurs in train.
    """
    task_ids = sorted({e.task_id for e in episodes})
    path = raw_dir / CORPUS_FILE
    if not path.is_file():
        return _default_splits(episodes, task_ids)
    manifest = _read_manifest(path)
    if manifest is None:  # a corpus.json holding only the stage record (mag_dataset.raw.append_stage)
        return _default_splits(episodes, task_ids)
    seed, splits, held = manifest
    _check_episodes(path, episodes, splits, held)
    drop = json.loads(path.read_text("utf-8")).get("drop_test_echoes", False)
    if not isinstance(drop, bool):
        raise BuildError(f"{path}: field 'drop_test_echoes' must be true or false, got {drop!r}")
    return CorpusSplits(seed=seed, splits={t: splits[t] for t in task_ids}, held_out_templates=tuple(held),
                        drop_test_echoes=drop)


def _default_splits(episodes: list[RawEpisode], task_ids: list[str]) -> CorpusSplits:
    group = {e.task_id: str(e.metadata.get("task_key") or e.task_id) for e in episodes}
    rng = random.Random(DEFAULT_SPLIT_SEED)
    order = sorted(set(group.values()))  # the task ids themselves when no episode has a task key
    rng.shuffle(order)
    n_test = max(1, round(DEFAULT_TEST_FRACTION * len(order))) if order else 0
    test = set(order[:n_test])
    return CorpusSplits(
        seed=DEFAULT_SPLIT_SEED,
        splits={t: Split.TEST if group[t] in test else Split.TRAIN for t in task_ids},
        source="default",
    )


def _read_manifest(path: Path) -> tuple[int, dict[str, Split], list[str]] | None:
    """``(split_seed, {task: split}, held_out_templates)`` of a ``corpus.json``, each field checked;
    None when it declares no split (neither ``split_seed`` nor ``splits``: a stage record only)."""
    try:
        d: Any = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BuildError(f"{path}: not valid UTF-8 JSON: {e}") from None
    if not isinstance(d, dict) or d.get("format") != CORPUS_FORMAT:
        raise BuildError(f"{path}: field 'format' must be {CORPUS_FORMAT!r}")
    if d.get("format_version") not in READ_VERSIONS:
        raise BuildError(f"{path}: unsupported format_version {d.get('format_version')!r}")
    if "split_seed" not in d and "splits" not in d:
        return None
    seed = d.get("split_seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise BuildError(f"{path}: field 'split_seed' must be an integer, got {seed!r}")
    raw_splits = d.get("splits")
    if not isinstance(raw_splits, dict):
        raise BuildError(f"{path}: field 'splits' must map task ids to 'train' or 'test'")
    splits: dict[str, Split] = {}
    for task, value in raw_splits.items():
        try:
            splits[task] = Split(value)
        except ValueError:
            raise BuildError(f"{path}: task {task!r} has split {value!r}, expected 'train' or 'test'") from None
    held = d.get("held_out_templates") or []
    if not isinstance(held, list) or not all(isinstance(t, str) for t in held):
        raise BuildError(f"{path}: field 'held_out_templates' must be a list of strings")
    return seed, splits, held


def _check_episodes(path: Path, episodes: list[RawEpisode], splits: dict[str, Split], held: list[str]) -> None:
    """Every episode's task has a split, no held-out template is in train, and one (template,
    parameters) pair stays in one split."""
    pairs: dict[str, tuple[Split, str]] = {}
    for ep in episodes:
        if ep.task_id not in splits:
            raise BuildError(f"{path}: task {ep.task_id!r} (episode {ep.episode_id!r}) has no split")
        if splits[ep.task_id] is Split.TRAIN and ep.intent_template_id in held:
            raise BuildError(
                f"{path}: template {ep.intent_template_id!r} is held out but task {ep.task_id!r} is in train"
            )
        key = params_key(ep.intent_template_id, ep.metadata.get("params"))
        if key is not None:
            other = pairs.setdefault(key, (splits[ep.task_id], ep.task_id))
            if other[0] is not splits[ep.task_id]:
                raise BuildError(
                    f"{path}: tasks {other[1]!r} ({other[0].value}) and {ep.task_id!r} ({splits[ep.task_id].value}) have "
                    f"the same template and parameters; a (template, parameters) pair must stay in one split"
                )
