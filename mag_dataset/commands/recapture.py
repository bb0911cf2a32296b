"""``mag recapture``: re-render site episodes by replaying them on a site that has moved on.

    mag recapture --raw RAW_DIR --share 0.3 --seed 0
    mag recapture --raw RAW_DIR --per-template 1       # one episode of every template
    mag recapture --raw RAW_DIR --share 1 --drift 7    # every site episode, on a drifted site
    mag unify --raw RAW_DIR    # then flags the recaptured steps that no longer match as stale
    mag recapture --raw RAW_DIR --evidence             # the audit's DOM fingerprints, by replay
    mag recapture --raw RAW_DIR --end-at-error-pages   # undo recaptured browser error pages
    mag recapture --raw RAW_DIR --undo                 # undo every recapture (to recapture anew)

Episodes imported from WebArena runs on the package's sites (``mag import-webarena``) are
recaptured as site episodes; other imported ones are listed as not recapturable, with why.
An episode with a step without a screenshot is recaptured whatever the share (``--share 0``
recaptures only those). See :mod:`mag_dataset.harness.recapture` for the path and why it produces stale screenshots,
and :mod:`mag_dataset.harness.page_evidence` for ``--evidence`` (episodes recorded before the
recorder stored DOM fingerprints get them from a replay that reproduces their pages).
The sites the chosen episodes need are served for the run (and stopped after it) when
they are not running already. Each run appends its entry (``recapture``, ``recapture --evidence``,
``--end-at-error-pages``, ``--undo``) to the corpus's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mag_dataset.errors import UserError
from mag_dataset.commands import options
from mag_dataset.raw import StageRecordError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw", required=True, type=Path, metavar="RAW_DIR", help="raw corpus folder (updated in place)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--share", type=float, help="share of the site episodes to recapture (0-1)")
    which.add_argument("--per-template", type=int, metavar="N", help="recapture N episodes of every template")
    which.add_argument("--evidence", action="store_true",
                       help="recapture nothing: replay every episode without DOM fingerprints from its start (sites "
                            "reset) and store them where the page is pixel-identical to the recorded one")
    which.add_argument("--end-at-error-pages", action="store_true",
                       help="recapture nothing: end the recapture of every episode recaptured before recaptures "
                            "checked their pages at its first browser error page (action-time screenshots back)")
    which.add_argument("--undo", action="store_true",
                       help="recapture nothing: give every recaptured episode its action-time screenshots back, as "
                            "recorded (then `mag unify`; a maintainer's step before recapturing anew)")
    parser.add_argument("--seed", type=int, default=0, help="picks which episodes (default: %(default)s)")
    parser.add_argument("--no-reset", action="store_true",
                        help="replay on each site as it is now, without resetting it before its first episode")
    parser.add_argument("--drift", type=int, default=None, metavar="SEED",
                        help="before each episode, reset its site and move it on with this drift seed "
                             "(other users' activity, changed prices and statuses: mag_dataset.sites.base.Site.drift)")
    parser.add_argument("--drift-level", type=int, default=1, help="how far the drift moves each site (default: %(default)s)")
    options.add_no_progress(parser)


def run(args: argparse.Namespace) -> int:
    from mag_dataset.live.env import LiveEnvError
    from mag_dataset.harness.recapture import choose_episodes, recapture_corpus, site_of
    from mag_dataset.raw import RawDataError, read_corpus
    from mag_dataset.sites import SiteError, site_class
    from mag_dataset.sites.manager import served

    if args.share is not None and not 0.0 <= args.share <= 1.0:
        raise UserError(f"--share must be between 0 and 1, got {args.share}")
    if args.per_template is not None and args.per_template < 1:
        raise UserError(f"--per-template must be at least 1, got {args.per_template}")
    if args.drift_level < 1:
        raise UserError(f"--drift-level must be at least 1, got {args.drift_level}")
    if args.drift is not None and args.no_reset:
        raise UserError("--drift resets each site before its episode: it cannot go with --no-reset")
    share = 0.0 if args.share is None else args.share
    raw = args.raw
    if not raw.is_dir():
        raise UserError(f"--raw {raw}: no such folder")
    if args.evidence:
        return _evidence(args, raw)
    if args.undo:
        from mag_dataset.harness.recapture import undo_recaptures

        try:
            stage = options.start_stage(raw, "recapture --undo", {})
            changed = undo_recaptures(raw, log=options.progress_printer(args))
            stage.finish()
        except (RawDataError, StageRecordError) as e:
            raise UserError(str(e)) from None
        print(f"undid the recapture of {len(changed)} episodes" + (f"; run `mag unify --raw {raw}` next" if changed else ""))
        return 0
    if args.end_at_error_pages:
        from mag_dataset.harness.recapture import end_at_error_pages

        try:
            stage = options.start_stage(raw, "recapture --end-at-error-pages", {})
            changed = end_at_error_pages(raw, log=options.progress_printer(args))
            stage.finish()
        except (RawDataError, StageRecordError) as e:
            raise UserError(str(e)) from None
        print(f"ended the recapture of {len(changed)} episodes at a browser error page"
              + (f" ({', '.join(changed[:5])}); run `mag unify --raw {raw}` next" if changed else ""))
        return 0
    try:
        settings = {"share": args.share, "per_template": args.per_template, "seed": args.seed,
                    "reset": not args.no_reset, "drift": args.drift, "drift_level": args.drift_level}
        stage = options.start_stage(raw, "recapture", {k: v for k, v in settings.items() if v is not None})
        chosen = choose_episodes(list(read_corpus(raw)), share, args.seed, args.per_template)
        sites = [site_class(n)() for n in dict.fromkeys(site_of(e) for e in chosen)]
        with served(sites):
            report = recapture_corpus(raw, share, args.seed, log=options.progress_printer(args),
                                      reset_first=not args.no_reset, per_template=args.per_template,
                                      drift=args.drift, drift_level=args.drift_level)
        stage.finish()
    except (RawDataError, SiteError, LiveEnvError, StageRecordError) as e:
        raise UserError(str(e)) from None
    print(report.summary())
    return 0


def _evidence(args: argparse.Namespace, raw: Path) -> int:
    from mag_dataset.live.env import LiveEnvError
    from mag_dataset.harness.page_evidence import add_page_evidence, needs_evidence
    from mag_dataset.raw import RawDataError, read_corpus
    from mag_dataset.sites import SiteError, site_class
    from mag_dataset.sites.manager import served

    try:
        stage = options.start_stage(raw, "recapture --evidence", {})
        wanted = [e for e in read_corpus(raw) if e.source in ("sites", "miniwob") and needs_evidence(e)]
        sites = [site_class(n)() for n in dict.fromkeys(e.site for e in wanted if e.source == "sites")]
        with served(sites):
            report = add_page_evidence(raw, log=options.progress_printer(args))
        stage.finish()
    except (RawDataError, SiteError, LiveEnvError, StageRecordError) as e:
        raise UserError(str(e)) from None
    print(report.summary())
    return 0
