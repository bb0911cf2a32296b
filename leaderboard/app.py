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
    PROVENANCE_TAGS,
    Board,
    BoardConfig,
    Submission,
    SubmissionRejected,
    metric_value,
)
from mag_dataset.fileio import atomic_write

#: Leaderboard table columns, in order.
TABLE_COLUMNS: list[str] = [
    "rank", "model", "organisation", "contract", "seeds",
    *METRIC_COLUMNS.values(),
    "provenance", "date", "id",
]
TABLE_TYPES: list[str] = ["number", "str", "str", "str", "number", *(["number"] * len(METRIC_COLUMNS)), "str", "str", "number"]
ALL = "all"
#: Most events waiting in the queue; a submission beyond it is refused with "queue is full".
QUEUE_SIZE = 256

#: Breakdown charts on the Details tab: report breakdown key -> chart title.
CHARTS: dict[str, str] = {"site": "per site", "action_type": "per gold action type"}
CHART_METRICS: tuple[str, ...] = ("saa", "target_acc", "action_type_acc", "bleu1")


# --------------------------------------------------------------------------- pure helpers


def table_rows(board: Board, view: str, contract: str | None) -> list[list[Any]]:
    """Rows of one view's table: ranked within each contract (see ``board.rank_key``)."""
    rows = []
    for rank, s in board.ranked(view, None if contract in (None, "", ALL) else contract):
        metrics = [None if s.summary.get(k) is None else round(s.summary[k], 4) for k in METRIC_COLUMNS]
        rows.append([rank, s.model_name, s.organisation, s.contract, s.seeds, *metrics, s.provenance_tag, s.date, s.id])
    return rows


def _frame(rows: list[list[Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


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


def _value(v: Any) -> float | None:
    return metric_value(v)


def breakdown_figure(sub: Submission, key: str, title: str) -> Any:
    """A grouped bar chart of the applicable headline metrics per group of a breakdown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _breakdown(sub.report, key)
    names = sorted(groups)
    metrics = [m for m in CHART_METRICS if any(_value(groups[g].get(m)) is not None for g in names)]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(names) + 2), 3.6), dpi=90)
    width = 0.8 / max(1, len(metrics))
    for j, m in enumerate(metrics):
        xs = [i + (j - (len(metrics) - 1) / 2) * width for i in range(len(names))]
        ys = [_value(groups[g].get(m)) or 0.0 for g in names]
        ax.bar(xs, ys, width=width, label=METRIC_COLUMNS[m])
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("score")
    ax.set_title(f"#{sub.id} {sub.model_name[:40]} — {title}", fontsize=10)
    if metrics:
        ax.legend(fontsize=7, ncol=len(metrics))
    else:
        ax.text(0.5, 0.5, "no breakdown in this report", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    plt.close(fig)
    return fig


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


def split_rows(sub: Submission) -> list[list[Any]]:
    """Stale vs fresh and unseen vs seen template rows of a report."""
    rows = []
    for key, label in (("stale", "stale"), ("unseen_template", "unseen template")):
        for group, metrics in sorted(_breakdown(sub.report, key).items()):
            n = metrics.get("n") if isinstance(metrics, dict) else None
            if n is None and isinstance(metrics, dict):
                n = metrics.get("steps") or metrics.get("count")
            rows.append([f"{label} = {group}", n, *[_round(_value(metrics.get(m))) for m in METRIC_COLUMNS]])
    return rows


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


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
  in an error message. Breakdowns are aggregates.
* Limits: a daily cap of accepted submissions per submitter (your Hugging Face login on
  the Space, the typed *submitter* name locally); an identical file (same hash, view,
  contract) is not scored twice; an upload cap, which also caps the decoded text of a
  `.jsonl.gz` or `.parquet` file; at most {max_seeds} seeds per file; {score_seconds} s of
  decoding and scoring per submission; a rejected file stores nothing. Submissions are
  scored {workers} at a time, each in its own memory-limited process; the others wait in a
  queue that shows their position. Names and links may not hold bidirectional-control
  characters or lone surrogates.
* Ranking is within a view and contract: by **SAA** for A, J and JG (ties broken by target
  acc, then type acc, then BLEU-1), by **BLEU-1** for G (then ROUGE-L, then BLEU-4); a
  blank ranks last; submissions equal on all of these share a rank, the older listed first.

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
per-action-type / stale / unseen-template breakdowns, provenance) is downloadable on *Details*.

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
            .replace("{scoring_example}", scoring_example()))


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


def build_app(board: Board) -> gr.Blocks:
    """The Blocks app over ``board``. Every event has an explicit public ``api_name``."""
    report_dir = Path(tempfile.mkdtemp(prefix="mag-board-reports-"))

    def do_submit(model_name, view, contract, predictions, organisation, link, provenance_tag, submitter, login_name=None):
        try:
            if not predictions:
                raise SubmissionRejected("no predictions file was uploaded")
            path = Path(predictions if isinstance(predictions, str) else getattr(predictions, "name", predictions))
            size = path.stat().st_size
            if size > board.config.max_bytes:
                raise SubmissionRejected(
                    f"the file is {size:,} bytes, over the upload cap of {board.config.max_bytes:,} bytes"
                )
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
        rank = next(r for r, s in board.ranked(sub.view, sub.contract) if s.id == sub.id)
        n = len(board.submissions(sub.view, sub.contract))
        primary = "BLEU-1" if sub.contract == "G" else "SAA"
        value = sub.summary.get("bleu1" if sub.contract == "G" else "saa")
        msg = (
            f"Accepted: submission #{sub.id} ({sub.view}, contract {sub.contract}) — "
            f"{primary} {value:.4f}, rank {rank} of {n}." if value is not None else
            f"Accepted: submission #{sub.id} ({sub.view}, contract {sub.contract}), rank {rank} of {n}."
        )
        return msg, {"ok": True, "rank": rank, **sub.public_dict()}

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

    def refresh(som_filter, coord_filter):
        return (
            _frame(table_rows(board, View.SOM.value, som_filter)),
            _frame(table_rows(board, View.COORD.value, coord_filter)),
            gr.Dropdown(choices=submission_choices(board)),
        )

    def details(choice):
        text = "" if choice is None else str(choice)
        sub = board.get(int(text)) if text.isascii() and text.isdigit() and len(text) <= 12 else None
        if sub is None:
            return "Choose a submission.", None, None, [], None
        info = (
            f"#{sub.id} {sub.model_name} — {sub.organisation or 'no organisation'} — view {sub.view}, "
            f"contract {sub.contract}, {sub.seeds} seed(s), {sub.provenance_tag}, {sub.date}\n"
            f"link: {sub.link or '(none)'}\n"
            f"file sha256 {sub.file_sha256}; scorer {sub.scorer_version}; gold {sub.gold_fingerprint}"
        )
        extras = report_extras(sub.report)
        if extras:
            info += "\n" + extras
        path = report_dir / f"submission-{sub.id}-report.json"
        if not path.exists():
            atomic_write(path, sub.report_json)
        return (
            info,
            breakdown_figure(sub, "site", CHARTS["site"]),
            breakdown_figure(sub, "action_type", CHARTS["action_type"]),
            split_rows(sub),
            str(path),
        )

    def compare(a_text, b_text):
        ids = []
        for t in (a_text, b_text):
            t = "" if t is None else str(t).strip().lstrip("#")
            if not (t.isascii() and t.isdigit() and len(t) <= 12):
                return "Give the ids of two submissions of the same view (e.g. 3 and 7)."
            ids.append(int(t))
        from mag_dataset.compare import format_comparison

        try:
            return format_comparison(board.compare(ids[0], ids[1]))
        except SubmissionRejected as e:
            return str(e)

    filters = [ALL] + [c.value for c in Contract]
    # delete_cache: uploads and report copies older than a day are removed every hour.
    with gr.Blocks(title="WebMRE / MAG leaderboard", analytics_enabled=False, fill_width=True,
                   delete_cache=(3600, 86400)) as demo:
        gr.Markdown("# WebMRE / MAG leaderboard\nOffline, deterministic scoring of web guide agents "
                    "against a hidden test split. See *About* for the exact rules.")
        with gr.Tabs():
            with gr.Tab("Leaderboard", id="leaderboard"):
                with gr.Row():
                    som_filter = gr.Dropdown(filters, value=ALL, label="som view: contract")
                    coord_filter = gr.Dropdown(filters, value=ALL, label="coord view: contract")
                    refresh_btn = gr.Button("Refresh", scale=0)
                gr.Markdown("### Set-of-Mark view (`som`)")
                som_table = gr.Dataframe(
                    value=_frame([]), headers=TABLE_COLUMNS, datatype=TABLE_TYPES, interactive=False,
                    elem_id="table-som",
                )
                gr.Markdown("### Coordinate view (`coord`)")
                coord_table = gr.Dataframe(
                    value=_frame([]), headers=TABLE_COLUMNS, datatype=TABLE_TYPES, interactive=False,
                    elem_id="table-coord",
                )
            with gr.Tab("Submit", id="submit"):
                if _on_space():
                    gr.LoginButton()
                with gr.Row():
                    model_name = gr.Textbox(label="Model name", max_lines=1, elem_id="model-name")
                    organisation = gr.Textbox(value="", label="Organisation (optional)", max_lines=1, elem_id="organisation")
                with gr.Row():
                    view = gr.Radio([v.value for v in View], value=View.SOM.value, label="View")
                    contract = gr.Radio([c.value for c in Contract], value=Contract.J.value, label="Contract")
                predictions = gr.File(label=f"Predictions ({', '.join(EXTENSIONS)})", type="filepath",
                                      elem_id="predictions")
                with gr.Row():
                    link = gr.Textbox(value="", label="Link (optional, http/https)", max_lines=1, elem_id="link")
                    provenance_tag = gr.Dropdown(list(PROVENANCE_TAGS), value=PROVENANCE_TAGS[0], label="Provenance")
                    submitter = gr.Textbox(value="", label="Submitter (optional; your HF login on the Space)", max_lines=1,
                                           elem_id="submitter")
                submit_btn = gr.Button("Submit", variant="primary", elem_id="submit-button")
                status = gr.Textbox(label="Result", interactive=False, elem_id="submit-status")
                result = gr.JSON(label="Details", visible=False)
            with gr.Tab("Details", id="details"):
                choice = gr.Dropdown(choices=submission_choices(board), label="Submission", elem_id="details-choice",
                                     allow_custom_value=True)
                info = gr.Textbox(label="Submission", interactive=False, lines=3, elem_id="details-info")
                with gr.Row():
                    site_plot = gr.Plot(label="Per site", elem_id="plot-site")
                    type_plot = gr.Plot(label="Per action type", elem_id="plot-type")
                splits = gr.Dataframe(
                    headers=["split", "steps", *METRIC_COLUMNS.values()],
                    datatype=["str", "number", *(["number"] * len(METRIC_COLUMNS))],
                    interactive=False, label="Stale and unseen-template splits",
                )
                report_file = gr.File(label="Full report (JSON)", interactive=False, elem_id="report-file")
            with gr.Tab("Compare", id="compare"):
                gr.Markdown("Paired comparison of two submissions of the same view (B − A): task-bootstrap "
                            "intervals, exact McNemar / sign-flip p-values, Holm-adjusted (the same call as "
                            "`mag compare`).")
                with gr.Row():
                    cmp_a = gr.Textbox(label="Submission A (id)", max_lines=1, elem_id="compare-a")
                    cmp_b = gr.Textbox(label="Submission B (id)", max_lines=1, elem_id="compare-b")
                cmp_btn = gr.Button("Compare", elem_id="compare-button")
                cmp_out = gr.Textbox(label="Comparison", interactive=False, lines=20, elem_id="compare-out")
            with gr.Tab("About", id="about"):
                gr.Markdown(about_text(board.config))

        tables = [som_table, coord_table, choice]
        gr.on(
            [demo.load, refresh_btn.click, som_filter.change, coord_filter.change],
            refresh, [som_filter, coord_filter], tables, api_name="leaderboard", queue=False,
        )
        submit_btn.click(
            submit,
            [model_name, view, contract, predictions, organisation, link, provenance_tag, submitter],
            [status, result],
            api_name="submit",
            # at most `workers` uploads are decoded and scored at once (each in a limited child
            # process); the rest wait in Gradio's queue, which shows each its position
            concurrency_limit=board.config.workers,
        ).then(refresh, [som_filter, coord_filter], tables, api_name="leaderboard_after_submit", queue=False)
        choice.change(details, [choice], [info, site_plot, type_plot, splits, report_file], api_name="details")
        # re-scores two stored files: one comparison at a time
        cmp_btn.click(compare, [cmp_a, cmp_b], [cmp_out], api_name="compare", concurrency_limit=1)
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
                show_error=False, quiet=False, blocked_paths=blocked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
