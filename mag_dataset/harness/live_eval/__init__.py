"""Live evaluation of an agent in BrowserGym tasks (MiniWoB++ offline; the sites; WebArena/WorkArena too).

MAG (arXiv 2607.10079) evaluates the same agent offline and in live environments; WebMRE
(arXiv 2609.27353) notes that live deployments drifted by up to 20 points, which is why the
offline protocol exists. This package is the live half: it runs an agent closed-loop, with
the *same* prompt builder and output parser as the offline protocol
(:func:`mag_dataset.prompts.build_messages`, :func:`mag_dataset.parsing.parse_output`).

Its modules, each importing only the ones above it:

* :mod:`~mag_dataset.harness.live_eval.tasks` — task ids, checks, envs, outcomes;
* :mod:`~mag_dataset.harness.live_eval.config` — :class:`LiveEvalConfig`;
* :mod:`~mag_dataset.harness.live_eval.report` — per-episode results, strict success
  (MiniWoB's raw reward == 1; other benchmarks: BrowserGym's reward == 1) with a 95 % Wilson
  interval, steps per episode, format-failure and invalid-action rates, per task, site,
  template, kind of task and action type, ``report.md``;
* :mod:`~mag_dataset.harness.live_eval.results` — one row per episode (``--export jsonl csv``)
  and ``results.json``, the leaderboard-ready summary with its provenance;
* :mod:`~mag_dataset.harness.live_eval.interrupt` — Ctrl-C: the first stops the run cleanly,
  the second at once;
* :mod:`~mag_dataset.harness.live_eval.why` — what a failed episode's check expected and found;
* :mod:`~mag_dataset.harness.live_eval.episode` — one episode: observe, ask, parse, ground,
  execute, record (the outcomes it counts are described there);
* :mod:`~mag_dataset.harness.live_eval.run` — :func:`run_live_eval`: checks, the resumable run
  folder, and the episodes in this process, in worker processes, or as Ray tasks
  (:mod:`mag_dataset.harness.ray_backend`); all give the same report for the same tasks and seeds.
* :mod:`~mag_dataset.harness.live_eval.viewer` — ``mag view``: a read-only local page over a run
  folder (:mod:`~mag_dataset.harness.live_eval.viewer_page` is the page).

Trajectories are written in the raw episode format (:mod:`mag_dataset.raw`), one folder
per episode under ``OUT/episodes/``, so a live run can be inspected or rebuilt into a
dataset with ``mag build --raw OUT/episodes --include-failed`` (the builder skips failed
episodes otherwise). Every attempt's screenshots are saved; the episode's ``steps`` are the
executed actions that resolve to a candidate element (the raw format requires a target box
for targeted actions), each with the agent's guide (or, under contract A, the template
guide of its action); the full attempt log — raw output, parse result, BrowserGym action,
error, reward — is ``metadata["trajectory"]``. An episode in which nothing executable
happened has no steps and ``success: false``.

Task ids are BrowserGym ids: ``miniwob.click-button`` (or just ``click-button``; the pages
ship in pip ``miniwob``, nothing to serve), ``webarena.310``, ``workarena.servicenow...``.
WebArena and WorkArena need their BrowserGym package installed (``pip install
browsergym-webarena`` / ``browsergym-workarena``) and their environment variables set
(``WA_SHOPPING``, ``WA_REDDIT``, ... for WebArena; ``SNOW_INSTANCE_URL`` and credentials
for WorkArena), exactly as BrowserGym documents; they are then created through the same
patched launcher (system Chromium, no chat browser).

The package exports what ``mag live-eval`` (:mod:`mag_dataset.commands.live_eval`) uses:
:func:`run_live_eval`, :class:`LiveEvalConfig` and its choices, the errors, :func:`format_table`;
everything else is imported from the module above that defines it.
"""

from __future__ import annotations

from mag_dataset.harness.live_eval.config import LIVE_CONTRACTS, RERUN_CHOICES, LiveEvalConfig
from mag_dataset.harness.live_eval.report import format_table
from mag_dataset.harness.live_eval.run import run_live_eval
from mag_dataset.harness.live_eval.tasks import LiveEvalError, LiveEvalInterrupted

__all__ = [
    "LIVE_CONTRACTS", "LiveEvalConfig", "LiveEvalError", "LiveEvalInterrupted", "RERUN_CHOICES", "format_table",
    "run_live_eval",
]
