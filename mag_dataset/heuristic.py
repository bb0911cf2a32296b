"""The no-model heuristic baseline: text matching of the intent against the candidate menu.

A reference point, not a model: it reads the task intent, the previous guides and the
candidate menu, picks an action by string matching, writes the template guide of that
action (:func:`mag_dataset.template_guides.template_guide`) and renders it in the requested contract
through the same code as the gold answers (:func:`mag_dataset.prompts.render_output`).

Rules, in order:

1. Values are the quoted strings of the intent (``"..."``, or ``'...'`` not inside a word).
   A value is *done* when a previous guide already contains it.
2. For the first value not done: click a non-input element whose text equals it; else, if
   the intent says select/choose and a drop-down exists, select it there; else type it into
   an input field: fields already named in a previous guide come last, then fields named
   by the words just before the value in the intent, then menu order; else click an
   element whose text contains it.
3. Then click the elements whose whole text is mentioned in the intent and not yet clicked
   (submit-like buttons last); then, if nothing is left, ``finish``.

In the coord view the action is the centre of the chosen candidate's box. The coord rows
of the dataset carry no menu, so the heuristic reads the som menu of the same step id from
the gold (:class:`~mag_dataset.scoring.gold.GoldSteps`, which :func:`mag_dataset.dataset.load_gold`
builds): the heuristic is a no-model reference for both views, not a coordinate-grounding model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mag_dataset.actions import ActionType, Contract, View
from mag_dataset.template_guides import template_guide
from mag_dataset.predictions import Prediction
from mag_dataset.prompts import action_object, render_output
from mag_dataset.schema import Action, Candidate, Step, box_center
from mag_dataset.scoring.gold import GoldSteps

if TYPE_CHECKING:
    from mag_dataset.scoring import Report

_INPUT_ROLES = frozenset({"textbox", "searchbox", "input", "textarea", "spinbutton"})
_SELECT_ROLES = frozenset({"combobox", "listbox", "select"})
_SUBMIT_WORDS = frozenset({"submit", "ok", "done", "search", "go", "send", "login", "log in", "sign in", "next"})
_STOP = frozenset(
    "a an and the to of in on into from for with by at is it this that then click enter type select "
    "choose press field box button text".split()
)
_QUOTED = re.compile(r'"([^"]+)"|(?<!\w)\'([^\']+)\'(?!\w)')
_WORD = re.compile(r"\w+")


def _norm(s: str) -> str:
    return " ".join(s.split()).lower()


def _words(s: str) -> list[str]:
    return _WORD.findall(s.lower())


def _values(intent: str) -> list[str]:
    return [a or b for a, b in _QUOTED.findall(intent) if (a or b).strip()]


def _mentioned(text: str, intent_norm: str) -> bool:
    t = _norm(text)
    return bool(t) and len(t) <= 40 and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", intent_norm) is not None


def _clicked(c: Candidate, history: str) -> bool:
    t = _norm(c.text)
    return bool(t) and f"'{t}'" in history


def choose_action(step: Step, menu: Sequence[Candidate] | None = None) -> tuple[Action, Candidate | None]:
    """Pick the next action by text matching (see the module docstring).

    Args:
        step: the step (intent and previous guides are read; the gold is not).
        menu: the candidate menu; defaults to ``step.candidates``.

    Returns:
        The action (with ``element_id`` and ``coordinate`` for targeted actions) and its
        target candidate (None for untargeted actions).
    """
    cands = list(step.candidates if menu is None else menu)
    intent_norm = _norm(step.intent)
    history = _norm(" ".join(step.previous_guides))

    def act(t: ActionType, c: Candidate, **kw: str) -> tuple[Action, Candidate]:
        return Action(type=t, element_id=c.id, coordinate=box_center(c.bbox), **kw), c

    inputs = [c for c in cands if c.role.lower() in _INPUT_ROLES]
    selects = [c for c in cands if c.role.lower() in _SELECT_ROLES]
    others = [c for c in cands if c.role.lower() not in _INPUT_ROLES]

    for value in _values(step.intent):
        v = _norm(value)
        if v in history:
            continue
        exact = [c for c in others if _norm(c.text) == v and not _clicked(c, history)]
        if exact:
            return act(ActionType.CLICK, exact[0])
        if selects and re.search(r"\b(select|choose|pick)\b", intent_norm):
            return act(ActionType.SELECT, selects[0], value=value)
        if inputs:
            # the words just before the value name its field ('with password "x1y2"')
            cue = set(_words(step.intent[: max(step.intent.find(value) - 1, 0)])[-4:]) - _STOP

            def rank(c: Candidate) -> tuple[bool, bool, int]:
                name = _norm(c.text)
                used = bool(name) and name in history
                return (used, not (set(_words(c.text)) & cue), cands.index(c))

            return act(ActionType.TYPE, min(inputs, key=rank), text=value)
        partial = [c for c in others if v in _norm(c.text) and not _clicked(c, history)]
        if partial:
            return act(ActionType.CLICK, partial[0])

    todo = [c for c in others if _mentioned(c.text, intent_norm) and not _clicked(c, history)]
    todo.sort(key=lambda c: (_norm(c.text) in _SUBMIT_WORDS, cands.index(c)))
    if todo:
        return act(ActionType.CLICK, todo[0])
    return Action(type=ActionType.FINISH), None


def heuristic_output(
    step: Step, view: View | str, contract: Contract | str, *, menu: Sequence[Candidate] | None = None
) -> str:
    """The heuristic baseline's raw output for one step, in a contract and view.

    Args:
        step: the step to predict.
        view: ``som`` (element ids) or ``coord`` (box centres).
        contract: ``A``, ``G``, ``J`` or ``JG``.
        menu: the candidate menu to match against; defaults to ``step.candidates`` (pass
            the som row's menu when predicting the coord view).

    Returns:
        One JSON object in the contract, exactly as a model would write it.
    """
    action, target = choose_action(step, menu)
    guide = template_guide(action, target)
    return render_output(action_object(action, view, target.bbox if target is not None else None), guide, contract)


def heuristic_predictions(
    gold: GoldSteps | Sequence[Step],
    view: View | str,
    contract: Contract | str,
    *,
    seed: int = 0,
) -> list[Prediction]:
    """Heuristic predictions for a split.

    Args:
        gold: the gold of the view being predicted (:func:`mag_dataset.dataset.load_gold`);
            in the som view bare steps do too (each carries its menu).
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        seed: recorded in each prediction (the heuristic itself is deterministic).

    Returns:
        One prediction per step, in step order.

    Raises:
        ValueError: bare coord steps (they carry no menu: every prediction would be ``finish``).
    """
    view = View(view)
    if not isinstance(gold, GoldSteps):
        if view is View.COORD:
            raise ValueError("coord steps carry no menu: pass the coord gold with its som menus "
                             "(mag_dataset.dataset.load_gold, GoldSteps.from_views)")
        gold = GoldSteps(view, tuple(gold))
    return [Prediction(s.step_id, heuristic_output(s, view, contract, menu=gold.menu(s.step_id)), seed) for s in gold]


def heuristic_reports(steps_by_view: Mapping[str, Sequence[Step]]) -> dict[tuple[str, str], Report]:
    """Score the heuristic in every contract and view (the scoring stage of ``mag demo``).

    Args:
        steps_by_view: ``{"som": steps, "coord": steps}`` of one split; the coord view's
            gold takes its menus from the som steps.

    Returns:
        ``{(view, contract): Report}`` in view then contract order.
    """
    from mag_dataset.scoring import score_predictions

    reports: dict[tuple[str, str], Report] = {}
    for view in View:
        if not steps_by_view.get(view.value):
            continue
        gold = GoldSteps.from_views(view, steps_by_view)
        for contract in Contract:
            preds = heuristic_predictions(gold, view, contract)
            reports[(view.value, contract.value)] = score_predictions(preds, gold, view, contract)
    return reports


def format_reports_table(reports: Mapping[tuple[str, str], Report]) -> str:
    """One row per (view, contract): the micro mean of every metric ("—" = not applicable),
    the papers' metrics (without usefulness, which needs judge verdicts), then the
    extensions under their short titles."""
    from mag_dataset.scoring import EXTENSION_METRICS, METRIC_BY_NAME, METRIC_NAMES

    names = [m for m in METRIC_NAMES if m != "usefulness"] + list(EXTENSION_METRICS)
    head = {m: (METRIC_BY_NAME[m].title if m in EXTENSION_METRICS else m) for m in names}
    w = {m: max(len(head[m]), 5) + 2 for m in names}
    lines = [f"{'view':<6}{'contract':<9}{'steps':>6}" + "".join(f"{head[m]:>{w[m]}}" for m in names)]
    for (view, contract), r in reports.items():
        cells = "".join(f"{'—' if r.value(m) is None else f'{r.value(m):.3f}':>{w[m]}}" for m in names)
        lines.append(f"{view:<6}{contract:<9}{r.counts['steps']:>6}{cells}")
    return "\n".join(lines)


__all__ = ["choose_action", "format_reports_table", "heuristic_output", "heuristic_predictions", "heuristic_reports"]
