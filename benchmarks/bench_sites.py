"""Sites: setup time per site, reset time, and recording speed (steps/s) of the experts.

    python benchmarks/bench_sites.py                      # every site; setup read from setup.json
    python benchmarks/bench_sites.py --fresh              # set every site up again from nothing
    python benchmarks/bench_sites.py --site tracker --resets 20 --episodes 1

Setup time is what ``mag sites setup`` took (``setup.json``), or, with ``--fresh``, a new
setup into a temporary ``MAG_SITES_HOME`` timed here. Reset time is the mean and max of
``--resets`` resets of the served site. Recording speed is steps per second of
``record_episode`` over ``--episodes`` episode(s) of every template of the site (the
expert's wall time, browser start and site reset included), with its success count.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", nargs="+", default=None, help="sites (default: all)")
    parser.add_argument("--fresh", action="store_true", help="time a setup from nothing in a temporary home")
    parser.add_argument("--resets", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=1, help="episodes per template for the recording figure")
    args = parser.parse_args(argv)
    if args.fresh:
        os.environ["MAG_SITES_HOME"] = tempfile.mkdtemp(prefix="mag-sites-bench-")

    from mag_dataset.harness.recorder import record_episode
    from mag_dataset.sites import site, site_names, tasks_of
    from mag_dataset.sites.manager import served

    names = args.site or site_names()
    rows = []
    for name in names:
        s = site(name)
        t0 = time.monotonic()
        info = s.setup(lambda m: print(f"  {name}: {m}", file=sys.stderr))
        setup_s = time.monotonic() - t0 if args.fresh else float(info.get("seconds") or 0.0)
        with served([s]):
            resets = [s.reset() for _ in range(args.resets)]
            steps = ok = episodes = 0
            t0 = time.monotonic()
            for task_id in sorted(tasks_of(name)):
                for k in range(args.episodes):
                    r = record_episode(task_id, seed=k)
                    episodes += 1
                    ok += r.ok
                    steps += len(r.episode.steps) if r.episode else 0
            rec_s = time.monotonic() - t0
        rows.append({"site": name, "setup_s": round(setup_s, 1), "reset_mean_s": round(statistics.mean(resets), 3),
                     "reset_max_s": round(max(resets), 3), "episodes": episodes, "succeeded": ok, "steps": steps,
                     "record_s": round(rec_s, 1), "steps_per_s": round(steps / rec_s, 2) if rec_s else 0.0})
    print(f"{'site':8} {'setup s':>8} {'reset mean s':>12} {'reset max s':>11} {'episodes':>8} {'ok':>4} "
          f"{'steps':>6} {'steps/s':>8}")
    for r in rows:
        print(f"{r['site']:8} {r['setup_s']:8.1f} {r['reset_mean_s']:12.3f} {r['reset_max_s']:11.3f} "
              f"{r['episodes']:8d} {r['succeeded']:4d} {r['steps']:6d} {r['steps_per_s']:8.2f}")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
