"""The WebMRE / MAG leaderboard Space: upload predictions, score against hidden gold, rank.

Glue only: every rule lives in the library. :class:`mag_dataset.board.Board` validates
the upload, scores it with :func:`mag_dataset.scoring.score_predictions` (the same call
``mag score`` makes, WebMRE's deterministic protocol, arXiv 2609.27353) and stores it;
this file builds the page and shows what the board returns. Names and links are shown
as plain text (no component here renders HTML from a submission).

The app's modules, beside this file (and beside it in the Space repo): ``app.py`` lays out
the tabs and wires their events (:func:`build_app`) and starts the server (:func:`main`);
``lb_handlers.py`` holds what each event calls (one board call each); ``lb_tables.py``
renders the ranked tables, banner, breakdowns and taxonomy as escaped HTML;
``lb_about.py`` the About text; ``lb_assets.py`` the page's CSS and JavaScript. No rule
lives in any of them. The names tests and scripts import from this module
(``build_app``, ``table_html``, ``ranked_rows``, ``about_text``, ...) are re-exported here.

Run locally::

    python leaderboard/app.py            # or: mag leaderboard serve
    python leaderboard/app.py --port 7861 --host 0.0.0.0

Configuration is by ``MAG_BOARD_*`` environment variables (see ``mag_dataset/board/config.py``
and ``leaderboard/README.md``). Submitting from a script::

    from gradio_client import Client, handle_file
    message, result = Client("http://127.0.0.1:7860").predict(
        model_name="my-model", view="som", contract="J",
        predictions=handle_file("preds.jsonl"), api_name="/submit")
"""

import argparse
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    import mag_dataset  # noqa: F401
except ImportError:  # a Space repo carries the package folder next to app.py
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if str(Path(__file__).resolve().parent) not in sys.path:
    # the app's own modules (lb_*.py) sit beside it, here and in a Space repo; this file is also
    # loaded by path (mag leaderboard serve, tests) and as leaderboard.app, where that folder is not on the path
    sys.path.append(str(Path(__file__).resolve().parent))

import gradio as gr

from lb_about import ABOUT, about_text, scoring_example  # noqa: F401 - re-exported: the app's public names
from lb_assets import CSS, TABLE_JS, upload_note_js
from lb_handlers import Handlers, SpaceHandlers, on_space, style_status
from lb_tables import (  # noqa: F401 - re-exported: the app's public names
    ALL,
    BREAKDOWN_METRICS,
    BREAKDOWN_TITLES,
    DECIMALS,
    EXTENSION_TITLES,
    breakdown_html,
    fmt,
    gold_banner,
    ranked_rows,
    report_extras,
    submission_choices,
    table_html,
    taxonomy_html,
)
from mag_dataset.actions import Contract, View
from mag_dataset.board import EXTENSIONS, PROVENANCE_TAGS, Board, BoardConfig
from mag_dataset.gradio_theme import theme

#: Most events waiting in the queue; a submission beyond it is refused with "queue is full".
QUEUE_SIZE = 256


@dataclass(frozen=True)
class LeaderboardTab:
    """The Leaderboard tab's components that events read or write."""

    som_filter: gr.Dropdown
    coord_filter: gr.Dropdown
    refresh_btn: gr.Button
    som_table: gr.HTML
    coord_table: gr.HTML
    rows_json: gr.JSON


@dataclass(frozen=True)
class SubmitTab:
    """The Submit tab's form, buttons and result."""

    inputs: tuple  # model_name, view, contract, predictions, organisation, link, provenance_tag
    validate_btn: gr.Button
    submit_btn: gr.Button
    status: gr.Textbox
    result: gr.JSON

    @property
    def validate_inputs(self) -> list:
        return [self.inputs[1], self.inputs[2], self.inputs[3]]  # view, contract, predictions


@dataclass(frozen=True)
class DetailsTab:
    """The Details tab: the chosen submission, its panels, downloads and the comparison."""

    choice: gr.Dropdown
    panels: tuple  # info, bars, taxonomy, report_file, compare-with dropdown (the details endpoint's outputs)
    eval_file: gr.File
    cmp_b: gr.Dropdown
    cmp_btn: gr.Button
    cmp_out: gr.Textbox


def _leaderboard_tab(board: Board) -> LeaderboardTab:
    filters = [ALL] + [c.value for c in Contract]
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
    return LeaderboardTab(som_filter, coord_filter, refresh_btn, som_table, coord_table, rows_json)


def _submit_tab(cap: int, cap_mib: str, identity: str) -> SubmitTab:
    with gr.Tab("Submit", id="submit"):
        if on_space():
            gr.LoginButton()
            gr.Markdown("You submit as your Hugging Face login: sign in above (from a script, pass your token: "
                        "`Client(..., oauth_token=...)`).", elem_id="submitter-note")
        else:
            gr.Markdown(f"You submit as **{identity}**: this server's identity (`MAG_BOARD_SUBMITTER`), which "
                        "the daily cap counts; on the Space, your Hugging Face login.", elem_id="submitter-note")
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
                f'a .jsonl.gz or .parquet file).</div>', js_on_load=upload_note_js(cap), elem_id="upload-note")
        with gr.Row():
            link = gr.Textbox(value="", label="Link (optional, http/https)", max_lines=1, elem_id="link")
            provenance_tag = gr.Dropdown(list(PROVENANCE_TAGS), value=PROVENANCE_TAGS[0], label="Provenance",
                                         allow_custom_value=True)
        with gr.Row():
            validate_btn = gr.Button("Validate only (nothing stored)", elem_id="validate-button")
            submit_btn = gr.Button("Submit", variant="primary", elem_id="submit-button")
        status = gr.Textbox(label="Result", interactive=False, lines=2, elem_id="submit-status")
        result = gr.JSON(label="Details", visible=False)
    inputs = (model_name, view, contract, predictions, organisation, link, provenance_tag)
    return SubmitTab(inputs, validate_btn, submit_btn, status, result)


def _details_tab(board: Board) -> DetailsTab:
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
                    "the task sign-flip test on per-step means over seeds, its p-values Holm-adjusted, and its 95% "
                    "interval (the differences the test does not reject); the same call as `mag compare`.")
        with gr.Row():
            cmp_b = gr.Dropdown(choices=[], value=None, label="Compare with", elem_id="compare-with",
                                allow_custom_value=True)
            cmp_btn = gr.Button("Compare", elem_id="compare-button", scale=0)
        cmp_out = gr.Textbox(label="Comparison", interactive=False, lines=16, elem_id="compare-out")
    return DetailsTab(choice, (info, bars, taxonomy, report_file, cmp_b), eval_file, cmp_b, cmp_btn, cmp_out)


def _wire(demo: gr.Blocks, h: Handlers, tabs: gr.Tabs, gold_html: gr.HTML, lb: LeaderboardTab, form: SubmitTab,
          det: DetailsTab) -> None:
    """Every event of the page; each public one has an explicit ``api_name`` (the API's names)."""
    workers = h.board.config.workers
    filters = [lb.som_filter, lb.coord_filter, det.choice]
    outputs = [lb.som_table, lb.coord_table, lb.rows_json, det.choice, gold_html]
    gr.on(
        [demo.load, lb.refresh_btn.click, lb.som_filter.change, lb.coord_filter.change],
        h.refresh, filters, outputs, api_name="leaderboard", queue=False,
    )
    # at most `workers` uploads are decoded and scored at once (each in a limited child
    # process); the rest wait in Gradio's queue, which shows each its position
    status = [form.status]
    form.submit_btn.click(
        h.submit, list(form.inputs), [form.status, form.result], api_name="submit", concurrency_limit=workers,
    ).then(h.refresh, filters, outputs, api_name="leaderboard_after_submit", queue=False
           ).then(style_status, status, status, api_visibility="private", queue=False)
    form.validate_btn.click(
        h.validate, form.validate_inputs, [form.status, form.result], api_name="validate", concurrency_limit=workers,
    ).then(style_status, status, status, api_visibility="private", queue=False)
    det.choice.change(h.details, [det.choice], list(det.panels), api_name="details")
    det.choice.change(h.eval_results_download, [det.choice], [det.eval_file], api_visibility="private", queue=False)
    for table in (lb.som_table, lb.coord_table):
        table.select(h.open_row, None, [tabs, det.choice], api_visibility="private", queue=False)
    # re-scores two stored files: one comparison at a time
    det.cmp_btn.click(h.compare, [det.choice, det.cmp_b], [det.cmp_out], api_name="compare", concurrency_limit=1)


def build_app(board: Board) -> gr.Blocks:
    """The Blocks app over ``board``. Every event has an explicit public ``api_name``."""
    handlers = (SpaceHandlers if on_space() else Handlers)(board)
    # delete_cache: uploads and report copies older than a day are removed every hour.
    with gr.Blocks(title="WebMRE / MAG leaderboard", analytics_enabled=False, fill_width=True,
                   delete_cache=(3600, 86400)) as demo:
        gr.Markdown("# WebMRE / MAG leaderboard\nOffline, deterministic scoring of web guide agents. "
                    "See *About* for the exact rules.")
        gold_html = gr.HTML(gold_banner(board), elem_id="gold-banner")
        with gr.Tabs() as tabs:
            lb = _leaderboard_tab(board)
            form = _submit_tab(handlers.cap, handlers.cap_mib, board.config.local_submitter)
            det = _details_tab(board)
            with gr.Tab("About", id="about"):
                gr.Markdown(about_text(board.config), elem_id="about-text")
        _wire(demo, handlers, tabs, gold_html, lb, form, det)
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
    # A stop (SIGTERM: a Space restarting, a test, a service manager) closes the server as Ctrl-C
    # does, so the process exits normally and the Details reports folder is removed with it.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    demo.launch(server_name=args.host, server_port=args.port, max_file_size=board.config.max_bytes,
                show_error=False, quiet=False, blocked_paths=blocked, css=CSS, theme=theme())
    return 0


if __name__ == "__main__":
    sys.exit(main())
