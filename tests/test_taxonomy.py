"""Error taxonomy: one class per scored output, counts in every report, top classes printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mag_dataset.actions import ActionType
from mag_dataset.dataset import bundled_dataset, load_steps
from mag_dataset.parsing import FORMAT_CLASSES, parse_output
from mag_dataset.predictions import Prediction, write_predictions
from mag_dataset.prompts import action_object, render_output, render_target
from mag_dataset.scoring import box_distance, format_report, score_predictions, score_step


@pytest.fixture(scope="module")
def som():
    return load_steps(str(bundled_dataset()), "som", "test")


@pytest.fixture(scope="module")
def coord():
    return load_steps(str(bundled_dataset()), "coord", "test")


def _first(steps, typ, scored=True):
    return next(s for s in steps if s.action.type is typ and (s.element_scored or not scored)
                and (s.action.element_id is not None or not s.has_target))


@pytest.mark.parametrize("output,kind", [
    ("click the button", "not_json"),
    ("", "not_json"),
    ('Sure! {"action": {"type": "go_back"}}', "extra_text"),
    ('{"action": {"type": "go_back"}} done', "extra_text"),
    ('{"action": {"type": "go_back"}, "score": 1}', "wrong_keys"),
    ('{"guide": "x"}', "wrong_keys"),
    ('{"action": {"type": "go_back"}, "action": {"type": "go_back"}}', "wrong_keys"),
    ('{"action": {"type": "fly"}}', "unknown_action_type"),
    ('{"action": {"type": "click", "element": []}}', "bad_argument"),
    ('{"action": {"type": "scroll", "direction": "sideways"}}', "bad_argument"),
    ('{"action": {"type": "go_back", "x": "1"}}', "bad_argument"),
    ('{"action": {"type": "go_back"}} ' + "x" * 20000, "too_long"),
    ('{"action": NaN}', "not_json"),
])
def test_format_failure_classes(som, output, kind):
    p = parse_output(output, "som", "A")
    assert not p.ok and p.kind == kind and kind in FORMAT_CLASSES
    assert score_step(output, som[0], "som", "A").error == f"format:{kind}"


def test_key_order_class(som):
    out = '{"guide": "Go back.", "action": {"type": "go_back"}}'
    assert score_step(out, som[0], "som", "J").error == "format:key_order"


def test_action_classes_som(som):
    click = _first(som, ActionType.CLICK)
    other = next(c.id for c in click.candidates if c.id != click.action.element_id)
    assert score_step(render_target(click, "som", "A"), click, "som", "A").error == "correct"
    wrong_el = render_output({"type": "click", "element": other}, None, "A")
    assert score_step(wrong_el, click, "som", "A").error == "wrong_element"
    sc = score_step(render_output({"type": "hover", "element": click.action.element_id}, None, "A"), click, "som", "A")
    assert sc.error == "wrong_action_type" and sc.pred_type == "hover" and sc.gold_type == "click"
    typ = _first(som, ActionType.TYPE)
    obj = action_object(typ.action, "som") | {"text": typ.action.text + " extra"}
    assert score_step(render_output(obj, None, "A"), typ, "som", "A").error == "wrong_text"
    sel = _first(som, ActionType.SELECT)
    obj = action_object(sel.action, "som") | {"value": "Nowhere Land"}
    assert score_step(render_output(obj, None, "A"), sel, "som", "A").error == "wrong_value"
    scr = _first(som, ActionType.SCROLL)
    flip = "up" if scr.action.direction != "up" else "down"
    assert score_step(render_output({"type": "scroll", "direction": flip}, None, "A"), scr, "som", "A").error == \
        "wrong_direction"
    press = _first(som, ActionType.PRESS)
    assert score_step(render_output({"type": "press", "key": "F13"}, None, "A"), press, "som", "A").error == "wrong_key"
    # contract G: no action, so only format failures are classified
    assert score_step(render_target(click, "som", "G"), click, "som", "G").error is None
    assert score_step("nope", click, "som", "G").error == "format:not_json"


def test_coord_misses_and_box_distance(coord):
    step = next(s for s in coord if s.has_target and s.element_scored and s.target_bbox is not None)
    x0, y0, x1, y1 = step.target_bbox
    near = render_output({"type": step.action.type.value, "coordinate": [x1 + 6, y0], **_args(step)}, None, "A")
    sc = score_step(near, step, "coord", "A")
    assert sc.error == "point_outside_box" and sc.box_distance == pytest.approx(6.0)
    far = render_output({"type": step.action.type.value, "coordinate": [x1 + 30, y1 + 40], **_args(step)}, None, "A")
    sc = score_step(far, step, "coord", "A")
    if x1 + 30 <= step.image_width and y1 + 40 <= step.image_height:
        assert sc.error == "point_outside_box"
    assert sc.box_distance == pytest.approx(50.0)
    out = render_output({"type": step.action.type.value, "coordinate": [-5, -5], **_args(step)}, None, "A")
    assert score_step(out, step, "coord", "A").error == "point_outside_image"
    assert box_distance((5.0, 5.0), (0.0, 0.0, 10.0, 10.0)) == 0.0


def _args(step):
    return {k: v for k, v in action_object(step.action, "coord", step.target_bbox).items()
            if k not in ("type", "coordinate")}


def test_counts_confusion_and_near_miss_in_every_report(coord):
    targeted = [s for s in coord if s.has_target and s.element_scored and s.target_bbox is not None]
    preds = []
    near_ids = set()
    for i, s in enumerate(coord):
        if s in targeted[:10]:
            x1, y0 = s.target_bbox[2], s.target_bbox[1]
            dx = 4 if i % 2 else 25  # half near misses (<= 10 px), half far
            preds.append(Prediction(s.step_id, render_output(
                {"type": s.action.type.value, "coordinate": [x1 + dx, y0], **_args(s)}, None, "A")))
            near_ids.add(s.step_id) if dx == 4 else None
        elif s in targeted[10:13]:
            preds.append(Prediction(s.step_id, '{"action": {"type": "go_back"}}'))
        elif s in targeted[13:15]:
            preds.append(Prediction(s.step_id, "I cannot do that"))
        else:
            preds.append(Prediction(s.step_id, render_target(s, "coord", "A")))
    r = score_predictions(preds, coord, "coord", "A", bootstrap_resamples=0)
    errors = r.counts["errors"]
    assert errors["format:not_json"] == 2 and errors["wrong_action_type"] == 3
    assert errors.get("point_outside_box", 0) + errors.get("point_outside_image", 0) == 10
    assert sum(errors.values()) == sum(1 for s in coord if s.element_scored) + sum(
        1 for p, s in zip(preds, coord) if not s.element_scored and not parse_output(p.output, "coord", "A").ok)
    nm = r.counts["near_miss"]
    assert nm["misses"] == 10 and nm["near"] == len(near_ids) and nm["share_near"] == pytest.approx(len(near_ids) / 10)
    conf = r.counts["type_confusion"]
    assert sum(n for row in conf.values() for n in row.values()) == len(coord) - 2
    assert sum(conf[g].get("go_back", 0) for g in conf if g != "go_back") == 3
    text = format_report(r)
    assert "top error classes" in text and "point_outside" in text and "within 10 px" in text
    d = json.loads(r.to_json(include_steps=False))
    assert d["counts"]["errors"] == errors


def test_mag_score_prints_top_error_classes_and_per_step(tmp_path: Path, som):
    preds = tmp_path / "p.jsonl"
    write_predictions(preds, [Prediction(s.step_id, "{}" if i % 3 == 0 else render_target(s, "som", "A"))
                              for i, s in enumerate(som)])
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "mag_dataset.cli", "score", "--predictions", str(preds), "--dataset",
                        "bundled", "--view", "som", "--contract", "A", "--per-step", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "top error classes" in r.stdout and "format:wrong_keys" in r.stdout
    d = json.loads(out.read_text())
    assert {s["error"] for s in d["steps"]} >= {"format:wrong_keys", "correct"}
    assert d["counts"]["errors"]["format:wrong_keys"] == sum(1 for i in range(len(som)) if i % 3 == 0)
