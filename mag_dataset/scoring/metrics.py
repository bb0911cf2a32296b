"""Every metric of the scorer, declared once in :data:`METRIC_TABLE`.

A row of the table is a :class:`Metric`: its report key, its board column title, its long
name, where it applies, its exact rule in words, its per-step rule (a function), the
Every Eval Ever kind, the paired test ``mag compare`` uses and the board column it fills.
Everything else reads this table: the :class:`~mag_dataset.scoring.step.StepScore` fields,
the aggregation, the report keys, the scorer's module docstring, the board's columns, the
leaderboard's About text, the comparison tests, the Every Eval Ever records and the
``.eval_results`` notes. Adding a metric is adding a row (and bumping
:data:`SCORER_VERSION`).

The rules implement WebMRE's offline protocol (arXiv 2609.27353, "Protocol"). A rule
returns ``None`` when the metric does not apply to the step, ``0.0`` for a failed output,
else its score. Not here: the text metrics themselves (:mod:`mag_dataset.scoring.text`) and
turning a raw output into a :class:`~mag_dataset.scoring.step.StepScore`
(:mod:`mag_dataset.scoring.step`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mag_dataset import consistency
from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, ActionType, Contract, View
from mag_dataset.parsing import Parsed
from mag_dataset.schema import Action, Candidate, Step, point_in_box
from mag_dataset.scoring.text import bleu_1_4, normalize_arg, normalize_url, rouge_l, token_f1

#: Bumped whenever a score could change for the same inputs (golden tests pin it).
#: 1.1.0: declared coordinate spaces, error taxonomy, guide-action consistency extension.
#: 1.1.1: consistency accepts cut quotes of long texts, overlapping boxes and icons in coord;
#: a 0-1000 grid read as pixels on wide pages is warned about.
#: 1.1.2: a report's breakdown groups also count distinct gold steps (``gold_steps``, ``gold_n``).
SCORER_VERSION = "1.1.2"


@dataclass(slots=True)
class StepInput:
    """What a rule sees: one parsed output on one gold step, in one condition (read only).

    Not frozen: one is built per scored step, and a frozen dataclass's ``__init__`` costs
    several times more (``object.__setattr__`` per field); no rule writes to it.

    Attributes:
        parsed: the output after the format gate, its point in screenshot pixels.
        step: the gold step.
        view, contract: the condition scored.
        verdicts: cached judge verdicts (:class:`mag_dataset.verdicts.Verdicts`) or None.
        menu: coord view under J and JG: the step's som candidate menu (else None).
    """

    parsed: Parsed
    step: Step
    view: View
    contract: Contract
    verdicts: Any
    menu: Sequence[Candidate] | None


#: A per-step rule: (the input, the values of the metrics declared before it) -> value.
Rule = Callable[[StepInput, Mapping[str, "float | None"]], "float | None"]


@dataclass(frozen=True)
class Metric:
    """One metric, declared once.

    Attributes:
        name: the report key and the :class:`~mag_dataset.scoring.step.StepScore` field.
        title: the short title (a board column, a table header).
        label: the long name (Every Eval Ever records, ``.eval_results`` notes).
        applies: where the metric applies (elsewhere it is ``None``), reStructuredText.
        definition: the exact rule in words, reStructuredText.
        rule: the per-step function.
        kind: the Every Eval Ever ``metric_kind``.
        test: ``mcnemar`` for a per-step 0/1 metric whose comparison of two single-seed
            files also reports the exact McNemar test, ``sign_flip`` otherwise; the p-value
            of ``mag compare`` and of the board's ranks is the task-level sign-flip test for
            every metric (:mod:`mag_dataset.compare`).
        column: the position of its column on the board; None when it has none.
        extension: reported apart from the papers' metrics (``extensions`` in the JSON).
    """

    name: str
    title: str
    label: str
    applies: str
    definition: str
    rule: Rule
    kind: str
    test: str = "mcnemar"
    column: int | None = None
    extension: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"metric name {self.name!r} is not an identifier (it is a StepScore field)")
        if self.test not in ("mcnemar", "sign_flip"):
            raise ValueError(f"metric {self.name}: unknown paired test {self.test!r}")

    @property
    def description(self) -> str:
        """One line for About and docs tables: where it applies, then the rule."""
        return f"{self.applies}: {self.definition}"


# --------------------------------------------------------------------------- helpers of the rules


def _has(contract: Contract, key: str) -> bool:
    return key in CONTRACT_KEYS[contract]


def target_match(pred: Action, step: Step, view: View) -> bool:
    """Whether a predicted action hits the gold target: som — ids equal; coord — point in the box."""
    gold = step.action
    if view is View.SOM:
        return pred.element_id is not None and gold.element_id is not None and pred.element_id == gold.element_id
    box = step.target_bbox
    return pred.coordinate is not None and box is not None and point_in_box(pred.coordinate, box)


def target_known(step: Step, view: View) -> bool:
    """Whether the gold target can be compared in ``view`` (an id in som, a box in coord)."""
    return step.action.element_id is not None if view is View.SOM else step.target_bbox is not None


def _target_applies(step: Step, view: View) -> bool:
    return step.has_target and step.element_scored and target_known(step, view)


def arg_norm(name: str) -> Callable[[str], str]:
    """The normalisation an argument is compared under (URLs also ignore a trailing ``/``)."""
    return normalize_url if name == "url" else normalize_arg


def _args_match(pred: Action, gold: Action) -> bool:
    for arg in ACTION_SPACE[gold.type].args:
        if not arg.scored:
            continue
        g, p = getattr(gold, arg.name), getattr(pred, arg.name)
        if g is None:
            continue
        if p is None:
            return False
        norm = arg_norm(arg.name)
        if norm(p) != norm(g):
            return False
    return True


# --------------------------------------------------------------------------- the rules


def _ofcr(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    return 1.0 if x.parsed.ok else 0.0


def _action_type_acc(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    if not _has(x.contract, "action"):
        return None
    p = x.parsed
    return float(p.ok and p.action is not None and p.action.type is x.step.action.type)


def _target_acc(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    if not _has(x.contract, "action") or not _target_applies(x.step, x.view):
        return None
    p = x.parsed
    return float(p.ok and p.action is not None and target_match(p.action, x.step, x.view))


def _text_f1(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    step, p = x.step, x.parsed
    if not _has(x.contract, "action") or step.action.type is not ActionType.TYPE:
        return None
    if not p.ok or p.action is None or p.action.type is not ActionType.TYPE:
        return 0.0
    return token_f1(p.action.text or "", step.action.text or "")


def _saa(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    step, p = x.step, x.parsed
    if not _has(x.contract, "action") or not step.element_scored:
        return None
    if step.has_target and not target_known(step, x.view):
        return None  # a targeted gold without a comparable target cannot be matched
    if not p.ok or p.action is None or p.action.type is not step.action.type:
        return 0.0
    if step.has_target and not target_match(p.action, step, x.view):
        return 0.0
    return float(_args_match(p.action, step.action))


def _bleu1(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    if not _has(x.contract, "guide"):
        return None
    p = x.parsed
    return bleu_1_4(p.guide, x.step.guide)[0] if p.ok and p.guide is not None else 0.0


def _bleu4(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    if not _has(x.contract, "guide"):
        return None
    p = x.parsed
    return bleu_1_4(p.guide, x.step.guide)[1] if p.ok and p.guide is not None else 0.0


def _rouge_l(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    if not _has(x.contract, "guide"):
        return None
    p = x.parsed
    return rouge_l(p.guide, x.step.guide) if p.ok and p.guide is not None else 0.0


def _usefulness(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    if x.verdicts is None or not _has(x.contract, "guide"):
        return None
    p = x.parsed
    if not p.ok or p.guide is None:
        return 0.0
    verdict = x.verdicts.useful(x.step.step_id, p.guide)
    return None if verdict is None else float(verdict)


def _guide_action_consistency(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    if x.contract not in (Contract.J, Contract.JG):
        return None
    # coord rows carry no menu: the som row's comes with the gold (score_parsed refuses none)
    cands = x.step.candidates if x.view is View.SOM else x.menu
    p = x.parsed
    if not p.ok or p.action is None or p.guide is None:
        return 0.0
    return float(consistency.check(p.guide, p.action, cands)[0])


def _joint_step_acc(x: StepInput, done: Mapping[str, float | None]) -> float | None:
    saa, cons = done["saa"], done["guide_action_consistency"]
    return None if saa is None or cons is None else float(saa == 1.0 and cons == 1.0)


# --------------------------------------------------------------------------- the table

_ACTION = "contracts with an action"
_GUIDE = "contracts with a guide"

#: The metrics, in report order: the papers' metrics, then the extensions. A rule may read
#: the values of the metrics above it. Grep here to find a metric.
METRIC_TABLE: tuple[Metric, ...] = (
    Metric(
        "ofcr", "OFCR", "output format compliance rate (OFCR)",
        "every step", "1 when the output passes :mod:`mag_dataset.parsing`.",
        _ofcr, kind="pass_rate", column=4,
    ),
    Metric(
        "action_type_acc", "type acc", "action type accuracy",
        _ACTION, "predicted type == gold type.",
        _action_type_acc, kind="accuracy", column=2,
    ),
    Metric(
        "target_acc", "target acc", "target accuracy",
        f"{_ACTION}, gold action targeted, step not ``disputed``/``unmappable``",
        "som — element ids equal (as strings); coord — the point inside ``target_bbox``, edges included.",
        _target_acc, kind="accuracy", column=1,
    ),
    Metric(
        "text_f1", "text F1", "typed-text token F1",
        f"{_ACTION}, gold type ``type``",
        "SQuAD-style token F1 (lower-cased, punctuation split off as tokens, multiset overlap) of "
        "predicted vs gold text; 0 if the type differs.",
        _text_f1, kind="f1", test="sign_flip", column=3,
    ),
    Metric(
        "saa", "SAA", "step action accuracy (SAA)",
        f"{_ACTION}, step not disputed/unmappable (and a targeted gold's target comparable in the view, "
        "as for ``target_acc``)",
        "type equal, target equal where the gold has one, and every scored argument equal after "
        ":func:`normalize_arg` (URLs also ignore a trailing ``/``; ``finish`` answer ignored).",
        _saa, kind="accuracy", column=0,
    ),
    Metric(
        "bleu1", "BLEU-1", "guide BLEU-1",
        _GUIDE,
        "sacrebleu sentence BLEU (the ``sentence_bleu`` defaults: exp smoothing, effective order) with "
        "``max_ngram_order`` 1, ``lowercase=True``, divided by 100 and rounded to 10 decimals (float noise only).",
        _bleu1, kind="bleu", test="sign_flip", column=5,
    ),
    Metric(
        "bleu4", "BLEU-4", "guide BLEU-4",
        _GUIDE, "as ``bleu1`` with ``max_ngram_order`` 4.",
        _bleu4, kind="bleu", test="sign_flip", column=6,
    ),
    Metric(
        "rouge_l", "ROUGE-L", "guide ROUGE-L",
        _GUIDE, "rouge-score ``rougeL`` F-measure, no stemmer.",
        _rouge_l, kind="rouge", test="sign_flip", column=7,
    ),
    Metric(
        "usefulness", "usefulness", "judge-rated guide usefulness",
        f"{_GUIDE}, when verdicts are given",
        "1 when the majority of three judges rated the guide useful; ``None`` (and counted as unjudged) "
        "when a verdict is missing.",
        # 0/1 per guide, yet no McNemar beside its sign-flip test: mag compare has reported
        # none since COMPARE_VERSION 1.0.0
        _usefulness, kind="pass_rate", test="sign_flip", column=8,
    ),
    Metric(
        "guide_action_consistency", "consistency", "guide-action consistency",
        "contracts J and JG",
        "1 when the generated guide describes the generated action (:mod:`mag_dataset.consistency`: verb, "
        "element named, typed text / selected value carried); in the coord view the element a point hits "
        "is read from the som menu of the same step, which the gold carries.",
        _guide_action_consistency, kind="accuracy", extension=True,
    ),
    Metric(
        "joint_step_acc", "joint acc", "joint step accuracy",
        "where both ``saa`` and the consistency apply", "``saa`` = 1 and consistent.",
        _joint_step_acc, kind="accuracy", extension=True,
    ),
)

#: Metric name -> its declaration.
METRIC_BY_NAME: dict[str, Metric] = {m.name: m for m in METRIC_TABLE}

#: Report metric keys of the papers' metrics, in report order.
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRIC_TABLE if not m.extension)

#: Extension metrics, reported apart from the papers' metrics (``extensions`` in the JSON).
EXTENSION_METRICS: tuple[str, ...] = tuple(m.name for m in METRIC_TABLE if m.extension)

#: Every aggregated metric: the papers', then the extensions (the table's order).
ALL_METRICS: tuple[str, ...] = METRIC_NAMES + EXTENSION_METRICS

#: The papers' metrics: report key -> per-step rule.
METRICS: dict[str, Rule] = {m.name: m.rule for m in METRIC_TABLE if not m.extension}

#: The board's metric columns, in column order: report key -> column title.
BOARD_COLUMNS: dict[str, str] = {
    m.name: m.title for m in sorted((m for m in METRIC_TABLE if m.column is not None), key=lambda m: m.column or 0)
}

#: The headline metric of a task, by contract (the papers' main figure; the leaderboard's
#: ranking metric): SAA for contracts with an action, guide BLEU-1 for G.
HEADLINE_METRIC: dict[Contract, str] = {
    Contract.A: "saa",
    Contract.G: "bleu1",
    Contract.J: "saa",
    Contract.JG: "saa",
}

#: Metrics whose per-step values are 0/1 and are compared by the exact McNemar test.
MCNEMAR_METRICS: frozenset[str] = frozenset(m.name for m in METRIC_TABLE if m.test == "mcnemar")


def _check_table() -> None:
    names = [m.name for m in METRIC_TABLE]
    if len(set(names)) != len(names):
        raise ValueError("METRIC_TABLE declares a metric twice")
    if ALL_METRICS != tuple(names):
        raise ValueError("METRIC_TABLE must list the papers' metrics before the extensions")
    if set(HEADLINE_METRIC) != set(Contract) or not set(HEADLINE_METRIC.values()) <= set(names):
        raise ValueError("HEADLINE_METRIC must name a declared metric for every contract")
    columns = [m.column for m in METRIC_TABLE if m.column is not None]
    if sorted(columns) != list(range(len(columns))):
        raise ValueError("the board columns of METRIC_TABLE must be 0..n-1, each once")


_check_table()


def metric_table_rst() -> str:
    """The metrics as a reStructuredText table (for a module docstring)."""
    width = max(len(f"``{m.name}``") for m in METRIC_TABLE) + 2
    rule = "=" * (width - 2) + "  " + "=" * 63
    lines = [rule, f"{'metric':<{width}}applies to: definition", rule]
    for m in METRIC_TABLE:
        lines.append(f"{'``' + m.name + '``':<{width}}{m.description}")
    lines.append(rule)
    return "\n".join(lines)


def _markdown(rst: str) -> str:
    """Inline reStructuredText as Markdown: ``x`` and :mod:`x` become `x`."""
    return re.sub(r":\w+:`", "`", rst.replace("``", "`"))


def metric_table_markdown() -> str:
    """The metrics as a Markdown table (README, About): name, title, where it applies, rule."""
    lines = ["| metric | title | applies to | rule |", "|---|---|---|---|"]
    for m in METRIC_TABLE:
        ext = " (extension)" if m.extension else ""
        applies, definition = (_markdown(t) for t in (m.applies, m.definition))
        lines.append(f"| `{m.name}`{ext} | {m.title} | {applies} | {definition} |")
    return "\n".join(lines)


__all__ = [
    "ALL_METRICS",
    "BOARD_COLUMNS",
    "EXTENSION_METRICS",
    "HEADLINE_METRIC",
    "MCNEMAR_METRICS",
    "METRICS",
    "METRIC_BY_NAME",
    "METRIC_NAMES",
    "METRIC_TABLE",
    "Metric",
    "Rule",
    "SCORER_VERSION",
    "StepInput",
    "arg_norm",
    "metric_table_markdown",
    "metric_table_rst",
    "target_known",
    "target_match",
]
