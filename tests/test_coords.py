"""Declared coordinate spaces (mag_dataset.coords): conversion, scoring, warnings, prompts, CLI."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mag_dataset.coords import GRID_OFF_IMAGE_SHARE, CoordSpace, SpaceCheck, parse_coord_space
from mag_dataset.dataset import bundled_dataset, load_steps
from mag_dataset.parsing import parse_output
from mag_dataset.predictions import Prediction, PredictionsError, read_predictions, write_predictions
from mag_dataset.prompts import build_messages, render_target, system_prompt
from mag_dataset.schema import box_center
from mag_dataset.scoring import GoldSteps, score_predictions

SPACES = ("pixels", "norm1000", "norm1", "resized:1000x700")
SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture(scope="module")
def coord_steps():
    s = load_steps(str(bundled_dataset()), "coord", "test")
    assert len(s) >= 100
    return s


@pytest.fixture(scope="module")
def coord_gold(coord_steps):
    return GoldSteps.from_views("coord", {"som": load_steps(str(bundled_dataset()), "som", "test"), "coord": coord_steps})


def test_parse_coord_space():
    assert parse_coord_space(None) == CoordSpace("pixels")
    assert parse_coord_space("norm1000").name == "norm1000"
    assert parse_coord_space(" resized:1024x768 ") == CoordSpace("resized", 1024, 768)
    for bad in ("norm100", "resized:0x5", "resized:10", "pixel", "resized:-3x4", ""):
        with pytest.raises(ValueError, match="unknown coordinate space"):
            parse_coord_space(bad)


def test_conversion_by_hand():
    w, h = 1280, 720
    assert CoordSpace("norm1000").to_pixels((500, 250), w, h) == (640.0, 180.0)
    assert CoordSpace("norm1").to_pixels((0.5, 0.25), w, h) == (640.0, 180.0)
    assert CoordSpace("resized", 640, 360).to_pixels((320, 90), w, h) == (640.0, 180.0)
    assert CoordSpace("pixels").to_pixels((640, 180), w, h) == (640.0, 180.0)
    # a round trip through every space returns the same pixels (float noise rounded away)
    for name in SPACES:
        sp = parse_coord_space(name)
        assert sp.to_pixels(sp.from_pixels((37.0, 101.39), w, h), w, h) == (37.0, 101.39)


def test_the_same_gold_points_in_each_space_score_identically(coord_steps, coord_gold):
    per_step = {}
    for name in SPACES:
        preds = [Prediction(s.step_id, render_target(s, "coord", "J", coord_space=name)) for s in coord_steps]
        if name != "pixels":  # the file really is written in another space
            assert preds != [Prediction(s.step_id, render_target(s, "coord", "J")) for s in coord_steps]
        r = score_predictions(preds, coord_gold, "coord", "J", coord_space=name, keep_steps=True,
                              bootstrap_resamples=0)
        assert r.provenance["coord_space"]["space"] == name and not r.warnings
        per_step[name] = [s.to_dict() for s in r.steps]
        assert r.value("target_acc") == 1.0 and r.value("saa") == 1.0
    assert len({json.dumps(v) for v in per_step.values()}) == 1


def _whole_units(step, space):
    """A model's answer: the gold point in ``space`` rounded to whole units, moved one unit
    toward the box when rounding took it out (a model names a point it sees inside the box)."""
    import math

    sp = parse_coord_space(space)
    out = json.loads(render_target(step, "coord", "A", coord_space=space))
    (x, y), b = out["action"]["coordinate"], step.target_bbox
    lo = sp.from_pixels((b[0], b[1]), step.image_width, step.image_height)
    hi = sp.from_pixels((b[2], b[3]), step.image_width, step.image_height)
    out["action"]["coordinate"] = [min(max(round(v), math.ceil(a)), math.floor(z))
                                   for v, a, z in ((x, lo[0], hi[0]), (y, lo[1], hi[1]))]
    return json.dumps(out)


def test_whole_grid_units_keep_every_gold_point_in_its_box(coord_steps):
    targeted = [s for s in coord_steps if s.target_bbox is not None]
    assert len(targeted) >= 100
    for space in ("norm1000", "resized:1000x700"):
        sp = parse_coord_space(space)
        near_edge = []
        for s in targeted:  # the documented bound: half a unit from every edge is enough to round
            hx, hy = (v / 2 for v in sp.scale(s.image_width, s.image_height))
            p, b = s.action.coordinate or box_center(s.target_bbox), s.target_bbox
            if not (min(p[0] - b[0], b[2] - p[0]) >= hx and min(p[1] - b[1], b[3] - p[1]) >= hy):
                near_edge.append(s.step_id)
            assert b[2] - b[0] >= 2 * hx and b[3] - b[1] >= 2 * hy, s.step_id  # every box holds whole units
        # coords.py's figure: one gold point (a person's click 0.39 px inside the box's left edge)
        assert near_edge == ["sites.forum.search_phrase.seed-814497:0"], near_edge
        preds = [Prediction(s.step_id, _whole_units(s, space)) for s in targeted]
        r = score_predictions(preds, targeted, "coord", "A", coord_space=space, bootstrap_resamples=0)
        assert r.value("target_acc") == 1.0 and not r.warnings


def test_a_box_narrower_than_one_unit_on_a_wide_image(coord_steps):
    # 1280 px wide: one norm1000 unit is 1.28 px; a 1.1 px wide box between units 500 and 501
    step = next(s for s in coord_steps if s.target_bbox is not None and s.action.type.value == "click")
    step = dataclasses.replace(step, image_width=1280, image_height=720, target_bbox=(640.1, 100.0, 641.2, 110.0),
                               action=dataclasses.replace(step.action, coordinate=(640.65, 105.0)))
    assert CoordSpace("norm1000").scale(1280, 720) == (1.28, 0.72)
    whole = score_predictions([Prediction(step.step_id, _whole_units(step, "norm1000"))], [step], "coord", "A",
                              coord_space="norm1000", keep_steps=True, bootstrap_resamples=0)
    sc = whole.steps[0]
    assert sc.target_acc == 0.0 and sc.error == "point_outside_box" and sc.box_distance < 1.0  # no snapping
    gold = render_target(step, "coord", "A", coord_space="norm1000")  # the renderer keeps the decimals it needs
    assert json.loads(gold)["action"]["coordinate"] == [500.5078, 145.8333]
    r = score_predictions([Prediction(step.step_id, gold)], [step], "coord", "A", coord_space="norm1000",
                          bootstrap_resamples=0)
    assert r.value("target_acc") == 1.0


def test_per_line_space_overrides_the_file_space(coord_steps):
    preds = [Prediction(s.step_id, render_target(s, "coord", "A", coord_space=sp), coord_space=sp)
             for s, sp in zip(coord_steps, SPACES * len(coord_steps))]
    r = score_predictions(preds, coord_steps, "coord", "A", coord_space="norm1", bootstrap_resamples=0)
    assert r.value("target_acc") == 1.0
    assert set(r.provenance["coord_space"]["points"]) == set(SPACES)
    # the field round-trips through a predictions file
    text = "".join(p.to_json() + "\n" for p in preds)
    assert read_predictions(text, [s.step_id for s in coord_steps]) == preds
    with pytest.raises(PredictionsError, match="line 1: unknown coordinate space"):
        read_predictions('{"step_id": "a", "output": "x", "coord_space": "norm10"}\n', ["a"])
    with pytest.raises(PredictionsError, match="coord_space must be a string"):
        read_predictions('{"step_id": "a", "output": "x", "coord_space": 5}\n', ["a"])


def test_wrong_space_collapses_the_score_and_warns(coord_steps):
    preds = [Prediction(s.step_id, render_target(s, "coord", "A", coord_space="norm1")) for s in coord_steps]
    r = score_predictions(preds, coord_steps, "coord", "A", bootstrap_resamples=0)  # declared: pixels (default)
    assert r.value("target_acc") == 0.0
    assert len(r.warnings) == 1 and "look like norm1" in r.warnings[0]
    n_points = sum(1 for s in coord_steps if s.target_bbox is not None)  # one point per targeted step
    assert n_points >= 100
    assert r.provenance["coord_space"] == {"space": "pixels", "source": "default", "points": {"pixels": n_points}}
    assert json.loads(r.to_json())["warnings"] == list(r.warnings)
    # the 0-1000 grid hint needs most grid points to fall off the screenshot: true of MiniWoB++'s
    # 498x321 crops, not of 1280x720 site pages (there a grid point is usually still inside)
    small = [s for s in coord_steps if s.image_width < 1000 and s.image_height < 1000]
    assert len(small) >= 50
    preds = [Prediction(s.step_id, render_target(s, "coord", "A", coord_space="norm1000")) for s in small]
    r = score_predictions(preds, small, "coord", "A", bootstrap_resamples=0)
    assert len(r.warnings) == 1 and "0-1000 grid" in r.warnings[0]
    preds = [Prediction(s.step_id, render_target(s, "coord", "A", coord_space="norm1000")) for s in coord_steps]
    # correctly declared: no warning
    r = score_predictions(preds, coord_steps, "coord", "A", coord_space="norm1000", bootstrap_resamples=0)
    assert r.warnings == () and r.value("target_acc") == 1.0


def test_grid_read_as_pixels_on_wide_pages_warns(coord_steps):
    wide = [s for s in coord_steps if s.image_width >= 1000 and s.target_bbox is not None]
    assert len(wide) >= 100
    preds = [Prediction(s.step_id, render_target(s, "coord", "A", coord_space="norm1000")) for s in wide]
    r = score_predictions(preds, wide, "coord", "A", bootstrap_resamples=0)  # declared: pixels
    assert r.value("target_acc") < 0.2
    assert len(r.warnings) == 1 and "inside the 0-1000 grid" in r.warnings[0] and "norm1000" in r.warnings[0]
    # pixel answers of the same pages, correct or off by a little, draw no warning
    preds = [Prediction(s.step_id, render_target(s, "coord", "A")) for s in wide]
    assert score_predictions(preds, wide, "coord", "A", bootstrap_resamples=0).warnings == ()
    # by hand: 1 of 20 grid points off the page is under the share; 2 of 20 (a tenth) is enough
    for off, warned in ((1, False), (2, True)):
        chk = SpaceCheck()
        for i in range(20):
            chk.add((500.0, 900.0 if i < off else 300.0), CoordSpace("pixels"), 1280, 720)
        assert bool(chk.warnings()) is warned
    assert GRID_OFF_IMAGE_SHARE == 0.1


def test_space_check_needs_a_few_points():
    chk = SpaceCheck()
    for _ in range(2):
        chk.add((0.5, 0.5), CoordSpace("pixels"), 800, 600)
    assert chk.warnings() == []
    chk.add((0.2, 0.9), CoordSpace("pixels"), 800, 600)
    assert "norm1" in chk.warnings()[0]


def test_prompts_render_the_space_and_keep_the_pixel_snapshots(coord_steps):
    for contract in ("A", "G", "J", "JG"):
        snap = (SNAPSHOTS / f"prompt_coord_{contract}.txt").read_text("utf-8")
        assert system_prompt("coord", contract) in snap  # tests/test_prompts.py checks the whole snapshot
        assert system_prompt("coord", contract, coord_space="pixels") == system_prompt("coord", contract)
    assert "0-1000 grid" in system_prompt("coord", "J", coord_space="norm1000")
    assert "fractions" in system_prompt("coord", "J", coord_space="norm1")
    assert "1024 x 768" in system_prompt("coord", "J", coord_space="resized:1024x768")
    step = next(s for s in coord_steps if s.action.coordinate is not None)
    msgs = build_messages(step, "coord", "A", with_target=True, coord_space="norm1")
    assert "fractions" in msgs[0]["content"][0]["text"]
    point = json.loads(msgs[-1]["content"][0]["text"])["action"]["coordinate"]
    assert all(0 <= v <= 1 for v in point)
    p = parse_output(msgs[-1]["content"][0]["text"], "coord", "A")
    assert p.ok


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mag_dataset.cli", *args], capture_output=True, text=True, timeout=600)


def test_mag_score_flag_sidecar_and_conflict(tmp_path: Path, coord_steps):
    preds = tmp_path / "p.jsonl"
    out = tmp_path / "r.json"
    base = ("score", "--predictions", str(preds), "--dataset", "bundled", "--view", "coord", "--contract", "A",
            "--out", str(out))
    write_predictions(preds, [Prediction(s.step_id, render_target(s, "coord", "A", coord_space="norm1"))
                              for s in coord_steps])
    r = _cli(*base)  # undeclared: scored as pixels, warned on stderr
    assert r.returncode == 0 and "warning" in r.stderr and "look like norm1" in r.stderr
    write_predictions(preds, [Prediction(s.step_id, render_target(s, "coord", "A", coord_space="norm1000"))
                              for s in coord_steps])
    r = _cli(*base)
    # collapsed (on a 1280 px wide screenshot a grid value read as pixels still hits a box by chance)
    assert r.returncode == 0 and json.loads(out.read_text())["target_acc"]["micro"] < 0.2
    r = _cli(*base, "--coord-space", "norm1000")
    d = json.loads(out.read_text())
    assert r.returncode == 0 and d["target_acc"]["micro"] == 1.0 and d["warnings"] == []
    assert d["provenance"]["coord_space"]["space"] == "norm1000" and d["provenance"]["coord_space"]["source"] == "flag"
    (tmp_path / "p.provenance.json").write_text(json.dumps({"model": "m", "coord_space": "norm1000"}))
    r = _cli(*base)
    d = json.loads(out.read_text())
    assert r.returncode == 0 and d["target_acc"]["micro"] == 1.0
    assert d["provenance"]["coord_space"]["source"] == "sidecar"
    r = _cli(*base, "--coord-space", "norm1")
    assert r.returncode == 2 and "contradicts" in r.stderr and "Traceback" not in r.stderr
    r = _cli(*base, "--coord-space", "norm7")
    assert r.returncode == 2 and "unknown coordinate space" in r.stderr
