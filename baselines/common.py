"""Machinery shared by the model baselines: data, prompts, greedy decoding, provenance.

Only what more than one script needs lives here; each script under ``baselines/`` stays a
self-contained recipe (dataclass arguments, an optional YAML config, the launch command in
its docstring). Prompts, target rendering and output parsing always come from the library
(:mod:`mag_dataset.prompts`, :mod:`mag_dataset.parsing`); nothing here formats a prompt or
parses an answer by hand.

Run the scripts from the repository root as modules (``python -m baselines.infer ...``,
``accelerate launch -m baselines.sft ...``) so ``baselines`` is importable.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from mag_dataset.actions import CONTRACT_KEYS, Contract, View
from mag_dataset.schema import Step

if TYPE_CHECKING:  # pragma: no cover
    from PIL.Image import Image

#: Keyword arguments for every chat-template call. Qwen3.5 checkpoints ship a template that
#: opens a ``<think>`` block by default; the benchmark's answers are a bare JSON object, so
#: training and decoding both use the template's non-thinking form (an empty think block in
#: the generation prompt), and the two agree token for token.
CHAT_TEMPLATE_KWARGS: dict[str, Any] = {"enable_thinking": False}


class Example:
    """One benchmark step with its screenshot (the view's image: SoM or raw).

    ``image`` may be given as a zero-argument callable: it is then decoded on each access,
    so a split of thousands of screenshots is never held in memory at once.
    """

    __slots__ = ("step", "_image")

    def __init__(self, step: Step, image: Any):
        self.step = step
        self._image = image

    @property
    def image(self) -> "Image":
        return self._image() if callable(self._image) else self._image

    def __repr__(self) -> str:
        return f"Example({self.step.step_id!r})"


# ----------------------------------------------------------------------------- arguments


def parse_args(dataclass_types: Sequence[type], argv: Sequence[str] | None = None) -> tuple[Any, ...]:
    """Parse ``--config FILE.yaml`` plus command-line flags into the given dataclasses.

    The YAML file sets defaults; flags given on the command line win (TRL's ``TrlParser``).
    """
    from trl import TrlParser

    parser = TrlParser(tuple(dataclass_types))
    _negated_flag_help(parser)
    return tuple(parser.parse_args_and_config(args=None if argv is None else list(argv)))


def _negated_flag_help(parser: Any) -> None:
    """Word the ``--no_X`` flag of a boolean field that defaults to True as what it does.

    ``HfArgumentParser`` gives ``--no_progress`` the help of ``--progress`` ("show a progress
    bar"), the opposite of what it does.
    """
    for action in parser._actions:
        names = [o for o in action.option_strings if o.startswith("--no_")]
        if names and action.const is False and action.help:
            action.help = f"don't {action.help}" if action.help[:1].islower() else f"not: {action.help}"


def view_and_contract(view: str, contract: str) -> tuple[View, Contract]:
    """Validate ``view`` and ``contract`` strings, with a clear error for a user's typo."""
    from mag_dataset.cli import UserError

    try:
        v = View(view)
    except ValueError:
        raise UserError(f"unknown view {view!r}; choose one of {[x.value for x in View]}") from None
    try:
        c = Contract(contract)
    except ValueError:
        raise UserError(f"unknown contract {contract!r}; choose one of {[x.value for x in Contract]}") from None
    return v, c


# ----------------------------------------------------------------------------- data


def load_examples(dataset: str, view: View | str, split: str, limit: int | None = None) -> list[Example]:
    """Steps and screenshots of one split of one view, from a local folder or a Hub repo id.

    ``dataset="bundled"`` builds (once, cached) and uses the sample corpus shipped with the
    package. Screenshots are decoded lazily, when an example's ``image`` is read.

    Args:
        dataset: folder of a built dataset, a Hub repo id, or ``bundled``.
        view: ``som`` or ``coord``.
        split: ``train`` or ``test``.
        limit: keep only the first ``limit`` rows (in the dataset's stored order).
    """
    from mag_dataset import dataset as ds_lib

    from mag_dataset.cli import UserError

    source: str | Path = ds_lib.bundled_dataset() if dataset == "bundled" else dataset
    try:
        ds = ds_lib.load_view(source, View(view), split)
    except (FileNotFoundError, ValueError) as e:
        raise UserError(f"cannot load {dataset!r} ({view}, {split}): {e}") from None
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    rows = ds.remove_columns(["screenshot"]).to_list()

    def loader(i: int) -> Any:
        return lambda: ds[i]["screenshot"].convert("RGB")

    return [Example(ds_lib.row_to_step(row), loader(i)) for i, row in enumerate(rows)]


def dataset_revision(dataset: str) -> str | None:
    """A revision string for provenance: the Hub commit if resolvable, else None (local)."""
    if dataset == "bundled" or os.path.isdir(dataset):
        return None
    try:  # offline, or no such repo: provenance simply lacks the revision
        from huggingface_hub import HfApi

        return HfApi().dataset_info(dataset).sha
    except Exception:
        return None


# ----------------------------------------------------------------------------- model


def load_model_and_processor(
    model_name_or_path: str,
    revision: str | None = None,
    dtype: str = "auto",
    device: str | None = None,
    attn_implementation: str | None = None,
) -> tuple[Any, Any]:
    """Load an ``AutoModelForImageTextToText`` and its processor, eval mode, on ``device``.

    Without torchvision, the Qwen3-VL processor is loaded through the image-only shim of
    :mod:`mag_dataset.testing.tiny_vlm` (it needs no video processor to read screenshots).
    """
    import torch
    from transformers import AutoModelForImageTextToText

    from mag_dataset.testing.tiny_vlm import load_processor

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


def coord_space_arg(view: View | str, value: str | None) -> str:
    """Validate a ``--coord_space`` argument; returns its canonical name (``pixels`` default).

    Raises:
        mag_dataset.cli.UserError: an unknown space, or a non-pixel space in the som view.
    """
    from mag_dataset.cli import UserError
    from mag_dataset.coords import parse_coord_space

    try:
        name = parse_coord_space(value).name
    except ValueError as e:
        raise UserError(f"--coord_space: {e}") from None
    if name != "pixels" and View(view) is not View.COORD:
        raise UserError(f"--coord_space {name} applies to the coord view only")
    return name


def guide_prefix(guide: str, contract: Contract | str = Contract.JG) -> str:
    """The start of a guide-first answer up to the ``"action":`` key, without the space after it.

    Forcing this string after the generation prompt makes the model decode the action that
    a given guide induces (WebMRE's forced-guide mediation; MG-GRPO's mediated reward).
    Derived from :func:`mag_dataset.prompts.render_output`, so it is byte-identical to the
    start of a rendered gold answer.

    The prefix stops *before* the space that follows ``"action":``. Qwen's byte-level BPE
    pre-tokenizer glues that space to the next ``{"`` (the trained answer reads
    ``'":', 'Ġ{"'``); a prefix ending with the space would be encoded ``'":', 'Ġ'``, a
    token the model never saw there in training. Cut before the space, the prefix's tokens
    are exactly the first tokens of the full answer (:func:`prefix_is_token_aligned`).

    Raises:
        ValueError: the contract does not put the guide before the action.
    """
    from mag_dataset.prompts import render_output

    contract = Contract(contract)
    keys = CONTRACT_KEYS[contract]
    if keys[:2] != ("guide", "action"):
        raise ValueError(f"contract {contract.value} does not write the guide before the action; use JG")
    sentinel = {"type": "\x00sentinel\x00"}
    full = render_output(sentinel, guide, contract)
    return full[: full.index(json.dumps(sentinel, ensure_ascii=False))].rstrip()


def prefix_is_token_aligned(tokenizer: Any, prefix: str, full: str) -> bool:
    """Whether ``prefix``'s tokens are the first tokens of ``full`` (no token straddles the cut).

    Args:
        tokenizer: a Hugging Face tokenizer.
        prefix: a forced answer prefix, e.g. :func:`guide_prefix`.
        full: a complete answer starting with ``prefix``.
    """
    if not full.startswith(prefix):
        return False
    a = tokenizer(full, add_special_tokens=False)["input_ids"]
    b = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    return a[: len(b)] == b


def check_guide_prefix_alignment(tokenizer: Any, step: Step, view: View | str) -> None:
    """Refuse a tokenizer that would split :func:`guide_prefix` differently from the trained answer.

    Raises:
        mag_dataset.cli.UserError: the forced prefix of ``step``'s gold guide does not end on
            a token boundary of its gold JG answer.
    """
    from mag_dataset.cli import UserError
    from mag_dataset.prompts import render_target

    full = render_target(step, view, Contract.JG)
    if not prefix_is_token_aligned(tokenizer, guide_prefix(step.guide), full):
        raise UserError(f"this tokenizer does not split the forced guide prefix where it splits the trained "
                        f"answer (step {step.step_id}); forcing it would start from a token never seen in training")


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


class TransformersBackend:
    """Greedy decoding with ``transformers`` ``generate``, batched; works on CPU and GPU."""

    name = "transformers"

    def __init__(self, model_name_or_path: str, revision: str | None = None, dtype: str = "auto",
                 device: str | None = None, batch_size: int = 8, max_new_tokens: int = 256,
                 model: Any = None, processor: Any = None):
        if model is None or processor is None:
            model, processor = load_model_and_processor(model_name_or_path, revision, dtype, device)
        self.model, self.processor = model, processor
        self.batch_size, self.max_new_tokens = batch_size, max_new_tokens

    def prompt(self, step: Step, view: View | str, contract: Contract | str, coord_space: str | None = None) -> str:
        return prompt_text(self.processor, step, view, contract, coord_space)

    def generate(self, prompts: Sequence[str], images: Sequence["Image"],
                 prefixes: Sequence[str] | None = None) -> list[Decoded]:
        prefixes = list(prefixes) if prefixes is not None else [""] * len(prompts)
        out: list[Decoded] = []
        for i in range(0, len(prompts), self.batch_size):
            sl = slice(i, i + self.batch_size)
            out += greedy_generate(self.model, self.processor, prompts[sl], images[sl], prefixes[sl],
                                   self.max_new_tokens)
        return out


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


class VLLMBackend:
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
        from mag_dataset.cli import UserError

        if tensor_parallel_size < 1 or data_parallel_size < 1:
            raise UserError("tensor_parallel_size and data_parallel_size must be >= 1")
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise UserError(f"the vllm backend needs vLLM (pip install vllm): {e}") from None
        from mag_dataset.testing.tiny_vlm import load_processor

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

    def generate(self, prompts: Sequence[str], images: Sequence["Image"],
                 prefixes: Sequence[str] | None = None) -> list[Decoded]:
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


BACKENDS = {"transformers": TransformersBackend, "vllm": VLLMBackend}


def make_backend(name: str, model_name_or_path: str, **kwargs: Any) -> Any:
    """Instantiate a decoding backend by name (``transformers`` or ``vllm``).

    Raises:
        mag_dataset.cli.UserError: an unknown backend, or tensor / data parallelism asked of
            the transformers backend (one process, one device).
    """
    from mag_dataset.cli import UserError

    if name not in BACKENDS:
        raise UserError(f"unknown backend {name!r}; choose one of {sorted(BACKENDS)}")
    if name == "transformers":
        kwargs.pop("seed", None)
        for key in ("tensor_parallel_size", "data_parallel_size"):
            if kwargs.pop(key, 1) != 1:
                raise UserError(f"--{key} needs --backend vllm (the transformers backend decodes on one device)")
    return BACKENDS[name](model_name_or_path, **kwargs)


# ----------------------------------------------------------------------------- outputs


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def environment() -> dict[str, str]:
    """Versions of the software that produced a result."""
    import importlib.metadata as md

    env = {"python": platform.python_version()}
    for name in ("mag_dataset", "torch", "transformers", "trl", "peft", "vllm"):
        try:
            env[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return env


def provenance_path(predictions_path: str | os.PathLike) -> Path:
    """Sidecar file holding a predictions file's provenance: ``preds.jsonl`` -> ``preds.provenance.json``."""
    p = Path(predictions_path)
    return p.with_name(p.name[: -len(p.suffix)] + ".provenance.json" if p.suffix else p.name + ".provenance.json")


def jsonl_lines(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


class Throughput:
    """Counts steps and prints ``steps/s`` (to stderr, so stdout stays machine-readable)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.steps = 0

    def add(self, n: int) -> None:
        self.steps += n

    @property
    def rate(self) -> float:
        dt = time.perf_counter() - self.start
        return self.steps / dt if dt > 0 else 0.0

    def report(self, label: str) -> str:
        line = f"{label}: {self.steps} steps in {time.perf_counter() - self.start:.1f} s = {self.rate:.2f} steps/s"
        print(line, file=sys.stderr, flush=True)
        return line
