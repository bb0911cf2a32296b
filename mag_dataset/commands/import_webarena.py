"""``mag import-webarena``: WebArena result folders (``run.py --result_dir``) → raw episodes.

Examples::

    mag import-webarena results/ --configs config_files/ --out RAW_DIR
    mag import-webarena results/ --out RAW_DIR --all     # FAIL tasks too
    mag unify --raw RAW_DIR                              # then restore the steps recorded at a point

Reads what WebArena's ``run.py`` writes: ``render_<task_id>.html`` (per step the URL, the
accessibility tree, the screenshot, the raw prediction and the parsed action),
``traces/<task_id>.zip`` (run with ``--save_trace_enabled``: the points of its mouse actions,
the DOM snapshots the candidates and boxes come from, screencast frames), the logs'
``[Result] (PASS|FAIL) <config file>`` lines (``merge_log.txt``, ``*.log``, ``log_files.txt``)
and the config files (``--configs DIR``, else the file the log names, else the render file's
config block). Only PASS tasks by default (as WebMRE); ``--all`` imports the rest too. See
:mod:`mag_dataset.harness.webarena_import` for the action mapping. A task that cannot be
imported is skipped with its reason and the batch goes on; an episode already in ``--out`` is
skipped, so a second run resumes. The exit status is 0 when an episode was imported (or all
were already), 1 when none could be, 2 for a usage error. Follow with ``mag unify``, ``mag
recapture``, ``mag audit`` and ``mag build``. The import appends its entry
to RAW_DIR's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mag_dataset.commands import options
from mag_dataset.commands.import_browsergym import finish_import, import_exit_status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("result_dir", type=Path, metavar="RESULT_DIR",
                        help="WebArena's run.py --result_dir (render_<id>.html, traces/<id>.zip, logs)")
    options.add_out(parser, "raw corpus folder to add the episodes to", required=True, metavar="RAW_DIR")
    parser.add_argument("--configs", type=Path, default=None, metavar="DIR",
                        help="WebArena's config_files folder: task <id> is <id>.json")
    parser.add_argument("--all", action="store_true", dest="include_failed",
                        help="import FAIL tasks (and tasks no [Result] line names) too")
    parser.add_argument("--overwrite", action="store_true", help="replace episodes that already exist in --out")
    options.add_no_progress(parser)


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.harness.webarena_import import import_webarena

    if args.configs is not None and not args.configs.is_dir():
        raise UserError(f"--configs {args.configs}: not a folder")
    stage = options.start_stage(args.out, "import-webarena", {"inputs": [args.result_dir.name], "all": args.include_failed,
                                                       "overwrite": args.overwrite})
    try:
        report = import_webarena(args.result_dir, args.out, configs_dir=args.configs,
                                 include_failed=args.include_failed, overwrite=args.overwrite,
                                 progress=options.progress_printer(args))
    except FileNotFoundError as e:
        raise UserError(str(e)) from None
    finish_import(stage)
    return import_exit_status(report, "WebArena render file (render_<task_id>.html)", [args.result_dir])
