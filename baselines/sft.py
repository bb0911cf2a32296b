"""Supervised fine-tuning of a VLM under one output contract (TRL ``SFTTrainer``).

WebMRE (arXiv 2609.27353) fine-tunes Qwen3.5-4B and Qwen3.5-9B on the train split under
each output contract (A, G, J, JG) with three seeds, in the Set-of-Mark and coordinate
views. Each training example is the locked prompt of :func:`mag_dataset.prompts.build_messages`
(system + user turn with the screenshot) as the *prompt* and the gold answer of
:func:`mag_dataset.prompts.render_target` as the *completion*; the loss covers the completion
tokens only (the answer, then ``<|im_end|>`` and its newline), never the prompt or the image. Works
with any ``AutoModelForImageTextToText`` checkpoint; full fine-tuning or LoRA (``--use_peft``).

The chat template is rendered up front, with :data:`baselines.runners.CHAT_TEMPLATE_KWARGS`
(no thinking block), into plain-text ``prompt`` / ``completion`` columns: the prompt is
exactly the text :func:`baselines.runners.prompt_text` decodes from (ending with the empty
think block), the completion is the rendered answer plus ``<|im_end|>\n``. A per-row
``chat_template_kwargs`` column would not survive: for image datasets TRL keeps only
prompt/completion/image(s) and ``remove_unused_columns`` drops the rest, so the trainer
would iterate the *thinking* template while decoding used the non-thinking one.

Launch (one GPU)::

    python -m baselines.sft --config baselines/configs/sft_qwen35_4b.yaml \\
        --contract J --view som --seed 0 --output_dir runs/sft-qwen35-4b-som-J-s0

Multi-GPU / multi-node (DeepSpeed ZeRO-3 or FSDP; see baselines/README.md)::

    accelerate launch --config_file baselines/accelerate/zero3.yaml -m baselines.sft \\
        --config baselines/configs/sft_qwen35_9b.yaml --contract JG --seed 1 \\
        --output_dir runs/sft-qwen35-9b-som-JG-s1

The three seeds of the paper are ``--seed 0``, ``1``, ``2`` (the seed drives data order and
initialisation of any new weights; TRL's ``seed`` field).
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from baselines import common
from mag_dataset import runners
from mag_dataset.fileio import atomic_write_json


@dataclass
class SFTScriptArguments:
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som or coord"})
    contract: str = field(default="J", metadata={"help": "A, G, J or JG"})
    split: str = field(default="train", metadata={"help": "split to train on"})
    limit: int | None = field(default=None, metadata={"help": "only the first N training steps (smoke tests)"})


#: end of an assistant turn in the Qwen chat template (what the model learns to stop with)
END_OF_TURN = "<|im_end|>\n"


def example_record(processor: Any, step: Any, view: str, contract: str) -> dict[str, str]:
    """The prompt-completion record of one step (without its image), chat template rendered.

    Args:
        processor: the model's processor (its chat template renders the prompt).
        step: the benchmark step.
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.

    Returns:
        ``{"prompt": text ending with the generation prompt, "completion": answer + end of turn}``.
    """
    from mag_dataset.prompts import render_target

    return {
        "prompt": runners.prompt_text(processor, step, view, contract),
        "completion": render_target(step, view, contract) + END_OF_TURN,
    }


def sft_dataset(processor: Any, examples: Sequence[common.Example], view: str, contract: str) -> Any:
    """A ``datasets.Dataset`` of rendered prompt-completion records with one ``image`` each."""
    from datasets import Dataset

    return Dataset.from_list([{"image": e.image, **example_record(processor, e.step, view, contract)}
                              for e in examples])


def sft_dataset_from_hub(processor: Any, dataset: str, view: str, contract: str, split: str,
                         limit: int | None = None) -> Any:
    """The same records, built lazily from a dataset view (images are not decoded while mapping)."""
    from datasets import Image

    from mag_dataset import dataset as ds_lib

    from mag_dataset.errors import UserError

    source = ds_lib.bundled_dataset() if dataset == "bundled" else dataset
    try:
        ds = ds_lib.load_view(source, view, split)
    except (FileNotFoundError, ValueError) as e:
        raise UserError(f"cannot load {dataset!r} ({view}, {split}): {e}") from None
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    ds = ds.cast_column("screenshot", Image(decode=False))
    others = [c for c in ds.column_names if c != "screenshot"]
    ds = ds.map(lambda row: example_record(processor, ds_lib.row_to_step(row), view, contract),
                remove_columns=others)
    return ds.rename_column("screenshot", "image").cast_column("image", Image())


def load_model(model_args: Any, training_args: Any) -> tuple[Any, Any]:
    """Load the VLM and its processor for training."""
    import torch
    from transformers import AutoModelForImageTextToText

    from mag_dataset.vlm_processor import load_processor

    dtype = model_args.dtype if model_args.dtype in ("auto", None) else getattr(torch, model_args.dtype)
    kwargs: dict[str, Any] = {"revision": model_args.model_revision, "dtype": dtype}
    if model_args.attn_implementation:
        kwargs["attn_implementation"] = model_args.attn_implementation
    model = AutoModelForImageTextToText.from_pretrained(model_args.model_name_or_path, **kwargs)
    processor = load_processor(model_args.model_name_or_path, revision=model_args.model_revision)
    return model, processor


def train(
    script_args: SFTScriptArguments,
    training_args: Any,
    model_args: Any,
    examples: Sequence[common.Example] | None = None,
) -> Any:
    """Fine-tune and save the model; returns the ``SFTTrainer`` (after training).

    Args:
        script_args: data and contract.
        training_args: a TRL ``SFTConfig``.
        model_args: a TRL ``ModelConfig`` (checkpoint, dtype, LoRA settings).
        examples: training steps (default: loaded from ``script_args.dataset``).
    """
    from trl import SFTTrainer, get_peft_config

    view, contract = common.view_and_contract(script_args.view, script_args.contract)
    if training_args.packing:
        raise ValueError("packing is not supported for vision data; set packing: false")
    model, processor = load_model(model_args, training_args)
    if examples is not None:
        train_ds = sft_dataset(processor, examples[: script_args.limit] if script_args.limit else examples,
                               view, contract)
    else:
        train_ds = sft_dataset_from_hub(processor, script_args.dataset, view, contract, script_args.split,
                                        script_args.limit)
    # prompt-completion data: the loss covers the completion (answer + end of turn) only
    training_args.completion_only_loss = True
    training_args.assistant_only_loss = False
    trainer = SFTTrainer(
        model=model,
        args=training_args,
        train_dataset=train_ds,
        processing_class=processor,
        peft_config=get_peft_config(model_args),
    )
    trainer.train()
    trainer.save_model(training_args.output_dir)
    if trainer.accelerator.is_main_process:
        processor.save_pretrained(training_args.output_dir)
        meta = {
            "kind": "mag-sft-run",
            "script": asdict(script_args),
            "dataset_revision": common.dataset_revision(script_args.dataset) if examples is None else None,
            "model": model_args.model_name_or_path,
            "model_revision": model_args.model_revision,
            "use_peft": model_args.use_peft,
            "seed": training_args.seed,
            "train_steps": len(train_ds),
            "global_steps": trainer.state.global_step,
            "environment": common.environment(),
        }
        atomic_write_json(Path(training_args.output_dir) / "mag_sft_run.json", meta)
    return trainer


def main(argv: Sequence[str] | None = None) -> int:
    from trl import ModelConfig, SFTConfig

    from mag_dataset.errors import UserError

    script_args, training_args, model_args = common.parse_args([SFTScriptArguments, SFTConfig, ModelConfig], argv)
    try:
        train(script_args, training_args, model_args)
    except UserError as e:
        print(f"sft: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
