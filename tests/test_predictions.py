"""Predictions JSONL: reading from every source kind, line-numbered errors, atomic writes."""

from __future__ import annotations

import io
import json
import os

import pytest

from hand_built_steps import gold_steps
from mag_dataset.predictions import (
    Prediction,
    PredictionsError,
    iter_predictions,
    read_predictions,
    write_predictions,
)
from mag_dataset.prompts import render_target

STEPS = gold_steps()
IDS = [s.step_id for s in STEPS]


def preds(seed=0):
    return [Prediction(s.step_id, render_target(s, "som", "J"), seed) for s in STEPS]


def test_write_then_read_round_trips(tmp_path):
    path = write_predictions(tmp_path / "sub" / "p.jsonl", preds(0) + preds(1))
    assert read_predictions(path, IDS) == preds(0) + preds(1)
    assert read_predictions(str(path), IDS) == preds(0) + preds(1)
    data = path.read_bytes()
    assert read_predictions(data, IDS) == preds(0) + preds(1)
    assert read_predictions(data.decode(), IDS) == preds(0) + preds(1)
    assert read_predictions(io.BytesIO(data), IDS) == preds(0) + preds(1)
    assert data.count(b"\n") == 24
    assert [p.name for p in path.parent.iterdir()] == ["p.jsonl"]  # no temp file left


def test_seed_defaults_to_zero_and_blank_lines_and_bom_are_tolerated():
    lines = [json.dumps({"step_id": i, "output": "x"}) for i in IDS]
    data = ("\ufeff" + "\n\n".join(lines) + "\n\n").encode()
    got = read_predictions(data, IDS)
    assert [p.seed for p in got] == [0] * 12 and [p.step_id for p in got] == IDS


def test_write_is_atomic_on_failure(tmp_path):
    target = tmp_path / "p.jsonl"
    write_predictions(target, preds())
    before = target.read_bytes()

    def broken():
        yield from preds()[:3]
        raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError):
        write_predictions(target, broken())
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["p.jsonl"]


@pytest.mark.parametrize("line,message", [
    (b"\xff\xfe{}", "line 3: not valid UTF-8"),
    (b"[1, 2]", "line 3: not a JSON object (got a JSON list)"),
    (b'"just a string"', "line 3: not a JSON object"),
    (b"{not json", "line 3: not a JSON object"),
    (b'{"output": "x"}', "line 3: missing field 'step_id'"),
    (b'{"step_id": "login-1/2"}', "line 3: missing field 'output'"),
    (b'{"step_id": 5, "output": "x"}', "line 3: step_id must be a non-empty string"),
    (b'{"step_id": "login-1/2", "output": {"action": 1}}', "line 3: output must be a string"),
    (b'{"step_id": "login-1/2", "output": "x", "seed": "1"}', "line 3: seed must be an integer"),
    (b'{"step_id": "login-1/2", "output": "x", "seed": true}', "line 3: seed must be an integer"),
    (b'{"step_id": "login-1/2", "output": "x", "model": "gpt"}', "line 3: unknown field 'model'"),
])
def test_each_bad_line_is_named(line, message):
    good = [json.dumps({"step_id": i, "output": "x"}).encode() for i in IDS[:2]]
    data = b"\n".join(good + [line]) + b"\n"
    with pytest.raises(PredictionsError) as e:
        read_predictions(data, IDS, allow_missing=True)
    assert message in str(e.value)


def test_missing_ids_per_seed():
    data = "\n".join(p.to_json() for p in preds(0) + preds(1)[:-1]).encode()
    with pytest.raises(PredictionsError, match=r"1 step id\(s\) have no prediction for seed 1: 'audit-1/2'"):
        read_predictions(data, IDS)
    assert len(read_predictions(data, IDS, allow_missing=True)) == 23


def test_max_lines():
    data = "\n".join(p.to_json() for p in preds()).encode()
    assert len(read_predictions(data, IDS, max_lines=12)) == 12
    with pytest.raises(PredictionsError, match="line 12: the file has more than 11 lines"):
        read_predictions(data, IDS, max_lines=11)


def test_missing_file(tmp_path):
    with pytest.raises(PredictionsError, match="not found"):
        read_predictions(tmp_path / "nope.jsonl", IDS)


def test_streaming_reader_is_lazy():
    data = "\n".join(p.to_json() for p in preds()) + "\n" + '{"step_id": "zzz", "output": "x"}\n'
    it = iter_predictions(data.encode(), IDS)
    first = [next(it) for _ in range(12)]
    assert len(first) == 12  # the bad line has not been read yet
    with pytest.raises(PredictionsError, match="line 13: unknown step_id 'zzz'"):
        next(it)


def test_prediction_validates_its_fields():
    with pytest.raises(PredictionsError):
        Prediction("", "x")
    with pytest.raises(PredictionsError):
        Prediction("a", None)  # type: ignore[arg-type]
    with pytest.raises(PredictionsError):
        Prediction("a", "x", seed=1.5)  # type: ignore[arg-type]
