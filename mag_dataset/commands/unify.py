"""``mag unify``: restore coordinate-only steps and flag stale screenshots, in place.

Examples::

    mag unify --raw RAW_DIR --dry-run      # report what would change
    mag unify --raw RAW_DIR

The rules are documented in :mod:`mag_dataset.harness.unify`. A run (not a dry run) appends its
entry to the corpus's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mag_dataset.commands import options
from mag_dataset.harness import unify as _rules


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_raw(parser, "raw corpus folder (episode folders are updated in place)")
    parser.add_argument("--audit", type=Path, default=None, help="audit file to merge the flags into (default: RAW/audit.jsonl)")
    parser.add_argument("--dry-run", action="store_true", help="only report what would change")
    parser.add_argument("--pixel-tolerance", type=int, default=_rules.PIXEL_TOLERANCE,
                        help="per-channel difference (0-255) below which two pixels count as equal")
    parser.add_argument("--pixel-fraction", type=float, default=_rules.PIXEL_FRACTION,
                        help="share of differing pixels above which a recaptured screenshot is stale")
    parser.add_argument("--box-tolerance", type=float, default=_rules.BOX_TOLERANCE,
                        help="pixels the target box may move before a recaptured step is stale")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.raw import RawDataError

    raw = options.raw_folder(args)
    if not 0 <= args.pixel_tolerance <= 255:
        raise UserError(f"--pixel-tolerance must be in 0..255, got {args.pixel_tolerance}")
    if not 0 <= args.pixel_fraction <= 1:
        raise UserError(f"--pixel-fraction must be in 0..1, got {args.pixel_fraction}")
    try:
        stage = options.start_stage(raw, "unify", {"pixel_tolerance": args.pixel_tolerance,
                                                    "pixel_fraction": args.pixel_fraction,
                                                    "box_tolerance": args.box_tolerance})
        report = _rules.unify_corpus(
            raw,
            dry_run=args.dry_run,
            audit_path=args.audit,
            pixel_tolerance=args.pixel_tolerance,
            pixel_fraction=args.pixel_fraction,
            box_tolerance=args.box_tolerance,
        )
        if not args.dry_run:  # a dry run rewrote nothing: no stage entry
            stage.finish()
    except (RawDataError, ValueError) as e:
        raise UserError(str(e)) from None
    print(("would change: " if args.dry_run else "unified: ") + report.summary())
    return 0
