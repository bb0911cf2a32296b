"""What a live-evaluation run hands on: one row per episode (``--export``) and a results file with provenance.

* :func:`episode_rows` — one flat row per episode (:data:`ROW_FIELDS`), written as JSON
  Lines or CSV by :func:`write_export` (``OUT/episodes.jsonl``, ``OUT/episodes.csv``);
* :func:`results_record` — ``OUT/results.json``, the leaderboard-ready summary: the model and
  endpoint, the scorer (this package's version, the prompt version, the success rule), what
  the episodes ran against (MiniWoB++ and BrowserGym versions, each site's application,
  version and seed-data fingerprint), the seeds, and the headline, per-task and per-group
  figures. No clock and no path in it: the same run folder always gives the same bytes
  (so a results file can be checked by running it again);
Pure but for :func:`write_results` at the end; the figures are
:mod:`mag_dataset.harness.live_eval.report`'s; reading a run folder back
(``mag live-eval --report-only RUN_DIR``) is :func:`mag_dataset.harness.live_eval.run.rebuild`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from mag_dataset.fileio import atomic_write
from mag_dataset.harness.live_eval.report import episode_labels, why_line

RESULTS_FORMAT = "mag-live-eval-results"
RESULTS_VERSION = 1
RESULTS_FILE = "results.json"
#: Export formats -> file name in the run folder.
EXPORTS: dict[str, str] = {"jsonl": "episodes.jsonl", "csv": "episodes.csv"}
#: The columns of an exported episode row, in order.
ROW_FIELDS: tuple[str, ...] = (
    "episode_id", "task", "template", "site", "kind", "seed", "outcome", "reward", "steps", "format_failures",
    "invalid_actions", "requests", "retries", "timeouts", "seconds", "actions", "why",
)
#: Row fields left out of the results file's episode digest (they vary between identical runs).
_UNSTABLE = ("seconds",)
#: The summary fields a results file keeps per group (the report has them all).
_HEADLINE = ("episodes", "scored", "successes", "success_rate", "success_ci95", "errors", "interrupted",
             "steps_per_episode", "format_failure_rate", "invalid_action_rate")


def _labels(e: dict[str, Any]) -> dict[str, str]:
    if all(k in e for k in ("site", "template", "kind")):
        return {k: e[k] for k in ("site", "template", "kind")}
    from mag_dataset.harness.live_eval.tasks import task_kind

    return episode_labels(e["task"], task_kind(e["task"]))  # a report written before version 3


def episode_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per episode of a report, in report order, with the fields of :data:`ROW_FIELDS`.

    ``outcome`` is the episode's status (success / failure / error / interrupted), ``reward``
    its raw reward, ``actions`` the agent's parsed actions by type (``click:2 type:1``) and
    ``why`` one line saying why it failed or errored (empty for a success).
    """
    rows = []
    for e in report["episodes"]:
        actions = e.get("actions") or {}
        row = {"episode_id": e["episode_id"], "task": e["task"], **_labels(e), "seed": e["seed"],
               "outcome": e.get("status"), "reward": e["raw_reward"], "steps": e["steps"],
               "format_failures": e["format_failures"], "invalid_actions": e["invalid_actions"],
               "requests": e.get("requests", 0), "retries": e.get("retries", 0), "timeouts": e.get("timeouts", 0),
               "seconds": e["seconds"], "actions": " ".join(f"{t}:{c['steps']}" for t, c in actions.items()),
               "why": why_line(e)}
        rows.append({k: row[k] for k in ROW_FIELDS})
    return rows


def export_text(rows: list[dict[str, Any]], fmt: str) -> str:
    """Rows as JSON Lines or CSV text (``fmt`` one of :data:`EXPORTS`)."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(ROW_FIELDS), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
        return buf.getvalue()
    raise ValueError(f"unknown export format {fmt!r}; one of {sorted(EXPORTS)}")


def _environments(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each distinct environment the episodes ran against, with its episode count (several
    for one benchmark or site when it changed during the run: a site set up again)."""
    counts: dict[str, int] = {}
    for e in report["episodes"]:
        env = e.get("environment")
        if env:
            key = json.dumps(env, sort_keys=True)
            counts[key] = counts.get(key, 0) + 1
    return [{**json.loads(k), "episodes": n} for k, n in sorted(counts.items())]


def _mixed(environments: list[dict[str, Any]]) -> list[str]:
    """Packages and sites seen at more than one version among the episodes."""
    seen: dict[str, set[str]] = {}
    for env in environments:
        for name, version in (env.get("packages") or {}).items():
            seen.setdefault(name, set()).add(str(version))
        for name, site in (env.get("sites") or {}).items():
            seen.setdefault(f"site {name}", set()).add(json.dumps(site, sort_keys=True))
    return sorted(name for name, versions in seen.items() if len(versions) > 1)


def results_record(report: dict[str, Any]) -> dict[str, Any]:
    """The leaderboard-ready results of a run (``results.json``), from its report.

    Returns:
        A dict whose fields the README documents (Live harness: the results file); the same
        report always gives the same dict.
    """
    agent = report["agent"]
    expected = len(report["tasks"]) * report["episodes_per_task"]
    overall = report["overall"]
    rows = episode_rows(report)
    digest = hashlib.sha256("".join(
        json.dumps({k: v for k, v in r.items() if k not in _UNSTABLE}, sort_keys=True) + "\n" for r in rows
    ).encode("utf-8")).hexdigest()
    environments = _environments(report)

    def headline(summary: dict[str, Any]) -> dict[str, Any]:
        return {k: summary[k] for k in _HEADLINE if k in summary}

    breakdowns = report.get("breakdowns") or {}
    return {
        "format": RESULTS_FORMAT,
        "format_version": RESULTS_VERSION,
        "benchmark": "mag-live",
        "model": {"label": agent["label"], "kind": agent["kind"], "name": agent.get("model") or None,
                  "max_new_tokens": agent.get("max_new_tokens")},
        "endpoint": agent.get("base_url"),
        "scorer": {"package": "mag_dataset", "version": report["mag_dataset_version"],
                   "prompt_version": report["prompt_version"], "report_version": report["format_version"],
                   "success": report["success"]},
        "environments": environments,
        "mixed_versions": _mixed(environments),
        "view": report["view"],
        "contract": report["contract"],
        "max_steps": report["max_steps"],
        "tasks": list(report["tasks"]),
        "episodes_per_task": report["episodes_per_task"],
        "seeds": report["seeds"],
        "complete": len(report["episodes"]) == expected and not overall["errors"] and not overall.get("interrupted"),
        "episodes_expected": expected,
        "success_rate": overall["success_rate"],
        "success_ci95": overall["success_ci95"],
        "overall": headline(overall),
        "per_task": {t: headline(s) for t, s in report["tasks"].items()},
        "per_site": {g: headline(s) for g, s in (breakdowns.get("site") or {}).items()},
        "per_template": {g: headline(s) for g, s in (breakdowns.get("template") or {}).items()},
        "per_kind": {g: headline(s) for g, s in (breakdowns.get("kind") or {}).items()},
        "per_action": breakdowns.get("action") or {},
        "episodes_sha256": digest,
    }


# ----------------------------------------------------------------------------- files


def write_results(out_dir: Path, report: dict[str, Any], exports: tuple[str, ...] | list[str] = ()) -> list[Path]:
    """Write ``results.json`` and the asked exports of ``report`` into the run folder.

    Returns:
        The files written.
    """
    written = [Path(out_dir) / RESULTS_FILE]
    atomic_write(written[0], json.dumps(results_record(report), indent=1, sort_keys=True) + "\n")
    rows = episode_rows(report) if exports else []
    for fmt in dict.fromkeys(exports):
        path = Path(out_dir) / EXPORTS[fmt]
        atomic_write(path, export_text(rows, fmt))
        written.append(path)
    return written
