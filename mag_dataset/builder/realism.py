"""How much the realistic part of a corpus reads like WebMRE's: its statistics side by side.

The realistic part is every site family but ``miniwob`` (the four applications of
:mod:`mag_dataset.sites`, or imported WebArena runs). WebMRE's corpus was made by people on
real sites, so its guides are varied, its demonstrations uneven and its recaptured
screenshots often stale; a corpus recorded by scripted experts can look nothing like it and
still pass every schema check. These measures say how close it comes, each with the bar the
corpus is held to (:data:`BARS`) and, where the paper reports one, WebMRE's figure
(WebMRE, arXiv 2609.27353: medians guide 13 words, menu 55 elements, task 6 steps, max 71;
59% of steps stale; 859 coordinate-only steps restored; an audit of 465 steps: 225
remapped, 128 unmappable, 54 confirmed, 58 disputed).

Measures (:func:`realism_statistics`):

``distinct_guides``
    distinct gold guides as a share of steps (a guide written per step, not per template).
``shared_openings``
    the share of guides whose first five words (lower-cased, punctuation aside) open a
    guide of another intent template: one grammar for every task shows here.
``centre_clicks``
    the share of recorded clicks whose point is the exact centre of the recorded target's
    box (within half a pixel): people do not click centres. Read from the raw action as
    recorded (a remap can move the gold point to a box centre).
``fixed_length_templates``
    the share of intent templates (with two tasks or more) whose tasks all have the same
    number of steps: a script, not a person.
``repeated_intents``
    tasks whose intent repeats another task's of the same template.
``task_steps_median`` / ``task_steps_max``, ``guide_words_median``, ``menu_median``,
``restored``, ``stale`` (share of steps), ``audit`` (steps per outcome; every outcome of a
real audit should occur).

Pure functions of the prepared steps; no page, no model.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mag_dataset.actions import ActionType
from mag_dataset.builder.splits import site_family
from mag_dataset.schema import AuditStatus

if TYPE_CHECKING:
    from mag_dataset.builder.corpus import PreparedStep

#: The audit outcomes a real audit produces (``unaudited`` is the absence of one).
AUDIT_OUTCOMES: tuple[str, ...] = tuple(s.value for s in AuditStatus if s is not AuditStatus.UNAUDITED)

#: The bars the realistic part is held to: ``(measure, comparison, value)``; ``>=`` or ``<=``.
BARS: tuple[tuple[str, str, float], ...] = (
    ("distinct_guides", ">=", 0.90),
    ("shared_openings", "<=", 0.30),
    ("centre_clicks", "<=", 0.20),
    ("fixed_length_templates", "<=", 0.50),
    ("task_steps_max", ">=", 40),
    ("stale", ">=", 0.40),
    ("repeated_intents", "<=", 0),
)

#: The measures that are shares of a whole (shown as percentages).
SHARES = frozenset({"distinct_guides", "shared_openings", "centre_clicks", "fixed_length_templates", "stale"})

#: WebMRE's figures for the same measures (the paper's corpus statistics); None: not reported.
WEBMRE: dict[str, Any] = {
    "steps": 5293,
    "tasks": 541,
    "guide_words_median": 13,
    "menu_median": 55,
    "task_steps_median": 6,
    "task_steps_max": 71,
    "stale": 0.59,
    "restored": 859,
    "audit": {"confirmed": 54, "remapped": 225, "unmappable": 128, "disputed": 58},
}

#: Row labels of :func:`format_realism`, in display order.
LABELS: dict[str, str] = {
    "steps": "steps",
    "tasks": "tasks",
    "templates": "intent templates",
    "guide_words_median": "guide words (median)",
    "menu_median": "candidate menu (median)",
    "task_steps_median": "task steps (median)",
    "task_steps_max": "task steps (max)",
    "distinct_guides": "distinct guides (share of steps)",
    "shared_openings": "guides opening like another template's (5 words)",
    "centre_clicks": "clicks on the exact box centre",
    "fixed_length_templates": "templates with one fixed task length",
    "repeated_intents": "tasks repeating an intent of their template",
    "restored": "coordinate-only steps restored",
    "stale": "stale steps (share)",
    "audit": "audit outcomes (confirmed / remapped / unmappable / disputed)",
}

_WORD = re.compile(r"[\w']+")


def opening(guide: str, n: int = 5) -> str:
    """The first ``n`` words of ``guide``, lower-cased, punctuation and quotes aside."""
    return " ".join(w.strip("'").lower() for w in _WORD.findall(guide)[:n])


def _centre(point: Sequence[float], box: Sequence[float]) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return abs(point[0] - cx) <= 0.5 and abs(point[1] - cy) <= 0.5


def realism_statistics(steps: Iterable[PreparedStep]) -> dict[str, Any] | None:
    """The measures of the module docstring over the realistic part of ``steps``.

    Returns:
        The measures, ``bars`` (``{measure: {"bar": "<= 0.3", "met": bool}}``) and ``webmre``;
        None when no step is from a site family other than ``miniwob``.
    """
    steps = [s for s in steps if site_family(s.episode.source, s.episode.site) != "miniwob"]
    if not steps:
        return None
    tasks: dict[str, PreparedStep] = {}
    openings: dict[str, set[str]] = defaultdict(set)  # opening -> templates
    for s in steps:
        tasks.setdefault(s.episode.task_id, s)
        openings[opening(s.raw.guide)].add(s.episode.intent_template_id or s.episode.task_id)
    shared = sum(len(openings[opening(s.raw.guide)]) > 1 for s in steps)
    clicks = [s.raw for s in steps if s.raw.action.type is ActionType.CLICK and s.raw.action.coordinate is not None
              and s.raw.target_bbox is not None]
    lengths: dict[str, list[int]] = defaultdict(list)
    intents: dict[str, Counter[str]] = defaultdict(Counter)
    for t in tasks.values():
        template = t.episode.intent_template_id or t.episode.task_id
        lengths[template].append(len(t.episode.steps))
        intents[template][t.episode.intent] += 1
    multi = [ls for ls in lengths.values() if len(ls) > 1]
    task_lengths = [len(t.episode.steps) for t in tasks.values()]
    audit = Counter(s.audit.status.value for s in steps)
    out: dict[str, Any] = {
        "steps": len(steps),
        "tasks": len(tasks),
        "templates": len(lengths),
        "guide_words_median": float(statistics.median(len(s.raw.guide.split()) for s in steps)),
        "menu_median": float(statistics.median(len(s.raw.candidates) for s in steps)),
        "task_steps_median": float(statistics.median(task_lengths)),
        "task_steps_max": max(task_lengths),
        "distinct_guides": round(len({s.raw.guide for s in steps}) / len(steps), 4),
        "shared_openings": round(shared / len(steps), 4),
        "centre_clicks": round(sum(_centre(c.action.coordinate, c.target_bbox) for c in clicks) / len(clicks), 4)
        if clicks else 0.0,
        "fixed_length_templates": round(sum(len(set(ls)) == 1 for ls in multi) / len(multi), 4) if multi else 0.0,
        "repeated_intents": sum(n - 1 for c in intents.values() for n in c.values()),
        "restored": sum(bool(s.audit.coordinate_restored) for s in steps),
        "stale": round(sum(bool(s.audit.stale) for s in steps) / len(steps), 4),
        "audit": {a: audit[a] for a in AUDIT_OUTCOMES},
    }
    out["bars"] = {m: {"bar": f"{op} {100 * v:g}%" if m in SHARES else f"{op} {v:g}",
                       "met": out[m] >= v if op == ">=" else out[m] <= v} for m, op, v in BARS}
    out["bars"]["audit"] = {"bar": "every outcome", "met": all(out["audit"].values())}
    out["webmre"] = WEBMRE
    return out


def _cell(measure: str, value: Any) -> str:
    if value is None:
        return "—"
    if measure == "audit":
        return " / ".join(str(value.get(a, 0)) for a in ("confirmed", "remapped", "unmappable", "disputed"))
    if measure in SHARES:
        return f"{100 * value:.1f}%"
    return f"{value:g}" if isinstance(value, float) else str(value)


def format_realism(stats: dict[str, Any]) -> str:
    """A Markdown table of :func:`realism_statistics`: measure, this corpus, WebMRE, the bar, met."""
    lines = ["| measure | this corpus (sites) | WebMRE | bar | met |", "|---|---:|---:|---|:-:|"]
    for measure, label in LABELS.items():
        bar = stats["bars"].get(measure)
        lines.append(f"| {label} | {_cell(measure, stats[measure])} | {_cell(measure, stats['webmre'].get(measure))} | "
                     f"{bar['bar'] if bar else ''} | {('yes' if bar['met'] else '**no**') if bar else ''} |")
    return "\n".join(lines)
