"""``mag publish``: upload the dataset (with its ``eval.yaml``), the ``evaluate`` metric Space
and the leaderboard Space.

Examples::

    mag publish --repo-id mag/webmre --dry-run          # list every file, upload nothing
    mag publish --repo-id mag/webmre --dataset DATASET_DIR --only dataset
    mag publish --repo-id mag/webmre --private

The Spaces default to ``<owner>/webmre_metric`` and ``<owner>/webmre-leaderboard`` (the owner
of ``--repo-id``); ``--only dataset`` (or ``metric``, ``leaderboard``, repeatable) publishes a
part. ``--dry-run`` lists every file each upload would send, and the Space secrets to set
by hand; it uploads nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mag_dataset.commands import options

KINDS = ("dataset", "metric", "leaderboard")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo-id", required=True, help="Hub dataset repo, e.g. mag/webmre")
    parser.add_argument(
        "--dataset",
        type=Path,
        default=None,
        metavar="DATASET_DIR",
        help="built dataset folder to upload; a new or empty one gets a copy of the bundled sample corpus's "
        "build (default: that cached build itself)",
    )
    options.deprecated_alias(parser, "--folder", "--dataset", "dataset", type=Path)
    parser.add_argument("--metric-space", default=None, help="the metric Space repo (default: <owner>/webmre_metric)")
    parser.add_argument(
        "--leaderboard-space", default=None, help="the leaderboard Space repo (default: <owner>/webmre-leaderboard)"
    )
    parser.add_argument(
        "--only", action="append", choices=KINDS, default=None, help="publish only this part (repeatable; default: all three)"
    )
    parser.add_argument("--dry-run", action="store_true", help="write the folder and list what would be uploaded; upload nothing")
    parser.add_argument("--private", action="store_true", help="create the repos as private if they do not exist")


def _repo_id(value: str, flag: str) -> str:
    from mag_dataset.errors import UserError

    if value.count("/") != 1 or not all(value.split("/")):
        raise UserError(f"{flag} must look like owner/name, got {value!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from mag_dataset.builder import BuildError
    from mag_dataset.errors import UserError
    from mag_dataset.publish import (
        SPACES,
        PublishError,
        format_plan,
        format_space_plan,
        publish_folder,
        publish_space,
        space_plan,
        upload_plan,
    )

    repo_id = _repo_id(args.repo_id, "--repo-id")
    owner = repo_id.split("/")[0]
    kinds = [k for k in KINDS if args.only is None or k in args.only]
    spaces = {
        "metric": _repo_id(args.metric_space or f"{owner}/{SPACES['metric'][1]}", "--metric-space"),
        "leaderboard": _repo_id(args.leaderboard_space or f"{owner}/{SPACES['leaderboard'][1]}", "--leaderboard-space"),
    }
    folder = args.dataset
    if "dataset" in kinds:
        try:
            if folder is None:
                from mag_dataset.dataset import bundled_dataset

                folder = bundled_dataset()
            elif not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
                from mag_dataset.builder.write import copy_build
                from mag_dataset.dataset import bundled_dataset

                print(f"copying the bundled sample corpus's build into {folder}")
                folder = copy_build(bundled_dataset(), folder)  # built once per machine, then cached
        except (BuildError, OSError) as e:  # no bundled corpus, an unwritable --dataset
            raise UserError(str(e)) from None
    try:
        # every plan is checked before anything is uploaded
        plan = upload_plan(folder) if "dataset" in kinds else None
        space_plans = [space_plan(k, spaces[k]) for k in kinds if k in spaces]
        if plan is not None:
            print(format_plan(repo_id, folder, plan))
        for sp in space_plans:
            print(format_space_plan(sp))
        if args.dry_run:
            print("dry run: nothing uploaded")
            return 0
        if plan is not None:
            print(f"published: {publish_folder(folder, repo_id, private=args.private)}")
        for sp in space_plans:
            print(f"published: {publish_space(sp, private=args.private)}")
    except PublishError as e:
        raise UserError(str(e)) from None
    for sp in space_plans:
        if sp.secrets:
            print(f"now set the secrets of https://huggingface.co/spaces/{sp.repo_id}: {', '.join(sp.secrets)}")
    return 0
