"""The plain-text table of a report that ``mag score`` prints.

Reads a :class:`~mag_dataset.scoring.aggregate.Report` only: the metrics in
:data:`~mag_dataset.scoring.metrics.METRIC_TABLE` order, the extensions that were scored,
the breakdowns, format failures, the top error classes and the warnings. Not here: any
number (everything shown is in the report).
"""

from __future__ import annotations

from collections.abc import Sequence

from mag_dataset.scoring.aggregate import BREAKDOWNS, Report
from mag_dataset.scoring.metrics import EXTENSION_METRICS, METRIC_NAMES


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def format_report(report: Report, *, breakdown_metrics: Sequence[str] = ("ofcr", "saa", "target_acc", "bleu1")) -> str:
    """A readable plain-text table of a report (what ``mag score`` prints).

    Args:
        report: the report.
        breakdown_metrics: the metrics shown per breakdown group.
    """
    p, c = report.provenance, report.counts
    lines = [
        f"view {p['view']}  contract {p['contract']}  steps {c['steps']}  tasks {c['tasks']}  "
        f"seeds {len(c['seeds'])}  scorer {p['scorer_version']}",
        f"dataset {p['dataset_fingerprint'][:23]}…  element-level excluded {p['steps_excluded']}  "
        f"format failures {c['format_failures']}  missing {c['missing']}",
        "",
        f"{'metric':<16}{'micro':>8}{'macro':>8}{'std':>8}  {'95% CI (task bootstrap)':<24}{'n':>8}",
    ]
    def row(name: str, label: str, width: int) -> str:
        m = report.metrics[name]
        ci = "—" if m["ci95"] is None else f"[{m['ci95'][0]:.3f}, {m['ci95'][1]:.3f}]"
        return f"{label:<{width}}{_fmt(m['micro']):>8}{_fmt(m['macro']):>8}{_fmt(m['std']):>8}  {ci:<24}{m['n']:>8}"

    lines += [row(name, name, 16) for name in METRIC_NAMES]
    ext = [name for name in EXTENSION_METRICS if report.metrics.get(name, {}).get("n")]
    if ext:
        lines += ["", "extensions (not metrics of the papers):"]
        lines += [row(name, name, 16) for name in ext]
    for dim in BREAKDOWNS:
        groups = report.breakdowns.get(dim) or {}
        if not groups:
            continue
        lines += ["", f"{'by ' + dim:<20}{'steps':>7}" + "".join(f"{m:>12}" for m in breakdown_metrics)]
        for key, g in groups.items():
            lines.append(f"{key[:20]:<20}{g['steps']:>7}" + "".join(f"{_fmt(g[m]['value']):>12}" for m in breakdown_metrics))
    if c["failure_reasons"]:
        lines += ["", "format failures by reason:"]
        for reason, n in sorted(c["failure_reasons"].items(), key=lambda kv: (-kv[1], kv[0]))[:10]:
            lines.append(f"  {n:>6}  {reason}")
    errors = {k: v for k, v in (c.get("errors") or {}).items() if k != "correct"}
    if errors:
        scored = sum((c.get("errors") or {}).values())
        lines += ["", f"top error classes (of {scored} classified outputs):"]
        for cls, n in list(errors.items())[:6]:
            lines.append(f"  {n:>6}  {n / scored:6.1%}  {cls}")
        nm = c.get("near_miss") or {}
        if nm.get("misses"):
            lines.append(
                f"  coord misses: {nm['near']} of {nm['misses']} within {nm['within_px']:g} px of the gold box "
                f"(median {nm['median_px']:.1f} px)"
            )
    for w in report.warnings:
        lines += ["", f"warning: {w}"]
    return "\n".join(lines)



__all__ = ["format_report"]
