"""``mag live-eval``: evaluate an agent live in BrowserGym tasks (MiniWoB++ offline).

Examples::

    mag live-eval --agent heuristic --tasks click-button,login-user,enter-text --episodes 10 \\
        --view som --contract J --out runs/heuristic-som-J
    mag live-eval --agent path/to/checkpoint --tasks click-button --episodes 20 --view coord \\
        --contract JG --workers 2
    mag live-eval --agent openai:gpt-5.5@https://api.openai.com/v1 --tasks webarena.310 \\
        --episodes 1 --view som --contract A
    mag live-eval --agent heuristic --tasks 'sites.tracker.*' --episodes 3 --view som --contract J
    mag live-eval --agent heuristic --tasks click-button,enter-text --episodes 50 --view som --contract J \\
        --backend ray --ray-address auto          # one Ray task per episode, on a running cluster
    mag live-eval --agent heuristic --tasks click-button,enter-text --episodes 5 --view som --contract J \\
        --out runs/h --export csv jsonl           # also one row per episode: runs/h/episodes.csv, .jsonl
    mag live-eval --report-only runs/h --export csv   # the report, results.json, the export again from the episodes

See :mod:`mag_dataset.harness.live_eval` for the protocol, the outcome definitions and the
run folder layout.

Stopping and resuming: the first Ctrl-C stops the run within seconds (the episodes under
way end as ``interrupted``; exit status 130); the same command again keeps every finished
episode and runs the rest (``--rerun all`` runs every episode again). A different
configuration in the same ``--out`` is refused, naming the difference; ``--overwrite``
deletes the folder's episodes and starts afresh.

Outputs (in ``--out``)::

  report.json   strict success rate (MiniWoB raw reward == 1) with a 95% Wilson interval over
                the scored episodes (an errored one, the endpoint's or the browser's, is left
                out and counted under errors), steps per episode, format-failure and
                invalid-action rates, the endpoint's requests, retries and timeouts, per task
                and overall; each failed episode's check: what it expected and what it found
                and per site, template, kind of task (information / navigation / state for the
                sites, miniwob) and action type of the agent's steps
  report.md     the same as tables (also printed), a line per failed or errored episode
  results.json  the leaderboard-ready summary with provenance: model, endpoint, scorer
                version, the MiniWoB++ / BrowserGym / site versions the episodes ran against,
                the seeds; the same episodes always give the same bytes
  episodes.csv, episodes.jsonl   with --export: one row per episode (task, template, site,
                kind, seed, outcome, reward, steps, format failures, invalid actions,
                requests, retries, timeouts, seconds, actions, why)
  episodes/     one raw episode per run episode (screenshots of every step, the agent's
                actions and guides; metadata.trajectory logs outputs, parse results, errors);
                browse it with mag view OUT, or rebuild it into a dataset:
                mag build --raw OUT/episodes --include-failed --out DIR

Other BrowserGym benchmarks::

  MiniWoB++ runs offline (pages ship in pip miniwob). WebArena / VisualWebArena / WorkArena
  task ids (webarena.310, workarena.servicenow.order-standard-laptop, ...) work once their
  BrowserGym package is installed (pip install browsergym-webarena / browsergym-workarena)
  and their servers are configured as BrowserGym documents (WA_SHOPPING, WA_REDDIT, ... for
  WebArena; SNOW_INSTANCE_URL, SNOW_INSTANCE_UNAME, SNOW_INSTANCE_PWD for WorkArena).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from mag_dataset.actions import View
from mag_dataset.errors import UserError
from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from mag_dataset.harness.live_eval import LIVE_CONTRACTS, RERUN_CHOICES

    from mag_dataset.harness.live_eval.results import EXPORTS

    parser.add_argument("--agent", help="(required unless --report-only) 'heuristic', a local checkpoint folder "
                        "(hf:PATH), or openai:MODEL@BASE_URL")
    options.add_tasks(parser, "(required unless --report-only) BrowserGym task ids (miniwob.click-button or just "
                      "click-button; webarena.310 / workarena.* when installed) or site task patterns such as "
                      "'sites.tracker.*'", required=False)
    parser.add_argument("--episodes", type=int, default=1, help="episodes per task (seeds SEED..SEED+N-1)")
    parser.add_argument("--view", choices=[v.value for v in View], help="(required unless --report-only) grounding view")
    parser.add_argument("--contract", choices=[c.value for c in LIVE_CONTRACTS],
                        help="(required unless --report-only) output contract (those with an action to execute)")
    parser.add_argument("--export", nargs="+", choices=list(EXPORTS), default=[], metavar="FORMAT",
                        help="also write one row per episode to OUT/episodes.jsonl and/or OUT/episodes.csv "
                        "(jsonl, csv)")
    parser.add_argument("--report-only", type=Path, default=None, metavar="RUN_DIR",
                        help="run nothing: make report.json, report.md, results.json (and --export) of an "
                        "existing run folder again from its episodes")
    parser.add_argument("--max-steps", type=int, default=10, help="agent steps per episode (default 10)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes running episodes in parallel")
    options.add_out(parser, "run folder (default: live-eval/<agent>-<view>-<contract>)", default=None, metavar="DIR")
    parser.add_argument("--seed", type=int, default=0, help="first task seed (default 0)")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete the run in --out (its finished episodes too) and start afresh")
    parser.add_argument("--rerun", choices=list(RERUN_CHOICES), default="errors",
                        help="when --out holds this run: run again its unfinished episodes and its errored ones "
                        "(errors, the default) or every episode (all)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generation budget per step (model agents)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the endpoint's API key")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per endpoint request attempt (default 60)")
    parser.add_argument("--max-retries", type=int, default=3,
                        help="retries per endpoint request on 429/5xx, timeouts and connection errors (default 3); "
                        "a request still failing ends its episode as an error, not a model failure")
    options.add_cache_dir(parser, "response cache folder for an OpenAI-compatible agent (default: no cache)")
    parser.add_argument("--device", default=None, help="torch device of a checkpoint agent (default: cuda if available)")
    options.add_no_progress(parser)
    from mag_dataset.harness.ray_backend import add_ray_arguments

    add_ray_arguments(parser, "--workers processes")


def _report_only(args: argparse.Namespace) -> int:
    from mag_dataset.harness.live_eval import LiveEvalError, format_table
    from mag_dataset.harness.live_eval.run import rebuild

    given = [f for f, v in (("--agent", args.agent), ("--tasks", args.tasks), ("--view", args.view),
                            ("--contract", args.contract), ("--out", args.out)) if v]
    if given:
        raise UserError(f"--report-only reads the run's configuration from RUN_DIR; drop {', '.join(given)}")
    try:
        report = rebuild(args.report_only, args.export)
    except LiveEvalError as e:
        raise UserError(str(e)) from None
    print(format_table(report))
    _print_files(args.report_only, args.export)
    return 0


def _print_files(out: Path, exports: list[str]) -> None:
    from mag_dataset.harness.live_eval.results import EXPORTS

    names = ["report.json", "report.md", "results.json", *(EXPORTS[f] for f in dict.fromkeys(exports))]
    print(f"Run folder: {out} ({', '.join(names)}, episodes/ in the raw episode format; browse it: mag view {out})")


def run(args: argparse.Namespace) -> int:
    if args.report_only is not None:
        return _report_only(args)
    missing = [f for f, v in (("--agent", args.agent), ("--tasks", args.tasks), ("--view", args.view),
                              ("--contract", args.contract)) if not v]
    if missing:
        raise UserError(f"the following arguments are required: {', '.join(missing)} (or --report-only RUN_DIR)")
    from mag_dataset.harness.agents import AgentSpec, AgentSpecError
    from mag_dataset.harness.live_eval import (
        LiveEvalConfig,
        LiveEvalError,
        LiveEvalInterrupted,
        format_table,
        run_live_eval,
    )
    from mag_dataset.harness.live_eval.interrupt import INTERRUPTED_EXIT
    from mag_dataset.harness.ray_backend import RayBackendError, ray_options_from_args
    from mag_dataset.llm_client import LLMConfigError

    try:
        ray_options = ray_options_from_args(args)
    except RayBackendError as e:
        raise UserError(str(e)) from None

    try:
        spec = AgentSpec.parse(
            args.agent, max_new_tokens=args.max_new_tokens, api_key_env=args.api_key_env,
            cache_dir=args.cache_dir, device=args.device, timeout=args.timeout, max_retries=args.max_retries,
        )
    except AgentSpecError as e:
        raise UserError(str(e)) from None
    from mag_dataset.sites import SiteError

    tasks = tuple(options.task_list(args.tasks))
    sites = options.sites_of(tasks)
    out = args.out or Path("live-eval") / re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{spec.label}-{args.view}-{args.contract}")
    try:
        config = LiveEvalConfig(
            agent=spec, tasks=tasks, episodes=args.episodes, view=args.view, contract=args.contract, out_dir=out,
            max_steps=args.max_steps, workers=args.workers, seed=args.seed, overwrite=args.overwrite,
            rerun=args.rerun, progress=not args.no_progress, backend=args.backend, ray=ray_options,
        )
        from mag_dataset.sites.manager import served

        with served(sites):  # sites not already running are served for the run and stopped after it
            report = run_live_eval(config)
    except (LiveEvalError, SiteError, LLMConfigError) as e:  # LLMConfigError: no API key, a bad URL
        raise UserError(str(e)) from None
    except LiveEvalInterrupted as e:
        print(f"mag live-eval: {e}", file=sys.stderr)
        return INTERRUPTED_EXIT
    if args.export:
        from mag_dataset.harness.live_eval.results import write_results

        write_results(out, report, args.export)
    print(format_table(report))
    _print_files(out, args.export)
    return 0
