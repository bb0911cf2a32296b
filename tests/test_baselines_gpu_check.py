"""baselines.gpu_check: the real Qwen3.5-4B shape (checked on the meta device) and a CPU --tiny run."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import gpu_check  # noqa: E402


def test_real_config_has_the_4b_shape():
    from transformers import Qwen3_5ForConditionalGeneration

    from mag_dataset.testing.tiny_vlm import _train_tokenizer

    tok = _train_tokenizer()
    config = gpu_check.qwen35_4b_config(tok)
    assert config.text_config.hidden_size == 2560 and config.text_config.num_hidden_layers == 32
    assert config.text_config.layer_types.count("full_attention") == 8
    assert config.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>")
    with torch.device("meta"):
        model = Qwen3_5ForConditionalGeneration(config)
    n = sum(p.numel() for p in model.parameters())
    assert 4.3e9 < n < 4.8e9, n  # Qwen3.5-4B: ~4.2B language model + ~0.33B vision tower
    assert 0.3e9 < sum(p.numel() for p in model.model.visual.parameters()) < 0.36e9


def test_tiny_run_prints_both_figures(tmp_path, capsys):
    out = tmp_path / "gpu_check.json"
    rc = gpu_check.main(["--tiny", "--infer_steps", "4", "--batch_size", "2", "--max_new_tokens", "6",
                         "--sft_steps", "2", "--sft_batch_size", "2", "--output", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert re.search(r"^inference \[transformers\]: [0-9.]+ steps/s \(4 steps", text, re.M), text
    assert re.search(r"^sft: [0-9.]+ steps/s \(batch 2", text, re.M), text
    result = json.loads(out.read_text())
    assert result["inference"]["steps"] == 4 and result["inference"]["steps_per_s"] > 0
    assert result["sft"]["steps"] == 2 and result["sft"]["steps_per_s"] > 0
    assert result["device"] == "cpu" and result["parameters"] < 1_000_000


# --pipeline: one SFT step, one MG-GRPO step, a vLLM pass. No GPU (and no vLLM) here: the argument
# handling is checked, and --tiny runs the two training steps on CPU through the same code.


@pytest.mark.parametrize("argv, message", [
    (["--pipeline", "true"], "needs a CUDA GPU"),
    (["--pipeline", "true", "--tiny", "true", "--backend", "vllm"], "needs vLLM"),
    (["--pipeline", "true", "--tiny", "true", "--grpo_generations", "1"], "grpo_generations must be >= 2"),
])
@pytest.mark.gpu
def test_pipeline_refusals_are_one_line(argv, message, capsys, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "p.json"
    rc = gpu_check.main(argv + ["--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.gpu
def test_tiny_pipeline_runs_the_training_steps_and_skips_vllm(tmp_path, capsys):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM installed: the pass would run")
    out = tmp_path / "p.json"
    rc = gpu_check.main(["--pipeline", "true", "--tiny", "true", "--max_new_tokens", "4", "--sft_batch_size", "2",
                         "--output", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"^sft: 1 step in [0-9.]+ s", text, re.M), text
    assert re.search(r"^mg_grpo: 1 step in [0-9.]+ s \(2 forced decodes in 1 calls\)", text, re.M), text
    assert "vllm: skipped (vLLM is not installed)" in text
    result = json.loads(out.read_text())
    assert result["kind"] == "mag-gpu-pipeline" and result["device"] == "cpu"
    assert result["stages"]["sft"]["global_steps"] == 1 and result["stages"]["mg_grpo"]["global_steps"] == 1
