"""The deterministic scorer: per-step metrics, then aggregates. Pure: no I/O, no clock.

Implements the offline protocol of WebMRE (arXiv 2609.27353, "Protocol"): a format gate
(OFCR), action-type and target matching, typed-text token F1, step action accuracy, guide
BLEU and ROUGE, and judge-rated usefulness from cached verdicts. The same inputs always
give byte-identical report JSON; the only randomness is the task-level bootstrap, drawn
from an explicit ``random.Random(BOOTSTRAP_SEED)``.

Per step (``None`` = not applicable, ``0.0`` = wrong; a failed output scores 0 on every
applicable metric and stays in every denominator):

========================  ===============================================================
metric                    applies to / definition
========================  ===============================================================
``ofcr``                  every step: 1 when the output passes :mod:`mag_dataset.parsing`.
``action_type_acc``       contracts with an action: predicted type == gold type.
``target_acc``            contracts with an action, gold action targeted, step not
                          ``disputed``/``unmappable``: som — element ids equal (as
                          strings); coord — the point inside ``target_bbox``, edges
                          included.
``text_f1``               contracts with an action, gold type ``type``: SQuAD-style token
                          F1 (lower-cased, punctuation split off as tokens, multiset
                          overlap) of predicted vs gold text; 0 if the type differs.
``saa``                   contracts with an action, step not disputed/unmappable (and a
                          targeted gold's target comparable in the view, as for
                          ``target_acc``): type equal, target equal where the gold has
                          one, and every scored argument equal after
                          :func:`normalize_arg` (URLs also ignore a trailing ``/``;
                          ``finish`` answer ignored).
``bleu1``, ``bleu4``      contracts with a guide: sacrebleu sentence BLEU (the
                          ``sentence_bleu`` defaults: exp smoothing, effective order) with
                          ``max_ngram_order`` 1 / 4, ``lowercase=True``, divided by 100
                          and rounded to 10 decimals (float noise only).
``rouge_l``               contracts with a guide: rouge-score ``rougeL`` F-measure, no
                          stemmer.
``usefulness``            contracts with a guide, when verdicts are given: 1 when the
                          majority of three judges rated the guide useful; ``None`` (and
                          counted as unjudged) when a verdict is missing.
========================  ===============================================================

Extensions, reported apart from the papers' metrics (under ``extensions`` in the JSON):

============================  ===========================================================
``guide_action_consistency``  contracts J and JG: 1 when the generated guide describes the
                              generated action (:mod:`mag_dataset.consistency`: verb,
                              element named, typed text / selected value carried); in the
                              coord view only when the som menus are given.
``joint_step_acc``            where both ``saa`` and the consistency apply: ``saa`` = 1
                              and consistent.
============================  ===========================================================

Coordinate spaces: in the coord view a predicted point is converted from its declared
space (:mod:`mag_dataset.coords`; default screenshot pixels) to screenshot pixels before
the point-in-box test. The space is recorded in the provenance; points that look like
another space give a warning in the report.

Error taxonomy (``error`` per step; counts in ``counts["errors"]``): ``format:<class>``
(:data:`mag_dataset.parsing.FORMAT_CLASSES`) for an output failing the gate; else, where
``saa`` applies, the first check that fails in ``saa``'s order: ``wrong_action_type``,
``wrong_element`` (som), ``point_outside_image`` / ``point_outside_box`` (coord; with the
distance to the gold box in px), ``wrong_text``, ``wrong_value`` (select / tab), ``wrong_direction``,
``wrong_key``, ``wrong_url``; ``correct`` when ``saa`` = 1. ``None`` where ``saa`` does
not apply and the output passed the gate. ``counts["type_confusion"]`` is the gold x
predicted action-type matrix of outputs that passed the gate, ``counts["near_miss"]``
the share of coord misses within :data:`NEAR_MISS_PX` of the gold box.

Aggregates: micro mean over steps, macro mean over tasks (mean of per-task means), each
with its denominator; several seeds give the mean over seeds and the sample std; ``ci95``
is a task-level bootstrap of the micro mean (tasks resampled with replacement, seeds
pooled). Breakdowns by site, gold action type, stale and unseen_template.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import re
import statistics
import unicodedata
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mag_dataset import consistency
from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, ActionType, Contract, View
from mag_dataset.coords import PIXELS, CoordSpace, SpaceCheck, parse_coord_space
from mag_dataset.parsing import Parsed, parse_output
from mag_dataset.predictions import Prediction, PredictionsError, SeenSteps
from mag_dataset.prompts import PROMPT_VERSION
from mag_dataset.schema import Action, AuditStatus, Box, Candidate, Point, Step, point_in_box

#: Bumped whenever a score could change for the same inputs (golden tests pin it).
#: 1.1.0: declared coordinate spaces, error taxonomy, guide-action consistency extension.
#: 1.1.1: consistency accepts cut quotes of long texts, overlapping boxes and icons in coord;
#: a 0-1000 grid read as pixels on wide pages is warned about.
SCORER_VERSION = "1.1.1"

#: Report metric keys, in report order.
METRIC_NAMES: tuple[str, ...] = (
    "ofcr",
    "action_type_acc",
    "target_acc",
    "text_f1",
    "saa",
    "bleu1",
    "bleu4",
    "rouge_l",
    "usefulness",
)

#: Extension metrics, reported apart from the papers' metrics (``extensions`` in the JSON).
EXTENSION_METRICS: tuple[str, ...] = ("guide_action_consistency", "joint_step_acc")

#: Every aggregated metric: the papers', then the extensions.
ALL_METRICS: tuple[str, ...] = METRIC_NAMES + EXTENSION_METRICS

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
#: Decimal places of the per-step BLEU and ROUGE-L values (removes float noise only).
STEP_DECIMALS = 10

_PUNCT_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


# --------------------------------------------------------------------------- text helpers


def normalize_arg(s: str) -> str:
    """Normalise an action argument for exact comparison: NFKC, lower case, single spaces."""
    return " ".join(unicodedata.normalize("NFKC", s).lower().split())


def _normalize_url(s: str) -> str:
    return normalize_arg(s).rstrip("/")


def tokens(s: str) -> list[str]:
    """Lower-cased word tokens with punctuation split off as separate tokens."""
    return _PUNCT_TOKEN.findall(unicodedata.normalize("NFKC", s).lower())


def token_f1(pred: str, gold: str) -> float:
    """SQuAD-style token F1 with multiset overlap (1.0 when both are empty)."""
    p, g = tokens(pred), tokens(gold)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


_BLEU: dict[int, Any] = {}
_ROUGE: list[Any] = []


def _bleu_metric(order: int) -> Any:
    m = _BLEU.get(order)
    if m is None:
        from sacrebleu.metrics import BLEU

        # Same settings as sacrebleu.sentence_bleu (exp smoothing, effective order), plus
        # lowercase and the n-gram order; built once because construction is costly.
        m = _BLEU[order] = BLEU(lowercase=True, max_ngram_order=order, effective_order=True)
    return m


def bleu(pred: str, gold: str, order: int) -> float:
    """Sentence BLEU in [0, 1] (sacrebleu, lowercase, max_ngram_order=order).

    Rounded to :data:`STEP_DECIMALS` places: sacrebleu's log-space arithmetic returns
    100.00000000000004 for identical strings, and a perfect guide must score exactly 1.
    """
    return round(_bleu_metric(order).sentence_score(pred, [gold]).score / 100.0, STEP_DECIMALS)


# one-entry memo holding ONE tuple (pred, gold, (bleu1, bleu4)): reading and replacing a
# single reference is atomic, so threads scoring at once never mix pairs up
_LAST_PAIR: list[Any] = [None]


def bleu_1_4(pred: str, gold: str) -> tuple[float, float]:
    """BLEU-1 and BLEU-4 of one pair from ONE pass of sacrebleu's n-gram statistics.

    sacrebleu's segment statistics for order 4 are ``[hyp_len, ref_len, c1..c4, t1..t4]``;
    the order-1 statistics are ``[hyp_len, ref_len, c1, t1]``, the same numbers. Both
    scores are computed by sacrebleu's own ``BLEU`` objects from them, so the values equal
    :func:`bleu` with order 1 and 4 (a test checks it) while tokenising the pair once.
    """
    last = _LAST_PAIR[0]
    if last is not None and last[0] == pred and last[1] == gold:
        return last[2]
    m1, m4 = _bleu_metric(1), _bleu_metric(4)
    stats = m4._extract_corpus_statistics([pred], [[gold]])[0]
    b4 = m4._compute_score_from_stats(stats).score
    b1 = m1._compute_score_from_stats([stats[0], stats[1], stats[2], stats[6]]).score
    out = (round(b1 / 100.0, STEP_DECIMALS), round(b4 / 100.0, STEP_DECIMALS))
    _LAST_PAIR[0] = (pred, gold, out)
    return out


def rouge_l(pred: str, gold: str) -> float:
    """rouge-score ``rougeL`` F-measure, no stemmer."""
    if not _ROUGE:
        from rouge_score import rouge_scorer

        _ROUGE.append(rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False))
    return round(_ROUGE[0].score(gold, pred)["rougeL"].fmeasure, STEP_DECIMALS)


# --------------------------------------------------------------------------- per step


@dataclass(frozen=True)
class StepScore:
    """Scores of one output on one step (``None`` = not applicable).

    Attributes:
        step_id, task_id, site: identify the step.
        gold_type: the gold action type (breakdown key).
        stale, unseen_template: the step's flags (breakdown keys).
        seed: the prediction's seed.
        format_ok: the output passed the format gate.
        reason: why it failed the gate (None when it passed).
        unjudged: verdicts were given but none covers this guide.
        ofcr ... usefulness: the metrics, see the module docstring.
        guide_action_consistency, joint_step_acc: the extension metrics.
        error: the error-taxonomy class (see the module docstring), None where it does
            not apply.
        pred_type: the predicted action type (output passed the gate), else None.
        box_distance: coord view, a target miss: distance from the point to the gold box
            in screenshot pixels.
    """

    step_id: str
    task_id: str
    site: str
    gold_type: str
    stale: bool
    unseen_template: bool
    seed: int
    format_ok: bool
    reason: str | None
    unjudged: bool
    ofcr: float
    action_type_acc: float | None
    target_acc: float | None
    text_f1: float | None
    saa: float | None
    bleu1: float | None
    bleu4: float | None
    rouge_l: float | None
    usefulness: float | None
    guide_action_consistency: float | None = None
    joint_step_acc: float | None = None
    error: str | None = None
    pred_type: str | None = None
    box_distance: float | None = None

    def metric(self, name: str) -> float | None:
        return getattr(self, name)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _target_match(pred: Action, step: Step, view: View) -> bool:
    gold = step.action
    if view is View.SOM:
        return pred.element_id is not None and gold.element_id is not None and pred.element_id == gold.element_id
    return pred.coordinate is not None and step.target_bbox is not None and point_in_box(pred.coordinate, step.target_bbox)


def _target_known(step: Step, view: View) -> bool:
    """Whether the gold target can be compared in ``view`` (an id in som, a box in coord)."""
    return step.action.element_id is not None if view is View.SOM else step.target_bbox is not None


def _target_applies(step: Step, view: View) -> bool:
    return step.has_target and step.element_scored and _target_known(step, view)


def _args_match(pred: Action, gold: Action) -> bool:
    for arg in ACTION_SPACE[gold.type].args:
        if not arg.scored:
            continue
        g, p = getattr(gold, arg.name), getattr(pred, arg.name)
        if g is None:
            continue
        if p is None:
            return False
        norm = _normalize_url if arg.name == "url" else normalize_arg
        if norm(p) != norm(g):
            return False
    return True


# Each metric: (parsed output, step, view, contract, verdicts) -> float | None. A metric
# returns None when it does not apply, else 0.0 for a failed output, else its score.
MetricFn = Callable[[Parsed, Step, View, Contract, Any], "float | None"]


def _has(contract: Contract, key: str) -> bool:
    return key in CONTRACT_KEYS[contract]


def _m_ofcr(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    return 1.0 if p.ok else 0.0


def _m_type(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if not _has(contract, "action"):
        return None
    return float(p.ok and p.action is not None and p.action.type is step.action.type)


def _m_target(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if not _has(contract, "action") or not _target_applies(step, view):
        return None
    return float(p.ok and p.action is not None and _target_match(p.action, step, view))


def _m_text_f1(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if not _has(contract, "action") or step.action.type is not ActionType.TYPE:
        return None
    if not p.ok or p.action is None or p.action.type is not ActionType.TYPE:
        return 0.0
    return token_f1(p.action.text or "", step.action.text or "")


def _m_saa(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if not _has(contract, "action") or not step.element_scored:
        return None
    if step.has_target and not _target_known(step, view):
        return None  # a targeted gold without a comparable target cannot be matched
    if not p.ok or p.action is None or p.action.type is not step.action.type:
        return 0.0
    if step.has_target and not _target_match(p.action, step, view):
        return 0.0
    return float(_args_match(p.action, step.action))


def _m_bleu1(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if not _has(contract, "guide"):
        return None
    return bleu_1_4(p.guide, step.guide)[0] if p.ok and p.guide is not None else 0.0


def _m_bleu4(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if not _has(contract, "guide"):
        return None
    return bleu_1_4(p.guide, step.guide)[1] if p.ok and p.guide is not None else 0.0


def _m_rouge_l(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if not _has(contract, "guide"):
        return None
    return rouge_l(p.guide, step.guide) if p.ok and p.guide is not None else 0.0


def _m_usefulness(p: Parsed, step: Step, view: View, contract: Contract, verdicts: Any) -> float | None:
    if verdicts is None or not _has(contract, "guide"):
        return None
    if not p.ok or p.guide is None:
        return 0.0
    verdict = verdicts.useful(step.step_id, p.guide)
    return None if verdict is None else float(verdict)


#: The metric table: report key -> per-step function. Grep here to find a metric.
METRICS: dict[str, MetricFn] = {
    "ofcr": _m_ofcr,
    "action_type_acc": _m_type,
    "target_acc": _m_target,
    "text_f1": _m_text_f1,
    "saa": _m_saa,
    "bleu1": _m_bleu1,
    "bleu4": _m_bleu4,
    "rouge_l": _m_rouge_l,
    "usefulness": _m_usefulness,
}
assert tuple(METRICS) == METRIC_NAMES
_METRIC_FNS = tuple(METRICS.values())
_SAA = METRIC_NAMES.index("saa")

#: Taxonomy class of a wrong scored argument, by argument name.
_ARG_ERRORS: dict[str, str] = {
    "text": "wrong_text",
    "value": "wrong_value",
    "direction": "wrong_direction",
    "key": "wrong_key",
    "url": "wrong_url",
}


def box_distance(point: Point, box: Box) -> float:
    """Euclidean distance in px from a point to a box (0 inside or on an edge)."""
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return round(math.hypot(dx, dy), 4)


def _error(p: Parsed, step: Step, view: View, contract: Contract, saa: float | None) -> tuple[str | None, float | None]:
    """The error-taxonomy class of one scored output, and the box distance of a coord miss."""
    if not p.ok:
        return "format:" + (p.kind or "not_json"), None
    if not _has(contract, "action") or saa is None or p.action is None:
        return None, None
    pred, gold = p.action, step.action
    if pred.type is not gold.type:
        return "wrong_action_type", None
    if step.has_target and not _target_match(pred, step, view):
        if view is View.SOM:
            return "wrong_element", None
        dist = box_distance(pred.coordinate, step.target_bbox) if pred.coordinate and step.target_bbox else None
        x, y = pred.coordinate or (0.0, 0.0)
        inside = 0 <= x <= step.image_width and 0 <= y <= step.image_height
        return ("point_outside_box" if inside else "point_outside_image"), dist
    if saa == 1.0:
        return "correct", None
    for arg in ACTION_SPACE[gold.type].args:
        if not arg.scored or getattr(gold, arg.name) is None:
            continue
        g, q = getattr(gold, arg.name), getattr(pred, arg.name)
        norm = _normalize_url if arg.name == "url" else normalize_arg
        if q is None or norm(q) != norm(g):
            return _ARG_ERRORS.get(arg.name, "wrong_" + arg.name), None
    return "wrong_argument", None  # pragma: no cover - saa is 0 only for the reasons above


def _consistency(p: Parsed, step: Step, view: View, contract: Contract, menu: Sequence[Candidate] | None) -> float | None:
    if contract not in (Contract.J, Contract.JG):
        return None
    cands = step.candidates if view is View.SOM else menu
    if cands is None:
        return None  # coord view without the som menus: which element a point hits is unknown
    if not p.ok or p.action is None or p.guide is None:
        return 0.0
    return float(consistency.check(p.guide, p.action, cands)[0])


def convert_coordinate(parsed: Parsed, step: Step, space: CoordSpace) -> Parsed:
    """The parsed output with its point converted from ``space`` to screenshot pixels."""
    if space.kind == "pixels" or not parsed.ok or parsed.action is None or parsed.action.coordinate is None:
        return parsed
    pt = space.to_pixels(parsed.action.coordinate, step.image_width, step.image_height)
    return dataclasses.replace(parsed, action=dataclasses.replace(parsed.action, coordinate=pt))


def score_parsed(
    parsed: Parsed,
    step: Step,
    view: View | str,
    contract: Contract | str,
    verdicts: Any = None,
    *,
    seed: int = 0,
    menu: Sequence[Candidate] | None = None,
) -> StepScore:
    """Score an already parsed output whose point is in screenshot pixels (see :func:`score_step`)."""
    if type(view) is not View:
        view = View(view)
    if type(contract) is not Contract:
        contract = Contract(contract)
    vals = [fn(parsed, step, view, contract, verdicts) for fn in _METRIC_FNS]
    unjudged = verdicts is not None and parsed.ok and vals[-1] is None and "guide" in CONTRACT_KEYS[contract]
    saa = vals[_SAA]
    cons = _consistency(parsed, step, view, contract, menu)
    joint = None if saa is None or cons is None else float(saa == 1.0 and cons == 1.0)
    error, dist = _error(parsed, step, view, contract, saa)
    pred_type = parsed.action.type.value if parsed.ok and parsed.action is not None else None
    return StepScore(
        step.step_id,
        step.task_id,
        step.site,
        step.action.type.value,
        step.stale,
        step.unseen_template,
        seed,
        parsed.ok,
        parsed.reason,
        unjudged,
        *vals,
        guide_action_consistency=cons,
        joint_step_acc=joint,
        error=error,
        pred_type=pred_type,
        box_distance=dist,
    )


def score_step(
    output: Any,
    step: Step,
    view: View | str,
    contract: Contract | str,
    verdicts: Any = None,
    *,
    seed: int = 0,
    coord_space: CoordSpace | str | None = None,
    menu: Sequence[Candidate] | None = None,
) -> StepScore:
    """Score one raw model output on one step.

    Args:
        output: the raw model text.
        step: the gold step.
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        verdicts: cached judge verdicts (:class:`mag_dataset.verdicts.Verdicts`) or None.
        seed: the prediction's seed, carried into the score.
        coord_space: the space of a coord-view point (:mod:`mag_dataset.coords`;
            default screenshot pixels).
        menu: coord view: the step's som candidate menu (enables the consistency check).

    Returns:
        The step's scores; metrics that do not apply are None.
    """
    parsed = parse_output(output, view, contract)
    space = parse_coord_space(coord_space)
    if space is not PIXELS:
        parsed = convert_coordinate(parsed, step, space)
    return score_parsed(parsed, step, view, contract, verdicts, seed=seed, menu=menu)


_MISSING = Parsed(ok=False, reason="no prediction for this step", kind="missing")


# --------------------------------------------------------------------------- aggregation


_STEP_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Step))
_ACTION_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Action))


def _gold_line(step: Step) -> str:
    """Canonical JSON of one gold step: every Step field in declaration order, as a list.

    Lists instead of objects keep it fast (a 55-element menu per step); enums are str
    subclasses and serialise as their values; tuples serialise as lists.
    """
    row: list[Any] = []
    for name in _STEP_FIELDS:
        v = getattr(step, name)
        if name == "action":
            v = [getattr(v, f) for f in _ACTION_FIELDS]
        elif name == "candidates":
            v = [(c.id, c.role, c.text, c.bbox) for c in v]
        row.append(v)
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


# id(step) -> (weak reference, sha256 of the canonical line). A memo, not state: a Step is
# immutable, so the same object always has the same digest; entries vanish with their steps.
_LINES: dict[int, tuple[weakref.ref, bytes]] = {}


def _record_digest(step: Step) -> bytes:
    hit = _LINES.get(id(step))
    if hit is not None and hit[0]() is step:
        return hit[1]
    line = hashlib.sha256(_gold_line(step).encode("utf-8")).digest()
    key = id(step)

    def forget(ref: weakref.ref, key: int = key) -> None:
        if _LINES.get(key, (None,))[0] is ref:
            del _LINES[key]

    _LINES[key] = (weakref.ref(step, forget), line)
    return line


def dataset_fingerprint(steps: Iterable[Step]) -> str:
    """sha256 over the canonical gold records: the sha256 of each step's canonical JSON
    line (every Step field), concatenated in step-id order, hashed again.

    Any change to the gold (action, boxes, audit flags, guides, menus) changes the
    fingerprint; the order of ``steps`` does not.
    """
    h = hashlib.sha256()
    for _sid, digest in sorted((s.step_id, _record_digest(s)) for s in steps):
        h.update(digest)
    return "sha256:" + h.hexdigest()


def _r(x: float | None) -> float | None:
    if x is None:
        return None
    v = round(x, REPORT_DECIMALS)
    return 0.0 if v == 0 else v  # no "-0.0"


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
        breakdowns: dimension -> group -> {steps, metric -> {value, n}}.
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
        self._group_cache: dict[tuple[str, str, bool, bool], list[_Sums]] = {}
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
        vals = [sc.ofcr, sc.action_type_acc, sc.target_acc, sc.text_f1, sc.saa, sc.bleu1, sc.bleu4, sc.rouge_l,
                sc.usefulness, sc.guide_action_consistency, sc.joint_step_acc]
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
                self.groups.setdefault(dk, _Sums())
                for dk in (
                    ("site", sc.site),
                    ("action_type", sc.gold_type),
                    ("stale", "true" if sc.stale else "false"),
                    ("unseen_template", "true" if sc.unseen_template else "false"),
                )
            ]
        for g in groups:
            g.add(vals)
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
        # tasks left incomplete (only when the caller added a partial set of scores)
        for seed, t in sorted(self.open):
            self._close(seed, t, self.open[(seed, t)])
        if not self.seeds:
            self.seeds[0] = _SeedAcc()
        seeds = sorted(self.seeds)
        cis = self._bootstrap(self.pooled)
        metrics: dict[str, dict[str, Any]] = {}
        for k, name in enumerate(ALL_METRICS):
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
            metrics[name] = {
                "micro": _r(math.fsum(micros) / len(micros)) if micros else None,
                "macro": _r(math.fsum(macros) / len(macros)) if macros else None,
                "n": n_total,
                "n_tasks": sum(1 for p in self.pooled if p.n[k]),
                "std": _r(statistics.stdev(micros)) if len(micros) >= 2 else None,
                "ci95": cis[k],
                "per_seed": per_seed,
            }
        breakdowns: dict[str, dict[str, Any]] = {dim: {} for dim in BREAKDOWNS}
        for (dim, key) in sorted(self.groups):
            g = self.groups[(dim, key)]
            entry: dict[str, Any] = {"steps": g.steps}
            for k, name in enumerate(ALL_METRICS):
                entry[name] = {"value": _r(g.mean(k)), "n": g.n[k]}
            breakdowns[dim][key] = entry
        excluded = sum(1 for s in self.steps if not s.element_scored)
        counts = {
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
        provenance = {
            "scorer_version": SCORER_VERSION,
            "prompt_version": PROMPT_VERSION,
            "dataset_fingerprint": dataset_fingerprint(self.steps),
            "view": self.view.value,
            "contract": self.contract.value,
            "steps_scored": len(self.steps),
            "steps_excluded": excluded,
            "seeds": seeds,
            "bootstrap": {"unit": "task", "resamples": self.resamples, "seed": self.boot_seed, "interval": 0.95},
            "bleu": f"sacrebleu {_sacrebleu_version()} sentence BLEU, lowercase, exp smoothing, effective order, /100",
            "rouge": "rouge-score rougeL F-measure, no stemmer",
            "verdicts": None
            if self.verdicts is None
            else {"judges": list(self.verdicts.judges), "fingerprint": self.verdicts.fingerprint()},
            "coord_space": None if self.view is not View.COORD else {
                **(self.coord_space or {"space": "pixels", "source": "default"}),
                "points": self.space_check.counts() if self.space_check is not None else {},
            },
        }
        warnings = tuple(self.space_check.warnings()) if self.space_check is not None else ()
        steps = None
        if self.keep is not None:
            steps = tuple(sorted(self.keep, key=lambda s: (s.seed, s.step_id)))
        return Report(
            metrics=metrics, counts=counts, breakdowns=breakdowns, provenance=provenance, steps=steps, warnings=warnings
        )


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


def _reason_class(reason: str | None) -> str:
    if not reason:
        return "unknown"
    # strip quoted details and numbers: "invalid JSON: Expecting value at character 3" ->
    # "invalid JSON: Expecting value at character N"
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", reason))[:80]


def _sacrebleu_version() -> str:
    import sacrebleu

    return str(sacrebleu.__version__)


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


def score_predictions(
    predictions: Iterable[Prediction],
    steps: Sequence[Step] | Mapping[str, Step],
    view: View | str,
    contract: Contract | str,
    *,
    verdicts: Any = None,
    allow_missing: bool = False,
    keep_steps: bool = False,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
    coord_space: CoordSpace | str | None = None,
    coord_space_source: str | None = None,
    menus: Mapping[str, Sequence[Candidate]] | None = None,
) -> Report:
    """Score predictions against the gold steps of a split (streams the predictions).

    Args:
        predictions: one :class:`Prediction` per (step, seed); an iterator is consumed once.
        steps: every gold step of the split (a sequence or a step_id -> Step mapping).
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        verdicts: cached judge verdicts for usefulness, or None.
        allow_missing: score steps without a prediction as format failures instead of
            raising.
        keep_steps: keep the per-step scores in ``Report.steps``.
        bootstrap_resamples: bootstrap size (0 disables the interval).
        coord_space: the coordinate space of the file's points (coord view; default
            screenshot pixels); a prediction's own ``coord_space`` overrides it.
        coord_space_source: where the space was declared (``flag``, ``sidecar``...),
            recorded in the provenance; ``default`` when no space is given.
        menus: step id -> som candidate menu; in the coord view it enables the
            guide-action consistency check (which element a point hits).

    Returns:
        The report.

    Raises:
        PredictionsError: an unknown step id, a duplicate (step id, seed), a bad
            coordinate space, or (without ``allow_missing``) a step with no prediction.
    """
    view, contract = View(view), Contract(contract)
    try:
        space = parse_coord_space(coord_space)
    except ValueError as e:
        raise PredictionsError(str(e)) from None
    step_list = list(steps.values()) if isinstance(steps, Mapping) else list(steps)
    by_id = {s.step_id: s for s in step_list}
    if len(by_id) != len(step_list):
        raise ValueError("steps contain duplicate step ids")
    seen = SeenSteps(list(by_id))
    agg = Aggregator(
        step_list, view, contract, verdicts=verdicts, keep_steps=keep_steps, bootstrap_resamples=bootstrap_resamples
    )
    coord = view is View.COORD
    if coord:
        source = coord_space_source or ("default" if coord_space is None else "argument")
        agg.coord_space = {"space": space.name, "source": source}
        agg.space_check = SpaceCheck()
    spaces: dict[str, CoordSpace] = {}
    no_menu: tuple[Candidate, ...] = ()
    for n, pred in enumerate(predictions, start=1):
        i = seen.index.get(pred.step_id)
        if i is None:
            raise PredictionsError(f"prediction {n}: unknown step_id {pred.step_id[:200]!r}")
        if seen.add(i, pred.seed):
            raise PredictionsError(f"prediction {n}: duplicate step_id {pred.step_id[:200]!r} for seed {pred.seed}")
        step = by_id[pred.step_id]
        parsed = parse_output(pred.output, view, contract)
        menu = None
        if coord:
            own = getattr(pred, "coord_space", None)
            sp = space
            if own is not None:
                sp = spaces.get(own)
                if sp is None:
                    try:
                        sp = spaces[own] = parse_coord_space(own)
                    except ValueError as e:
                        raise PredictionsError(f"prediction {n}: {e}") from None
            if parsed.ok and parsed.action is not None and parsed.action.coordinate is not None:
                agg.space_check.add(parsed.action.coordinate, sp, step.image_width, step.image_height)
                parsed = convert_coordinate(parsed, step, sp)
            if menus is not None:
                menu = menus.get(pred.step_id, no_menu)
        agg.add(score_parsed(parsed, step, view, contract, verdicts, seed=pred.seed, menu=menu))
    for seed in seen.seeds:
        missing = seen.missing(seed)
        if missing and not allow_missing:
            shown = ", ".join(repr(m) for m in missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise PredictionsError(f"{len(missing)} step id(s) have no prediction for seed {seed}: {shown}")
        for sid in missing:
            menu = menus.get(sid, no_menu) if coord and menus is not None else None
            agg.add(score_parsed(_MISSING, by_id[sid], view, contract, verdicts, seed=seed, menu=menu), missing=True)
    return agg.report()


__all__ = [
    "ALL_METRICS",
    "Aggregator",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "EXTENSION_METRICS",
    "METRICS",
    "METRIC_NAMES",
    "NEAR_MISS_PX",
    "Report",
    "SCORER_VERSION",
    "StepScore",
    "aggregate",
    "bleu",
    "bleu_1_4",
    "box_distance",
    "convert_coordinate",
    "dataset_fingerprint",
    "format_report",
    "normalize_arg",
    "rouge_l",
    "score_parsed",
    "score_predictions",
    "score_step",
    "token_f1",
    "tokens",
]
