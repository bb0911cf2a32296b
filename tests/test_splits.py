"""Corpus splits (issue 10 item 5): by task, seeded, >= 2 held-out templates per site family,
no (template, parameters) pair in both splits; the builder checks the manifest."""

from __future__ import annotations

import json

import pytest

from mag_dataset.builder import BuildError, prepare_corpus
from mag_dataset.builder.splits import params_key, site_family
from mag_dataset.builder.splits import choose_held_out, split_tasks, write_corpus_manifest
from mag_dataset.raw import read_corpus

from synthetic_raw import FAMILIES, family_corpus

@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return family_corpus(tmp_path_factory.mktemp("splits") / "raw")


def _check_invariants(raw, manifest):
    eps = list(read_corpus(raw))
    assert len(eps) == 4 * sum(len(t) for t in FAMILIES.values()) == 48
    splits, held = manifest["splits"], set(manifest["held_out_templates"])
    assert set(splits) == {e.task_id for e in eps}
    by_family: dict[str, set[str]] = {}
    for e in eps:
        by_family.setdefault(site_family(e.source, e.site), set()).add(e.intent_template_id)
    assert set(by_family) == set(FAMILIES)
    for family, templates in by_family.items():
        # at least two held out where the family has three or more templates, else all but one
        assert len(templates & held) == min(2, len(templates) - 1), family
        assert templates - held, f"{family}: every template held out"
    pairs: dict[str, set[str]] = {}
    for e in eps:
        if e.intent_template_id in held:
            assert splits[e.task_id] == "test"
        key = params_key(e.intent_template_id, e.metadata.get("params"))
        if key is not None:
            pairs.setdefault(key, set()).add(splits[e.task_id])
    assert len(pairs) == 27 and all(len(v) == 1 for v in pairs.values())  # 9 site templates x 3 parameter sets
    seen = {e.intent_template_id for e in eps} - held
    assert all({splits[e.task_id] for e in eps if e.intent_template_id == t} == {"train", "test"} for t in seen)


def test_manifest_invariants_and_determinism(raw):
    path = write_corpus_manifest(raw, split_seed=5)
    manifest = json.loads(path.read_text())
    assert manifest["format_version"] == 2 and manifest["held_out_chosen_by"] == "seed"
    assert manifest["families"] == {f: sorted(t) for f, t in sorted(FAMILIES.items())}
    _check_invariants(raw, manifest)
    assert write_corpus_manifest(raw, split_seed=5).read_bytes() == path.read_bytes()
    # other seeds choose other held-out templates, and keep the invariants
    helds = set()
    for seed in range(6):
        m = json.loads(write_corpus_manifest(raw, split_seed=seed).read_text())
        _check_invariants(raw, m)
        helds.add(tuple(m["held_out_templates"]))
    assert len(helds) > 1
    # the builder reads it: unseen_template is exactly the held-out templates
    corpus = prepare_corpus(raw, progress=False)
    assert {s.episode.intent_template_id for s in corpus.steps if s.unseen_template} == set(m["held_out_templates"])


def test_given_held_out_templates_are_used(raw):
    m = json.loads(write_corpus_manifest(raw, 0, held_out=["shop.buy", "wiki.talk", "no-such"]).read_text())
    assert m["held_out_templates"] == ["shop.buy", "wiki.talk"] and m["held_out_chosen_by"] == "given"
    assert all(m["splits"][t] == "test" for t in m["splits"] if t.startswith(("shop.buy.", "wiki.talk.")))


def test_choose_held_out_and_split_tasks_units():
    fam = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "c1": "c", "c2": "c"}
    held = choose_held_out(fam, 0)
    assert len([t for t in held if t.startswith("a")]) == 2 and "b1" not in held and len([t for t in held if t[0] == "c"]) == 1
    assert choose_held_out(dict(reversed(list(fam.items()))), 0) == held  # order-free
    # groups: tasks with one key share a split; a template with one group keeps it in train
    tasks = {f"t{i}": "x" for i in range(6)}
    groups = {"t0": "g", "t1": "g", "t2": "g", "t3": "h", "t4": "h", "t5": None}
    s = split_tasks(tasks, 3, [], 0.5, groups)
    assert s["t0"] == s["t1"] == s["t2"] and s["t3"] == s["t4"] and set(s.values()) == {"train", "test"}
    assert set(split_tasks({"t0": "x", "t1": "x"}, 3, [], 0.5, {"t0": "g", "t1": "g"}).values()) == {"train"}
    # one task per template (a sample of many templates): whole templates go to test, per family
    one = {f"a{i}.seed-1": f"a{i}" for i in range(10)} | {"b0.seed-1": "b0"}
    fams = {t: t[0] for t in one.values()}
    s = split_tasks(one, 0, [], 0.3, None, fams)
    assert sorted(s[t] for t in one if t.startswith("a")).count("test") == 3  # ceil(10 * 0.3)
    assert s["b0.seed-1"] == "train"  # a family's lone template stays in train
    assert s == split_tasks(dict(reversed(list(one.items()))), 0, [], 0.3, None, fams)  # order-free
    assert s != split_tasks(one, 1, [], 0.3, None, fams)  # seeded


def test_builder_refuses_a_parameter_pair_in_both_splits(raw, tmp_path):
    import shutil

    dst = tmp_path / "raw"
    shutil.copytree(raw, dst)
    m = json.loads(write_corpus_manifest(dst, 1).read_text())
    # tasks 0 and 1 of a seen template share parameters: put them in different splits
    template = next(t for t in FAMILIES["shop"] if t not in m["held_out_templates"])
    twins = sorted(e.task_id for e in read_corpus(dst) if e.intent_template_id == template
                   and e.metadata["params"]["item"] == "p0")
    assert len(twins) == 2
    m["splits"][twins[0]], m["splits"][twins[1]] = "train", "test"
    (dst / "corpus.json").write_text(json.dumps(m))
    with pytest.raises(BuildError, match="same template and parameters"):
        prepare_corpus(dst, progress=False)


def test_test_echoes_are_counted_and_left_out_when_the_manifest_says_so(synthetic_corpus, tmp_path):
    """A test step that repeats a train step's screenshot and gold actions is an echo (the
    synthetic templates' episodes share their pages byte for byte); `drop_test_echoes` leaves
    them out of test, the build records both counts and the card says so."""
    import shutil

    from mag_dataset.builder import build_dataset
    from mag_dataset.builder.corpus import test_echoes

    dst = tmp_path / "raw"
    shutil.copytree(synthetic_corpus[0], dst)
    kept = prepare_corpus(dst, progress=False)
    echo_ids, shared = test_echoes(kept.steps)
    assert echo_ids and kept.echoes == {"echoes": len(echo_ids), "shared_screenshots": shared, "dropped": []}
    train = {(s.episode_dir / s.raw.screenshot).read_bytes() for s in kept.steps_in("train")}
    assert all((s.episode_dir / s.raw.screenshot).read_bytes() in train for s in kept.steps if s.step_id in echo_ids)
    m = json.loads((dst / "corpus.json").read_text())
    (dst / "corpus.json").write_text(json.dumps({**m, "drop_test_echoes": True}))
    dropped = prepare_corpus(dst, progress=False)
    assert {s.step_id for s in dropped.steps} == {s.step_id for s in kept.steps} - echo_ids
    assert test_echoes(dropped.steps) == (set(), shared) and dropped.echoes["dropped"] == sorted(echo_ids)
    out = build_dataset(dst, tmp_path / "built", progress=False)
    info = json.loads((out / "build_info.json").read_text())
    assert info["test_echoes"]["dropped"] == len(echo_ids) and info["test_echoes"]["shared_screenshots"] == shared
    assert "No test step repeats a train step's screenshot and gold action" in (out / "README.md").read_text()
    (dst / "corpus.json").write_text(json.dumps({**m, "drop_test_echoes": "yes"}))
    with pytest.raises(BuildError, match="drop_test_echoes"):
        prepare_corpus(dst, progress=False)
