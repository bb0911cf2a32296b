"""A live run a researcher can leave going (issue 30): Ctrl-C, resume, errors kept apart, why an episode failed.

The browser tests run MiniWoB++'s click-button against an OpenAI-compatible stub served on
127.0.0.1 by the test (``tests/stub_openai.py``), one step per episode: the stub clicks
the button the goal names, answers HTTP 500 or ``finish`` where a test needs it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from stub_openai import Status, StubOpenAI

from mag_dataset.cli import main
from mag_dataset.harness.live_eval import format_table
from mag_dataset.harness.live_eval.report import EpisodeResult, summarize
from mag_dataset.harness.live_eval.report import failure_line
from mag_dataset.harness.live_eval.why import site_check

ROOT = Path(__file__).resolve().parent.parent


def _click_the_named_button(body: dict) -> str:
    """What a good model answers on click-button: click the button the goal names."""
    user = next(m for m in body["messages"] if m["role"] == "user")
    text = next(p["text"] for p in user["content"] if p["type"] == "text")
    value = re.search(r'"([^"]+)"', text.split("\n")[0]).group(1)
    for line in text.splitlines():
        m = re.match(r'\[(\w+)\] button "(.*)"$', line)
        if m and m.group(2) == value:
            return json.dumps({"action": {"type": "click", "element": m.group(1)}, "guide": f"Click {value}."})
    return json.dumps({"action": {"type": "finish"}, "guide": "Done."})


def _args(stub: StubOpenAI, out: Path, episodes: int = 3) -> list[str]:
    return ["live-eval", "--agent", f"openai:stub@{stub.base_url}", "--api-key-env", "MAG_TEST_NO_KEY",
            "--tasks", "click-button", "--episodes", str(episodes), "--view", "som", "--contract", "J",
            "--max-steps", "2", "--max-retries", "1", "--timeout", "20", "--out", str(out), "--no-progress"]


def _figures(report: dict) -> dict:
    """What a report says about the model and the endpoint: everything but the clock."""
    return {"tasks": report["tasks"], "overall": report["overall"], "seeds": report["seeds"],
            "episodes": [{k: v for k, v in e.items() if k != "seconds"} for e in report["episodes"]]}


# ----------------------------------------------------------------------------- no browser


def _result(seed: int, status: str, **kw) -> EpisodeResult:
    return EpisodeResult(task="t", seed=seed, episode_id=f"t.seed-{seed}", success=status == "success",
                         raw_reward=1.0 if status == "success" else 0.0, steps=kw.pop("steps", 2), format_failures=0,
                         invalid_actions=0, ended_by="finish", seconds=1.0, status=status, **kw)


def test_an_errored_episode_is_left_out_of_the_rates():
    s = summarize([_result(0, "success", requests=1), _result(1, "failure", requests=2, retries=1),
                   _result(2, "error", error="agent error: LLMHTTPError: HTTP 500", steps=1, requests=4, retries=3,
                           timeouts=2)])
    assert (s["episodes"], s["scored"], s["successes"], s["failures"], s["errors"]) == (3, 2, 1, 1, 1)
    assert s["success_rate"] == 0.5 and s["steps"] == 4  # the errored episode's step is not the model's
    assert (s["requests"], s["retries"], s["timeouts"]) == (7, 4, 2)  # traffic: every episode
    assert EpisodeResult.from_dict({**_result(3, "failure").to_dict(), "status": None}).status == "failure"
    old = {k: v for k, v in _result(4, "failure").to_dict().items() if k not in ("status", "requests", "check")}
    assert EpisodeResult.from_dict({**old, "error": "boom"}).status == "error"  # a result an older version wrote
    with pytest.raises(ValueError, match="status success with success=False"):
        EpisodeResult(task="t", seed=0, episode_id="x", success=False, raw_reward=0, steps=0, format_failures=0,
                      invalid_actions=0, ended_by="finish", seconds=0, status="success")


def test_a_failed_answer_task_shows_the_expected_and_the_given_answer():
    """The forum's count_replies answered "done": the report line names the reference answer and the given one."""
    from mag_dataset.sites import task_class

    task = task_class("sites.forum.count_replies")(seed=0)  # its check reads the seed data: no server needed
    want = task.reference_answers()["must_include"][0]
    ok, reason = task.check("done")
    assert not ok
    check = site_check(task, "done", {"success": False, "reason": reason}, final_url=None)
    assert check["kind"] == "information" and check["given_answer"] == "done"
    result = _result(0, "failure", check=check)
    line = failure_line(result.to_dict())
    assert f"expected an answer including '{want}'" in line and "found the answer 'done'" in line, line
    assert f"the topic has {want} replies" in line
    report = {"agent": {"label": "a"}, "view": "som", "contract": "J", "episodes_per_task": 1, "max_steps": 2,
              "tasks": {"t": summarize([result])}, "overall": summarize([result]), "episodes": [result.to_dict()]}
    assert f"- {line}\n" in format_table(report)
    # an agent that never finished: the check is run on the state as it is
    unfinished = site_check(task, None, {}, final_url=None)
    assert unfinished["found"] == "no answer" and unfinished["reason"].startswith("not finished; the check says:")


def test_a_resume_with_another_configuration_is_refused_and_deletes_nothing(tmp_path, capsys, chromium):
    out = tmp_path / "run"
    with StubOpenAI(responder=_click_the_named_button) as stub:
        args = _args(stub, out)
        (out / "episodes" / "click-button.seed-0").mkdir(parents=True)
        (out / "episodes" / "click-button.seed-0" / "episode.json").write_text("{}")
        from mag_dataset.harness.live_eval import LiveEvalConfig
        from mag_dataset.harness.agents import AgentSpec

        cfg = LiveEvalConfig(agent=AgentSpec.parse(f"openai:stub@{stub.base_url}", api_key_env="MAG_TEST_NO_KEY"),
                             tasks=("click-button",), episodes=3, view="som", contract="J", max_steps=3, out_dir=out)
        (out / ".live-eval-run").write_text(json.dumps({"format": "mag-live-eval-run", "config": cfg.identity()}))
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "max_steps 3, not 2" in err and "--overwrite" in err, err
        assert (out / "episodes" / "click-button.seed-0" / "episode.json").read_text() == "{}"
        assert stub.count == 0
        # a folder with a run but no configuration is not ours to resume either
        (out / ".live-eval-run").unlink()
        assert main(args) == 2
        assert "without its configuration" in capsys.readouterr().err
        assert (out / "episodes" / "click-button.seed-0").is_dir()


# ----------------------------------------------------------------------------- browser runs


@pytest.mark.browser
@pytest.mark.slow
def test_an_endpoint_outage_is_an_error_not_a_format_failure(tmp_path, chromium):
    """HTTP 500 through the retries on seed 1: that episode is an error, left out of the success rate;
    seed 2's agent finishes without clicking: a failure whose check is MiniWoB's; a rerun redoes only seed 1."""
    calls = []

    def responder(body):
        calls.append(body)
        n = len(calls)
        if n in (2, 3):  # seed 1's request and its one retry
            return Status(500, message="upstream down")
        if n == 4:  # seed 2
            return json.dumps({"action": {"type": "finish"}, "guide": "Done."})
        return _click_the_named_button(body)

    out = tmp_path / "outage"
    with StubOpenAI(responder=responder) as stub:
        assert main(_args(stub, out)) == 0
        assert stub.count == 4
    report = json.loads((out / "report.json").read_text())
    by_seed = {e["seed"]: e for e in report["episodes"]}
    assert [by_seed[s]["status"] for s in (0, 1, 2)] == ["success", "error", "failure"]
    error = by_seed[1]
    assert error["format_failures"] == 0 and "HTTP 500" in error["error"] and error["ended_by"] == "error"
    assert (error["requests"], error["retries"]) == (2, 1)
    overall = report["overall"]
    assert (overall["episodes"], overall["scored"], overall["errors"], overall["successes"]) == (3, 2, 1, 1)
    assert overall["success_rate"] == 0.5 and overall["format_failures"] == 0
    assert (overall["requests"], overall["retries"]) == (4, 1)
    traj = json.loads((out / "episodes" / "click-button.seed-1" / "episode.json").read_text())["metadata"]["trajectory"]
    assert traj[0]["agent_error"].startswith("LLMHTTPError") and traj[0]["format_reason"] is None
    assert (traj[0]["requests"], traj[0]["retries"], traj[0]["timeouts"]) == (2, 1, 0)
    failed = by_seed[2]
    assert failed["ended_by"] == "finish" and failed["check"]["kind"] == "miniwob"
    assert failed["check"]["expected"].startswith("MiniWoB raw reward 1") and "raw reward" in failed["check"]["found"]
    table = (out / "report.md").read_text()
    assert "Errored episodes" in table and "- click-button.seed-1: error: agent error: LLMHTTPError" in table
    assert "- click-button.seed-2: ended by finish after 1 step(s); expected MiniWoB raw reward 1" in table
    assert report["seeds"] == [0, 1, 2]

    # the endpoint is back: the same command redoes the errored episode only
    with StubOpenAI(responder=_click_the_named_button) as stub:
        assert main(_args(stub, out)) == 0
        assert stub.count == 1
    report = json.loads((out / "report.json").read_text())
    assert [e["status"] for e in report["episodes"]] == ["success", "success", "failure"]
    assert report["overall"]["errors"] == 0 and report["overall"]["success_rate"] == pytest.approx(2 / 3)


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc), however it was detached from its group."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie runs nothing; its parent (or init) reaps it


@pytest.mark.browser
@pytest.mark.slow
def test_ctrl_c_stops_the_run_and_the_same_command_resumes_it(tmp_path, chromium):
    """One SIGINT to the process group while seed 1 waits for the endpoint: the run exits within 10 s
    with nothing of it left running; the same command runs seeds 1 and 2 only, and the report's
    figures are those of a run that was never interrupted."""
    asked = threading.Event()
    calls = []

    def responder(body):
        calls.append(body)
        if len(calls) == 2:  # seed 1's first request: the model is "thinking" when Ctrl-C comes
            asked.set()
            time.sleep(8)
        return _click_the_named_button(body)

    out = tmp_path / "interrupted"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with StubOpenAI(responder=responder) as stub:
        args = _args(stub, out)
        proc = subprocess.Popen([sys.executable, "-m", "mag_dataset.cli", *args], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert asked.wait(120), proc.stderr.read() if proc.poll() is not None else "no second request"
            below = _descendants(proc.pid)
            assert below, "the run has no browser or driver running"
            t0 = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole foreground group
            _, err = proc.communicate(timeout=10)
            waited = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == 130, err
        assert waited < 10
        assert "interrupted: 1 of 3 episodes finished" in err and "Traceback" not in err, err
        deadline = time.monotonic() + 5  # the driver's browsers may take a moment to go
        while any(_running(p) for p in below) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in below if _running(p)], "processes of the run left running"
        assert not (out / "report.json").exists()
        kept = json.loads((out / "episodes" / "click-button.seed-0" / "episode.json").read_text())
        assert kept["metadata"]["live_eval"]["status"] == "success"

        # the same command: seed 0 kept, seeds 1 (interrupted) and 2 (not begun) run
        before = stub.count
        assert main(args) == 0
        assert stub.count - before == 2
        resumed = json.loads((out / "report.json").read_text())
        assert json.loads((out / "episodes" / "click-button.seed-0" / "episode.json").read_text()) == kept

        whole = tmp_path / "whole"
        assert main(_args(stub, whole)) == 0
    uninterrupted = json.loads((whole / "report.json").read_text())
    assert _figures(resumed) == _figures(uninterrupted)
    assert resumed["overall"]["successes"] == 3 and resumed["overall"]["requests"] == 3
