"""The Gradio app's glue in-process (no server): endpoint table, the Space login path,
table rows and the Details outputs, on hand-built gold with the real scorer."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mag_dataset.actions import Contract, View
from mag_dataset.board import Board, BoardConfig

from test_leaderboard_board import IDS, gold, jsonl  # noqa: F401 - shared hand-built gold

ROOT = Path(__file__).resolve().parents[1]


def load_app():
    spec = importlib.util.spec_from_file_location("mag_leaderboard_app_under_test", ROOT / "leaderboard" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def app():
    return load_app()


def endpoints(demo) -> dict[str, object]:
    return {fn.api_name: fn for fn in demo.fns.values() if fn.api_name and fn.api_visibility == "public"}


def write(tmp_path: Path, data: bytes, name: str = "preds.jsonl") -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_endpoints_and_submit_parameters(app, tmp_path: Path) -> None:
    demo = app.build_app(Board(BoardConfig(data_dir=tmp_path), gold=gold()))
    eps = endpoints(demo)
    assert sorted(eps) == ["compare", "details", "leaderboard", "leaderboard_after_submit", "submit", "validate"]
    # the UI-only steps (row click -> Details, the Result box's colour, the Details tab's
    # .eval_results download of the chosen submission) are not API endpoints
    private = sorted(fn.name for fn in demo.fns.values() if fn.api_visibility == "private")
    assert private == ["eval_results_download", "open_row", "open_row", "style_status", "style_status"], private
    assert all(fn.api_visibility == "public" for fn in eps.values())
    info = demo.get_api_info()["named_endpoints"]["/submit"]["parameters"]
    names = [p["parameter_name"] for p in info]
    assert names == ["model_name", "view", "contract", "predictions", "organisation", "link", "provenance_tag"]
    required = [p["parameter_name"] for p in info if not p["parameter_has_default"]]
    assert sorted(required) == ["contract", "model_name", "predictions", "view"] or sorted(required) == ["model_name", "predictions"]


def test_space_login_name_is_the_submitter(app, tmp_path: Path, monkeypatch) -> None:
    import gradio as gr

    monkeypatch.setenv("SPACE_ID", "mag/webmre-leaderboard")
    monkeypatch.setenv("OAUTH_CLIENT_ID", "client-id")
    monkeypatch.setenv("SYSTEM", "spaces")  # what gradio.utils.get_space() reads
    # what a Space with `hf_oauth: true` provides (gradio reads them at import); nothing is fetched
    import gradio.oauth

    for name, value in (("OAUTH_CLIENT_ID", "client-id"), ("OAUTH_CLIENT_SECRET", "secret"),
                        ("OAUTH_SCOPES", "openid profile"), ("OPENID_PROVIDER_URL", "https://huggingface.co")):
        monkeypatch.setattr(gradio.oauth, name, value)
    board = Board(BoardConfig(data_dir=tmp_path, daily_cap=1), gold=gold())
    demo = app.build_app(board)
    submit = endpoints(demo)["submit"].fn
    path = write(tmp_path, jsonl())
    msg, result = submit("m", "som", "J", path, "", "", "self-reported", None)
    assert msg.startswith("Rejected: sign in with Hugging Face to submit") and result["ok"] is False
    assert "oauth_token" in msg
    alice = gr.OAuthProfile({"name": "Alice", "preferred_username": "alice", "profile": "", "picture": ""})
    msg, result = submit("m", "som", "J", path, "", "", "self-reported", alice)
    assert msg.startswith("Accepted"), msg
    assert board.get(result["id"]).submitter == "alice"  # the login
    # the cap counts the login: another model name or organisation does not get around it
    msg, _ = submit("m2", "som", "J", write(tmp_path, jsonl(tag="2"), "b.jsonl"), "org2", "", "self-reported", alice)
    assert msg.startswith("Rejected: daily limit reached: 'alice'"), msg

    # a script on the Space: no session, a token passed with Client(..., oauth_token=...) -> its user
    import huggingface_hub

    def whoami(token=None):
        if token != "hf_bob":
            raise huggingface_hub.errors.HfHubHTTPError("401 Unauthorized")
        return {"name": "bob", "type": "user"}

    monkeypatch.setattr(huggingface_hub, "whoami", whoami)
    endpoint_info = demo.get_api_info()["named_endpoints"]["/submit"]
    assert endpoint_info.get("oauth_token") == "optional"  # what makes gradio_client send the token
    assert [p["parameter_name"] for p in endpoint_info["parameters"]][:4] == ["model_name", "view", "contract",
                                                                             "predictions"]
    bad = gr.OAuthToken(token="hf_wrong", scope="", expires_at=0)
    msg, result = submit("m3", "som", "J", write(tmp_path, jsonl(tag="3"), "c.jsonl"), "", "", "self-reported",
                         None, bad)
    assert msg.startswith("Rejected: sign in with Hugging Face") and board.count() == 1
    bob = gr.OAuthToken(token="hf_bob", scope="", expires_at=0)
    msg, result = submit("m3", "som", "J", write(tmp_path, jsonl(tag="3"), "c.jsonl"), "", "", "self-reported",
                         None, bob)
    assert msg.startswith("Accepted"), msg
    assert board.get(result["id"]).submitter == "bob"


def test_local_submit_table_and_details(app, tmp_path: Path) -> None:
    board = Board(BoardConfig(data_dir=tmp_path / "b"), gold=gold())
    demo = app.build_app(board)
    eps = endpoints(demo)
    submit, details = eps["submit"].fn, eps["details"].fn
    msg, result = submit("heur<b>", "som", "J", write(tmp_path, jsonl()), "lab", "https://x.org", "reproduced")
    assert msg.startswith(f"Accepted: submission #{result['id']} (som, contract J) — SAA "), msg
    assert "95% interval" in msg and result["ci95_low"] <= result["saa"] <= result["ci95_high"]
    msg2, result2 = submit("m", "som", "J", None, "", "", "self-reported")
    assert msg2.startswith("Rejected: no predictions file was uploaded (a file over the") and result2["ok"] is False

    rows = app.ranked_rows(board, "som", "all")
    assert len(rows) == 1
    row = rows[0]
    assert (row["rank"], row["model"], row["organisation"], row["provenance"]) == (1, "heur<b>", "lab", "reproduced")
    assert row["ranking_metric"] == "saa" and row["value"] == result["saa"] and row["usefulness"] is None
    assert row["ci95_low"] <= row["value"] <= row["ci95_high"]
    assert app.ranked_rows(board, "som", "A") == [] and app.ranked_rows(board, "coord", "all") == []
    html = app.table_html(board, "som", "all")
    assert "heur&lt;b&gt;" in html and "heur<b>" not in html  # names are text
    assert "ranked by SAA" in html and "95% interval" in html and f'data-id="{result["id"]}"' in html

    info, bars, taxonomy, report, others = details(str(result["id"]))
    assert "heur<b>" in info and "https://x.org" in info
    assert json.loads(Path(report).read_text()) == board.public_report(board.get(result["id"]))
    # hand-built gold: 12 steps in two sites of 6 -> pooled into one group -> the site breakdown is withheld
    assert "<h4>Per site</h4><p class=\"mag-note\">Withheld" in bars
    assert "Error taxonomy" in taxonomy and "correct" in taxonomy
    # the "for your model repo" download: the Hub's .eval_results file, equal to mag score --eval-results's
    from mag_dataset.hub_eval import parse_eval_results

    eval_dl = next(fn.fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "eval_results_download")
    path = Path(eval_dl(str(result["id"])))
    assert path.name == "webmre_som_J.yaml"
    (entry,) = parse_eval_results(path.read_text())
    assert (entry.dataset_id, entry.task_id, entry.value) == ("mag/webmre", "som_J", result["saa"])
    assert eval_dl("") is None and eval_dl("12345") is None
    empty = ("Choose a submission (or click a row of the leaderboard).", "", "", None)
    assert details("")[:4] == empty and details("12345")[:4] == empty
    for junk in ("\u00b2", "9" * 30, "-1", "x1", None):  # an API caller's value: no traceback
        assert details(junk)[:4] == empty, junk


def test_ABOUT_documents_every_metric_and_the_submit_parameters(app) -> None:
    from mag_dataset.board import METRIC_COLUMNS

    about = app.about_text()
    for title in METRIC_COLUMNS.values():
        assert f"| {title} |" in about, title  # a row of the metric table
    for p in ("model_name", "view", "contract", "predictions", "organisation", "link", "provenance_tag"):
        assert f"`{p}`" in app.ABOUT, p
    for c in Contract:
        assert f"| {c.value} |" in app.ABOUT
    assert json.loads(app.ABOUT.split("```json\n", 1)[1].split("\n```", 1)[0])["step_id"]
    assert View.SOM.value in app.ABOUT and View.COORD.value in app.ABOUT


def test_about_metric_rules_are_the_scorers_declaration(app) -> None:
    """The About tab's metric rules are the scorer's ``METRIC_TABLE`` as declared (the same
    Markdown table as the README's), and its action-space lists come from ``ACTION_SPACE``."""
    import re

    import mag_dataset.scoring as scoring
    from mag_dataset.actions import ACTION_SPACE
    from mag_dataset.scoring import METRIC_TABLE, metric_table_markdown

    about = app.about_text()
    assert re.findall(r"\{[a-z_]+\}", about) == []  # every placeholder filled
    metrics = about.split("### Metrics (exact rules)", 1)[1].split("### Predictions file", 1)[0]
    assert metric_table_markdown() in metrics
    rows = [line for line in metrics.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [m.name for m in METRIC_TABLE]  # each metric once, in order
    for m, row in zip(METRIC_TABLE, rows):
        assert f"| {m.title} |" in row, m.name
    assert len(METRIC_TABLE) >= 11, "the scorer declares fewer metrics than the papers' nine and two extensions"
    notes = {b.split("**", 2)[1]: " ".join(b.split()) for b in metrics.split("\n* ")[1:]}
    assert sorted(notes) == sorted(["The format gate", "Targets", "Argument normalisation", "usefulness", "Extensions"])
    assert "stays in every denominator" in notes["The format gate"]
    assert "unjudged" in notes["usefulness"] and "never computed by calling a model" in notes["usefulness"]
    assert "NFKC" in scoring.normalize_arg.__doc__ and "NFKC" in notes["Argument normalisation"]
    for t, spec in ACTION_SPACE.items():
        if spec.targeted:
            assert f"`{t.value}`" in notes["Targets"], t
        for arg in spec.args:
            if arg.scored:
                assert f"`{arg.name}` (" in notes["Argument normalisation"] and t.value in notes["Argument normalisation"]
    for m in METRIC_TABLE:
        assert (m.title in notes["Extensions"]) == m.extension, m.name
    doc = " ".join(scoring.__doc__.split())
    assert "micro mean over steps" in metrics and "micro mean" in doc
    # the ranking order, as the board's one rule (RANK_COLUMNS, which rank_key sorts by) declares it
    from mag_dataset.board import METRIC_COLUMNS
    from mag_dataset.board.ranking import RANK_COLUMNS

    sentence = " ".join(about.split()).split("Ranking is within a view and contract: ", 1)[1].split("; a blank", 1)[0]
    said = {}
    for title, contracts, ties in re.findall(r"by \*\*(.+?)\*\* for ([A-Z, and]+?) \((?:ties broken by |then )(.+?)\)",
                                            sentence):
        for c in contracts.replace(" and ", ", ").split(", "):
            said[c] = (title, *ties.split(", then "))
    assert said == {c.value: tuple(METRIC_COLUMNS[m] for m in RANK_COLUMNS[c]) for c in Contract}, sentence


def test_about_worked_example_is_scored_by_the_library(app) -> None:
    ex = app.scoring_example()
    row = [line for line in ex.splitlines() if line.startswith("| ") and not line.startswith("| SAA")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert len(cells) == 9 and cells[:5] == ["1", "1", "1", "1", "1"] and cells[-1] == "n/a"
    assert all(0 < float(c) < 1 for c in cells[5:8])  # partial guide overlap


def test_handler_checks_the_size_cap_before_reading(app, tmp_path: Path) -> None:
    board = Board(BoardConfig(data_dir=tmp_path / "b", max_bytes=1000), gold=gold())
    submit = endpoints(app.build_app(board))["submit"].fn
    msg, result = submit("m", "som", "J", write(tmp_path, b"x" * 1001), "", "", "self-reported")
    assert msg.startswith("Rejected: the file is 1,001 bytes (0.0 MiB), over the upload cap of 1,000 bytes (")
    assert not result["ok"]
    assert board.count() == 0


@pytest.mark.parametrize(
    "env, message",
    [({"MAG_BOARD_MAX_MB": "0"}, "must be positive"), ({"MAG_BOARD_GOLD": "/nonexistent/gold"}, "gold dataset folder not found")],
)
def test_bad_configuration_is_one_line_not_a_traceback(app, monkeypatch, tmp_path, capsys, env, message):
    monkeypatch.setenv("MAG_BOARD_DIR", str(tmp_path / "data"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert app.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("leaderboard: error: ") and message in err and "Traceback" not in err


def test_space_repo_carries_the_app_modules(tmp_path: Path) -> None:
    """The Space's files (``mag publish``'s plan) hold app.py's own modules: in a folder laid out
    like the Space repo, app.py imports its lb_*.py modules from beside itself."""
    import subprocess
    import sys

    from mag_dataset.publish import space_plan

    plan = space_plan("leaderboard", "me/board")
    for f in plan.files:
        (tmp_path / f.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f.path).write_bytes(f.data)
    modules = sorted(p.name for p in (ROOT / "leaderboard").glob("lb_*.py"))
    assert len(modules) >= 4 and all((tmp_path / r).is_file() for r in modules), modules
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('space_app', 'app.py'); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "print(*sorted(sys.modules[n].__file__ for n in sys.modules if n.startswith('lb_')), sep='\\n')")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert sorted(Path(p).name for p in out.stdout.split()) == modules
    assert all(Path(p).parent == tmp_path for p in out.stdout.split()), out.stdout


def test_the_report_copies_folder_goes_with_the_handlers(app, tmp_path: Path) -> None:
    """Details writes downloadable copies into a temporary folder of its own: it is removed with
    the handlers, and when the server's process exits (each server used to leave one behind)."""
    import gc
    import subprocess
    import sys

    h = app.Handlers(Board(BoardConfig(data_dir=tmp_path / "a"), gold=gold()))
    folder = h.report_dir
    assert folder.is_dir()
    del h
    gc.collect()
    assert not folder.exists()
    code = ("import importlib.util, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1] + '/tests'); "
            "spec = importlib.util.spec_from_file_location('app', sys.argv[1] + '/leaderboard/app.py'); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "from mag_dataset.board import Board, BoardConfig; from test_leaderboard_board import gold; "
            "keep = m.Handlers(Board(BoardConfig(data_dir=Path(sys.argv[2])), gold=gold())); print(keep.report_dir)")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT), str(tmp_path / "b")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    left = Path(out.stdout.strip().splitlines()[-1])
    assert left.name.startswith("mag-board-reports-") and not left.exists()


def test_shared_ranks_are_marked_in_the_table_not_only_in_a_tooltip(app, tmp_path: Path) -> None:
    """Issue 27: ties lived only in a hover tooltip, which phones never show."""
    board = Board(BoardConfig(data_dir=tmp_path / "b", daily_cap=100), gold=gold())
    a = board.submit(data=jsonl(tag="a"), filename="a.jsonl", model_name="a", view="som", contract="J")
    b = board.submit(data=jsonl(tag="b"), filename="b.jsonl", model_name="b", view="som", contract="J")
    html = app.table_html(board, "som", "all")
    for sub in (a, b):  # the same scores: one shared rank, marked "=1" in both rows, and a legend
        row = html.split(f'data-id="{sub.id}"', 1)[1].split("</tr>", 1)[0]
        assert '<td class="c-rank tie" data-v="1"' in row and '<span class="mag-tie" aria-label="shared rank">=</span>1' in row
    assert html.count('class="mag-tie-legend"') == 1 and "a shared rank, no significant paired difference" in html
    alone = Board(BoardConfig(data_dir=tmp_path / "c", daily_cap=100), gold=gold())
    alone.submit(data=jsonl(tag="a"), filename="a.jsonl", model_name="a", view="som", contract="J")
    assert "mag-tie" not in app.table_html(alone, "som", "all")


def test_the_banner_names_a_hidden_gold_by_its_hub_id_never_by_its_server_path(app, tmp_path: Path) -> None:
    from mag_dataset.board import Gold

    steps = gold().steps
    secret = tmp_path / "secret-gold"
    secret.mkdir()
    local = app.gold_banner(Board(BoardConfig(data_dir=tmp_path / "a"), gold=Gold(str(secret), "test", steps)))
    assert str(secret) not in local and "secret-gold" not in local and "a private folder on the server" in local
    hub = app.gold_banner(Board(BoardConfig(data_dir=tmp_path / "b"), gold=Gold("mag/webmre-hidden", "test", steps)))
    assert "mag/webmre-hidden" in hub and "hidden test split" in hub


def test_a_model_with_a_link_is_a_link_that_leaves_the_page_safely(app, tmp_path: Path) -> None:
    board = Board(BoardConfig(data_dir=tmp_path / "b", daily_cap=100), gold=gold())
    board.submit(data=jsonl(tag="a"), filename="a.jsonl", model_name="m<1>", view="som", contract="J",
                 link='https://example.org/m?a=1&b=2')
    board.submit(data=jsonl(tag="b"), filename="b.jsonl", model_name="plain", view="som", contract="J")
    html = app.table_html(board, "som", "all")
    assert ('<a href="https://example.org/m?a=1&amp;b=2" target="_blank" '
            'rel="noopener noreferrer nofollow ugc">m&lt;1&gt;</a>') in html
    assert '<td class="c-model txt">plain</td>' in html
