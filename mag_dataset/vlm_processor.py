"""Loading a Qwen-VL processor, with or without torchvision.

``Qwen3VLProcessor`` declares a video processor, and every video processor in transformers
5.x needs torchvision; the benchmark only reads screenshots. :func:`load_processor` (what the
model runners, SFT and the tests call) installs :func:`install_no_torchvision_shim` first,
which drops the video modality when torchvision is absent and does nothing otherwise.

Core layer: the runners and the baselines load real checkpoints through it, so it lives here
rather than with the test helpers (:mod:`mag_dataset.testing.tiny_vlm`), which production code
must not import. transformers is imported only inside the functions.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any


def _torchvision_available() -> bool:
    return importlib.util.find_spec("torchvision") is not None


_SHIM_INSTALLED = False


def install_no_torchvision_shim() -> None:
    """Let the Qwen3-VL processor be built and reloaded without torchvision (images only).

    ``Qwen3VLProcessor`` declares a video processor, and every video processor in
    transformers 5.x needs torchvision, so without it neither ``Qwen3VLProcessor(...)`` nor
    ``AutoProcessor.from_pretrained`` works. Without torchvision this replaces the
    processor's ``__init__`` by one without the video modality (transformers derives the
    sub-processors to load from that signature); image and text processing are untouched.
    With torchvision installed it does nothing. Idempotent.
    """
    global _SHIM_INSTALLED
    if _SHIM_INSTALLED or _torchvision_available():
        return
    from transformers.models.qwen3_vl import processing_qwen3_vl
    from transformers.processing_utils import ProcessorMixin

    cls = processing_qwen3_vl.Qwen3VLProcessor

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):  # noqa: N807
        # Mirrors Qwen3VLProcessor.__init__ minus the video processor.
        self.image_token = getattr(tokenizer, "image_token", "<|image_pad|>")
        self.video_token = getattr(tokenizer, "video_token", "<|video_pad|>")
        self.image_token_id = getattr(tokenizer, "image_token_id", None) or tokenizer.convert_tokens_to_ids(
            self.image_token
        )
        self.video_token_id = getattr(tokenizer, "video_token_id", None) or tokenizer.convert_tokens_to_ids(
            self.video_token
        )
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
        self.vision_start_token = getattr(tokenizer, "vision_start_token", "<|vision_start|>")
        self.vision_end_token = getattr(tokenizer, "vision_end_token", "<|vision_end|>")
        self.vision_start_token_id = getattr(tokenizer, "vision_start_token_id", None) or (
            tokenizer.convert_tokens_to_ids(self.vision_start_token)
        )
        self.vision_end_token_id = getattr(tokenizer, "vision_end_token_id", None) or (
            tokenizer.convert_tokens_to_ids(self.vision_end_token)
        )

    cls.__init__ = __init__
    _SHIM_INSTALLED = True


def load_processor(path: str | os.PathLike, **kwargs: Any) -> Any:
    """``AutoProcessor.from_pretrained(path)``, with :func:`install_no_torchvision_shim` first."""
    from transformers import AutoProcessor

    install_no_torchvision_shim()
    return AutoProcessor.from_pretrained(str(path), **kwargs)


__all__ = ["install_no_torchvision_shim", "load_processor"]
