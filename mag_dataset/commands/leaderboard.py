"""``mag leaderboard [serve|rescore]``: run the leaderboard locally, or re-score every stored
submission and check that each report comes out byte for byte the same.

Settings come from the ``MAG_BOARD_*`` environment variables (see :mod:`mag_dataset.board`);
the options below override them.

Examples::

    mag leaderboard                          # same as: mag leaderboard serve
    mag leaderboard serve --port 7861 --board-dir ./board
    mag leaderboard rescore --board-dir ./board    # exit 1 if any report differs (or its file is missing/altered)
    mag leaderboard rescore --board-dir ./board --update   # after a deliberate scorer change
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

from mag_dataset.errors import UserError
from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    serve = sub.add_parser("serve", help="start the Gradio leaderboard (the default)")
    rescore = sub.add_parser("rescore", help="re-score every stored submission; exit 1 if any report differs")
    for p in (parser, serve, rescore):
        p.add_argument("--board-dir", type=Path, default=argparse.SUPPRESS, metavar="DIR",
                       help="the board's data folder (MAG_BOARD_DIR)")
        options.deprecated_alias(p, "--dir", "--board-dir", "board_dir", type=Path)
        p.add_argument("--db", type=Path, default=argparse.SUPPRESS, help="database path (MAG_BOARD_DB)")
        p.add_argument("--gold", default=argparse.SUPPRESS,
                       help="gold dataset folder or Hub repo id (MAG_BOARD_GOLD; default: bundled sample)")
    for p in (parser, serve):
        p.add_argument("--host", default=argparse.SUPPRESS, help="interface to bind (default 127.0.0.1)")
        p.add_argument("--port", type=int, default=argparse.SUPPRESS, help="port (default 7860)")
    rescore.add_argument("--update", action="store_true",
                         help="store the new report where it differs (after a deliberate scorer change)")


def _config(args: argparse.Namespace):
    from mag_dataset.board import BoardConfig

    try:
        return BoardConfig.from_env(
            data_dir=getattr(args, "board_dir", None), db_path=getattr(args, "db", None), gold=getattr(args, "gold", None)
        )
    except ValueError as e:
        raise UserError(str(e)) from None


def app_path() -> Path:
    """Where ``leaderboard/app.py`` is: ``$MAG_BOARD_APP`` or the repository's copy."""
    env = os.environ.get("MAG_BOARD_APP")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "leaderboard" / "app.py"
    if not path.is_file():
        raise UserError(
            f"the leaderboard app is not at {path}: it ships in the repository's leaderboard/ folder; "
            "run from a clone or set MAG_BOARD_APP to its app.py"
        )
    return path


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "action", None) or "serve"
    if action == "rescore":
        return _rescore(args)
    config = _config(args)
    for key, var in (("board_dir", "MAG_BOARD_DIR"), ("db", "MAG_BOARD_DB"), ("gold", "MAG_BOARD_GOLD")):
        if getattr(args, key, None) is not None:
            os.environ[var] = str(getattr(args, key))
    del config  # validated above; the app reads the same variables
    spec = importlib.util.spec_from_file_location("mag_leaderboard_app", app_path())
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = []
    if getattr(args, "host", None):
        argv += ["--host", args.host]
    if getattr(args, "port", None):
        argv += ["--port", str(args.port)]
    return int(module.main(argv) or 0)


def _rescore(args: argparse.Namespace) -> int:
    from mag_dataset.board import Board

    config = _config(args)
    if not Path(config.db_path).exists():
        raise UserError(f"no leaderboard database at {config.db_path}")
    board = Board(config)
    results = board.rescore_all(update=args.update)
    for r in results:
        state = "identical" if r.identical else "FAILED" if r.failed else ("updated" if args.update else "DIFFERS")
        extra = "" if r.identical else f" ({r.detail})" if r.failed else \
            f" ({r.detail}; scorer {r.stored_version} -> {r.current_version})"
        print(f"#{r.id}: {state}{extra}")
    same = sum(r.identical for r in results)
    print(f"{same}/{len(results)} stored reports reproduced byte for byte")
    failed = sum(r.failed for r in results)
    if failed:
        print(f"{failed} stored submission(s) could not be re-scored")
    return 0 if same == len(results) or (args.update and not failed) else 1
