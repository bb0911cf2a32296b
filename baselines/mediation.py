"""Forced-guide mediation: how much does the guide a model writes drive the action it takes?

WebMRE (arXiv 2609.27353) forces a guide as the decoding prefix of a guide-first (JG)
model and decodes the action greedily, over all 1,220 SoM test steps with Qwen3.5-9B:
own guide .422, gold guide .684, another step's guide .055, a paraphrase that renames the
target .554 (step action accuracy). This script scores the free decoding and the four
forced conditions:

* ``free`` — the model decodes freely (nothing forced); scored as it is.
* ``own`` — its own guide from the free decoding (parsed by
  :func:`mag_dataset.parsing.parse_output`) is forced and the action decoded. A free
  output that fails the format gate is scored as it is (a format failure). Under greedy
  decoding with a token-aligned prefix this reproduces the free decoding whenever the
  model wrote its JSON canonically; ``own_vs_free`` in ``mediation.json`` (and the line
  under the table) reports on how many forced steps the two outputs agree (same text,
  same parsed action), so the paper's "own guide reproduces free decoding" is checked,
  not assumed.
* ``gold`` — the step's gold guide.
* ``other`` — the gold guide of a step of *another task* (``--other_scope task``, the
  default; ``step``: any other step of the split) with a different guide, drawn with
  ``random.Random(seed)`` (fixed, so reruns force the same guides).
* ``paraphrase`` — a guide read from ``--paraphrases FILE`` (JSONL ``{"step_id", "guide"}``,
  one per step of the split); without the file the row is printed as n/a. The file is
  produced by :mod:`baselines.paraphrase` (an LLM endpoint rewrites the gold guide so that
  it names the target by its function, not its on-screen label; cached; the label is
  checked absent).

The forced prefix is :func:`baselines.common.guide_prefix` (the rendered JG answer up to
the ``"action":`` key, cut on a token boundary of the trained answer), so what is scored is
``prefix + decoded action``, through the library scorer
(:func:`mag_dataset.scoring.score_predictions`, contract JG): the table reports step action
accuracy (SAA), element accuracy and the format-gate pass rate per condition.

Launch::

    python -m baselines.paraphrase --dataset mag/webmre --view som --split test \
        --base_url https://api.openai.com/v1 --model gpt-5.5 --output data/paraphrases.jsonl
    python -m baselines.mediation --model_name_or_path runs/sft-qwen35-9b-som-JG-s0 \
        --dataset mag/webmre --view som --paraphrases data/paraphrases.jsonl \
        --output_dir results/mediation-9b --backend vllm
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from baselines import common
from mag_dataset import runners
from mag_dataset.actions import Contract
from mag_dataset.fileio import atomic_write, atomic_write_json

#: rows of the table: the free decoding, then the four forced-guide conditions
CONDITIONS: tuple[str, ...] = ("free", "own", "gold", "other", "paraphrase")
FORCED: tuple[str, ...] = CONDITIONS[1:]
OTHER_SCOPES: tuple[str, ...] = ("task", "step")
#: the contract of every condition: the guide first, so that a forced guide is a decoding prefix
CONTRACT = Contract.JG


@dataclass
class MediationArguments:
    model_name_or_path: str = field(metadata={"help": "a guide-first (JG) checkpoint folder or Hub id"})
    output_dir: str = field(metadata={"help": "folder for per-condition predictions and the table"})
    paraphrases: str | None = field(default=None, metadata={"help": "JSONL of {step_id, guide} paraphrases"})
    model_revision: str | None = field(default=None, metadata={"help": "Hub revision of the model"})
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som or coord"})
    split: str = field(default="test", metadata={"help": "train or test"})
    seed: int = field(default=0, metadata={"help": "seed of the other-step draw"})
    other_scope: str = field(default="task", metadata={
        "help": "where the 'other' guide comes from: task (a step of another task) or step (any other step)"})
    backend: str = field(default="transformers", metadata={"help": "transformers or vllm"})
    batch_size: int = field(default=8, metadata={"help": "prompts per generate call"})
    tensor_parallel_size: int = field(default=1, metadata={"help": "GPUs per model replica (vLLM backend)"})
    data_parallel_size: int = field(default=1, metadata={"help": "model replicas (vLLM backend)"})
    max_new_tokens: int = field(default=256, metadata={"help": "decoding budget (free run and forced action)"})
    dtype: str = field(default="auto", metadata={"help": "auto, bfloat16, float16 or float32"})
    device: str | None = field(default=None, metadata={"help": "cuda, cpu, ... (transformers backend)"})
    limit: int | None = field(default=None, metadata={"help": "only the first N steps (smoke tests)"})


def read_paraphrases(path: str | Path, step_ids: Sequence[str]) -> dict[str, str]:
    """Read ``{"step_id", "guide"}`` lines; every step of the split needs one.

    Raises:
        mag_dataset.errors.UserError: a malformed line, an unknown or duplicate id, or a missing step.
    """
    from mag_dataset.errors import UserError

    known = set(step_ids)
    out: dict[str, str] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read paraphrases {path}: {e}") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("step_id"), str) or not isinstance(rec.get("guide"), str):
            raise UserError(f'{path}:{n}: expected {{"step_id": str, "guide": str}}')
        sid = rec["step_id"]
        if sid not in known:
            raise UserError(f"{path}:{n}: unknown step_id {sid!r}")
        if sid in out:
            raise UserError(f"{path}:{n}: duplicate step_id {sid!r}")
        out[sid] = rec["guide"]
    missing = [s for s in step_ids if s not in out]
    if missing:
        raise UserError(f"{path}: {len(missing)} step(s) have no paraphrase, e.g. {missing[0]!r}")
    return out


def other_step_guides(steps: Sequence[Any], seed: int, scope: str = "task") -> list[str]:
    """For each step, the gold guide of another step with a different guide, drawn with ``seed``.

    Args:
        steps: the split's steps.
        seed: seed of the draw (``random.Random``).
        scope: ``task`` — only steps of another task (a step of the same task would give the
            model a guide that belongs to its own episode); ``step`` — any other step.

    Raises:
        ValueError: an unknown scope, or a step with no eligible other guide.
    """
    if scope not in OTHER_SCOPES:
        raise ValueError(f"unknown other_scope {scope!r}; choose one of {list(OTHER_SCOPES)}")
    rng = random.Random(seed)
    guides = [s.guide for s in steps]
    out = []
    for i, s in enumerate(steps):
        pool = [j for j, g in enumerate(guides)
                if j != i and g != s.guide and (scope == "step" or steps[j].task_id != s.task_id)]
        if not pool:
            where = "another task" if scope == "task" else "another step"
            raise ValueError(f"the other-guide condition needs a different guide from {where} (step {s.step_id})")
        out.append(guides[rng.choice(pool)])
    return out


def forced_guides(
    steps: Sequence[Any], own: Sequence[str | None], paraphrases: dict[str, str] | None, seed: int,
    other_scope: str = "task",
) -> dict[str, list[str | None]]:
    """Condition -> per-step guide to force (None: no guide; the free output is scored as is)."""
    out: dict[str, list[str | None]] = {
        "own": list(own),
        "gold": [s.guide for s in steps],
        "other": list(other_step_guides(steps, seed, other_scope)),
    }
    if paraphrases is not None:
        out["paraphrase"] = [paraphrases[s.step_id] for s in steps]
    return out


def format_table(rows: list[dict[str, Any]], agreement: dict[str, Any] | None = None) -> str:
    head = f"{'condition':<12} {'steps':>6} {'forced':>7} {'SAA':>7} {'element':>8} {'format ok':>10}"
    lines = [head, "-" * len(head)]

    def f(v: float | None) -> str:
        return "   n/a" if v is None else f"{v:.3f}"

    for r in rows:
        lines.append(f"{r['condition']:<12} {r['steps']:>6} {r['forced']:>7} {f(r['saa']):>7} "
                     f"{f(r['target_acc']):>8} {f(r['ofcr']):>10}")
    if agreement is not None:
        lines.append(f"own vs free: {agreement['same_text']}/{agreement['forced']} forced steps decode the same "
                     f"text, {agreement['same_action']}/{agreement['forced']} the same action")
    return "\n".join(lines)


def own_vs_free(free: Sequence[str], own: Sequence[str], forced: Sequence[int], view: Any) -> dict[str, Any]:
    """How often forcing the model's own guide reproduces its free decoding.

    Args:
        free: the free outputs, one per step.
        own: the outputs with the own guide forced (steps without one keep the free output).
        forced: indices of the steps whose own guide was forced.
        view: the view (the actions are parsed in it).

    Returns:
        ``{"forced", "same_text", "same_action", "same_text_rate", "same_action_rate"}``.
    """
    from mag_dataset.parsing import parse_output

    same_text = sum(1 for i in forced if own[i] == free[i])
    same_action = 0
    for i in forced:
        a, b = parse_output(own[i], view, "JG"), parse_output(free[i], view, "JG")
        same_action += int(a.ok and b.ok and a.action == b.action)
    n = len(forced)
    return {"forced": n, "same_text": same_text, "same_action": same_action,
            "same_text_rate": same_text / n if n else None, "same_action_rate": same_action / n if n else None}


#: The paraphrase row when no paraphrase file is given: in the table, marked not run.
NOT_RUN_ROW: dict[str, Any] = {"condition": "paraphrase", "steps": 0, "forced": 0, "saa": None, "target_acc": None,
                               "ofcr": None}


def _inputs(args: MediationArguments, examples: Sequence[common.Example] | None):
    """The view, the examples and their steps, and the paraphrases; every argument checked before a model loads."""
    from mag_dataset.errors import UserError

    view, _ = common.view_and_contract(args.view, CONTRACT.value)
    if args.other_scope not in OTHER_SCOPES:
        raise UserError(f"unknown other_scope {args.other_scope!r}; choose one of {list(OTHER_SCOPES)}")
    if examples is None:
        examples = common.load_examples(args.dataset, view, args.split, args.limit)
    elif args.limit is not None:
        examples = list(examples)[: args.limit]
    steps = [e.step for e in examples]
    paraphrases = read_paraphrases(args.paraphrases, [s.step_id for s in steps]) if args.paraphrases else None
    try:  # before any model is loaded: a split where the draw is impossible fails at once
        other_step_guides(steps, args.seed, args.other_scope)
    except ValueError as e:
        raise UserError(str(e)) from None
    gold = common.gold_for(steps, view, args.dataset, args.split)  # coord: JG's consistency reads the som menus
    return view, examples, steps, paraphrases, gold


def _backend(args: MediationArguments) -> Any:
    return common.make_backend(
        args.backend, args.model_name_or_path, revision=args.model_revision, dtype=args.dtype,
        device=args.device, batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, seed=args.seed,
        tensor_parallel_size=args.tensor_parallel_size, data_parallel_size=args.data_parallel_size,
    )


def _generate(backend: Any, prompts: list[str], examples: Sequence[common.Example], chunk: int, idx: list[int],
              prefixes: list[str] | None) -> list[runners.Decoded]:
    """Decode the steps ``idx`` (with their forced ``prefixes``), ``chunk`` at a time: screenshots
    are decoded chunk by chunk, never the whole split at once."""
    out: list[runners.Decoded] = []
    for k in range(0, len(idx), chunk):
        part = idx[k : k + chunk]
        out += backend.decode([prompts[i] for i in part], [examples[i].image for i in part],
                                None if prefixes is None else prefixes[k : k + chunk])
    return out


def _own_guides(free: Sequence[str], view: Any) -> list[str | None]:
    """The guide of each free output that passes the format gate (else ``None``: nothing to force)."""
    from mag_dataset.parsing import parse_output

    own = []
    for text in free:
        parsed = parse_output(text, view, CONTRACT)
        own.append(parsed.guide if parsed.ok and parsed.guide else None)
    return own


def _score(out_dir: Path, condition: str, outputs: list[str], gold: Any, view: Any,
           n_forced: int) -> dict[str, Any]:
    """Write one condition's predictions and score them (contract JG): its row of the table."""
    from mag_dataset.predictions import Prediction, write_predictions
    from mag_dataset.scoring import score_predictions

    preds = [Prediction(s.step_id, o, 0) for s, o in zip(gold, outputs)]
    write_predictions(out_dir / f"{condition}.jsonl", preds)
    report = score_predictions(preds, gold, view, CONTRACT, bootstrap_resamples=0)
    return {"condition": condition, "steps": len(gold), "forced": n_forced,
            "saa": report.value("saa"), "target_acc": report.value("target_acc"), "ofcr": report.value("ofcr")}


def _write_results(args: MediationArguments, out_dir: Path, view: Any, rows: list[dict[str, Any]],
                   agreement: dict[str, Any], decoded_log: dict[str, list[dict[str, Any]]], table: str) -> None:
    atomic_write_json(out_dir / "mediation.json", {
        "kind": "mag-mediation",
        "model": args.model_name_or_path,
        "model_revision": args.model_revision,
        "dataset": args.dataset,
        "split": args.split,
        "view": view.value,
        "contract": CONTRACT.value,
        "seed": args.seed,
        "other_scope": args.other_scope,
        "paraphrases": args.paraphrases,
        "rows": rows,
        "own_vs_free": agreement,
        "decoded": decoded_log,
        "environment": common.environment(),
    })
    atomic_write(out_dir / "mediation.txt", table + "\n")


def run(args: MediationArguments, examples: Sequence[common.Example] | None = None,
        backend: Any = None) -> list[dict[str, Any]]:
    """Score the free decoding and the four forced conditions; write predictions and the table.

    Returns:
        One row per condition of :data:`CONDITIONS` (``paraphrase`` with n/a values when no
        paraphrase file is given).
    """
    view, examples, steps, paraphrases, gold = _inputs(args, examples)
    if backend is None:
        backend = _backend(args)
    processor = getattr(backend, "processor", None)
    if processor is not None and steps:
        common.check_guide_prefix_alignment(processor.tokenizer, steps[0], view)
    prompts = [backend.prompt(e.step, view, CONTRACT) for e in examples]
    chunk = max(1, args.batch_size)
    meter = common.Throughput()
    free = [d.text for d in _generate(backend, prompts, examples, chunk, list(range(len(examples))), None)]
    meter.add(len(examples))
    own = _own_guides(free, view)
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [_score(out_dir, "free", free, gold, view, 0)]
    decoded_log: dict[str, list[dict[str, Any]]] = {}
    outputs_by: dict[str, list[str]] = {"free": free}
    for condition, guides in forced_guides(steps, own, paraphrases, args.seed, args.other_scope).items():
        idx = [i for i, g in enumerate(guides) if g is not None]
        decoded = _generate(backend, prompts, examples, chunk, idx, [common.guide_prefix(guides[i]) for i in idx])
        meter.add(len(idx))
        outputs = list(free)  # steps without a guide to force keep their free output
        for i, d in zip(idx, decoded):
            outputs[i] = d.text
        rows.append(_score(out_dir, condition, outputs, gold, view, len(idx)))
        outputs_by[condition] = outputs
        decoded_log[condition] = [{"step_id": steps[i].step_id, "prefix": d.prefix, "generated": d.generated}
                                  for i, d in zip(idx, decoded)]
    if paraphrases is None:
        rows.append(dict(NOT_RUN_ROW))
    agreement = own_vs_free(free, outputs_by["own"], [i for i, g in enumerate(own) if g is not None], view)
    meter.report("mediation")
    table = format_table(rows, agreement)
    print(table)
    _write_results(args, out_dir, view, rows, agreement, decoded_log, table)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from mag_dataset.errors import UserError

    (args,) = common.parse_args([MediationArguments], argv)
    try:
        run(args)
    except UserError as e:
        print(f"mediation: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
