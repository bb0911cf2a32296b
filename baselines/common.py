"""Machinery shared by the model baselines: data, prompts, greedy decoding, provenance.

Only what more than one script needs lives here; each script under ``baselines/`` stays a
self-contained recipe (dataclass arguments, an optional YAML config, the launch command in
its docstring). Prompts, target rendering and output parsing always come from the library
(:mod:`mag_dataset.prompts`, :mod:`mag_dataset.parsing`); nothing here formats a prompt or
parses an answer by hand. Models are reached through the library's runners
(:mod:`mag_dataset.runners`: one ``generate(messages) -> str`` interface, the same that live
evaluation and the API baseline use); the decoding backends here are those runners, with
their batched ``decode`` of many prompts after forced prefixes.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from mag_dataset.actions import CONTRACT_KEYS, Contract, View
from mag_dataset.runners import HFRunner, VLLMRunner
from mag_dataset.schema import Step

if TYPE_CHECKING:  # pragma: no cover
    from PIL.Image import Image


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
    from mag_dataset.errors import UserError

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

    from mag_dataset.errors import UserError

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


def gold_for(steps: Sequence[Step], view: View | str, dataset: str, split: str) -> Any:
    """The scoring input of ``steps`` (a :class:`~mag_dataset.scoring.gold.GoldSteps`): in the coord
    view with the som menus of the same split, loaded from ``dataset``, which the
    guide-action consistency of J and JG reads (coord rows carry no menu).

    Args:
        steps: the steps scored (a split, or the first rows of one).
        view: ``som`` or ``coord``.
        dataset: folder of a built dataset, a Hub repo id, or ``bundled`` (coord view only).
        split: the split the steps come from.
    """
    from mag_dataset.errors import UserError
    from mag_dataset.dataset import load_gold
    from mag_dataset.scoring.gold import GoldSteps

    view = View(view)
    if view is View.SOM:
        return GoldSteps(view, tuple(steps))
    try:
        full = load_gold(dataset, view, split)
        return GoldSteps(view, tuple(steps), {s.step_id: full.menu(s.step_id) for s in steps})
    except (OSError, KeyError, ValueError) as e:
        raise UserError(f"cannot load the som menus of {dataset!r} ({split}) for the coord view: {e}") from None


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


def coord_space_arg(view: View | str, value: str | None) -> str:
    """Validate a ``--coord_space`` argument; returns its canonical name (``pixels`` default).

    Raises:
        mag_dataset.errors.UserError: an unknown space, or a non-pixel space in the som view.
    """
    from mag_dataset.errors import UserError
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
        mag_dataset.errors.UserError: the forced prefix of ``step``'s gold guide does not end on
            a token boundary of its gold JG answer.
    """
    from mag_dataset.errors import UserError
    from mag_dataset.prompts import render_target

    full = render_target(step, view, Contract.JG)
    if not prefix_is_token_aligned(tokenizer, guide_prefix(step.guide), full):
        raise UserError(f"this tokenizer does not split the forced guide prefix where it splits the trained "
                        f"answer (step {step.step_id}); forcing it would start from a token never seen in training")


#: The decoding backends of the baselines are the library's runners (:mod:`mag_dataset.runners`):
#: one interface, ``generate(messages) -> str``, plus batched ``decode`` with forced prefixes.
TransformersBackend = HFRunner
VLLMBackend = VLLMRunner
BACKENDS = {"transformers": TransformersBackend, "vllm": VLLMBackend}


def make_backend(name: str, model_name_or_path: str, **kwargs: Any) -> Any:
    """Instantiate a decoding backend by name (``transformers`` or ``vllm``).

    Raises:
        mag_dataset.errors.UserError: an unknown backend, or tensor / data parallelism asked of
            the transformers backend (one process, one device).
    """
    from mag_dataset.errors import UserError

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
