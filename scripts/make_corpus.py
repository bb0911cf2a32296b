"""Make the bundled corpus (``mag_dataset/data/raw``) from nothing, reproducibly.

The bundled raw corpus has two site families: the four real applications of
:mod:`mag_dataset.sites` (shop, forum, tracker, wiki: the realistic part) and ``miniwob``
(the MiniWoB++ episodes the package shipped before, kept as their own family). Every
number below is a seed or a documented setting; running the script twice on the same
recordings gives the same corpus. Steps:

1. **Record** every site template with its expert, 4 successful episodes per template,
   corpus seed 0, 15% of the clicks recorded the way human demonstrations are (a point,
   no element id)::

       mag sites setup
       mag record --tasks 'sites.*' --episodes 4 --seed 0 --point-only-share 0.15 --out WORK/sites

   (the bundled corpus was recorded in two parallel runs, ``'sites.forum.*' 'sites.wiki.*'``
   and ``'sites.shop.*' 'sites.tracker.*'``: episode seeds depend only on the task id, the
   index and the corpus seed, so the episodes are the same), and the MiniWoB++ family::

       mag record --episodes 4 --seed 0 --out WORK/miniwob     # its default 19 tasks

   Pass ``--sites-raw DIR [DIR ...]`` / ``--miniwob-raw DIR`` to start from recordings
   already made (the script then records nothing); ``--miniwob-raw`` may be a whole corpus,
   the bundled one included: only its MiniWoB++ episodes are taken.
2. **Merge** the recordings into one work folder (episode folders copied with the shared
   screenshots they name; a duplicate episode id is an error). The MiniWoB++ family is
   **thinned** to the first
   :data:`MINIWOB_EPISODES` episodes of every task, in the order ``mag record`` tries its
   seeds (:func:`mag_dataset.harness.recorder.episode_seed` with k = 0, 1, ...): exactly the
   episodes ``mag record --episodes 4`` keeps, so a bigger MiniWoB++ recording (the package
   used to ship 10 per task) gives the same corpus. Four per task keep the corpus within
   :data:`SIZE_CAP` with room to spare.
3. **Evidence** (``mag recapture --evidence``): episodes recorded before the recorder stored
   the DOM fingerprints the audit's judges read get them from a replay that reproduces their
   pages pixel for pixel (a no-op for recordings made today; an episode whose replay differs
   keeps none, and the audit then cannot confirm it: record it again).
4. **Recapture** every site episode on a site that moved on (``mag recapture --share 1
   --seed 0 --drift 7``): before each replay its site is reset and drifted with other users'
   activity (:meth:`mag_dataset.sites.base.Site.drift`: new orders, posts, tickets and
   revisions, changed statuses and prices), then the episode's actions are replayed and its
   observations re-rendered, the path by which WebMRE's stale screenshots arose
   (:mod:`mag_dataset.harness.recapture`). The sites must be set up; they are served for the run
   when they are not running.
5. **Unify** (``mag unify``): point-only clicks are restored to their element
   (``coordinate_restored``) or marked unrestorable; recaptured steps whose screenshot
   differs from the action-time one beyond the documented threshold are flagged ``stale``.
6. **Audit** (``mag audit --judges dom,name,pixel --steps all``): the three rule-based page
   judges (:mod:`mag_dataset.harness.page_judges`: DOM fingerprint, role + accessible name,
   pixel template match; no model) witness where every targeted step's gold element is on
   the screenshot the step shows, and are combined as WebMRE combines its judges:
   ``confirmed``, ``remapped``, ``unmappable`` or ``disputed``. Their verdicts and evidence go
   to ``audit_verdicts.jsonl`` (a rerun is byte-identical). Then the guides
   (``mag lint-guides --regenerate``): the generated ones written again by today's
   generators from what the recording stored, and the guide lint must find nothing.
7. **Compact** (``mag compact``): lossless WebP screenshots, no stored Set-of-Mark images
   (rendered at build time), capture geometry in every step, each screenshot that
   several episodes show (a template's start page) stored once, in ``_shared_images``, and
   each episode's JSON gzip-compressed as ``episode.json.gz`` (:mod:`mag_dataset.compact`).
8. **Fit the size cap** (:func:`fit_to_cap`): per site template, its episodes in seed order
   while the template's steps stay within a budget (its first episode always), for the
   largest budget whose data folder fits :data:`SIZE_CAP` on disk, measured as ``du`` does
   (:func:`disk_usage`); every MiniWoB++ episode kept.
9. **Split** (``corpus.json``): by task, seeded, held-out templates per family
   (:func:`mag_dataset.builder.splits.write_corpus_manifest`), with ``drop_test_echoes``: the
   builder leaves out of test every step that repeats a train step's screenshot and gold
   action (:func:`mag_dataset.builder.corpus.test_echoes`).
10. **Install**: the result replaces ``--out`` (default ``mag_dataset/data/raw``).

Every step leaves its entry in the corpus's stage record (``corpus.json`` ``stages``; ``mag
stages --raw DIR`` prints it): the ``mag`` commands append theirs, and this script its own
steps (``make-corpus merge``, which starts the record with the recordings' ones, ``make-corpus
fit`` and ``make-corpus split``). The order above is :data:`mag_dataset.raw.STAGE_RULES`'s;
a step run out of it prints a warning naming both stages. The bundled corpus v2.2 was made
before the record existed: its entries are backfilled from this docstring and the commit
that installed it (6a78bdf), marked ``"backfilled": true``.

The bundled corpus (v2.2) is the pool corpus v2.1 was fitted from, compacted again: the
recordings of corpus v2 (the 47 templates the sites had then, step 1 with ``--episodes 4``)
and one episode of each of the 70 templates added since (``mag record --episodes 1``),
recaptured, unified, audited, regenerated, linted and compacted together (195 site
episodes, 1,547 steps). v2.1 fitted it at 9 steps per template (121 site episodes, 1,028
steps, 44.8 MiB), its episodes' JSON stored plain (a sixth of the bytes). For v2.2 the
guides were regenerated with today's generators (``mag lint-guides --regenerate``: 83
guides of 75 episodes rephrased, 70 of them finish guides; 0 findings in 1,763 guides),
after which the 197 episodes v2.1 holds are identical to v2.1's (labels, guides,
screenshots and audit lines: v2.1's guides had been regenerated after its fit), ``mag compact`` stored
every episode's JSON as ``episode.json.gz`` (the pool 64,076 -> 55,112 KiB on disk), and
step 8 found 17 steps per template (15: 144 site episodes, 42.6 MiB; 18: 161, 46.4 MiB):
154 site episodes of the 117 templates (24 of them with 2-4 episodes), 1,216 steps, and the
76 MiniWoB++ episodes (216 steps), 44.96 MiB on disk (46,040 KiB of the 46,080 allowed),
split into 62 test and 92 train site tasks::

    cp -a OLD_WORK/merged POOL
    mag lint-guides --raw POOL --regenerate
    mag compact --raw POOL
    python scripts/make_corpus.py --work NEW_WORK --merged POOL

Recording the new templates 4 times, as step 1 says, could let the budget keep more
episodes of the short ones.

The audit needs no model; judge models (``mag audit --judges FILE``) and people (``mag
annotate``) can be added to the panel later.

Usage::

    python scripts/make_corpus.py --work /tmp/corpus_work                  # record everything (hours)
    python scripts/make_corpus.py --work /tmp/w --sites-raw /work/corpus/raw_a /work/corpus/raw_b \\
        --miniwob-raw /tmp/old_miniwob                                     # from recordings
    python scripts/make_corpus.py --work /tmp/w2 --merged /tmp/w/merged    # fit, split, install again
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mag_dataset.raw import StageRun

REPO = Path(__file__).resolve().parent.parent
#: The recording settings of the bundled corpus (step 1).
SITE_TASKS = ("sites.*",)
SITE_EPISODES = 4
CORPUS_SEED = 0
POINT_ONLY_SHARE = 0.15
#: MiniWoB++ episodes kept per task (step 2).
MINIWOB_EPISODES = 4
#: Step 4: the share of site episodes recaptured, the seed choosing them, and the drift.
RECAPTURE_SHARE = 1.0
RECAPTURE_SEED = 0
DRIFT_SEED = 7
DRIFT_LEVEL = 1
#: Step 6: the audit's panel (the rule-based page judges).
AUDIT_JUDGES = "dom,name,pixel"
#: The issue's size cap for the bundled raw corpus (bytes of all its files).
SIZE_CAP = 45 * 1024 * 1024
#: Step 8: the largest number of steps a site template may bring to the sample (its first episode always).
STEP_BUDGET_MAX = 60


def mag(*args: str) -> None:
    """Run one ``mag`` command, echoing it; stop the script when it fails."""
    cmd = [sys.executable, "-m", "mag_dataset.cli", *args]
    print("+ mag " + " ".join(args), flush=True)
    subprocess.run(cmd, check=True)


def own_stage(root: Path, stage: str, options: dict) -> "StageRun":
    """One of this script's own steps as a corpus stage (its entry appended by ``finish``); prints the
    warning line when it runs out of the canonical order, as the ``mag`` commands do."""
    from mag_dataset.raw import StageRun

    run = StageRun(root, stage, options)
    if run.warning:
        print(f"warning: {run.warning}", file=sys.stderr, flush=True)
    return run


def record(work: Path) -> tuple[list[Path], Path]:
    sites, miniwob = work / "recorded_sites", work / "recorded_miniwob"
    mag("record", "--tasks", *SITE_TASKS, "--episodes", str(SITE_EPISODES), "--seed", str(CORPUS_SEED),
        "--point-only-share", str(POINT_ONLY_SHARE), "--out", str(sites))
    mag("record", "--episodes", str(MINIWOB_EPISODES), "--seed", str(CORPUS_SEED), "--out", str(miniwob))
    return [sites], miniwob


def seed_order(names: set[str], per_task: int) -> dict[str, list[str]]:
    """Per task, its first ``per_task`` episode folders among ``names``, in seed order.

    ``mag record`` tries episode seeds ``episode_seed(task, k, seed)`` for k = 0, 1, ... and
    keeps the successful ones, so these are the episodes it keeps with ``--episodes per_task``.
    """
    from mag_dataset.harness.recorder import episode_seed

    out: dict[str, list[str]] = {}
    for task in sorted({n.split(".seed-")[0] for n in names}):
        found = [f"{task}.seed-{episode_seed(task, k, CORPUS_SEED)}" for k in range(10 * per_task)]
        out[task] = [n for n in found if n in names][:per_task]
    return out


def first_episodes(names: set[str], per_task: int) -> set[str]:
    """The episode folders kept: per task, the first ``per_task`` present in seed order."""
    return {n for kept in seed_order(names, per_task).values() for n in kept}


def merge(sources: list[Path], miniwob: Path, merged: Path) -> None:
    """Copy every site episode of ``sources`` and the kept MiniWoB++ episodes of ``miniwob`` (its
    other episodes aside) into ``merged`` (new), with the shared screenshots they name. The
    stage record of ``merged`` starts with the inputs' records (each entry noting its input),
    then this step's entry."""
    from mag_dataset.builder.splits import site_family
    from mag_dataset.raw import append_stage, copy_episodes, iter_episode_dirs, read_episode, read_stages

    stage = own_stage(merged, "make-corpus merge", {"miniwob_episodes": MINIWOB_EPISODES})
    merged.mkdir(parents=True)
    mw = [f for f, ep in ((f, read_episode(f)) for f in iter_episode_dirs(miniwob))
          if site_family(ep.source, ep.site) == "miniwob"]
    keep = first_episodes({f.name for f in mw}, MINIWOB_EPISODES)
    for folder in [f for src in sources for f in iter_episode_dirs(src)] + [f for f in mw if f.name in keep]:
        if (merged / folder.name).exists():
            raise SystemExit(f"episode {folder.name} is in two of the inputs")
        copy_episodes(folder.parent, merged, [folder.name])
    for src in [*sources, miniwob]:
        for entry in read_stages(src):
            append_stage(merged, dataclasses.replace(entry, note=" ".join(filter(None, [entry.note, f"in {src.name}"]))))
    stage.finish()



def fit_to_cap(merged: Path, work: Path, other_data: int) -> tuple[Path, int, int]:
    """The corpus to install: ``merged`` with, per site template, its episodes in seed order
    while the template's steps stay within a budget (the first episode always), all MiniWoB++
    episodes; the largest budget (up to :data:`STEP_BUDGET_MAX`; multiples of 5 first, then by one step) whose data
    folder (the corpus and ``other_data`` bytes of other files) fits :data:`SIZE_CAP` (step 8).
    A budget per template, not a count of episodes, keeps the few long templates (60 steps an
    episode) from taking the sample's room from the others. The audit files keep the kept
    episodes' lines.

    Returns:
        (the corpus folder, the step budget, its size on disk once installed in bytes).
    """
    from mag_dataset.builder.splits import site_family
    from mag_dataset.raw import (AUDIT_FILE, CORPUS_FILE, CORPUS_FORMAT, FORMAT_VERSION, STAGES_KEY, VERDICTS_FILE,
                                 copy_episodes, corpus_manifest_text, iter_episode_dirs, read_episode)

    stage = own_stage(merged, "make-corpus fit", {"size_cap": SIZE_CAP, "step_budget_max": STEP_BUDGET_MAX})
    record = json.loads((merged / CORPUS_FILE).read_text("utf-8")).get(STAGES_KEY) if (merged / CORPUS_FILE).is_file() else None
    episodes = {f.name: read_episode(f) for f in iter_episode_dirs(merged)}
    site = {n for n, ep in episodes.items() if site_family(ep.source, ep.site) != "miniwob"}
    in_order = seed_order(site, SITE_EPISODES)

    def attempt(budget: int) -> tuple[Path, int]:
        keep = set(episodes) - site
        for names in in_order.values():
            steps = 0
            for i, name in enumerate(names):
                steps += len(episodes[name].steps)
                if i and steps > budget:
                    break
                keep.add(name)
        kept = work / f"budget-{budget}"
        if kept.exists():
            shutil.rmtree(kept)
        copy_episodes(merged, kept, sorted(keep))
        for name in (AUDIT_FILE, VERDICTS_FILE):
            if (merged / name).exists():
                lines = (merged / name).read_text("utf-8").splitlines(keepends=True)
                (kept / name).write_text("".join(ln for ln in lines if json.loads(ln)["step_id"].rsplit(":", 1)[0] in keep),
                                         "utf-8")
        if record:  # the stage record goes along (the split is written again, step 9)
            (kept / CORPUS_FILE).write_text(corpus_manifest_text(
                {"format": CORPUS_FORMAT, "format_version": FORMAT_VERSION, STAGES_KEY: record}), "utf-8")
        size = disk_usage(kept) + other_data
        n_site = len(keep & site)
        print(f"at most {budget} steps per site template: {n_site} site episodes "
              f"({sum(len(episodes[n].steps) for n in keep & site)} steps), {size / 2**20:.1f} MiB on disk", flush=True)
        return kept, size

    # the largest multiple of 5 that fits, then the largest budget that fits below the next multiple
    size = 0
    for coarse in range(STEP_BUDGET_MAX, 0, -5):
        kept, size = attempt(coarse)
        if size <= SIZE_CAP:
            for budget in range(min(coarse + 4, STEP_BUDGET_MAX), coarse, -1):
                finer, finer_size = attempt(budget)
                if finer_size <= SIZE_CAP:
                    stage.finish(finer, note=f"{budget} steps per site template")
                    return finer, budget, disk_usage(finer) + other_data
            stage.finish(kept, note=f"{coarse} steps per site template")
            return kept, coarse, disk_usage(kept) + other_data
    raise SystemExit(f"even one site episode per template takes {size / 2**20:.1f} MiB, over the "
                     f"{SIZE_CAP / 2**20:.0f} MiB cap")


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
    parser.add_argument("--merged", type=Path,
                        help="a merged corpus that went through steps 2-7 already (a former run's WORK/merged): "
                             "fit, split and install it")
    args = parser.parse_args(argv)
    if args.work.exists() and any(args.work.iterdir()):
        parser.error(f"--work {args.work} is not empty")
    if (args.sites_raw is None) != (args.miniwob_raw is None):
        parser.error("give both --sites-raw and --miniwob-raw, or neither (record both)")
    if args.merged is not None and args.sites_raw is not None:
        parser.error("--merged starts after the recordings were merged: give it without --sites-raw/--miniwob-raw")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.merged is not None:
        merged = args.merged
    else:
        sites_raw, miniwob_raw = record(args.work) if args.sites_raw is None else (args.sites_raw, args.miniwob_raw)
        merged = args.work / "merged"
        merge(list(sites_raw), miniwob_raw, merged)
        mag("recapture", "--raw", str(merged), "--evidence")
        mag("recapture", "--raw", str(merged), "--share", f"{RECAPTURE_SHARE:g}", "--seed", str(RECAPTURE_SEED),
            "--drift", str(DRIFT_SEED), "--drift-level", str(DRIFT_LEVEL))
        mag("unify", "--raw", str(merged))
        mag("audit", "--raw", str(merged), "--judges", AUDIT_JUDGES, "--steps", "all")
        mag("lint-guides", "--raw", str(merged), "--regenerate")  # today's guides; no finding, or the script stops
        mag("compact", "--raw", str(merged))

    from mag_dataset.builder.splits import write_corpus_manifest

    out = args.out.resolve()
    other_data = disk_usage(out.parent) - disk_usage(out)  # the data folder's other files
    merged, budget, size = fit_to_cap(merged, args.work, other_data)
    split = own_stage(merged, "make-corpus split", {"split_seed": CORPUS_SEED, "drop_test_echoes": True})
    write_corpus_manifest(merged, CORPUS_SEED, drop_test_echoes=True)
    split.finish()
    size = disk_usage(merged) + other_data
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
    print(f"corpus: {len(manifest['splits'])} episodes (at most {budget} steps per site template) -> {out}; "
          f"the data folder takes {size / 2**20:.1f} MiB on disk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
