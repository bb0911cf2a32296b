"""GPU check: inference and SFT throughput of a random-init model with the real Qwen3.5-4B shape.

Nothing is downloaded: the model is built from the published Qwen3.5-4B configuration
(constants below) with random weights, the tokenizer is trained locally
(:mod:`mag_dataset.testing.tiny_vlm`), and the inputs are synthetic benchmark steps with
1280x720 screenshots rendered through the library's locked prompts (contract J, SoM view).
It measures

* inference steps/s: greedy decoding of ``--infer_steps`` steps with vLLM when installed
  (the model is saved to a temporary folder first), otherwise batched ``transformers``;
* SFT steps/s: TRL ``SFTTrainer`` full fine-tuning (bf16, activation checkpointing,
  AdamW) for ``--sft_steps`` optimizer steps, the first one excluded as warm-up;

and prints both figures (and writes them as JSON with ``--output``). Sized to finish in
under 8 minutes on one H200 with the defaults.

``--pipeline true`` instead runs the baselines' own entry points once each on the same
random-init model (saved to a temporary folder first): one SFT step through
:func:`baselines.sft.train` (contract JG), one MG-GRPO step through
:func:`baselines.mg_grpo.train` (mediated reward; the expert answer is mixed into each
group, since random weights never write a parsable guide for the reward to force), and a
vLLM greedy pass of ``--infer_steps`` steps through :class:`baselines.common.VLLMBackend`.
It needs a CUDA GPU and vLLM for the real shape; with ``--tiny`` it runs the two training
steps on CPU and reports the vLLM pass as skipped when vLLM is not installed. With random weights the decoded text is
noise, so decoding always runs the full ``--max_new_tokens`` (EOS is suppressed): a
worst-case figure for answers of that length.

Launch::

    python -m baselines.gpu_check                     # one GPU, real 4B shape
    python -m baselines.gpu_check --tiny              # CPU smoke test of the same code path
    python -m baselines.gpu_check --pipeline true     # one GPU: SFT step, MG-GRPO step, vLLM pass
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from baselines import common
from mag_dataset.fileio import atomic_write_json

#: Qwen3.5-4B text model, as in the checkpoint's ``config.json`` (``text_config``).
QWEN35_4B_TEXT: dict[str, Any] = dict(
    vocab_size=248320,
    hidden_size=2560,
    intermediate_size=9216,
    num_hidden_layers=32,
    num_attention_heads=16,
    num_key_value_heads=4,
    head_dim=256,
    linear_num_key_heads=16,
    linear_num_value_heads=32,
    linear_key_head_dim=128,
    linear_value_head_dim=128,
    linear_conv_kernel_dim=4,
    layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 8,
    max_position_embeddings=262144,
    rms_norm_eps=1e-6,
    rope_parameters={
        "rope_type": "default",
        "rope_theta": 10_000_000.0,
        "partial_rotary_factor": 0.25,
        "mrope_section": [11, 11, 10],
        "mrope_interleaved": True,
    },
    tie_word_embeddings=True,
)
#: Qwen3.5-4B vision tower (``vision_config``).
QWEN35_4B_VISION: dict[str, Any] = dict(
    depth=24,
    hidden_size=1024,
    intermediate_size=4096,
    num_heads=16,
    patch_size=16,
    spatial_merge_size=2,
    temporal_patch_size=2,
    num_position_embeddings=2304,
    out_hidden_size=2560,
)


@dataclass
class GPUCheckArguments:
    tiny: bool = field(default=False, metadata={"help": "tiny model on CPU (smoke test of this script)"})
    backend: str = field(default="auto", metadata={"help": "auto (vLLM if installed), vllm or transformers"})
    infer_steps: int = field(default=128, metadata={"help": "steps decoded for the inference figure"})
    batch_size: int = field(default=32, metadata={"help": "transformers backend batch size"})
    max_new_tokens: int = field(default=48, metadata={"help": "tokens decoded per step (a J answer is ~40)"})
    sft_steps: int = field(default=12, metadata={"help": "SFT optimizer steps timed (+1 warm-up)"})
    sft_batch_size: int = field(default=4, metadata={"help": "SFT per-device batch size"})
    image_width: int = field(default=1280, metadata={"help": "synthetic screenshot width"})
    image_height: int = field(default=720, metadata={"help": "synthetic screenshot height"})
    output: str | None = field(default=None, metadata={"help": "write the figures as JSON here"})
    pipeline: bool = field(default=False, metadata={
        "help": "run one SFT step, one MG-GRPO step and a vLLM pass through the baselines' entry points"})
    grpo_generations: int = field(default=2, metadata={"help": "pipeline: completions per prompt in the GRPO step"})
    vllm_gpu_memory_utilization: float = field(default=0.5, metadata={
        "help": "pipeline: vLLM's share of GPU memory (the training steps' memory is released first)"})


def qwen35_4b_config(tokenizer: Any) -> Any:
    """The Qwen3.5-4B configuration, with special token ids taken from ``tokenizer``."""
    from transformers import Qwen3_5Config

    from mag_dataset.testing import tiny_vlm

    small = tiny_vlm.tiny_qwen35_config(tokenizer)  # token ids of the local tokenizer
    ids = {k: getattr(small.text_config, k) for k in ("pad_token_id", "eos_token_id", "bos_token_id")}
    return Qwen3_5Config(
        text_config=dict(QWEN35_4B_TEXT, **ids), vision_config=dict(QWEN35_4B_VISION),
        image_token_id=small.image_token_id, video_token_id=small.video_token_id,
        vision_start_token_id=small.vision_start_token_id, vision_end_token_id=small.vision_end_token_id,
        tie_word_embeddings=True,
    )


def build_model_and_processor(tiny: bool) -> tuple[Any, Any]:
    """Random-init Qwen3.5 VLM (real 4B shape, or the tiny test shape) and its processor."""
    import torch
    from transformers import GenerationConfig, Qwen3_5ForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from mag_dataset.testing import tiny_vlm

    processor = tiny_vlm.build_tiny_processor()
    if not tiny:  # the real pixel budget: a 1280x720 screenshot is ~900 vision tokens
        processor.image_processor = Qwen2VLImageProcessorPil(
            patch_size=16, temporal_patch_size=2, merge_size=2, min_pixels=65536, max_pixels=16777216,
            image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    config = tiny_vlm.tiny_qwen35_config(processor.tokenizer) if tiny else qwen35_4b_config(processor.tokenizer)
    device = "cuda" if (not tiny and torch.cuda.is_available()) else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3_5ForConditionalGeneration._from_config(config, dtype=dtype)
    # random weights rarely emit EOS; suppress it so every step decodes exactly max_new_tokens
    model.generation_config = GenerationConfig(do_sample=False, pad_token_id=config.text_config.pad_token_id)
    return model.eval(), processor


def synthetic_examples(n: int, width: int, height: int) -> list[common.Example]:
    from mag_dataset.testing.tiny_vlm import tiny_steps

    return [common.Example(s, im) for s, im in tiny_steps(n, size=(width, height))]


def inference_figure(args: GPUCheckArguments, model: Any, processor: Any,
                     examples: list[common.Example]) -> dict[str, Any]:
    import importlib.util

    backend_name = args.backend
    if backend_name == "auto":
        backend_name = "vllm" if (importlib.util.find_spec("vllm") and not args.tiny) else "transformers"
    if backend_name == "vllm":
        tmp = tempfile.mkdtemp(prefix="mag-gpu-check-")
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        backend: Any = common.VLLMBackend(tmp, dtype="bfloat16", max_new_tokens=args.max_new_tokens,
                                          max_model_len=8192, ignore_eos=True)
    else:
        backend = common.TransformersBackend("random-init", model=model, processor=processor,
                                             batch_size=args.batch_size, max_new_tokens=args.max_new_tokens)
    prompts = [backend.prompt(e.step, "som", "J") for e in examples]
    images = [e.image for e in examples]
    warm = min(len(examples), args.batch_size if backend_name == "transformers" else 8)
    backend.decode(prompts[:warm], images[:warm])
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    decoded = backend.decode(prompts, images)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    dt = time.perf_counter() - start
    tokens = sum(d.n_tokens for d in decoded)
    prompt_tokens = len(processor(text=[prompts[0]], images=[images[0]])["input_ids"][0])
    return {"backend": backend_name, "steps": len(examples), "seconds": round(dt, 3),
            "steps_per_s": round(len(examples) / dt, 3), "generated_tokens_per_s": round(tokens / dt, 1),
            "prompt_tokens_per_step": prompt_tokens, "max_new_tokens": args.max_new_tokens}


def sft_figure(args: GPUCheckArguments, model: Any, processor: Any, examples: list[common.Example]) -> dict[str, Any]:
    import torch
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from baselines.sft import sft_dataset

    on_gpu = next(model.parameters()).is_cuda
    stamps: list[float] = []

    class Timer(TrainerCallback):
        def on_step_end(self, *a: Any, **k: Any) -> None:
            if on_gpu:
                torch.cuda.synchronize()
            stamps.append(time.perf_counter())

    out = tempfile.mkdtemp(prefix="mag-gpu-check-sft-")  # nothing is saved in it; removed after training
    targs = SFTConfig(
        output_dir=out, max_steps=args.sft_steps + 1, per_device_train_batch_size=args.sft_batch_size,
        learning_rate=1e-5, bf16=on_gpu, activation_checkpointing=on_gpu, use_cpu=not on_gpu, report_to="none",
        save_strategy="no", logging_steps=1, max_length=None, dataloader_num_workers=0, seed=0,
        completion_only_loss=True,
    )
    model.train()
    trainer = SFTTrainer(model=model, args=targs, train_dataset=sft_dataset(processor, examples, "som", "J"),
                         processing_class=processor, callbacks=[Timer()])
    try:
        trainer.train()
    finally:
        shutil.rmtree(out, ignore_errors=True)
    timed = stamps[1:]  # the first step (allocation, kernels) is warm-up
    dt = timed[-1] - stamps[0] if len(timed) else float("nan")
    steps = len(timed)
    figure = {"steps": steps, "batch_size": args.sft_batch_size, "seconds": round(dt, 3),
              "steps_per_s": round(steps / dt, 4) if steps else None,
              "samples_per_s": round(steps * args.sft_batch_size / dt, 3) if steps else None}
    if on_gpu:
        figure["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
    return figure


def run(args: GPUCheckArguments) -> dict[str, Any]:
    import torch

    t0 = time.perf_counter()
    model, processor = build_model_and_processor(args.tiny)
    n_params = sum(p.numel() for p in model.parameters())
    size = (96, 64) if args.tiny else (args.image_width, args.image_height)
    infer_examples = synthetic_examples(args.infer_steps, *size)
    result: dict[str, Any] = {
        "kind": "mag-gpu-check",
        "model": "random-init Qwen3.5 (tiny test shape)" if args.tiny else "random-init Qwen3.5-4B shape",
        "parameters": n_params,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() and not args.tiny else "cpu",
        "image_size": list(size),
        "arguments": asdict(args),
        "environment": common.environment(),
    }
    result["inference"] = inference_figure(args, model, processor, infer_examples)
    n_sft = (args.sft_steps + 1) * args.sft_batch_size
    result["sft"] = sft_figure(args, model, processor, synthetic_examples(n_sft, *size))
    result["total_seconds"] = round(time.perf_counter() - t0, 1)
    return result


def _check_pipeline(args: GPUCheckArguments) -> bool:
    """Refuse what the pipeline cannot run here; returns whether vLLM is installed.

    Raises:
        mag_dataset.errors.UserError: the real shape without a CUDA GPU, a vLLM pass without
            vLLM, or fewer than two GRPO generations.
    """
    import importlib.util

    import torch

    from mag_dataset.errors import UserError

    if not args.tiny and not torch.cuda.is_available():
        raise UserError("--pipeline needs a CUDA GPU for the real Qwen3.5-4B shape; add --tiny for the CPU smoke test")
    has_vllm = importlib.util.find_spec("vllm") is not None
    if not has_vllm and (args.backend == "vllm" or not args.tiny):
        raise UserError("the pipeline's vLLM pass needs vLLM (pip install vllm)")
    if args.grpo_generations < 2:
        raise UserError("--grpo_generations must be >= 2 (GRPO compares samples of one prompt)")
    return has_vllm


def _release() -> None:
    """Free the previous stage's memory before the next one loads the model again."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _sft_stage(args: GPUCheckArguments, work: str, margs: Any, common_kw: dict[str, Any], size: tuple[int, int],
               on_gpu: bool) -> dict[str, Any]:
    """One SFT step through :func:`baselines.sft.train` (contract JG)."""
    import shutil

    import torch
    from trl import SFTConfig

    from baselines import sft

    start = time.perf_counter()
    trainer = sft.train(
        sft.SFTScriptArguments(contract="JG"),
        SFTConfig(output_dir=f"{work}/sft", per_device_train_batch_size=args.sft_batch_size, learning_rate=1e-5,
                  max_length=None, **common_kw),
        margs, examples=synthetic_examples(args.sft_batch_size, *size))
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    stage = {"global_steps": trainer.state.global_step, "loss": losses[-1] if losses else None,
             "seconds": round(time.perf_counter() - start, 2)}
    if torch.cuda.is_available() and on_gpu:
        stage["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
    del trainer
    _release()
    shutil.rmtree(f"{work}/sft", ignore_errors=True)
    return stage


def _grpo_stage(args: GPUCheckArguments, work: str, margs: Any, common_kw: dict[str, Any],
                size: tuple[int, int]) -> dict[str, Any]:
    """One MG-GRPO step through :func:`baselines.mg_grpo.train` (mediated reward, expert answer mixed in)."""
    import shutil

    from trl import GRPOConfig

    from baselines import mg_grpo

    start = time.perf_counter()
    arms = dict(mg_grpo.ARMS)  # random weights never write a parsable guide: mix the expert answer in
    mg_grpo.ARMS["mediated"] = mg_grpo.Arm(reward="mediated", expert=True, episodes=False)
    try:
        n_prompts = 2
        trainer = mg_grpo.train(
            mg_grpo.GRPOScriptArguments(arm="mediated", num_prompts=None, reward_max_new_tokens=args.max_new_tokens,
                                        reward_batch_size=n_prompts * args.grpo_generations),
            GRPOConfig(output_dir=f"{work}/grpo", per_device_train_batch_size=n_prompts * args.grpo_generations,
                       num_generations=args.grpo_generations, max_completion_length=args.max_new_tokens,
                       beta=0.0, num_iterations=1, learning_rate=1e-6, use_vllm=False, **common_kw),
            margs, examples=synthetic_examples(n_prompts, *size))
    finally:
        mg_grpo.ARMS.clear()
        mg_grpo.ARMS.update(arms)
    reward = trainer.reward_funcs[0]
    stage = {"global_steps": trainer.state.global_step, "reward_decode_calls": reward.decode_calls,
             "forced_decodes": sum(d is not None for _, d in reward.last),
             "seconds": round(time.perf_counter() - start, 2)}
    del trainer, reward
    _release()
    shutil.rmtree(f"{work}/grpo", ignore_errors=True)
    return stage


def _vllm_stage(args: GPUCheckArguments, folder: str, size: tuple[int, int], on_gpu: bool) -> dict[str, Any]:
    """A greedy pass of ``--infer_steps`` steps through :class:`baselines.common.VLLMBackend`."""
    backend = common.VLLMBackend(folder, dtype="bfloat16" if on_gpu else "float32",
                                 max_new_tokens=args.max_new_tokens, max_model_len=8192, ignore_eos=True,
                                 gpu_memory_utilization=args.vllm_gpu_memory_utilization)
    examples = synthetic_examples(args.infer_steps, *size)
    prompts = [backend.prompt(e.step, "som", "J") for e in examples]
    start = time.perf_counter()
    decoded = backend.decode(prompts, [e.image for e in examples])
    dt = time.perf_counter() - start
    return {"steps": len(decoded), "seconds": round(dt, 3), "steps_per_s": round(len(decoded) / dt, 3),
            "generated_tokens_per_s": round(sum(d.n_tokens for d in decoded) / dt, 1)}


def pipeline(args: GPUCheckArguments) -> dict[str, Any]:
    """One SFT step, one MG-GRPO step and a vLLM pass through the baselines' entry points.

    Raises:
        mag_dataset.errors.UserError: the real shape without a CUDA GPU, or a vLLM pass asked
            for (``--backend vllm``, or the real shape) without vLLM installed.
    """
    import gc
    import shutil

    import torch
    from trl import ModelConfig

    has_vllm = _check_pipeline(args)
    on_gpu = not args.tiny
    t0 = time.perf_counter()
    work = tempfile.mkdtemp(prefix="mag-gpu-pipeline-")
    try:
        model, processor = build_model_and_processor(args.tiny)
        n_params = sum(p.numel() for p in model.parameters())
        folder = f"{work}/model"
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
        del model
        gc.collect()
        size = (96, 64) if args.tiny else (args.image_width, args.image_height)
        margs = ModelConfig(model_name_or_path=folder, dtype="bfloat16" if on_gpu else "float32")
        common_kw = dict(bf16=on_gpu, activation_checkpointing=on_gpu, use_cpu=not on_gpu, report_to="none",
                         save_strategy="no", logging_steps=1, seed=0, dataloader_num_workers=0, max_steps=1)
        stages: dict[str, Any] = {"sft": _sft_stage(args, work, margs, common_kw, size, on_gpu),
                                  "mg_grpo": _grpo_stage(args, work, margs, common_kw, size)}
        stages["vllm"] = _vllm_stage(args, folder, size, on_gpu) if has_vllm else {"skipped": "vLLM is not installed"}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "kind": "mag-gpu-pipeline",
        "model": "random-init Qwen3.5 (tiny test shape)" if args.tiny else "random-init Qwen3.5-4B shape",
        "parameters": n_params,
        "device": torch.cuda.get_device_name(0) if on_gpu else "cpu",
        "image_size": list(size),
        "arguments": asdict(args),
        "stages": stages,
        "total_seconds": round(time.perf_counter() - t0, 1),
        "environment": common.environment(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    from mag_dataset.errors import UserError

    (args,) = common.parse_args([GPUCheckArguments], argv)
    if args.pipeline:
        try:
            result = pipeline(args)
        except UserError as e:
            print(f"gpu_check: error: {e}", file=sys.stderr)
            return 2
        st = result["stages"]
        print(f"model: {result['model']} ({result['parameters'] / 1e6:,.1f}M parameters) on {result['device']}")
        print(f"sft: {st['sft']['global_steps']} step in {st['sft']['seconds']} s (loss {st['sft']['loss']})")
        print(f"mg_grpo: {st['mg_grpo']['global_steps']} step in {st['mg_grpo']['seconds']} s "
              f"({st['mg_grpo']['forced_decodes']} forced decodes in {st['mg_grpo']['reward_decode_calls']} calls)")
        v = st["vllm"]
        print("vllm: skipped (" + v["skipped"] + ")" if "skipped" in v else
              f"vllm: {v['steps_per_s']} steps/s ({v['steps']} steps, {v['generated_tokens_per_s']} tokens/s)")
        print(f"total: {result['total_seconds']} s")
        if args.output:
            atomic_write_json(args.output, result)
        return 0
    result = run(args)
    inf, sft = result["inference"], result["sft"]
    print(f"model: {result['model']} ({result['parameters'] / 1e6:,.1f}M parameters) on {result['device']}")
    print(f"inference [{inf['backend']}]: {inf['steps_per_s']} steps/s "
          f"({inf['steps']} steps, {inf['prompt_tokens_per_step']} prompt tokens + {inf['max_new_tokens']} new "
          f"tokens each, {inf['generated_tokens_per_s']} generated tokens/s)")
    print(f"sft: {sft['steps_per_s']} steps/s (batch {sft['batch_size']}, {sft['samples_per_s']} samples/s"
          + (f", peak {sft['peak_memory_gib']} GiB" if "peak_memory_gib" in sft else "") + ")")
    print(f"total: {result['total_seconds']} s")
    if args.output:
        atomic_write_json(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
