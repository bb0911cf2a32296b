"""The leaderboard's HTML: ranked tables, the gold banner, breakdown bars, the error taxonomy.

Pure functions from a :class:`mag_dataset.board.Board` (or a stored report) to escaped HTML
or plain rows: no Gradio, no event handling, no scoring (the board ranks, the scorer
scores). Names and links from a submission are always escaped here, so no component of
the page renders HTML from a submission. The page layout and its events are in
``app.py``; the About text in ``lb_about.py``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from mag_dataset.actions import Contract
from mag_dataset.board import METRIC_COLUMNS, MIN_GROUP_STEPS, Board, Ranked, SubmissionRejected, metric_value
from mag_dataset.board.granularity import group_gold_steps
from mag_dataset.board.ranking import RANK_ALPHA
from mag_dataset.scoring import METRIC_TABLE

#: The contract filter that shows every contract's table.
ALL = "all"
#: Decimals shown in the tables: a proportion over a few hundred steps has a standard error of
#: a few points, so a third decimal would be noise (the API and the report keep full precision).
DECIMALS = 2

#: Breakdowns shown on Details: report breakdown key -> title.
BREAKDOWN_TITLES: dict[str, str] = {
    "site": "Per site", "action_type": "Per gold action type", "stale": "Stale vs fresh observation",
    "unseen_template": "Unseen vs seen intent template",
}
#: Board columns left off the breakdown bars, to keep them narrow (the downloadable report has them).
BARS_LEAVE_OUT: frozenset[str] = frozenset({"ofcr", "bleu4", "usefulness"})
#: Metrics of a breakdown, in column order, then the extensions (a metric that applies to no group is left out).
BREAKDOWN_METRICS: tuple[str, ...] = (tuple(k for k in METRIC_COLUMNS if k not in BARS_LEAVE_OUT)
                                      + tuple(m.name for m in METRIC_TABLE if m.extension))
#: Titles of the extension metrics (not board columns), as the scorer declares them.
EXTENSION_TITLES: dict[str, str] = {m.name: m.title for m in METRIC_TABLE if m.extension}


def _esc(text: Any) -> str:
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
    similar = board.similar_names()
    for r in board.ranking(view, _contract_filter(contract)):
        s = r.submission
        rows.append({
            "rank": r.rank, "id": s.id, "model": s.model_name, "similar_to": similar.get(s.id),
            "organisation": s.organisation, "view": s.view,
            "contract": s.contract, "ranking_metric": r.metric, "value": r.value,
            "ci95_low": None if r.ci95 is None else r.ci95[0], "ci95_high": None if r.ci95 is None else r.ci95[1],
            "beaten_by": list(r.beaten_by), "seeds": s.seeds, **{k: s.summary.get(k) for k in METRIC_COLUMNS},
            "provenance": s.provenance_tag, "date": s.date,
        })
    return rows


#: Rows a ranked table shows before "show all" (the rest are a click away; a search looks at every row).
TOP_ROWS = 20


def _model_cell(s: Any, similar: dict[int, int]) -> str:
    """A row's model name; a name that reads like an older row's of another submitter carries a mark."""
    other = similar.get(s.id)
    mark = (f' <span class="mag-similar" title="this name reads like #{other}\'s, submitted by someone else">'
            f'≈#{other}</span>' if other is not None else "")
    name = _esc(s.model_name)
    if s.link:  # http/https only (the board refuses any other scheme); opens beside the board
        name = f'<a href="{_esc(s.link)}" target="_blank" rel="noopener noreferrer nofollow ugc">{name}</a>'
    return f'<td class="c-model txt">{name}{mark}</td>'


def _rank_table(rows: list[Ranked], contract: str, similar: dict[int, int] | None = None) -> str:
    similar = similar or {}
    head = METRIC_COLUMNS[rows[0].metric]
    others = [k for k in METRIC_COLUMNS if k != rows[0].metric and any(r.submission.summary.get(k) is not None for r in rows)]
    # what tells two close rows apart (interval, seeds, date) comes right after the score
    cols = ([("rank", "c-rank"), ("model", "c-model txt"), (head, "c-head"), ("95% interval", "c-ci"),
             ("seeds", ""), ("date", "txt")]
            + [(METRIC_COLUMNS[k], "c-more") for k in others]  # behind the "all columns" toggle
            + [("organisation", "txt"), ("provenance", "txt"), ("id", "")])
    th = "".join(f'<th scope="col" tabindex="0" data-col="{i}" class="{c}" title="sort by {_esc(t)}">{_esc(t)}</th>'
                 for i, (t, c) in enumerate(cols))
    body = []
    shared = {rank for rank in (r.rank for r in rows) if sum(1 for x in rows if x.rank == rank) > 1}
    for r in rows:
        s = r.submission
        ci = "–" if r.ci95 is None else f"[{fmt(r.ci95[0])}, {fmt(r.ci95[1])}]"
        beaten = (f"significantly below #{', #'.join(map(str, r.beaten_by))}" if r.beaten_by
                  else "no submission of this table is significantly better")
        cells = [
            (f'<td class="c-rank tie" data-v="{r.rank}" title="{_esc(beaten)}; shares rank {r.rank}">'
             f'<span class="mag-tie" aria-label="shared rank">=</span>{r.rank}</td>' if r.rank in shared else
             f'<td class="c-rank" data-v="{r.rank}" title="{_esc(beaten)}">{r.rank}</td>'),
            _model_cell(s, similar),
            f'<td class="c-head" data-v="{"" if r.value is None else r.value}">{fmt(r.value)}</td>',
            f'<td class="c-ci" data-v="{"" if r.ci95 is None else r.ci95[0]}">{ci}</td>',
            f'<td data-v="{s.seeds}">{s.seeds}</td>', f'<td class="txt">{_esc(s.date)}</td>',
            *[f'<td class="c-more" data-v="{"" if s.summary.get(k) is None else s.summary[k]}">{fmt(s.summary.get(k))}</td>'
              for k in others],
            f'<td class="txt">{_esc(s.organisation)}</td>', f'<td class="txt">{_esc(s.provenance_tag)}</td>',
            f'<td data-v="{s.id}">{s.id}</td>',
        ]
        words = _esc(" ".join((s.model_name, s.organisation or "", f"#{s.id}")).casefold())
        extra = ' class="mag-beyond" hidden' if len(body) >= TOP_ROWS else ""
        body.append(f'<tr data-id="{s.id}" data-search="{words}"{extra} tabindex="0" '
                    f'title="open the details of #{s.id}">{"".join(cells)}</tr>')
    note = (f"micro mean over steps; 95% interval: task-level bootstrap; a shared rank = no significant paired "
            f"difference (p ≥ {RANK_ALPHA:g}, see About)")
    legend = (f'<div class="mag-tie-legend"><span class="mag-tie">=</span>{min(shared)}: a shared rank, no '
              f'significant paired difference between these submissions (p ≥ {RANK_ALPHA:g})</div>' if shared else "")
    return (f'<div class="mag-contract" data-contract="{contract}">Contract {contract} — ranked by {_esc(head)} '
            f'<small>({_esc(note)})</small></div>{legend}'
            f'<div class="mag-tools" data-contract="{contract}"><input type="search" class="mag-search" placeholder="Search model, organisation or #id" '
            f'aria-label="search the contract {contract} table">'
            + (f'<button type="button" class="mag-more" aria-expanded="false">Show all {len(rows)} rows</button>'
               f'<span class="mag-shown">top {TOP_ROWS} of {len(rows)}</span>' if len(rows) > TOP_ROWS else "")
            + (f'<button type="button" class="mag-cols" aria-pressed="false">All {len(cols)} columns</button>'
               if others else "")
            + '<span class="mag-count" aria-live="polite"></span></div>'
            f'<div class="mag-scroll-cue">↔ the table scrolls sideways: rank, model, {_esc(head)} and its interval stay '
            f'in view</div>'
            f'<div class="mag-table-wrap"><table class="mag-rank mag-less" data-contract="{contract}">'
            f'<thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def table_html(board: Board, view: str, contract: Any = ALL) -> str:
    """One view's ranked tables, one per contract, as escaped HTML (names are text)."""
    try:
        ranking = board.ranking(view, _contract_filter(contract))
    except SubmissionRejected as e:
        return f'<p class="mag-note">{_esc(e)}</p>'
    parts, similar = [], board.similar_names()
    for c in Contract:
        rows = [r for r in ranking if r.submission.contract == c.value]
        if rows:
            parts.append(_rank_table(rows, c.value, similar))
    if not parts:
        return '<p class="mag-note">No submission yet for this view and contract.</p>'
    return ('<p class="mag-note">Click a column header to sort (again to reverse); click a row to open its '
            'details.</p>' + "".join(parts))


#: A Hugging Face Hub repo id ("org/name"): shown as it is; anything else is a path on the server.
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


def gold_banner(board: Board) -> str:
    """Which gold the board scores against, on the main page."""
    info = board.gold.describe()
    views = "; ".join(f"{v}: {d['steps']:,} steps, {d['tasks']:,} tasks, fingerprint <code>{_esc(d['fingerprint'][:19])}…</code>"
                      for v, d in info["views"].items())
    if info["kind"] == "public sample":
        what = ("<b>Gold: the public bundled sample</b> (not a hidden test split: anyone can score against it "
                "locally, so these rankings show that a file is valid, not how a model generalises)")
    else:
        src = str(info["source"] or "")
        # a Hub repo id is public; a folder on the server is not shown (issue 27: the banner named the path)
        shown = "a private folder on the server" if ("/" in src and not _HUB_ID.fullmatch(src)) or Path(src).exists() \
            else src
        what = f"<b>Gold: hidden {_esc(info['split'])} split</b> ({_esc(shown)})"
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
        # a pooled group names its members behind a disclosure: listed in the narrow first column
        # they made one row as tall as the rest of the table (19 MiniWoB++ tasks, a word a line)
        label = _esc(g) if "pooled" not in block else (
            f'{_esc(g)}<details class="mag-pooled"><summary>{len(block["pooled"])} pooled</summary>'
            f'{_esc(", ".join(block["pooled"]))}</details>')
        cells = []
        for m in metrics:
            v = metric_value(block.get(m))
            if v is None:
                cells.append('<td title="not shown: too few steps, or not applicable">–</td>')
            else:
                cells.append(f'<td><div class="mag-bar" role="img" aria-label="{_esc(m)} {v:.2f}"><span class="v">'
                             f'{v:.2f}</span><span class="b" style="width:{max(1, round(v * 80))}px"></span></div></td>')
        rows.append(f"<tr><th scope=\"row\">{label}</th><td>{group_gold_steps(block)}</td>{''.join(cells)}</tr>")
    return (f'<h4>{_esc(title)}</h4><div class="mag-bars-wrap"><table class="mag-bars"><thead><tr><th>group</th>'
            f'<th title="distinct gold steps">gold steps</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


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

