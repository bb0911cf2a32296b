"""A tiny randomly initialised Qwen3.5-style vision-language model, built offline.

Tests of the baselines and of live evaluation need a real ``transformers`` VLM (the real
model class, processor, chat template and generation code) without downloading weights.
:func:`build_tiny_qwen35` writes one to a folder in a few seconds on CPU:

* a ``Qwen3_5ForConditionalGeneration`` with the real architecture (a linear-attention
  and a full-attention text layer, hidden size 64; a one-block vision tower) and random
  weights;
* a byte-level BPE tokenizer trained locally on benchmark-like text, with Qwen's own
  normaliser and pre-tokenizer (otherwise ``AutoTokenizer`` rebuilds them on reload and
  token ids change) and the Qwen special tokens;
* the Qwen2-VL image processor (PIL backend) with a small pixel budget, so a screenshot
  becomes a handful of vision tokens;
* the real Qwen3.5 chat template (thinking variant, as shipped with the checkpoints).

The folder loads with ``AutoModelForImageTextToText.from_pretrained`` and, after
:func:`mag_dataset.vlm_processor.install_no_torchvision_shim`, with ``AutoProcessor.from_pretrained`` (the Qwen3-VL
processor insists on a video processor, which needs torchvision; the shim drops the video
modality when torchvision is absent and is a no-op otherwise). Use
:func:`mag_dataset.vlm_processor.load_processor` to do both (imported here too, for the tests).

Usage::

    from mag_dataset.testing.tiny_vlm import build_tiny_qwen35
    from mag_dataset.vlm_processor import load_processor
    path = build_tiny_qwen35(tmp_path / "tiny")
    model = AutoModelForImageTextToText.from_pretrained(path)
    processor = load_processor(path)
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

# load_processor is imported for the tests that build a tiny model and reload its processor
from mag_dataset.vlm_processor import _torchvision_available, install_no_torchvision_shim, load_processor  # noqa: F401

#: Special tokens of the Qwen3.5 vocabulary that the processor and chat template use.
SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

#: Tiny text / vision sizes (the issue's "text hidden 64, 2 layers, vision depth 1").
TINY_TEXT = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=16,
    linear_value_head_dim=16,
    linear_conv_kernel_dim=4,
    layer_types=["linear_attention", "full_attention"],
    max_position_embeddings=4096,
    rope_parameters={
        "rope_type": "default",
        "rope_theta": 10000.0,
        "partial_rotary_factor": 0.5,
        "mrope_section": [2, 1, 1],
        "mrope_interleaved": True,
    },
    tie_word_embeddings=True,
)
TINY_VISION = dict(
    depth=1,
    hidden_size=32,
    intermediate_size=64,
    num_heads=2,
    patch_size=16,
    spatial_merge_size=2,
    temporal_patch_size=2,
    num_position_embeddings=64,
    out_hidden_size=64,
)
#: Pixel budget of the tiny image processor: at most 128x128 pixels -> at most 16 vision tokens.
TINY_MIN_PIXELS = 32 * 32
TINY_MAX_PIXELS = 128 * 128


def _training_corpus() -> list[str]:
    """Benchmark-like text, so prompts and answers tokenise into reasonably few tokens."""
    from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, GROUNDING_KEY

    lines = [
        "You are a web agent. Look at the screenshot and answer with one JSON object.",
        "Task: Click on the Submit button. Previous guides: none. Candidate elements:",
        '{"action": {"type": "click", "element": "12"}, "guide": "Click the Submit button."}',
        '{"guide": "Type the name into the Username field.", "action": {"type": "type", '
        '"coordinate": [120, 48], "text": "Cheree"}}',
        "[12] button 'Submit' [3] textbox 'Username' [7] link 'Home' [45] checkbox 'Remember me'",
        "system user assistant screenshot guide action element coordinate text value",
        "0123456789 [0, 0, 160, 210] (x, y) pixels",
    ]
    for spec in ACTION_SPACE.values():
        lines.append(f"{spec.type.value}: {spec.description} " + " ".join(a.description for a in spec.args))
    lines.append(" ".join(k for keys in CONTRACT_KEYS.values() for k in keys))
    lines.append(" ".join(GROUNDING_KEY.values()))
    try:  # the locked prompts themselves, so a prompt is a few hundred tokens, not thousands
        from mag_dataset.actions import Contract, View
        from mag_dataset.prompts import system_prompt

        lines += [system_prompt(v, c) for v in View for c in Contract]
    except ImportError:  # pragma: no cover - prompts module absent
        pass
    return lines * 20


def _train_tokenizer(vocab_size: int = 4096) -> Any:
    """Train a byte-level BPE with Qwen3.5's normaliser and pre-tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers.models.qwen3_5.tokenization_qwen3_5 import PRETOKENIZE_REGEX, Qwen3_5Tokenizer

    bpe = Tokenizer(BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
                        fuse_unk=False, byte_fallback=False))
    # Must match Qwen3_5Tokenizer.__init__ exactly: it rebuilds these on every reload.
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_training_corpus(), trainer)
    state = json.loads(bpe.to_str())
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in state["model"]["merges"]]
    tok = Qwen3_5Tokenizer(
        vocab=bpe.get_vocab(),
        merges=merges,
        unk_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    tok.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS[1:])})
    return tok


def qwen35_chat_template() -> str:
    """The Qwen3.5 chat template as shipped with the checkpoints (thinking on by default).

    Taken from TRL's copy, which TRL also recognises to swap in its training variant.
    """
    from trl import chat_template_utils

    return chat_template_utils.qwen3_5_think_chat_template


def build_tiny_processor(tokenizer: Any = None) -> Any:
    """A Qwen3-VL processor with the tiny tokenizer, a small pixel budget and the Qwen3.5 template."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    install_no_torchvision_shim()
    tokenizer = tokenizer if tokenizer is not None else _train_tokenizer()
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=TINY_VISION["patch_size"],
        temporal_patch_size=TINY_VISION["temporal_patch_size"],
        merge_size=TINY_VISION["spatial_merge_size"],
        min_pixels=TINY_MIN_PIXELS,
        max_pixels=TINY_MAX_PIXELS,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    kwargs: dict[str, Any] = {"image_processor": image_processor, "tokenizer": tokenizer,
                              "chat_template": qwen35_chat_template()}
    if _torchvision_available():  # pragma: no cover - not installed on the CI machine
        from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

        kwargs["video_processor"] = Qwen3VLVideoProcessor(
            patch_size=TINY_VISION["patch_size"], temporal_patch_size=TINY_VISION["temporal_patch_size"],
            merge_size=TINY_VISION["spatial_merge_size"])
    return Qwen3VLProcessor(**kwargs)


def tiny_qwen35_config(tokenizer: Any, **text_overrides: Any) -> Any:
    """The tiny ``Qwen3_5Config`` for ``tokenizer`` (vocabulary and special token ids)."""
    from transformers import Qwen3_5Config

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = dict(TINY_TEXT, vocab_size=len(tokenizer), pad_token_id=ids["<|endoftext|>"],
                eos_token_id=ids["<|im_end|>"], bos_token_id=None, **text_overrides)
    return Qwen3_5Config(
        text_config=text,
        vision_config=dict(TINY_VISION),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )


def build_tiny_qwen35(out_dir: str | os.PathLike, seed: int = 0) -> Path:
    """Build and save a tiny random-init Qwen3.5-style VLM with tokenizer and processor.

    Deterministic for a given ``seed`` (same weights, same tokenizer). Nothing is
    downloaded. The folder is written atomically (built next to ``out_dir``, then renamed);
    an existing complete folder is reused.

    Args:
        out_dir: target folder; created.
        seed: seed of the weight initialisation.

    Returns:
        ``out_dir`` as a :class:`~pathlib.Path`.
    """
    import torch
    from transformers import GenerationConfig, Qwen3_5ForConditionalGeneration

    out = Path(out_dir)
    if (out / "config.json").is_file() and (out / "tokenizer.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        processor = build_tiny_processor()
        tokenizer = processor.tokenizer
        config = tiny_qwen35_config(tokenizer)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = Qwen3_5ForConditionalGeneration(config)
        model.generation_config = GenerationConfig(
            eos_token_id=config.text_config.eos_token_id,
            pad_token_id=config.text_config.pad_token_id,
            do_sample=False,
        )
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def tiny_steps(
    n: int = 4, split: str = "test", view: str = "som", size: tuple[int, int] = (96, 64)
) -> list[tuple[Any, Any]]:
    """``n`` small synthetic benchmark steps with their screenshots, for tests (no dataset needed).

    Two tasks of a form-filling site; actions cycle through type, click, scroll and finish,
    each targeted action with a candidate menu and a gold box, so every contract and both
    views render a gold answer. Images are tiny RGB screenshots with the candidates drawn;
    as in a built dataset, the coord view's steps carry no candidate menu.

    Returns:
        ``[(step, image), ...]``: :class:`mag_dataset.schema.Step` and ``PIL.Image``.
    """
    from PIL import Image, ImageDraw

    from mag_dataset.schema import Action, Candidate, Step

    w, h = size
    cands = (
        Candidate("3", "textbox", "Username", (4, 4, 60, 16)),
        Candidate("7", "button", "Submit", (4, 24, 40, 36)),
        Candidate("12", "link", "Home", (50, 24, 90, 36)),
    )
    plans = [
        (Action("type", element_id="3", coordinate=(30, 10), text="Cheree"), cands[0].bbox,
         "Type 'Cheree' into the Username field."),
        (Action("click", element_id="7", coordinate=(20, 30)), cands[1].bbox, "Click 'Submit'."),
        (Action("scroll", direction="down"), None, "Scroll down to see more of the page."),
        (Action("finish", answer="done"), None, "The task is complete."),
    ]
    out = []
    per_task = 2
    for i in range(n):
        action, box, guide = plans[i % len(plans)]
        task, index = divmod(i, per_task)
        image = Image.new("RGB", (w, h), (250, 250, 250))
        draw = ImageDraw.Draw(image)
        for c in cands:
            draw.rectangle(c.bbox, outline=(200, 30, 30))
        step = Step(
            step_id=f"tiny-{task}:{index}", task_id=f"tiny-{task}", site="tiny-form",
            intent=f"Log in as Cheree (task {task}).", intent_template_id="tiny-login",
            step_index=index, num_steps=per_task, image_width=w, image_height=h,
            previous_guides=tuple(plans[(i - k - 1) % len(plans)][2] for k in range(index)),
            guide=guide, guide_source="template", action=action, target_bbox=box, split=split,
            url="http://localhost/form", candidates=cands if view == "som" else (),
        )
        out.append((step, image))
    return out
