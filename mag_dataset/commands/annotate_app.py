"""``mag annotate``: the human verification and adjudication app (Gradio).

Examples::

    mag annotate --raw RAW_DIR                      # serves http://127.0.0.1:7861
    mag annotate --raw RAW_DIR --annotator alice --port 7870

See :mod:`mag_dataset.harness.annotate_app`. Decisions are kept in ``RAW/annotations.sqlite``
(``--db``) and written back into the raw episodes as they are made; stop and restart the app
at any time.
"""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path

from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_raw(parser, "raw corpus folder")
    parser.add_argument("--drafts", type=Path, default=None, help="drafts file (default: RAW/guide_drafts.jsonl if present)")
    parser.add_argument("--db", type=Path, default=None, help="decision database (default: RAW/annotations.sqlite)")
    parser.add_argument("--audit", type=Path, default=None, help="audit file for adjudication (default: RAW/audit.jsonl)")
    parser.add_argument("--annotator", default=None, help="your name, recorded with every decision (default: login name)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on")
    parser.add_argument("--port", type=int, default=7861, help="port to serve on")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.cli import UserError
    from mag_dataset.harness.annotate_app import launch

    args.raw = options.raw_folder(args, must_exist=False)
    annotator = args.annotator
    if annotator is None:
        try:
            annotator = getpass.getuser()
        except (KeyError, OSError):
            annotator = ""
    try:
        _warn_other_databases(args)
        launch(args.raw, drafts_path=args.drafts, db_path=args.db, audit_path=args.audit, annotator=annotator,
               host=args.host, port=args.port, block=True)
    except (FileNotFoundError, ValueError) as e:
        raise UserError(str(e)) from None
    except ImportError as e:
        raise UserError(f"the annotation app needs Gradio ({e}); install it with: pip install 'mag_dataset[leaderboard]'") from None
    except OSError as e:  # the port is taken, or the address cannot be bound
        raise UserError(f"cannot serve on {args.host}:{args.port}: {_why(e)}; pick another port with --port N") from None
    return 0


def _warn_other_databases(args: argparse.Namespace) -> None:
    """Decisions in another database next to the corpus would be invisible here: say so."""
    import sys

    from mag_dataset.harness.audit import other_decision_dbs
    from mag_dataset.raw import iter_episode_dirs, read_episode, step_id

    if not args.raw.is_dir():
        return  # the app reports the missing folder
    ids = {step_id(ep.task_id, st.step_index) for ep in map(read_episode, iter_episode_dirs(args.raw)) for st in ep.steps}
    folders = [args.audit.parent] if args.audit is not None else []
    for line in other_decision_dbs(args.raw, args.db, ids, *folders):
        print(f"warning: {line}", file=sys.stderr)


def _why(e: OSError) -> str:
    # Gradio's own message suggests GRADIO_SERVER_PORT, which this command does not read
    text = str(e)
    if "empty port" in text or e.errno in (98, 48):  # EADDRINUSE on Linux, macOS
        return "the port is in use"
    return e.strerror or text
