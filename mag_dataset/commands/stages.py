"""``mag stages``: the stages that rewrote a raw corpus, in order, and whether the order holds.

Examples::

    mag stages                      # the bundled sample corpus
    mag stages --raw RAW_DIR
    mag stages --raw RAW_DIR --order   # the canonical order: each stage and what it must come after

Prints the record ``corpus.json`` keeps under ``stages`` (one line per run: the stage, its
options, what it changed, the content fingerprint after it; ``*`` marks an entry backfilled
afterwards from how the corpus was made), one line per run out of the canonical order
(:data:`mag_dataset.raw.STAGE_RULES`) and the stages whose last run is out of date now. The record and the order are documented in
:mod:`mag_dataset.raw` ("Corpus stages"). It writes nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw", type=Path, default=None, metavar="RAW_DIR",
                        help="raw corpus folder (default: the bundled sample corpus)")
    parser.add_argument("--order", action="store_true",
                        help="print the canonical order instead: each stage, what it rewrites and what it must come after")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.raw import STAGE_RULES, StageRecordError, order_problems, out_of_date, read_stages

    if args.order:
        for name, rule in STAGE_RULES.items():
            after = ", ".join(rule.after) or "nothing"
            print(f"{name}: rewrites {rule.rewrites}; after {after}")
        return 0
    from mag_dataset.dataset import bundled_raw_dir

    raw = args.raw if args.raw is not None else bundled_raw_dir()
    if not raw.is_dir():
        raise UserError(f"--raw {raw}: no such folder")
    try:
        stages = read_stages(raw)
    except StageRecordError as e:
        raise UserError(str(e)) from None
    if not stages:
        print(f"{raw}: no stage record (corpus.json has no 'stages': made before the record was kept, "
              "or by no stage yet)")
        return 0
    for i, e in enumerate(stages, 1):
        opts = json.dumps(e.options, sort_keys=True, separators=(",", "="))[1:-1].replace('"', "")
        if e.changed is None:
            changed = "changes not known"
        else:
            files = f", files {', '.join(e.changed['files'])}" if e.changed["files"] else ""
            changed = f"changed {e.changed['episodes']} episodes, {e.changed['steps']} steps{files}"
        fp = e.fingerprint[:16] if e.fingerprint else "-"
        mark = "*" if e.backfilled else " "
        print(f"{i:>3}{mark} {e.stage:<28} {changed}; fingerprint {fp}; mag_dataset {e.version}"
              + (f"; {opts}" if opts else "") + (f"; {e.note}" if e.note else ""))
    problems = order_problems(stages)
    for line in problems:
        print(f"out of order: {line}")
    stale = out_of_date(stages)
    backfilled = " (* backfilled)" if any(e.backfilled for e in stages) else ""
    summary = "in the canonical order" if not problems else f"{len(problems)} out of the canonical order"
    now = f"; out of date now: {', '.join(stale)} (run again)" if stale else ("; each rerun since" if problems else "")
    print(f"{len(stages)} stages{backfilled}; {summary}{now}")
    return 0
