"""``mag import-browsergym EXP_DIR... --out RAW_DIR``: BrowserGym/AgentLab runs → raw episodes.

Only successful episodes are imported; see :mod:`mag_dataset.harness.importer` for the
layout read, the action mapping and what makes an episode unimportable. Follow with
``mag unify RAW_DIR`` (restores ``mouse_click`` steps), ``mag audit`` and ``mag build``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exp_dirs", nargs="+", type=Path, metavar="EXP_DIR",
                        help="an experiment directory, or a folder of many (searched recursively)")
    parser.add_argument("--out", required=True, type=Path, help="raw corpus folder to add the episodes to")
    parser.add_argument("--min-reward", type=float, default=1.0, help="least cum_reward of a successful episode (default 1)")
    parser.add_argument("--templates", type=Path, default=None,
                        help="JSON file mapping task names to intent template ids (e.g. WebArena's intent_template_id)")
    parser.add_argument("--overwrite", action="store_true", help="replace episodes that already exist in --out")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.cli import UserError
    from mag_dataset.harness.importer import import_experiments

    templates = None
    if args.templates is not None:
        try:
            templates = json.loads(args.templates.read_text("utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise UserError(f"--templates {args.templates}: {e}") from None
        if not isinstance(templates, dict) or not all(isinstance(v, str) for v in templates.values()):
            raise UserError(f"--templates {args.templates}: expected a JSON object of task name -> template id")
    try:
        report = import_experiments(args.exp_dirs, args.out, min_reward=args.min_reward, templates=templates,
                                    overwrite=args.overwrite, progress=lambda line: print(line, file=sys.stderr))
    except FileNotFoundError as e:
        raise UserError(str(e)) from None
    print(report.summary())
    if report.found == 0:
        raise UserError(f"no BrowserGym experiment directory (summary_info.json / step_0.pkl.gz) under {', '.join(map(str, args.exp_dirs))}")
    return 0
