"""``mag publish --repo-id mag/webmre [--folder DIR] [--dry-run]``: upload a built dataset folder."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo-id", required=True, help="Hub dataset repo, e.g. mag/webmre")
    parser.add_argument(
        "--folder", type=Path, default=None, help="built dataset folder (default: build the bundled sample corpus)"
    )
    parser.add_argument("--dry-run", action="store_true", help="write the folder and list what would be uploaded; upload nothing")
    parser.add_argument("--private", action="store_true", help="create the repo as private if it does not exist")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.cli import UserError
    from mag_dataset.hub import PublishError, format_plan, publish_folder, upload_plan

    if args.repo_id.count("/") != 1 or not all(args.repo_id.split("/")):
        raise UserError(f"--repo-id must look like owner/name, got {args.repo_id!r}")
    folder = args.folder
    if folder is None:
        from mag_dataset.dataset import bundled_dataset

        try:
            folder = bundled_dataset()
        except FileNotFoundError as e:
            raise UserError(str(e)) from None
    try:
        plan = upload_plan(folder)
        print(format_plan(args.repo_id, folder, plan))
        if args.dry_run:
            print("dry run: nothing uploaded")
            return 0
        url = publish_folder(folder, args.repo_id, private=args.private)
    except PublishError as e:
        raise UserError(str(e)) from None
    print(f"published: {url}")
    return 0
