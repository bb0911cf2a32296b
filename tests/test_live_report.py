"""Live-evaluation reports researchers use (issue 30 item 4): breakdowns, the per-episode export, results.json.

The pure tests build reports from hand-made episode results; the browser test runs MiniWoB++'s
click-button against the OpenAI-compatible stub (``tests/stub_openai.py``) on seeds 0-3 with
one format failure, one invalid action, one endpoint outage and one success, exports it, and
makes it again with ``--report-only``.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from stub_openai import Status, StubOpenAI

from mag_dataset.cli import main
from mag_dataset.harness.agents import AgentSpec
from mag_dataset.harness.live_eval import LiveEvalConfig, format_table
from mag_dataset.harness.live_eval.report import EpisodeResult, build_report, wilson_interval
from mag_dataset.harness.live_eval.report import (
    action_breakdown,
    action_counts,
    breakdowns,
)
from mag_dataset.harness.live_eval.results import (
    ROW_FIELDS,
    episode_rows,
    export_text,
    results_record,
)
from mag_dataset.harness.live_eval.tasks import task_environment, task_kind, task_site
from mag_dataset.live.page_step import episode_id_for

SITE_TASKS = ("sites.forum.count_replies", "sites.forum.open_board", "sites.forum.reply_to_topic")


def _r(task, seed, status, actions=None, steps=2, env=None, **kw):
    return EpisodeResult(task=task, seed=seed, episode_id=episode_id_for(task, seed), success=status == "success",
                         raw_reward=1.0 if status == "success" else 0.0, steps=steps, format_failures=0,
                         invalid_actions=sum(c.get("invalid", 0) for c in (actions or {}).values()),
                         ended_by="finish", seconds=1.5, status=status, error="boom" if status == "error" else None,
                         actions=actions, environment=env, **kw)


def test_task_sites_and_kinds():
    assert [task_kind(t) for t in SITE_TASKS] == ["information", "navigation", "state"]
    assert [task_site(t) for t in SITE_TASKS] == ["forum"] * 3
    assert (task_site("miniwob.click-button"), task_kind("miniwob.click-button")) == ("miniwob", "miniwob")
    assert (task_site("webarena.310"), task_kind("webarena.310")) == ("webarena", "webarena")
    env = task_environment("sites.forum.reply_with_ticket_milestone")  # a cross-site task: both sites' versions
    assert set(env["sites"]) == {"forum", "tracker"} and env["sites"]["forum"]["version"]
    assert env["sites"]["forum"]["app"].startswith("django-spirit")
    assert task_environment("miniwob.click-button")["packages"]["miniwob"]


def test_action_counts_read_the_attempt_log():
    log = [{"format_ok": False, "output": "prose"},
           {"format_ok": True, "action": {"type": "type"}, "invalid_action": None},
           {"format_ok": True, "action": {"type": "click"}, "invalid_action": "element '99' is not in the menu"},
           {"format_ok": True, "action": {"type": "click"}, "invalid_action": None},
           {"format_ok": False, "agent_error": "LLMHTTPError"}]
    counts = action_counts(log)
    assert counts == {"click": {"steps": 2, "invalid": 1}, "type": {"steps": 1, "invalid": 0}}
    assert list(counts) == ["click", "type"]  # ActionType order, not the log's


def test_breakdowns_per_site_template_kind_and_action():
    kinds = {"miniwob.click-button": "miniwob", **{t: task_kind(t) for t in SITE_TASKS}}
    results = [
        _r("miniwob.click-button", 0, "success", {"click": {"steps": 1, "invalid": 0}}),
        _r("miniwob.click-button", 1, "failure", {"click": {"steps": 2, "invalid": 1}}),
        _r("miniwob.click-button", 2, "error", {"click": {"steps": 1, "invalid": 0}}),
        _r(SITE_TASKS[0], 0, "failure", {"finish": {"steps": 1, "invalid": 0}}),
        _r(SITE_TASKS[1], 0, "success", {"click": {"steps": 3, "invalid": 0}, "finish": {"steps": 1, "invalid": 0}}),
        _r(SITE_TASKS[2], 0, "success", {"click": {"steps": 2, "invalid": 0}, "type": {"steps": 1, "invalid": 0}}),
        _r(SITE_TASKS[2], 1, "interrupted", None),
    ]
    b = breakdowns(results, kinds)
    assert list(b["site"]) == ["miniwob", "forum"]
    assert list(b["kind"]) == ["miniwob", "information", "navigation", "state"]
    assert list(b["template"]) == ["click-button", "forum.count_replies", "forum.open_board", "forum.reply_to_topic"]
    mw = b["site"]["miniwob"]
    assert (mw["episodes"], mw["scored"], mw["errors"], mw["successes"]) == (3, 2, 1, 1)  # the error apart
    assert mw["success_ci95"] == pytest.approx(list(wilson_interval(1, 2)))
    forum = b["site"]["forum"]
    assert (forum["episodes"], forum["scored"], forum["successes"], forum["interrupted"]) == (4, 3, 2, 1)
    assert b["kind"]["state"]["success_rate"] == 1.0 and b["kind"]["information"]["success_rate"] == 0.0
    click = b["action"]["click"]
    # click: used in 5 episodes, 1 of them errored (counted apart); 3 of the 4 scored ones succeeded
    assert (click["episodes"], click["scored"], click["errors"], click["successes"]) == (5, 4, 1, 3)
    assert (click["steps"], click["invalid"]) == (8, 1)  # the errored episode's step is not counted
    assert click["invalid_action_ci95"] == pytest.approx(list(wilson_interval(1, 8)))
    assert list(b["action"]) == ["click", "type", "finish"]
    assert b["action"]["finish"]["success_rate"] == 0.5
    assert action_breakdown([_r("miniwob.x", 0, "failure", None)]) == {}  # an old result: left out
    assert wilson_interval(0, 6)[0] == 0.0 and wilson_interval(6, 6)[1] == 1.0  # exact at the ends


def _config(tmp_path, tasks=("click-button",), episodes=3, **kw):
    return LiveEvalConfig(agent=AgentSpec.parse("openai:m@http://127.0.0.1:9/v1"), tasks=tasks, episodes=episodes,
                          view="som", contract="J", out_dir=tmp_path, **kw)


def test_rows_and_results_file_are_stable_and_complete(tmp_path):
    env = {"benchmark": "miniwob", "packages": {"browsergym-core": "0.14.3", "miniwob": "1.1.0"}}
    results = [_r("miniwob.click-button", s, st, {"click": {"steps": 1, "invalid": 0}}, env=env, requests=1)
               for s, st in ((2, "failure"), (0, "success"), (1, "success"))]
    config = _config(tmp_path)
    report = build_report(config, results, 12.0)
    rows = episode_rows(report)
    assert [r["seed"] for r in rows] == [0, 1, 2] == report["seeds"]
    assert list(rows[0]) == list(ROW_FIELDS)
    assert rows[2]["outcome"] == "failure" and rows[2]["why"].startswith("click-button.seed-2: ended by finish")
    assert rows[0]["why"] == "" and rows[0]["kind"] == "miniwob" and rows[0]["template"] == "click-button"
    back = list(csv.DictReader(io.StringIO(export_text(rows, "csv"))))
    assert [b["episode_id"] for b in back] == [r["episode_id"] for r in rows] and back[1]["actions"] == "click:1"
    assert [json.loads(line) for line in export_text(rows, "jsonl").splitlines()] == rows
    rec = results_record(report)
    assert rec["complete"] and rec["endpoint"] == "http://127.0.0.1:9/v1" and rec["model"]["name"] == "m"
    assert rec["environments"] == [{**env, "episodes": 3}] and rec["mixed_versions"] == []
    assert rec["success_rate"] == pytest.approx(2 / 3) and rec["seeds"] == [0, 1, 2]
    assert rec["scorer"]["version"] == report["mag_dataset_version"] and rec["scorer"]["report_version"] == 3
    # the clock does not enter it: another run's seconds, same bytes
    slower = build_report(config, [EpisodeResult.from_dict({**r.to_dict(), "seconds": 9.0}) for r in results], 99.0)
    assert json.dumps(results_record(slower), sort_keys=True) == json.dumps(rec, sort_keys=True)
    # an error and a site upgraded mid-run: not complete, and the mixed versions named
    changed = {**env, "packages": {**env["packages"], "miniwob": "1.2.0"}}
    mixed = [results[0], _r("miniwob.click-button", 0, "error", None, env=changed), results[2]]
    rec = results_record(build_report(config, mixed, 1.0))
    assert not rec["complete"] and rec["mixed_versions"] == ["miniwob"] and len(rec["environments"]) == 2


def test_the_table_shows_the_breakdowns(tmp_path):
    tasks = ("click-button", *SITE_TASKS)
    results = [_r(t if t.startswith("sites.") else f"miniwob.{t}", 0, "success", {"click": {"steps": 1, "invalid": 0}})
               for t in tasks]
    text = format_table(build_report(_config(tmp_path, tasks=tasks, episodes=1), results, 1.0))
    for title in ("Per site", "Per kind of task", "Per action type"):
        assert f"\n{title} (" in text
    assert "Per template" not in text  # one task per template: the per-task table already says it
    assert re.search(r"^\| forum \| 3 \| 3 \| 0 \| 100\.0 \| \[43\.9, 100\.0\] \| 2\.00 \|$", text, re.MULTILINE), text
    assert re.search(r"^\| navigation \| 1 \| 1 \| 0 \| 100\.0 \|", text, re.MULTILINE)
    assert re.search(r"^\| click \| 4 \| 4 \| 0 \| 100\.0 \| \[51\.0, 100\.0\] \| 4 \| 0\.0 \| \[0\.0, 49\.0\] \|$", text, re.MULTILINE)


# ----------------------------------------------------------------------------- a real run


def _menu(body: dict) -> tuple[str, dict[str, str]]:
    user = next(m for m in body["messages"] if m["role"] == "user")
    text = next(p["text"] for p in user["content"] if p["type"] == "text")
    buttons = {m.group(2): m.group(1) for m in re.finditer(r'^\[(\w+)\] button "(.*)"$', text, re.MULTILINE)}
    return re.search(r'"([^"]+)"', text.split("\n")[0]).group(1), buttons


@pytest.mark.browser
@pytest.mark.slow
def test_a_run_exports_one_row_per_episode_and_reports_again_identically(tmp_path, chromium, capsys):
    """Seeds 0-3 of click-button: seed 0 a format failure then the click, seed 1 an invalid element then
    finish, seed 2 the endpoint down through its retry, seed 3 the click."""
    calls: list[int] = []

    def responder(body):
        calls.append(1)
        n = len(calls)
        name, buttons = _menu(body)
        if n == 1:
            return "I would click the button."
        if n == 3:
            return json.dumps({"action": {"type": "click", "element": "9999"}, "guide": "Click it."})
        if n == 4:
            return json.dumps({"action": {"type": "finish"}, "guide": "Done."})
        if n in (5, 6):
            return Status(500, message="upstream down")
        return json.dumps({"action": {"type": "click", "element": buttons[name]}, "guide": f"Click {name}."})

    out = tmp_path / "run"
    with StubOpenAI(responder=responder) as stub:
        rc = main(["live-eval", "--agent", f"openai:stub@{stub.base_url}", "--api-key-env", "MAG_TEST_NO_KEY",
                   "--tasks", "click-button", "--episodes", "4", "--view", "som", "--contract", "J",
                   "--max-steps", "2", "--max-retries", "1", "--timeout", "20", "--out", str(out), "--no-progress",
                   "--export", "csv", "jsonl"])
        base_url = stub.base_url
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "results.json, episodes.csv, episodes.jsonl" in printed and "Per action type" in printed
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1, 2, 3]
    assert [r["outcome"] for r in rows] == ["success", "failure", "error", "success"]
    assert [(r["format_failures"], r["invalid_actions"]) for r in rows] == [(1, 0), (0, 1), (0, 0), (0, 0)]
    assert [(r["requests"], r["retries"]) for r in rows] == [(2, 0), (2, 0), (2, 1), (1, 0)]
    assert [r["actions"] for r in rows] == ["click:1", "click:1 finish:1", "", "click:1"]
    assert rows[1]["why"].startswith("click-button.seed-1: ended by finish after 2 step(s); 1 invalid action(s)")
    assert rows[2]["why"].startswith("click-button.seed-2: error: agent error: LLMHTTPError")
    assert {(r["site"], r["kind"], r["template"]) for r in rows} == {("miniwob", "miniwob", "click-button")}
    with (out / "episodes.csv").open(newline="") as f:
        csv_rows = list(csv.DictReader(f))
    assert [c["outcome"] for c in csv_rows] == [r["outcome"] for r in rows] and list(csv_rows[0]) == list(ROW_FIELDS)

    report = json.loads((out / "report.json").read_text())
    click = report["breakdowns"]["action"]["click"]
    assert (click["episodes"], click["scored"], click["successes"], click["invalid"]) == (3, 3, 2, 1)
    assert report["breakdowns"]["site"]["miniwob"]["errors"] == 1
    results = json.loads((out / "results.json").read_text())
    assert results["endpoint"] == base_url and results["model"] == {
        "label": "openai:stub", "kind": "openai", "name": "stub", "max_new_tokens": 256}
    (env,) = results["environments"]
    assert env["benchmark"] == "miniwob" and env["packages"]["miniwob"] and env["packages"]["browsergym-core"]
    assert env["episodes"] == 4  # the errored episode ran against it too
    assert not results["complete"] and results["success_rate"] == pytest.approx(2 / 3)

    # --report-only: the same files again from the episodes, byte for byte
    before = {name: (out / name).read_bytes() for name in ("results.json", "episodes.csv", "episodes.jsonl")}
    (out / "results.json").unlink()
    assert main(["live-eval", "--report-only", str(out), "--export", "csv", "jsonl"]) == 0
    assert {name: (out / name).read_bytes() for name in before} == before
    again = json.loads((out / "report.json").read_text())
    assert {k: again[k] for k in ("tasks", "overall", "breakdowns", "seeds")} == {
        k: report[k] for k in ("tasks", "overall", "breakdowns", "seeds")}
    capsys.readouterr()
    assert main(["live-eval", "--report-only", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a folder" in err, err
    assert main(["live-eval", "--report-only", str(out), "--agent", "heuristic"]) == 2
    assert "drop --agent" in capsys.readouterr().err
    assert main(["live-eval", "--tasks", "click-button"]) == 2
    assert "required: --agent, --view, --contract" in capsys.readouterr().err
