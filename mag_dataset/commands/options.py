"""The CLI's vocabulary: one spelling per concept, shared by every ``mag`` command.

One name per concept, whichever command takes it:

- ``--out``: what a command writes (a report, a run folder, a raw corpus, a dataset folder);
- ``--raw``: a raw corpus folder the command reads (or updates in place);
- ``--dataset``: a built dataset the command reads (``score``, ``compare``, ``publish``);
  ``--board-dir``: the leaderboard's data folder;
- ``--verdicts``: a verdicts file (JSONL); ``--judges``: judge *endpoints* only (``mag audit``);
- ``--cache-dir``: the LLM answer cache folder;
- ``--view``, ``--contract``, ``--split``: choices read from :class:`View`, :class:`Contract`, :class:`Split`;
- ``--tasks``: task ids or site patterns (``sites.shop.*``), space- or comma-separated, repeatable;
- ``--no-progress``: silence the progress lines a long command prints on stderr.

Spellings used before this vocabulary (``--output``, ``--folder``, ``--dir``, ``--cache``,
``score --judges``, a positional raw folder) still parse for a release as hidden aliases
that print a one-line note on stderr. This module holds only these shared flags and that
alias mechanism; each command's own flags and logic stay in its module.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, Callable

from mag_dataset.actions import Contract, View
from mag_dataset.schema import Split


class DeprecatedAlias(argparse.Action):
    """A hidden old spelling: stores like the new flag and says so on stderr, once per use."""

    def __init__(self, option_strings: list[str], dest: str, *, new: str, old: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new, self.old = new, old

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog}: note: {self.old} is deprecated and will be removed; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str, dest: str, **kwargs: Any) -> None:
    """Keep ``old`` (an option string) working as a hidden alias of ``new`` for a release.

    Args:
        parser: the command's parser.
        old: the old option string, e.g. ``--output``.
        new: the option users should write instead, named in the note.
        dest: the attribute the new option stores into.
        **kwargs: ``type`` and the like, as the new option has them.
    """
    parser.add_argument(old, dest=dest, action=DeprecatedAlias, new=new, old=old,
                        default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)


def add_out(parser: argparse.ArgumentParser, help: str, *, old: str | None = None, **kwargs: Any) -> None:
    """``--out PATH`` (what the command writes), with ``old`` as a hidden alias when given."""
    parser.add_argument("--out", type=Path, help=help, **kwargs)
    if old is not None:
        deprecated_alias(parser, old, "--out", "out", type=Path)


def add_raw(parser: argparse.ArgumentParser, help: str) -> None:
    """``--raw RAW_DIR``, with the positional raw folder of earlier releases as a hidden alias.

    The command reads the folder with :func:`raw_folder`, which says when it is missing.
    """
    parser.add_argument("--raw", type=Path, default=None, metavar="RAW_DIR", help=f"{help} (required)")
    # no type=: argparse would turn the SUPPRESS default into a Path and report a folder never given
    parser.add_argument("raw_positional", nargs="?", action=DeprecatedAlias, new="--raw RAW_DIR",
                        old="a positional raw folder", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def raw_folder(args: argparse.Namespace, *, must_exist: bool = True) -> Path:
    """The raw corpus folder of :func:`add_raw`'s flags (or of a plain ``--raw``).

    Args:
        args: the parsed flags.
        must_exist: say so when the folder does not exist (``mag annotate``'s app reports it itself).

    Raises:
        UserError: no folder given, given twice (``--raw`` and the old positional), or not found.
    """
    from mag_dataset.errors import UserError

    positional = getattr(args, "raw_positional", None)
    positional = None if positional is None else Path(positional)
    if positional is not None and args.raw is not None and positional != args.raw:
        raise UserError(f"two raw corpus folders given ({positional} and --raw {args.raw}); give one with --raw")
    raw = args.raw if args.raw is not None else positional
    if raw is None:
        raise UserError("the raw corpus folder is required: --raw RAW_DIR")
    if must_exist and not raw.is_dir():
        raise UserError(f"raw corpus folder not found: {raw}")
    return raw


#: ``--cache-dir`` of the commands that ask LLM endpoints (the rule: :func:`mag_dataset.cache.llm_cache_dir`)
LLM_CACHE_HELP = ("answer cache folder (default: llm/ in $MAG_CACHE_DIR, else in $XDG_CACHE_HOME/mag_dataset "
                  "or ~/.cache/mag_dataset)")


def add_cache_dir(parser: argparse.ArgumentParser, help: str, *, old: str | None = None, **kwargs: Any) -> None:
    """``--cache-dir DIR`` (the LLM answer cache), with ``old`` as a hidden alias when given."""
    parser.add_argument("--cache-dir", default=None, metavar="DIR", help=help, **kwargs)
    if old is not None:
        deprecated_alias(parser, old, "--cache-dir", "cache_dir", **kwargs)


def add_view_contract_split(parser: argparse.ArgumentParser, *, contract: bool = True) -> None:
    """``--view``, ``--contract`` and ``--split``, their choices read from the enums."""
    parser.add_argument("--view", required=True, choices=[v.value for v in View],
                        help="grounding view of the gold: som (element ids) or coord (pixel points)")
    if contract:
        parser.add_argument("--contract", required=True, choices=[c.value for c in Contract],
                            help="output contract the predictions follow: A (action), G (guide), J (action then guide), "
                                 "JG (guide then action)")
    parser.add_argument("--split", default=Split.TEST.value, choices=[s.value for s in Split],
                        help="dataset split to score against (default: %(default)s)")


def add_verdicts(parser: argparse.ArgumentParser) -> None:
    """``--verdicts FILE`` (``--judges`` kept as a hidden alias for a release)."""
    parser.add_argument("--verdicts", type=Path, default=None, metavar="FILE",
                        help="cached judge verdicts JSONL (enables usefulness)")
    deprecated_alias(parser, "--judges", "--verdicts", "verdicts", type=Path)


def add_tasks(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    """``--tasks TASK ...``: read with :func:`task_list` (``mag record``, ``mag live-eval``)."""
    parser.add_argument("--tasks", nargs="+", action="extend", metavar="TASK",
                        help=f"{help}; space- or comma-separated, may be repeated", **kwargs)


def task_list(values: list[str] | None) -> list[str]:
    """The tasks of ``--tasks``: values split at commas and blanks, site patterns expanded, each once, in order.

    Raises:
        UserError: a site pattern that matches no site task.
    """
    from mag_dataset.errors import UserError
    from mag_dataset.sites import SiteError, task_ids

    names = [t for value in values or [] for t in re.split(r"[,\s]+", value) if t]
    try:
        expanded = [x for t in names for x in (task_ids([t]) if t.startswith("sites.") else [t])]
    except SiteError as e:
        raise UserError(str(e)) from None
    return list(dict.fromkeys(expanded))  # a task named twice would run twice over itself


def sites_of(tasks: list[str] | tuple[str, ...]) -> list[Any]:
    """The sites the site tasks (``sites.<site>.<template>``) among ``tasks`` need, each once, in order:
    a task's own site, then the other sites of a cross-site task."""
    from mag_dataset.sites import site_class, task_class

    names: dict[str, None] = {}
    for t in tasks:
        if t.startswith("sites."):
            names[t.split(".")[1]] = None
            names.update(dict.fromkeys(c.name for c in task_class(t).other_sites))
    return [site_class(n)() for n in names]


def add_no_progress(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: hide the progress lines (stderr); the result and warnings still print."""
    parser.add_argument("--no-progress", action="store_true", help="hide the progress output (stderr)")


def progress_printer(args: argparse.Namespace) -> Callable[[str], None] | None:
    """The progress callback of a command: a line to stderr, or None under ``--no-progress``."""
    if args.no_progress:
        return None
    return lambda line: print(line, file=sys.stderr, flush=True)


def start_stage(raw: Path, stage: str, settings: dict[str, Any]) -> Any:
    """This run of a command that rewrites a raw corpus, as a corpus stage
    (:class:`mag_dataset.raw.StageRun`: the command calls its ``finish()`` when the corpus is
    rewritten); prints the one warning line when the stage runs out of the canonical order.

    Raises:
        UserError: the corpus's stage record is malformed (one line naming the file and entry).
    """
    from mag_dataset.errors import UserError
    from mag_dataset.raw import StageRecordError, StageRun

    try:
        run = StageRun(raw, stage, settings)
    except StageRecordError as e:
        raise UserError(str(e)) from None
    if run.warning:
        print(f"warning: {run.warning}", file=sys.stderr)
    return run
