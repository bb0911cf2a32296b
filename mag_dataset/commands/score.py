"""``mag score``: score a predictions file against a dataset split; print a table, write the JSON.

Example::

    mag score --predictions preds.jsonl --dataset mag/webmre --view som --contract J \\
        --split test --verdicts verdicts.jsonl --out report.json
    mag score --predictions preds.jsonl --dataset bundled --view coord --contract A --coord-space norm1000
    mag score --predictions smoke-20-steps.jsonl --dataset mag/webmre --view som --contract J --subset

``--dataset bundled`` scores against the bundled sample corpus. The scoring itself is
:func:`mag_dataset.score_file.score_file` on the gold of :func:`mag_dataset.dataset.load_gold`. In the coord view the
points' space comes from ``--coord-space``, else the ``coord_space`` field of the
predictions' provenance sidecar (``preds.provenance.json``), else screenshot pixels; a
line's own ``coord_space`` overrides both (see :mod:`mag_dataset.coords`).

``--subset`` scores only the steps the file has predictions for (a smoke run of a few
steps): the report says how many of the split's steps it covers, in its provenance
(``subset``) and in a warning, and cannot be published (``--eval-results``, ``--eee``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mag_dataset.actions import View
from mag_dataset.commands import options
from mag_dataset.fileio import atomic_write


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", required=True, type=Path, help="predictions JSONL (step_id, output[, seed])")
    parser.add_argument("--dataset", required=True, help="built dataset folder, Hub repo id, or 'bundled'")
    options.add_view_contract_split(parser)
    options.add_verdicts(parser)
    options.add_out(parser, "write the report JSON here", old="--output", default=None, metavar="FILE")
    missing = parser.add_mutually_exclusive_group()
    missing.add_argument(
        "--allow-missing", action="store_true", help="score steps without a prediction as format failures"
    )
    missing.add_argument(
        "--subset", action="store_true",
        help="score only the steps the file has predictions for (smoke runs); the report says how many of the "
        "split's steps that is, and is not a benchmark result",
    )
    parser.add_argument("--max-lines", type=int, default=None, help="reject files with more lines than this")
    parser.add_argument("--per-step", action="store_true", help="include per-step scores in the JSON")
    parser.add_argument(
        "--coord-space",
        default=None,
        help="coord view: the predictions' coordinate space: pixels (default), norm1000, norm1 or resized:WxH",
    )
    hub = parser.add_argument_group("publishing results (see README: On the Hub)")
    hub.add_argument(
        "--eval-results",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the Hub's .eval_results/webmre_<view>_<contract>.yaml for a model repo into DIR "
        "(DIR/.eval_results/, or DIR itself when it is named .eval_results); test split only",
    )
    hub.add_argument(
        "--eee",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the Every Eval Ever aggregate and per-sample records under DIR/data/webmre/<owner>/<model>/ "
        "(needs --model-id)",
    )
    hub.add_argument("--model-id", default=None, help="the model scored, owner/name (Every Eval Ever records)")
    hub.add_argument(
        "--dataset-id",
        default=None,
        help="the benchmark's Hub dataset repo named in the results (default: --dataset when it is a repo id, "
        "else mag/webmre)",
    )
    hub.add_argument(
        "--dataset-revision",
        default=None,
        help="the git revision of that repo the gold came from (default: the commit datasets cached a repo id "
        "under, or that of a Hub cache snapshot path; else left out)",
    )
    hub.add_argument("--source-url", default=None, help=".eval_results: a link to the logs or predictions behind the result")
    hub.add_argument("--source-name", default=None, help=".eval_results: the display name of --source-url")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.dataset import load_gold
    from mag_dataset.predictions import PredictionsError
    from mag_dataset.score_file import CoordSpaceError, declared_coord_space, score_file
    from mag_dataset.schema import SchemaError
    from mag_dataset.scoring import format_report
    from mag_dataset.verdicts import VerdictsError

    if not args.predictions.is_file():
        raise UserError(f"predictions file not found: {args.predictions}")
    hub_target = _check_hub_flags(args)
    if args.out is not None and args.out.is_dir():
        raise UserError(f"--out {args.out} is a folder; give a file path for the report JSON")
    try:  # the coord view's gold brings the som menus with it
        gold = load_gold(args.dataset, args.view, args.split)
    except (OSError, ValueError, SchemaError) as e:  # OSError: missing folder, Hub unreachable offline
        raise UserError(f"cannot load {args.view}/{args.split} of dataset {args.dataset!r}: {e}") from None
    if not len(gold):
        raise UserError(f"dataset {args.dataset!r} has no {args.split} steps in the {args.view} view")
    steps = list(gold.steps)
    try:
        space, source = declared_coord_space(args.predictions, args.coord_space)
    except CoordSpaceError as e:
        raise UserError(str(e)) from None
    if args.view != View.COORD.value:
        if args.coord_space is not None:
            raise UserError(f"--coord-space applies to the coord view only, not {args.view}")
        space, source = None, "default"  # a sidecar's space means nothing for element ids
    try:
        report = score_file(
            args.predictions,
            gold,
            args.view,
            args.contract,
            verdicts=args.verdicts,
            allow_missing=args.allow_missing,
            max_lines=args.max_lines,
            keep_steps=args.per_step or args.eee is not None,
            coord_space=space,
            coord_space_source=source,
            subset=args.subset,
        )
    except PredictionsError as e:
        raise UserError(f"{args.predictions}: {e}") from None
    except VerdictsError as e:
        raise UserError(str(e)) from None
    print(format_report(report))
    for w in report.warnings:
        print(f"mag score: warning: {w}", file=sys.stderr)
    if args.out is not None:
        try:
            atomic_write(args.out, report.to_json(include_steps=args.per_step))
        except OSError as e:
            raise UserError(f"cannot write the report to {args.out}: {e}") from None
        print(f"\nreport written to {args.out}")
    if hub_target is not None:
        _write_hub_results(args, report, steps, *hub_target)
    return 0


def _check_hub_flags(args: argparse.Namespace) -> tuple[str, str | None] | None:
    """Check the publishing flags before scoring; returns ``(dataset id, revision)`` when one is set."""
    from mag_dataset.errors import UserError
    from mag_dataset.dataset import is_local
    from mag_dataset.hub_eval import DEFAULT_DATASET_ID, TASK_SPLIT, hub_snapshot_revision

    if args.subset and (args.eval_results is not None or args.eee is not None):
        raise UserError("--subset scores part of the split: it cannot be published with --eval-results or --eee")
    if args.eval_results is None and args.eee is None:
        for flag in ("model_id", "dataset_id", "dataset_revision", "source_url", "source_name"):
            if getattr(args, flag) is not None:
                raise UserError(f"--{flag.replace('_', '-')} applies only with --eval-results or --eee")
        return None
    for flag in ("eval_results", "eee"):
        folder = getattr(args, flag)
        if folder is not None and folder.exists() and not folder.is_dir():
            raise UserError(f"--{flag.replace('_', '-')} {folder} is a file; give a folder")
    if args.eval_results is not None and args.split != TASK_SPLIT:
        raise UserError(f"--eval-results: only the {TASK_SPLIT} split is a benchmark task, not {args.split}")
    if args.source_name is not None and args.source_url is None:
        raise UserError("--source-name needs --source-url")
    if args.eee is not None:
        from mag_dataset.eee import EEEError, path_components

        if args.model_id is None:
            raise UserError("--eee needs --model-id owner/name (the model the predictions come from)")
        try:
            path_components(args.model_id)
        except EEEError as e:
            raise UserError(f"--model-id: {e}") from None
    local = args.dataset == "bundled" or is_local(args.dataset)
    dataset_id = args.dataset_id or (DEFAULT_DATASET_ID if local else args.dataset)
    if dataset_id.count("/") != 1 or not all(dataset_id.split("/")):
        raise UserError(f"--dataset-id must look like owner/name, got {dataset_id!r}")
    revision = args.dataset_revision
    if revision is None and local and args.dataset != "bundled":
        revision = hub_snapshot_revision(args.dataset)
    elif revision is None and not local:  # a repo id: the commit datasets resolved and cached it under
        from mag_dataset.dataset import load_view
        from mag_dataset.hub_eval import cache_revision

        try:
            revision = cache_revision(load_view(args.dataset, args.view, args.split).cache_files)
        except (OSError, ValueError):
            revision = None  # the scoring run below reports why the dataset cannot load
    return dataset_id, revision


def _write_hub_results(args: argparse.Namespace, report: Any, steps: list[Any], dataset_id: str, revision: str | None) -> None:
    from mag_dataset.errors import UserError

    if args.eval_results is not None:
        from mag_dataset.hub_eval import EvalFileError, write_eval_results

        try:
            path = write_eval_results(
                args.eval_results, report, dataset_id=dataset_id, dataset_revision=revision,
                source_url=args.source_url, source_name=args.source_name, split=args.split,
            )
        except EvalFileError as e:
            raise UserError(f"--eval-results: {e}") from None
        except OSError as e:
            raise UserError(f"cannot write to {args.eval_results}: {e}") from None
        print(f"Hub result written to {path} (commit it to the model repo)")
        if revision is None:
            print("mag score: note: no dataset revision recorded; pass --dataset-revision SHA", file=sys.stderr)
    if args.eee is not None:
        from mag_dataset.eee import EEEError, write_export
        from mag_dataset.predictions import iter_predictions

        outputs = {
            (p.step_id, p.seed): p.output
            for p in iter_predictions(args.predictions, [s.step_id for s in steps], allow_missing=True)
        }
        try:
            agg, samples = write_export(
                args.eee, report, steps, outputs, model_id=args.model_id, dataset_id=dataset_id,
                dataset_revision=revision, split=args.split,
            )
        except EEEError as e:
            raise UserError(f"--eee: {e}") from None
        except OSError as e:
            raise UserError(f"cannot write to {args.eee}: {e}") from None
        print(f"Every Eval Ever records written to {agg} and {samples.name}")
