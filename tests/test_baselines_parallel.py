"""vLLM tensor / data parallelism plumbing of infer and mediation (vLLM is not installable here).

A stand-in ``vllm`` package written to a temporary folder and put on ``PYTHONPATH`` replaces
the two classes the backend uses, so the spawned data-parallel replicas import it too; it
records the engine arguments and the GPUs each replica was given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, infer, mediation  # noqa: E402
from mag_dataset import runners  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402

FAKE_VLLM = '''
import json, os, types

class SamplingParams:
    def __init__(self, **kw):
        self.kw = kw

class LLM:
    def __init__(self, **kw):
        self.kw = kw
        self.gpus = os.environ.get("CUDA_VISIBLE_DEVICES")
        with open(os.environ["FAKE_VLLM_LOG"], "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "gpus": self.gpus, "tp": kw["tensor_parallel_size"],
                                "has_dp": "data_parallel_size" in kw}) + "\\n")

    def generate(self, requests, params, use_tqdm=True):
        out = types.SimpleNamespace
        return [out(outputs=[out(text=f"[{self.gpus}] " + r["prompt"][-12:], token_ids=[1])]) for r in requests]
'''


@pytest.fixture
def fake_vllm(tmp_path, monkeypatch):
    pkg = tmp_path / "fakevllm" / "vllm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_VLLM, encoding="utf-8")
    log = tmp_path / "llm.log"
    monkeypatch.setenv("FAKE_VLLM_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", str(pkg.parent) + ":" + str(Path(__file__).resolve().parents[1]))
    monkeypatch.syspath_prepend(str(pkg.parent))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    return log


def _examples(n=5):
    return [common.Example(s, im) for s, im in tiny_steps(n)]


def test_shard_bounds_cover_every_index_once():
    for n in range(0, 12):
        for k in range(1, 5):
            b = runners.shard_bounds(n, k)
            assert [i for a, e in b for i in range(a, e)] == list(range(n))
            sizes = [e - a for a, e in b]
            assert max(sizes) - min(sizes) <= 1


def test_tensor_parallel_reaches_one_engine(tiny_vlm, fake_vllm):
    backend = common.make_backend("vllm", str(tiny_vlm), tensor_parallel_size=4, max_new_tokens=5)
    logs = [json.loads(x) for x in fake_vllm.read_text().splitlines()]
    assert len(logs) == 1 and logs[0]["tp"] == 4 and not logs[0]["has_dp"]
    assert backend.replicas == []


def test_data_parallel_replicas_get_their_own_gpus_and_outputs_keep_order(tiny_vlm, fake_vllm, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    backend = common.make_backend("vllm", str(tiny_vlm), tensor_parallel_size=2, data_parallel_size=2)
    try:
        examples = _examples(5)
        prompts = [f"prompt number {i:02d}" for i in range(5)]
        decoded = backend.decode(prompts, [e.image for e in examples], [f"<{i}>" for i in range(5)])
    finally:
        backend.close()
    # shards of 3 and 2 requests, in order, each answered by its own replica's GPUs
    assert [d.text for d in decoded] == [f"<{i}>[{'0,1' if i < 3 else '2,3'}] number {i:02d}<{i}>"
                                         for i in range(5)]
    logs = [json.loads(x) for x in fake_vllm.read_text().splitlines()]
    assert sorted(r["gpus"] for r in logs) == ["0,1", "2,3"] and all(r["tp"] == 2 for r in logs)
    assert len({r["pid"] for r in logs}) == 2 and backend.replicas == []


def test_too_few_gpus_for_the_replicas_is_a_user_error(tiny_vlm, fake_vllm, monkeypatch):
    from mag_dataset.cli import UserError

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    with pytest.raises(UserError, match="needs 4 GPUs; 3 visible"):
        common.make_backend("vllm", str(tiny_vlm), tensor_parallel_size=2, data_parallel_size=2)


def test_infer_and_mediation_pass_the_parallel_sizes(tmp_path, tiny_vlm, monkeypatch):
    seen = []

    def fake_make_backend(name, model, **kw):
        seen.append((name, kw["tensor_parallel_size"], kw["data_parallel_size"]))
        raise SystemExit("stop after the backend is built")

    monkeypatch.setattr(common, "make_backend", fake_make_backend)
    argv = ["--model_name_or_path", str(tiny_vlm), "--backend", "vllm", "--tensor_parallel_size", "2",
            "--data_parallel_size", "4", "--dataset", "bundled"]
    (iargs,) = common.parse_args([infer.InferArguments], argv + ["--output", str(tmp_path / "p.jsonl")])
    (margs,) = common.parse_args([mediation.MediationArguments], argv + ["--output_dir", str(tmp_path / "m")])
    for call in (lambda: infer.predict(iargs, _examples(2)), lambda: mediation.run(margs, _examples(4))):
        with pytest.raises(SystemExit):
            call()
    assert seen == [("vllm", 2, 4), ("vllm", 2, 4)]


def test_parallelism_on_the_transformers_backend_is_one_clear_line(tmp_path, tiny_vlm, capsys):
    rc = infer.main(["--model_name_or_path", str(tiny_vlm), "--output", str(tmp_path / "p.jsonl"), "--dataset",
                     "bundled", "--data_parallel_size", "2", "--limit", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "--data_parallel_size needs --backend vllm" in err and "Traceback" not in err
    assert not (tmp_path / "p.jsonl").exists()
