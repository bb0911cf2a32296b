"""The leaderboard Space end to end: the real server (``python leaderboard/app.py``) in a
subprocess on 127.0.0.1, driven with ``gradio_client`` and a real headless Chromium.

One server is shared by the whole module (started once, restarted once by the
persistence test); its gold is the default one, the bundled sample corpus' test split.
Tests that add rows count relative to what is already there, so their order is free.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mag_dataset.actions import Contract, View
from mag_dataset.prompts import render_target

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "leaderboard" / "app.py"
METRICS = ("saa", "target_acc", "action_type_acc", "text_f1", "ofcr", "bleu1", "bleu4", "rouge_l", "usefulness")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A leaderboard subprocess on a free port with its own data folder."""

    def __init__(self, data_dir: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir, self.log, self.env = data_dir, log, dict(env or {})
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, via_cli: bool = False) -> None:
        """Start ``python leaderboard/app.py``, or with ``via_cli`` ``mag leaderboard serve``."""
        env = dict(os.environ)
        env.update({
            "MAG_BOARD_DIR": str(self.data_dir),
            "MAG_BOARD_DAILY_CAP": "1000",
            "MAG_BOARD_MAX_MB": "1",
            "MAG_BOARD_MAX_LINES": "5000",
            "GRADIO_ANALYTICS_ENABLED": "False",
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        })
        env.update(self.env)
        env.pop("SPACE_ID", None)
        with open(self.log, "ab") as log:
            cmd = ([sys.executable, "-m", "mag_dataset.cli", "leaderboard", "serve"] if via_cli
                   else [sys.executable, str(APP)])
            self.proc = subprocess.Popen([*cmd, "--port", str(self.port)], cwd=ROOT,
                                         env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}):\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/config", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the server did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> int | None:
        """Stop the server as a service manager does (SIGTERM); its exit code."""
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
            try:
                code = self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        return code

    def client(self):
        from gradio_client import Client

        return Client(self.url, verbose=False, download_files=str(self.data_dir.parent / "downloads"))


@pytest.fixture(scope="module")
def gold_dir() -> Path:
    from mag_dataset.dataset import bundled_dataset

    return Path(os.environ.get("MAG_BOARD_GOLD") or bundled_dataset())


@pytest.fixture(scope="module")
def gold(gold_dir: Path) -> dict[View, list]:
    from mag_dataset.dataset import load_steps

    steps = {v: load_steps(gold_dir, v.value, "test") for v in View}
    assert len(steps[View.SOM]) >= 10 and [s.step_id for s in steps[View.SOM]] == [s.step_id for s in steps[View.COORD]]
    return steps


@pytest.fixture(scope="module")
def server(tmp_path_factory, gold_dir: Path):
    root = tmp_path_factory.mktemp("board")
    # every request of this module comes from 127.0.0.1: Details unlimited, three comparisons a minute
    # (test_compare_is_rate_limited_per_user_with_a_one_line_refusal runs into it)
    (root / "tmp").mkdir()  # the server's own temporary folder: what it leaves behind is seen
    srv = Server(root / "data", root / "server.log", env={"MAG_BOARD_DETAILS_PER_MIN": "0",
                                                        "MAG_BOARD_COMPARE_PER_MIN": "3",
                                                        "TMPDIR": str(root / "tmp")})
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server: Server):
    return server.client()


def predictions_file(path: Path, steps, view: View, contract: Contract, tag: str = "") -> Path:
    """Gold answers on two steps in three, a format failure on the rest (a realistic mix)."""
    lines = []
    for i, step in enumerate(steps):
        out = render_target(step, view, contract) if i % 3 else f"I would click something {tag}"
        lines.append(json.dumps({"step_id": step.step_id, "output": out}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def table(client, view: View = View.SOM, contract: str = "all") -> list[dict]:
    """The leaderboard endpoint's ranked rows of one view (full precision, with intervals)."""
    _som_html, _coord_html, rows, _choice, _gold = client.predict(contract, contract, api_name="/leaderboard")
    return rows[view.value]


table_of = table  # the tests below name their Playwright locator `table`


def n_rows(client) -> int:
    return len(table(client, View.SOM)) + len(table(client, View.COORD))


def submit(client, path: Path, **kw):
    from gradio_client import handle_file

    args = {"model_name": "test-model", "view": "som", "contract": "J"}
    args.update(kw)
    return client.predict(predictions=handle_file(str(path)), api_name="/submit", **args)


# ----------------------------------------------------------------------------- submitting


def test_good_file_gives_a_ranked_row_with_the_scores_mag_score_gives(server, client, gold, gold_dir, tmp_path):
    from mag_dataset.heuristic import heuristic_predictions
    from mag_dataset.predictions import write_predictions

    # the real no-model baseline's predictions, as `python -m baselines.heuristic` writes them
    path = write_predictions(tmp_path / "preds.jsonl", heuristic_predictions(gold[View.SOM], "som", "J"))
    report_path = tmp_path / "mag-score.json"
    cli = subprocess.run(
        [sys.executable, "-m", "mag_dataset.cli", "score", "--predictions", str(path), "--dataset", str(gold_dir),
         "--view", "som", "--contract", "J", "--out", str(report_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(report_path.read_text())

    message, result = submit(client, path, model_name="heuristic-J", organisation="lab", link="https://example.org/h")
    assert message.startswith("Accepted: submission #"), message
    assert result["ok"] is True and result["rank"] >= 1
    for m in METRICS:
        want = expected[m]["micro"]
        assert result[m] == want, m
    assert 0 < result["saa"] < 1 and result["usefulness"] is None

    rows = [r for r in table(client, View.SOM, "J") if r["id"] == result["id"]]
    assert len(rows) == 1
    row = rows[0]
    assert (row["model"], row["organisation"], row["contract"], row["seeds"]) == ("heuristic-J", "lab", "J", 1)
    assert row["rank"] == result["rank"] and row["ranking_metric"] == "saa"
    assert [row["ci95_low"], row["ci95_high"]] == expected["saa"]["ci95"]
    for m in METRICS:
        assert row[m] == expected[m]["micro"], m

    # the downloadable report is `mag score`'s, its breakdowns cut to the granularity rule
    from mag_dataset.board import MIN_GROUP_STEPS
    from mag_dataset.board.granularity import public_report

    info, bars, taxonomy, report_file, _others = client.predict(str(result["id"]), api_name="/details")
    public = json.loads(Path(report_file).read_text())
    assert public == public_report(expected)
    assert {k: public[k] for k in METRICS} == {k: expected[k] for k in METRICS}
    assert f"#{result['id']} heuristic-J" in info
    assert "<h4>Per site</h4>" in bars and "<h4>Per gold action type</h4>" in bars and "Error taxonomy" in taxonomy
    for groups in public["breakdowns"].values():
        assert all(g["gold_steps"] >= MIN_GROUP_STEPS for g in groups.values())


def test_gzip_and_parquet_uploads_through_the_server(server, client, gold, tmp_path):
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    plain = predictions_file(tmp_path / "fmt.jsonl", gold[View.SOM], View.SOM, Contract.G, tag="fmt")
    gz = tmp_path / "fmt.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    pqt = tmp_path / "fmt.parquet"
    pq.write_table(pa.Table.from_pylist([json.loads(line) for line in plain.read_text().splitlines()]), pqt)
    msg, res = submit(client, plain, contract="G", model_name="format jsonl")
    assert msg.startswith("Accepted"), msg
    for path in (gz, pqt):  # the same predictions in another format: a duplicate of the content
        msg, again = submit(client, path, contract="G", model_name=f"format {path.name}")
        assert msg.startswith("Rejected: the same predictions") and f"(submission #{res['id']})" in msg, msg
        assert again["ok"] is False


BAD = {
    "empty": (b"", "p.jsonl", "the file is empty"),
    "binary": (b"\x00\x01\x02\x03binary\x00", "p.jsonl", "looks binary"),
    "not utf-8": (b'{"step_id": "x", "output": "\xff\xfe"}\n', "p.jsonl", "not UTF-8"),
    "wrong extension": (b'{"step_id": "x", "output": "{}"}\n', "p.txt", "wrong file extension '.txt'"),
    "not json": (b"hello world\n", "p.jsonl", "line 1: not a JSON object"),
    "unknown ids": (b'{"step_id": "no-such-step:0", "output": "{}"}\n', "p.jsonl", "line 1: unknown step_id 'no-such-step:0'"),
    "too many lines": (b'{"step_id": "x", "output": "{}"}\n' * 5001, "p.jsonl", "too many lines"),
    "over the cap": (b'{"step_id": "x", "output": "' + b"a" * (1024 * 1024) + b'"}\n', "p.jsonl", "upload cap"),
}


def test_each_bad_file_gets_its_message_and_no_row(server, client, gold, tmp_path):
    ids = [s.step_id for s in gold[View.SOM]]
    cases = dict(BAD)
    good = [json.dumps({"step_id": i, "output": "{}"}) for i in ids]
    cases["missing ids"] = (("\n".join(good[:-1]) + "\n").encode(), "p.jsonl", "1 step id(s) have no prediction")
    cases["duplicate ids"] = (("\n".join(good + good[:1]) + "\n").encode(), "p.jsonl",
                              f"line {len(ids) + 1}: duplicate step_id {ids[0]!r}")
    before = n_rows(client)
    seen = 0
    for case, (data, name, expected) in cases.items():
        path = tmp_path / case.replace(" ", "_") / name
        path.parent.mkdir()
        path.write_bytes(data)
        try:
            message, result = submit(client, path, model_name=f"bad {case}")
        except Exception as e:  # the server's own max_file_size guard refuses the over-cap upload
            assert case == "over the cap", (case, e)
            assert re.search(r"too large|exceeds|maximum|413", str(e), re.I), str(e)
            seen += 1
            continue
        assert case != "over the cap", "launch(max_file_size=...) did not refuse the upload"
        assert message.startswith("Rejected: ") and expected in message, (case, message)
        assert result == {"ok": False, "error": message[len("Rejected: "):]}
        seen += 1
    assert seen == len(cases) == 10
    assert n_rows(client) == before
    files = [p for p in (server.data_dir / "files").rglob("*") if p.is_file()]
    assert all(not p.name.startswith(".") for p in files)  # no half-written temp files left


def test_forty_concurrent_submissions_give_forty_rows(server, client, gold, tmp_path):
    steps = gold[View.SOM]
    paths = [predictions_file(tmp_path / f"c{i}.jsonl", steps, View.SOM, Contract.A, tag=str(i)) for i in range(40)]
    before = len(table(client, View.SOM, "A"))
    from gradio_client import handle_file

    t0 = time.perf_counter()
    jobs = [client.submit(model_name=f"concurrent-{i}", view="som", contract="A", predictions=handle_file(str(p)),
                          api_name="/submit") for i, p in enumerate(paths)]
    results = [job.result(timeout=300) for job in jobs]
    elapsed = time.perf_counter() - t0
    assert all(msg.startswith("Accepted") for msg, _ in results), [m for m, _ in results if not m.startswith("Accepted")]
    rows = table(client, View.SOM, "A")
    assert len(rows) == before + 40
    assert {f"concurrent-{i}" for i in range(40)} <= {r["model"] for r in rows}
    assert len({r["id"] for r in rows}) == len(rows)
    print(f"40 concurrent submissions in {elapsed:.1f} s")


# ----------------------------------------------------------------------------- no gold leaks


def _gold_strings(gold) -> set[str]:
    out = set()
    for view, steps in gold.items():
        for s in steps:
            out.add(s.guide)
            for c in Contract:
                out.add(render_target(s, view, c))
            for arg in (s.action.text, s.action.value, s.action.url):
                if arg and len(arg) >= 6:
                    out.add(arg)
    return {g for g in out if g}


def _strip_images(obj):
    if isinstance(obj, dict):
        if obj.get("type") in ("matplotlib", "altair", "plotly", "bokeh") and "plot" in obj:
            return {"type": obj["type"], "plot": "<image>"}
        return {k: _strip_images(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_strip_images(v) for v in obj]
    return obj


def test_every_api_endpoint_is_listed_called_and_returns_no_gold(server, client, gold, gold_dir, tmp_path):
    deps = client.config["dependencies"]
    with_fn = [d for d in deps if d.get("backend_fn") and d.get("api_visibility", "public") != "private"]
    assert with_fn, "no endpoints found"
    assert all(d.get("api_name") for d in with_fn), with_fn
    # the only private steps are UI-only: a row click that opens Details, the Result box's colour,
    # the Details tab's .eval_results download of the chosen submission
    private = [d for d in deps if d.get("backend_fn") and d.get("api_visibility") == "private"]
    assert len(private) == 5, private
    assert all(re.sub(r"_\d+$", "", d["api_name"]) in ("open_row", "style_status", "eval_results_download")
               for d in private), private
    names = sorted({d["api_name"] for d in with_fn})
    assert names == ["compare", "details", "leaderboard", "leaderboard_after_submit", "submit", "validate"], names
    listed = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert sorted(n.lstrip("/") for n in listed) == names

    secrets = _gold_strings(gold)
    assert len(secrets) > len({s.guide for s in gold[View.SOM]}) >= 3
    steps = gold[View.SOM]
    path = predictions_file(tmp_path / "leak.jsonl", steps, View.SOM, Contract.JG, tag="leak")
    outputs = []
    calls = 0
    # submit: accepted, duplicate, and rejections that quote the file
    for args in ({"contract": "JG"}, {"contract": "JG"}, {"contract": "G", "view": "coord"}):
        outputs.append(submit(client, path, model_name="leak-check", **args))
        calls += 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"step_id": steps[0].step_id, "output": "{}"}) + "\n" + "{not json\n")
    outputs.append(submit(client, bad, model_name="leak-bad"))
    calls += 1
    for name in ("leaderboard", "leaderboard_after_submit"):
        for f in ["all"] + [c.value for c in Contract]:
            outputs.append(client.predict(f, f, api_name=f"/{name}"))
            calls += 1
    all_ids = [r["id"] for v in View for r in table(client, v)]
    # one submission of every (view, contract) on the board, plus a spread of the rest
    firsts = {(v, r["contract"]): r["id"] for v in View for r in table(client, v)}
    ids = sorted(set(firsts.values()) | set(all_ids[:: max(1, len(all_ids) // 6)]))
    assert ids
    for sid in [*ids, 999999, "", "not-a-number"]:
        res = client.predict(str(sid), api_name="/details")
        calls += 1
        outputs.append(res)
        if res[3]:
            outputs.append(Path(res[3]).read_text(encoding="utf-8"))
    assert calls == 3 + 1 + 2 * 5 + len(ids) + 3
    text = json.dumps(_strip_images(outputs), ensure_ascii=False)
    leaked = [g for g in secrets if g in text or json.dumps(g, ensure_ascii=False)[1:-1] in text]
    assert leaked == []

    # nor are the database, the stored uploads or the gold files served by gradio's file route
    private = [server.data_dir / "board.sqlite", *sorted((server.data_dir / "files").rglob("*.jsonl"))[:1],
               *sorted(Path(gold_dir).rglob("*.parquet"))[:1]]
    assert len(private) == 3
    for p in private:
        for ref in (str(p), os.path.relpath(p, ROOT)):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(f"{server.url}/gradio_api/file={ref}", timeout=10)
            assert e.value.code in (403, 404), (ref, e.value.code)


# ----------------------------------------------------------------------------- persistence and re-scoring


def test_rescore_command_reproduces_every_report_byte_for_byte(server, client, gold, tmp_path):
    steps = gold[View.COORD]
    for c in Contract:  # at least one submission of every contract in the coord view
        msg, _ = submit(client, predictions_file(tmp_path / f"r{c.value}.jsonl", steps, View.COORD, c, tag="r"),
                        view="coord", contract=c.value, model_name=f"rescore-{c.value}")
        assert msg.startswith("Accepted"), msg
    total = n_rows(client)
    env = dict(os.environ, MAG_BOARD_DIR=str(server.data_dir))
    out = subprocess.run([sys.executable, "-m", "mag_dataset.cli", "leaderboard", "rescore"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{total}/{total} stored reports reproduced byte for byte" in out.stdout
    assert len(re.findall(r"^#\d+: identical$", out.stdout, re.M)) == total


def test_rows_survive_a_server_restart(server, client):
    before_som, before_coord = table(client, View.SOM), table(client, View.COORD)
    assert before_som or before_coord
    tmp = Path(server.env["TMPDIR"])
    assert list(tmp.glob("mag-board-reports-*"))  # Details' downloadable copies go there
    assert server.stop() == 0  # SIGTERM closes the server as Ctrl-C does ...
    assert not list(tmp.glob("mag-board-reports-*"))  # ... and the reports folder goes with it
    server.start(via_cli=True)  # the same data, now through `mag leaderboard serve`
    after = server.client()
    assert table(after, View.SOM) == before_som
    assert table(after, View.COORD) == before_coord


# ----------------------------------------------------------------------------- API misuse, integrity


def test_api_misuse_returns_rejected_not_an_error(server, client, gold, tmp_path):
    path = predictions_file(tmp_path / "misuse.jsonl", gold[View.SOM], View.SOM, Contract.J, tag="misuse")
    before = n_rows(client)
    cases = {
        "view": ({"view": "grid"}, "view must be one of som, coord, got 'grid'"),
        "contract": ({"contract": "Z"}, "contract must be one of A, G, J, JG, got 'Z'"),
        "provenance": ({"provenance_tag": "bogus"}, "provenance tag must be one of"),
        "no file": ({"predictions": None}, "no predictions file was uploaded"),
        "no model": ({"model_name": ""}, "model name is required"),
        "bad link": ({"link": "javascript:alert(1)"}, "link must be an http:// or https:// URL"),
    }
    from gradio_client import handle_file

    for case, (kw, expected) in cases.items():
        args = {"model_name": "misuse", "view": "som", "contract": "J", "predictions": handle_file(str(path))}
        args.update(kw)
        message, result = client.predict(api_name="/submit", **args)
        assert message.startswith("Rejected: ") and expected in message, (case, message)
        assert result == {"ok": False, "error": message[len("Rejected: "):]}, case
    message, result = client.predict("grid", "J", handle_file(str(path)), api_name="/validate")
    assert message == "Rejected: view must be one of som, coord, got 'grid'" and result["ok"] is False
    assert n_rows(client) == before


def test_near_empty_and_wrong_contract_files_are_rejected_with_their_reason(server, client, gold, tmp_path):
    steps = gold[View.SOM]
    n = len(steps)
    near_empty = tmp_path / "near-empty.jsonl"
    near_empty.write_text("\n".join(
        [json.dumps({"step_id": steps[0].step_id, "output": render_target(steps[0], View.SOM, Contract.J)})]
        + [json.dumps({"step_id": s.step_id, "output": ""}) for s in steps[1:]]) + "\n")
    message, _ = submit(client, near_empty, model_name="near-empty")
    assert message == (f"Rejected: {n - 1:,} of {n:,} outputs ({(n - 1) / n:.1%}) fail the format gate of view som, "
                       "contract J: the board accepts at most 50% format failures"), message
    wrong = tmp_path / "contract-j.jsonl"
    wrong.write_text("\n".join(json.dumps({"step_id": s.step_id, "output": render_target(s, View.SOM, Contract.J)})
                               for s in steps) + "\n")
    message, _ = submit(client, wrong, contract="A", model_name="wrong-contract")
    assert message.startswith(f"Rejected: the outputs parse better under view som, contract J ({n:,} of {n:,} pass its "
                              f"format gate) than under the declared view som, contract A (0 of {n:,})"), message
    from gradio_client import handle_file

    message, result = client.predict("som", "A", handle_file(str(wrong)), api_name="/validate")
    assert message.startswith("Rejected (validate only, nothing stored): the outputs parse better under view som, "
                              "contract J"), message
    message, result = client.predict("som", "J", handle_file(str(wrong)), api_name="/validate")
    assert message.startswith("Valid (nothing stored, no score)") and result["ok"] is True, message
    assert result["predictions"] == result["steps_expected"] == n and "saa" not in result
    assert not [r for r in table(client, View.SOM) if r["model"] in ("near-empty", "wrong-contract")]


def test_leaderboard_endpoint_gives_interval_bounds_for_every_ranked_row(server, client, gold, tmp_path):
    for c in (Contract.A, Contract.G):  # at least one row of a contract with an action, and of G
        msg, _ = submit(client, predictions_file(tmp_path / f"ci{c.value}.jsonl", gold[View.SOM], View.SOM, c, tag="ci"),
                        contract=c.value, model_name=f"ci-{c.value}")
        assert msg.startswith("Accepted"), msg
    rows = [r for v in View for r in table(client, v)]
    assert {r["ranking_metric"] for r in rows} == {"saa", "bleu1"}
    for r in rows:
        assert r["ranking_metric"] == ("bleu1" if r["contract"] == "G" else "saa")
        assert r["value"] == r[r["ranking_metric"]]
        assert isinstance(r["ci95_low"], float) and isinstance(r["ci95_high"], float), r
        assert r["ci95_low"] <= r["value"] <= r["ci95_high"], r
        assert r["rank"] == 1 + len(r["beaten_by"])


# ----------------------------------------------------------------------------- real browser

# Every text field gets an event-handler payload (the kind that runs when inserted as HTML),
# plus a <script> or javascript: one; the link field's javascript: URL must be refused.
XSS = {
    "model-name": '<img src=x onerror="window.__xss=1"> javascript:window.__xss=1',
    "organisation": '<script>window.__xss=2</script><img src=x onerror="window.__xss=2">',
    "link": "javascript:window.__xss=4",
}


DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}


class _Browser:
    """A headless Debian Chromium through the process's one sync Playwright (conftest.process_playwright)."""

    def __init__(self, chromium: str) -> None:
        from conftest import process_playwright

        self.browser = process_playwright().chromium.launch(
            executable_path=chromium,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        self.dialogs: list[str] = []

    def page(self, url: str, viewport: dict):
        page = self.browser.new_page(viewport=viewport)
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#table-som").wait_for(timeout=60_000)
        return page

    def close(self) -> None:
        self.browser.close()


@pytest.fixture()
def web(chromium):
    b = _Browser(chromium)
    yield b
    b.close()
    assert b.dialogs == []


def _column(page, table, title: str) -> list[str]:
    """The cells of one column of a ranked table, in the order shown."""
    return table.evaluate(
        """(t, title) => { const i = [...t.tHead.rows[0].cells].findIndex((c) => c.textContent.trim() === title);
                           return [...t.tBodies[0].rows].map((r) => r.cells[i].textContent.trim()); }""", title)


def _status_class(page) -> str:
    return page.locator("#submit-status").get_attribute("class") or ""


@pytest.mark.browser
@pytest.mark.slow
def test_browser_submit_shows_row_and_details_and_payloads_stay_text(server, gold, tmp_path, web):
    from playwright.sync_api import expect

    path = predictions_file(tmp_path / "browser.jsonl", gold[View.SOM], View.SOM, Contract.J, tag="browser")
    page = web.page(server.url, DESKTOP)
    expect(page.locator("#gold-source")).to_contain_text("public bundled sample")
    expect(page.locator("#gold-source")).to_contain_text(f"som: {len(gold[View.SOM]):,} steps")
    page.get_by_role("tab", name="Submit").click()
    expect(page.locator("#predictions")).to_contain_text("at most 1 MiB")
    # no submitter field: off a Space the server's configured identity submits (MAG_BOARD_SUBMITTER)
    assert page.locator("#submitter").count() == 0
    expect(page.locator("#submitter-note")).to_contain_text("You submit as local")
    for elem, payload in XSS.items():
        page.locator(f"#{elem} textarea, #{elem} input").first.fill(payload)
    page.locator("#predictions input[type=file]").set_input_files(str(path))
    expect(page.locator("#predictions")).to_contain_text("browser", timeout=30_000)
    page.locator("#submit-button").click()
    status = page.locator("#submit-status textarea")
    expect(status).to_have_value(re.compile("Rejected: link must be an http"), timeout=60_000)
    expect(page.locator("#submit-status")).to_have_class(re.compile("status-rejected"), timeout=10_000)
    expect(page.locator("#submit-status")).to_contain_text("Result — rejected")
    rejected_bg = status.evaluate("e => getComputedStyle(e).backgroundColor")

    page.locator("#link textarea, #link input").first.fill("https://example.org/model")
    page.locator("#submit-button").click()
    expect(status).to_have_value(re.compile(r"Accepted: submission #\d+"), timeout=60_000)
    expect(page.locator("#submit-status")).to_have_class(re.compile("status-accepted"), timeout=10_000)
    assert status.evaluate("e => getComputedStyle(e).backgroundColor") != rejected_bg  # they look different
    sub_id = re.search(r"#(\d+)", status.input_value()).group(1)

    page.get_by_role("tab", name="Leaderboard").click()
    som_table = page.locator("#table-som")
    expect(som_table).to_contain_text(XSS["model-name"], timeout=30_000)  # shown as text
    expect(som_table).to_contain_text(XSS["organisation"])
    expect(som_table).to_contain_text("Contract J — ranked by SAA")
    j_table = som_table.locator("table[data-contract=J]")
    assert j_table.locator("tbody tr").count() >= 2
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.__xss") is None
    assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"]').length") == 0

    # Details from a row
    j_table.locator(f"tr[data-id='{sub_id}']").click()
    expect(page.locator("#details-info textarea")).to_have_value(re.compile(re.escape(XSS["model-name"])), timeout=30_000)
    expect(page.get_by_role("tab", name="Details")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#report-file")).to_contain_text(f"submission-{sub_id}-report")
    assert page.evaluate("() => window.__xss") is None


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_browser_header_click_sorts_and_a_row_opens_its_details(server, client, gold, tmp_path, web, viewport):
    from playwright.sync_api import expect

    steps = gold[View.SOM]
    for i in (3, 4):  # two more contract-A rows with different scores (a miss on every i-th step)
        f = tmp_path / f"sort{i}.jsonl"
        f.write_text("\n".join(json.dumps({"step_id": st.step_id, "output": render_target(st, View.SOM, Contract.A)
                                           if k % i else f"miss {viewport['width']}"}) for k, st in enumerate(steps)) + "\n")
        msg, _ = submit(client, f, contract="A", model_name=f"sort-{i}-{viewport['width']}")
        assert msg.startswith("Accepted"), msg
    page = web.page(server.url, viewport)
    table = page.locator("#table-som table[data-contract=A]")
    expect(table).to_be_visible(timeout=30_000)
    # the page's first table is the one built with the app; the load event refreshes it: wait
    # until it holds every contract-A row (reading it earlier raced the refresh on a busy machine)
    n = len(table_rows := table_of(client, View.SOM, "A"))
    assert n >= 2, table_rows
    expect(table.locator("tbody tr")).to_have_count(n, timeout=30_000)
    # the crowded table (40 concurrent rows above): the top 20 show, the rest behind "show all";
    # a search looks at every row; shared ranks are marked in the cell, not only in a tooltip
    tools = page.locator("#table-som .mag-tools[data-contract=A]")
    assert n > 20
    expect(table.locator("tbody tr:visible")).to_have_count(20)
    tools.locator(".mag-more").click()
    expect(table.locator("tbody tr:visible")).to_have_count(n)
    tools.locator(".mag-more").click()
    expect(table.locator("tbody tr:visible")).to_have_count(20)
    tools.locator(".mag-search").fill("concurrent-3")  # concurrent-3 and concurrent-30..39
    expect(table.locator("tbody tr:visible")).to_have_count(11)
    expect(tools.locator(".mag-count")).to_have_text("11 matches")
    tools.locator(".mag-search").fill("")
    expect(table.locator("tbody tr:visible")).to_have_count(20)
    assert table.locator("td.c-rank.tie").count() >= 2 and page.locator("#table-som .mag-tie-legend").count() >= 1
    # the other metrics are behind a toggle; rank, model, score, interval, seeds and date are not
    more = table.locator("th.c-more")
    assert more.count() >= 2
    expect(more.first).to_be_hidden()
    for title in ("rank", "model", "95% interval", "seeds", "date"):
        expect(table.locator("th", has_text=title).first).to_be_visible()
    tools.locator(".mag-cols").click()
    expect(more.first).to_be_visible()
    tools.locator(".mag-cols").click()
    expect(more.first).to_be_hidden()
    # the header stays in view while the table scrolls down inside its box
    tools.locator(".mag-more").click()
    wrap = page.locator("#table-som .mag-table-wrap").filter(has=page.locator("table[data-contract=A]"))
    wrap.evaluate("w => { w.scrollTop = w.scrollHeight; }")
    page.wait_for_timeout(200)
    head, box = table.locator("thead th").first.bounding_box(), wrap.bounding_box()
    assert abs(head["y"] - box["y"]) <= 3, (head, box)
    wrap.evaluate("w => { w.scrollTop = 0; }")
    tools.locator(".mag-more").click()
    ids = _column(page, table, "id")
    table.locator("th", has_text="id").click()
    down = _column(page, table, "id")
    assert down == sorted(ids, key=int, reverse=True)
    table.locator("th", has_text="id").click()
    up = _column(page, table, "id")
    assert up == sorted(ids, key=int) and up != down  # clicking a header changes the row order
    table.locator("th", has_text="SAA").first.click()
    saa = [float(v) for v in _column(page, table, "SAA")]
    assert saa == sorted(saa, reverse=True)
    expect(table.locator("th", has_text="SAA").first).to_have_attribute("aria-sort", "descending")

    if viewport is PHONE:
        # rank, model and the headline score stay in view while the table scrolls sideways
        wrap = page.locator("#table-som .mag-table-wrap").first
        assert wrap.evaluate("w => w.scrollWidth > w.clientWidth + 100")
        expect(page.locator("#table-som .mag-scroll-cue").first).to_be_visible()
        wrap.evaluate("w => { w.scrollLeft = w.scrollWidth; }")
        page.wait_for_timeout(300)
        boxes = []
        for cls in ("c-rank", "c-model", "c-head", "c-ci"):  # the interval too: no swipe to see it
            box = table.locator(f"tbody tr td.{cls}").first.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (cls, box)
            boxes.append(box)
        for left, right in zip(boxes, boxes[1:]):  # side by side, none covering another
            assert left["x"] + left["width"] <= right["x"] + 1, (left, right)
        rank_cell = table.locator("tbody tr td.c-rank").first
        rank_cell.evaluate("td => window.scrollBy(0, td.getBoundingClientRect().top - 300)")
        assert rank_cell.evaluate("td => { const r = td.getBoundingClientRect(); "
                                  "return document.elementFromPoint(r.left + 8, r.top + 8) === td; }")  # not covered

    row = table.locator("tbody tr").first
    sub_id = row.get_attribute("data-id")
    row.click()
    expect(page.locator("#details-info textarea")).to_have_value(re.compile(rf"^#{sub_id} "), timeout=30_000)
    bars = page.locator("#details-breakdowns table.mag-bars").first
    expect(bars).to_be_visible(timeout=30_000)
    box = bars.bounding_box()
    assert box["height"] > 100  # a readable table, not a thumbnail
    text = page.locator("#details-breakdowns").inner_text()
    assert "Per gold action type" in text and "undefined" not in text
    # not-applicable metrics are left out: a contract-A submission shows no guide column
    assert "BLEU-1" not in page.locator("#details-breakdowns").inner_text()
    expect(page.locator("#details-taxonomy")).to_contain_text("Error taxonomy")
    # the page itself never scrolls sideways: wide tables scroll inside their own box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"] + 1
    wrap = page.locator("#details-breakdowns .mag-bars-wrap").first.bounding_box()
    assert wrap["x"] >= 0 and wrap["x"] + wrap["width"] <= viewport["width"] + 1, wrap


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_browser_oversize_file_leaves_a_lasting_message_and_validate_only_stores_nothing(
        server, client, gold, tmp_path, web, viewport):
    from playwright.sync_api import expect

    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"step_id": "x", "output": "' + b"a" * (3 * 1024 * 1024 // 2) + b'"}\n')  # 1.5 MiB, cap 1 MiB
    before = n_rows(client)
    page = web.page(server.url, viewport)
    page.get_by_role("tab", name="Submit").click()
    page.locator("#model-name textarea, #model-name input").first.fill("too big")
    status = page.locator("#submit-status textarea")
    # a result left from an earlier file (issue 27: it stayed beside the refusal of an over-size one)
    status.evaluate("t => { t.value = 'Accepted: submission #1 (an earlier file)'; }")
    page.locator("#predictions input[type=file]").set_input_files(str(big))
    note = page.locator("#upload-note")
    expect(note).to_contain_text("big.jsonl is 1.5 MiB, over the upload cap of 1 MiB", timeout=10_000)
    expect(status).to_have_value("")  # cleared: it was another file's
    page.wait_for_timeout(6000)  # Gradio's toast has faded by now; the note has not
    expect(note).to_contain_text("over the upload cap of 1 MiB")
    assert "too-big" in (note.locator(".mag-upload-note").get_attribute("class") or "")
    page.locator("#submit-button").click()
    expect(status).to_have_value(re.compile(r"Rejected: no predictions file was uploaded \(a file over the 1 MiB"),
                                 timeout=30_000)
    expect(page.locator("#submit-status")).to_have_class(re.compile("status-rejected"), timeout=10_000)

    good = predictions_file(tmp_path / "check.jsonl", gold[View.SOM][:-2], View.SOM, Contract.J,
                            tag=f"validate-{viewport['width']}")
    page.locator("#predictions input[type=file]").set_input_files(str(good))
    expect(page.locator("#predictions")).to_contain_text(re.compile(r"check\s*\.jsonl"), timeout=30_000)  # may wrap
    expect(note).not_to_contain_text("over the upload cap")
    page.locator("#validate-button").click()
    expect(status).to_have_value(re.compile(r"Rejected \(validate only, nothing stored\): 2 step id\(s\) have no "
                                            r"prediction for seed 0"), timeout=60_000)
    assert f"the split has {len(gold[View.SOM]):,} steps" in status.input_value()
    assert gold[View.SOM][-1].step_id in status.input_value()  # the missing ids are named
    assert n_rows(client) == before
    # About's tables scroll sideways instead of breaking words inside their cells
    page.get_by_role("tab", name="About").click()
    cells = page.locator("#about-text table td")
    expect(cells.first).to_be_visible(timeout=10_000)
    assert cells.first.evaluate("td => getComputedStyle(td).wordBreak") == "normal"
    broken = page.evaluate("""() => [...document.querySelectorAll('#about-text td, #about-text th')].filter((c) => {
        const r = document.createRange(); let split = false;
        for (const n of c.childNodes) { if (n.nodeType !== 3) continue;
          const words = n.textContent.split(/([\\s/-]+)/); let at = 0;  // a break after a hyphen or slash is no split word
          for (const w of words) { if (w.trim().length > 1) { r.setStart(n, at); r.setEnd(n, at + w.length);
            const tops = new Set([...r.getClientRects()].map((x) => Math.round(x.top))); if (tops.size > 1) split = true; }
            at += w.length; } }
        return split; }).map((c) => c.textContent.slice(0, 40))""")
    assert broken == [], broken


@pytest.mark.browser
@pytest.mark.slow
def test_browser_details_start_unselected_and_load_the_chosen_submission_and_compare(server, client, web):
    """The restart bug: the newest submission looked selected but nothing loaded. The
    server of this module has been restarted by test_rows_survive_a_server_restart."""
    from playwright.sync_api import expect

    som = table(client, View.SOM)
    newest = max(r["id"] for r in som)
    page = web.page(server.url, DESKTOP)
    page.get_by_role("tab", name="Details").click()
    expect(page.locator("#details-choice input")).to_have_value("")
    page.locator("#details-choice input").click()
    page.locator("#details-choice input").fill(f"#{newest} ")
    page.get_by_role("option").filter(has_text=f"#{newest} ").first.click()
    expect(page.locator("#details-info textarea")).to_have_value(re.compile(rf"^#{newest} "), timeout=30_000)
    other = next(r["id"] for r in som if r["id"] != newest)
    page.locator("#compare-with input").click()
    page.locator("#compare-with input").fill(f"#{other} ")
    page.get_by_role("option").filter(has_text=f"#{other} ").first.click()
    page.locator("#compare-button").click()
    expect(page.locator("#compare-out textarea")).to_have_value(re.compile(r"^view som  A: contract"), timeout=60_000)


def test_compare_is_rate_limited_per_user_with_a_one_line_refusal(server, client):
    """Issue 27: twenty queued comparisons from one user held up another's submission. Three per
    minute here (MAG_BOARD_COMPARE_PER_MIN): the fourth within the minute is refused at once,
    without comparing, in one line that says when to come back."""
    som = table(client, View.SOM)
    a, b = som[0]["id"], som[1]["id"]
    answers = []
    for _ in range(4):
        t0 = time.monotonic()
        answers.append((client.predict(str(a), f"#{b}", api_name="/compare"), time.monotonic() - t0))
    done = [text for text, _ in answers if text.startswith("view som  A: contract")]
    refused = [(text, s) for text, s in answers if text.startswith("Too many compare requests")]
    assert 1 <= len(done) <= 3 and len(done) + len(refused) == 4, answers  # the browser test may have compared
    assert refused and all(s < 2.0 for _, s in refused)
    assert re.fullmatch(r"Too many compare requests: at most 3 per minute from one user and 30 per minute from "
                        r"everyone\. Try again in \d+ s\.", refused[0][0]), refused[0][0]
    # Details (unlimited here) still answer
    assert client.predict(str(a), api_name="/details")[0].startswith(f"#{a} ")
