"""The tiny Qwen3.5-style VLM used by baseline and live-eval tests: real classes, offline."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.train

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _messages(text: str) -> list[dict]:
    return [
        {"role": "system", "content": [{"type": "text", "text": "You are a web agent."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]},
    ]


def test_folder_loads_with_auto_classes_offline(tiny_vlm):
    from transformers import AutoConfig, AutoModelForImageTextToText

    from mag_dataset.testing.tiny_vlm import load_processor

    files = sorted(p.name for p in tiny_vlm.iterdir())
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= set(files)
    config = AutoConfig.from_pretrained(tiny_vlm)
    assert config.model_type == "qwen3_5"
    assert config.text_config.layer_types == ["linear_attention", "full_attention"]
    assert config.vision_config.depth == 1
    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm)
    assert type(model).__name__ == "Qwen3_5ForConditionalGeneration"
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params < 1_000_000, n_params
    processor = load_processor(tiny_vlm)
    assert type(processor).__name__ == "Qwen3VLProcessor"
    assert processor.tokenizer.convert_tokens_to_ids("<|image_pad|>") == config.image_token_id


def test_tokenizer_ids_survive_reload(tiny_vlm):
    from mag_dataset.testing.tiny_vlm import _train_tokenizer, load_processor

    fresh = _train_tokenizer()
    reloaded = load_processor(tiny_vlm).tokenizer
    text = '{"action": {"type": "type", "element": "12", "text": "Cheree"}}  <|im_end|>\n Ünïcode'
    assert fresh(text)["input_ids"] == reloaded(text)["input_ids"]
    assert reloaded.decode(reloaded(text)["input_ids"]) == text
    assert reloaded.convert_ids_to_tokens(reloaded("<|im_start|>")["input_ids"]) == ["<|im_start|>"]


def test_build_is_deterministic(tmp_path):
    from mag_dataset.testing.tiny_vlm import build_tiny_qwen35

    a = build_tiny_qwen35(tmp_path / "a", seed=3)
    b = build_tiny_qwen35(tmp_path / "b", seed=3)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert json.loads((a / "tokenizer.json").read_text()) == json.loads((b / "tokenizer.json").read_text())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary build folder left behind"


def test_generate_with_image_batched_equals_single(tiny_vlm):
    """Left-padded batched greedy decoding gives the same tokens as one-by-one decoding."""
    from PIL import Image
    from transformers import AutoModelForImageTextToText

    from mag_dataset.testing.tiny_vlm import load_processor

    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm).eval()
    processor = load_processor(tiny_vlm)
    images = [Image.new("RGB", (160, 210), "white"), Image.new("RGB", (200, 120), (30, 90, 200))]
    texts = [
        processor.apply_chat_template(_messages(t), add_generation_prompt=True, tokenize=False,
                                      enable_thinking=False)
        for t in ("Task: click Submit", "Task: type the user name Cheree into the field and press Enter")
    ]
    assert texts[0].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    single = []
    for text, image in zip(texts, images):
        inputs = processor(text=[text], images=[image], return_tensors="pt")
        assert int((inputs["input_ids"] == model.config.image_token_id).sum()) > 0
        out = model.generate(**inputs, max_new_tokens=6, do_sample=False)
        single.append(out[0, inputs["input_ids"].shape[1]:].tolist())
    batch = processor(text=texts, images=images, return_tensors="pt", padding=True, padding_side="left")
    out = model.generate(**batch, max_new_tokens=6, do_sample=False)
    batched = [row[batch["input_ids"].shape[1]:].tolist() for row in out]
    assert [len(s) for s in single] == [6, 6]
    assert batched == single
