"""One model-runner interface: ``generate(messages) -> str``, and its four implementations.

Every place that asks a model for an answer (live evaluation's agents, the inference and
mediation baselines, the zero-shot API baseline) goes through a :class:`Runner`: it takes
the library's chat messages (:func:`mag_dataset.prompts.build_messages`, the screenshot in
the ``{"type": "image"}`` part: :func:`step_messages`) and returns the raw text the scorer
parses. One seam, as simple-evals' ``SamplerBase`` is for its evals, so a new backend is
one class and every caller gains it.

- :class:`HFRunner`: a local ``transformers`` checkpoint, greedy (CPU or GPU).
- :class:`VLLMRunner`: vLLM (GPU; optional dependency, imported when the runner is made).
- :class:`OpenAIRunner`: an OpenAI-compatible chat-completions endpoint through
  :class:`mag_dataset.llm_client.ChatClient` (retries, concurrency, on-disk cache).
- :class:`HeuristicRunner`: the no-model baseline (:mod:`mag_dataset.heuristic`); it reads the
  step the messages were built from, never the prompt text.

The local runners also decode many prompts at once, each after a forced answer prefix
(:meth:`HFRunner.decode`, :meth:`VLLMRunner.decode`): what the batch inference and the
mediation experiment (a guide forced before the action) need. Heavy dependencies (torch,
transformers, vLLM, PIL) are imported inside the functions that use them.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from mag_dataset.actions import Contract, View
from mag_dataset.schema import Step

if TYPE_CHECKING:
    from PIL.Image import Image


#: Keyword arguments for every chat-template call. Qwen3.5 checkpoints ship a template that
#: opens a ``<think>`` block by default; the benchmark's answers are a bare JSON object, so
#: training and decoding both use the template's non-thinking form (an empty think block in
#: the generation prompt), and the two agree token for token.
CHAT_TEMPLATE_KWARGS: dict[str, Any] = {"enable_thinking": False}


@runtime_checkable
class Runner(Protocol):
    """A model behind one call: chat messages in, the raw answer text out."""

    def generate(self, messages: Sequence[dict[str, Any]]) -> str:
        """The model's answer to ``messages`` (greedy where the backend allows it)."""
        ...

    def close(self) -> None:
        """Release the model, processes or connections."""
        ...


class StepMessages(list):
    """Chat messages built for one step, which also remember the step, view and contract.

    A plain list of message dicts to every runner that reads a prompt; the heuristic runner,
    which reads the candidate menu instead, takes the step from here.
    """

    def __init__(self, messages: Sequence[dict[str, Any]], step: Step, view: View, contract: Contract):
        super().__init__(messages)
        self.step, self.view, self.contract = step, view, contract


def step_messages(step: Step, view: View | str, contract: Contract | str, image: Any = None, *,
                  coord_space: str | None = None) -> StepMessages:
    """The library's locked prompt for ``step``, with ``image`` (PNG bytes or a PIL image) in
    every image part.

    Args:
        step: the step asked about.
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        image: the screenshot shown to the model; None leaves the image parts empty.
        coord_space: coord view: the space the model is asked to answer in.
    """
    from mag_dataset.prompts import build_messages

    view, contract = View(view), Contract(contract)
    messages = build_messages(step, view, contract, coord_space=coord_space)
    if image is not None:
        messages = fill_images(messages, image)
    return StepMessages(messages, step, view, contract)


def fill_images(messages: Sequence[dict[str, Any]], image: Any) -> list[dict[str, Any]]:
    """Copy chat messages, putting ``image`` into every ``{"type": "image"}`` content part."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = [dict(p, image=image) if isinstance(p, dict) and p.get("type") == "image" else p for p in content]
        out.append({**m, "content": content})
    return out


def image_of(messages: Sequence[dict[str, Any]]) -> Any:
    """The image of the first image part (PNG bytes or a PIL image), or None."""
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            for p in content:
                if isinstance(p, dict) and p.get("type") == "image" and p.get("image") is not None:
                    return p["image"]
    return None


def pil_image(image: Any) -> "Image":
    """A PIL RGB image from PNG bytes or a PIL image."""
    from PIL import Image

    if isinstance(image, (bytes, bytearray)):
        return Image.open(io.BytesIO(image)).convert("RGB")
    if image is None:
        raise ValueError("the messages carry no image")
    return image


def png_bytes(image: Any) -> bytes:
    """PNG bytes from a PIL image (bytes are returned as they are)."""
    if isinstance(image, (bytes, bytearray)):
        return bytes(image)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _without_images(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the image payloads dropped from their image parts (what a chat
    template renders as the image placeholder)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = [{"type": "image"} if isinstance(p, dict) and p.get("type") == "image" else p for p in content]
        out.append({**m, "content": content})
    return out


def chat_text(processor: Any, messages: Sequence[dict[str, Any]]) -> str:
    """The chat-template text of ``messages``, ending with the assistant generation prompt."""
    return processor.apply_chat_template(
        _without_images(messages), add_generation_prompt=True, tokenize=False, **CHAT_TEMPLATE_KWARGS,
    )


def load_model_and_processor(
    model_name_or_path: str,
    revision: str | None = None,
    dtype: str = "auto",
    device: str | None = None,
    attn_implementation: str | None = None,
) -> tuple[Any, Any]:
    """Load an ``AutoModelForImageTextToText`` and its processor, eval mode, on ``device``.

    Without torchvision, the Qwen3-VL processor is loaded through the image-only shim of
    :mod:`mag_dataset.vlm_processor` (it needs no video processor to read screenshots).
    """
    import torch
    from transformers import AutoModelForImageTextToText

    from mag_dataset.vlm_processor import load_processor

    kwargs: dict[str, Any] = {"revision": revision}
    if dtype != "auto":
        kwargs["dtype"] = getattr(torch, dtype)
    else:
        kwargs["dtype"] = "auto"
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    model = AutoModelForImageTextToText.from_pretrained(model_name_or_path, **kwargs)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device).eval()
    processor = load_processor(model_name_or_path, revision=revision)
    return model, processor


def prompt_text(processor: Any, step: Step, view: View | str, contract: Contract | str,
                coord_space: str | None = None) -> str:
    """The chat-template text of a step's prompt, ending with the assistant generation prompt.

    ``coord_space``: coord view: the space the model answers in (default screenshot pixels).
    """
    from mag_dataset.prompts import build_messages

    return processor.apply_chat_template(
        build_messages(step, view, contract, coord_space=coord_space), add_generation_prompt=True, tokenize=False,
        **CHAT_TEMPLATE_KWARGS,
    )


@dataclass(frozen=True)
class Decoded:
    """One greedy decoding: the forced prefix, the generated text, and the full answer."""

    prefix: str
    generated: str
    n_tokens: int

    @property
    def text(self) -> str:
        """The answer as the scorer sees it: forced prefix + generated continuation."""
        return self.prefix + self.generated


def greedy_generate(
    model: Any,
    processor: Any,
    prompts: Sequence[str],
    images: Sequence["Image"],
    prefixes: Sequence[str] | None = None,
    max_new_tokens: int = 256,
    synced_gpus: bool | None = None,
) -> list[Decoded]:
    """Batched greedy decoding (left padding) of chat-template prompts, one image each.

    Args:
        model: an ``AutoModelForImageTextToText`` (eval mode).
        processor: its processor.
        prompts: chat-template texts ending with the generation prompt.
        images: one screenshot per prompt.
        prefixes: optional forced answer prefixes, appended to the prompts before decoding.
        max_new_tokens: decoding budget per answer.
        synced_gpus: passed to ``generate`` when not None (True: every rank keeps stepping
            until all ranks are done; the caller must then make the same number of calls
            on every rank).

    Returns:
        One :class:`Decoded` per prompt, in order.
    """
    import torch

    prefixes = list(prefixes) if prefixes is not None else [""] * len(prompts)
    if not (len(prompts) == len(images) == len(prefixes)):
        raise ValueError("prompts, images and prefixes must have the same length")
    texts = [p + f for p, f in zip(prompts, prefixes)]
    inputs = processor(text=texts, images=list(images), return_tensors="pt", padding=True, padding_side="left")
    inputs = inputs.to(model.device)
    tok = processor.tokenizer
    extra = {} if synced_gpus is None else {"synced_gpus": synced_gpus}
    with torch.inference_mode():
        out = model.generate(
            **inputs,
            **extra,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            pad_token_id=tok.pad_token_id,
            temperature=None,
            top_p=None,
            top_k=None,
        )
    new = out[:, inputs["input_ids"].shape[1]:]
    eos = {tok.eos_token_id, tok.pad_token_id}
    result = []
    for prefix, row in zip(prefixes, new.tolist()):
        n = next((i for i, t in enumerate(row) if t in eos), len(row))
        result.append(Decoded(prefix=prefix, generated=tok.decode(row[:n], skip_special_tokens=True), n_tokens=n))
    return result


class HFRunner:
    """A local ``transformers`` checkpoint (image-text-to-text), greedy; CPU or GPU.

    Args:
        model_name_or_path: the checkpoint folder or Hub id.
        revision, dtype, device: how to load it (device: default CUDA when available).
        batch_size: prompts per ``generate`` call in :meth:`decode`.
        max_new_tokens: the answer budget.
        model, processor: an already loaded pair (the checkpoint is then not read).
    """

    name = "transformers"

    def __init__(self, model_name_or_path: str, revision: str | None = None, dtype: str = "auto",
                 device: str | None = None, batch_size: int = 8, max_new_tokens: int = 256,
                 model: Any = None, processor: Any = None):
        if model is None or processor is None:
            model, processor = load_model_and_processor(model_name_or_path, revision, dtype, device)
        self.model, self.processor = model, processor
        self.batch_size, self.max_new_tokens = batch_size, max_new_tokens

    def generate(self, messages: Sequence[dict[str, Any]]) -> str:
        """One greedy answer to chat ``messages`` (:class:`Runner`), the image given in its image part."""
        import torch

        messages = fill_images(messages, pil_image(image_of(messages)))
        inputs = self.processor.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt",
            **CHAT_TEMPLATE_KWARGS,
        ).to(self.model.device)
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        new_tokens = out[:, inputs["input_ids"].shape[1]:]
        return self.processor.batch_decode(new_tokens, skip_special_tokens=True)[0]

    def prompt(self, step: Step, view: View | str, contract: Contract | str, coord_space: str | None = None) -> str:
        """The chat-template text of a step's prompt (what :meth:`decode` takes)."""
        return prompt_text(self.processor, step, view, contract, coord_space)

    def decode(self, prompts: Sequence[str], images: Sequence["Image"],
               prefixes: Sequence[str] | None = None) -> list[Decoded]:
        """Batched greedy decoding of chat-template texts, one image each, each after its forced prefix."""
        prefixes = list(prefixes) if prefixes is not None else [""] * len(prompts)
        out: list[Decoded] = []
        for i in range(0, len(prompts), self.batch_size):
            sl = slice(i, i + self.batch_size)
            out += greedy_generate(self.model, self.processor, prompts[sl], images[sl], prefixes[sl],
                                   self.max_new_tokens)
        return out

    def close(self) -> None:
        self.model = None


def shard_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """``k`` contiguous ``[start, end)`` ranges covering ``range(n)``, sizes differing by at most one."""
    base, extra = divmod(n, k)
    bounds, start = [], 0
    for r in range(k):
        end = start + base + (1 if r < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def visible_gpus() -> list[str]:
    """GPU ids this process may use: ``CUDA_VISIBLE_DEVICES`` if set, else every device torch sees."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip()]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except ImportError:  # pragma: no cover - torch is a dependency of every model baseline
        return []


def _vllm_replica(gpus: str, llm_kwargs: dict[str, Any], params_kwargs: dict[str, Any], conn: Any) -> None:
    """One data-parallel vLLM replica (a spawned process): its own GPUs, its own engine."""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus
    from vllm import LLM, SamplingParams

    llm = LLM(**llm_kwargs)
    params = SamplingParams(**params_kwargs)
    conn.send(("ready", gpus))
    while True:
        requests = conn.recv()
        if requests is None:
            break
        outs = llm.generate(requests, params, use_tqdm=False)
        conn.send([(o.outputs[0].text, len(o.outputs[0].token_ids)) for o in outs])


class VLLMRunner:
    """Greedy decoding with vLLM (GPU, continuous batching). Optional dependency: ``pip install vllm``.

    ``tensor_parallel_size`` GPUs hold one model replica (vLLM's tensor parallelism).
    ``data_parallel_size`` replicas run side by side: each is a separate process with its own
    ``tensor_parallel_size`` GPUs (taken in order from the visible ones) and its own engine,
    and every ``generate`` call is split into contiguous shards, one per replica, whose
    outputs are put back in order. (vLLM's own ``LLM(data_parallel_size=k)`` refuses
    single-process use; for a dense model the replicas need no coordination.)
    """

    name = "vllm"

    def __init__(self, model_name_or_path: str, revision: str | None = None, dtype: str = "auto",
                 device: str | None = None, batch_size: int = 256, max_new_tokens: int = 256,
                 seed: int = 0, gpu_memory_utilization: float = 0.85, max_model_len: int | None = 16384,
                 tensor_parallel_size: int = 1, data_parallel_size: int = 1, ignore_eos: bool = False):
        from mag_dataset.errors import UserError

        if tensor_parallel_size < 1 or data_parallel_size < 1:
            raise UserError("tensor_parallel_size and data_parallel_size must be >= 1")
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise UserError(f"the vllm backend needs vLLM (pip install vllm): {e}") from None
        from mag_dataset.vlm_processor import load_processor

        self.processor = load_processor(model_name_or_path, revision=revision)
        llm_kwargs = dict(model=model_name_or_path, revision=revision, dtype=dtype, seed=seed,
                          limit_mm_per_prompt={"image": 1}, gpu_memory_utilization=gpu_memory_utilization,
                          max_model_len=max_model_len, tensor_parallel_size=tensor_parallel_size)
        params_kwargs = dict(temperature=0.0, max_tokens=max_new_tokens, seed=seed, ignore_eos=ignore_eos)
        self.batch_size = batch_size
        self.tensor_parallel_size, self.data_parallel_size = tensor_parallel_size, data_parallel_size
        self.replicas: list[tuple[Any, Any, str]] = []  # (process, connection, GPU ids)
        if data_parallel_size == 1:
            self.llm = LLM(**llm_kwargs)
            self.params = SamplingParams(**params_kwargs)
            return
        gpus = visible_gpus()
        need = tensor_parallel_size * data_parallel_size
        if len(gpus) < need:
            raise UserError(f"data_parallel_size {data_parallel_size} x tensor_parallel_size {tensor_parallel_size} "
                            f"needs {need} GPUs; {len(gpus)} visible")
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # CUDA cannot be forked
        for r in range(data_parallel_size):
            group = ",".join(gpus[r * tensor_parallel_size : (r + 1) * tensor_parallel_size])
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_vllm_replica, args=(group, llm_kwargs, params_kwargs, child), daemon=True)
            proc.start()
            self.replicas.append((proc, parent, group))
        for proc, conn, group in self.replicas:
            if not conn.poll(3600) or conn.recv()[0] != "ready":
                self.close()
                raise UserError(f"vLLM replica on GPUs {group} did not start")

    def prompt(self, step: Step, view: View | str, contract: Contract | str, coord_space: str | None = None) -> str:
        return prompt_text(self.processor, step, view, contract, coord_space)

    def generate(self, messages: Sequence[dict[str, Any]]) -> str:
        """One greedy answer to chat ``messages`` (:class:`Runner`): the chat-template text
        through :meth:`decode`."""
        return self.decode([chat_text(self.processor, messages)], [pil_image(image_of(messages))])[0].text

    def decode(self, prompts: Sequence[str], images: Sequence["Image"],
               prefixes: Sequence[str] | None = None) -> list[Decoded]:
        """Batched greedy decoding of chat-template texts, one image each, each after its forced prefix."""
        prefixes = list(prefixes) if prefixes is not None else [""] * len(prompts)
        requests = [{"prompt": p + f, "multi_modal_data": {"image": im}}
                    for p, f, im in zip(prompts, prefixes, images)]
        if not self.replicas:
            outs = self.llm.generate(requests, self.params, use_tqdm=False)
            pairs = [(o.outputs[0].text, len(o.outputs[0].token_ids)) for o in outs]
        else:
            bounds = shard_bounds(len(requests), len(self.replicas))
            for (_, conn, _), (a, b) in zip(self.replicas, bounds):
                conn.send(requests[a:b])
            pairs = [pair for _, conn, _ in self.replicas for pair in conn.recv()]
        return [Decoded(prefix=f, generated=text, n_tokens=n) for f, (text, n) in zip(prefixes, pairs)]

    def close(self) -> None:
        """Stop the data-parallel replicas (if any)."""
        for proc, conn, _ in self.replicas:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            proc.join(timeout=60)
            if proc.is_alive():
                proc.terminate()
        self.replicas = []


def openai_request(messages: Sequence[dict[str, Any]], params: dict[str, Any] | None = None, *,
                   text_as_string: bool = False) -> dict[str, Any]:
    """The chat-completions request of ``messages``: OpenAI content parts (the image as a
    base64 PNG data URL), then ``params``.

    Args:
        messages: chat messages (:func:`step_messages`), the image in the image part.
        params: request parameters (``max_tokens``, ``seed``...).
        text_as_string: send a turn whose parts are all text as one string.
    """
    from mag_dataset.llm_client import fill_images as openai_messages

    image = image_of(messages)
    out = openai_messages(_without_images(messages), [] if image is None else [png_bytes(image)])
    if text_as_string:
        out = [{**m, "content": "".join(p["text"] for p in m["content"])}
               if isinstance(m["content"], list) and all(p.get("type") == "text" for p in m["content"]) else m
               for m in out]
    return {"messages": out, **(params or {})}


class OpenAIRunner:
    """An OpenAI-compatible chat-completions endpoint (:class:`mag_dataset.llm_client.ChatClient`).

    Args:
        base_url: the endpoint root with its version prefix.
        model: the model name sent.
        params: request parameters merged into every request (``max_tokens``, ``seed``...).
        text_as_string: send a turn whose parts are all text as one string (every
            OpenAI-compatible server accepts that; the API baseline does).
        **client: :class:`~mag_dataset.llm_client.ChatClient` settings (``api_key_env``,
            ``cache_dir``, ``timeout``, ``max_retries``, ``concurrency``, ``backoff``).

    Raises:
        mag_dataset.llm_client.LLMError: a bad endpoint or setting.
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, *, params: dict[str, Any] | None = None,
                 text_as_string: bool = False, **client: Any):
        from mag_dataset.llm_client import ChatClient

        self.client = ChatClient(base_url, model, **client)
        self.params = dict(params or {})
        self.text_as_string = text_as_string

    def request(self, messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The chat-completions request of ``messages`` (:func:`openai_request` with this runner's settings)."""
        return openai_request(messages, self.params, text_as_string=self.text_as_string)

    def generate(self, messages: Sequence[dict[str, Any]]) -> str:
        """The endpoint's answer to ``messages`` (:class:`Runner`)."""
        req = self.request(messages)
        return self.client.complete(req.pop("messages"), **req)

    def generate_many(self, batch: Sequence[Sequence[dict[str, Any]]], return_exceptions: bool = False) -> list[Any]:
        """Answers to many message lists, ``concurrency`` at a time, in order (a failed one is
        its exception with ``return_exceptions``)."""
        return self.client.map([self.request(m) for m in batch], return_exceptions=return_exceptions)

    def close(self) -> None:
        self.client.close()


class HeuristicRunner:
    """The no-model baseline behind the runner interface: it reads the candidate menu of the
    step the messages were built from (:func:`step_messages`), never the prompt text.

    Args:
        menu: the candidate menu to match against instead of the step's own (the coord view's
            rows carry none), or None.
    """

    name = "heuristic"

    def generate(self, messages: Sequence[dict[str, Any]], menu: Sequence[Any] | None = None) -> str:
        """The heuristic's output for the step of ``messages`` (:class:`Runner`).

        Raises:
            TypeError: messages not built by :func:`step_messages` (no step to read).
        """
        from mag_dataset.heuristic import heuristic_output

        if not isinstance(messages, StepMessages):
            raise TypeError("the heuristic runner reads the step, not the prompt: build the messages with "
                            "mag_dataset.runners.step_messages")
        return heuristic_output(messages.step, messages.view, messages.contract, menu=menu)

    def close(self) -> None:
        pass


#: runner kind -> class. A literal table (greppable, nothing registers itself on import), read by ``make_runner``.
RUNNERS: dict[str, type] = {
    "heuristic": HeuristicRunner, "transformers": HFRunner, "vllm": VLLMRunner, "openai": OpenAIRunner,
}


def make_runner(kind: str, *args: Any, **kwargs: Any) -> Runner:
    """Make the runner of ``kind`` (a key of :data:`RUNNERS`) with its own arguments.

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in RUNNERS:
        raise ValueError(f"unknown runner {kind!r}; choose one of {sorted(RUNNERS)}")
    return RUNNERS[kind](*args, **kwargs)


__all__ = [
    "CHAT_TEMPLATE_KWARGS", "Decoded", "HFRunner", "HeuristicRunner", "OpenAIRunner", "RUNNERS", "Runner", "StepMessages", "VLLMRunner",
    "chat_text", "fill_images", "openai_request", "greedy_generate", "image_of", "load_model_and_processor", "make_runner",
    "pil_image", "png_bytes", "prompt_text", "shard_bounds", "step_messages", "visible_gpus",
]
