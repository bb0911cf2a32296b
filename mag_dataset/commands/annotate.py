"""``mag annotate``: the human verification and adjudication app (Gradio).

Examples::

    mag annotate --raw RAW_DIR                      # serves http://127.0.0.1:7861
    mag annotate --raw RAW_DIR --annotator alice --port 7870
    mag annotate --raw RAW_DIR --assign alice,bob --overlap 0.2 --seed 0   # split the drafts, exit
    mag annotate --raw RAW_DIR --report                                   # progress and agreement, exit
    mag annotate --raw RAW_DIR --export responses.jsonl                   # every response, exit

See :mod:`mag_dataset.harness.annotate_app`. Every response is kept in ``RAW/annotations.sqlite``
(``--db``; :mod:`mag_dataset.harness.annotation_store` has the rule that resolves a step)
and each step's resolution is written back into the raw episode as responses come in; stop
and restart the app at any time. A session that changed the corpus appends its entry to the
corpus's stage record (``mag stages``) when the app stops.
"""

from __future__ import annotations

import argparse
import getpass
import sys
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
    team = parser.add_argument_group("team work (each does its job and exits instead of serving the app)")
    team.add_argument("--assign", default=None, metavar="NAMES",
                      help="split the drafted steps among these annotators (comma-separated) and exit")
    team.add_argument("--overlap", type=float, default=0.0,
                      help="with --assign: share of the steps given to two annotators, for agreement (0-1)")
    team.add_argument("--seed", type=int, default=0, help="with --assign: the shuffle's seed")
    team.add_argument("--force", action="store_true", help="with --assign: assign already assigned steps again")
    team.add_argument("--report", action="store_true",
                      help="print progress ('M of N verified') and agreement on the overlap, and exit")
    team.add_argument("--export", type=Path, default=None, metavar="FILE.jsonl",
                      help="write every response (who, what, when, round) as JSONL and exit")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError

    if args.assign is not None or args.report or args.export is not None:
        return _team(args)
    if args.overlap or args.force:
        raise UserError("--overlap and --force go with --assign NAMES")
    args.raw = options.raw_folder(args, must_exist=False)
    annotator = args.annotator
    if annotator is None:
        try:
            annotator = getpass.getuser()
        except (KeyError, OSError):
            annotator = ""
    stage = None
    try:
        _warn_other_databases(args)
        from mag_dataset.harness.annotate_app import launch
        if args.raw.is_dir():
            stage = options.start_stage(args.raw, "annotate", {"annotator": annotator})
        launch(args.raw, drafts_path=args.drafts, db_path=args.db, audit_path=args.audit, annotator=annotator,
               host=args.host, port=args.port, block=True)
        if stage is not None:  # when the app stops: an entry only when the session changed the corpus
            stage.finish(only_if_changed=True)
    except (FileNotFoundError, ValueError) as e:
        raise UserError(str(e)) from None
    except ImportError as e:
        raise UserError(f"the annotation app needs Gradio ({e}); install it with: pip install 'mag_dataset[leaderboard]'") from None
    except OSError as e:  # the port is taken, or the address cannot be bound
        raise UserError(f"cannot serve on {args.host}:{args.port}: {_why(e)}; pick another port with --port N") from None
    return 0


def _team(args: argparse.Namespace) -> int:
    """``--assign``, ``--report`` and ``--export``: one library call each, then exit."""
    from mag_dataset.errors import UserError
    from mag_dataset.harness.annotation_session import Session

    if sum([args.assign is not None, bool(args.report), args.export is not None]) > 1:
        raise UserError("give one of --assign, --report and --export at a time")
    if args.assign is None and (args.overlap or args.force):
        raise UserError("--overlap and --force go with --assign NAMES")
    if args.export is not None and args.export.suffix != ".jsonl":
        raise UserError(f"--export writes JSONL: name the file *.jsonl, not {args.export}")
    args.raw = options.raw_folder(args)
    try:
        session = Session(args.raw, args.drafts, args.db, args.audit)
    except (FileNotFoundError, ValueError) as e:
        raise UserError(str(e)) from None
    try:
        if args.assign is not None:
            names = [n.strip() for n in args.assign.split(",") if n.strip()]
            lines = session.assign(names, args.overlap, args.seed, force=args.force)
        elif args.report:
            lines = session.report()
        else:
            n = session.export(args.export)
            lines = [f"wrote {n} responses to {args.export}"]
    except ValueError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"cannot write {args.export}: {e.strerror or e}") from None
    finally:
        session.close()
    print("\n".join(lines))
    return 0


def _warn_other_databases(args: argparse.Namespace) -> None:
    """Decisions in another database next to the corpus would be invisible here: say so."""
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
