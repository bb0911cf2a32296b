"""The leaderboard's event handlers: what each button, dropdown and row click calls.

:class:`Handlers` turns the page's inputs into one :class:`mag_dataset.board.Board` call
each (validate, submit, rank, details, compare) and its answer into the message, JSON and
HTML the page shows; :class:`SpaceHandlers` is the same on a Hugging Face Space, where the
submitter is the signed-in login. No rule lives here (the board validates, stores and
ranks; the scorer scores) and no layout (``app.py`` builds the page and wires these
methods to it; the HTML comes from ``lb_tables.py``).

Annotations stay evaluated (no ``from __future__ import annotations``): Gradio reads
``gr.OAuthProfile`` / ``gr.SelectData`` parameters from the signatures.
"""

import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

import gradio as gr

from lb_tables import (
    BREAKDOWN_TITLES,
    breakdown_html,
    gold_banner,
    ranked_rows,
    report_extras,
    submission_choices,
    table_html,
    taxonomy_html,
)
from mag_dataset.actions import View
from mag_dataset.board import METRIC_COLUMNS, Board, SubmissionRejected
from mag_dataset.board.limits import RateLimiter, refusal
from mag_dataset.fileio import atomic_write

def parse_id(value: Any) -> int | None:
    """A submission id from a dropdown value, a row click or an API caller (``"#7"``, ``7``), else ``None``."""
    text = "" if value is None else str(value).strip().lstrip("#")
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None


def login_from_token(token: Any) -> str | None:
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


def client_key(request: Any) -> str:
    """Who a read request counts against: the signed-in login on a Space, else the address the
    connection comes from. Neither a session hash (a script gets a new one per ``Client``) nor
    an ``X-Forwarded-For`` header (the caller writes it) is trusted."""
    user = getattr(request, "username", None)
    if user:
        return f"user:{user}"
    host = getattr(getattr(request, "client", None), "host", None)
    return f"addr:{host}" if host else "unknown"


def on_space() -> bool:
    """Whether the app runs on a Hugging Face Space with OAuth (then the submitter is the login)."""
    return bool(os.environ.get("SPACE_ID")) and bool(os.environ.get("OAUTH_CLIENT_ID"))


def style_status(message: Any) -> Any:
    """The Result box's look for its message: green for accepted, red for rejected (colour,
    border and label). A UI-only step after submit / validate: the API returns plain text."""
    message = "" if message is None else str(message)
    ok = message.startswith("Accepted") or message.startswith("Valid")
    rejected = message.startswith("Rejected")
    cls = ["status-accepted"] if ok else ["status-rejected"] if rejected else []
    label = "Result — accepted" if ok else "Result — rejected" if rejected else "Result"
    return gr.Textbox(value=message, label=label, elem_classes=cls)


class Handlers:
    """The page's handlers over one board (a local run: the submitter is the server's configured identity).

    Args:
        board: the board every handler calls.

    Attributes:
        report_dir: where Details writes the downloadable report copies (a fresh temporary folder).
        cap: the upload cap in bytes; ``cap_mib`` says it in MiB for messages and labels.
    """

    def __init__(self, board: Board) -> None:
        self.board = board
        self.report_dir = Path(tempfile.mkdtemp(prefix="mag-board-reports-"))
        # removed with the handlers, or when the process exits (each server made one and left it behind)
        weakref.finalize(self, shutil.rmtree, self.report_dir, True)
        self.cap = board.config.max_bytes
        cfg = board.config
        self.limits = {"compare": RateLimiter(cfg.compare_per_min, cfg.compare_all_per_min),
                       "details": RateLimiter(cfg.details_per_min, cfg.details_all_per_min)}
        self.cap_mib = f"{self.cap / (1024 * 1024):g} MiB"
        # what Details shows before a submission is chosen (or for an id that is not stored)
        self.empty_details = ("Choose a submission (or click a row of the leaderboard).", "", "", None,
                              gr.Dropdown(choices=[], value=None))

    def file_path(self, predictions: Any) -> Path:
        """The uploaded file's path, its size checked against the cap before anything reads it."""
        if not predictions:
            raise SubmissionRejected(
                f"no predictions file was uploaded (a file over the {self.cap_mib} upload cap is refused by the page "
                "before it is sent)")
        if not isinstance(predictions, (str, os.PathLike)) and not hasattr(predictions, "name"):
            raise SubmissionRejected("predictions must be a file (gradio_client: handle_file(path))")
        path = Path(predictions if isinstance(predictions, (str, os.PathLike)) else predictions.name)
        try:
            size = path.stat().st_size
        except OSError:
            raise SubmissionRejected("the predictions file could not be read; upload it again") from None
        if size > self.cap:
            raise SubmissionRejected(f"the file is {size:,} bytes ({size / (1024 * 1024):.1f} MiB), over the upload "
                                     f"cap of {self.cap:,} bytes ({self.cap_mib})")
        return path

    def do_submit(self, model_name, view, contract, predictions, organisation, link, provenance_tag,
                  login_name=None):
        """Score and store one upload; the message and JSON result the Submit tab shows. The
        submitter is ``login_name`` (a Space's signed-in user), else this server's configured
        identity (``MAG_BOARD_SUBMITTER``): never a name typed in the form."""
        board = self.board
        try:
            path = self.file_path(predictions)
            sub = board.submit(
                data=path.read_bytes(),
                filename=path.name,
                model_name=model_name,
                view=view,
                contract=contract,
                organisation=organisation or "",
                link=link or "",
                provenance_tag=provenance_tag or "self-reported",
                submitter=login_name or self.board.config.local_submitter,
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
        similar = board.similar_names().get(sub.id)
        if similar is not None:
            other = board.get(similar)
            msg += (f" Note: its model name reads like #{similar}'s ({other.model_name!r}, another submitter's); "
                    f"the board marks the row with ≈#{similar}.")
        return msg, {"ok": True, "rank": row.rank, "similar_to": similar, **sub.public_dict()}

    def submit(self, model_name, view, contract, predictions, organisation, link, provenance_tag):
        return self.do_submit(model_name, view, contract, predictions, organisation, link, provenance_tag)

    def validate(self, view, contract, predictions):
        try:
            path = self.file_path(predictions)
            out = self.board.validate(data=path.read_bytes(), filename=path.name, view=view, contract=contract)
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

    def refresh(self, som_filter, coord_filter, current=None):
        board = self.board
        try:
            rows = {"som": ranked_rows(board, View.SOM.value, som_filter),
                    "coord": ranked_rows(board, View.COORD.value, coord_filter)}
        except SubmissionRejected as e:
            rows = {"error": str(e)}
        choices = submission_choices(board)
        keep = current if parse_id(current) is not None and str(current) in {v for _, v in choices} else None
        return (table_html(board, View.SOM.value, som_filter), table_html(board, View.COORD.value, coord_filter),
                rows, gr.Dropdown(choices=choices, value=keep), gold_banner(board))

    def _chosen(self, choice: Any):
        sid = parse_id(choice)
        return self.board.get(sid) if sid is not None else None

    def _refused(self, what: str, request: Any) -> str | None:
        """The refusal message when ``request`` is over a rate limit of ``what``, else None (counted)."""
        wait = self.limits[what].acquire(client_key(request))
        if wait is None:
            return None
        lim = self.limits[what]
        return refusal(what, wait, lim.per_client, lim.overall)

    def details(self, choice, request: gr.Request | None = None):
        board = self.board
        sub = self._chosen(choice)
        if sub is None:
            return self.empty_details
        refused = self._refused("details", request)
        if refused:
            return (refused, "", "", None, gr.Dropdown(choices=[], value=None))
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
        path = self.report_dir / f"submission-{sub.id}-report.json"
        if not path.exists():
            atomic_write(path, json.dumps(public, ensure_ascii=False, indent=2) + "\n")
        bars = "".join(breakdown_html(public, k) for k in BREAKDOWN_TITLES)
        others = [(label, v) for label, v in submission_choices(board)
                  if v != str(sub.id) and board.get(int(v)).view == sub.view]
        return info, bars, taxonomy_html(public), str(path), gr.Dropdown(choices=others, value=None)

    def eval_results_download(self, choice):
        """The submission's ``.eval_results`` YAML for the model's Hub repo (``mag score --eval-results``'s file)."""
        from mag_dataset.hub_eval import DEFAULT_DATASET_ID, EvalFileError, eval_results_file

        sub = self._chosen(choice)
        if sub is None:
            return None
        gold_src = self.board.config.gold
        hub_gold = gold_src is not None and not Path(gold_src).exists()  # a Hub repo id, not a folder
        try:
            name, text = eval_results_file(sub.report, dataset_id=gold_src if hub_gold else DEFAULT_DATASET_ID,
                                           split=self.board.gold.split)
        except EvalFileError:  # e.g. a train-split board: no benchmark task to report against
            return None
        path = self.report_dir / f"eval-results-{sub.id}" / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
        return str(path)

    def compare(self, a_text, b_text, request: gr.Request | None = None):
        ids = [parse_id(t) for t in (a_text, b_text)]
        if any(i is None for i in ids):
            return "Give the ids of two submissions of the same view (e.g. 3 and 7)."
        refused = self._refused("compare", request)
        if refused:
            return refused
        from mag_dataset.compare import format_comparison

        try:
            return format_comparison(self.board.compare(ids[0], ids[1]))
        except SubmissionRejected as e:
            return str(e)

    def open_row(self, evt: gr.SelectData):
        sid = parse_id(evt.value)
        return gr.Tabs(selected="details"), gr.Dropdown(value=str(sid) if sid is not None else None)


class SpaceHandlers(Handlers):
    """:class:`Handlers` on a Space: the submitter is the Hugging Face login."""

    def submit(self, model_name, view, contract, predictions, organisation, link, provenance_tag,
               profile: gr.OAuthProfile | None, oauth_token: gr.OAuthToken | None = None):
        # In the browser the login comes from the session; a script passes its Hugging Face
        # token with gradio_client's Client(..., oauth_token=...), resolved to its user here.
        login = profile.username if profile is not None else login_from_token(oauth_token)
        if not login:
            return ("Rejected: sign in with Hugging Face to submit (from a script: "
                    "Client(..., oauth_token=<your HF token>))", {"ok": False, "error": "not signed in"})
        return self.do_submit(model_name, view, contract, predictions, organisation, link, provenance_tag,
                              login_name=login)
