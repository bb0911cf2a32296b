"""The WebMRE / MAG leaderboard Space: upload predictions, score against hidden gold, rank.

Glue only: every rule lives in the library. :class:`mag_dataset.board.Board` validates
the upload, scores it with :func:`mag_dataset.scoring.score_predictions` (the same call
``mag score`` makes, WebMRE's deterministic protocol, arXiv 2609.27353) and stores it;
this file builds the page and shows what the board returns. Names and links are shown
as plain text (no component here renders HTML from a submission).

Run locally::

    python leaderboard/app.py            # or: mag leaderboard serve
    python leaderboard/app.py --port 7861 --host 0.0.0.0

Configuration is by ``MAG_BOARD_*`` environment variables (see ``mag_dataset/board.py``
and ``leaderboard/README.md``). Submitting from a script::

    from gradio_client import Client, handle_file
    message, result = Client("http://127.0.0.1:7860").predict(
        model_name="my-model", view="som", contract="J",
        predictions=handle_file("preds.jsonl"), api_name="/submit")
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

try:
    import mag_dataset  # noqa: F401
except ImportError:  # a Space repo carries the package folder next to app.py
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gradio as gr

from mag_dataset.actions import Contract, View
from mag_dataset.board import (
    EXTENSIONS,
    METRIC_COLUMNS,
    MIN_GROUP_STEPS,
    PROVENANCE_TAGS,
    RANK_ALPHA,
    Board,
    BoardConfig,
    Ranked,
    Submission,
    SubmissionRejected,
    metric_value,
)
from mag_dataset.fileio import atomic_write

ALL = "all"
#: Most events waiting in the queue; a submission beyond it is refused with "queue is full".
QUEUE_SIZE = 256
#: Decimals shown in the tables: a proportion over a few hundred steps has a standard error of
#: a few points, so a third decimal would be noise (the API and the report keep full precision).
DECIMALS = 2

#: Breakdowns shown on Details: report breakdown key -> title.
BREAKDOWN_TITLES: dict[str, str] = {
    "site": "Per site", "action_type": "Per gold action type", "stale": "Stale vs fresh observation",
    "unseen_template": "Unseen vs seen intent template",
}
#: Metrics of a breakdown, in column order (a metric that applies to no group is left out).
BREAKDOWN_METRICS: tuple[str, ...] = ("saa", "target_acc", "action_type_acc", "text_f1", "bleu1", "rouge_l",
                                      "guide_action_consistency", "joint_step_acc")
EXTENSION_TITLES = {"guide_action_consistency": "consistency", "joint_step_acc": "joint acc"}

#: The ranked tables: sorting by a header click, row click opens Details (see TABLE_JS).
TABLE_JS = r"""
element.addEventListener('click', (ev) => {
  const th = ev.target.closest('th[data-col]');
  if (th) {
    const table = th.closest('table'), tb = table.tBodies[0], i = +th.dataset.col;
    const desc = th.getAttribute('aria-sort') !== 'descending';
    const val = (tr) => { const c = tr.cells[i]; return c.dataset.v !== undefined ? c.dataset.v : c.textContent; };
    const rows = [...tb.rows];
    rows.sort((a, b) => {
      const x = val(a), y = val(b);
      if (x === '' && y !== '') return 1;
      if (y === '' && x !== '') return -1;
      const nx = parseFloat(x), ny = parseFloat(y);
      const d = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
      return desc ? -d : d;
    });
    rows.forEach((r) => tb.appendChild(r));
    table.querySelectorAll('th[data-col]').forEach((h) => h.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
    return;
  }
  const tr = ev.target.closest('tr[data-id]');
  if (tr) trigger('select', {index: [tr.rowIndex, 0], value: tr.dataset.id, selected: true});
});
element.addEventListener('keydown', (ev) => {
  if (ev.key !== 'Enter' && ev.key !== ' ') return;
  const t = ev.target.closest('th[data-col], tr[data-id]');
  if (t) { ev.preventDefault(); t.click(); }
});
"""

CSS = r"""
.mag-table-wrap { overflow-x: auto; max-width: 100%; border: 1px solid var(--border-color-primary);
  border-radius: 6px; background: linear-gradient(to right, var(--background-fill-primary) 30%, transparent),
  linear-gradient(to left, var(--background-fill-primary) 30%, transparent) right,
  radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.25), transparent) right;
  background-repeat: no-repeat; background-size: 0 100%, 40px 100%, 14px 100%; background-attachment: local, local, scroll; }
table.mag-rank { border-collapse: separate; border-spacing: 0; width: max-content; min-width: 100%; font-size: 14px; }
table.mag-rank th, table.mag-rank td { padding: 6px 10px; border-bottom: 1px solid var(--border-color-primary);
  white-space: nowrap; text-align: right; background: var(--background-fill-primary); }
table.mag-rank th { cursor: pointer; user-select: none; position: sticky; top: 0; z-index: 2;
  background: var(--background-fill-secondary); }
table.mag-rank th::after { content: ' \2195'; opacity: .35; }
table.mag-rank th[aria-sort=descending]::after { content: ' \25BC'; opacity: 1; }
table.mag-rank th[aria-sort=ascending]::after { content: ' \25B2'; opacity: 1; }
table.mag-rank td.txt, table.mag-rank th.txt { text-align: left; }
table.mag-rank tbody tr { cursor: pointer; }
table.mag-rank tbody tr:hover td { background: var(--background-fill-secondary); }
/* the three sticky columns have fixed widths, so each starts where the previous ends */
table.mag-rank .c-rank, table.mag-rank .c-model { box-sizing: border-box; }
table.mag-rank .c-rank { position: sticky; left: 0; z-index: 1; width: 4.2em; min-width: 4.2em; max-width: 4.2em;
  padding-left: 4px; padding-right: 6px; }
table.mag-rank .c-model { position: sticky; left: 4.2em; z-index: 1; width: 10em; min-width: 10em; max-width: 10em;
  white-space: normal; overflow-wrap: anywhere; }
table.mag-rank .c-head { position: sticky; left: 14.2em; z-index: 1; font-weight: 600;
  border-right: 2px solid var(--border-color-primary); }
table.mag-rank th.c-rank, table.mag-rank th.c-model, table.mag-rank th.c-head { z-index: 3; }
.mag-scroll-cue { display: none; font-size: 13px; opacity: .8; margin: 2px 0 4px; }
.mag-contract small { font-weight: 400; opacity: .85; }
@media (max-width: 900px) { .mag-scroll-cue { display: block; }
  table.mag-rank .c-model { width: 7em; min-width: 7em; max-width: 7em; }
  table.mag-rank .c-head { left: 11.2em; } .mag-contract small { display: block; } }
.mag-contract { margin: 14px 0 4px; font-weight: 600; }
.mag-note { font-size: 13px; opacity: .85; }
.mag-gold { padding: 8px 12px; border-radius: 6px; border: 1px solid var(--border-color-primary); }
.mag-gold.public { background: #fff4e5; color: #5f370e; border-color: #f0b36b; }
.mag-gold.hidden { background: #e8f4fd; color: #0b3c61; border-color: #8cc4ef; }
.mag-bars-wrap { overflow-x: auto; max-width: 100%; }
table.mag-bars { border-collapse: collapse; font-size: 14px; margin-bottom: 12px; }
table.mag-bars th[scope=row] { max-width: 16em; white-space: normal; }
small.mag-pooled { font-weight: 400; font-size: 12px; opacity: .8; }
table.mag-bars th, table.mag-bars td { padding: 4px 8px; border-bottom: 1px solid var(--border-color-primary); text-align: left; }
.mag-bar { display: flex; align-items: center; gap: 6px; min-width: 9em; }
.mag-bar span.b { display: inline-block; height: 12px; background: #4f6bed; border-radius: 2px; }
.mag-bar span.v { font-variant-numeric: tabular-nums; min-width: 2.6em; }
.mag-upload-note { font-size: 14px; padding: 6px 10px; border-radius: 6px; }
.mag-upload-note.too-big { background: #fdecea; color: #8a1c14; border: 2px solid #d93025; font-weight: 600; }
#compare-out textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
  white-space: pre; overflow-x: auto; }
.status-accepted textarea { background: #e6f4ea !important; color: #0d5223 !important; border: 2px solid #1e8e3e !important; font-weight: 600; }
.status-rejected textarea { background: #fdecea !important; color: #8a1c14 !important; border: 2px solid #d93025 !important; font-weight: 600; }
"""


# --------------------------------------------------------------------------- pure helpers


def _esc(text: Any) -> str:
    import html

    return html.escape("" if text is None else str(text), quote=True)


def fmt(v: float | None, decimals: int = DECIMALS) -> str:
    """A table cell: the value to ``decimals`` places, an en dash where not applicable."""
    return "–" if v is None else f"{v:.{decimals}f}"


def _contract_filter(contract: Any) -> str | None:
    text = "" if contract is None else str(contract).strip()
    if text in ("", ALL):
        return None
    if text not in {c.value for c in Contract}:
        raise SubmissionRejected(f"contract filter must be one of all, {', '.join(c.value for c in Contract)}, "
                                 f"got {text[:40]!r}")
    return text


def ranked_rows(board: Board, view: str, contract: Any = ALL) -> list[dict[str, Any]]:
    """The leaderboard endpoint's rows: every ranked submission of a view with its rank,
    ranking metric, value, 95% interval bounds and every metric column (full precision)."""
    rows = []
    for r in board.ranking(view, _contract_filter(contract)):
        s = r.submission
        rows.append({
            "rank": r.rank, "id": s.id, "model": s.model_name, "organisation": s.organisation, "view": s.view,
            "contract": s.contract, "ranking_metric": r.metric, "value": r.value,
            "ci95_low": None if r.ci95 is None else r.ci95[0], "ci95_high": None if r.ci95 is None else r.ci95[1],
            "beaten_by": list(r.beaten_by), "seeds": s.seeds, **{k: s.summary.get(k) for k in METRIC_COLUMNS},
            "provenance": s.provenance_tag, "date": s.date,
        })
    return rows


def _rank_table(rows: list[Ranked], contract: str) -> str:
    head = METRIC_COLUMNS[rows[0].metric]
    others = [k for k in METRIC_COLUMNS if k != rows[0].metric and any(r.submission.summary.get(k) is not None for r in rows)]
    cols = ([("rank", "c-rank"), ("model", "c-model txt"), (head, "c-head"), ("95% interval", "")]
            + [(METRIC_COLUMNS[k], "") for k in others]
            + [("organisation", "txt"), ("seeds", ""), ("provenance", "txt"), ("date", "txt"), ("id", "")])
    th = "".join(f'<th scope="col" tabindex="0" data-col="{i}" class="{c}" title="sort by {_esc(t)}">{_esc(t)}</th>'
                 for i, (t, c) in enumerate(cols))
    body = []
    for r in rows:
        s = r.submission
        ci = "–" if r.ci95 is None else f"[{fmt(r.ci95[0])}, {fmt(r.ci95[1])}]"
        beaten = (f"significantly below #{', #'.join(map(str, r.beaten_by))}" if r.beaten_by
                  else "no submission of this table is significantly better")
        cells = [
            f'<td class="c-rank" data-v="{r.rank}" title="{_esc(beaten)}">{r.rank}</td>',
            f'<td class="c-model txt">{_esc(s.model_name)}</td>',
            f'<td class="c-head" data-v="{"" if r.value is None else r.value}">{fmt(r.value)}</td>',
            f'<td data-v="{"" if r.ci95 is None else r.ci95[0]}">{ci}</td>',
            *[f'<td data-v="{"" if s.summary.get(k) is None else s.summary[k]}">{fmt(s.summary.get(k))}</td>' for k in others],
            f'<td class="txt">{_esc(s.organisation)}</td>', f'<td data-v="{s.seeds}">{s.seeds}</td>',
            f'<td class="txt">{_esc(s.provenance_tag)}</td>', f'<td class="txt">{_esc(s.date)}</td>',
            f'<td data-v="{s.id}">{s.id}</td>',
        ]
        body.append(f'<tr data-id="{s.id}" tabindex="0" title="open the details of #{s.id}">{"".join(cells)}</tr>')
    note = (f"micro mean over steps; 95% interval: task-level bootstrap; a shared rank = no significant paired "
            f"difference (p ≥ {RANK_ALPHA:g}, see About)")
    return (f'<div class="mag-contract" data-contract="{contract}">Contract {contract} — ranked by {_esc(head)} '
            f'<small>({_esc(note)})</small></div>'
            f'<div class="mag-scroll-cue">↔ the table scrolls sideways: rank, model and {_esc(head)} stay in view</div>'
            f'<div class="mag-table-wrap"><table class="mag-rank" data-contract="{contract}">'
            f'<thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def table_html(board: Board, view: str, contract: Any = ALL) -> str:
    """One view's ranked tables, one per contract, as escaped HTML (names are text)."""
    try:
        ranking = board.ranking(view, _contract_filter(contract))
    except SubmissionRejected as e:
        return f'<p class="mag-note">{_esc(e)}</p>'
    parts = []
    for c in Contract:
        rows = [r for r in ranking if r.submission.contract == c.value]
        if rows:
            parts.append(_rank_table(rows, c.value))
    if not parts:
        return '<p class="mag-note">No submission yet for this view and contract.</p>'
    return ('<p class="mag-note">Click a column header to sort (again to reverse); click a row to open its '
            'details.</p>' + "".join(parts))


def gold_banner(board: Board) -> str:
    """Which gold the board scores against, on the main page."""
    info = board.gold.describe()
    views = "; ".join(f"{v}: {d['steps']:,} steps, {d['tasks']:,} tasks, fingerprint <code>{_esc(d['fingerprint'][:19])}…</code>"
                      for v, d in info["views"].items())
    if info["kind"] == "public sample":
        what = ("<b>Gold: the public bundled sample</b> (not a hidden test split: anyone can score against it "
                "locally, so these rankings show that a file is valid, not how a model generalises)")
    else:
        what = f"<b>Gold: hidden {_esc(info['split'])} split</b> ({_esc(info['source'])})"
    kind = "public" if info["kind"] == "public sample" else "hidden"
    return f'<div class="mag-gold {kind}" id="gold-source">{what}. Split <code>{_esc(info["split"])}</code>; {views}.</div>'


def submission_choices(board: Board) -> list[tuple[str, str]]:
    return [
        (f"#{s.id} {s.model_name} ({s.view}, {s.contract})", str(s.id))
        for s in reversed(board.submissions())
    ]


def _breakdown(report: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """A report breakdown ``{group: {metric: value, ...}}``, tolerant of nesting."""
    block = report.get("breakdowns") or {}
    data = block.get(key) or block.get(key.replace("_", "")) or {}
    return data if isinstance(data, dict) else {}


def breakdown_html(report: dict[str, Any], key: str) -> str:
    """One breakdown of a (public) report as a table of horizontal bars: a column per
    metric that applies to some group; a withheld cell (too few steps) is a dash."""
    groups = _breakdown(report, key)
    title = BREAKDOWN_TITLES.get(key, key)
    if not groups:
        return (f'<h4>{_esc(title)}</h4><p class="mag-note">Withheld: it cannot be shown with at least '
                f'{MIN_GROUP_STEPS} gold steps in each of two groups.</p>')
    metrics = [m for m in BREAKDOWN_METRICS if any(metric_value((g or {}).get(m)) is not None for g in groups.values())]
    names = sorted(groups, key=lambda g: (g.startswith("other"), g))
    head = "".join(f"<th>{_esc(METRIC_COLUMNS.get(m) or EXTENSION_TITLES.get(m, m))}</th>" for m in metrics)
    rows = []
    for g in names:
        block = groups[g]
        label = _esc(g) if "pooled" not in block else \
            f"{_esc(g)}<br><small class=\"mag-pooled\">{_esc(', '.join(block['pooled']))}</small>"
        cells = []
        for m in metrics:
            v = metric_value(block.get(m))
            if v is None:
                cells.append('<td title="not shown: too few steps, or not applicable">–</td>')
            else:
                cells.append(f'<td><div class="mag-bar" role="img" aria-label="{_esc(m)} {v:.2f}"><span class="v">'
                             f'{v:.2f}</span><span class="b" style="width:{max(1, round(v * 80))}px"></span></div></td>')
        rows.append(f"<tr><th scope=\"row\">{label}</th><td>{int(block.get('steps') or 0)}</td>{''.join(cells)}</tr>")
    return (f'<h4>{_esc(title)}</h4><div class="mag-bars-wrap"><table class="mag-bars"><thead><tr><th>group</th>'
            f'<th>steps</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def taxonomy_html(report: dict[str, Any]) -> str:
    """The error taxonomy of a report: each class's steps and share, and the near misses."""
    counts = report.get("counts") if isinstance(report, dict) else None
    errors = (counts or {}).get("errors")
    if not isinstance(errors, dict) or not errors:
        return '<h4>Error taxonomy</h4><p class="mag-note">No taxonomy in this report.</p>'
    total = sum(v for v in errors.values() if isinstance(v, int)) or 1
    rows = "".join(
        f'<tr><th scope="row">{_esc(k)}</th><td>{v:,}</td><td><div class="mag-bar"><span class="v">{v / total:.0%}</span>'
        f'<span class="b" style="width:{max(1, round(80 * v / total))}px"></span></div></td></tr>'
        for k, v in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])) if isinstance(v, int))
    reasons = (counts or {}).get("failure_reasons") or {}
    extra = ""
    if isinstance(reasons, dict) and reasons:
        extra += '<p class="mag-note">Format failures by reason: ' + ", ".join(
            f"{_esc(k)} {v:,}" for k, v in sorted(reasons.items()) if isinstance(v, int)) + "</p>"
    near = (counts or {}).get("near_miss") or {}
    if isinstance(near, dict) and near.get("misses"):
        extra += (f'<p class="mag-note">Points outside the gold box: {near["misses"]:,}, of which {near.get("near", 0):,} '
                  f'within {near.get("within_px", 10):g} px.</p>')
    return (f'<h4>Error taxonomy</h4><table class="mag-bars"><thead><tr><th>class</th><th>steps</th><th>share</th></tr>'
            f'</thead><tbody>{rows}</tbody></table>{extra}')


def report_extras(report: dict[str, Any]) -> str:
    """The details panel's lines on the guide-action consistency extension and the top error
    classes of a report (plain text; an older report without them gives "")."""
    lines = []
    ext = report.get("extensions") if isinstance(report, dict) else None
    if isinstance(ext, dict):
        cons = (ext.get("guide_action_consistency") or {}).get("micro")
        joint = (ext.get("joint_step_acc") or {}).get("micro")
        if isinstance(cons, (int, float)):
            joint_text = f"{joint:.3f}" if isinstance(joint, (int, float)) else "n/a"
            lines.append(f"extension (not a metric of the papers): guide-action consistency {cons:.3f}, "
                         f"joint step accuracy {joint_text}")
    errors = (report.get("counts") or {}).get("errors") if isinstance(report, dict) else None
    if isinstance(errors, dict) and errors:
        total = sum(v for v in errors.values() if isinstance(v, int)) or 1
        top = [(k, v) for k, v in errors.items() if k != "correct" and isinstance(v, int)][:4]
        if top:
            lines.append("top errors: " + ", ".join(f"{k} {v / total:.0%}" for k, v in top))
    return "\n".join(lines)


def _parse_id(value: Any) -> int | None:
    text = "" if value is None else str(value).strip().lstrip("#")
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None


# --------------------------------------------------------------------------- the app

ABOUT = """
## About this leaderboard

This board ranks models on the **WebMRE / MAG** offline web guide-agent benchmark
(MAG, arXiv 2607.10079; WebMRE, arXiv 2609.27353). Each step gives a screenshot, the task
intent, the guides of the previous steps and (in the Set-of-Mark view) a candidate menu;
the model writes an **action** grounded by element id (`som` view) or pixel coordinate
(`coord` view) and/or a one-sentence **guide**, in one of four output contracts.

### Protocol
* You upload predictions for the hidden test split; the server scores them with the
  *same deterministic scorer* as `mag score` (`mag_dataset.scoring`), stores the file
  (content-addressed by SHA-256), the full report, the scorer version and the gold
  fingerprint, and ranks the submission. Re-scoring a stored file gives identical bytes.
* Gold labels and gold guides are never returned — not by the page, not by the API, not
  in an error message. Breakdowns are aggregates of at least {min_group} gold steps: a
  per-site, per-action-type, stale or unseen-template group with fewer steps is pooled into
  `other` (with the next smallest group while `other` is still smaller); a breakdown that
  cannot keep two such groups is withheld; a metric scored on fewer than {min_group} steps
  of a group is left out. No shown figure rests on fewer than {min_group} gold steps, and no
  withheld group can be recovered by subtracting the shown ones from the total. The
  downloadable report follows the same rule, and a comparison on *Details* shows a
  breakdown only when each of its groups holds at least {min_group} paired steps. Which gold is in use (public sample or hidden
  split, its size and fingerprint) is shown on the main page.
* Limits: a daily cap of accepted submissions per submitter (your Hugging Face login on
  the Space, the typed *submitter* name locally); the same predictions (the same step
  ids, seeds and outputs once parsed, whatever the file format, line order or blank lines)
  are not scored twice for a view and contract; an upload cap, which also caps the decoded text of a
  `.jsonl.gz` or `.parquet` file; at most {max_seeds} seeds per file; {score_seconds} s of
  decoding and scoring per submission; a rejected file stores nothing. Submissions are
  scored {workers} at a time, each in its own memory-limited process; the others wait in a
  queue that shows their position. Names and links may not hold bidirectional-control
  characters or lone surrogates.
* **Integrity.** A file whose outputs pass the format gate of another view or contract more
  often than the declared one's is rejected, naming the better one (a contract-J file sent
  as A would rank with all zeros). A file with more than {max_fail} of its outputs failing
  the format gate is rejected. *Validate only* on *Submit* checks a file (step counts,
  missing ids per seed, the format gate, these rules) without scoring or storing it.
* Ranking is within a view and contract: by **SAA** for A, J and JG (ties broken by target
  acc, then type acc, then BLEU-1), by **BLEU-1** for G (then ROUGE-L, then BLEU-4); a
  blank ranks last; the table names its ranking metric and shows its task-level bootstrap
  95% interval. **Shared ranks**: a submission's rank is one plus the number of
  submissions of its table that beat it *significantly* — a higher ranking-metric micro
  mean and a two-sided p < {alpha} in the paired comparison of `mag compare` for that
  metric (exact McNemar on the paired steps for SAA; the task-level sign-flip test, 1,000
  draws, seed 0, for BLEU-1; no multiplicity correction). Submissions whose difference is
  not significant share a rank; hover a rank to see which submissions beat it. Scores are
  shown to {decimals} decimals (a proportion over a few hundred steps has a standard error
  of a few points); the API and the report keep full precision.

### Output contracts
| contract | the model writes exactly |
|---|---|
| A | `{"action": {...}}` |
| G | `{"guide": "..."}` |
| J | `{"action": {...}, "guide": "..."}` (action first) |
| JG | `{"guide": "...", "action": {...}}` (guide first) |

An action is `{"type": ..., <arguments>}`; targeted actions ({targeted}) name
`"element": "12"` in `som` or `"coordinate": [x, y]` (screenshot pixels) in `coord`.
Surrounding whitespace and one enclosing ```` ``` ```` / ```` ```json ```` fence are tolerated;
anything else fails the format gate.

### Metrics (exact rules)
The rules of `mag_dataset.scoring` (its module docstring is the reference), per step:
* **OFCR** — every step: 1 when the output passes the format gate above. A failed output
  stays in every denominator and scores 0 on every applicable metric.
* **type acc** — contracts with an action (A, J, JG): predicted action type equals the gold type.
* **target acc** — contracts with an action, when the gold action has a target ({targeted}),
  the step's label is not *disputed* or *unmappable*, and the gold target is known in the view:
  `som` — predicted element id equals the gold id (an integer is compared as its string);
  `coord` — the point lies inside the gold target box, edges included.
* **text F1** — contracts with an action, gold type `type`: SQuAD-style token F1 (NFKC,
  lower-cased, punctuation split off as tokens, multiset overlap) between predicted and gold
  text; 0 if the predicted type differs.
* **SAA** (step action accuracy) — contracts with an action, steps not *disputed* or
  *unmappable* (and, for a targeted gold, with its target known in the view, as for target
  acc): the type matches, the target matches where the gold has one, and every scored
  argument equals the gold's after normalisation (NFKC, lower case, runs of whitespace
  collapsed; a URL also ignores a trailing `/`). Scored arguments: {scored_args}; a `finish`
  answer is not scored.
* **BLEU-1 / BLEU-4** — contracts with a guide (G, J, JG): sacrebleu sentence BLEU with the
  `sentence_bleu` defaults (exp smoothing, effective order), `max_ngram_order` 1 and 4,
  `lowercase=True`, divided by 100 and rounded to 10 decimals.
* **ROUGE-L** — contracts with a guide: rouge-score `rougeL` F-measure, no stemmer.
* **usefulness** — contracts with a guide, only when the board has cached judge verdicts:
  1 when the majority of three judges rated the guide useful; a guide without a verdict is
  unjudged and left out of the mean; never computed by calling a model.

A cell of the table is the **micro mean over steps** (with several seeds: the mean over
seeds). A blank cell means *not applicable* (e.g. guide metrics under contract A); 0 means
wrong. The full report (micro means, macro means over tasks, denominators, the standard
deviation over seeds, a task-level bootstrap 95% interval of the micro mean, per-site /
per-action-type / stale / unseen-template breakdowns under the granularity rule above,
the error taxonomy, provenance) is downloadable on *Details*.

### Predictions file
JSON Lines, one object per test step (and seed), UTF-8:

```json
{"step_id": "click-button.seed-3:0", "output": "{\\"action\\": {\\"type\\": \\"click\\", \\"element\\": \\"12\\"}, \\"guide\\": \\"Click the Submit button.\\"}", "seed": 0}
```

`output` is the raw model text, exactly as generated; `seed` is optional (several seeds →
mean and standard deviation). Every test step id must appear once per seed; unknown or
duplicate ids are rejected with the line named. Accepted: `.jsonl`, `.jsonl.gz`, and
`.parquet` (columns `step_id`, `output`, optional `seed`).

### Worked example
{scoring_example}

To produce and check a file for the whole split:

```bash
pip install -e ".[leaderboard]"                 # from a clone of the repository
python -m baselines.heuristic --dataset bundled --view som --contract J --output preds.jsonl  # no-model baseline
mag score --predictions preds.jsonl --dataset bundled --view som --contract J  # the same scores, locally
```
then upload `preds.jsonl` on *Submit*, or from a script:

```python
from gradio_client import Client, handle_file
client = Client("http://127.0.0.1:7860")          # on the Space: Client("<space id>", oauth_token="hf_...")
message, result = client.predict(
    model_name="heuristic", view="som", contract="J",
    predictions=handle_file("preds.jsonl"),
    organisation="me", link="https://example.org", provenance_tag="self-reported",
    api_name="/submit")
print(message)            # "Accepted: submission #1 ..." or "Rejected: <why>"
print(result["ok"], result.get("saa"))
```

The `submit` endpoint takes `model_name`, `view` (`som`/`coord`), `contract`
(`A`/`G`/`J`/`JG`) and `predictions` (the file); `organisation`, `link` (http/https only),
`provenance_tag` (self-reported / externally evaluated / reproduced) and `submitter` are
optional. On the Space the submitter is your Hugging Face login: signed in on the page, or,
from a script, the user of the token passed as `Client(..., oauth_token=...)`. It returns a
message and a JSON result with `ok` and, when accepted, the submission's id, rank and scores.
"""


def about_text(config: BoardConfig | None = None) -> str:
    """The About tab: :data:`ABOUT` with the action-space lists and the worked example filled in.

    The targeted types and the arguments SAA compares come from ``ACTION_SPACE`` (the one
    source of truth of the action space), so the page cannot drift from the scorer.
    """
    from mag_dataset.actions import ACTION_SPACE

    targeted = ", ".join(f"`{t.value}`" for t, spec in ACTION_SPACE.items() if spec.targeted)
    by_arg: dict[str, list[str]] = {}
    for t, spec in ACTION_SPACE.items():
        for arg in spec.args:
            if arg.scored:
                by_arg.setdefault(arg.name, []).append(t.value)
    scored = ", ".join(f"`{a}` ({', '.join(ts)})" for a, ts in by_arg.items())
    cfg = config or BoardConfig()
    return (ABOUT.replace("{max_seeds}", str(cfg.max_seeds)).replace("{score_seconds}", f"{cfg.score_seconds:g}")
            .replace("{workers}", str(cfg.workers)).replace("{targeted}", targeted).replace("{scored_args}", scored)
            .replace("{scoring_example}", scoring_example()).replace("{min_group}", str(MIN_GROUP_STEPS))
            .replace("{max_fail}", f"{cfg.max_format_failure_rate:.0%}").replace("{alpha}", f"{RANK_ALPHA:g}")
            .replace("{decimals}", str(DECIMALS)))


def scoring_example() -> str:
    """One step scored by the library, shown in About (the figures are computed, not typed)."""
    from mag_dataset.schema import Action, Candidate, Step
    from mag_dataset.scoring import score_step

    menu = (Candidate("3", "textbox", "Username", (10.0, 40.0, 150.0, 60.0)),
            Candidate("7", "button", "Log in", (20.0, 130.0, 80.0, 150.0)))
    step = Step(
        step_id="login-user.seed-1:0", task_id="login-user.seed-1", site="login-user",
        intent='Enter the username "Cheree" and log in.', intent_template_id="login-user", step_index=0,
        num_steps=2, image_width=160, image_height=210, previous_guides=(),
        guide="Type 'Cheree' into the Username field.", guide_source="template",
        action=Action("type", element_id="3", coordinate=(80.0, 50.0), text="Cheree"),
        target_bbox=menu[0].bbox, split="test", candidates=menu,
    )
    output = '{"action": {"type": "type", "element": 3, "text": "cheree"}, "guide": "Type Cheree in the username box."}'
    sc = score_step(output, step, "som", "J")

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.4f}".rstrip("0").rstrip(".") if v not in (0.0, 1.0) else str(int(v))

    cells = " | ".join(fmt(getattr(sc, k)) for k in METRIC_COLUMNS)
    return (
        "One som step, contract J. Gold: type `Cheree` into element `3`, guide "
        "*Type 'Cheree' into the Username field.* The model wrote:\n\n"
        f"```json\n{output}\n```\n\n"
        f"| {' | '.join(METRIC_COLUMNS.values())} |\n|{'---|' * len(METRIC_COLUMNS)}\n| {cells} |\n\n"
        "The element `3` (an integer) is compared as the string `\"3\"`; the typed text matches after "
        "normalisation (case, spacing), so SAA is 1; the guide shares some words with the gold guide, so "
        "BLEU and ROUGE-L are partial; usefulness is n/a without judge verdicts."
    )


def _login_from_token(token: Any) -> str | None:
    """The Hugging Face user name a token belongs to (``whoami``), or ``None`` if it is not valid."""
    value = getattr(token, "token", None)
    if not value:
        return None
    try:
        from huggingface_hub import whoami

        name = whoami(token=value).get("name")
    except Exception:  # an invalid or expired token, or the Hub unreachable: not signed in
        return None
    return name if isinstance(name, str) and name else None


def _on_space() -> bool:
    return bool(os.environ.get("SPACE_ID")) and bool(os.environ.get("OAUTH_CLIENT_ID"))


def _upload_note_js(cap: int) -> str:
    """JS for the note under the file field: a file over the cap is refused by Gradio with a
    toast that fades; this note keeps saying why (the cap in MiB) until another file is chosen."""
    mib = cap / (1024 * 1024)
    return (
        "const cap = %d, capText = '%s MiB';\n"
        "const base = element.innerHTML;\n"
        "const check = (files) => {\n"
        "  const big = [...(files || [])].find((f) => f.size > cap);\n"
        "  const box = element.querySelector('.mag-upload-note') || element;\n"
        "  if (big) {\n"
        "    box.classList.add('too-big');\n"
        "    box.textContent = `Not uploaded: ${big.name} is ${(big.size / 1048576).toFixed(1)} MiB, over the ` +\n"
        "      `upload cap of ${capText}. Compress it as .jsonl.gz or .parquet (the decoded text is capped at ` +\n"
        "      `${capText} too), or split its seeds into several files.`;\n"
        "  } else if (files && files.length) { element.innerHTML = base; }\n"
        "};\n"
        "document.addEventListener('change', (ev) => {\n"
        "  if (ev.target && ev.target.matches && ev.target.matches('#predictions input[type=file]')) check(ev.target.files);\n"
        "}, true);\n"
        "document.addEventListener('drop', (ev) => {\n"
        "  if (ev.target && ev.target.closest && ev.target.closest('#predictions') && ev.dataTransfer) check(ev.dataTransfer.files);\n"
        "}, true);\n"
    ) % (cap, f"{mib:g}")


def style_status(message: Any) -> Any:
    """The Result box's look for its message: green for accepted, red for rejected (colour,
    border and label). A UI-only step after submit / validate: the API returns plain text."""
    message = "" if message is None else str(message)
    ok = message.startswith("Accepted") or message.startswith("Valid")
    rejected = message.startswith("Rejected")
    cls = ["status-accepted"] if ok else ["status-rejected"] if rejected else []
    label = "Result — accepted" if ok else "Result — rejected" if rejected else "Result"
    return gr.Textbox(value=message, label=label, elem_classes=cls)


def build_app(board: Board) -> gr.Blocks:
    """The Blocks app over ``board``. Every event has an explicit public ``api_name``."""
    report_dir = Path(tempfile.mkdtemp(prefix="mag-board-reports-"))
    cap = board.config.max_bytes
    cap_mib = f"{cap / (1024 * 1024):g} MiB"

    def _file_path(predictions: Any) -> Path:
        if not predictions:
            raise SubmissionRejected(
                f"no predictions file was uploaded (a file over the {cap_mib} upload cap is refused by the page "
                "before it is sent)")
        if not isinstance(predictions, (str, os.PathLike)) and not hasattr(predictions, "name"):
            raise SubmissionRejected("predictions must be a file (gradio_client: handle_file(path))")
        path = Path(predictions if isinstance(predictions, (str, os.PathLike)) else predictions.name)
        try:
            size = path.stat().st_size
        except OSError:
            raise SubmissionRejected("the predictions file could not be read; upload it again") from None
        if size > cap:
            raise SubmissionRejected(f"the file is {size:,} bytes ({size / (1024 * 1024):.1f} MiB), over the upload "
                                     f"cap of {cap:,} bytes ({cap_mib})")
        return path

    def do_submit(model_name, view, contract, predictions, organisation, link, provenance_tag, submitter, login_name=None):
        try:
            path = _file_path(predictions)
            sub = board.submit(
                data=path.read_bytes(),
                filename=path.name,
                model_name=model_name,
                view=view,
                contract=contract,
                organisation=organisation or "",
                link=link or "",
                provenance_tag=provenance_tag or "self-reported",
                submitter=login_name or submitter or None,
            )
        except SubmissionRejected as e:
            return f"Rejected: {e}", {"ok": False, "error": str(e)}
        row = next(r for r in board.ranking(sub.view, sub.contract) if r.submission.id == sub.id)
        n = len(board.submissions(sub.view, sub.contract))
        primary = METRIC_COLUMNS[row.metric]
        ci = "" if row.ci95 is None else f" (95% interval {row.ci95[0]:.3f}–{row.ci95[1]:.3f})"
        msg = (
            f"Accepted: submission #{sub.id} ({sub.view}, contract {sub.contract}) — "
            f"{primary} {row.value:.4f}{ci}, rank {row.rank} of {n}." if row.value is not None else
            f"Accepted: submission #{sub.id} ({sub.view}, contract {sub.contract}), rank {row.rank} of {n}."
        )
        return msg, {"ok": True, "rank": row.rank, **sub.public_dict()}

    if _on_space():
        def submit(model_name, view, contract, predictions, organisation, link, provenance_tag, submitter,
                   profile: gr.OAuthProfile | None, oauth_token: gr.OAuthToken | None = None):
            # In the browser the login comes from the session; a script passes its Hugging Face
            # token with gradio_client's Client(..., oauth_token=...), resolved to its user here.
            login = profile.username if profile is not None else _login_from_token(oauth_token)
            if not login:
                return ("Rejected: sign in with Hugging Face to submit (from a script: "
                        "Client(..., oauth_token=<your HF token>))", {"ok": False, "error": "not signed in"})
            return do_submit(model_name, view, contract, predictions, organisation, link, provenance_tag,
                             submitter, login_name=login)
    else:
        def submit(model_name, view, contract, predictions, organisation, link, provenance_tag, submitter):
            return do_submit(model_name, view, contract, predictions, organisation, link, provenance_tag, submitter)

    def validate(view, contract, predictions):
        try:
            path = _file_path(predictions)
            out = board.validate(data=path.read_bytes(), filename=path.name, view=view, contract=contract)
        except SubmissionRejected as e:
            return f"Rejected: {e}", {"ok": False, "error": str(e)}
        missing = sum(m["count"] for m in out["missing"].values())
        lines = [f"{out['predictions']:,} predictions for {len(out['seeds'])} seed(s) {out['seeds']}; the split has "
                 f"{out['steps_expected']:,} steps; {missing:,} (step, seed) pair(s) missing; {out['format_passed']:,} "
                 f"of {out['predictions']:,} outputs pass the format gate of {view}, contract {contract}."]
        for sd, m in out["missing"].items():
            if m["count"]:
                lines.append(f"seed {sd}: {m['count']:,} missing, first: {', '.join(m['first'])}")
        head = ("Valid (nothing stored, no score): the file would be accepted." if not out["problems"] else
                "Rejected (validate only, nothing stored): " + "; ".join(out["problems"]))
        return head + "\n" + "\n".join(lines), {"ok": not out["problems"], **out}

    def refresh(som_filter, coord_filter, current=None):
        try:
            rows = {"som": ranked_rows(board, View.SOM.value, som_filter),
                    "coord": ranked_rows(board, View.COORD.value, coord_filter)}
        except SubmissionRejected as e:
            rows = {"error": str(e)}
        choices = submission_choices(board)
        keep = current if _parse_id(current) is not None and str(current) in {v for _, v in choices} else None
        return (table_html(board, View.SOM.value, som_filter), table_html(board, View.COORD.value, coord_filter),
                rows, gr.Dropdown(choices=choices, value=keep), gold_banner(board))

    empty_details = ("Choose a submission (or click a row of the leaderboard).", "", "", None,
                     gr.Dropdown(choices=[], value=None))

    def details(choice):
        sid = _parse_id(choice)
        sub = board.get(sid) if sid is not None else None
        if sub is None:
            return empty_details
        info = (
            f"#{sub.id} {sub.model_name} — {sub.organisation or 'no organisation'} — view {sub.view}, "
            f"contract {sub.contract}, {sub.seeds} seed(s), {sub.provenance_tag}, {sub.date}\n"
            f"link: {sub.link or '(none)'}\n"
            f"file sha256 {sub.file_sha256}; scorer {sub.scorer_version}; gold {sub.gold_fingerprint}"
        )
        extras = report_extras(sub.report)
        if extras:
            info += "\n" + extras
        public = board.public_report(sub)
        path = report_dir / f"submission-{sub.id}-report.json"
        if not path.exists():
            atomic_write(path, json.dumps(public, ensure_ascii=False, indent=2) + "\n")
        bars = "".join(breakdown_html(public, k) for k in BREAKDOWN_TITLES)
        others = [(label, v) for label, v in submission_choices(board)
                  if v != str(sub.id) and board.get(int(v)).view == sub.view]
        return info, bars, taxonomy_html(public), str(path), gr.Dropdown(choices=others, value=None)

    def eval_results_download(choice):
        """The submission's ``.eval_results`` YAML for the model's Hub repo (``mag score --eval-results``'s file)."""
        from mag_dataset.hub_eval import DEFAULT_DATASET_ID, EvalFileError, eval_results_file

        sid = _parse_id(choice)
        sub = board.get(sid) if sid is not None else None
        if sub is None:
            return None
        gold_src = board.config.gold
        hub_gold = gold_src is not None and not Path(gold_src).exists()  # a Hub repo id, not a folder
        try:
            name, text = eval_results_file(sub.report, dataset_id=gold_src if hub_gold else DEFAULT_DATASET_ID,
                                           split=board.gold.split)
        except EvalFileError:  # e.g. a train-split board: no benchmark task to report against
            return None
        path = report_dir / f"eval-results-{sub.id}" / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
        return str(path)

    def compare(a_text, b_text):
        ids = [_parse_id(t) for t in (a_text, b_text)]
        if any(i is None for i in ids):
            return "Give the ids of two submissions of the same view (e.g. 3 and 7)."
        from mag_dataset.compare import format_comparison

        try:
            return format_comparison(board.compare(ids[0], ids[1]))
        except SubmissionRejected as e:
            return str(e)

    def open_row(evt: gr.SelectData):
        sid = _parse_id(evt.value)
        return gr.Tabs(selected="details"), gr.Dropdown(value=str(sid) if sid is not None else None)

    filters = [ALL] + [c.value for c in Contract]
    # delete_cache: uploads and report copies older than a day are removed every hour.
    with gr.Blocks(title="WebMRE / MAG leaderboard", analytics_enabled=False, fill_width=True,
                   delete_cache=(3600, 86400)) as demo:
        gr.Markdown("# WebMRE / MAG leaderboard\nOffline, deterministic scoring of web guide agents. "
                    "See *About* for the exact rules.")
        gold_html = gr.HTML(gold_banner(board), elem_id="gold-banner")
        with gr.Tabs() as tabs:
            with gr.Tab("Leaderboard", id="leaderboard"):
                with gr.Row():
                    som_filter = gr.Dropdown(filters, value=ALL, label="som view: contract", allow_custom_value=True)
                    coord_filter = gr.Dropdown(filters, value=ALL, label="coord view: contract", allow_custom_value=True)
                    refresh_btn = gr.Button("Refresh", scale=0)
                gr.Markdown("### Set-of-Mark view (`som`)")
                som_table = gr.HTML(table_html(board, View.SOM.value), js_on_load=TABLE_JS, elem_id="table-som")
                gr.Markdown("### Coordinate view (`coord`)")
                coord_table = gr.HTML(table_html(board, View.COORD.value), js_on_load=TABLE_JS, elem_id="table-coord")
                rows_json = gr.JSON(visible=False)
            with gr.Tab("Submit", id="submit"):
                if _on_space():
                    gr.LoginButton()
                with gr.Row():
                    model_name = gr.Textbox(label="Model name", max_lines=1, elem_id="model-name")
                    organisation = gr.Textbox(value="", label="Organisation (optional)", max_lines=1, elem_id="organisation")
                with gr.Row():
                    # Dropdowns that take any value: a wrong one reaches the handler, which answers
                    # "Rejected: ..." instead of Gradio raising on a value outside the choices
                    view = gr.Dropdown([v.value for v in View], value=View.SOM.value, label="View",
                                       allow_custom_value=True, elem_id="view")
                    contract = gr.Dropdown([c.value for c in Contract], value=Contract.J.value, label="Contract",
                                           allow_custom_value=True, elem_id="contract")
                predictions = gr.File(label=f"Predictions ({', '.join(EXTENSIONS)}; at most {cap_mib})",
                                      type="filepath", elem_id="predictions")
                gr.HTML(f'<div class="mag-upload-note">Upload cap: {cap_mib} per file (also the decoded size of '
                        f'a .jsonl.gz or .parquet file).</div>', js_on_load=_upload_note_js(cap), elem_id="upload-note")
                with gr.Row():
                    link = gr.Textbox(value="", label="Link (optional, http/https)", max_lines=1, elem_id="link")
                    provenance_tag = gr.Dropdown(list(PROVENANCE_TAGS), value=PROVENANCE_TAGS[0], label="Provenance",
                                                 allow_custom_value=True)
                    submitter = gr.Textbox(value="", label="Submitter (optional; your HF login on the Space)", max_lines=1,
                                           elem_id="submitter")
                with gr.Row():
                    validate_btn = gr.Button("Validate only (nothing stored)", elem_id="validate-button")
                    submit_btn = gr.Button("Submit", variant="primary", elem_id="submit-button")
                status = gr.Textbox(label="Result", interactive=False, lines=2, elem_id="submit-status")
                result = gr.JSON(label="Details", visible=False)
            with gr.Tab("Details", id="details"):
                choice = gr.Dropdown(choices=submission_choices(board), value=None, label="Submission",
                                     elem_id="details-choice", allow_custom_value=True)
                info = gr.Textbox(label="Submission", interactive=False, lines=3, elem_id="details-info")
                bars = gr.HTML("", elem_id="details-breakdowns")
                taxonomy = gr.HTML("", elem_id="details-taxonomy")
                report_file = gr.File(label="Full report (JSON, breakdowns under the granularity rule)",
                                      interactive=False, elem_id="report-file")
                eval_file = gr.File(label="For your model repo: commit this file as .eval_results/<its name> "
                                          "(the Hub's benchmark results format; same as mag score --eval-results)",
                                    interactive=False, elem_id="eval-results-file")
                gr.Markdown("#### Compare with another submission of the same view\nPaired comparison (other − this): "
                            "task-bootstrap intervals, exact McNemar / sign-flip p-values, Holm-adjusted (the same "
                            "call as `mag compare`).")
                with gr.Row():
                    cmp_b = gr.Dropdown(choices=[], value=None, label="Compare with", elem_id="compare-with",
                                        allow_custom_value=True)
                    cmp_btn = gr.Button("Compare", elem_id="compare-button", scale=0)
                cmp_out = gr.Textbox(label="Comparison", interactive=False, lines=16, elem_id="compare-out")
            with gr.Tab("About", id="about"):
                gr.Markdown(about_text(board.config))

        outputs = [som_table, coord_table, rows_json, choice, gold_html]
        gr.on(
            [demo.load, refresh_btn.click, som_filter.change, coord_filter.change],
            refresh, [som_filter, coord_filter, choice], outputs, api_name="leaderboard", queue=False,
        )
        submit_btn.click(
            submit,
            [model_name, view, contract, predictions, organisation, link, provenance_tag, submitter],
            [status, result],
            api_name="submit",
            # at most `workers` uploads are decoded and scored at once (each in a limited child
            # process); the rest wait in Gradio's queue, which shows each its position
            concurrency_limit=board.config.workers,
        ).then(refresh, [som_filter, coord_filter, choice], outputs, api_name="leaderboard_after_submit", queue=False
               ).then(style_status, [status], [status], api_visibility="private", queue=False)
        validate_btn.click(validate, [view, contract, predictions], [status, result], api_name="validate",
                           concurrency_limit=board.config.workers
                           ).then(style_status, [status], [status], api_visibility="private", queue=False)
        choice.change(details, [choice], [info, bars, taxonomy, report_file, cmp_b], api_name="details")
        choice.change(eval_results_download, [choice], [eval_file], api_visibility="private", queue=False)
        for table in (som_table, coord_table):
            table.select(open_row, None, [tabs, choice], api_visibility="private", queue=False)
        # re-scores two stored files: one comparison at a time
        cmp_btn.click(compare, [choice, cmp_b], [cmp_out], api_name="compare", concurrency_limit=1)
    return demo


def main(argv: list[str] | None = None) -> int:
    """Start the server (blocking). Settings come from ``MAG_BOARD_*`` variables."""
    parser = argparse.ArgumentParser(description="Run the WebMRE / MAG leaderboard.")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    args = parser.parse_args(argv)
    try:
        board = Board(BoardConfig.from_env())
        print(f"leaderboard: database {board.config.db_path}; loading gold ...", flush=True)
        gold = board.gold
    except (ValueError, OSError) as e:  # a bad MAG_BOARD_* setting or an unloadable gold source
        print(f"leaderboard: error: {e}", file=sys.stderr)
        return 2
    print(f"leaderboard: gold {gold.source} ({gold.split}: "
          + ", ".join(f"{v.value} {len(gold.steps[v])} steps" for v in gold.views()) + ")", flush=True)
    demo = build_app(board)
    demo.queue(default_concurrency_limit=2, max_size=QUEUE_SIZE)
    # The data folder (database, stored uploads) is never served, whatever gradio allows.
    blocked = sorted({str(board.config.data_dir.resolve()), str(Path(board.config.db_path).resolve().parent)})
    demo.launch(server_name=args.host, server_port=args.port, max_file_size=board.config.max_bytes,
                show_error=False, quiet=False, blocked_paths=blocked, css=CSS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
