"""The committed corpus (mag_dataset/data/raw): the issue's must-show figures, geometry, flags, splits, size.

Two site families: the four real applications (``sites.*`` task ids: shop, forum, tracker,
wiki; the realistic part, which must meet the figures on its own) and ``miniwob``. The
corpus is made by ``scripts/make_corpus.py``; the checks read the raw episodes and the
built dataset (``mag build`` through :func:`mag_dataset.dataset.bundled_dataset`, loaded
with ``datasets.load_dataset``).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from PIL import Image

import mag_dataset
from mag_dataset.actions import ACTION_SPACE
from mag_dataset.template_guides import template_guide
from mag_dataset.harness.unify import PIXEL_FRACTION
from mag_dataset.builder.splits import site_family
from mag_dataset.raw import (
    CORPUS_FILE,
    EPISODE_FILE,
    EPISODE_GZ_FILE,
    EVIDENCE_FILE,
    episode_path,
    image_format,
    iter_episode_dirs,
    read_corpus,
)
from mag_dataset.schema import GuideSource, box_inside_image, point_in_box

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import make_corpus  # noqa: E402  (the settings the bundled corpus was made with)

RAW = Path(mag_dataset.__file__).parent / "data" / "raw"
SITES = {"shop", "forum", "tracker", "wiki"}


@pytest.fixture(scope="module")
def episodes():
    eps = list(read_corpus(RAW))  # validates every episode (format, files present, ids in menu)
    assert len(eps) >= 190, f"only {len(eps)} bundled episodes under {RAW}"
    return eps


@pytest.fixture(scope="module")
def rows():
    """Every row of both views of the built bundled corpus, without images: ``{view: [row]}``."""
    import datasets

    from mag_dataset.dataset import bundled_dataset

    folder = bundled_dataset()
    out = {}
    for view in ("som", "coord"):
        dd = datasets.load_dataset(str(folder), view)
        out[view] = [r for split in sorted(dd) for r in dd[split].remove_columns("screenshot").to_list()]
    return out


def _realistic(rows):
    return [r for r in rows if r["task_id"].startswith("sites.")]


def test_realistic_part_meets_the_issue_figures(rows):
    som = _realistic(rows["som"])
    tasks = {r["task_id"]: r["num_steps"] for r in som}
    figures = {
        "steps": len(som),
        "tasks": len(tasks),
        "sites": len({r["site"] for r in som}),
        "median_candidates": statistics.median(len(r["candidates"]) for r in som),
        "median_task_steps": statistics.median(tasks.values()),
        "median_guide_words": statistics.median(len(r["guide"].split()) for r in som),
        "coordinate_restored": sum(r["coordinate_restored"] for r in som),
        "stale": sum(r["stale"] for r in som),
        "templates": len({r["intent_template_id"] for r in som}),
    }
    assert {r["site"] for r in som} == SITES, figures
    # issue 25: >= 1,000 steps over >= 150 tasks within 45 MiB. With the episodes' JSON stored
    # gzip-compressed (mag compact: episode.json.gz, a seventh of its size) the cap holds 154 tasks
    # of the 117 templates (a template's episodes in seed order while its steps stay within 17:
    # scripts/make_corpus.py's fit_to_cap; 121 at 9 steps when the JSON was stored plain)
    assert figures["steps"] >= 1000 and figures["tasks"] >= 150 and figures["templates"] >= 110, figures
    assert figures["median_candidates"] >= 40 and figures["median_task_steps"] >= 5, figures
    assert figures["median_guide_words"] >= 10, figures
    assert figures["coordinate_restored"] > 0 and figures["stale"] > 0, figures
    # every site family on its own has steps, and both flags come from several families
    by_family = Counter(r["site"] for r in som)
    assert all(by_family[s] >= 100 for s in SITES), by_family
    assert len({r["site"] for r in som if r["stale"]}) >= 2
    assert len({r["site"] for r in som if r["coordinate_restored"]}) >= 3
    # the MiniWoB++ family is kept beside it (4 episodes of each of its 19 tasks)
    assert len(rows["som"]) - len(som) >= 150


def test_realistic_part_reads_like_webmre(rows):
    """Issue 25's bars, from the builder's own statistics (build_info ``realism``, the card's
    table next to WebMRE's): varied guides, uneven demonstrations, a site that moved on."""
    from mag_dataset.dataset import bundled_dataset

    info = json.loads((bundled_dataset() / "build_info.json").read_text("utf-8"))
    realism = info["realism"]
    assert realism["steps"] == len(_realistic(rows["som"]))
    missed = {m: (realism[m], b["bar"]) for m, b in realism["bars"].items() if not b["met"]}
    # every bar holds; stale (45% of site steps, bar 40%) since a replay follows its target on a
    # drifted page (mag_dataset.harness.recapture.retarget) instead of ending at the first moved link
    assert not missed and realism["stale"] >= 0.40, missed
    assert all(realism["audit"][a] > 0 for a in ("confirmed", "remapped", "unmappable", "disputed")), realism["audit"]


def test_every_coord_gold_point_lies_inside_its_target_box(rows):
    checked = 0
    for r in rows["coord"]:
        a = r["action"]
        assert a["element_id"] is None and not r["candidates"], r["step_id"]
        if not ACTION_SPACE[a["type"]].targeted:
            continue
        if r["target_bbox"] is None:  # a recorded point no candidate holds (`mag unify`): no box to score against
            assert r["audit_status"] == "unmappable", r["step_id"]
            continue
        # the recorded point is in the recorded element's box, also where the audit found that
        # element gone from the page the step shows (unmappable: left out of element-level scoring)
        assert point_in_box(tuple(a["coordinate"]), tuple(r["target_bbox"])), r["step_id"]
        checked += 1
    targeted = sum(ACTION_SPACE[r["action"]["type"]].targeted for r in rows["coord"])
    boxless = sum(r["target_bbox"] is None and ACTION_SPACE[r["action"]["type"]].targeted for r in rows["coord"])
    assert checked == targeted - boxless and checked >= 800
    assert [r["step_id"] for r in rows["som"]] == [r["step_id"] for r in rows["coord"]]


def test_raw_geometry_of_every_step(episodes):
    checked = unmapped = 0
    for ep in episodes:
        folder = RAW / ep.episode_id
        for st in ep.steps:
            where = f"{ep.episode_id}:{st.step_index}"
            data = (folder / st.screenshot).read_bytes()
            assert image_format(data) == "webp", where  # stored once, lossless
            assert not st.som_screenshot, where  # Set-of-Mark rendered at build time
            with Image.open(folder / st.screenshot) as im:
                assert im.size == (st.image_width, st.image_height), where
            if not ACTION_SPACE[st.action.type].targeted:
                assert st.target_bbox is None, where
                continue
            if st.action.element_id is None:  # a point-only click unify could not map: built unmappable
                assert st.metadata.get("recorded_as") == "point_only" and st.target_bbox is None, where
                unmapped += 1
                continue
            box, pt = st.target_bbox, st.action.coordinate
            assert box is not None and pt is not None and st.action.element_id is not None, where
            assert box_inside_image(box, st.image_width, st.image_height), where
            assert point_in_box(pt, box), where
            menu = {c.id: c for c in st.candidates}
            assert menu[st.action.element_id].bbox == box, where  # the gold element is in the menu, same box
            checked += 1
    assert checked + unmapped == sum(ACTION_SPACE[s.action.type].targeted for ep in episodes for s in ep.steps)
    assert checked >= 800 and unmapped <= checked // 20


def test_coordinate_restored_steps_are_the_recorded_point_only_clicks(episodes):
    """Restoration arises from its real cause: clicks recorded as a bare point (``recorded_as``)."""
    point_only = restored = 0
    for ep in episodes:
        for st in ep.steps:
            where = f"{ep.episode_id}:{st.step_index}"
            if st.metadata.get("recorded_as") == "point_only":
                point_only += 1
                if st.metadata.get("coordinate_restored"):
                    restored += 1  # the human-style point is kept; the restored element holds it
                    assert point_in_box(st.action.coordinate, st.target_bbox), where
                else:
                    assert st.action.element_id is None, where
            else:
                assert not st.metadata.get("coordinate_restored"), where
    assert point_only >= 50 and restored >= 0.9 * point_only, (restored, point_only)


def test_stale_steps_are_recaptured_steps_whose_pixels_moved(episodes):
    """Staleness arises from recapture on a drifted site (``mag recapture --share 1 --drift 7``)
    and the unify rule only: every site episode was replayed on its site reset and moved on."""
    recaptured_eps = [ep for ep in episodes if ep.metadata.get("recaptured")]
    assert make_corpus.RECAPTURE_SHARE == 1
    assert {ep.episode_id for ep in recaptured_eps} == {ep.episode_id for ep in episodes if ep.source == "sites"}
    for ep in recaptured_eps:
        drift = ep.metadata["recaptured"]["drift"]
        assert (drift["seed"], drift["level"]) == (make_corpus.DRIFT_SEED, make_corpus.DRIFT_LEVEL), ep.episode_id
        assert sum(drift["changes"].values()) > 0, ep.episode_id  # the site moved on
    stale = 0
    for ep in episodes:
        for st in ep.steps:
            check = st.metadata.get("stale_check")
            if not ep.metadata.get("recaptured"):
                assert not st.stale and check is None
                continue
            if st.metadata["recaptured"] is False:  # the recapture ended before it: an action-time step
                assert "recapture_ended" in st.metadata or "recapture_ended_before" in st.metadata
                assert not st.stale and check is None and "_recaptured" not in st.screenshot
                continue
            assert st.metadata["recaptured"] is True and (RAW / ep.episode_id / st.metadata["action_time_screenshot"]).is_file()
            assert st.stale == check["stale"]
            if st.stale:
                stale += 1
                assert check["reason"] != "pixels" or check["pixel_fraction"] > PIXEL_FRACTION
    n = sum(len(ep.steps) for ep in recaptured_eps)
    assert 0 < stale < n, (stale, n)


def test_guides_context_for_sites_template_for_miniwob(episodes):
    forms: dict[str, set[str]] = defaultdict(set)
    for ep in episodes:
        for st in ep.steps:
            where = f"{ep.episode_id}:{st.step_index}"
            if ep.source == "sites":  # the expert's plan, else the page's context
                assert st.guide_source in (GuideSource.PLAN, GuideSource.CONTEXT_TEMPLATE), where
                forms[ep.intent_template_id].add(" ".join(st.guide.split()[:2]))
            else:
                target = next((c for c in st.candidates if c.id == st.action.element_id), None)
                assert st.guide_source is GuideSource.TEMPLATE and st.guide == template_guide(st.action, target), where
    # varied phrasing: most templates' guides open in several ways
    assert sum(len(f) >= 3 for f in forms.values()) >= 0.8 * len(forms), {t: len(f) for t, f in forms.items()}


def test_split_by_task_held_out_templates_per_family(episodes):
    manifest = json.loads((RAW / CORPUS_FILE).read_text("utf-8"))
    splits = manifest["splits"]
    assert set(splits) == {ep.task_id for ep in episodes}
    held = set(manifest["held_out_templates"])
    by_template: dict[str, set[str]] = defaultdict(set)
    fam_of: dict[str, str] = {}
    pairs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for ep in episodes:
        by_template[ep.intent_template_id].add(splits[ep.task_id])
        fam_of[ep.intent_template_id] = site_family(ep.source, ep.site)
        pairs[(ep.intent_template_id, json.dumps(ep.metadata.get("params", ep.seed), sort_keys=True))].add(splits[ep.task_id])
    for t in held:
        assert by_template[t] == {"test"}, t
    held_per_family = Counter(fam_of[t] for t in held)
    assert set(held_per_family) == SITES | {"miniwob"} and min(held_per_family.values()) >= 2, held_per_family
    assert all(len(s) == 1 for s in pairs.values()), [p for p, s in pairs.items() if len(s) > 1]
    assert set(splits.values()) == {"train", "test"}


def test_the_sample_is_audited_by_the_rule_based_judges(rows):
    """Every targeted step has an outcome of the three page judges; each outcome occurs, with an
    example in the card; build_info says audited and names the judges."""
    from mag_dataset.dataset import bundled_dataset

    som = rows["som"]
    targeted = [r for r in som if ACTION_SPACE[r["action"]["type"]].targeted]
    status = Counter(r["audit_status"] for r in targeted)
    assert {"confirmed", "remapped", "unmappable", "disputed"} <= set(status), status
    assert status["unaudited"] == 0, status
    assert all(r["audit_status"] == "unaudited" for r in som if not ACTION_SPACE[r["action"]["type"]].targeted)
    assert all(r["disputed"] == (r["audit_status"] == "disputed") for r in som)
    # the judges confirm the labels of the steps nobody moved (not recaptured, not restored)
    plain = [r for r in targeted if not r["stale"] and not r["coordinate_restored"] and "_recaptured" not in r["step_id"]]
    assert sum(r["audit_status"] == "confirmed" for r in plain) >= 0.9 * len(plain), Counter(r["audit_status"] for r in plain)
    # a remapped step keeps its recorded element
    assert all(r["original_element_id"] for r in som if r["audit_status"] == "remapped")
    folder = bundled_dataset()
    info = json.loads((folder / "build_info.json").read_text("utf-8"))
    assert info["audited"] is True
    assert [j["name"] for j in info["audit_judges"]] == ["dom", "name", "pixel"]
    assert set(info["audit_examples"]) == {"confirmed", "remapped", "unmappable", "disputed"}
    card = (folder / "README.md").read_text("utf-8")
    assert "labels audited by the 3 rule-based page judges `dom`, `name`, `pixel`" in card
    for st, ex in info["audit_examples"].items():
        assert f"- **{st}**: `{ex['step_id']}`" in card


def test_gold_echo_excludes_the_disputed_and_unmappable_test_steps():
    """`mag score` of the gold answers on the test split: element-level scoring leaves out the
    steps the audit disputed or could not map, and says how many."""
    import datasets

    from mag_dataset.dataset import bundled_dataset, step_from_record
    from mag_dataset.predictions import Prediction
    from mag_dataset.prompts import render_target
    from mag_dataset.scoring import score_predictions

    test = datasets.load_dataset(str(bundled_dataset()), "som", split="test").remove_columns("screenshot")
    steps = [step_from_record(r) for r in test]
    preds = [Prediction(s.step_id, render_target(s, "som", "A"), 0) for s in steps]
    report = json.loads(score_predictions(preds, steps, "som", "A").to_json())
    counts = report["counts"]
    assert counts["element_level_excluded"] == counts["disputed"] + counts["unmappable"] > 0, counts
    assert report["target_acc"]["micro"] == 1.0  # the gold answers, on the steps that are scored


def test_the_data_folder_fits_the_cap_on_disk():
    """``du -sh mag_dataset/data`` (the front door's measure: whole blocks, every file) <= 45 MiB."""
    used = make_corpus.disk_usage(RAW.parent)
    assert used <= make_corpus.SIZE_CAP == 45 * 2**20, f"{used / 2**20:.1f} MiB"
    files = [p for p in RAW.rglob("*") if p.is_file()]
    stray = [p for p in files if p.suffix not in (".webp", ".json", ".jsonl") and p.name not in (EVIDENCE_FILE, EPISODE_GZ_FILE)]
    assert not stray, stray[:5]
    # compacted: every episode's JSON gzip-compressed (episode.json.gz), none left plain beside it
    folders = iter_episode_dirs(RAW)
    assert len(folders) >= 190 and all(episode_path(f) == f / EPISODE_GZ_FILE for f in folders)
    assert not [p for p in files if p.name == EPISODE_FILE]


def test_no_test_step_echoes_a_train_step(episodes):
    """Issue 25 item 6: no test step repeats a train step's screenshot and gold action (the
    corpus sets drop_test_echoes); shared start pages with another action stay, counted."""
    from mag_dataset.builder import prepare_corpus
    from mag_dataset.builder.corpus import test_echoes

    corpus = prepare_corpus(RAW, progress=False)
    echoes, shared = test_echoes(corpus.steps)
    assert echoes == set() and corpus.echoes["dropped"] and shared == corpus.echoes["shared_screenshots"] > 0
