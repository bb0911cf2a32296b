"""Paired comparison of two scored prediction files: is model B's gain over model A real?

WebMRE's findings (arXiv 2609.27353) are small differences: joint contracts lift SoM
element selection over the action-only reference by +0.2 to +2.2 points, averaged over
three seeds; MG-GRPO ends at .433 against .429 for its control. This module gives such a
difference the statistics a reviewer asks for. Pure: it reads two :class:`Report` objects
with their per-step scores (``keep_steps=True``) and the gold steps; no I/O, no clock.

For every metric both reports score (``None`` on either side = the step is excluded for
both, e.g. a disputed step, a guide metric under contract A):

- **Per step**, each side's value is the mean over its seeds (the scorer pools seeds the
  same way: every seed covers every step, so the mean of the per-seed micro means equals
  the micro mean of the per-step seed means). ``diff`` = B - A of the micro means over the
  paired steps.
- **p-value**: a **task-level sign-flip randomisation test**: each task's summed per-step
  difference (of seed means) has its sign flipped at random (one draw shared by all
  metrics and breakdown groups), ``p = (1 + #{|T*| >= |T|}) / (1 + resamples)``.
- **Interval**: the same test inverted: the 95% interval holds every mean difference
  ``delta`` the test does not reject (each task's sum less ``delta`` times its step count,
  flipped with the same draws, p > 0.05), within [-1, 1]. It excludes 0 exactly when
  p <= 0.05: the interval and the p-value cannot disagree. (A percentile bootstrap of the
  same task sums did, at the edges: [-0.158, -0.003] at p = 0.137 when a handful of tasks
  carried the difference, and [-0.250, -0.231] for a breakdown group of one task, where no
  test can be significant; this interval is [-1, +1] there.)
- One statistical unit, the task over per-step seed means, for the interval, the test and
  the leaderboard's ranks, whatever the number of seeds on either side. When both sides
  are single-seed, the per-step binary metrics (:data:`BINARY_METRICS`) also report the
  **exact McNemar test** (``mcnemar``: a two-sided binomial test, p = 1/2, on the
  discordant steps), for readers who expect it; it treats steps as independent (a task's
  steps are not), so it decides nothing. With several seeds no McNemar is reported: a
  per-step majority vote would test another quantity than the mean (issue 27: a 3-seed
  file 0.002 below a 1-seed one was called significantly worse, p = 0.003).
- **Holm** correction (step-down, family-wise) across the metrics reported, and
  separately across all the breakdown comparisons (site, action type, stale, unseen
  template x :data:`BREAKDOWN_METRICS`).

Identical inputs give differences of 0, intervals ``[0, 0]`` and p-values of 1; the same
inputs always give byte-identical JSON (the draws come from ``random.Random(seed)``).
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mag_dataset.schema import Step
from mag_dataset.scoring import (
    ALL_METRICS,
    BREAKDOWNS,
    MCNEMAR_METRICS,
    SCORER_VERSION,
    Report,
    dataset_fingerprint,
    round_value as _r,
)

#: Bumped whenever a comparison could change for the same inputs.
COMPARE_VERSION = "2.0.0"

#: Per-step binary metrics: the exact McNemar test is reported beside the sign-flip test when
#: both sides are single-seed (each metric's ``test`` in :data:`mag_dataset.scoring.METRIC_TABLE`).
BINARY_METRICS: frozenset[str] = MCNEMAR_METRICS

#: Metrics compared within each breakdown group (those that apply to both sides).
BREAKDOWN_METRICS: tuple[str, ...] = ("saa", "bleu1")

COMPARE_RESAMPLES = 1000
#: The name of the one paired test (``test`` of every compared cell).
TEST = "task_sign_flip"

COMPARE_SEED = 0


class CompareError(ValueError):
    """The two reports cannot be compared (different gold, view, or no per-step scores)."""


@dataclass(frozen=True)
class Comparison:
    """A paired comparison; :meth:`to_json` is byte-identical for the same inputs.

    Attributes:
        metrics: metric -> {a, b, diff, ci95, n_steps, n_tasks, test, p_value, p_holm}
            and, for a binary metric of two single-seed sides, ``mcnemar`` (a_only, b_only,
            p_value: reported, not used).
        not_compared: metric -> why (applies to one side only, or to neither).
        breakdowns: dimension -> group -> metric -> the same fields as ``metrics``.
        counts: steps, tasks, seeds of each side.
        provenance: versions, fingerprint, view, contracts, the statistical settings.
    """

    metrics: dict[str, dict[str, Any]]
    not_compared: dict[str, str]
    breakdowns: dict[str, dict[str, dict[str, dict[str, Any]]]]
    counts: dict[str, Any]
    provenance: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "not_compared": self.not_compared,
            "breakdowns": self.breakdowns,
            "counts": self.counts,
            "provenance": self.provenance,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n"


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test (p = 1/2) on the discordant pairs.

    Args:
        a_only: steps right under A and wrong under B.
        b_only: steps wrong under A and right under B.

    Returns:
        ``min(1, 2 * P(X <= min(a_only, b_only)))`` for ``X ~ Binomial(a_only + b_only, 1/2)``;
        1.0 when there is no discordant step.
    """
    n, k = a_only + b_only, min(a_only, b_only)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1))
    # exact integer arithmetic, then one division: no underflow for large n
    return min(1.0, (2 * tail) / (1 << n))  # int / int: correctly rounded, however large n is


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (same order as given)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (pvalues[i], i))
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


class _Side:
    """Per-step seed sums and counts of one report: arrays (steps x metrics)."""

    def __init__(self, report: Report, index: dict[str, int], np: Any) -> None:
        S, K = len(index), len(ALL_METRICS)
        self.sum = np.zeros((S, K))
        self.cnt = np.zeros((S, K))
        seeds: set[int] = set()
        rows, cols, vals = [], [], []
        for sc in report.steps or ():
            i = index.get(sc.step_id)
            if i is None:
                raise CompareError(f"step {sc.step_id!r} of a report is not in the gold steps")
            seeds.add(sc.seed)
            for k, name in enumerate(ALL_METRICS):
                v = getattr(sc, name)
                if v is not None:
                    rows.append(i)
                    cols.append(k)
                    vals.append(v)
        r, c, v = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(vals, dtype=np.float64)
        np.add.at(self.sum, (r, c), v)
        np.add.at(self.cnt, (r, c), 1.0)
        self.seeds = sorted(seeds)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mean = np.where(self.cnt > 0, self.sum / np.maximum(self.cnt, 1), 0.0)


def _signs(T: int, resamples: int, seed: int) -> Any:
    """The shared sign flips over ``T`` tasks (resamples x T, entries +-1), from ``random.Random(seed)``."""
    return _cached_signs(T, resamples, seed)


@functools.lru_cache(maxsize=8)  # a memo of a pure function: the leaderboard tests many pairs of one gold
def _cached_signs(T: int, resamples: int, seed: int) -> Any:
    import numpy as np

    rng = random.Random(seed)
    rng.getrandbits(128)  # the stream of COMPARE_VERSION 1's bootstrap: the flips stay those of 1.x
    gen_flip = np.random.Generator(np.random.PCG64(rng.getrandbits(128)))
    signs = gen_flip.integers(0, 2, size=(resamples, T)).astype(np.float64) * 2.0 - 1.0
    signs.flags.writeable = False
    return signs


def _p_at(delta: float, total: float, n: float, flip_d: Any, flip_n: Any, resamples: int, np: Any) -> float:
    """Sign-flip p-value of the hypothesis "the mean difference is ``delta``": each task's summed
    difference less ``delta`` times its step count is symmetric about 0. Ties within float
    noise count as extreme (identical inputs give p = 1 at ``delta = 0``)."""
    stat = abs(total - delta * n)
    extreme = int((np.abs(flip_d - delta * flip_n) >= stat - 1e-9).sum())
    return (1 + extreme) / (1 + resamples)


def _inverted_interval(total: float, n: float, flip_d: Any, flip_n: Any, resamples: int, np: Any) -> list[float]:
    """The 95% interval of the mean difference: every shift the sign-flip test does not reject
    (p > 0.05), found by bisection on each side of the observed difference within [-1, 1]
    (every metric lies in [0, 1]). It holds 0 exactly when the p-value at 0 exceeds 0.05, so the
    interval and the test never disagree."""
    d = total / n
    accept = lambda delta: _p_at(delta, total, n, flip_d, flip_n, resamples, np) > _ALPHA  # noqa: E731
    zero_ok = accept(0.0)
    bounds = []
    for far, side in ((-1.0, -1), (1.0, 1)):
        # a point the test rejects on this side, if any: 0 itself when it lies on this side and is rejected
        out = 0.0 if (not zero_ok and side * (0.0 - d) > 0) else far
        if accept(out):  # nothing on this side is rejected (with few tasks no shift can be)
            bounds.append(out)
            continue
        inside = d
        for _ in range(40):  # |out - inside| <= 2: 40 halvings leave < 2e-12
            mid = (inside + out) / 2
            if accept(mid):
                inside = mid
            else:
                out = mid
        bounds.append(inside)
    lo, hi = bounds
    if zero_ok:  # p-values are not always monotone in the shift: 0's own verdict decides
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    rlo, rhi = _r(lo), _r(hi)
    # rounding must not put a rejected 0 back inside the interval
    if not zero_ok and rlo == 0.0 and lo > 0:
        rlo = 1e-6
    if not zero_ok and rhi == 0.0 and hi < 0:
        rhi = -1e-6
    return [rlo, rhi]


#: The test's level: the interval is the 1 - _ALPHA range of shifts it does not reject.
_ALPHA = 0.05


def paired_test(
    a: Sequence[float | None],
    b: Sequence[float | None],
    tasks: Sequence[str],
    *,
    resamples: int = COMPARE_RESAMPLES,
    seed: int = COMPARE_SEED,
    interval: bool = True,
) -> dict[str, Any]:
    """One metric's paired comparison (B - A) from per-step values, as :func:`compare_reports`
    computes it for a headline metric: the same task draws, test and rounding, so the
    leaderboard's rank rule and ``mag compare`` agree on every pair.

    Args:
        a: per-step value of side A (mean over its seeds), ``None`` where not scored.
        b: the same for side B, step for step.
        tasks: each step's task id.
        resamples: sign-flip draws.
        seed: seed of the draws.
        interval: compute ``ci95`` (``False``: ``None``, and no bisection: the board's ranks need p only).

    Returns:
        ``{"diff", "ci95", "p_value", "n_steps", "test"}``; ``diff`` and ``ci95`` are
        ``None`` when no step is scored for both sides. ``p_value`` is the task sign-flip
        test's, whatever the metric and the seeds; ``ci95`` the differences it does not reject.
    """
    import numpy as np

    if not (len(a) == len(b) == len(tasks)):
        raise CompareError("per-step values and tasks must have the same length")
    task_ids = sorted(set(tasks))
    tindex = {t: j for j, t in enumerate(task_ids)}
    m = np.array([x is not None and y is not None for x, y in zip(a, b)])
    av = np.array([0.0 if x is None else float(x) for x in a])
    bv = np.array([0.0 if y is None else float(y) for y in b])
    n = int(m.sum())
    if n == 0:
        return {"diff": None, "ci95": None, "p_value": 1.0, "n_steps": 0, "test": TEST}
    step_task = np.array([tindex[t] for t in tasks], dtype=np.int64)
    T = len(task_ids)
    TD, TN = np.zeros(T), np.zeros(T)
    np.add.at(TD, step_task, np.where(m, bv - av, 0.0))
    np.add.at(TN, step_task, m.astype(np.float64))
    total = float(TD.sum())
    signs = _signs(T, resamples, seed)
    # the same einsum as compare_reports (one column), so the sums run in the same order
    flip_d = np.einsum("bt,tc->bc", signs, TD[:, None])[:, 0]
    flip_n = np.einsum("bt,tc->bc", signs, TN[:, None])[:, 0]
    p = _p_at(0.0, total, n, flip_d, flip_n, resamples, np)
    ci = _inverted_interval(total, n, flip_d, flip_n, resamples, np) if interval else None
    return {"diff": _r(total / n), "ci95": ci, "p_value": _r(p), "n_steps": n, "test": TEST}


def _check_comparable(report_a: Report, report_b: Report, steps: Sequence[Step], resamples: int) -> str:
    """The gold's fingerprint, once both reports are known to be comparable on it."""
    if report_a.steps is None or report_b.steps is None:
        raise CompareError("both reports need their per-step scores (score with keep_steps=True)")
    if resamples < 1:
        raise CompareError("resamples must be at least 1")
    pa, pb = report_a.provenance, report_b.provenance
    fp = dataset_fingerprint(steps)
    for side, p in (("A", pa), ("B", pb)):
        if p["dataset_fingerprint"] != fp:
            raise CompareError(f"report {side} was scored against other gold steps (dataset fingerprint differs)")
    if pa["view"] != pb["view"]:
        raise CompareError(f"the reports are of different views ({pa['view']} vs {pb['view']})")
    return fp


def _not_compared(A: _Side, B: _Side, compared: list[int]) -> dict[str, str]:
    """Why each metric that is not compared is not (it applies to one side, or to neither)."""
    out: dict[str, str] = {}
    for k, name in enumerate(ALL_METRICS):
        if k in compared:
            continue
        ina, inb = bool((A.cnt[:, k] > 0).any()), bool((B.cnt[:, k] > 0).any())
        out[name] = (
            "scored for A only" if ina and not inb else "scored for B only" if inb and not ina
            else "no step scored for both" if ina and inb else "applies to neither"
        )
    return out


#: A compared column: (None for a headline metric, else (dimension, group, metric)), the
#: metric's index in ALL_METRICS, and the breakdown group's step mask (None: every step).
_Column = tuple["tuple[str, str, str] | None", int, Any]


def _columns(ordered: list[Step], paired: Any, compared: list[int], breakdown_metrics: Sequence[str],
             np: Any) -> list[_Column]:
    """The headline metrics first, then each breakdown group x breakdown metric with a paired step."""
    columns: list[_Column] = [(None, k, None) for k in compared]
    keys = {
        "site": [s.site for s in ordered],
        "action_type": [s.action.type.value for s in ordered],
        "stale": ["true" if s.stale else "false" for s in ordered],
        "unseen_template": ["true" if s.unseen_template else "false" for s in ordered],
    }
    groups: dict[tuple[str, str], Any] = {}
    for dim in BREAKDOWNS:
        for key in sorted(set(keys[dim])):
            groups[(dim, key)] = np.array([v == key for v in keys[dim]])
    bmetrics = [ALL_METRICS.index(m) for m in breakdown_metrics if m in ALL_METRICS and ALL_METRICS.index(m) in compared]
    for (dim, key), mask in groups.items():
        for k in bmetrics:
            if (paired[:, k] & mask).any():
                columns.append(((dim, key, ALL_METRICS[k]), k, mask))
    return columns


class _Cells:
    """Every column's statistics from per-task sums and the shared draws."""

    def __init__(self, A: _Side, B: _Side, paired: Any, columns: list[_Column], step_task: Any, T: int,
                 resamples: int, seed: int, np: Any) -> None:
        S, C = paired.shape[0], len(columns)
        self.A, self.B, self.columns, self.resamples, self.np = A, B, columns, resamples, np
        self.n_col = np.zeros((S, C))
        d_col = np.zeros((S, C))
        for c, (_, k, mask) in enumerate(columns):
            m = paired[:, k] if mask is None else paired[:, k] & mask
            self.n_col[:, c] = m
            d_col[:, c] = np.where(m, B.mean[:, k] - A.mean[:, k], 0.0)
        # per task sums (T x C): a fixed-order accumulation, so results are reproducible
        self.TD = np.zeros((T, C))
        self.TN = np.zeros((T, C))
        np.add.at(self.TD, step_task, d_col)
        np.add.at(self.TN, step_task, self.n_col)
        signs = _signs(T, resamples, seed)
        # einsum without optimize=: numpy's own C loop, sums in a fixed order on every run
        self.flip_d = np.einsum("bt,tc->bc", signs, self.TD)
        self.flip_n = np.einsum("bt,tc->bc", signs, self.TN)

    def cell(self, c: int) -> dict[str, Any]:
        """One column: means, difference, interval, test, p-values."""
        A, B, np = self.A, self.B, self.np
        _, k, _mask = self.columns[c]
        m = self.n_col[:, c] > 0
        n = int(m.sum())
        total = float(self.TD[:, c].sum())
        flips = (self.flip_d[:, c], self.flip_n[:, c], self.resamples, np)
        out: dict[str, Any] = {
            "a": _r(float(A.mean[m, k].sum() / n)),
            "b": _r(float(B.mean[m, k].sum() / n)),
            "diff": _r(total / n),
            "ci95": _inverted_interval(total, n, *flips),
            "n_steps": n,
            "n_tasks": int((self.TN[:, c] > 0).sum()),
        }
        out["test"] = TEST
        out["p_value"] = _r(_p_at(0.0, total, n, *flips))
        if ALL_METRICS[k] in BINARY_METRICS and len(A.seeds) == 1 and len(B.seeds) == 1:
            # one seed a side: each step is 0 or 1, McNemar's discordant pairs are well defined
            a_only = int(((A.mean[m, k] > 0.5) & (B.mean[m, k] < 0.5)).sum())
            b_only = int(((A.mean[m, k] < 0.5) & (B.mean[m, k] > 0.5)).sum())
            out["mcnemar"] = {"a_only": a_only, "b_only": b_only, "p_value": _r(mcnemar_exact(a_only, b_only))}
        return out


def _provenance(pa: dict[str, Any], pb: dict[str, Any], fp: str, resamples: int, seed: int) -> dict[str, Any]:
    return {
        "compare_version": COMPARE_VERSION,
        "scorer_version": SCORER_VERSION,
        "dataset_fingerprint": fp,
        "view": pa["view"],
        "contract_a": pa["contract"],
        "contract_b": pb["contract"],
        "coord_space_a": (pa.get("coord_space") or {}).get("space"),
        "coord_space_b": (pb.get("coord_space") or {}).get("space"),
        "randomisation": {"unit": "task", "paired": True, "resamples": resamples, "seed": seed, "interval": 0.95,
                          "interval_method": "the shifts the sign-flip test does not reject at 0.05"},
        "tests": {
            "p_value": f"task-level sign-flip randomisation on the summed per-step differences of seed "
                       f"means, {resamples} draws (every metric, every number of seeds)",
            "mcnemar": "exact McNemar (two-sided binomial, p = 1/2, on discordant steps), reported for the "
                       "binary metrics when both sides are single-seed; not used for decisions",
            "correction": "Holm across the headline metrics; Holm across all breakdown comparisons",
        },
        "seeds": "per-step mean over each side's seeds",
    }


def compare_reports(
    report_a: Report,
    report_b: Report,
    steps: Sequence[Step],
    *,
    resamples: int = COMPARE_RESAMPLES,
    seed: int = COMPARE_SEED,
    breakdown_metrics: Sequence[str] = BREAKDOWN_METRICS,
) -> Comparison:
    """Compare two reports of the same gold steps, step by step.

    Args:
        report_a: the baseline's report, scored with ``keep_steps=True``.
        report_b: the candidate's report, scored with ``keep_steps=True``.
        steps: the gold steps both were scored against.
        resamples: sign-flip draws (>= 1).
        seed: seed of ``random.Random`` that seeds the draws.
        breakdown_metrics: metrics compared within each breakdown group.

    Returns:
        The comparison.

    Raises:
        CompareError: a report without per-step scores, or reports of a different view or
            gold.
    """
    import numpy as np

    fp = _check_comparable(report_a, report_b, steps, resamples)
    ordered = sorted(steps, key=lambda s: s.step_id)
    index = {s.step_id: i for i, s in enumerate(ordered)}
    task_ids = sorted({s.task_id for s in ordered})
    tindex = {t: j for j, t in enumerate(task_ids)}
    step_task = np.array([tindex[s.task_id] for s in ordered], dtype=np.int64)
    A, B = _Side(report_a, index, np), _Side(report_b, index, np)
    paired = (A.cnt > 0) & (B.cnt > 0)  # S x K
    compared = [k for k in range(len(ALL_METRICS)) if paired[:, k].any()]
    columns = _columns(ordered, paired, compared, breakdown_metrics, np)
    stats = _Cells(A, B, paired, columns, step_task, len(task_ids), resamples, seed, np)
    cells = [stats.cell(c) for c in range(len(columns))]
    head = [c for c in range(len(columns)) if columns[c][0] is None]
    rest = [c for c in range(len(columns)) if columns[c][0] is not None]
    for family in (head, rest):
        adj = holm([cells[c]["p_value"] for c in family])
        for c, p in zip(family, adj):
            cells[c]["p_holm"] = _r(p)
    breakdowns: dict[str, dict[str, dict[str, dict[str, Any]]]] = {dim: {} for dim in BREAKDOWNS}
    for c in rest:
        dim, key, name = columns[c][0]  # type: ignore[misc]
        breakdowns[dim].setdefault(key, {})[name] = cells[c]
    counts = {"steps": len(ordered), "tasks": len(task_ids), "seeds_a": A.seeds, "seeds_b": B.seeds,
              "breakdown_tests": len(rest)}
    return Comparison(
        metrics={ALL_METRICS[columns[c][1]]: cells[c] for c in head}, not_compared=_not_compared(A, B, compared),
        breakdowns=breakdowns, counts=counts,
        provenance=_provenance(report_a.provenance, report_b.provenance, fp, resamples, seed),
    )


def _f(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "—"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _p(v: float) -> str:
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def format_comparison(comp: Comparison, *, alpha: float = 0.05) -> str:
    """A readable table of a comparison (what ``mag compare`` prints)."""
    p, c = comp.provenance, comp.counts
    lines = [
        f"view {p['view']}  A: contract {p['contract_a']} ({len(c['seeds_a'])} seed(s))  "
        f"B: contract {p['contract_b']} ({len(c['seeds_b'])} seed(s))  steps {c['steps']}  tasks {c['tasks']}",
        f"paired task sign-flip test, {p['randomisation']['resamples']} draws (seed {p['randomisation']['seed']}); "
        f"95% CI: the differences it does not reject; Holm-adjusted p in p_holm",
        "",
        f"{'metric':<26}{'A':>8}{'B':>8}{'B-A':>9}  {'95% CI':<20}{'p':>8}{'p_holm':>8}{'n':>7}  note",
    ]

    def row(label: str, m: dict[str, Any]) -> str:
        ci = "—" if m["ci95"] is None else f"[{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]"
        note = ""
        if "mcnemar" in m:
            mc = m["mcnemar"]
            note = f"McNemar p {_p(mc['p_value'])} (A-only {mc['a_only']}, B-only {mc['b_only']})"
        star = " *" if m["p_holm"] < alpha else ""
        return (f"{label:<26}{_f(m['a']):>8}{_f(m['b']):>8}{_f(m['diff'], True):>9}  {ci:<20}"
                f"{_p(m['p_value']):>8}{_p(m['p_holm']):>8}{m['n_steps']:>7}  {note}{star}")

    for name, m in comp.metrics.items():
        lines.append(row(name, m))
    if comp.not_compared:
        lines += ["", "not compared: " + ", ".join(f"{k} ({v})" for k, v in comp.not_compared.items())]
    for dim, groups in comp.breakdowns.items():
        if not groups:
            continue
        lines += ["", f"by {dim}:"]
        for key, ms in groups.items():
            for name, m in ms.items():
                lines.append(row(f"  {key[:14]} {name}", m))
    if p.get("breakdowns_withheld"):
        lines += ["", f"breakdowns withheld: {p['breakdowns_withheld']}"]
    lines += ["", f"* Holm-adjusted p < {alpha:g} (family: the headline metrics; the breakdowns form a second family)"]
    return "\n".join(lines)


__all__ = [
    "BINARY_METRICS",
    "BREAKDOWN_METRICS",
    "COMPARE_RESAMPLES",
    "COMPARE_SEED",
    "COMPARE_VERSION",
    "TEST",
    "CompareError",
    "Comparison",
    "compare_reports",
    "format_comparison",
    "holm",
    "mcnemar_exact",
    "paired_test",
]
