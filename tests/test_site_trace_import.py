"""``mag import-trace`` on a Playwright trace recorded by Playwright itself on the forum site.

An expert episode is driven through BrowserGym (bid actions: Playwright locator calls) with
``context.tracing.start(screenshots=True, snapshots=True)`` on, and the archive
``tracing.stop(path=...)`` writes is imported, built and scored: no hand-written trace files.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from mag_dataset.harness.trace_import.archive import _ACTED

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-forum")]

TASK = "sites.forum.update_profile_location"


def _expert_trace(path, seed: int) -> tuple[str, list[str]]:
    """Run the task's expert with tracing on; returns (goal, BrowserGym actions). Clicks take
    turns: on the element id (``som``: a locator call), then, as the site recorder and people
    do, at a point (``coord``: ``mouse.click``), so one trace has both kinds. The expert's final
    answer (a chat message, no Playwright call) is sent after the trace stops."""
    from mag_dataset.actions import ActionType, View
    from mag_dataset.sites.env import make_site_env
    from mag_dataset.live.execute import to_browsergym_action
    from mag_dataset.live.observe import observe_page
    from mag_dataset.schema import Action

    env = make_site_env(TASK)
    try:
        obs, _ = env.reset(seed=seed)
        goal, task, memory, actions = obs["goal"], env.unwrapped.task, {}, []
        env.unwrapped.context.tracing.start(screenshots=True, snapshots=True)
        # the importer needs a screencast frame before each action (a person's recording has one):
        # Chromium sends the first after a paint, and the expert, quick since observations encode
        # their PNGs lazily, once clicked before it (CI: "has no screenshot ... before it")
        env.unwrapped.page.mouse.move(1, 1)
        env.unwrapped.page.wait_for_timeout(1000)
        for _ in range(30):
            ob = observe_page(obs)
            d = task.expert(ob, memory)
            assert d is not None, "the expert gave up"
            target = ob.candidate(d.bid) if d.bid is not None else None
            point = ((target.bbox[0] + target.bbox[2]) / 2, (target.bbox[1] + target.bbox[3]) / 2) if target else None
            action = Action(type=d.type, element_id=d.bid, coordinate=point, text=d.text, value=d.value, key=d.key,
                            direction=d.direction, url=d.url, answer=d.answer)
            n_clicks = sum(1 for a in actions if "click(" in a)
            view = (View.SOM, View.COORD)[n_clicks % 2] if d.type is ActionType.CLICK else View.SOM
            bg = to_browsergym_action(action, view, ob.conv)
            if d.type is ActionType.FINISH:
                env.unwrapped.context.tracing.stop(path=str(path))
                obs, reward, terminated, _, info = env.step(bg)
                assert terminated and reward == 1.0, info
                return goal, actions
            actions.append(bg)
            obs, _, _, _, _ = env.step(bg)
            # tracing slows pages: a click may outlast BrowserGym's 500 ms waiting for the
            # navigation it started, after acting ("click action done", or on a busy machine
            # only "performing click action": the importer's own rule of a call that acted)
            err = obs.get("last_action_error") or ""
            assert not err or _ACTED.search(err), err
        raise AssertionError("the expert did not finish in 30 steps")
    finally:
        env.close()


def test_trace_of_an_expert_episode_imports_builds_and_its_gold_echo_scores_one(forum, tmp_path):
    from mag_dataset.builder import build_dataset
    from mag_dataset.cli import main
    from mag_dataset.dataset import load_gold
    from mag_dataset.predictions import Prediction
    from mag_dataset.prompts import render_target
    from mag_dataset.raw import read_episode
    from mag_dataset.scoring import METRIC_NAMES, score_predictions

    trace = tmp_path / "traces" / "update_location.zip"
    trace.parent.mkdir()
    goal, actions = _expert_trace(trace, seed=0)
    with zipfile.ZipFile(trace) as z:  # Playwright's own archive: events, network log, frames
        assert "trace.trace" in z.namelist() and any(n.startswith("resources/") for n in z.namelist())
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"update_location": {"intent": goal, "site": "forum", "task_id": "forum.trace-0",
                                                     "intent_template_id": "update_profile_location", "seed": 0}}))
    raw = tmp_path / "raw"
    assert main(["import-trace", str(trace.parent), "--out", str(raw), "--tasks", str(tasks)]) == 0
    ep = read_episode(raw / "forum.trace-0")
    assert (ep.intent, ep.site, ep.source) == (goal, "forum", "playwright-trace")
    # one step per page action of the expert (the BrowserGym calls), in order, with its target
    kinds = {"click": "click", "fill": "type", "select_option": "select", "scroll": "scroll", "scroll_at": "scroll",
             "keyboard_press": "press", "goto": "goto", "mouse_click": "click", "go_back": "go_back",
             "go_forward": "go_forward"}  # the expert's detours come back with go_back()
    from mag_dataset.harness.trace_import.archive import read_trace

    calls = [(c.api_name, c.error[:200]) for c in read_trace(trace).calls if c.cls in ("Frame", "Page")
             and c.method not in ("evaluateExpression", "evaluateExpressionHandle", "title", "waitForTimeout")]
    assert [s.action.type.value for s in ep.steps] == [kinds[a.strip().splitlines()[-1].split("(")[0]] for a in actions], \
        (actions, calls)
    clicks = [(s, a) for s, a in zip(ep.steps, actions) if s.action.type.value == "click"]
    by_point = [s for s, a in clicks if "mouse_click(" in a]
    assert by_point and len(by_point) < len(clicks), actions  # both kinds of click
    # a locator click names its element; a mouse.click is a coordinate-only step, restored by mag unify
    assert all((s.action.element_id is None) == ("mouse_click(" in a) for s, a in clicks)
    assert main(["unify", "--raw", str(raw)]) == 0
    ep = read_episode(raw / "forum.trace-0")
    assert all(s.action.element_id is not None for s in ep.steps if s.action.type.value == "click")
    for st, bg in zip(ep.steps, actions):
        if st.action.element_id is not None:
            target = next(c for c in st.candidates if c.id == st.action.element_id)
            x0, y0, x1, y1 = target.bbox
            assert x1 > x0 and y1 > y0 and x0 <= st.action.coordinate[0] <= x1 and y0 <= st.action.coordinate[1] <= y1
            assert target.text, (bg, target)  # named, as the recorder names it
        assert st.image_width > 0 and len(st.candidates) >= 5
    typed = [s for s in ep.steps if s.action.type.value == "type"]
    assert typed and typed[-1].action.text in goal

    built = build_dataset(raw, tmp_path / "ds", progress=False)
    for view in ("som", "coord"):
        steps = load_gold(built, view, "test")  # one task: the default split puts it in test (coord: with som menus)
        assert len(steps) == len(ep.steps)
        for contract in ("A", "JG"):
            report = score_predictions([Prediction(s.step_id, render_target(s, view, contract)) for s in steps], steps,
                                       view, contract)
            data = json.loads(report.to_json())
            values = [data[m]["micro"] for m in METRIC_NAMES if data[m]["micro"] is not None]
            assert values and all(v == 1.0 for v in values), (view, contract, data)


FORM = """<!doctype html><html><head><style>body{font:16px sans-serif;margin:24px} td{padding:6px}</style></head>
<body><table>
<tr><td><label for="who">Name</label></td><td><input id="who"></td></tr>
<tr><td><label for="tops">Toppings</label></td><td><select id="tops" multiple size="3"><option>Ham</option>
<option>Olives</option><option>Mushrooms</option></select></td></tr>
<tr><td><label for="news">News</label></td><td><input id="news" type="checkbox"></td></tr>
<tr><td><label for="cv">CV</label></td><td><input id="cv" type="file"></td></tr>
</table><button id="go" type="button">Send</button><div style="height:1500px"></div></body></html>"""


def _local_trace(tmp_path, name: str, act) -> Path:
    """Record ``act(page)`` on a local form page with Playwright's tracing (BrowserGym's
    process-wide Playwright: a second sync Playwright in this worker would fail)."""
    import browsergym.core

    from mag_dataset.live.env import chromium_executable

    tmp_path.mkdir(parents=True, exist_ok=True)
    page_file = tmp_path / "form.html"
    page_file.write_text(FORM, "utf-8")
    browser = browsergym.core._get_global_playwright().chromium.launch(executable_path=chromium_executable())
    try:
        context = browser.new_context(viewport={"width": 900, "height": 600})
        page = context.new_page()
        context.tracing.start(screenshots=True, snapshots=True)
        page.goto(page_file.as_uri())
        act(page)
        path = tmp_path / f"{name}.zip"
        context.tracing.stop(path=str(path))
        context.close()
    finally:
        browser.close()
    return path


def test_local_trace_actions_labels_and_skipped_calls(tmp_path):
    from mag_dataset.harness.trace_import import TraceTask, import_traces
    from mag_dataset.raw import read_episode

    def act(page):
        page.locator("#who").fill("Ann")
        page.locator("#tops").select_option(["Ham", "Olives"])
        page.locator("#news").check()
        with pytest.raises(Exception):  # a call that failed acted on nothing: not a step
            page.locator("#nowhere").click(timeout=300)
        page.get_by_role("button", name="Send").hover()
        page.locator("#who").press("Enter")
        page.mouse.wheel(0, 400)

    trace = _local_trace(tmp_path, "form", act)
    report = import_traces([trace], tmp_path / "raw", lambda p: TraceTask(intent="Order for Ann.", site="local"))
    assert report.imported == ["form"], report.summary()
    ep = read_episode(tmp_path / "raw" / "form")
    got = [(s.action.type.value, s.action.text, s.action.value, s.action.key, s.action.direction) for s in ep.steps]
    assert got == [("type", "Ann", None, None, None), ("select", None, "Ham, Olives", None, None),
                   ("click", None, None, None, None), ("hover", None, None, None, None),
                   ("press", None, None, "Enter", None), ("scroll", None, None, None, "down")]
    names = [next(c for c in s.candidates if c.id == s.action.element_id).text for s in ep.steps[:4]]
    assert names == ["Name", "Toppings", "News", "Send"]  # <label for> in another cell names the field
    assert ep.steps[1].guide == "Select 'Ham, Olives' from the Toppings drop-down."
    assert ep.metadata["start_url"].endswith("form.html") and ep.steps[0].viewport_width == 900


def test_traces_that_cannot_be_imported_are_skipped_with_the_reason(tmp_path, capsys):
    from mag_dataset.cli import main

    upload = _local_trace(tmp_path / "t", "upload", lambda page: page.locator("#cv").set_input_files([]))
    (tmp_path / "t" / "not_a_trace.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    (tmp_path / "t" / "broken.zip").write_bytes(b"not a zip at all")
    raw = tmp_path / "raw"
    assert main(["import-trace", str(tmp_path / "t"), "--out", str(raw), "--intent", "Upload a CV."]) == 1
    out = capsys.readouterr().out
    assert "3 traces: imported 0 episodes" in out
    assert re.search(r"skipped upload.zip: Locator.set_input_files \(call@\d+\) has no equivalent", out), out
    assert "skipped not_a_trace.zip: no trace.trace in the archive" in out
    assert "skipped broken.zip: not a zip archive" in out
    assert not raw.exists() or not any(raw.iterdir())
    # usage errors: one line, exit 2
    for argv, msg in ((["--intent", "x", "--tasks", str(upload)], "exactly one of --intent"),
                      (["--webarena-configs", str(tmp_path / "none")], "not a folder"),
                      ([], "exactly one of --intent"),
                      (["--tasks", str(tmp_path / "missing.json")], "--tasks"),
                      (["--intent", "  "], "--intent is empty")):
        assert main(["import-trace", str(upload), "--out", str(raw), *argv]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err
    bad = tmp_path / "tasks.json"
    bad.write_text(json.dumps({"upload": {"intent": "x", "seed": "zero"}}))
    assert main(["import-trace", str(upload), "--out", str(raw), "--tasks", str(bad)]) == 2
    assert "field 'seed' must be an integer" in capsys.readouterr().err
    assert main(["import-trace", str(tmp_path / "nope.zip"), "--out", str(raw), "--intent", "x"]) == 2
    assert "trace archive not found" in capsys.readouterr().err


def test_format_3_action_events_read_like_the_current_format(tmp_path):
    """Traces written by older Playwright (format 3: one ``action`` event per call whose
    ``metadata`` holds everything, as in WebArena's 2023 traces) read as the current format:
    a trace recorded here is rewritten into that shape, the way Playwright's traceModernizer
    reads it back, and imports to the same steps."""
    from mag_dataset.harness.trace_import import TraceTask, import_traces
    from mag_dataset.raw import read_episode

    def act(page):
        page.locator("#who").fill("Ann")
        page.locator("#tops").select_option(["Olives"])
        page.get_by_role("button", name="Send").click()

    new = _local_trace(tmp_path, "new", act)
    old = tmp_path / "old.zip"
    with zipfile.ZipFile(new) as zin, zipfile.ZipFile(old, "w") as zout:
        events = [json.loads(line) for line in zin.read("trace.trace").decode().splitlines() if line.strip()]
        calls: dict[str, dict] = {}
        out = []
        for ev in events:
            if ev["type"] in ("before", "input", "after"):
                md = calls.setdefault(ev["callId"], {"id": ev["callId"], "snapshots": []})
                if ev["type"] == "before":
                    md.update(startTime=ev["startTime"], apiName=ev["apiName"], type=ev["class"], method=ev["method"],
                              params=ev["params"], pageId=ev.get("pageId"))
                    out.append({"type": "action", "metadata": md})
                for title in ("before", "input", "after"):
                    if ev.get(f"{title}Snapshot"):
                        md["snapshots"].append({"title": title, "snapshotName": ev[f"{title}Snapshot"]})
                if ev.get("point"):
                    md["point"] = ev["point"]
                if ev.get("error"):
                    md["error"] = {"error": ev["error"]}
            else:
                out.append(ev)
        assert calls and not any(e["type"] in ("before", "input", "after") for e in out)
        for info in zin.infolist():
            data = "\n".join(json.dumps(e) for e in out).encode() if info.filename == "trace.trace" else zin.read(info)
            zout.writestr(info.filename, data)
    raw = tmp_path / "raw"
    report = import_traces([new, old], raw, lambda p: TraceTask(intent="Order for Ann."))
    assert sorted(report.imported) == ["new", "old"], report.summary()
    a, b = read_episode(raw / "new"), read_episode(raw / "old")
    assert [s.action for s in a.steps] == [s.action for s in b.steps] and len(a.steps) == 3
    assert [s.candidates for s in a.steps] == [s.candidates for s in b.steps]


def test_webarena_config_files_give_the_task(tmp_path, capsys):
    from mag_dataset.cli import main
    from mag_dataset.raw import read_episode

    trace = _local_trace(tmp_path / "trace", "310", lambda page: page.locator("#who").fill("Ann"))
    configs = tmp_path / "config_files"
    configs.mkdir()
    (configs / "310.json").write_text(json.dumps({  # the fields of WebArena's config_files/<id>.json
        "sites": ["shopping"], "task_id": 310, "require_login": True, "start_url": "__SHOPPING__",
        "intent_template": "Fill in {{name}}", "intent": "Fill in  Ann", "intent_template_id": 42,
        "eval": {"eval_types": ["string_match"]}}))
    (tmp_path / "trace" / "311.zip").write_bytes(trace.read_bytes())  # no config for it
    raw = tmp_path / "raw"
    assert main(["import-trace", str(tmp_path / "trace"), "--out", str(raw), "--webarena-configs", str(configs)]) == 0
    out = capsys.readouterr().out
    assert "skipped 311.zip: no task given for it" in out
    ep = read_episode(raw / "webarena.310")
    assert (ep.intent, ep.site, ep.intent_template_id, len(ep.steps)) == ("Fill in Ann", "shopping", "42", 1)


def test_a_click_that_times_out_on_the_navigation_it_started_is_a_step(tmp_path):
    """Tracing slows pages: a click whose navigation outlasts the call's timeout has acted (its
    call log says so), as BrowserGym's 500 ms clicks on the sites do; a click on nothing has not."""
    import http.server
    import threading
    import time

    from mag_dataset.harness.trace_import import TraceTask, import_traces
    from mag_dataset.harness.trace_import.archive import read_trace
    from mag_dataset.raw import read_episode

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/slow"):
                time.sleep(3)
            body = b"<html><body><a id='go' href='/slow'>Next page</a> <input id='q'></body></html>"
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the browser went away first
                pass

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        def act(page):
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
            page.locator("#q").fill("x")
            with pytest.raises(Exception, match="Timeout"):
                page.locator("#go").click(timeout=1500)
            with pytest.raises(Exception, match="Timeout"):
                page.locator("#nothing").click(timeout=200)

        trace = _local_trace(tmp_path, "slow", act)
    finally:
        server.shutdown()
    clicks = [c for c in read_trace(trace).calls if c.method == "click"]
    assert [(c.error, c.acted) for c in clicks][0] == ("", True) and clicks[1].error.startswith("Timeout")
    import_traces([trace], tmp_path / "raw", lambda p: TraceTask(intent="Open the next page."))
    ep = read_episode(tmp_path / "raw" / "slow")
    assert [s.action.type.value for s in ep.steps] == ["goto", "type", "click"]  # (the form page opened first)
    assert next(c for c in ep.steps[2].candidates if c.id == ep.steps[2].action.element_id).text == "Next page"
