"""``mag record``: record expert episodes in headless Chromium (raw format v1).

Re-recording the bundled corpus::

    mag record --out /tmp/raw            # same tasks, seeds, actions, candidates, guides

Recording on the real sites (set up once with ``mag sites setup``; sites that are not
running are served for the run and stopped after it; each episode starts from a reset)::

    mag record --tasks 'sites.shop.*' --episodes 2 --out /tmp/shop

On a Ray cluster (one Ray task per attempt; the same episodes as a local run)::

    mag record --backend ray --ray-address auto --out /tmp/raw

Same ``--seed`` and ``--episodes`` give the same task instances, actions, candidate menus and
guides (pixels may differ with the Chromium build). Writes ``corpus.json`` with the split and
the first entry of the corpus's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
import shutil

from mag_dataset.errors import UserError
from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from mag_dataset.harness.recorder import BUNDLED_EPISODES, BUNDLED_SEED, BUNDLED_TASKS
    from mag_dataset.builder.splits import HELD_OUT_TEMPLATES

    options.add_out(parser, "new (or empty) folder for the raw episodes", required=True, metavar="RAW_DIR")
    options.add_tasks(parser, "MiniWoB++ task names or site task ids/patterns such as 'sites.shop.*' "
                      f"(default: the {len(BUNDLED_TASKS)} tasks of the bundled corpus)")
    parser.add_argument("--episodes", type=int, default=BUNDLED_EPISODES,
                        help="successful episodes per task (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=BUNDLED_SEED,
                        help="corpus seed: picks the MiniWoB seeds and the split (default: %(default)s)")
    parser.add_argument("--point-only-share", type=float, default=0.0,
                        help="site tasks: share of clicks recorded as a point with no element id, as human "
                        "demonstrations are (restore them with `mag unify`; default: %(default)s)")
    parser.add_argument("--held-out", nargs="*", default=None, metavar="TASK",
                        help="task types kept out of train, among --tasks (default: two templates per site family, "
                        "miniwob counting as one family, drawn with --seed; e.g. "
                        f"{' '.join(HELD_OUT_TEMPLATES)} for the bundled MiniWoB++ tasks)")
    options.add_no_progress(parser)
    from mag_dataset.harness.ray_backend import add_ray_arguments

    add_ray_arguments(parser, "one browser per task", unit="recording attempt")


def run(args: argparse.Namespace) -> int:
    from mag_dataset.live.experts import EXPERTS
    from mag_dataset.harness.recorder import BUNDLED_TASKS, record_corpus
    from mag_dataset.builder.splits import write_corpus_manifest
    from mag_dataset.sites import SiteError

    args.tasks = options.task_list(args.tasks) if args.tasks else list(BUNDLED_TASKS)
    unknown = [t for t in args.tasks if t not in EXPERTS and not t.startswith("sites.")]
    if unknown:
        raise UserError(f"no expert for task(s) {', '.join(unknown)}; supported: {', '.join(sorted(EXPERTS))}")
    stray = [t for t in args.held_out or [] if t not in args.tasks]
    if stray:
        raise UserError(f"--held-out {', '.join(stray)}: not among --tasks, so nothing would be held out")
    if not 0.0 <= args.point_only_share <= 1.0:
        raise UserError(f"--point-only-share must be between 0 and 1, got {args.point_only_share}")
    if args.episodes < 1:
        raise UserError(f"--episodes must be at least 1, got {args.episodes}")
    from mag_dataset.harness.ray_backend import RayBackendError, check_ray, ray_options_from_args

    try:
        ray_options = ray_options_from_args(args)
        if ray_options is not None:
            check_ray(ray_options.address)  # fail before anything is written
    except RayBackendError as e:
        raise UserError(str(e)) from None
    if args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
        raise UserError(f"--out {args.out} exists and is not an empty folder; choose a new folder")
    from mag_dataset.live.env import LiveEnvError

    # record into a hidden sibling and rename at the end: an interrupted run leaves no half corpus
    tmp = args.out.parent / f".{args.out.name}.recording"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        tmp.mkdir(parents=True)  # fail now, not after the first recorded episode
    except OSError as e:
        raise UserError(f"cannot write --out {args.out}: {e}") from None
    from mag_dataset.sites.manager import served

    sites = options.sites_of(args.tasks)
    stage = options.start_stage(tmp, "record", {"tasks": args.tasks, "episodes": args.episodes, "seed": args.seed,
                                     "point_only_share": args.point_only_share, "held_out": args.held_out})
    try:
        with served(sites):
            results = record_corpus(tmp, args.tasks, args.episodes, args.seed,
                                    log=options.progress_printer(args),
                                    point_only_share=args.point_only_share, ray=ray_options)
        kept = [r for r in results if r.ok]
        if not kept:
            raise UserError("no episode succeeded; nothing written")
        # site episodes name their template "<site>.<template>"
        held = None if args.held_out is None else [t.split(".", 1)[1] if t.startswith("sites.") else t for t in args.held_out]
        write_corpus_manifest(tmp, args.seed, held)  # None: two templates per site family, by seed
        stage.finish()  # the record's first entry
        if args.out.exists():
            args.out.rmdir()  # checked empty above
        tmp.rename(args.out)
    except (LiveEnvError, SiteError, RayBackendError) as e:
        raise UserError(str(e)) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    steps = sum(len(r.episode.steps) for r in kept if r.episode)
    print(f"recorded {len(kept)} episodes ({steps} steps) of {len({r.task for r in kept})} tasks "
          f"into {args.out} ({len(results) - len(kept)} failed attempts dropped)")
    return 0
