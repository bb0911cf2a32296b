"""Cold `mag demo` path on a corpus of ~1,000 site steps: compact, build (both views), load, score.

Issue 10 asks that ``pip install -e . && mag demo`` run in under two minutes on a fresh
machine with ~1,000 steps of 1280x720 screenshots in both views. This benchmark makes such
a corpus by repeating real recorded episodes (``--from``: a raw corpus recorded on the
sites, PNG or already compacted) under new task ids until it holds ``--steps`` steps, then
times each stage the demo runs on a cold cache::

    python benchmarks/bench_build.py --from RAW_SITE_EPISODES [--steps 1000] [--keep DIR]
    python benchmarks/bench_build.py --raw RAW_DIR             # time an existing corpus as it is

Stages: ``compact`` (PNG -> lossless WebP, only when the input has PNGs; a one-off
maintainer step, not part of the demo), ``build`` (both views: the coord view stores the
WebP bytes as they are, the som view renders Set-of-Mark images on a thread pool), ``load``
(``datasets.load_dataset`` of every view and split: the first load converts Parquet to the
Arrow cache), ``statistics`` and ``scores`` (the heuristic baseline in 4 contracts x 2 views,
test split) — the demo's stages, run in-process. Prints one line per stage and the total:
wall seconds and the process's CPU seconds (all threads), so that a run on a busy machine
still says what the stages cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 120.0


def replicate(src: Path, dst: Path, steps: int) -> int:
    """Copy the episodes of ``src`` into ``dst`` round-robin, renaming task ids, until ``steps`` steps."""
    import dataclasses

    from mag_dataset.raw import iter_episode_dirs, read_episode, rewrite_episode_json

    folders = [f for f in iter_episode_dirs(src) if read_episode(f).success]
    if not folders:
        raise SystemExit(f"{src}: no successful episodes")
    dst.mkdir(parents=True)
    total, k = 0, 0
    while total < steps:
        folder = folders[k % len(folders)]
        ep = read_episode(folder)  # episode.json or, compacted, episode.json.gz
        new_id = f"{ep.episode_id}.copy-{k // len(folders)}"
        shutil.copytree(folder, dst / new_id)
        meta = dict(ep.metadata)
        if isinstance(meta.get("params"), dict):
            meta["params"] = {**meta["params"], "_copy": k // len(folders)}
        rewrite_episode_json(dst / new_id, dataclasses.replace(ep, episode_id=new_id, task_id=new_id, metadata=meta))
        total += len(ep.steps)
        k += 1
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--from", dest="source", type=Path, help="raw episodes to repeat into a ~--steps corpus")
    src.add_argument("--raw", type=Path, help="an existing raw corpus, timed as it is (copied first)")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--keep", type=Path, default=None, help="keep the work folder here (default: a temp folder)")
    args = parser.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_build."))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["HF_DATASETS_CACHE"] = str(work / "hf_cache")  # a cold datasets cache (read at import)
    import datasets

    from mag_dataset.builder import build_dataset
    from mag_dataset.commands import demo
    from mag_dataset.compact import compact_corpus
    from mag_dataset.builder.splits import write_corpus_manifest
    from mag_dataset.raw import image_format, read_corpus

    datasets.disable_progress_bars()
    raw = work / "raw"
    if raw.exists():
        shutil.rmtree(raw)
    if args.source is not None:
        n = replicate(args.source, raw, args.steps)
        write_corpus_manifest(raw, 0)
    else:
        shutil.copytree(args.raw, raw)
        n = sum(len(e.steps) for e in read_corpus(raw))
    print(f"corpus: {n} steps, {sum(1 for _ in raw.iterdir() if _.is_dir())} episodes; cpus: {os.cpu_count()}")
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}
    first = next(p for p in raw.rglob("*") if p.suffix in (".png", ".webp") and "_som" not in p.name)
    if image_format(first.read_bytes()) == "png":
        start, cpu_start = time.perf_counter(), time.process_time()
        report = compact_corpus(raw)
        times["compact (maintainer, once)"] = time.perf_counter() - start
        cpu["compact (maintainer, once)"] = time.process_time() - cpu_start
        print(f"compact: {report.summary()}")
    size = sum(p.stat().st_size for p in raw.rglob("*") if p.is_file())
    print(f"raw corpus: {size / 2**20:.1f} MiB")
    out = work / "built"
    if out.exists():
        shutil.rmtree(out)
    start, cpu_start = time.perf_counter(), time.process_time()
    build_dataset(raw, out, progress=False)
    times["build (both views)"] = time.perf_counter() - start
    cpu["build (both views)"] = time.process_time() - cpu_start
    shards = {v: sum(p.stat().st_size for p in (out / v).glob("*.parquet")) / 2**20 for v in ("som", "coord")}
    print(f"built: som {shards['som']:.1f} MiB, coord {shards['coord']:.1f} MiB of Parquet")
    start, cpu_start = time.perf_counter(), time.process_time()
    loaded = demo.stage_load(out)
    times["load (cold cache)"] = time.perf_counter() - start
    cpu["load (cold cache)"] = time.process_time() - cpu_start
    start, cpu_start = time.perf_counter(), time.process_time()
    demo.stage_statistics(loaded)
    times["statistics"] = time.perf_counter() - start
    cpu["statistics"] = time.process_time() - cpu_start
    start, cpu_start = time.perf_counter(), time.process_time()
    demo.stage_scores(loaded)
    times["scores"] = time.perf_counter() - start
    cpu["scores"] = time.process_time() - cpu_start
    demo_total = sum(v for k, v in times.items() if not k.startswith("compact"))
    print()
    demo_cpu = sum(v for k, v in cpu.items() if not k.startswith("compact"))
    for k, v in times.items():
        print(f"{k:28s} {v:7.1f} s wall {cpu[k]:7.1f} s cpu")
    print(f"{'demo path total':28s} {demo_total:7.1f} s wall {demo_cpu:7.1f} s cpu "
          f"(goal < {GOAL_S:.0f} s wall: {'OK' if demo_total < GOAL_S else 'SLOWER'}; load average {os.getloadavg()[0]:.1f})")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if demo_total < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
