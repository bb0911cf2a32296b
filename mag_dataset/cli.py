"""The ``mag`` command line: a table of subcommands, each a thin module.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int``: it turns
arguments into a config and makes one library call. Modules are imported only when their
command runs, so ``mag --help`` stays fast and light. A command's ``--help`` shows its
module docstring (with examples) as the epilog. Flags that several commands share are
spelled once in :mod:`mag_dataset.commands.options` (``--out``, ``--raw``, ``--verdicts``,
``--cache-dir``, ``--no-progress``). This module holds the command table, the error contract
(:class:`~mag_dataset.errors.UserError` -> one line, exit 2) and the dispatch; no command logic.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys

from mag_dataset.errors import UserError

#: subcommand -> (module, one-line help). Explicit on purpose: grep here to find a command.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("mag_dataset.commands.demo", "build the bundled sample, load it, print statistics and demo scores"),
    "build": ("mag_dataset.commands.build", "build a Hub-ready dataset folder (both views) from raw episodes"),
    "publish": ("mag_dataset.commands.publish", "upload a built dataset folder to the Hugging Face Hub"),
    "record": ("mag_dataset.commands.record", "record expert episodes (MiniWoB++ or the sites) in headless Chromium"),
    "score": ("mag_dataset.commands.score", "score a predictions file against a dataset split"),
    "compare": ("mag_dataset.commands.compare", "compare two predictions files: paired task bootstrap, sign-flip test, Holm"),
    "leaderboard": ("mag_dataset.commands.leaderboard", "run the leaderboard Space locally"),
    "live-eval": ("mag_dataset.commands.live_eval", "evaluate an agent live in BrowserGym tasks"),
    "view": ("mag_dataset.commands.view", "browse a live-eval run's episodes and steps in a local page"),
    "draft-guides": ("mag_dataset.commands.draft_guides", "draft guides with an LLM endpoint (cached)"),
    "annotate": ("mag_dataset.commands.annotate", "run the human verification / adjudication app"),
    "label-studio": ("mag_dataset.commands.label_studio", "export verification tasks to Label Studio, import its annotations"),
    "audit": ("mag_dataset.commands.audit", "three-judge label audit of raw episodes"),
    "lint-guides": ("mag_dataset.commands.lint_guides", "list gold guides that would mislead their reader (guide lint)"),
    "unify": ("mag_dataset.commands.unify", "restore coordinate-only steps and flag stale screenshots"),
    "stages": ("mag_dataset.commands.stages", "list the stages that rewrote a raw corpus, in order, and whether the order holds"),
    "compact": ("mag_dataset.commands.compact", "store a raw corpus compactly: lossless WebP screenshots, SoM rendered at build"),
    "import-browsergym": ("mag_dataset.commands.import_browsergym", "convert BrowserGym/AgentLab runs to raw episodes"),
    "import-trace": ("mag_dataset.commands.import_trace", "convert Playwright trace archives to raw episodes"),
    "import-webarena": ("mag_dataset.commands.import_webarena", "convert WebArena result folders (run.py) to raw episodes"),
    "recapture": ("mag_dataset.commands.recapture", "re-render site episodes on a site that has moved on (stale path)"),
    "sites": ("mag_dataset.commands.sites", "set up, serve, reset and stop the real web applications (shop, tracker, ...)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mag", description="WebMRE / MAG benchmark tools",
                                     epilog="Run 'mag COMMAND --help' for a command's flags and examples.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _version() -> str:
    from mag_dataset import __version__

    return __version__


def help_epilog(doc: str | None) -> str:
    """A command module's docstring as plain text for ``--help``.

    reST roles and double backquotes are dropped and a closing ``::`` becomes ``:``;
    indentation is kept, so example blocks stay blocks under the raw formatter.
    """
    text = inspect.cleandoc(doc or "")
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "")
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of ``mag NAME``: its module's flags, its docstring as the epilog.

    Raises:
        ImportError: the command's module needs an optional dependency that is missing.
    """
    module_name, help_text = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"mag {name}", description=help_text, epilog=help_epilog(module.__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``mag`` with ``argv`` (default: the process's arguments); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    top = build_parser()
    if not argv or argv[0] not in COMMANDS:
        top.parse_args(argv or ["--help"])
        return 2
    name = argv[0]
    try:
        parser = command_parser(name)
    except ImportError as e:
        print(f"mag {name}: this command needs an optional dependency that is not installed ({e}).\n"
              f"Install it with: pip install 'mag_dataset[all]'", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])  # already imported by command_parser
    args = parser.parse_args(argv[1:])
    try:
        return int(module.run(args) or 0)
    except UserError as e:
        print(f"mag {name}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mag {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # Run through the package module, as the ``mag`` entry point does, so that the commands are
    # imported once, as ``mag_dataset.commands.*``.
    from mag_dataset.cli import main as _main

    sys.exit(_main())
