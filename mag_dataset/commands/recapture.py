"""``mag recapture``: re-render site episodes by replaying them on a site that has moved on.

    mag recapture --raw RAW --share 0.3 --seed 0
    mag unify RAW          # then flags the recaptured steps that no longer match as stale

See :mod:`mag_dataset.live.recapture` for the path and why it produces stale screenshots.
The sites the chosen episodes need are served for the run (and stopped after it) when
they are not running already.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mag_dataset.cli import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw", required=True, type=Path, help="raw corpus folder (updated in place)")
    parser.add_argument("--share", type=float, required=True, help="share of the site episodes to recapture (0-1)")
    parser.add_argument("--seed", type=int, default=0, help="picks which episodes (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.live.env import LiveEnvError
    from mag_dataset.live.recapture import choose_episodes, recapture_corpus
    from mag_dataset.raw import RawDataError, read_corpus
    from mag_dataset.sites import SiteError, site_class
    from mag_dataset.sites.manager import served

    if not 0.0 <= args.share <= 1.0:
        raise UserError(f"--share must be between 0 and 1, got {args.share}")
    if not args.raw.is_dir():
        raise UserError(f"--raw {args.raw}: no such folder")
    try:
        chosen = choose_episodes(list(read_corpus(args.raw)), args.share, args.seed)
        sites = [site_class(n)() for n in dict.fromkeys(e.site for e in chosen)]
        with served(sites):
            report = recapture_corpus(args.raw, args.share, args.seed,
                                      log=lambda m: print(m, file=sys.stderr, flush=True))
    except (RawDataError, SiteError, LiveEnvError) as e:
        raise UserError(str(e)) from None
    print(report.summary())
    return 0
