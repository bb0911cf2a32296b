"""``mag view`` (issue 30 item 5): a read-only local page over a live-eval run folder.

The browser test makes a real run (MiniWoB++'s click-button against the OpenAI-compatible
stub of ``tests/stub_openai.py``: seed 0 a format failure then the right click, seed 1 an
element that is not on the page then ``finish``) and drives the page in the system Chromium.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from stub_openai import StubOpenAI

from mag_dataset.cli import main
from mag_dataset.harness.live_eval.viewer import ViewerServer, safe_path


def _serve(run_dir: Path) -> ViewerServer:
    server = ViewerServer(run_dir, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _get(server: ViewerServer, path: str, method: str = "GET") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    conn.putrequest(method, path, skip_accept_encoding=True)  # the path as written: no client normalises it
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


def test_a_bad_run_dir_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    for path, says in ((tmp_path / "missing", "does not exist"), (tmp_path / "file", "is not a folder"),
                       (tmp_path / "empty", "has no episodes/ folder")):
        assert main(["view", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err and err.startswith("mag view: error:"), err


def test_nothing_outside_the_run_folder_is_served(tmp_path):
    run = tmp_path / "run"
    (run / "episodes" / "a.seed-0").mkdir(parents=True)
    (run / "episodes" / "a.seed-0" / "step_000.png").write_bytes(b"\x89PNG fake")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    (run / "link.txt").symlink_to(tmp_path / "secret.txt")  # a link leading out
    server = _serve(run)
    try:
        assert _get(server, "/files/episodes/a.seed-0/step_000.png") == (200, b"\x89PNG fake")
        for path in ("/files/../secret.txt", "/files/%2e%2e/secret.txt", "/files/episodes/../../secret.txt",
                     "/files/episodes/%2E%2E/%2E%2E/secret.txt", "/files/..%2fsecret.txt", "/files//etc/passwd",
                     "/files/%2Fetc%2Fpasswd", "/files/link.txt", "/files/episodes/..\\..\\secret.txt",
                     "/../secret.txt", "/api/episode?id=../../secret.txt", "/files/"):
            status, body = _get(server, path)
            assert status == 404 and b"SECRET" not in body and b"root:" not in body, (path, status, body)
        assert _get(server, "/api/run", "POST")[0] == 501  # read-only: no method but GET and HEAD
        assert _get(server, "/api/run", "HEAD") == (200, b"")
        assert safe_path(run, "episodes/a.seed-0/step_000.png") is not None and safe_path(run, "../secret.txt") is None
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_command_serves_on_localhost_until_stopped(tmp_path):
    (tmp_path / "episodes").mkdir()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "mag_dataset.cli", "view", str(tmp_path), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"at http://127\.0\.0\.1:(\d+)/ \(read-only", line)
        assert m, line
        conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=10)
        conn.request("GET", "/api/run")
        run = json.loads(conn.getresponse().read())
        assert run == {"run": tmp_path.name, "summary": None, "episodes": []}
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a hung server is killed, not left listening after the test
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    assert rc == 0


def _answer(body: dict, calls: list[int]) -> str:
    calls.append(1)
    user = next(m for m in body["messages"] if m["role"] == "user")
    text = next(p["text"] for p in user["content"] if p["type"] == "text")
    name = re.search(r'"([^"]+)"', text.split("\n")[0]).group(1)
    buttons = {m.group(2): m.group(1) for m in re.finditer(r'^\[(\w+)\] button "(.*)"$', text, re.MULTILINE)}
    if len(calls) == 1:
        return "I would click the <b>button</b>."
    if len(calls) == 3:
        return json.dumps({"action": {"type": "click", "element": "9999"}, "guide": "Click it."})
    if len(calls) == 4:
        return json.dumps({"action": {"type": "finish"}, "guide": "Done."})
    return json.dumps({"action": {"type": "click", "element": buttons[name]}, "guide": f"Click {name}."})


@pytest.mark.browser
@pytest.mark.slow
def test_browse_a_real_run_in_chromium(tmp_path, chromium):
    from conftest import site_browser

    calls: list[int] = []
    out = tmp_path / "run"
    with StubOpenAI(responder=lambda body: _answer(body, calls)) as stub:
        assert main(["live-eval", "--agent", f"openai:stub@{stub.base_url}", "--api-key-env", "MAG_TEST_NO_KEY",
                     "--tasks", "click-button", "--episodes", "2", "--view", "som", "--contract", "J",
                     "--max-steps", "2", "--out", str(out), "--no-progress"]) == 0
    server = _serve(out)
    try:
        with site_browser() as browser:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(server.url)
            page.wait_for_selector("body[data-ready='1']")
            assert page.locator("#episodes li").count() == 2
            assert "strict success 50.0%" in page.inner_text("#run-meta")
            page.click("#episodes li[data-episode='click-button.seed-0']")
            page.wait_for_selector("#ep-status.success")
            assert page.locator("#step-buttons button").count() == 3  # two steps and the final page
            # step 1: the format failure, its raw output shown as text (not as markup)
            assert "format failure" in page.inner_text("#details")
            assert "I would click the <b>button</b>." in page.inner_text("#details")
            assert page.locator("#details b", has_text="button").count() == 0
            assert page.locator("#target").count() == 0
            page.click("#step-next")
            page.wait_for_selector("#target", state="attached")
            assert page.evaluate("document.getElementById('shot').naturalWidth") > 0  # the image loaded
            assert page.get_attribute("#shot", "src").endswith("/step_001_som.png")
            target = page.locator("#target").bounding_box()
            shot = page.locator("#shot").bounding_box()
            assert target["width"] > 10 and target["height"] > 10
            assert shot["x"] <= target["x"] and target["x"] + target["width"] <= shot["x"] + shot["width"] + 1
            assert '"type": "click"' in page.inner_text("#details") and "Click" in page.inner_text("#details")
            assert "#episode=click-button.seed-0&step=1" in page.url
            page.uncheck("#som-toggle")  # the plain screenshot, target still drawn
            assert page.get_attribute("#shot", "src").endswith("/step_001.png")
            page.keyboard.press("ArrowRight")
            assert page.get_attribute("#shot", "src").endswith("/final.png")
            # the failed episode: its invalid action and the check's verdict
            page.keyboard.press("ArrowDown")
            page.wait_for_selector("#ep-status.failure")
            assert "expected" in page.inner_text("#ep-verdict") and "MiniWoB raw reward 1" in page.inner_text("#ep-verdict")
            assert "invalid action" in page.inner_text("#details") and "9999" in page.inner_text("#details")
            # a deep link opens the episode at its step
            page.goto(server.url + "#episode=click-button.seed-1&step=1")
            page.wait_for_selector("#step-buttons button.on[data-step='1']")
            assert page.inner_text("#ep-id") == "click-button.seed-1"
            page.close()
    finally:
        server.shutdown()
        server.server_close()
