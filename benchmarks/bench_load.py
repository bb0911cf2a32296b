"""Time of the second ``datasets.load_dataset`` of each view (goal: under 1 s).

The first load of a view converts its Parquet shards into the datasets Arrow cache; the
second is what every later command pays. Run::

    python benchmarks/bench_load.py                      # the bundled sample corpus
    python benchmarks/bench_load.py --folder DIR         # any built folder
    python benchmarks/bench_load.py --repeat 5 --split train
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

GOAL_S = 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=None, help="built dataset folder (default: the bundled sample)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--repeat", type=int, default=3, help="timed loads after the first")
    args = parser.parse_args(argv)

    import datasets

    from mag_dataset.dataset import bundled_dataset

    datasets.disable_progress_bars()
    folder = args.folder or bundled_dataset()
    print(f"folder: {folder}")
    print(f"datasets {datasets.__version__}; goal: second load < {GOAL_S:.1f} s")
    ok = True
    for view in ("som", "coord"):
        start = time.perf_counter()
        ds = datasets.load_dataset(str(folder), view, split=args.split)
        first = time.perf_counter() - start
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            ds = datasets.load_dataset(str(folder), view, split=args.split)
            times.append(time.perf_counter() - start)
        second = times[0]
        ok &= second < GOAL_S
        print(
            f"{view:5s} {args.split}: {len(ds)} rows; first load {first:.3f} s; "
            f"second load {second:.3f} s (median of {len(times)}: {statistics.median(times):.3f} s) "
            f"{'OK' if second < GOAL_S else 'SLOWER THAN GOAL'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
