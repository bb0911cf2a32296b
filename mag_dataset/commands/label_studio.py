"""``mag label-studio``: verification tasks out to a Label Studio project, its annotations back in.

Examples::

    export LABEL_STUDIO_API_KEY=...   # Account & Settings -> Personal Access Token (or Legacy Token)
    mag label-studio export --raw RAW_DIR --url http://127.0.0.1:8080 --title "shop guides"
    mag label-studio import --raw RAW_DIR --url http://127.0.0.1:8080 --project 3
    mag label-studio export --raw RAW_DIR --needs-adjudication --title "shop disputes"
    mag label-studio serve --data-dir ls-data --port 8080   # a local server, offline (Ctrl-C stops it)

``export`` makes a project of the steps that have a draft guide (``RAW/guide_drafts.jsonl``):
each task shows the screenshot with the gold target boxed (a keypoint for a point-only
step), the draft in an editable text box and the choices accept / edit / reject, plus a
note. ``import`` records every annotation as one response (annotator: the Label Studio
user's e-mail address, source ``label-studio``) in the annotation database (``--db``, default
``RAW/annotations.sqlite``) and writes the resolved decisions into the episodes; importing
again records only new annotations, and an annotation made on a step that changed since the
export is refused and listed. ``export --needs-adjudication`` makes a project of the steps
whose annotators disagree, each showing their answers: a person who took no part answers as
the adjudicator, and ``import`` records it like any response (and appends its entry to the
corpus's stage record, ``mag stages``). ``serve`` installs Label Studio into its own virtual
environment (``$MAG_LABEL_STUDIO_HOME``, default ``~/.cache/mag_dataset/label-studio``; its
pins conflict with this package's), starts it on 127.0.0.1 with SQLite and no calls out,
and prints the URL and the administrator's API key. See
:mod:`mag_dataset.harness.label_studio`.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from mag_dataset.commands import options

ACTIONS = ("export", "import", "serve")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("--raw", type=Path, default=None, metavar="RAW_DIR",
                        help="with export / import (required): the raw corpus folder")
    parser.add_argument("--url", default=os.environ.get("LABEL_STUDIO_URL", "http://127.0.0.1:8080"),
                        help="the Label Studio server (default: $LABEL_STUDIO_URL or http://127.0.0.1:8080)")
    parser.add_argument("--title", default=None, help="with export: the new project's title (default: 'mag verification RAW_DIR')")
    parser.add_argument("--needs-adjudication", action="store_true",
                        help="with export: only the steps whose annotators disagree, with their answers (for an adjudicator)")
    parser.add_argument("--project", type=int, default=None, metavar="ID", help="with import (required): the project id")
    parser.add_argument("--drafts", type=Path, default=None, help="with export: drafts file (default: RAW/guide_drafts.jsonl)")
    parser.add_argument("--db", type=Path, default=None, help="annotation database (default: RAW/annotations.sqlite)")
    parser.add_argument("--data-dir", type=Path, default=None, help="with serve (required): the server's data folder")
    parser.add_argument("--port", type=int, default=8080, help="with serve: the port on 127.0.0.1 (default 8080)")
    parser.add_argument("--username", default="admin@localhost", help="with serve: the administrator's e-mail address")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.harness.label_studio import LabelStudioError

    try:
        if args.action == "serve":
            return _serve(args)
        args.raw = options.raw_folder(args)
        if args.action == "export":
            return _export(args)
        return _import(args)
    except LabelStudioError as e:
        raise UserError(str(e).splitlines()[0] if args.action != "serve" else str(e)) from None
    except (FileNotFoundError, ValueError) as e:
        raise UserError(str(e)) from None


def _client(args: argparse.Namespace):
    from mag_dataset.harness.label_studio import API_KEY_ENV, Client

    return Client(args.url, os.environ.get(API_KEY_ENV, ""))


def _export(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.harness.label_studio import export_project

    if args.project is not None:
        raise UserError("export makes a new project: give it a --title, not --project")
    title = args.title or f"mag verification {args.raw.resolve().name}"
    with _client(args) as client:
        report = export_project(args.raw, client, title, drafts_path=args.drafts, db_path=args.db,
                                needs_adjudication=args.needs_adjudication)
    print(report.summary())
    return 0


def _import(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.harness.label_studio import import_project

    if args.project is None:
        raise UserError("import needs the project id: --project ID (the number in the project's URL)")
    stage = options.start_stage(args.raw, "label-studio import", {"project": args.project})
    with _client(args) as client:
        report = import_project(args.raw, client, args.project, db_path=args.db)
    stage.finish()
    for line in report.lines():
        print(line, file=sys.stderr)
    print(report.summary())
    return 0


def _serve(args: argparse.Namespace) -> int:
    import json
    import time

    from mag_dataset.errors import UserError
    from mag_dataset.harness.label_studio import LocalServer

    if args.data_dir is None:
        raise UserError("serve needs the server's data folder: --data-dir DIR")
    server = LocalServer(args.data_dir, port=args.port)
    # The first start creates the administrator with these; later starts reuse the same (Label
    # Studio does not change an existing user's password or key), so they are kept beside its data.
    login_file = args.data_dir / "mag-login.json"
    if login_file.is_file():
        login = json.loads(login_file.read_text())
    elif (args.data_dir / "label_studio.sqlite3").is_file():
        raise UserError(f"{args.data_dir} holds a Label Studio database that mag label-studio serve did not make "
                        f"(no {login_file.name}): start it with label-studio itself, or pick a new --data-dir")
    else:
        login = {"username": args.username, "password": secrets.token_urlsafe(12), "api_key": secrets.token_hex(20)}
    print(f"installing Label Studio into {server.venv} (once) ...", file=sys.stderr, flush=True)
    took = server.install()
    if took:
        print(f"installed in {took:.0f} s", file=sys.stderr)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    login_file.write_text(json.dumps(login, indent=1) + "\n")
    login_file.chmod(0o600)
    up = server.start(login["username"], login["password"], login["api_key"])
    print(f"Label Studio at {server.url} (up in {up:.0f} s; log {server.log})\n"
          f"  log in as {login['username']}, password and API key in {login_file}:\n"
          f"  export LABEL_STUDIO_API_KEY={login['api_key']}\n"
          f"Ctrl-C stops it.", flush=True)
    try:
        while server.process is not None and server.process.poll() is None:
            time.sleep(1)
        raise UserError(f"Label Studio exited; its log {server.log} ends:\n{server.log_tail(10)}")
    finally:
        server.stop()
