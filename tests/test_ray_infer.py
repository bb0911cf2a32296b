"""``baselines.infer --backend ray``: Ray Data replicas of the transformers backend on a tiny real VLM.

Two replicas decode on a local Ray instance (2 CPUs) the tests start; the predictions file
must equal the single-process transformers backend's byte for byte, and a run interrupted
after some batches resumes from its ``.partial`` file as the other backends do.
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


@pytest.fixture(scope="module")
def ray_local():
    if ray.is_initialized():  # pragma: no cover - another module's instance left running
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024, log_to_driver=False)
    yield ray
    ray.shutdown()


def _examples(n: int) -> list[common.Example]:
    return [common.Example(s, im) for s, im in tiny_steps(n, view="som")]


def _args(out: Path, tiny_vlm: Path, **kw) -> infer.InferArguments:
    base = dict(model_name_or_path=str(tiny_vlm), output=str(out), view="som", contract="JG", seed=1,
                batch_size=2, max_new_tokens=10, device="cpu", progress=False)
    base.update(kw)
    return infer.InferArguments(**base)


def test_ray_replicas_write_the_single_process_file_and_resume(ray_local, tmp_path, tiny_vlm, capsys):
    examples = _examples(5)
    ids = [e.step.step_id for e in examples]
    local = infer.predict(_args(tmp_path / "local.jsonl", tiny_vlm), examples)
    out = infer.predict(_args(tmp_path / "ray.jsonl", tiny_vlm, backend="ray", data_parallel_size=2), examples)
    assert out.read_bytes() == local.read_bytes()  # same outputs, in dataset order
    assert [json.loads(x)["step_id"] for x in out.read_text().splitlines()] == ids
    prov = json.loads(common.provenance_path(out).read_text())
    assert prov["backend"] == "ray/transformers" and prov["parallelism"]["data"] == 2 and prov["steps"] == 5
    assert prov["predictions_sha256"] == common.sha256_file(out)
    assert "infer [ray/transformers]" in capsys.readouterr().err
    assert not (tmp_path / "ray.jsonl.partial").exists()

    # an interrupted run: three steps written, the fourth cut by the crash
    resumed = tmp_path / "resumed.jsonl"
    kept = [{"step_id": i, "output": f"kept {n}", "seed": 1} for n, i in enumerate(ids[:3])]
    partial = tmp_path / "resumed.jsonl.partial"
    partial.write_text("".join(json.dumps(r) + "\n" for r in kept) + '{"step_id": "' + ids[3], encoding="utf-8")
    args = _args(resumed, tiny_vlm, backend="ray", data_parallel_size=2)
    infer.predict(args, examples)
    assert "resuming: 3 steps already in" in capsys.readouterr().err
    recs = [json.loads(x) for x in resumed.read_text().splitlines()]
    assert [r["step_id"] for r in recs] == ids
    assert [r["output"] for r in recs[:3]] == ["kept 0", "kept 1", "kept 2"]  # not decoded again
    assert recs[3:] == [json.loads(x) for x in local.read_text().splitlines()][3:]
    infer.predict(args, examples)  # complete: nothing to do, Ray not even asked
    assert "complete (5 steps), nothing to do" in capsys.readouterr().err


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
