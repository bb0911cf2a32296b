"""No-model heuristic baseline: write a predictions JSONL for one split, view and contract.

The heuristic (:mod:`mag_dataset.heuristic`) text-matches the intent against the candidate
menu and writes template guides. It is a floor to compare models against, not a model. In
the coord view it clicks the centre of the chosen candidate's box, reading the menu of the
som row with the same step id, which the gold carries (coord rows carry no menu).

Launch::

    python -m baselines.heuristic --dataset bundled --view som --contract J --output preds/heuristic-som-J.jsonl
    python -m baselines.heuristic --config baselines/configs/heuristic.yaml --output preds.jsonl
    mag score --predictions preds/heuristic-som-J.jsonl --dataset bundled --view som --contract J
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence


@dataclass
class HeuristicArguments:
    output: str = field(metadata={"help": "predictions JSONL to write"})
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som or coord", "choices": ("som", "coord")})
    contract: str = field(default="J", metadata={"help": "A, G, J or JG", "choices": ("A", "G", "J", "JG")})
    split: str = field(default="test", metadata={"help": "train or test", "choices": ("train", "test")})


def parse_args(argv: Sequence[str] | None = None) -> HeuristicArguments:
    """Flags, with defaults from an optional ``--config FILE.yaml`` (flags win)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", type=Path, default=None)
    known, rest = pre.parse_known_args(argv)
    defaults: dict = {}
    if known.config is not None:
        import yaml

        try:
            defaults = yaml.safe_load(known.config.read_text("utf-8")) or {}
        except (OSError, yaml.YAMLError) as e:
            raise SystemExit(f"{known.config}: cannot read the config ({e})") from None
        if not isinstance(defaults, dict):
            raise SystemExit(f"{known.config}: the config must be a mapping of flag names to values")
        unknown = set(defaults) - {f.name for f in dataclasses.fields(HeuristicArguments)}
        if unknown:
            raise SystemExit(f"{known.config}: unknown keys {sorted(unknown)}")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], parents=[pre])
    for f in dataclasses.fields(HeuristicArguments):
        required = f.default is dataclasses.MISSING and f.name not in defaults
        default = defaults.get(f.name, None if f.default is dataclasses.MISSING else f.default)
        parser.add_argument(
            f"--{f.name}", default=default, required=required, help=f.metadata["help"], choices=f.metadata.get("choices")
        )
    ns = parser.parse_args(rest)
    for f in dataclasses.fields(HeuristicArguments):  # a config value skips argparse's choices check
        choices = f.metadata.get("choices")
        if choices is not None and getattr(ns, f.name) not in choices:
            parser.error(f"--{f.name} must be one of {', '.join(choices)}, got {getattr(ns, f.name)!r}")
    return HeuristicArguments(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(HeuristicArguments)})


def resolve_dataset(dataset: str) -> str:
    if dataset == "bundled":
        from mag_dataset.dataset import bundled_dataset

        return str(bundled_dataset())
    return dataset


def main(argv: Sequence[str] | None = None) -> int:
    from mag_dataset.actions import Contract, View
    from mag_dataset.dataset import load_gold
    from mag_dataset.heuristic import heuristic_predictions
    from mag_dataset.predictions import write_predictions

    args = parse_args(argv)
    view, contract = View(args.view), Contract(args.contract)
    try:  # the coord view's gold brings the som menus the heuristic reads
        gold = load_gold(resolve_dataset(args.dataset), view, args.split)
    except (OSError, ValueError) as e:  # a missing folder, an unreachable Hub repo, a bad row
        print(f"heuristic: cannot load {view.value}/{args.split} of dataset {args.dataset!r}: {e}", file=sys.stderr)
        return 2
    preds = heuristic_predictions(gold, view, contract)
    path = write_predictions(args.output, preds)
    print(f"wrote {len(preds)} predictions ({view.value}/{contract.value}, {args.split}) to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
