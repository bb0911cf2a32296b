"""Per-step scores -> :class:`Report`: means with denominators, seeds, bootstrap, counts.

Streams :class:`~mag_dataset.scoring.step.StepScore` objects (:class:`Aggregator`): micro
mean over steps, macro mean over tasks, each with its denominator; several seeds give the
mean over seeds and the sample std; ``ci95`` is a task-level bootstrap of the micro mean;
breakdowns by site, gold action type, stale and unseen_template; the error taxonomy and
format-failure counts; the provenance block. The metrics and their order come from
:data:`~mag_dataset.scoring.metrics.METRIC_TABLE`. Pure: the only randomness is the
bootstrap, drawn from ``random.Random(BOOTSTRAP_SEED)``. Not here: per-step scoring
(:mod:`mag_dataset.scoring.step`) and the text rendering (:mod:`mag_dataset.scoring.render`).
"""

from __future__ import annotations

import json
import math
import operator
import random
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mag_dataset.actions import ActionType, Contract, View
from mag_dataset.coords import SpaceCheck
from mag_dataset.prompts import PROMPT_VERSION
from mag_dataset.schema import AuditStatus, Step
from mag_dataset.scoring.fingerprint import dataset_fingerprint
from mag_dataset.scoring.metrics import ALL_METRICS, EXTENSION_METRICS, METRIC_NAMES, SCORER_VERSION
from mag_dataset.scoring.step import StepScore
from mag_dataset.scoring.text import sacrebleu_version

#: A coord-view miss this close to the gold box (px) is a near miss.
NEAR_MISS_PX = 10.0

#: Breakdown dimensions of the report.
BREAKDOWNS: tuple[str, ...] = ("site", "action_type", "stale", "unseen_template")

#: Task-level bootstrap: ``random.Random(BOOTSTRAP_SEED)`` seeds numpy's PCG64, which draws
#: ``BOOTSTRAP_RESAMPLES`` resamples of the tasks with replacement.
BOOTSTRAP_SEED = 0
BOOTSTRAP_RESAMPLES = 1000
#: Decimal places of every float in the report.
REPORT_DECIMALS = 6

#: A score's metric values, in :data:`ALL_METRICS` order.
_VALUES = operator.attrgetter(*ALL_METRICS)


def round_value(x: float | None) -> float | None:
    """A report float: rounded to :data:`REPORT_DECIMALS` places, never ``-0.0``."""
    if x is None:
        return None
    v = round(x, REPORT_DECIMALS)
    return 0.0 if v == 0 else v  # no "-0.0"


_r = round_value


class _Sums:
    """Sum and count per metric, and the number of scores added."""

    __slots__ = ("s", "n", "steps")

    def __init__(self) -> None:
        self.s = [0.0] * len(ALL_METRICS)
        self.n = [0] * len(ALL_METRICS)
        self.steps = 0

    def add(self, vals: Sequence[float | None]) -> None:
        self.steps += 1
        s, n = self.s, self.n
        for k, v in enumerate(vals):
            if v is not None:
                s[k] += v
                n[k] += 1

    def mean(self, k: int) -> float | None:
        return self.s[k] / self.n[k] if self.n[k] else None


class _SeedAcc:
    """One seed's micro sums and macro accumulators (sum of task means, number of tasks)."""

    __slots__ = ("micro", "macro_s", "macro_n")

    def __init__(self) -> None:
        self.micro = _Sums()
        self.macro_s = [0.0] * len(ALL_METRICS)
        self.macro_n = [0] * len(ALL_METRICS)


@dataclass(frozen=True)
class Report:
    """An aggregated score report; :meth:`to_json` is byte-identical for the same inputs.

    Attributes:
        metrics: metric name -> {micro, macro, n, n_tasks, std, ci95, per_seed}.
        counts: steps, tasks, seeds, predictions, format failures, missing, exclusions.
        breakdowns: dimension -> group -> {steps, gold_steps, metric -> {value, n, gold_n}}:
            ``steps`` and ``n`` count scores ((step, seed) pairs), ``gold_steps`` and
            ``gold_n`` the distinct gold steps behind them (what the leaderboard's
            granularity rule counts: ten identical seeds do not make one gold step ten).
        provenance: scorer version, dataset fingerprint, view, contract, steps scored and
            excluded, bootstrap settings, coordinate space.
        steps: the per-step scores, sorted by (seed, step id), when asked for.
        warnings: things the user should check (e.g. points that look like another
            coordinate space), sorted.
    """

    metrics: dict[str, dict[str, Any]]
    counts: dict[str, Any]
    breakdowns: dict[str, dict[str, Any]]
    provenance: dict[str, Any]
    steps: tuple[StepScore, ...] | None = None
    warnings: tuple[str, ...] = ()

    def value(self, metric: str) -> float | None:
        """The headline number of a metric: the micro mean (over seeds, their mean)."""
        return self.metrics[metric]["micro"]

    def to_dict(self, *, include_steps: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {name: self.metrics[name] for name in METRIC_NAMES}
        d["extensions"] = {name: self.metrics[name] for name in EXTENSION_METRICS}
        d["counts"] = self.counts
        d["breakdowns"] = self.breakdowns
        d["provenance"] = self.provenance
        d["warnings"] = list(self.warnings)
        if include_steps and self.steps is not None:
            d["steps"] = [s.to_dict() for s in self.steps]
        return d

    def to_json(self, *, include_steps: bool = False) -> str:
        return json.dumps(self.to_dict(include_steps=include_steps), ensure_ascii=False, indent=2) + "\n"


class Aggregator:
    """Streams :class:`StepScore` objects into a :class:`Report`.

    Nothing per score is kept (unless ``keep_steps``): a (seed, task) accumulator stays
    open only until all the task's steps have been scored for that seed, then it is folded
    into the seed's micro and macro sums and the pooled per-task sums of the bootstrap.
    With a file written seed by seed, memory is O(tasks + seeds), whatever its length.
    Each (seed, step) must be added at most once (:func:`score_predictions` checks it).
    """

    def __init__(
        self,
        steps: Sequence[Step],
        view: View | str,
        contract: Contract | str,
        *,
        verdicts: Any = None,
        keep_steps: bool = False,
        bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
        bootstrap_seed: int = BOOTSTRAP_SEED,
    ) -> None:
        self.steps = steps
        self.view, self.contract = View(view), Contract(contract)
        self.verdicts = verdicts
        self.keep = [] if keep_steps else None
        self.resamples, self.boot_seed = bootstrap_resamples, bootstrap_seed
        self.task_ids = sorted({s.task_id for s in steps})
        self.task_index = {t: i for i, t in enumerate(self.task_ids)}
        self.task_sizes = [0] * len(self.task_ids)
        for st in steps:
            self.task_sizes[self.task_index[st.task_id]] += 1
        self.seeds: dict[int, _SeedAcc] = {}
        self.open: dict[tuple[int, int], _Sums] = {}  # (seed, task) -> sums while incomplete
        self.pooled = [_Sums() for _ in self.task_ids]  # per task, all seeds (bootstrap)
        self.groups: dict[tuple[str, str], _Sums] = {}
        #: per group, the distinct gold steps scored -> the metrics that applied to them (bit k: ALL_METRICS[k])
        self.group_gold: dict[tuple[str, str], dict[str, int]] = {}
        self._group_cache: dict[tuple[str, str, bool, bool], list[tuple[_Sums, dict[str, int]]]] = {}
        self.n_scores = 0
        self.n_failed = 0
        self.n_missing = 0
        self.n_unjudged = 0
        self.fail_reasons: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.confusion: Counter[tuple[str, str]] = Counter()
        self.misses_px: list[float] = []  # coord target misses: distance to the gold box
        #: set by :func:`score_predictions`: the declared space and the look-alike check
        self.coord_space: dict[str, Any] | None = None
        self.space_check: SpaceCheck | None = None

    def add(self, sc: StepScore, *, missing: bool = False) -> None:
        vals = _VALUES(sc)
        t = self.task_index[sc.task_id]
        acc = self.open.get((sc.seed, t))
        if acc is None:
            acc = self.open[(sc.seed, t)] = _Sums()
        acc.add(vals)
        if acc.steps >= self.task_sizes[t]:
            self._close(sc.seed, t, acc)
        gkey = (sc.site, sc.gold_type, sc.stale, sc.unseen_template)
        groups = self._group_cache.get(gkey)
        if groups is None:
            groups = self._group_cache[gkey] = [
                (self.groups.setdefault(dk, _Sums()), self.group_gold.setdefault(dk, {}))
                for dk in (
                    ("site", sc.site),
                    ("action_type", sc.gold_type),
                    ("stale", "true" if sc.stale else "false"),
                    ("unseen_template", "true" if sc.unseen_template else "false"),
                )
            ]
        applies = 0
        for k, v in enumerate(vals):
            if v is not None:
                applies |= 1 << k
        sid = sc.step_id
        for g, gold in groups:
            g.add(vals)
            gold[sid] = gold.get(sid, 0) | applies
        self.n_scores += 1
        if not sc.format_ok:
            self.n_failed += 1
            # group reasons by their leading words so the table stays short
            self.fail_reasons[_reason_class(sc.reason)] += 1
        self.n_missing += missing
        self.n_unjudged += sc.unjudged
        if sc.error is not None:
            self.errors[sc.error] += 1
        if sc.pred_type is not None and sc.action_type_acc is not None:
            self.confusion[(sc.gold_type, sc.pred_type)] += 1
        if sc.box_distance is not None:
            self.misses_px.append(sc.box_distance)
        if self.keep is not None:
            self.keep.append(sc)

    def _close(self, seed: int, t: int, acc: _Sums) -> None:
        """Fold a finished (seed, task) into the seed's sums and the pooled task sums."""
        del self.open[(seed, t)]
        sa = self.seeds.get(seed)
        if sa is None:
            sa = self.seeds[seed] = _SeedAcc()
        pooled = self.pooled[t]
        for k in range(len(ALL_METRICS)):
            n = acc.n[k]
            if n:
                sa.micro.s[k] += acc.s[k]
                sa.micro.n[k] += n
                sa.macro_s[k] += acc.s[k] / n
                sa.macro_n[k] += 1
                pooled.s[k] += acc.s[k]
                pooled.n[k] += n

    # ----------------------------------------------------------------- report
    def _bootstrap(self, pooled: list[_Sums]) -> list[list[float] | None]:
        """Task-level bootstrap 95% interval of the micro mean, per metric."""
        import numpy as np

        T, K = len(pooled), len(ALL_METRICS)
        if T == 0 or self.resamples <= 0:
            return [None] * K
        # The explicit random.Random(seed) seeds numpy's PCG64 (fixed algorithm, same
        # stream on every platform), which draws all B x T task indices at once.
        gen = np.random.Generator(np.random.PCG64(random.Random(self.boot_seed).getrandbits(128)))
        B = self.resamples
        idx = gen.integers(0, T, size=(B, T))
        flat = (np.arange(B, dtype=np.int64)[:, None] * T + idx).ravel()
        mult = np.bincount(flat, minlength=B * T).reshape(B, T).astype(np.float64)
        sums = np.array([p.s for p in pooled], dtype=np.float64)  # T x K
        counts = np.array([p.n for p in pooled], dtype=np.float64)
        # einsum without optimize= runs numpy's own C loop (no BLAS threads): the sums are
        # taken in a fixed order, so the interval is the same on every run
        boot = np.einsum("bt,tk->bk", mult, np.hstack([sums, counts]))
        boot_s, boot_n = boot[:, :K], boot[:, K:]
        out: list[list[float] | None] = []
        for k in range(K):
            if counts[:, k].sum() == 0:
                out.append(None)
                continue
            ok = boot_n[:, k] > 0
            ratios = boot_s[ok, k] / boot_n[ok, k]
            lo, hi = np.percentile(ratios, [2.5, 97.5])
            out.append([_r(float(lo)), _r(float(hi))])
        return out

    def report(self) -> Report:
        """The report of every score added so far (folds tasks left incomplete first)."""
        # tasks left incomplete (only when the caller added a partial set of scores)
        for seed, t in sorted(self.open):
            self._close(seed, t, self.open[(seed, t)])
        if not self.seeds:
            self.seeds[0] = _SeedAcc()
        seeds = sorted(self.seeds)
        cis = self._bootstrap(self.pooled)
        metrics = {name: self._metric_entry(k, seeds, cis[k]) for k, name in enumerate(ALL_METRICS)}
        excluded = sum(1 for s in self.steps if not s.element_scored)
        warnings = tuple(self.space_check.warnings()) if self.space_check is not None else ()
        steps = None
        if self.keep is not None:
            steps = tuple(sorted(self.keep, key=lambda s: (s.seed, s.step_id)))
        return Report(
            metrics=metrics, counts=self._counts(seeds, excluded), breakdowns=self._breakdowns(),
            provenance=self._provenance(seeds, excluded), steps=steps, warnings=warnings,
        )

    def _metric_entry(self, k: int, seeds: list[int], ci95: list[float] | None) -> dict[str, Any]:
        """One metric's block: means over seeds of the micro and macro means, denominators, spread."""
        per_seed: dict[str, Any] = {}
        micros, macros = [], []
        n_total = 0
        for seed in seeds:
            sa = self.seeds[seed]
            n = sa.micro.n[k]
            micro = sa.micro.s[k] / n if n else None
            macro = sa.macro_s[k] / sa.macro_n[k] if sa.macro_n[k] else None
            n_total += n
            per_seed[str(seed)] = {"micro": _r(micro), "macro": _r(macro), "n": n}
            if micro is not None:
                micros.append(micro)
            if macro is not None:
                macros.append(macro)
        return {
            "micro": _r(math.fsum(micros) / len(micros)) if micros else None,
            "macro": _r(math.fsum(macros) / len(macros)) if macros else None,
            "n": n_total,
            "n_tasks": sum(1 for p in self.pooled if p.n[k]),
            "std": _r(statistics.stdev(micros)) if len(micros) >= 2 else None,
            "ci95": ci95,
            "per_seed": per_seed,
        }

    def _breakdowns(self) -> dict[str, dict[str, Any]]:
        breakdowns: dict[str, dict[str, Any]] = {dim: {} for dim in BREAKDOWNS}
        for (dim, key) in sorted(self.groups):
            g = self.groups[(dim, key)]
            gold = self.group_gold[(dim, key)]
            entry: dict[str, Any] = {"steps": g.steps, "gold_steps": len(gold)}
            masks = Counter(gold.values())
            for k, name in enumerate(ALL_METRICS):
                gold_n = sum(c for mask, c in masks.items() if mask >> k & 1)
                entry[name] = {"value": _r(g.mean(k)), "n": g.n[k], "gold_n": gold_n}
            breakdowns[dim][key] = entry
        return breakdowns

    def _counts(self, seeds: list[int], excluded: int) -> dict[str, Any]:
        return {
            "steps": len(self.steps),
            "tasks": len(self.task_ids),
            "seeds": seeds,
            "scored": self.n_scores,
            "format_ok": self.n_scores - self.n_failed,
            "format_failures": self.n_failed,
            "failure_reasons": dict(sorted(self.fail_reasons.items())),
            "missing": self.n_missing,
            "disputed": sum(1 for s in self.steps if s.audit_status is AuditStatus.DISPUTED),
            "unmappable": sum(1 for s in self.steps if s.audit_status is AuditStatus.UNMAPPABLE),
            "element_level_excluded": excluded,
            "usefulness_unjudged": self.n_unjudged,
            "errors": dict(sorted(self.errors.items(), key=lambda kv: (-kv[1], kv[0]))),
            "type_confusion": _confusion_table(self.confusion),
            "near_miss": _near_miss(self.misses_px),
        }

    def _provenance(self, seeds: list[int], excluded: int) -> dict[str, Any]:
        return {
            "scorer_version": SCORER_VERSION,
            "prompt_version": PROMPT_VERSION,
            "dataset_fingerprint": dataset_fingerprint(self.steps),
            "view": self.view.value,
            "contract": self.contract.value,
            "steps_scored": len(self.steps),
            "steps_excluded": excluded,
            "seeds": seeds,
            "bootstrap": {"unit": "task", "resamples": self.resamples, "seed": self.boot_seed, "interval": 0.95},
            "bleu": f"sacrebleu {sacrebleu_version()} sentence BLEU, lowercase, exp smoothing, effective order, /100",
            "rouge": "rouge-score rougeL F-measure, no stemmer",
            "verdicts": None
            if self.verdicts is None
            else {"judges": list(self.verdicts.judges), "fingerprint": self.verdicts.fingerprint()},
            "coord_space": None if self.view is not View.COORD else {
                **(self.coord_space or {"space": "pixels", "source": "default"}),
                "points": self.space_check.counts() if self.space_check is not None else {},
            },
        }


def _confusion_table(confusion: Counter[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Gold type -> predicted type -> count, both in ActionType order."""
    order = {t.value: i for i, t in enumerate(ActionType)}
    out: dict[str, dict[str, int]] = {}
    for (gold, pred), n in sorted(confusion.items(), key=lambda kv: (order[kv[0][0]], order[kv[0][1]])):
        out.setdefault(gold, {})[pred] = n
    return out


def _near_miss(distances: list[float]) -> dict[str, Any]:
    near = sum(1 for d in distances if d <= NEAR_MISS_PX)
    return {
        "misses": len(distances),
        "within_px": NEAR_MISS_PX,
        "near": near,
        "share_near": _r(near / len(distances)) if distances else None,
        "median_px": _r(statistics.median(distances)) if distances else None,
    }

def _reason_class(reason: str | None) -> str:
    if not reason:
        return "unknown"
    # strip quoted details and numbers: "invalid JSON: Expecting value at character 3" ->
    # "invalid JSON: Expecting value at character N"
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", reason))[:80]



def aggregate(
    scores: Iterable[StepScore],
    steps: Sequence[Step],
    view: View | str,
    contract: Contract | str,
    *,
    verdicts: Any = None,
    keep_steps: bool = False,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
) -> Report:
    """Aggregate per-step scores into a report.

    Args:
        scores: per-step scores (any order; several seeds allowed).
        steps: every step of the split (denominators, fingerprint, exclusions).
        view, contract: the condition scored.
        verdicts: the verdicts used (recorded in the provenance).
        keep_steps: keep the per-step scores in ``Report.steps``.
        bootstrap_resamples: bootstrap size (0 disables the interval).

    Returns:
        The report.
    """
    agg = Aggregator(
        steps, view, contract, verdicts=verdicts, keep_steps=keep_steps, bootstrap_resamples=bootstrap_resamples
    )
    for sc in scores:
        agg.add(sc)
    return agg.report()



__all__ = ["Aggregator", "BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "BREAKDOWNS", "NEAR_MISS_PX", "REPORT_DECIMALS",
           "Report", "aggregate", "round_value"]
