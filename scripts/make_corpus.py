"""Make the bundled corpus (``mag_dataset/data/raw``) from nothing, reproducibly.

The bundled raw corpus has two site families: the four real applications of
:mod:`mag_dataset.sites` (shop, forum, tracker, wiki: the realistic part) and ``miniwob``
(the MiniWoB++ episodes the package shipped before, kept as their own family). Every
number below is a seed or a documented setting; running the script twice on the same
recordings gives the same corpus. Steps:

1. **Record** every site template with its expert, 3 successful episodes per template,
   corpus seed 0, 15% of the clicks recorded the way human demonstrations are (a point,
   no element id)::

       mag sites setup
       mag record --tasks 'sites.*' --episodes 3 --seed 0 --point-only-share 0.15 --out WORK/sites

   (the bundled corpus was recorded in two parallel runs, ``'sites.shop.*' 'sites.forum.*'``
   and ``'sites.tracker.*' 'sites.wiki.*'``: episode seeds depend only on the task id, the
   index and the corpus seed, so the episodes are the same), and the MiniWoB++ family::

       mag record --episodes 4 --seed 0 --out WORK/miniwob     # its default 19 tasks

   Pass ``--sites-raw DIR [DIR ...]`` / ``--miniwob-raw DIR`` to start from recordings
   already made (the script then records nothing).
2. **Merge** the recordings into one work folder (episode folders copied; a duplicate
   episode id is an error). The MiniWoB++ family is **thinned** to the first
   :data:`MINIWOB_EPISODES` episodes of every task, in the order ``mag record`` tries its
   seeds (:func:`mag_dataset.live.recorder.episode_seed` with k = 0, 1, ...): exactly the
   episodes ``mag record --episodes 4`` keeps, so a bigger MiniWoB++ recording (the package
   used to ship 10 per task) gives the same corpus. Four per task keep the corpus within
   :data:`SIZE_CAP` with room to spare.
3. **Evidence** (``mag recapture --evidence``): episodes recorded before the recorder stored
   the DOM fingerprints the audit's judges read get them from a replay that reproduces their
   pages pixel for pixel (a no-op for recordings made today; an episode whose replay differs
   keeps none, and the audit then cannot confirm it: record it again).
4. **Recapture** two episodes of every site template (``mag recapture --per-template 2
   --seed 0``): its observations are re-rendered by replaying its actions on a site that
   is reset once and then moves on with every replay, the path by which WebMRE's stale
   screenshots arose (:mod:`mag_dataset.live.recapture`). The sites must be set up; they
   are served for the run when they are not running.
5. **Unify** (``mag unify``): point-only clicks are restored to their element
   (``coordinate_restored``) or marked unrestorable; recaptured steps whose screenshot
   differs from the action-time one beyond the documented threshold are flagged ``stale``.
6. **Audit** (``mag audit --judges dom,name,pixel --steps all``): the three rule-based page
   judges (:mod:`mag_dataset.harness.page_judges`: DOM fingerprint, role + accessible name,
   pixel template match; no model) witness where every targeted step's gold element is on
   the screenshot the step shows, and are combined as WebMRE combines its judges:
   ``confirmed``, ``remapped``, ``unmappable`` or ``disputed``. Their verdicts and evidence go
   to ``audit_verdicts.jsonl`` (a rerun is byte-identical).
7. **Compact** (``mag compact``): lossless WebP screenshots, no stored Set-of-Mark images
   (rendered at build time), capture geometry in every step, and each screenshot that
   several episodes show (a template's start page) stored once, in ``_shared_images``
   (:mod:`mag_dataset.compact`).
8. **Split** (``corpus.json``): by task, seeded, held-out templates per family
   (:func:`mag_dataset.live.recorder.write_corpus_manifest`), with ``drop_test_echoes``: the
   builder leaves out of test every step that repeats a train step's screenshot and gold
   action (:func:`mag_dataset.builder.corpus.test_echoes`).
9. **Install**: the result replaces ``--out`` (default ``mag_dataset/data/raw``); the
   script refuses a result that would take the package's data folder (``--out``'s parent)
   over :data:`SIZE_CAP` on disk, measured as ``du`` does (:func:`disk_usage`).

The audit needs no model; judge models (``mag audit --judges FILE``) and people (``mag
annotate``) can be added to the panel later.

Usage::

    python scripts/make_corpus.py --work /tmp/corpus_work                  # record everything (hours)
    python scripts/make_corpus.py --work /tmp/w --sites-raw /work/corpus/raw_a /work/corpus/raw_b \\
        --miniwob-raw /tmp/old_miniwob                                     # from recordings
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The recording settings of the bundled corpus (step 1).
SITE_TASKS = ("sites.*",)
SITE_EPISODES = 3
CORPUS_SEED = 0
POINT_ONLY_SHARE = 0.15
#: MiniWoB++ episodes kept per task (step 2).
MINIWOB_EPISODES = 4
#: Step 3: how many episodes of each site template are recaptured, and the seed choosing them.
RECAPTURE_PER_TEMPLATE = 2
RECAPTURE_SEED = 0
#: Step 6: the audit's panel (the rule-based page judges).
AUDIT_JUDGES = "dom,name,pixel"
#: The issue's size cap for the bundled raw corpus (bytes of all its files).
SIZE_CAP = 45 * 1024 * 1024


def mag(*args: str) -> None:
    """Run one ``mag`` command, echoing it; stop the script when it fails."""
    cmd = [sys.executable, "-m", "mag_dataset.cli", *args]
    print("+ mag " + " ".join(args), flush=True)
    subprocess.run(cmd, check=True)


def record(work: Path) -> tuple[list[Path], Path]:
    sites, miniwob = work / "recorded_sites", work / "recorded_miniwob"
    mag("record", "--tasks", *SITE_TASKS, "--episodes", str(SITE_EPISODES), "--seed", str(CORPUS_SEED),
        "--point-only-share", str(POINT_ONLY_SHARE), "--out", str(sites))
    mag("record", "--episodes", str(MINIWOB_EPISODES), "--seed", str(CORPUS_SEED), "--out", str(miniwob))
    return [sites], miniwob


def miniwob_kept(names: set[str], per_task: int = MINIWOB_EPISODES) -> set[str]:
    """The MiniWoB++ episode folders kept: per task, the first ``per_task`` present in seed order.

    ``mag record`` tries episode seeds ``episode_seed(task, k, seed)`` for k = 0, 1, ... and
    keeps the successful ones, so these are the episodes it keeps with ``--episodes per_task``.
    """
    from mag_dataset.live.recorder import episode_seed

    tasks = sorted({n.split(".seed-")[0] for n in names})
    kept: set[str] = set()
    for task in tasks:
        found = [f"{task}.seed-{episode_seed(task, k, CORPUS_SEED)}" for k in range(10 * per_task)]
        kept.update([n for n in found if n in names][:per_task])
    return kept


def merge(sources: list[Path], miniwob: Path, merged: Path) -> None:
    """Copy every site episode of ``sources`` and the kept MiniWoB++ episodes into ``merged`` (new)."""
    from mag_dataset.raw import iter_episode_dirs

    merged.mkdir(parents=True)
    mw = iter_episode_dirs(miniwob)
    keep = miniwob_kept({f.name for f in mw})
    for folder in [f for src in sources for f in iter_episode_dirs(src)] + [f for f in mw if f.name in keep]:
        dest = merged / folder.name
        if dest.exists():
            raise SystemExit(f"episode {folder.name} is in two of the inputs")
        shutil.copytree(folder, dest)


def disk_usage(root: Path) -> int:
    """The bytes ``root`` takes on disk, every file and folder in whole blocks, as ``du`` counts
    (``du -sh mag_dataset/data`` is the front door's measure of the package's data)."""
    return sum(p.lstat().st_blocks * 512 for p in [root, *root.rglob("*")]) if root.exists() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="new work folder (recordings and the merged corpus)")
    parser.add_argument("--sites-raw", type=Path, nargs="+", help="site recordings already made (skip recording)")
    parser.add_argument("--miniwob-raw", type=Path, help="MiniWoB++ recordings already made (skip recording)")
    parser.add_argument("--out", type=Path, default=REPO / "mag_dataset" / "data" / "raw",
                        help="where the corpus goes (replaced; default: %(default)s)")
    args = parser.parse_args(argv)
    if args.work.exists() and any(args.work.iterdir()):
        parser.error(f"--work {args.work} is not empty")
    if (args.sites_raw is None) != (args.miniwob_raw is None):
        parser.error("give both --sites-raw and --miniwob-raw, or neither (record both)")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.sites_raw is None:
        sites_raw, miniwob_raw = record(args.work)
    else:
        sites_raw, miniwob_raw = args.sites_raw, args.miniwob_raw
    merged = args.work / "merged"
    merge(list(sites_raw), miniwob_raw, merged)
    mag("recapture", "--raw", str(merged), "--evidence")
    mag("recapture", "--raw", str(merged), "--per-template", str(RECAPTURE_PER_TEMPLATE), "--seed", str(RECAPTURE_SEED))
    mag("unify", "--raw", str(merged))
    mag("audit", "--raw", str(merged), "--judges", AUDIT_JUDGES, "--steps", "all")
    mag("compact", "--raw", str(merged))

    from mag_dataset.live.recorder import write_corpus_manifest

    write_corpus_manifest(merged, CORPUS_SEED, drop_test_echoes=True)
    out = args.out.resolve()
    size = disk_usage(merged) + disk_usage(out.parent) - disk_usage(out)  # the data folder once installed
    if size > SIZE_CAP:
        raise SystemExit(f"the data folder would take {size / 2**20:.1f} MiB on disk, over the "
                         f"{SIZE_CAP / 2**20:.0f} MiB cap")
    # install: the new corpus replaces --out in one rename (the old one is removed after)
    staged = out.with_name(f".{out.name}.new")
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(merged, staged)
    old = out.with_name(f".{out.name}.old")
    if out.exists():
        out.rename(old)
    staged.rename(out)
    if old.exists():
        shutil.rmtree(old)
    manifest = json.loads((out / "corpus.json").read_text("utf-8"))
    print(f"corpus: {len(manifest['splits'])} episodes -> {out}; the data folder takes {size / 2**20:.1f} MiB on disk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
