"""``mag compact``: store a raw corpus compactly (lossless WebP, no stored SoM), in place.

Examples::

    mag compact --raw RAW_DIR --dry-run    # encode and report the sizes, write nothing
    mag compact --raw RAW_DIR --method 6 --workers 2

The conversion and its settings are documented in :mod:`mag_dataset.compact`. A run (not a dry
run) appends its entry to the corpus's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mag_dataset import compact as _compact
from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw", required=True, type=Path, metavar="RAW_DIR", help="raw corpus folder (episodes are rewritten in place)")
    parser.add_argument("--method", type=int, default=_compact.WEBP_METHOD,
                        help="libwebp effort, 0 (fastest) .. 6 (smallest)")
    parser.add_argument("--quality", type=int, default=_compact.WEBP_QUALITY,
                        help="lossless effort 0..100 (Pillow's quality for lossless WebP)")
    parser.add_argument("--workers", type=int, default=None, help="encoding threads (default: one per CPU)")
    parser.add_argument("--dry-run", action="store_true", help="encode and report sizes, write nothing")
    parser.add_argument("--no-delta", action="store_true",
                        help="keep recaptured screenshots whole (default: store each as its difference from the "
                             "action-time screenshot when smaller, RAW/<episode>/<name>.delta.webp)")
    parser.add_argument("--no-share", action="store_true",
                        help="keep each episode's own copy of a screenshot other episodes hold too "
                             "(default: store it once, in RAW_DIR/_shared_images)")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.raw import RawDataError

    raw = options.raw_folder(args)
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    try:
        stage = options.start_stage(raw, "compact", {"method": args.method, "quality": args.quality,
                                                      "share": not args.no_share, "delta": not args.no_delta})
        report = _compact.compact_corpus(raw, method=args.method, quality=args.quality, workers=args.workers,
                                         dry_run=args.dry_run, share=not args.no_share,
                                         delta=not args.no_delta)
        if not args.dry_run:  # a dry run rewrote nothing: no stage entry
            stage.finish()
    except (RawDataError, ValueError, OSError) as e:
        raise UserError(str(e)) from None
    print(("would compact: " if args.dry_run else "compacted: ") + report.summary())
    for name in report.not_round_trip:
        print(f"kept as PNG (its WebP was not smaller, not pixel-identical, or its name was taken): {name}")
    return 0
