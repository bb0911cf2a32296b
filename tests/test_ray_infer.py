"""``baselines.infer --backend ray``: Ray Data replicas of the transformers backend on a tiny real VLM.

Two replicas decode on a local Ray instance (2 CPUs) the tests start: a run interrupted after
some steps resumes from its ``.partial`` file as the other backends do, and the steps the
replicas decode equal the single-process transformers backend's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
ray = pytest.importorskip("ray")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, infer  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402
from _ray_local import ray_local  # noqa: E402,F401 - the fixture


def _examples(n: int) -> list[common.Example]:
    return [common.Example(s, im) for s, im in tiny_steps(n, view="som")]


def _args(out: Path, tiny_vlm: Path, **kw) -> infer.InferArguments:
    base = dict(model_name_or_path=str(tiny_vlm), output=str(out), view="som", contract="JG", seed=1,
                batch_size=2, max_new_tokens=10, device="cpu", progress=False)
    base.update(kw)
    return infer.InferArguments(**base)


def test_ray_replicas_decode_as_the_single_process_backend_and_resume(ray_local, tmp_path, tiny_vlm, capsys):
    """An interrupted run (2 steps written, a third cut by the crash) is finished by 2 Ray replicas."""
    examples = _examples(6)
    ids = [e.step.step_id for e in examples]
    local = [json.loads(x) for x in infer.predict(_args(tmp_path / "local.jsonl", tiny_vlm), examples)
             .read_text().splitlines()]
    out = tmp_path / "ray.jsonl"
    partial = tmp_path / "ray.jsonl.partial"
    kept = [{"step_id": i, "output": f"kept {n}", "seed": 1} for n, i in enumerate(ids[:2])]
    partial.write_text("".join(json.dumps(r) + "\n" for r in kept) + '{"step_id": "' + ids[2], encoding="utf-8")
    args = _args(out, tiny_vlm, backend="ray", data_parallel_size=2)
    assert infer.predict(args, examples) == out
    err = capsys.readouterr().err
    assert "resuming: 2 steps already in" in err and "infer [ray/transformers]: 4 steps" in err, err
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["step_id"] for r in recs] == ids  # dataset order, whichever replica finished first
    assert [r["output"] for r in recs[:2]] == ["kept 0", "kept 1"]  # not decoded again
    assert recs[2:] == local[2:]  # the replicas decode what the single process decodes
    prov = json.loads(common.provenance_path(out).read_text())
    assert prov["backend"] == "ray/transformers" and prov["parallelism"]["data"] == 2 and prov["steps"] == 6
    assert prov["predictions_sha256"] == common.sha256_file(out)
    assert not partial.exists()
    infer.predict(args, examples)  # complete: nothing to do, Ray not even asked
    assert "complete (6 steps), nothing to do" in capsys.readouterr().err


def test_ray_backend_errors_before_anything_is_written(tmp_path, tiny_vlm, capsys):
    from mag_dataset.cli import UserError

    examples = _examples(2)
    cases = [(dict(ray_engine="tgi"), "unknown --ray_engine 'tgi'"),
             (dict(tensor_parallel_size=2), "--tensor_parallel_size needs --ray_engine vllm"),
             (dict(data_parallel_size=0), "data_parallel_size must be >= 1"),
             (dict(ray_address="127.0.0.1:9"), "cannot reach a Ray cluster at 127.0.0.1:9")]
    for kw, message in cases:
        with pytest.raises(UserError, match=message.replace("(", r"\(")):
            infer.predict(_args(tmp_path / "p.jsonl", tiny_vlm, backend="ray", **kw), examples)
        assert list(tmp_path.iterdir()) == [], kw
