"""Hostile uploads of issue 17 against the real leaderboard server (``python leaderboard/app.py``
on 127.0.0.1, default caps: 20 MiB, 200,000 lines), driven with ``gradio_client`` and a real
headless Chromium.

Each attack asserts its specific ``Rejected:`` message, that the server's peak resident
memory (``VmHWM``) stays under 1 GB, and that a normal submission is accepted right after.
Every hostile file is generated here (``mag_dataset.testing.hostile``), never committed.
"""

from __future__ import annotations

import gzip
import json
import re
import time
import urllib.request
from pathlib import Path

import pytest

from mag_dataset.actions import Contract, View
from mag_dataset.testing import hostile
from test_leaderboard_server import Server, predictions_file, submit

GB = 1_000_000_000
_counter = iter(range(10**6))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-board")
    srv = Server(root / "data", root / "server.log",
                 env={"MAG_BOARD_MAX_MB": "20", "MAG_BOARD_MAX_LINES": "200000", "MAG_BOARD_WORKERS": "2"})
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return server.client()


@pytest.fixture(scope="module")
def gold():
    from mag_dataset.dataset import bundled_dataset, load_steps

    steps = load_steps(bundled_dataset(), "som", "test")
    assert len(steps) >= 10
    return steps


def peak_rss(server: Server) -> int:
    """The server process's peak resident memory in bytes (``VmHWM``)."""
    status = Path(f"/proc/{server.proc.pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def normal_submission_is_accepted(client, gold, tmp_path: Path) -> None:
    tag = f"normal-{next(_counter)}-{time.time_ns()}"
    path = predictions_file(tmp_path / f"{tag}.jsonl", gold, View.SOM, Contract.J, tag=tag)
    message, result = submit(client, path, model_name=tag)
    assert message.startswith("Accepted: submission #"), message
    assert result["ok"] is True


def rejected(client, tmp_path: Path, name: str, data: bytes, **kw) -> str:
    path = tmp_path / f"{next(_counter)}" / name
    path.parent.mkdir()
    path.write_bytes(data)
    message, result = submit(client, path, **kw)
    assert message.startswith("Rejected: "), message
    assert result == {"ok": False, "error": message[len("Rejected: "):]}
    return message


PARQUET_BOMBS = {
    # the 602-byte file: one 1 MiB string dictionary-referenced by 2,000 rows (2 GiB decoded)
    "2,000-row dictionary bomb": (lambda ids: hostile.dictionary_bomb(ids[0], 2_000),
                                  "the Parquet file's strings decode to at least", "over the cap of 20,971,520 bytes"),
    # ~1.8 KB, ~200 GiB decoded
    "200,000-row dictionary bomb": (lambda ids: hostile.dictionary_bomb(ids[0], 200_000),
                                    "the Parquet file's strings decode to at least", "over the cap of 20,971,520 bytes"),
    "nested list<int8> column": (lambda ids: hostile.nested_list_bomb(ids[0], 10_000_000),
                                 "the Parquet column 'seed' must be integers, got list<element: int8>", ""),
    "duplicate output column": (lambda ids: hostile.duplicate_column(ids),
                                "the Parquet file has the column 'output' 2 times", ""),
    "invalid UTF-8 in a string column": (lambda ids: hostile.invalid_utf8(ids, row=3),
                                         "row 3: the Parquet column 'output' holds invalid UTF-8 (byte 0xff", ""),
}


@pytest.mark.parametrize("name", list(PARQUET_BOMBS))
def test_parquet_bomb_is_rejected_within_memory_and_a_normal_submission_follows(server, client, gold, tmp_path, name):
    make, expected, cap = PARQUET_BOMBS[name]
    data = make([s.step_id for s in gold])
    assert len(data) < 25_000  # tiny on disk
    message = rejected(client, tmp_path, "bomb.parquet", data, model_name=f"bomb {name}")
    assert expected in message and cap in message, message
    assert peak_rss(server) < GB, f"server peak RSS {peak_rss(server) / 1e6:.0f} MB"
    normal_submission_is_accepted(client, gold, tmp_path)


def seeds_filling(ids: list[str], output: str, target: int = 17_500_000) -> int:
    """How many seeds make a many-seeds file of about ``target`` bytes decompressed (under the
    20 MiB cap, whatever the size of the gold split): hundreds, far over the 10-seed cap."""
    line = sum(len(json.dumps({"step_id": s, "output": output, "seed": 100})) + 1 for s in ids)
    return target // line


def test_hundreds_of_seeds_are_refused_at_the_seed_cap(server, client, gold, tmp_path):
    ids, output = [s.step_id for s in gold], "I would click the first button " * 2
    n = seeds_filling(ids, output)
    assert n > 100
    data = hostile.many_seeds_gz(ids, n, output=output)
    assert len(data) < 1_000_000 and 15_000_000 < len(gzip.decompress(data)) < 20 * 1024 * 1024  # under the caps
    message = rejected(client, tmp_path, "seeds.jsonl.gz", data, model_name="seeds")
    assert f"line {10 * len(gold) + 1}: seed 10 would be seed number 11: a file may hold at most 10 seeds" in message
    assert peak_rss(server) < GB
    normal_submission_is_accepted(client, gold, tmp_path)


def test_two_heavy_uploads_in_flight_do_not_hold_up_a_normal_submission(server, client, gold, tmp_path):
    from gradio_client import handle_file

    ids = [s.step_id for s in gold]
    heavy = []
    for i in range(2):
        p = tmp_path / f"heavy{i}.jsonl.gz"
        p.write_bytes(hostile.many_seeds_gz(ids, seeds_filling(ids, f"heavy {i} " * 10), output=f"heavy {i} " * 10))
        # other people's uploads, in sessions of their own: when all three shared the test's one
        # gradio_client session, a fresh-clone run once saw the normal submission end in CancelledError
        heavy.append(server.client().submit(model_name=f"heavy {i}", view="som", contract="J",
                                            predictions=handle_file(str(p)), api_name="/submit"))
    normal_submission_is_accepted(client, gold, tmp_path)
    for job in heavy:
        message, _ = job.result(timeout=300)
        assert message.startswith("Rejected: ") and "at most 10 seeds" in message


SURROGATE, RLO = "\ud800", "\u202e"


def raw_submit(server: Server, path: Path, **fields: str) -> tuple[str, dict]:
    """A raw JSON API call (upload, then /gradio_api/call/submit), as a script without
    gradio_client sends it: text fields travel as JSON ``\\ud800`` escapes."""
    boundary = "mag-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{path.name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{server.url}/gradio_api/upload", data=body,
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        (uploaded,) = json.loads(r.read())
    args = {"model_name": "", "view": "som", "contract": "J", "organisation": "", "link": "",
            "provenance_tag": "self-reported"} | fields
    data = [args["model_name"], args["view"], args["contract"], {"path": uploaded, "meta": {"_type": "gradio.FileData"}},
            args["organisation"], args["link"], args["provenance_tag"]]
    req = urllib.request.Request(f"{server.url}/gradio_api/call/submit", data=json.dumps({"data": data}).encode("ascii"),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        event = json.loads(r.read())["event_id"]
    with urllib.request.urlopen(f"{server.url}/gradio_api/call/submit/{event}", timeout=300) as r:
        stream = r.read().decode()
    payload = [ln[len("data: "):] for ln in stream.splitlines() if ln.startswith("data: ")][-1]
    message, result = json.loads(payload)
    return message, result


@pytest.mark.parametrize("field", ["model_name", "organisation", "link"])
def test_lone_surrogate_in_a_text_field_is_refused(server, client, gold, tmp_path, field):
    value = f"https://example.org/{SURROGATE}" if field == "link" else f"model{SURROGATE}x"
    path = predictions_file(tmp_path / "s.jsonl", gold, View.SOM, Contract.J, tag=f"surrogate {field}")
    kw = {"model_name": "surrogate"} | {field: value}
    message, result = raw_submit(server, path, **kw)
    what = field.replace("_", " ")
    assert message.startswith(f"Rejected: {what} contains a lone surrogate U+D800"), message
    normal_submission_is_accepted(client, gold, tmp_path)


def test_right_to_left_override_in_a_model_name_is_refused(server, client, gold, tmp_path):
    path = predictions_file(tmp_path / "rlo.jsonl", gold, View.SOM, Contract.J, tag="rlo")
    message, _ = submit(client, path, model_name=f"gpt{RLO}4-lanimret")
    assert message.startswith("Rejected: model name contains the bidirectional control character U+202E"), message
    normal_submission_is_accepted(client, gold, tmp_path)


def test_second_gzip_member_is_refused_not_ignored(server, client, gold, tmp_path):
    good = predictions_file(tmp_path / "g.jsonl", gold, View.SOM, Contract.J, tag="two members").read_bytes()
    data = hostile.two_gzip_members(good, b'{"step_id": "smuggled", "output": "{}"}\n')
    message = rejected(client, tmp_path, "two.jsonl.gz", data, model_name="two members")
    assert "more bytes after its gzip stream (a second gzip member?)" in message
    normal_submission_is_accepted(client, gold, tmp_path)


@pytest.mark.browser
@pytest.mark.slow
def test_browser_bomb_then_normal_submission(server, gold, tmp_path, chromium):
    """In Chromium: the dictionary bomb shows its Rejected: line, then a normal file is accepted."""
    from playwright.sync_api import expect

    from conftest import process_playwright

    bomb = tmp_path / "bomb.parquet"
    bomb.write_bytes(hostile.dictionary_bomb(gold[0].step_id, 2_000))
    normal = predictions_file(tmp_path / "browser-normal.jsonl", gold, View.SOM, Contract.J, tag="browser hostile")
    # the process's one Playwright (conftest.process_playwright), not a second one
    browser = process_playwright().chromium.launch(executable_path=chromium,
                                                   args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
    try:
        page = browser.new_page()
        for path, pattern in ((bomb, r"Rejected: the Parquet file's strings decode to at least .* cap of 20,971,520 bytes"),
                              (normal, r"Accepted: submission #\d+")):
            page.goto(server.url, wait_until="domcontentloaded")
            page.get_by_role("tab", name="Submit").click()
            page.locator("#model-name textarea, #model-name input").first.fill(f"browser {path.stem}")
            page.locator("#predictions input[type=file]").set_input_files(str(path))
            expect(page.locator("#predictions")).to_contain_text(path.name.split(".")[0], timeout=30_000)
            page.locator("#submit-button").click()
            status = page.locator("#submit-status textarea")
            expect(status).to_have_value(re.compile(pattern), timeout=120_000)
    finally:
        browser.close()
    assert peak_rss(server) < GB
