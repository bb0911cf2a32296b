"""``mag sites``: set up, serve, check, reset and stop the real web applications.

Examples::

    mag sites setup                         # install, create the databases, seed, snapshot
    mag sites setup --site forum --force    # set one site up again from nothing
    mag sites serve --site shop wiki        # start in the background (--wait: until Ctrl-C)
    mag sites status                        # URL, port, PID, health
    mag sites reset --site tracker          # back to the seeded state (~1 s)
    mag sites stop                          # stop by PID (the whole process group)
    mag sites tasks 'sites.shop.*'          # list the task ids (sites.<site>.<template>)
    mag sites export-webarena --out wa/     # WebArena configs (<task_id>.json) + login files
    mag sites export-webarena --out wa/ --site wiki --seeds 3

Without ``--site`` every site is meant. Installs live under ``$MAG_SITES_HOME`` (default
``~/.cache/mag_dataset/sites``); ports are ``MAG_SITE_<NAME>_PORT`` or each site's default.

``export-webarena`` writes one WebArena config per task instance (the keys of WebArena's
``test.raw.json``, its ``eval`` block in WebArena's evaluators' terms), ``.auth/`` (Playwright
storage states of the logged-in users), ``inexpressible.json`` (the templates whose check
WebArena cannot express, and why) and ``summary.json``. It serves the sites it needs (stopping
those it started) and resets them to their seeded state; the login files hold sessions that
the next reset of a site drops, so export again before a WebArena run. Judge an episode with
``mag_dataset.sites.webarena.judge`` (WebArena's own evaluators: the ``[webarena]`` extra).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mag_dataset.errors import UserError
from mag_dataset.commands.options import add_out

ACTIONS = ("setup", "serve", "status", "reset", "stop", "tasks", "export-webarena")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("patterns", nargs="*", metavar="PATTERN",
                        help="with `tasks`: task-id patterns such as 'sites.shop.*' (default: all)")
    parser.add_argument("--site", nargs="+", default=None, metavar="NAME", help="sites to act on (default: all)")
    parser.add_argument("--force", action="store_true", help="with `setup`: set up again from nothing")
    parser.add_argument("--wait", action="store_true",
                        help="with `serve`: stay in the foreground and stop the started sites on Ctrl-C")
    add_out(parser, "with `export-webarena` (required): the export folder (new, empty, or an earlier export)",
            metavar="DIR")
    parser.add_argument("--seeds", type=int, default=None, metavar="N",
                        help="with `export-webarena`: task instances per template, seeds 0..N-1 (default: 1)")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from mag_dataset.sites import SiteError, site, site_names

    names = site_names()
    chosen = list(dict.fromkeys(args.site or names))
    unknown = [n for n in chosen if n not in names]
    if unknown:
        raise UserError(f"unknown site(s) {', '.join(unknown)}; sites: {', '.join(names)}")
    if args.patterns and args.action != "tasks":
        raise UserError(f"`mag sites {args.action}` takes no task patterns (did you mean --site?)")
    if args.action == "tasks":
        return _tasks(args, chosen)
    if args.action == "export-webarena":
        return _export_webarena(args, chosen)
    if args.out is not None or args.seeds is not None:
        raise UserError(f"--out and --seeds go with `mag sites export-webarena`, not `{args.action}`")
    try:
        return RUNNERS[args.action](args, [site(n) for n in chosen])
    except SiteError as e:
        raise UserError(str(e)) from None


def _setup(args: argparse.Namespace, sites: list) -> int:
    from mag_dataset.sites import manager

    for s in sites:
        if manager.status(s).running and args.force:
            raise UserError(f"site {s.name} is being served; run `mag sites stop --site {s.name}` "
                            "before setting it up again")
        start = time.monotonic()
        _log(f"{s.name}: setting up {s.app} in {s.home}")
        info = s.setup(lambda m, n=s.name: _log(f"{n}: {m}"), force=args.force)
        seeded = ", ".join(f"{k} {v}" for k, v in sorted((info.get("seeded") or {}).items()))
        print(f"{s.name}: ready ({time.monotonic() - start:.1f}s; {seeded})")
    return 0


def _serve(args: argparse.Namespace, sites: list) -> int:
    from mag_dataset.sites import SiteError, manager

    started = []
    try:
        for s in sites:
            st = manager.serve(s)
            if st.started:
                started.append(s)
            print(f"{s.name}: {st.url} (pid {st.pid}, {st.detail})")
        if args.wait:
            print("serving; Ctrl-C stops the sites started here", file=sys.stderr)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        for s in started:
            manager.stop(s)
            print(f"{s.name}: stopped")
        return 130
    except SiteError:
        for s in started:  # nothing half-started is left behind
            manager.stop(s)
        raise
    return 0


def _status(args: argparse.Namespace, sites: list) -> int:
    from mag_dataset.sites import manager

    print(f"{'site':8} {'set up':6} {'running':7} {'healthy':7} {'url':24} {'pid':>7}  detail")
    for s in sites:
        st = manager.status(s)
        print(f"{s.name:8} {'yes' if st.set_up else 'no':6} {'yes' if st.running else 'no':7} "
              f"{'yes' if st.healthy else 'no':7} {st.url or s.base_url:24} {st.pid or '-':>7}  {st.detail}")
    return 0


def _reset(args: argparse.Namespace, sites: list) -> int:
    for s in sites:
        print(f"{s.name}: reset in {s.reset():.2f}s")
    return 0


def _stop(args: argparse.Namespace, sites: list) -> int:
    from mag_dataset.sites import manager

    for s in sites:
        print(f"{s.name}: {'stopped' if manager.stop(s) else 'was not running'}")
    return 0


def _tasks(args: argparse.Namespace, chosen: list[str]) -> int:
    from mag_dataset.sites import SiteError, task_class, task_ids, tasks_of

    try:
        ids = task_ids(args.patterns) if args.patterns else [t for n in chosen for t in sorted(tasks_of(n))]
        classes = {t: task_class(t) for t in ids}
    except SiteError as e:
        raise UserError(str(e)) from None
    for t, cls in classes.items():
        print(f"{t}\t{cls.kind}\t{cls.intent_template}")
    print(_task_counts(classes), file=sys.stderr)
    return 0


def _export_webarena(args: argparse.Namespace, chosen: list[str]) -> int:
    from mag_dataset.sites import SiteError
    from mag_dataset.sites.webarena import WebArenaError, export

    if args.out is None:
        raise UserError("`mag sites export-webarena` needs --out DIR (the export folder)")
    seeds = 1 if args.seeds is None else args.seeds
    if seeds < 1:
        raise UserError(f"--seeds must be at least 1, got {seeds}")
    try:
        summary = export(args.out, sites=chosen, seeds=range(seeds), log=_log)
    except (SiteError, WebArenaError) as e:
        raise UserError(str(e)) from None
    kinds = ", ".join(f"{k} {v}" for k, v in summary.by_kind.items())
    print(f"{summary.configs} WebArena configs ({kinds}) and {summary.storage_states} login files in "
          f"{summary.out_dir}")
    for task_id, reason in summary.inexpressible.items():
        print(f"not exported: {task_id}: {reason}")
    return 0


def _task_counts(classes: dict[str, Any]) -> str:
    """A table of templates per site and kind (what the checks read), for `mag sites tasks`."""
    from mag_dataset.sites.task import TASK_KINDS

    sites = sorted({t.split(".")[1] for t in classes})
    rows = [["site", *TASK_KINDS, "templates"]]
    for name in [*sites, "all"]:
        mine = [c for t, c in classes.items() if name == "all" or t.split(".")[1] == name]
        rows.append([name, *(str(sum(c.kind == k for c in mine)) for k in TASK_KINDS), str(len(mine))])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
                     for r in rows)


#: action -> what it does to the chosen sites (``tasks`` lists task ids instead: :func:`_tasks`)
RUNNERS = {"setup": _setup, "serve": _serve, "status": _status, "reset": _reset, "stop": _stop}
