"""``mag import-browsergym``: BrowserGym/AgentLab runs → raw episodes.

Examples::

    mag import-browsergym agentlab_results/ --out RAW_DIR
    mag import-browsergym runs/2026-05-01_webarena/ --out RAW_DIR --task-key template --keep best
    mag unify --raw RAW_DIR                # then restore the mouse_click steps

Only successful episodes are imported; see :mod:`mag_dataset.harness.browsergym_import` for the
layout read, the action mapping and what makes an episode unimportable. Each experiment
folder is decoded in a child process with a memory and a time limit; a folder that cannot
be imported is skipped with its reason and the batch goes on. The summary is always
printed; the exit status is 0 when an episode was imported (or every folder was already
imported), 1 when nothing could be imported, 2 for a usage error. Repeats of one task
(``--task-key``) share a task key, so the default split keeps them together; ``--keep first``
or ``--keep best`` imports one run per key. Follow with ``mag unify`` (restores
``mouse_click`` steps), ``mag audit`` and ``mag build``. The import appends its entry
to RAW_DIR's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exp_dirs", nargs="+", type=Path, metavar="EXP_DIR",
                        help="an experiment directory, or a folder of many (searched recursively)")
    options.add_out(parser, "raw corpus folder to add the episodes to", required=True, metavar="RAW_DIR")
    parser.add_argument("--min-reward", type=float, default=1.0, help="least cum_reward of a successful episode (default 1)")
    parser.add_argument("--templates", type=Path, default=None,
                        help="JSON file mapping task names to intent template ids (e.g. WebArena's intent_template_id)")
    parser.add_argument("--overwrite", action="store_true", help="replace episodes that already exist in --out")
    options.add_no_progress(parser)
    parser.add_argument("--task-key", choices=("task-seed", "task", "template"), default="task-seed",
                        help="which runs are repeats of one task, kept in one split: the same task name and seed "
                             "(default), the same task name (every seed), or the same intent template")
    parser.add_argument("--keep", choices=("all", "first", "best"), default="all",
                        help="keep every successful run of a task key (default), only the first (by folder date), "
                             "or the best (highest cum_reward, then fewest steps)")
    parser.add_argument("--memory-limit", type=int, default=None, metavar="MIB",
                        help="memory limit of the process that decodes one experiment folder (default 2048)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="time limit for decoding one experiment folder (default 300)")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.harness.browsergym_import import IMPORT_LIMITS, import_experiments
    from mag_dataset.isolation import Limits

    templates = None
    if args.templates is not None:
        try:
            templates = json.loads(args.templates.read_text("utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise UserError(f"--templates {args.templates}: {e}") from None
        if not isinstance(templates, dict) or not all(isinstance(v, str) for v in templates.values()):
            raise UserError(f"--templates {args.templates}: expected a JSON object of task name -> template id")
    try:
        limits = Limits(memory_mb=args.memory_limit or IMPORT_LIMITS.memory_mb,
                        seconds=args.time_limit or IMPORT_LIMITS.seconds)
    except ValueError as e:
        raise UserError(f"--memory-limit/--time-limit: {e}") from None
    stage = options.start_stage(args.out, "import-browsergym", {
        "inputs": [p.name for p in args.exp_dirs], "min_reward": args.min_reward, "templates": templates,
        "overwrite": args.overwrite, "task_key": args.task_key, "keep": args.keep})
    try:
        report = import_experiments(args.exp_dirs, args.out, min_reward=args.min_reward, templates=templates,
                                    overwrite=args.overwrite, progress=options.progress_printer(args),
                                    limits=limits, task_key=args.task_key, keep=args.keep)
    except FileNotFoundError as e:
        raise UserError(str(e)) from None
    finish_import(stage)
    return import_exit_status(report, "BrowserGym experiment directory (summary_info.json / step_0.pkl.gz)",
                              args.exp_dirs)


def finish_import(stage: Any) -> None:
    """Append the import's entry to ``--out``'s stage record when it added or replaced episodes (an
    import that changed nothing appends nothing, and makes no ``corpus.json`` in a new folder)."""
    from mag_dataset.errors import UserError
    from mag_dataset.raw import StageRecordError

    if stage.root.is_dir():
        try:
            stage.finish(only_if_changed=True)
        except StageRecordError as e:
            raise UserError(str(e)) from None


def import_exit_status(report: Any, what: str, paths: list[Path]) -> int:
    """Print an import's summary; 0 when an episode was imported (or all were already), 1 when none could be.

    Raises:
        UserError: nothing to import was found under ``paths`` (``what`` names what was looked for).
    """
    from mag_dataset.errors import UserError

    print(report.summary())
    if report.found == 0:
        raise UserError(f"no {what} under {', '.join(map(str, paths))}")
    if not report.imported and any(not r.startswith("already imported") for _, r in report.skipped):
        return 1  # nothing could be imported
    return 0
