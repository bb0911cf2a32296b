"""baselines.sft: TRL SFTTrainer on a tiny real VLM, per contract; loss on the answer only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
pytest.importorskip("trl")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, infer, sft  # noqa: E402
from mag_dataset import runners  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402


def _configs(tmp_path, tiny_vlm, contract, **model_kw):
    from trl import ModelConfig, SFTConfig

    targs = SFTConfig(
        output_dir=str(tmp_path / f"sft-{contract}"), max_steps=2, per_device_train_batch_size=2,
        learning_rate=1e-3, bf16=False, activation_checkpointing=False, use_cpu=True, report_to="none",
        save_strategy="no", logging_steps=1, max_length=None, seed=1, dataloader_num_workers=0,
    )
    margs = ModelConfig(model_name_or_path=str(tiny_vlm), dtype="float32", **model_kw)
    return sft.SFTScriptArguments(view="som", contract=contract), targs, margs


@pytest.mark.parametrize("contract", ["A", "G", "J", "JG"])
def test_sft_two_steps_supervises_exactly_the_answer(tmp_path, tiny_vlm, contract):
    from mag_dataset.prompts import render_target

    examples = [common.Example(s, im) for s, im in tiny_steps(4, split="train")]
    trainer = sft.train(*_configs(tmp_path, tiny_vlm, contract), examples=examples)
    assert trainer.state.global_step == 2
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(v == v and v > 0 for v in map(float, losses))

    tok = trainer.processing_class.tokenizer
    # what the trainer really iterates: its own dataloader (column removal, sampler, collator)
    batches = list(trainer.get_train_dataloader())
    assert len(batches) == 2 and all(b["image_grid_thw"].shape[0] == 2 and b["pixel_values"].shape[0] > 0
                                     for b in batches)
    image_id = tok.convert_tokens_to_ids("<|image_pad|>")
    by_target = {render_target(s, "som", contract): s for s, _ in tiny_steps(4, split="train")}
    seen = set()
    rows = [(ids, labels) for b in batches for ids, labels in zip(b["input_ids"], b["labels"])]
    for ids, labels in rows:
        supervised = [int(i) for i, lab in zip(ids, labels) if lab != -100]
        text = tok.decode(supervised)
        assert text.endswith("<|im_end|>\n") and text[: -len("<|im_end|>\n")] in by_target, text
        step = by_target[text[: -len("<|im_end|>\n")]]
        seen.add(step.step_id)
        assert image_id not in supervised
        # the supervised tokens are one contiguous block at the end of the sequence
        idx = [k for k, lab in enumerate(labels) if lab != -100]
        assert idx == list(range(idx[0], idx[0] + len(idx)))
        prompt = tok.decode([int(i) for i, lab in zip(ids[: idx[0]], labels[: idx[0]])])
        assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        # ... which is, token for token, the prompt the decoders use
        assert prompt.endswith(runners.prompt_text(trainer.processing_class, step, "som", contract).split(
            "<|vision_end|>")[-1])
    assert len(seen) == 4, seen

    out = Path(trainer.args.output_dir)
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()
    meta = json.loads((out / "mag_sft_run.json").read_text())
    assert meta["script"]["contract"] == contract and meta["global_steps"] == 2 and meta["seed"] == 1


def test_lora_run_then_infer_on_the_checkpoint(tmp_path, tiny_vlm):
    from mag_dataset.predictions import read_predictions

    examples = [common.Example(s, im) for s, im in tiny_steps(4, split="train")]
    script, targs, margs = _configs(tmp_path, tiny_vlm, "J", use_peft=True, lora_r=4, lora_alpha=8,
                                    lora_target_modules=["q_proj", "v_proj"])
    trainer = sft.train(script, targs, margs, examples=examples)
    assert type(trainer.model).__name__.startswith("Peft")
    trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    out = Path(targs.output_dir)
    assert (out / "adapter_config.json").exists()

    # a full fine-tune checkpoint (merged adapters) feeds infer directly
    merged = trainer.model.merge_and_unload()
    merged.save_pretrained(tmp_path / "merged")
    trainer.processing_class.save_pretrained(tmp_path / "merged")
    test = [common.Example(s, im) for s, im in tiny_steps(3)]
    args = infer.InferArguments(model_name_or_path=str(tmp_path / "merged"), output=str(tmp_path / "p.jsonl"),
                                contract="J", max_new_tokens=8, progress=False, device="cpu")
    preds = infer.predict(args, test)
    assert len(list(read_predictions(preds, [e.step.step_id for e in test]))) == 3


def test_packing_is_refused(tmp_path, tiny_vlm):
    script, targs, margs = _configs(tmp_path, tiny_vlm, "A")
    targs.packing = True
    with pytest.raises(ValueError, match="packing"):
        sft.train(script, targs, margs, examples=[common.Example(s, im) for s, im in tiny_steps(2)])
