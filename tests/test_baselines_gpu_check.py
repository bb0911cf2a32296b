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
