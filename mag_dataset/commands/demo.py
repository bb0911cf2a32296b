"""``mag demo``: build the bundled sample, load both views with ``datasets``, show statistics.

Examples::

    mag demo                       # the cached build of the bundled corpus
    mag demo --out /tmp/webmre     # a fresh build into this folder

The demo runs as stages, each a plain function, so a stage can be added with one line in
:func:`run`:

1. :func:`stage_build` — build both views of the bundled raw corpus (the cached build by
   default, or a fresh one into ``--out``);
2. :func:`stage_load` — load every view and split with ``datasets.load_dataset``;
3. :func:`stage_statistics` — print the statistics table per view and split, and the
   table per site family (steps, tasks, medians, flag counts);
4. :func:`stage_scores` — the no-model heuristic baseline predicts the test split in all
   four contracts and both views; the library scorer scores it against the gold of each
   view (the coord view's with the som menus, so its J and JG rows show the consistency
   extensions as ``mag score`` does).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from mag_dataset.actions import View
from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_out(parser, "build into this folder (default: the cached build of the bundled corpus)", default=None, metavar="DIR")
    options.add_no_progress(parser)


def stage_build(out: Path | None, progress: bool = True) -> Path:
    """Build the bundled corpus (both views) and return the dataset folder.

    Args:
        out: a folder to build into; None for the cached build (made quietly when missing).
        progress: show the build's progress bars (a build into ``out`` only).
    """
    from mag_dataset.builder import build_dataset
    from mag_dataset.dataset import bundled_dataset, bundled_raw_dir

    start = time.perf_counter()
    if out is None:
        folder = bundled_dataset()
    else:
        folder = build_dataset(bundled_raw_dir(), out, progress=progress)
    print(f"[build] {folder} ({time.perf_counter() - start:.1f} s)")
    return folder


def stage_load(folder: Path) -> dict[str, dict[str, Any]]:
    """Load every view and split with ``datasets``: ``{view: {split: Dataset}}``."""
    import json

    from mag_dataset.builder import BUILD_INFO_FILE
    from mag_dataset.dataset import load_view
    from mag_dataset.schema import Split

    info = json.loads((folder / BUILD_INFO_FILE).read_text("utf-8"))
    start = time.perf_counter()
    out: dict[str, dict[str, Any]] = {}
    for view in View:
        splits = [s.value for s in Split if s.value in info["views"][view.value]]
        out[view.value] = {split: load_view(folder, view, split) for split in splits}
    n = sum(len(ds) for per in out.values() for ds in per.values())
    print(f"[load] {n} rows in {sum(len(v) for v in out.values())} view/split datasets ({time.perf_counter() - start:.1f} s)")
    return out


def stage_statistics(loaded: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Print and return the statistics table (steps, tasks, sites, action types, flags)."""
    from mag_dataset.card import (
        FAMILY_STAT_COLUMNS,
        STAT_COLUMNS,
        family_statistics,
        format_family_statistics,
        format_statistics,
        split_statistics,
    )

    stats = {
        view: {split: split_statistics(ds.select_columns(list(STAT_COLUMNS)).to_list()) for split, ds in per.items()}
        for view, per in loaded.items()
    }
    print("[statistics]")
    print(format_statistics(stats))
    som = [ds.select_columns(list(FAMILY_STAT_COLUMNS)).to_list() for ds in loaded.get(View.SOM.value, {}).values()]
    print("[statistics per site family] (som view; medians: guide words, candidate menu, steps per task)")
    print(format_family_statistics(family_statistics(r for rows in som for r in rows)))
    return stats


def stage_scores(loaded: dict[str, dict[str, Any]], split: str = "test") -> dict:
    """Score the heuristic baseline on ``split`` in every contract and view; print the table."""
    from mag_dataset.dataset import gold_records, step_from_record
    from mag_dataset.heuristic import format_reports_table, heuristic_reports

    start = time.perf_counter()
    steps = {view: [step_from_record(r) for r in gold_records(per[split])] for view, per in loaded.items() if split in per}
    reports = heuristic_reports(steps)
    print(f"[scores] no-model heuristic baseline, {split} split, micro means "
          f"({time.perf_counter() - start:.1f} s; `mag score` prints the full report)")
    print(format_reports_table(reports))
    return reports


def run(args: argparse.Namespace) -> int:
    from mag_dataset.builder import BuildError
    from mag_dataset.errors import UserError
    from mag_dataset.raw import RawDataError

    try:
        folder = stage_build(args.out, progress=not args.no_progress)
    except (RawDataError, BuildError, OSError) as e:  # OSError: an unwritable --out, unreadable raw files
        raise UserError(str(e)) from None
    if args.no_progress:  # loading a fresh build makes `datasets` prepare its splits, with bars
        import datasets

        datasets.utils.logging.disable_progress_bar()
    loaded = stage_load(folder)
    stage_statistics(loaded)
    stage_scores(loaded)
    return 0
