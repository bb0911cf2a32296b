"""Benchmark of ``mag compare``: 1,220 steps x 3 seeds per side, 1,000 resamples (goal: < 2 s).

The two files are the size of a WebMRE SoM test pass (1,220 steps, 55-element menus) with
three seeds each: A in contract A and B in contract J (model-like outputs, a few format
failures). Timed, as ``mag compare`` runs them after loading the gold:

1. ``score``: read, validate and score both files with their per-step scores kept
   (the part shared with ``mag score``; B's guides need BLEU and ROUGE-L);
2. ``compare``: :func:`mag_dataset.compare.compare_reports` alone: the paired task
   bootstrap, the sign-flip draws and Holm over the metrics and every breakdown
   group (1,000 resamples);
3. ``total`` = 1 + 2.

``--dataset DIR`` takes the gold steps from a built dataset instead (its som train and test
splits, repeated under new task ids up to ``--steps``): the recorded site corpus has longer
guides (median 18 words) and menus than the synthetic steps, and guide metrics cost by the
word.

Times are the best CPU time of this process over ``--repeat`` runs (single-threaded work,
so CPU time is its cost even on a machine shared with other jobs); the first scoring run is
printed too, since it also imports sacrebleu.

Run::

    python benchmarks/bench_compare.py
    python benchmarks/bench_compare.py --steps 1220 --seeds 3 --resamples 1000 --repeat 3
    python benchmarks/bench_compare.py --dataset /tmp/ds --sites-only    # a `mag build --out /tmp/ds` folder
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scorer import model_like_output, synthetic_steps  # noqa: E402

from mag_dataset.score_file import score_file  # noqa: E402
from mag_dataset.compare import compare_reports  # noqa: E402
from mag_dataset.predictions import Prediction, write_predictions  # noqa: E402


def _best(fn, repeat: int) -> tuple[float, object, float]:
    """Best CPU time over ``repeat`` runs, the last result, and the first run's time."""
    best, out, first = float("inf"), None, None
    for _ in range(repeat):
        start = time.process_time()
        out = fn()
        t = time.process_time() - start
        best, first = min(best, t), t if first is None else first
    return best, out, first  # type: ignore[return-value]


def corpus_steps(folder: str, n_steps: int, sites_only: bool = False) -> list:
    """``n_steps`` gold steps of a built dataset (som, train + test), repeated under new task ids.

    ``sites_only`` keeps the steps recorded on the four web applications (task ids ``sites.*``).
    """
    from mag_dataset.dataset import load_steps

    base = [s for split in ("train", "test") for s in load_steps(folder, "som", split)
            if not sites_only or s.task_id.startswith("sites.")]
    if not base:
        raise SystemExit(f"no som steps in {folder}")
    out, copy = [], 0
    while len(out) < n_steps:
        for s in base:  # whole tasks first, so a copy is never cut inside a task's ids
            out.append(dataclasses.replace(s, step_id=f"c{copy}/{s.step_id}", task_id=f"c{copy}/{s.task_id}"))
        copy += 1
    return out[:n_steps]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1220)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dataset", help="a built dataset folder to take the gold steps from (default: synthetic)")
    ap.add_argument("--sites-only", action="store_true", help="with --dataset: only the steps recorded on the sites")
    args = ap.parse_args(argv)

    steps = corpus_steps(args.dataset, args.steps, args.sites_only) if args.dataset else synthetic_steps(args.steps)
    tmp = Path(tempfile.mkdtemp(prefix="bench_compare_"))
    files = {}
    for side, contract in (("a", "A"), ("b", "J")):
        rng = random.Random(7 if side == "a" else 11)
        preds = [Prediction(s.step_id, model_like_output(s, "som", contract, rng), seed)
                 for seed in range(args.seeds) for s in steps]
        files[side] = (write_predictions(tmp / f"{side}.jsonl", preds), contract)

    def score_both():
        return [score_file(path, steps, "som", contract, keep_steps=True) for path, contract in files.values()]

    t_score, reports, t_first = _best(score_both, args.repeat)
    ra, rb = reports  # type: ignore[misc]
    t_cmp, comp, _ = _best(lambda: compare_reports(ra, rb, steps, resamples=args.resamples), args.repeat)
    n_tests = len(comp.metrics) + comp.counts["breakdown_tests"]  # type: ignore[attr-defined]
    total = t_score + t_cmp
    words = sorted(len(s.guide.split()) for s in steps)
    print(f"gold: {args.dataset or 'synthetic'}{' (sites only)' if args.sites_only else ''}, median guide {words[len(words) // 2]} words")
    print(f"mag compare benchmark: {args.steps} steps x {args.seeds} seeds per side, {args.resamples} resamples, "
          f"{len(comp.metrics)} metrics + {comp.counts['breakdown_tests']} breakdown tests = {n_tests}")  # type: ignore[attr-defined]
    print(f"  score both files (keep_steps) {t_score:7.3f} s CPU")
    print(f"  compare_reports               {t_cmp:7.3f} s CPU")
    print(f"  total                         {total:7.3f} s CPU   (goal < 2 s: {'met' if total < 2 else 'NOT met'})")
    print(f"  first scoring run             {t_first:7.3f} s CPU   (includes the one-time import of sacrebleu: "
          f"a fresh `mag compare` process pays it once)")
    saa = comp.metrics["saa"]  # type: ignore[attr-defined]
    print(f"  saa: A {saa['a']:.3f}  B {saa['b']:.3f}  diff {saa['diff']:+.3f}  CI {saa['ci95']}  "
          f"p {saa['p_value']:.3g} ({saa['test']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
