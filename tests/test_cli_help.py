"""Every ``mag`` command's ``--help``, walked from the parser: one vocabulary, help on every flag.

The commands come from :data:`mag_dataset.cli.COMMANDS` and each command's parser (its
subcommands included), never from a hand list; every example line in an epilog, and every
``mag`` line in the README's and docs' code blocks, is parsed by the parser it names, so the
documentation cannot drift from the flags.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mag_dataset.actions import Contract, View
from mag_dataset.cli import COMMANDS, command_parser, main
from mag_dataset.commands.options import DeprecatedAlias
from mag_dataset.schema import Split

#: spellings replaced by the vocabulary of :mod:`mag_dataset.commands.options` (hidden aliases now)
OLD_SPELLINGS = {"--output", "--folder", "--dir", "--cache"}


def _parsers(name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """The command's parser and those of its subcommands (``mag leaderboard rescore``)."""
    out = [(name, command_parser(name))]
    for _, parser in list(out):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                out += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    return out


ALL = [(label, parser) for name in COMMANDS for label, parser in _parsers(name)]


def _visible_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions if a.help is not argparse.SUPPRESS for s in a.option_strings}


def test_the_walk_finds_every_command_and_subcommand():
    labels = [label for label, _ in ALL]
    assert len(COMMANDS) >= 17 and set(COMMANDS) <= set(labels)
    assert {"leaderboard serve", "leaderboard rescore"} <= set(labels)


def test_every_command_module_is_named_after_its_command():
    """`mag draft-guides` lived in commands/annotate.py and `mag annotate` in annotate_app.py."""
    from mag_dataset.cli import COMMANDS

    assert {name: module for name, (module, _) in COMMANDS.items()
            if module != "mag_dataset.commands." + name.replace("-", "_")} == {}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_exits_0_and_shows_the_docstring_with_an_example(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: mag {name}")
    epilog = command_parser(name).epilog or ""
    assert epilog and epilog in out  # kept as written (raw formatter), not re-wrapped
    assert "``" not in epilog and ":mod:" not in epilog and "::\n" not in epilog, "reST markup left in --help"
    assert any(line.startswith(f"mag {name}") for line in _example_lines(epilog)), \
        f"no indented example line starting 'mag {name}' in its docstring"


@pytest.mark.parametrize("label,parser", ALL, ids=[label for label, _ in ALL])
def test_every_option_has_help_and_only_aliases_are_hidden(label, parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        if action.help is argparse.SUPPRESS:
            assert isinstance(action, DeprecatedAlias), f"mag {label}: {action.dest} is hidden but is no alias"
            continue
        assert action.help and action.help.strip(), f"mag {label}: {action.option_strings or action.dest} has no help"


@pytest.mark.parametrize("label,parser", ALL, ids=[label for label, _ in ALL])
def test_one_spelling_per_concept(label, parser):
    visible = _visible_options(parser)
    assert not OLD_SPELLINGS & set(visible), f"mag {label} shows an old spelling: {OLD_SPELLINGS & set(visible)}"
    if "--judges" in visible:  # judge endpoints only; a verdicts file is --verdicts
        assert label == "audit" and "endpoint" in visible["--judges"].help
    if "--verdicts" in visible:
        assert "verdict" in visible["--verdicts"].help
    positionals = [a.dest for a in parser._actions if not a.option_strings and a.help is not argparse.SUPPRESS]
    assert not {"raw", "raw_dir", "out", "output"} & set(positionals), f"mag {label}: positional {positionals}"
    for flag, enum in (("--view", View), ("--contract", Contract), ("--split", Split)):
        if flag in visible and visible[flag].choices is not None:
            values = {e.value for e in enum}
            assert set(visible[flag].choices) - {"all"} <= values, f"mag {label} {flag}: {visible[flag].choices}"
            if flag == "--view":
                assert list(visible[flag].choices) == [v.value for v in View]
    if "--raw" in visible:
        assert visible["--raw"].metavar == "RAW_DIR"
    if "--out" in visible:
        assert visible["--out"].metavar in {"FILE", "DIR", "RAW_DIR"} and visible["--out"].type is Path


def test_the_shared_flags_are_where_the_issue_asks():
    long_running = ("demo", "build", "record", "live-eval", "audit", "draft-guides", "import-browsergym",
                    "import-trace", "recapture")
    found = {name for name in COMMANDS if "--no-progress" in _visible_options(command_parser(name))}
    assert set(long_running) <= found
    raw_readers = {name for name in COMMANDS if "--raw" in _visible_options(command_parser(name))}
    assert {"build", "compact", "recapture", "audit", "unify", "annotate", "draft-guides"} <= raw_readers
    cache = {name for name in COMMANDS if "--cache-dir" in _visible_options(command_parser(name))}
    assert {"audit", "draft-guides", "live-eval"} <= cache


def _example_lines(epilog: str) -> list[str]:
    """Indented ``mag ...`` lines of an epilog, continuation backslashes joined."""
    lines, pending = [], ""
    for raw in epilog.splitlines():
        if not pending and not (raw.startswith(" ") and raw.strip().startswith("mag ")):
            continue
        pending += raw.strip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        lines.append(pending)
        pending = ""
    return lines


EXAMPLES = [line for name in COMMANDS for line in _example_lines(command_parser(name).epilog or "")]


def test_examples_were_found():
    assert len(EXAMPLES) >= 2 * len(COMMANDS)


def _assert_parses_in_the_current_vocabulary(line: str, where: str) -> None:
    argv = shlex.split(line, comments=True)[1:]
    assert argv and argv[0] in COMMANDS, f"{where}: {line}"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            command_parser(argv[0]).parse_args(argv[1:])
        except SystemExit:
            pytest.fail(f"{where}: {line!r} does not parse: {err.getvalue().strip()}")
    assert "deprecated" not in err.getvalue(), f"{where}: {line!r} uses an old spelling: {err.getvalue()}"


@pytest.mark.parametrize("line", EXAMPLES)
def test_every_example_in_a_docstring_parses_with_the_current_flags(line):
    _assert_parses_in_the_current_vocabulary(line, "a command's docstring")


@pytest.mark.parametrize("command,old,new,dest", [
    (["score", "--predictions", "p.jsonl", "--dataset", "d", "--view", "som", "--contract", "J"],
     ["--output", "r.json"], "--out", "out"),
    (["score", "--predictions", "p.jsonl", "--dataset", "d", "--view", "som", "--contract", "J"],
     ["--judges", "v.jsonl"], "--verdicts", "verdicts"),
    (["compare", "--dataset", "d", "--view", "som", "--baseline", "a", "--contract-a", "A", "--candidate", "b",
      "--contract-b", "J"], ["--output", "c.json"], "--out", "out"),
    (["publish", "--repo-id", "o/n"], ["--folder", "ds"], "--dataset", "dataset"),
    (["leaderboard", "rescore"], ["--dir", "board"], "--board-dir", "board_dir"),
    (["leaderboard"], ["--dir", "board"], "--board-dir", "board_dir"),
    (["audit", "--raw", "r"], ["--cache", "c"], "--cache-dir", "cache_dir"),
    (["draft-guides", "--raw", "r", "--base-url", "u", "--model", "m"], ["--cache", "c"], "--cache-dir", "cache_dir"),
    (["unify"], ["r"], "--raw RAW_DIR", "raw_positional"),
    (["audit"], ["r"], "--raw RAW_DIR", "raw_positional"),
    (["annotate"], ["r"], "--raw RAW_DIR", "raw_positional"),
    (["draft-guides", "--base-url", "u", "--model", "m"], ["r"], "--raw RAW_DIR", "raw_positional"),
])
def test_old_spellings_still_parse_with_a_one_line_note(command, old, new, dest):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        args = command_parser(command[0]).parse_args(command[1:] + old)
    assert str(getattr(args, dest)) == old[-1]
    note = err.getvalue()
    assert note.count("\n") == 1 and "deprecated" in note and f"use {new}" in note, note


def test_a_raw_folder_given_two_ways_or_not_at_all_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert main(["unify", str(tmp_path / "a"), "--raw", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("mag unify: error: two raw corpus folders") and len(err) == 2  # the note, the error
    assert main(["unify"]) == 2
    assert capsys.readouterr().err.strip() == "mag unify: error: the raw corpus folder is required: --raw RAW_DIR"


def test_the_old_positional_still_runs_the_command(tmp_path, capsys):
    assert main(["unify", str(tmp_path), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("would change: ")
    assert "use --raw RAW_DIR" in captured.err
    assert main(["unify", "--raw", str(tmp_path), "--dry-run"]) == 0
    assert capsys.readouterr().err == ""


def test_no_progress_silences_the_progress_lines_not_the_summary(tmp_path):
    # in a child process: import-trace starts BrowserGym's process-wide Playwright, which would
    # stay running in this pytest worker and break every later sync Playwright test in it
    (tmp_path / "bad.zip").write_text("not a zip")
    argv = [sys.executable, "-m", "mag_dataset.cli", "import-trace", str(tmp_path / "bad.zip"),
            "--out", str(tmp_path / "raw"), "--intent", "x"]
    loud = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert loud.returncode == 1, loud.stderr
    assert loud.stderr.startswith("skipped bad.zip: not a zip archive")
    quiet = subprocess.run(argv + ["--no-progress"], capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 1, quiet.stderr
    assert quiet.stderr == "" and quiet.stdout == loud.stdout and "skipped 1" in quiet.stdout


REPO = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "leaderboard/README.md", "loaders/README.md", "baselines/README.md",
        *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]


def _doc_commands() -> list[tuple[str, str]]:
    """``mag ...`` lines of the documents' code blocks, except synopses (``[--flag X]``, ``<...>``, ``...``)."""
    found = []
    for doc in DOCS:
        inside, pending = False, ""
        for line in (REPO / doc).read_text("utf-8").splitlines():
            if line.lstrip().startswith("```"):
                inside = not inside
                continue
            text = line.strip()
            if not inside or (not pending and not text.startswith("mag ")):
                continue
            pending += text
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
                continue
            command, pending = pending, ""
            head = command.split("#")[0]
            if not any(mark in head for mark in ("[", "<", "...")):
                found.append((doc, command))
    return found


DOC_COMMANDS = _doc_commands()


def test_the_documents_commands_were_found():
    assert len(DOC_COMMANDS) >= 20 and {doc for doc, _ in DOC_COMMANDS} >= {"README.md", "docs/harness.md"}


@pytest.mark.parametrize("doc,line", DOC_COMMANDS)
def test_every_command_in_the_documents_parses_with_the_current_flags(doc, line):
    _assert_parses_in_the_current_vocabulary(line, doc)


def test_record_and_live_eval_read_tasks_the_same_way():
    from mag_dataset.cli import UserError
    from mag_dataset.commands.options import sites_of, task_list

    argv = ["--tasks", "click-button,enter-text", "login-user", "--tasks", "sites.forum.topic_author click-button"]
    record = command_parser("record").parse_args(["--out", "x", *argv])
    live = command_parser("live-eval").parse_args(["--agent", "heuristic", "--view", "som", "--contract", "J", *argv])
    assert task_list(record.tasks) == task_list(live.tasks) == [
        "click-button", "enter-text", "login-user", "sites.forum.topic_author"]
    assert [s.name for s in sites_of(task_list(["sites.forum.topic_author", "sites.wiki.watch_page",
                                                "sites.forum.topic_author"]))] == ["forum", "wiki"]
    # a cross-site task needs the other sites it uses too (sites.forum.reply_with_ticket_milestone: the tracker)
    assert [s.name for s in sites_of(["sites.forum.reply_with_ticket_milestone"])] == ["forum", "tracker"]
    assert len(task_list(["sites.forum.*"])) >= 10
    with pytest.raises(UserError, match="no site task matches 'sites.nope.*'"):
        task_list(["sites.nope.*"])
    assert command_parser("record").parse_args(["--out", "x"]).tasks is None  # the bundled tasks, chosen in run
