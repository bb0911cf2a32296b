"""Task-level splits of a raw corpus: the rules, ``corpus.json`` written at record time, read at build.

The split is stored in the data when a corpus is recorded or assembled (``corpus.json``,
:func:`write_corpus_manifest`), never drawn at load time: tasks are assigned to train or test
by task (all steps of a task in one split), with seeded ``random.Random`` draws, so the same
corpus and seed always give the same split. Templates held out of train give the test split
its ``unseen_template`` steps; tasks that share a template and parameters stay in one split
(:func:`params_key`); held-out templates are drawn per site family (:func:`site_family`).

The builder reads it back with :func:`read_splits` (every rule checked again), or splits with
the documented default when a corpus has no ``corpus.json``. Pure rules apart from the
manifest's own file: no episode images are read.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.builder.layout import BuildError
from mag_dataset.raw import CORPUS_FILE, CORPUS_FORMAT, FORMAT_VERSION, READ_VERSIONS, RawEpisode, read_corpus, write_corpus_doc
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


#: Split seed used when a raw corpus has no ``corpus.json``.
DEFAULT_SPLIT_SEED = 0
#: Share of each seen template's tasks assigned to test (the default split's share too).
TEST_FRACTION = 0.3


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
    puts the first ``round(TEST_FRACTION * n)`` (at least one) into test. Episodes
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
    n_test = max(1, round(TEST_FRACTION * len(order))) if order else 0
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


# Writing the split (at record time)

#: Templates kept out of train entirely, so test has ``unseen_template`` steps.
HELD_OUT_TEMPLATES: tuple[str, ...] = ("login-user-popup", "click-tab-2")
#: Templates held out of train per site family when ``corpus.json`` is written without an
#: explicit list (fewer when a family has fewer than three templates: one stays in train).
HELD_OUT_PER_FAMILY = 2


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
                test_fraction: float = TEST_FRACTION, task_groups: dict[str, str] | None = None,
                template_families: dict[str, str] | None = None) -> dict[str, str]:
    """Assign every task to train or test, by task, with a fixed seed.

    Tasks of a held-out template all go to test. Every other template's tasks are split
    in *groups*: tasks with the same template and parameters (``task_groups``) form one
    group, so a (template, parameters) pair never lands in both splits; without
    ``task_groups`` each task is its own group. A template's groups are sorted, shuffled
    with ``random.Random(f"{split_seed}:{template}")`` and the first
    ``ceil(n_groups * test_fraction)`` go to test, keeping at least one group in train.
    Templates with a single group cannot be split inside: they are split as whole
    templates, per family (``template_families``; one pool without it): sorted, shuffled
    with ``random.Random(f"{split_seed}:single:{family}")``, the first
    ``ceil(n * test_fraction)`` to test, at least one kept in train (a lone one stays in
    train). A corpus of one task per template (a sample with many templates) so still
    has a test split of the asked share; those test tasks have templates never seen in
    train (the builder marks them ``unseen_template``).

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
    groups = {t: (task_groups or {}).get(t) or f"task|{t}" for t in task_templates}
    by_template: dict[str, dict[str, list[str]]] = {}
    for task_id, template in task_templates.items():
        by_template.setdefault(template, {}).setdefault(groups[task_id], []).append(task_id)
    splits: dict[str, str] = {}
    single: dict[str, list[str]] = {}  # family -> templates of one group
    for template in sorted(by_template):
        members = by_template[template]
        if template in held_out:
            splits.update({t: "test" for ids in members.values() for t in ids})
            continue
        if len(members) == 1:
            single.setdefault((template_families or {}).get(template, ""), []).append(template)
            continue
        keys = sorted(members)
        if all(k == f"task|{members[k][0]}" for k in keys):
            keys = sorted(keys, key=lambda k: members[k][0])  # plain tasks: the task id order
        random.Random(f"{split_seed}:{template}").shuffle(keys)
        n_test = math.ceil(len(keys) * test_fraction)
        n_test = min(n_test, len(keys) - 1) if len(keys) >= 2 else 0
        for i, k in enumerate(keys):
            splits.update({t: "test" if i < n_test else "train" for t in members[k]})
    for family in sorted(single):
        templates = sorted(single[family])
        random.Random(f"{split_seed}:single:{family}").shuffle(templates)
        n_test = min(math.ceil(len(templates) * test_fraction), len(templates) - 1)
        for i, template in enumerate(templates):
            splits.update({t: "test" if i < n_test else "train" for ids in by_template[template].values() for t in ids})
    return dict(sorted(splits.items()))


def write_corpus_manifest(root: str | Path, split_seed: int, held_out: tuple[str, ...] | list[str] | None = None,
                          test_fraction: float = TEST_FRACTION, held_out_per_family: int = HELD_OUT_PER_FAMILY,
                          drop_test_echoes: bool = False) -> Path:
    """Write ``corpus.json`` (split seed, held-out templates, split per task) for a raw corpus.

    Reads (and validates) every episode under ``root``; written atomically, keeping the stage
    record already in ``corpus.json`` (:func:`mag_dataset.raw.write_corpus_doc`). The split is
    :func:`split_tasks` with tasks grouped by (template, parameters) (:func:`params_key`);
    the held-out templates are ``held_out`` (those present in the corpus) when given, else
    :func:`choose_held_out` by site family (:func:`site_family`).

    Args:
        root: the raw corpus folder.
        split_seed: the split seed (stored).
        held_out: templates to keep out of train; None: ``held_out_per_family`` per family, by seed.
        test_fraction: share of each seen template's groups put in test.
        held_out_per_family: see :func:`choose_held_out`.
        drop_test_echoes: tell the builder to leave out of test every step that repeats a
            train step's screenshot and gold action (a template's shared start page with the
            same first click): :func:`mag_dataset.builder.corpus.test_echoes`.

    Returns:
        The path of ``corpus.json``.
    """
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
        "splits": split_tasks(templates, split_seed, held, test_fraction, groups, families),
        "drop_test_echoes": drop_test_echoes,
    }
    return write_corpus_doc(root, manifest)  # the stage record already there is kept
