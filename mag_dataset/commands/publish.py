"""``mag publish --repo-id mag/webmre [--folder DIR] [--dry-run]``: upload a built dataset folder."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo-id", required=True, help="Hub dataset repo, e.g. mag/webmre")
    parser.add_argument(
        "--folder",
        type=Path,
        default=None,
        help="built dataset folder; a new or empty one gets a build of the bundled sample corpus "
        "(default: the cached build of the bundled sample)",
    )
    parser.add_argument("--dry-run", action="store_true", help="write the folder and list what would be uploaded; upload nothing")
    parser.add_argument("--private", action="store_true", help="create the repo as private if it does not exist")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.builder import BuildError
    from mag_dataset.cli import UserError
    from mag_dataset.hub import PublishError, format_plan, publish_folder, upload_plan

    if args.repo_id.count("/") != 1 or not all(args.repo_id.split("/")):
        raise UserError(f"--repo-id must look like owner/name, got {args.repo_id!r}")
    folder = args.folder
    try:
        if folder is None:
            from mag_dataset.dataset import bundled_dataset

            folder = bundled_dataset()
        elif not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
            from mag_dataset.builder import build_dataset
            from mag_dataset.dataset import bundled_raw_dir

            print(f"building the bundled sample corpus into {folder}")
            folder = build_dataset(bundled_raw_dir(), folder, progress=False)
    except (BuildError, OSError) as e:  # no bundled corpus, an unwritable --folder
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
