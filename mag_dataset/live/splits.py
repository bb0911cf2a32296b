"""How a raw corpus is split: held-out templates, train/test by task, and ``corpus.json``.

The split is stored in the data at record time (``corpus.json``, :func:`write_corpus_manifest`),
never drawn at load time: tasks are assigned to train or test by task (all steps of a task
in one split), with seeded ``random.Random`` draws, so the same corpus and seed always give
the same split. Templates held out of train give the test split its ``unseen_template``
steps; tasks that share a template and parameters stay in one split.

This module holds the rules and the manifest writer; recording episodes is
:mod:`mag_dataset.live.recorder`, reading corpora :mod:`mag_dataset.raw`.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from mag_dataset.builder.splits import params_key, site_family
from mag_dataset.raw import CORPUS_FORMAT, FORMAT_VERSION, read_corpus, write_corpus_doc

#: Templates kept out of train entirely, so test has ``unseen_template`` steps.
HELD_OUT_TEMPLATES: tuple[str, ...] = ("login-user-popup", "click-tab-2")
#: Share of each seen template's tasks assigned to test.
TEST_FRACTION = 0.3


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
