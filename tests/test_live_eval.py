"""Live evaluation (``mag live-eval``): metrics, configuration, agents, and real Chromium runs.

The browser tests run the heuristic agent, a tiny random-init VLM and an OpenAI-compatible
stub endpoint on five MiniWoB++ tasks in headless Chromium, end to end, and read back the
trajectories they wrote in the raw episode format.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mag_dataset.actions import ActionType, Contract, View
from mag_dataset.cli import main
from mag_dataset.harness.agents import AgentSpec, AgentSpecError, HeuristicAgent
from mag_dataset.coords import restore_element
from mag_dataset.harness.live_eval import LiveEvalConfig, LiveEvalError, format_table, run_live_eval
from mag_dataset.harness.live_eval.episode import resolve_target, run_episode
from mag_dataset.harness.live_eval.report import EpisodeResult, summarize, wilson_interval
from mag_dataset.harness.live_eval.tasks import normalize_task_id
from mag_dataset.raw import read_episode, iter_episode_dirs
from mag_dataset.schema import Action, Candidate

#: Five MiniWoB++ tasks the heuristic solves from seed 0 (single- and multi-step).
FIVE_TASKS = ("click-button", "click-link", "enter-text", "click-tab", "click-option")


# ----------------------------------------------------------------------------- pure units


def test_wilson_interval_known_values():
    assert wilson_interval(0, 0) is None
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson_interval(0, 2)
    assert lo == 0.0 and hi == pytest.approx(0.6576, abs=1e-4)
    lo, hi = wilson_interval(20, 20)
    assert hi == 1.0 and lo == pytest.approx(0.8389, abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def _result(task, seed, success, steps, ff=0, inv=0, error=None):
    return EpisodeResult(task=task, seed=seed, episode_id=f"{task}.seed-{seed}", success=success,
                         raw_reward=1.0 if success else 0.0, steps=steps, format_failures=ff, invalid_actions=inv,
                         ended_by="task_done", seconds=1.0, error=error)


def test_summarize_rates_and_denominators():
    s = summarize([_result("t", 0, True, 2), _result("t", 1, False, 4, ff=3, inv=1), _result("t", 2, False, 1, error="x")])
    assert s["episodes"] == 3 and s["successes"] == 1 and s["errors"] == 1 and s["scored"] == 2
    assert s["success_rate"] == 0.5  # the errored episode (the infrastructure's) is left out
    assert s["steps"] == 6 and s["steps_per_episode"] == 3.0
    assert s["format_failure_rate"] == 0.5 and s["invalid_action_rate"] == pytest.approx(1 / 6)
    assert s["success_ci95"] == pytest.approx(list(wilson_interval(1, 2)))
    empty = summarize([_result("t", 0, False, 0)])
    assert empty["format_failure_rate"] is None and empty["invalid_action_rate"] is None  # no steps: not applicable


def test_task_ids_and_config_validation(tmp_path):
    assert normalize_task_id("click-button") == "miniwob.click-button"
    assert normalize_task_id("browsergym/miniwob.login-user") == "miniwob.login-user"
    assert normalize_task_id("webarena.310") == "webarena.310"
    with pytest.raises(LiveEvalError, match="unknown BrowserGym benchmark 'nosuch'"):
        normalize_task_id("nosuch.task")
    base = dict(agent=AgentSpec(kind="heuristic"), tasks=("click-button",), episodes=1, view="som", contract="J",
                out_dir=tmp_path)
    cfg = LiveEvalConfig(**{**base, "episodes": 3, "seed": 5})
    assert cfg.jobs() == [("miniwob.click-button", 5), ("miniwob.click-button", 6), ("miniwob.click-button", 7)]
    with pytest.raises(LiveEvalError, match="contract G has no action"):
        LiveEvalConfig(**{**base, "contract": "G"})
    with pytest.raises(LiveEvalError, match="duplicate task ids"):
        LiveEvalConfig(**{**base, "tasks": ("click-button", "miniwob.click-button")})
    with pytest.raises(LiveEvalError, match="episodes must be a positive integer"):
        LiveEvalConfig(**{**base, "episodes": 0})
    with pytest.raises(LiveEvalError, match="no tasks"):
        LiveEvalConfig(**{**base, "tasks": ()})
    with pytest.raises(LiveEvalError, match="seed must be an integer >= 0"):
        LiveEvalConfig(**{**base, "seed": -1})


def test_agent_spec_parsing(tmp_path):
    assert AgentSpec.parse("heuristic").kind == "heuristic"
    s = AgentSpec.parse("openai:gpt-5.5@http://127.0.0.1:8000/v1", max_new_tokens=64)
    assert (s.kind, s.model, s.base_url, s.max_new_tokens, s.label) == (
        "openai", "gpt-5.5", "http://127.0.0.1:8000/v1", 64, "openai:gpt-5.5")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    with pytest.raises(AgentSpecError, match="has no config.json"):
        AgentSpec.parse(str(ckpt))
    (ckpt / "config.json").write_text("{}")
    assert AgentSpec.parse(f"hf:{ckpt}").kind == "hf" and AgentSpec.parse(str(ckpt)).label == "hf:ckpt"
    with pytest.raises(AgentSpecError, match="not found"):
        AgentSpec.parse(str(tmp_path / "missing"))
    with pytest.raises(AgentSpecError, match="unknown agent 'gpt4'"):
        AgentSpec.parse("gpt4")
    with pytest.raises(AgentSpecError, match="bad OpenAI agent"):
        AgentSpec.parse("openai:m@ftp://x")


def test_resolve_target_against_the_live_menu():
    menu = [Candidate("5", "button", "OK", (0, 0, 100, 100)), Candidate("7", "link", "a", (10, 10, 30, 30)),
            Candidate("6", "link", "b", (10, 10, 30, 30))]
    a, t, problem = resolve_target(Action(type="click", element_id="7"), View.SOM, menu)
    assert problem is None and t.id == "7" and a.coordinate == (20.0, 20.0)
    _, t, problem = resolve_target(Action(type="click", element_id="99"), View.SOM, menu)
    assert t is None and "not in the candidate menu" in problem
    # coord: the smallest box containing the point, with unify's documented tie-break
    # (same area -> nearer centre -> earlier in the menu), not a rule of its own
    a, t, problem = resolve_target(Action(type="click", coordinate=(20, 20)), View.COORD, menu)
    assert problem is None and t.id == "7" and a.element_id == "7" and a.coordinate == (20.0, 20.0)
    tie = [Candidate("3", "link", "a", (0, 0, 20, 20)), Candidate("9", "link", "b", (10, 0, 30, 20))]
    for point, expected in (((12, 10), "3"), ((18, 10), "9"), ((15, 10), "3")):
        _, t, _ = resolve_target(Action(type="click", coordinate=point), View.COORD, tie)
        assert t.id == expected == restore_element(point, tie).id, point
    # a point on no candidate is still executed (the page decides), but has no target
    a, t, problem = resolve_target(Action(type="click", coordinate=(500, 500)), View.COORD, menu)
    assert problem is None and t is None and a.element_id is None
    a, t, problem = resolve_target(Action(type="scroll", direction="down"), View.SOM, menu)
    assert (t, problem) == (None, None)


def test_cli_rejects_bad_input_with_one_line(tmp_path, capsys):
    assert main(["live-eval", "--agent", "nope", "--tasks", "click-button", "--view", "som", "--contract", "J",
                 "--out", str(tmp_path / "a")]) == 2
    assert "unknown agent 'nope'" in capsys.readouterr().err
    assert main(["live-eval", "--agent", "heuristic", "--tasks", "no-such-task", "--view", "som", "--contract", "J",
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "unknown MiniWoB++ task 'no-such-task'" in err and "Traceback" not in err
    assert not (tmp_path / "b").exists()  # nothing written for a rejected run
    assert main(["live-eval", "--agent", "heuristic", "--tasks", "click-button", "--view", "som", "--contract", "J",
                 "--episodes", "0", "--out", str(tmp_path / "c")]) == 2
    assert "episodes must be a positive integer" in capsys.readouterr().err
    # a folder with a config.json that is no loadable checkpoint
    bad = tmp_path / "bad-ckpt"
    bad.mkdir()
    (bad / "config.json").write_text("{}")
    assert main(["live-eval", "--agent", str(bad), "--tasks", "click-button", "--view", "som", "--contract", "J",
                 "--out", str(tmp_path / "e"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cannot make agent hf:bad-ckpt" in err and "Traceback" not in err
    # WebArena is not installed here: a clear message saying what to install
    assert main(["live-eval", "--agent", "heuristic", "--tasks", "webarena.310", "--view", "som", "--contract", "J",
                 "--out", str(tmp_path / "d")]) == 2
    assert "needs browsergym.webarena (pip install browsergym-webarena)" in capsys.readouterr().err


# ----------------------------------------------------------------------------- browser runs


def _episodes(out: Path) -> list:
    return [read_episode(d) for d in iter_episode_dirs(out / "episodes")]


def _check_trajectories(out: Path, report: dict, n_expected: int) -> list:
    """Every episode folder is a valid raw episode whose attempt log matches the report."""
    episodes = _episodes(out)
    assert len(episodes) == n_expected == len(report["episodes"])
    by_id = {r["episode_id"]: r for r in report["episodes"]}
    for ep in episodes:
        r = by_id[ep.episode_id]
        traj = ep.metadata["trajectory"]
        assert len(traj) == r["steps"] >= 1
        assert sum(not t["format_ok"] for t in traj) == r["format_failures"]
        assert sum(t["invalid_action"] is not None for t in traj) == r["invalid_actions"]
        assert ep.success == r["success"] == (r["raw_reward"] == 1.0)
        for t in traj:  # every attempt's screenshots are on disk
            assert (out / "episodes" / ep.episode_id / t["screenshot"]).is_file()
            assert (out / "episodes" / ep.episode_id / t["som_screenshot"]).is_file()
        recorded = [t for t in traj if t["recorded_step"] is not None]
        assert [t["recorded_step"] for t in recorded] == list(range(len(ep.steps)))
    return episodes


@pytest.mark.browser
@pytest.mark.slow
def test_heuristic_agent_live_on_five_miniwob_tasks(tmp_path, capsys, chromium):
    """The heuristic agent, som view, contract J, 2 worker processes; the table is printed per task."""
    out = tmp_path / "heuristic"
    rc = main(["live-eval", "--agent", "heuristic", "--tasks", ",".join(FIVE_TASKS), "--episodes", "1",
               "--view", "som", "--contract", "J", "--max-steps", "5", "--workers", "2", "--out", str(out),
               "--no-progress"])
    printed = capsys.readouterr().out
    print(printed)  # the per-task strict success rates, visible with pytest -s
    assert rc == 0
    report = json.loads((out / "report.json").read_text())
    assert list(report["tasks"]) == [f"miniwob.{t}" for t in FIVE_TASKS]
    for t in FIVE_TASKS:
        row = re.search(rf"^\| miniwob\.{re.escape(t)} \| 1 \| 1 \| (\d+\.\d) \|", printed, re.M)  # 1 scored
        assert row, f"no printed row for {t}"
        assert float(row.group(1)) == 100 * report["tasks"][f"miniwob.{t}"]["success_rate"]
    assert "| overall | 5 |" in printed
    overall = report["overall"]
    assert overall["errors"] == 0 and overall["format_failures"] == 0
    assert overall["successes"] >= 4, report["episodes"]  # the heuristic solves these tasks from seed 0
    assert report["tasks"]["miniwob.enter-text"]["steps_per_episode"] >= 2  # multi-step: type, then submit
    episodes = _check_trajectories(out, report, 5)
    # contract J: the agent's own guides are fed back as the next step's previous guides
    enter = next(e for e in episodes if e.site == "enter-text")
    assert enter.steps[0].action.type is ActionType.TYPE and enter.steps[0].guide
    assert all(s.target_bbox is not None for e in episodes for s in e.steps if s.action.type is not ActionType.FINISH)
    assert (out / "report.md").read_text() == format_table(report)
    # another run into the same folder is refused, naming the difference, unless --overwrite
    assert main(["live-eval", "--agent", "heuristic", "--tasks", "click-button", "--view", "som", "--contract", "J",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and "tasks [" in err, err
    # the run folder rebuilds into a dataset with the builder
    from mag_dataset.builder import build_dataset

    import datasets

    built = build_dataset(out / "episodes", tmp_path / "built", progress=False, include_failed=True)
    ds = datasets.load_dataset(str(built), "som")
    n_rows = sum(len(ds[s]) for s in ds)
    assert n_rows == sum(len(e.steps) for e in episodes) > 0


class _Spy(HeuristicAgent):
    """The heuristic agent, remembering every step it was shown."""

    def __init__(self):
        super().__init__(AgentSpec(kind="heuristic"))
        self.seen = []
        self.outputs = []

    def act(self, step, view, contract, screenshot_png):
        self.seen.append(step)
        self.outputs.append(super().act(step, view, contract, screenshot_png))
        return self.outputs[-1]


@pytest.mark.browser
@pytest.mark.slow
def test_coord_view_and_guide_history_per_contract(tmp_path, chromium):
    """coord: points are converted and clicked; J feeds the agent's own guides back, A feeds none."""
    from mag_dataset.parsing import parse_output

    base = dict(agent=AgentSpec(kind="heuristic"), tasks=("enter-text",), episodes=1, view="coord", progress=False)
    spy = _Spy()
    config = LiveEvalConfig(**base, contract="J", out_dir=tmp_path / "j", max_steps=3)
    (tmp_path / "j" / "episodes").mkdir(parents=True)
    result = run_episode(spy, "miniwob.enter-text", 0, config, tmp_path / "j" / "episodes")
    assert result.success and result.steps == 2 and result.invalid_actions == 0, result
    first_guide = parse_output(spy.outputs[0], View.COORD, Contract.J).guide
    assert spy.seen[0].previous_guides == () and spy.seen[1].previous_guides == (first_guide,)
    ep = read_episode(tmp_path / "j" / "episodes" / "enter-text.seed-0")
    traj = ep.metadata["trajectory"]
    assert "mouse_click(" in traj[0]["browsergym_action"]  # type = (hover,) click the point, then keys
    assert "mouse_click(" in traj[1]["browsergym_action"]
    assert [s.action.type for s in ep.steps] == [ActionType.TYPE, ActionType.CLICK]
    assert all(s.action.element_id is not None for s in ep.steps)  # each point resolved to its element
    assert ep.steps[0].guide == first_guide

    spy = _Spy()
    config = LiveEvalConfig(**base, contract="A", out_dir=tmp_path / "a", max_steps=2)
    (tmp_path / "a" / "episodes").mkdir(parents=True)
    result = run_episode(spy, "miniwob.enter-text", 0, config, tmp_path / "a" / "episodes")
    assert [s.previous_guides for s in spy.seen] == [(), ()]  # contract A: no guide history
    assert result.steps == 2 and not result.success  # so the heuristic types again and never submits
    ep = read_episode(tmp_path / "a" / "episodes" / "enter-text.seed-0")
    assert all(s.guide and s.guide_source.value == "template" for s in ep.steps)  # template guides recorded


@pytest.mark.browser
@pytest.mark.slow
def test_tiny_random_vlm_live_counts_format_failures(tmp_path, chromium, tiny_vlm):
    """A tiny random-init checkpoint writes garbage: every failure is counted, nothing crashes."""
    config = LiveEvalConfig(agent=AgentSpec.parse(str(tiny_vlm), max_new_tokens=8), tasks=FIVE_TASKS, episodes=1,
                            view="coord", contract="JG", out_dir=tmp_path / "tiny", max_steps=2, progress=False)
    report = run_live_eval(config, log=lambda s: None)
    overall = report["overall"]
    assert overall["episodes"] == 5 and overall["errors"] == 0
    assert overall["steps"] == 10  # every episode ran its 2 steps: garbage never ends an episode early
    assert overall["format_failures"] >= 1  # random weights, 8 new tokens: not the contract's JSON
    assert 0.0 <= overall["format_failure_rate"] <= 1.0
    assert overall["successes"] == 0
    assert report["agent"]["kind"] == "hf" and report["view"] == "coord" and report["contract"] == "JG"
    episodes = _check_trajectories(tmp_path / "tiny", report, 5)
    for ep in episodes:
        for t in ep.metadata["trajectory"]:
            assert isinstance(t["output"], str)
            if not t["format_ok"]:
                assert t["format_reason"] and t["browsergym_action"] == "noop()"


@pytest.mark.browser
@pytest.mark.slow
def test_openai_endpoint_agent_live(tmp_path, chromium, monkeypatch):
    """An OpenAI-compatible endpoint (stub on 127.0.0.1) answers from the prompt's menu."""
    from stub_openai import StubOpenAI

    monkeypatch.delenv("MAG_TEST_LIVE_KEY", raising=False)

    calls = []

    def responder(body):
        calls.append(body)
        user = next(m for m in body["messages"] if m["role"] == "user")
        text = next(p["text"] for p in user["content"] if p["type"] == "text")
        assert any(p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,")
                   for p in user["content"])
        if len(calls) == 1:  # first step: not the contract's JSON -> a counted format failure
            return "I think I should click the button."
        value = re.search(r'"([^"]+)"', text.split("\n")[0]).group(1)
        for line in text.splitlines():
            m = re.match(r'\[(\w+)\] button "(.*)"$', line)
            if m and m.group(2) == value:
                return json.dumps({"action": {"type": "click", "element": m.group(1)}, "guide": f"Click {value}."})
        return json.dumps({"action": {"type": "finish"}, "guide": "Done."})

    with StubOpenAI(responder=responder) as stub:
        # no response cache: a deterministic endpoint would repeat its cached garbage, since
        # the page and the prompt do not change after a format failure
        spec = AgentSpec.parse(f"openai:stub-model@{stub.base_url}", api_key_env="MAG_TEST_LIVE_KEY")
        config = LiveEvalConfig(agent=spec, tasks=("click-button",), episodes=1, view="som", contract="J",
                                out_dir=tmp_path / "api", max_steps=2, progress=False)
        report = run_live_eval(config, log=lambda s: None)
        assert stub.count == 2 and stub.requests[0]["model"] == "stub-model"
    # the library's prompt builder made the request: its system prompt for the view and contract
    from mag_dataset.prompts import system_prompt

    assert all(b["messages"][0] == {"role": "system", "content": [{"type": "text", "text": system_prompt(View.SOM, Contract.J)}]}
               for b in calls)
    ep = report["episodes"][0]
    assert (ep["success"], ep["steps"], ep["format_failures"], ep["invalid_actions"]) == (True, 2, 1, 0), ep
    (raw,) = _check_trajectories(tmp_path / "api", report, 1)
    assert raw.metadata["trajectory"][0]["output"] == "I think I should click the button."
    assert raw.metadata["trajectory"][0]["browsergym_action"] == "noop()"
    assert len(raw.steps) == 1 and raw.steps[0].guide.startswith("Click ")


@pytest.mark.browser
def test_openai_endpoint_refusing_the_key_stops_the_run(tmp_path, chromium, monkeypatch, capsys):
    from stub_openai import StubOpenAI

    monkeypatch.delenv("MAG_TEST_LIVE_KEY", raising=False)
    with StubOpenAI(responder=lambda body: "{}", require_key="secret") as stub:
        rc = main(["live-eval", "--agent", f"openai:m@{stub.base_url}", "--api-key-env", "MAG_TEST_LIVE_KEY",
                   "--tasks", "click-button", "--view", "som", "--contract", "A", "--out", str(tmp_path / "k"),
                   "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "agent openai:m" in err and "Traceback" not in err
