"""``mag build``: raw episodes → Hub-ready dataset folder (both views).

Examples::

    mag build --out DATASET_DIR                   # the bundled sample corpus
    mag build --raw RAW_DIR --audit RAW_DIR/audit.jsonl --out DATASET_DIR
    mag build --raw RUN_DIR/episodes --include-failed --out DATASET_DIR   # a live-eval run, for inspection

The folder's layout and the build's guarantees are documented in :mod:`mag_dataset.builder`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_out(parser, "dataset folder to write (an earlier build there is replaced)", required=True, metavar="DIR")
    parser.add_argument("--raw", type=Path, default=None, metavar="RAW_DIR", help="raw corpus folder (default: the bundled sample corpus)")
    parser.add_argument("--audit", type=Path, default=None, help="audit file (default: RAW/audit.jsonl when present)")
    parser.add_argument("--include-failed", action="store_true",
                        help="also build episodes marked unsuccessful (e.g. a live-eval run, for inspection)")
    parser.add_argument("--unmappable-point-only", action="store_true",
                        help="build point-only steps that `mag unify` did not restore as audit status 'unmappable' "
                             "(default: refuse them)")
    parser.add_argument("--readme", type=Path, default=None,
                        help="also refresh the per-family statistics block of this README (between "
                             "<!-- corpus-stats:begin --> and <!-- corpus-stats:end -->)")
    options.add_no_progress(parser)


def run(args: argparse.Namespace) -> int:
    from mag_dataset.builder import BuildError, build_dataset
    from mag_dataset.errors import UserError
    from mag_dataset.dataset import bundled_raw_dir
    from mag_dataset.raw import RawDataError

    raw = args.raw if args.raw is not None else bundled_raw_dir()
    try:
        out = build_dataset(raw, args.out, audit_path=args.audit, progress=not args.no_progress,
                            include_failed=args.include_failed, unmappable_point_only=args.unmappable_point_only,
                            readme=args.readme)
    except (RawDataError, BuildError, OSError) as e:  # OSError: an unwritable --out, unreadable raw files
        raise UserError(str(e)) from None
    print(f"built {out}")
    if args.readme is not None:
        print(f"refreshed the statistics block of {args.readme}")
    print(f'load it with: datasets.load_dataset("{out}", "som")  # or "coord"')
    return 0
