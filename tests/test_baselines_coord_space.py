"""--coord_space of baselines.api_zero_shot and baselines.infer: prompt wording, provenance
sidecar, and mag score reading the space from the sidecar (local chat stub on 127.0.0.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import api_zero_shot, common, infer  # noqa: E402
from mag_dataset.prompts import render_target, user_text  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402
from stub_openai import StubOpenAI  # noqa: E402


def test_api_zero_shot_coord_space_end_to_end(tmp_path):
    from mag_dataset.score_file import declared_coord_space, score_file

    examples = [common.Example(s, im) for s, im in tiny_steps(4, view="coord")]
    assert sum(1 for e in examples if e.step.target_bbox is not None) >= 1
    by_text = {user_text(e.step, "coord"): render_target(e.step, "coord", "A", coord_space="norm1000")
               for e in examples}
    systems = []

    def respond(body):
        systems.append(body["messages"][0]["content"])
        user = body["messages"][-1]["content"]
        return by_text[next(p["text"] for p in user if p["type"] == "text")]

    with StubOpenAI(responder=respond) as stub:
        args = api_zero_shot.APIArguments(
            base_url=stub.base_url, model="stub", output=str(tmp_path / "p.jsonl"), api_key_env="", view="coord",
            contract="A", cache_dir=str(tmp_path / "cache"), backoff=0.01, progress=False, coord_space="norm1000")
        out = api_zero_shot.run(args, examples)
    assert len(systems) == 4 and all("0-1000 grid" in s for s in systems)
    prov = json.loads(common.provenance_path(out).read_text())
    assert prov["coord_space"] == "norm1000"
    space, source = declared_coord_space(out, None)
    assert (space, source) == ("norm1000", "sidecar")
    steps = [e.step for e in examples]
    report = score_file(out, steps, "coord", "A", coord_space=space, coord_space_source=source)
    assert report.value("target_acc") == 1.0 and report.provenance["coord_space"]["source"] == "sidecar"
    # the same file scored as pixels collapses (and says why)
    bad = score_file(out, steps, "coord", "A")
    assert bad.value("target_acc") < 1.0


def test_coord_space_argument_checks():
    from mag_dataset.cli import UserError

    assert common.coord_space_arg("coord", None) == "pixels"
    assert common.coord_space_arg("coord", "resized:640x480") == "resized:640x480"
    with pytest.raises(UserError, match="coord view only"):
        common.coord_space_arg("som", "norm1")
    with pytest.raises(UserError, match="unknown coordinate space"):
        common.coord_space_arg("coord", "norm5")


def test_infer_records_the_space_and_refuses_to_mix_spaces(tmp_path):
    from mag_dataset.cli import UserError

    out = tmp_path / "p.jsonl"
    args = infer.InferArguments(model_name_or_path="m", output=str(out), view="coord", coord_space="norm1")
    out.write_text("")
    prov = infer.provenance(args, 0, "custom", out)
    assert prov["coord_space"] == "norm1"
    common.provenance_path(out).write_text(json.dumps(prov))
    infer._check_same_run(args, out, tmp_path / "p.jsonl.partial")  # same run: fine
    other = infer.InferArguments(model_name_or_path="m", output=str(out), view="coord", coord_space="pixels")
    with pytest.raises(UserError, match="coord_space"):
        infer._check_same_run(other, out, tmp_path / "p.jsonl.partial")
    # a sidecar from before --coord_space existed counts as pixels
    del prov["coord_space"]
    common.provenance_path(out).write_text(json.dumps(prov))
    infer._check_same_run(other, out, tmp_path / "p.jsonl.partial")
