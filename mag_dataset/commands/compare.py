"""``mag compare``: paired comparison of two predictions files on the same split.

Example::

    mag compare --dataset bundled --view som --baseline a.jsonl --contract-a A \\
        --candidate j.jsonl --contract-b J --split test --out compare.json

Each file may hold one or several seeds. Prints a table (difference B - A per metric with a
paired task-bootstrap interval, a task sign-flip p-value on the same unit, Holm-adjusted;
exact McNemar beside it for binary metrics of two single-seed files) and
writes the JSON; see :mod:`mag_dataset.compare` for the statistics.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mag_dataset.actions import Contract, View
from mag_dataset.commands import options
from mag_dataset.fileio import atomic_write


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from mag_dataset.compare import COMPARE_RESAMPLES, COMPARE_SEED

    parser.add_argument("--dataset", required=True, help="built dataset folder, Hub repo id, or 'bundled'")
    options.add_view_contract_split(parser, contract=False)
    parser.add_argument("--baseline", required=True, type=Path, help="predictions JSONL of model A")
    parser.add_argument("--contract-a", required=True, choices=[c.value for c in Contract],
                        help="output contract of model A's predictions")
    parser.add_argument("--candidate", required=True, type=Path, help="predictions JSONL of model B")
    parser.add_argument("--contract-b", required=True, choices=[c.value for c in Contract],
                        help="output contract of model B's predictions")
    parser.add_argument("--coord-space-a", default=None, help="coord view: A's coordinate space (default: sidecar, else pixels)")
    parser.add_argument("--coord-space-b", default=None, help="coord view: B's coordinate space (default: sidecar, else pixels)")
    options.add_verdicts(parser)
    parser.add_argument("--resamples", type=int, default=COMPARE_RESAMPLES, help="bootstrap / sign-flip draws")
    parser.add_argument("--seed", type=int, default=COMPARE_SEED, help="seed of the draws")
    parser.add_argument("--allow-missing", action="store_true", help="score steps without a prediction as format failures")
    options.add_out(parser, "write the comparison JSON here", old="--output", default=None, metavar="FILE")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.dataset import load_gold
    from mag_dataset.score_file import CoordSpaceError, declared_coord_space, score_file
    from mag_dataset.compare import CompareError, compare_reports, format_comparison
    from mag_dataset.predictions import PredictionsError
    from mag_dataset.schema import SchemaError
    from mag_dataset.verdicts import VerdictsError

    for flag, path in (("--baseline", args.baseline), ("--candidate", args.candidate)):
        if not path.is_file():
            raise UserError(f"{flag} file not found: {path}")
    if args.out is not None and args.out.is_dir():
        raise UserError(f"--out {args.out} is a folder; give a file path for the comparison JSON")
    if not 1 <= args.resamples <= 100_000:
        raise UserError(f"--resamples must be between 1 and 100000, got {args.resamples}")
    coord = args.view == View.COORD.value
    if not coord and (args.coord_space_a or args.coord_space_b):
        raise UserError(f"--coord-space-a/-b apply to the coord view only, not {args.view}")
    try:  # the coord view's gold brings the som menus with it
        gold = load_gold(args.dataset, args.view, args.split)
    except (OSError, ValueError, SchemaError) as e:
        raise UserError(f"cannot load {args.view}/{args.split} of dataset {args.dataset!r}: {e}") from None
    if not len(gold):
        raise UserError(f"dataset {args.dataset!r} has no {args.split} steps in the {args.view} view")
    steps = list(gold.steps)
    reports = []
    for path, contract, flag in (
        (args.baseline, args.contract_a, args.coord_space_a),
        (args.candidate, args.contract_b, args.coord_space_b),
    ):
        try:
            space, source = declared_coord_space(path, flag) if coord else (None, "default")
        except CoordSpaceError as e:
            raise UserError(str(e)) from None
        try:
            reports.append(score_file(
                path, gold, args.view, contract, verdicts=args.verdicts, allow_missing=args.allow_missing,
                keep_steps=True, coord_space=space, coord_space_source=source,
            ))
        except PredictionsError as e:
            raise UserError(f"{path}: {e}") from None
        except VerdictsError as e:
            raise UserError(str(e)) from None
    try:
        comp = compare_reports(reports[0], reports[1], steps, resamples=args.resamples, seed=args.seed)
    except CompareError as e:
        raise UserError(str(e)) from None
    print(format_comparison(comp))
    for side, rep in zip("AB", reports):
        for w in rep.warnings:
            print(f"mag compare: warning ({side}): {w}", file=sys.stderr)
    if args.out is not None:
        try:
            atomic_write(args.out, comp.to_json())
        except OSError as e:
            raise UserError(f"cannot write the comparison to {args.out}: {e}") from None
        print(f"\ncomparison written to {args.out}")
    return 0
