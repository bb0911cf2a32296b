"""``mag import-trace``: Playwright trace archives → raw episodes.

Examples::

    mag import-trace traces/ --out RAW_DIR --webarena-configs webarena/config_files
    mag import-trace run.zip --out RAW_DIR --intent "Add a laptop to the cart"
    mag unify --raw RAW_DIR                # then restore the clicks recorded at a point

Reads archives written by ``context.tracing.start(screenshots=True, snapshots=True)`` ...
``stop(path=...)`` (the format of WebArena's published ``trace/*.zip`` execution traces); see
:mod:`mag_dataset.harness.trace_import` for what becomes a step. A trace holds no task text:
give it with ``--intent`` (every archive), ``--tasks FILE``, a JSON object mapping an
archive's file name (or name without ``.zip``) to ``{"intent": ..., "site", "intent_template_id",
"task_id", "seed"}`` (only ``intent`` is required), or ``--webarena-configs DIR``, WebArena's
``config_files`` folder (trace ``<id>.zip`` performs task ``<id>.json``: its intent, sites and
template; the episode is ``webarena.<id>``). An archive that cannot be converted is
skipped with its reason; the exit status is 0 when an episode was imported, 1 when none
could be, 2 for a usage error. Follow with ``mag unify`` (restores mouse clicks recorded
at a point), ``mag audit`` and ``mag build``. The import appends its entry
to RAW_DIR's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mag_dataset.commands import options
from mag_dataset.commands.import_browsergym import finish_import, import_exit_status
from typing import Any

TASK_FIELDS = {"intent": str, "site": str, "intent_template_id": str, "task_id": str, "seed": int}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", type=Path, metavar="TRACE",
                        help="a trace .zip, or a folder searched recursively for them")
    options.add_out(parser, "raw corpus folder to add the episodes to", required=True, metavar="RAW_DIR")
    parser.add_argument("--intent", default=None, help="the task's intent, for every archive given")
    parser.add_argument("--tasks", type=Path, default=None,
                        help="JSON object: archive name -> {intent, site, intent_template_id, task_id, seed}")
    parser.add_argument("--webarena-configs", type=Path, default=None, metavar="DIR",
                        help="WebArena's config_files folder: the task of trace <id>.zip is <id>.json "
                             "(intent, sites, intent_template_id)")
    parser.add_argument("--overwrite", action="store_true", help="replace episodes that already exist in --out")
    options.add_no_progress(parser)


def _read_tasks(path: Path) -> dict[str, dict[str, Any]]:
    from mag_dataset.errors import UserError

    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"--tasks {path}: {e}") from None
    if not isinstance(data, dict):
        raise UserError(f"--tasks {path}: expected a JSON object of archive name -> task")
    for name, task in data.items():
        if not isinstance(task, dict) or not isinstance(task.get("intent"), str) or not task["intent"].strip():
            raise UserError(f"--tasks {path}: entry {name!r} needs a non-empty string 'intent'")
        for key, value in task.items():
            kind = TASK_FIELDS.get(key)
            if kind is None:
                raise UserError(f"--tasks {path}: entry {name!r} has unknown field {key!r}; known: {', '.join(TASK_FIELDS)}")
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
                raise UserError(f"--tasks {path}: entry {name!r} field {key!r} must be {'an integer' if kind is int else 'a string'}")
    return data


def _webarena_task(config: Path) -> Any:
    """The task of a WebArena config file (``config_files/<task_id>.json``), or None."""
    from mag_dataset.harness.trace_import import TraceTask

    try:
        d = json.loads(config.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(d, dict) or not isinstance(d.get("intent"), str) or not d["intent"].strip():
        return None
    sites = d.get("sites") if isinstance(d.get("sites"), list) else []
    tid = d.get("task_id")
    return TraceTask(intent=" ".join(d["intent"].split()), site="+".join(str(x) for x in sites),
                     intent_template_id=str(d.get("intent_template_id", "")),
                     task_id=f"webarena.{tid}" if isinstance(tid, int) and not isinstance(tid, bool) else "")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.harness.trace_import import TraceTask, import_traces

    if sum(x is not None for x in (args.intent, args.tasks, args.webarena_configs)) != 1:
        raise UserError("give the task of the traces with exactly one of --intent TEXT, --tasks FILE "
                        "and --webarena-configs DIR")
    if args.webarena_configs is not None and not args.webarena_configs.is_dir():
        raise UserError(f"--webarena-configs {args.webarena_configs}: not a folder")
    if args.intent is not None and not args.intent.strip():
        raise UserError("--intent is empty")
    table = _read_tasks(args.tasks) if args.tasks is not None else {}

    def task_of(path: Path) -> TraceTask | None:
        if args.intent is not None:
            return TraceTask(intent=" ".join(args.intent.split()))
        if args.webarena_configs is not None:
            return _webarena_task(args.webarena_configs / f"{path.stem}.json")
        entry = table.get(path.name, table.get(path.stem))
        return None if entry is None else TraceTask(**{k: v for k, v in entry.items() if v is not None})

    given = "intent" if args.intent is not None else "webarena_configs" if args.webarena_configs is not None else "tasks"
    stage = options.start_stage(args.out, "import-trace", {"inputs": [p.name for p in args.traces], "task_from": given,
                                                    "overwrite": args.overwrite})
    try:
        report = import_traces(args.traces, args.out, task_of, overwrite=args.overwrite,
                               progress=options.progress_printer(args))
    except FileNotFoundError as e:
        raise UserError(str(e)) from None
    finish_import(stage)
    return import_exit_status(report, "trace archive (.zip)", args.traces)
