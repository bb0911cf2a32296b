"""``mag view``: browse a live-evaluation run's episodes and steps in a local page (127.0.0.1 only).

Examples::

    mag view runs/heuristic-som-J                 # http://127.0.0.1:8765/ until Ctrl-C
    mag view runs/heuristic-som-J --port 0        # any free port (the address is printed)

The page lists the run's episodes (status, raw reward, steps) and shows each step: the
screenshot, with or without the Set-of-Mark overlay, the chosen target's box drawn on it,
the model's raw output, the parsed action, the guide, the BrowserGym action and every error,
and the episode's verdict (outcome, and what the task's check expected and found). Arrow
keys step through steps (left/right) and episodes (up/down). It reads RUN_DIR and serves
nothing outside it; it writes nothing. A raw episode folder of mag record works too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mag_dataset.errors import UserError

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a mag live-eval run folder (its --out)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.harness.live_eval.viewer import ViewerError, ViewerServer

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be in 0..65535, got {args.port}")
    try:
        server = ViewerServer(args.run_dir, args.port)
    except ViewerError as e:
        raise UserError(str(e)) from None
    except OSError as e:  # the port is taken
        raise UserError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror or e} (try --port 0)") from None
    print(f"Serving {args.run_dir} at {server.url} (read-only; Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0
