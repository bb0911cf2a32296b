"""``mag lint-guides``: list the gold guides that would mislead their reader.

Examples::

    mag lint-guides --raw RAW_DIR                 # findings, one per line; exit 1 when any
    mag lint-guides --raw RAW_DIR --regenerate    # first rewrite the generated guides, then lint

The rules (a key press said to confirm, a finish guide of the wrong kind, icon-font glyphs,
a label cut with an ellipsis, a target the guide does not name) are documented in
:mod:`mag_dataset.builder.guide_lint`. ``--regenerate`` rewrites, in place, every guide whose
``guide_source`` is ``context_template`` or ``plan`` with today's generators
(:func:`mag_dataset.context_guides.regenerate_guides`, from the context the recording stored);
guides written by people or models are left alone, and the run appends its entry
(``lint-guides --regenerate``) to the corpus's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse

from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_raw(parser, "raw corpus folder")
    parser.add_argument("--regenerate", action="store_true",
                        help="rewrite the context_template and plan guides with today's generators first (in place)")
    parser.add_argument("--limit", type=int, default=50, help="findings printed (default 50; 0: all)")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.builder.guide_lint import lint_episodes
    from mag_dataset.errors import UserError
    from mag_dataset.context_guides import regenerate_guides
    from mag_dataset.raw import (RawDataError, StageRecordError, iter_episode_dirs, read_episode,
                                 rewrite_episode_json)

    raw = options.raw_folder(args)
    if args.limit < 0:
        raise UserError(f"--limit must be 0 or more, got {args.limit}")
    episodes = []
    rewritten = 0
    try:
        stage = options.start_stage(raw, "lint-guides --regenerate", {}) if args.regenerate else None
        for folder in iter_episode_dirs(raw):
            ep = read_episode(folder)
            if args.regenerate:
                new = regenerate_guides(ep)
                if new != ep:
                    rewrite_episode_json(folder, new)
                    rewritten += 1
                ep = new
            episodes.append(ep)
        if stage is not None:
            stage.finish()
    except (RawDataError, StageRecordError) as e:
        raise UserError(str(e)) from None
    if args.regenerate:
        print(f"regenerated the context and plan guides of {rewritten} episodes")
    report = lint_episodes(episodes)
    shown = report.findings if args.limit == 0 else report.findings[:args.limit]
    for f in shown:
        print(f.line())
    if len(shown) < len(report.findings):
        print(f"... and {len(report.findings) - len(shown)} more (--limit 0 lists all)")
    print(report.summary())
    return 1 if report.findings else 0
