"""BrowserGym/AgentLab experiment import, on synthetic experiment directories written with
the same layout and pickled classes as ``browsergym.experiments.loop`` (ExpArgs, StepInfo,
summary_info.json, screenshot_step_N.png, goal_object.pkl.gz). browsergym-experiments is not
installed, so the test defines stand-ins of its classes under their real module names while
writing, and removes them before importing — as on a machine that only has the runs.
"""

from __future__ import annotations

import gzip
import json
import pickle
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mag_dataset.cli import main
from mag_dataset.harness.browsergym_import import import_experiments
from mag_dataset.harness.browsergym_import.actions import map_action, parse_action_calls
from mag_dataset.harness.browsergym_import.folders import find_experiments
from mag_dataset.harness.browsergym_import.unpickle import load_pickle
from mag_dataset.raw import read_corpus, read_episode

# Field names as in browsergym/experiments/loop.py (BrowserGym 0.14).
LOOP_SOURCE = '''
from dataclasses import dataclass, field

@dataclass
class EnvArgs:
    task_name: str
    task_seed: int = None
    max_steps: int = None
    headless: bool = True
    record_video: bool = False
    wait_for_user_message: bool = False
    viewport: dict = None
    slow_mo: int = None
    storage_state: object = None
    task_kwargs: dict = None

@dataclass
class ExpArgs:
    agent_args: object
    env_args: EnvArgs
    exp_dir: str = None
    exp_name: str = None
    enable_debug: bool = True
    err_msg: str = None
    stack_trace: str = None
    order: int = None
    logging_level: int = 20
    exp_id: str = None
    depends_on: tuple = ()
    save_screenshot: bool = True
    save_som: bool = False

@dataclass
class StepTimestamps:
    env_start: float = 0
    action_exec_start: float = 0
    action_exec_stop: float = 0
    action_exect_after_timeout: float = 0
    env_stop: float = 0
    agent_start: float = 0
    agent_stop: float = 0

@dataclass
class StepInfo:
    step: int = None
    obs: dict = None
    reward: float = 0
    raw_reward: float = 0
    terminated: bool = None
    truncated: bool = None
    action: str = None
    agent_info: dict = field(default_factory=dict)
    stats: dict = None
    profiling: StepTimestamps = field(default_factory=StepTimestamps)
    task_info: dict = None
'''

AGENT_SOURCE = '''
from dataclasses import dataclass

@dataclass
class GenericAgentArgs:
    agent_name: str = "GenericAgent-gpt"
    chat_model_args: object = None
'''


class FakeBrowserGym:
    """Stand-ins for browsergym.experiments.loop and an AgentLab agent-args class."""

    def __enter__(self):
        self.names = ["browsergym.experiments", "browsergym.experiments.loop", "agentlab", "agentlab.agents"]
        for name in self.names[:1] + self.names[2:]:
            sys.modules[name] = types.ModuleType(name)
        for name, src in (("browsergym.experiments.loop", LOOP_SOURCE), ("agentlab.agents", AGENT_SOURCE)):
            mod = types.ModuleType(name)
            sys.modules[name] = mod
            exec(src, mod.__dict__)
        self.loop = sys.modules["browsergym.experiments.loop"]
        self.agents = sys.modules["agentlab.agents"]
        return self

    def __exit__(self, *exc):
        for name in self.names:
            sys.modules.pop(name, None)


def dom_snapshot(bids):
    """A DOMSnapshot (CDP format) of html > body > div#wrap > [div#query, input, button]."""
    strings = []

    def s(v):
        if v not in strings:
            strings.append(v)
        return strings.index(v)

    # (parent, type, name, value, attrs)
    nodes = [
        (-1, 1, "HTML", None, {}),
        (0, 1, "BODY", None, {}),
        (1, 1, "DIV", None, {"id": "wrap", "bid": bids["wrap"]}),
        (2, 1, "DIV", None, {"id": "query", "bid": bids["query"]}),
        (3, 3, "#text", "Enter ann and submit.", {}),
        (2, 1, "INPUT", None, {"type": "text", "bid": bids["input"]}),
        (2, 1, "BUTTON", None, {"bid": bids["button"]}),
        (6, 3, "#text", "Submit", {}),
    ]
    doc = {"nodes": {
        "parentIndex": [n[0] for n in nodes],
        "nodeType": [n[1] for n in nodes],
        "nodeName": [s(n[2]) for n in nodes],
        "nodeValue": [s(n[3]) if n[3] is not None else -1 for n in nodes],
        "attributes": [[x for k, v in n[4].items() for x in (s(k), s(v))] for n in nodes],
    }}
    return {"documents": [doc], "strings": strings}


BOXES = {"wrap": [0, 0, 240, 240], "query": [0, 0, 240, 50], "input": [20, 60, 150, 30], "button": [20, 110, 80, 30]}
BIDS = {"wrap": "2", "query": "3", "input": "5", "button": "6"}


def observation(with_dom=True, url="file:///miniwob/login.html", goal="Enter ann and submit.", shade=0):
    shot = np.full((300, 320, 3), 255 - shade, dtype=np.uint8)
    for k, (x, y, w, h) in BOXES.items():
        shot[y:y + h, x:x + w] = (200, 210 + 10 * len(k) % 40, 230)
    obs = {
        "chat_messages": ({"role": "assistant", "message": "Hi! I am your UI assistant."},),
        "goal": goal,
        "goal_object": ({"type": "text", "text": goal},),
        "open_pages_urls": (url,),
        "active_page_index": np.asarray([0]),
        "url": url,
        "screenshot": shot,
        "axtree_object": {"nodes": [
            {"nodeId": "1", "browsergym_id": BIDS["input"], "role": {"value": "textbox"}, "name": {"value": "Username"}},
            {"nodeId": "2", "browsergym_id": BIDS["button"], "role": {"value": "button"}, "name": {"value": "Submit"}},
        ]},
        "extra_element_properties": {
            BIDS[k]: {"visibility": 1.0, "bbox": list(map(float, b)), "clickable": k in ("input", "button"),
                      "set_of_marks": k in ("input", "button")}
            for k, b in BOXES.items()
        },
        "focused_element_bid": BIDS["input"],
        "last_action": "",
        "last_action_error": "",
        "elapsed_time": np.asarray([0.5]),
    }
    if with_dom:
        obs["dom_object"] = dom_snapshot(BIDS)
    return obs


def write_experiment(fb, root: Path, task: str, seed: int, actions: list[str], reward=1.0, err=None, with_dom=True,
                     url="file:///miniwob/login.html", goal_in_file=False, name=None, task_info=None):
    """Write one experiment directory the way ExpArgs.run / StepInfo.save_step_info do."""
    exp_name = f"GenericAgent-gpt_on_{task}_{seed}"
    exp = root / (name or f"2026-11-29_10-00-00_{exp_name}")
    exp.mkdir(parents=True)
    args = fb.loop.ExpArgs(agent_args=fb.agents.GenericAgentArgs(), env_args=fb.loop.EnvArgs(task_name=task, task_seed=seed),
                           exp_dir=str(exp), exp_name=exp_name)
    (exp / "exp_args.pkl").write_bytes(pickle.dumps(args))
    for n, action in enumerate(actions + [None]):
        info = fb.loop.StepInfo(step=n, obs=observation(with_dom, url), reward=reward if action is None else 0.0,
                                raw_reward=reward if action is None else 0.0, terminated=action is None,
                                truncated=False, action=action, agent_info={"think": "..."},
                                task_info=task_info if action is None else None)
        shot = info.obs.pop("screenshot")
        Image.fromarray(shot).save(exp / f"screenshot_step_{n}.png")
        if goal_in_file:  # BrowserGym >= 0.13 saves goal_object once, leaves None in obs
            if not (exp / "goal_object.pkl.gz").exists():
                (exp / "goal_object.pkl.gz").write_bytes(gzip.compress(pickle.dumps(info.obs["goal_object"])))
            info.obs["goal_object"] = None
            info.obs["goal"] = ""
        (exp / f"step_{n}.pkl.gz").write_bytes(gzip.compress(pickle.dumps(info)))
    summary = {"n_steps": len(actions), "cum_reward": reward, "cum_raw_reward": reward, "err_msg": err,
               "stack_trace": None, "stats.cum_steps": len(actions) + 1, "terminated": True, "truncated": False}
    (exp / "summary_info.json").write_text(json.dumps(summary, indent=4))
    (exp / "package_versions.txt").write_text("browsergym-core==0.14.3\n")
    (exp / "experiment.log").write_text("")
    return exp


@pytest.fixture()
def study(tmp_path):
    root = tmp_path / "study"
    with FakeBrowserGym() as fb:
        write_experiment(fb, root, "miniwob.login-user", 3, ["fill('5', 'ann')", "click('6')"])
        write_experiment(fb, root, "miniwob.login-user", 4, ["noop()", "mouse_click(60.0, 125.0)", "keyboard_press('Enter')"])
        write_experiment(fb, root, "miniwob.login-user", 3, ["fill('5', 'ann')", "click(\"6\", button='left')"],
                         name="2026-11-29_11-00-00_GenericAgent-gpt_on_miniwob.login-user_3")  # same task+seed again
        write_experiment(fb, root, "webarena.310", 0, ["fill('5', 'ann')", "hover('6')", "send_msg_to_user('ann')"],
                         with_dom=False, url="http://localhost:7770/customer/account/", goal_in_file=True)
        write_experiment(fb, root, "miniwob.login-user", 5, ["click('6')"], reward=0.0)  # failed
        write_experiment(fb, root, "miniwob.login-user", 6, ["click('6')"], err="TimeoutError: ...")  # crashed
        write_experiment(fb, root, "miniwob.login-user", 7, ["drag_and_drop('5', '6')"])  # no equivalent
        write_experiment(fb, root, "miniwob.login-user", 8, ["click('6')\nclick('5')"])  # two actions in one step
        write_experiment(fb, root, "miniwob.login-user", 9, ["click('99')"])  # unknown element
        write_experiment(fb, root, "miniwob.login-user", 1, ["click('6')"], name="_2026-11-29_GenericAgent-gpt_on_miniwob.login-user_1")
        (root / "unfinished" / "x").mkdir(parents=True)
        (root / "unfinished" / "x" / "step_0.pkl.gz").write_bytes(b"")
    assert "browsergym.experiments.loop" not in sys.modules  # the importer must not need it
    return root


def test_miniwob_partial_credit_is_not_success(tmp_path):
    """BrowserGym's MiniWoB reward is 1 for any positive raw reward: the raw reward decides."""
    root = tmp_path / "study"
    with FakeBrowserGym() as fb:
        write_experiment(fb, root, "miniwob.login-user", 1, ["click('6')"],
                         task_info={"RAW_REWARD_GLOBAL": 0.6, "DONE_GLOBAL": True})  # partial credit, reward 1
        write_experiment(fb, root, "miniwob.login-user", 2, ["click('6')"],
                         task_info={"RAW_REWARD_GLOBAL": 1, "DONE_GLOBAL": True})
    report = import_experiments([root], tmp_path / "raw")
    assert report.imported == ["miniwob.login-user.seed-2"]
    ((_, reason),) = report.skipped
    assert reason.startswith("unsuccessful: MiniWoB raw reward 0.6 < 1")


def test_unreadable_files_skip_only_their_episode(tmp_path):
    """A truncated screenshot or goal pickle skips that experiment, with the file named; the rest import."""
    root = tmp_path / "study"
    with FakeBrowserGym() as fb:
        bad_png = write_experiment(fb, root, "miniwob.login-user", 1, ["click('6')"])
        bad_goal = write_experiment(fb, root, "webarena.310", 2, ["click('6')"], with_dom=False,
                                    url="http://localhost:7770/", goal_in_file=True)
        write_experiment(fb, root, "miniwob.login-user", 3, ["click('6')"])
    # the step pickles hold no screenshot (BrowserGym saves it apart): the PNG is read
    (bad_png / "screenshot_step_0.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    (bad_goal / "goal_object.pkl.gz").write_bytes(b"not gzip")
    report = import_experiments([root], tmp_path / "raw")
    assert report.imported == ["miniwob.login-user.seed-3"]
    reasons = dict(report.skipped)
    assert reasons[bad_png.name].startswith("screenshot_step_0.png cannot be read")
    assert reasons[bad_goal.name].startswith("goal_object.pkl.gz cannot be read")


def test_import_successful_episodes_only(study, tmp_path):
    raw = tmp_path / "raw"
    report = import_experiments([study], raw)
    assert report.found == 10  # the "_" superseded run is not searched
    assert sorted(report.imported) == ["miniwob.login-user.seed-3", "miniwob.login-user.seed-3-2",
                                       "miniwob.login-user.seed-4", "webarena.310.seed-0"]
    reasons = dict(report.skipped)
    assert len(reasons) == 6
    assert reasons["2026-11-29_10-00-00_GenericAgent-gpt_on_miniwob.login-user_5"].startswith("unsuccessful: cum_reward 0.0")
    assert reasons["2026-11-29_10-00-00_GenericAgent-gpt_on_miniwob.login-user_6"] == "unsuccessful: the run ended with an error"
    assert "drag_and_drop() has no equivalent" in reasons["2026-11-29_10-00-00_GenericAgent-gpt_on_miniwob.login-user_7"]
    assert "holds 2 actions" in reasons["2026-11-29_10-00-00_GenericAgent-gpt_on_miniwob.login-user_8"]
    assert "not visible" in reasons["2026-11-29_10-00-00_GenericAgent-gpt_on_miniwob.login-user_9"]
    assert "no summary_info.json" in reasons["x"]

    eps = {e.episode_id: e for e in read_corpus(raw)}  # every episode validates as raw format v1
    assert len(eps) == 4 and report.steps == sum(len(e.steps) for e in eps.values()) == 9
    ep = eps["miniwob.login-user.seed-3"]
    assert (ep.site, ep.intent_template_id, ep.intent, ep.source, ep.seed, ep.reward) == (
        "login-user", "login-user", "Enter ann and submit.", "browsergym", 3, 1.0)
    assert ep.metadata["agent"] == "GenericAgent-gpt" and ep.metadata["browsergym_task"] == "miniwob.login-user"
    s0, s1 = ep.steps
    assert [c.id for c in s0.candidates] == ["5", "6"]
    # MiniWoB: cropped to #wrap (240x240 of the 320x300 screenshot)
    assert (s0.image_width, s0.image_height) == (240, 240)
    assert s0.action.to_dict() | {} == {"type": "type", "element_id": "5", "coordinate": [95.0, 75.0], "text": "ann",
                                         "value": None, "direction": None, "key": None, "url": None, "answer": None}
    assert s0.target_bbox == (20.0, 60.0, 170.0, 90.0) and s0.guide == "Type 'ann' into the Username field."
    assert s1.action.type.value == "click" and s1.action.element_id == "6" and s1.guide == "Click the 'Submit' button."
    assert s1.metadata["browsergym_action"] == "click('6')" and s1.metadata["conversion"]["scale_factor"] == 1.5
    folder = raw / "miniwob.login-user.seed-3"
    with Image.open(folder / s0.screenshot) as a, Image.open(folder / s0.som_screenshot) as b:
        assert a.size == b.size == (240, 240) and a.tobytes() != b.tobytes()

    # noop dropped; mouse_click becomes a coordinate-only click with a point box
    ep4 = eps["miniwob.login-user.seed-4"]
    assert [s.action.type.value for s in ep4.steps] == ["click", "press"]
    assert ep4.steps[0].action.element_id is None and ep4.steps[0].action.coordinate == (60.0, 125.0)
    assert ep4.steps[0].target_bbox == (60.0, 125.0, 60.0, 125.0) and ep4.steps[0].metadata["browsergym_step"] == 1

    # no DOM snapshot: AX tree + set-of-marks properties; WebArena site from the port; goal from goal_object.pkl.gz
    wa = eps["webarena.310.seed-0"]
    assert (wa.site, wa.intent_template_id, wa.intent) == ("shopping", "webarena.310", "Enter ann and submit.")
    assert [s.action.type.value for s in wa.steps] == ["type", "hover", "finish"]
    assert wa.steps[2].action.answer == "ann" and wa.steps[0].image_width == 320
    assert [(c.id, c.role, c.text) for c in wa.steps[0].candidates] == [("5", "textbox", "Username"), ("6", "button", "Submit")]


def test_import_then_unify_then_build(study, tmp_path):
    import datasets

    from mag_dataset.builder import build_dataset
    from mag_dataset.harness.unify import unify_corpus

    raw = tmp_path / "raw"
    import_experiments([study], raw)
    rep = unify_corpus(raw)
    assert rep.restored == 1  # the mouse_click lands on the button
    st = read_episode(raw / "miniwob.login-user.seed-4").steps[0]
    assert st.action.element_id == "6" and st.metadata["coordinate_restored"]
    out = build_dataset(raw, tmp_path / "ds", progress=False)
    dd = datasets.load_dataset(str(out), "som")
    rows = [r for s in dd for r in dd[s]]
    assert len(rows) == 9
    assert sum(r["coordinate_restored"] for r in rows) == 1


def test_rerun_skips_existing_unless_overwrite(study, tmp_path):
    raw = tmp_path / "raw"
    import_experiments([study], raw)
    again = import_experiments([study], raw)
    assert again.imported == [] and sum("already imported" in r for _, r in again.skipped) == 4
    assert len(import_experiments([study], raw, overwrite=True).imported) == 4


def test_restricted_unpickler_never_calls_unknown_code():
    class Evil:
        def __reduce__(self):
            return (__import__("os").system, ("echo pwned > /dev/null",))

    obj = load_pickle(pickle.dumps(Evil()))
    assert type(obj).__name__ == "system" and obj._args == ("echo pwned > /dev/null",)


def test_action_mapping_table():
    from mag_dataset.harness.browsergym_import.observation import _View
    from mag_dataset.schema import Candidate

    def view():
        return _View(b"", b"", 200, 100, [Candidate("5", "textbox", "Name", (10, 10, 110, 30))], (50, 20, 250, 120), 1.5,
                     "", "5", {"5": (10, 10, 110, 30), "9": (0, 50, 20, 70)}, {"9": ("link", "Help")})

    def m(text):
        got = map_action(text, view())
        return None if got is None else got[0].to_dict()

    assert m("noop()") is None and m("scroll(0, 0)") is None
    assert m("scroll(0, 200)")["direction"] == "down" and m("scroll(-300, 100)")["direction"] == "left"
    assert m("keyboard_press('Enter')")["key"] == "Enter" and m("press('5', 'Control+a')")["key"] == "Control+a"
    assert m("keyboard_type('hi')") == m("fill('5', 'hi')")  # typed into the focused element
    assert m("clear('5')")["text"] == "" and m("select_option('5', ['b'])")["value"] == "b"
    assert m("tab_focus(2)")["value"] == "2" and m("tab_close()")["type"] == "close_tab"
    assert m("send_msg_to_user('42')")["answer"] == "42" and m("goto('http://x')")["url"] == "http://x"
    # an element outside the marked menu but visible joins the menu with its AX name
    v = view()
    action, target, box = map_action("hover('9')", v)
    assert (action.element_id, target.role, target.text, box) == ("9", "link", "Help", (0, 50, 20, 70)) and len(v.candidates) == 2
    # mouse_click takes full-screenshot px; the screenshot was cropped at (50, 20)
    assert m("mouse_click(100, 70)")["coordinate"] == [50.0, 50.0]
    # focus/check/uncheck click the element; keyboard_insert_text types into the focused one;
    # several options are one select whose value lists them; report_infeasible keeps its reason
    assert m("focus('5')") == m("check('5')") == m("uncheck('5')") == m("click('5')")
    v = view()
    v.checked = {"5": True}
    assert map_action("check('5')", v) is None and map_action("uncheck('5')", v)[0].type.value == "click"
    assert m("keyboard_insert_text('hi')") == m("fill('5', 'hi')")
    assert m("select_option('5', ['a', 'b'])")["value"] == "a, b"
    assert m("report_infeasible(reason='no such field')")["answer"] == "no such field" == m("report_infeasible('no such field')")["answer"]
    # AgentLab tool-call actions (ToolCallAction.model_dump_json(); OpenAI-style string arguments too)
    assert m('{"id": "c1", "function": {"name": "fill", "arguments": {"bid": "5", "value": "hi"}}}') == m("fill('5', 'hi')")
    assert m('{"name": "click", "arguments": "{\\"bid\\": \\"5\\"}"}') == m("click('5')")
    for bad in ("mouse_click(10, 10)", "select_option('5', [])", "upload_file('5', 'f')", '{"function": {"arguments": {}}}',
                '{"name": "click", "arguments": [1]}', "{not json"):
        with pytest.raises(ValueError):
            map_action(bad, view())


def test_find_experiments_skips_superseded_runs(study):
    found = find_experiments([study])
    assert len(found) == 10 and not any(p.name.startswith("_") for p in found)


def test_action_parsing():
    assert parse_action_calls("click('12', button='left')") == [("click", ["12"], {"button": "left"})]
    for bad in ("click(x)", "import os", "x = 1"):
        with pytest.raises(ValueError):
            parse_action_calls(bad)


def test_cli(study, tmp_path, capsys):
    assert main(["import-browsergym", str(study), "--out", str(tmp_path / "raw")]) == 0
    out = capsys.readouterr().out
    assert "10 experiments: imported 4 episodes (9 steps), skipped 6" in out
    assert main(["import-browsergym", str(tmp_path / "nope"), "--out", str(tmp_path / "raw")]) == 2
    assert "experiment directory not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["import-browsergym", str(tmp_path / "empty"), "--out", str(tmp_path / "raw2")]) == 2
    assert "no BrowserGym experiment directory" in capsys.readouterr().err


@pytest.mark.browser
@pytest.mark.slow
def test_import_a_real_browsergym_run(tmp_path, chromium):
    """A real MiniWoB++ episode in BrowserGym (system Chromium), saved the way
    ``ExpArgs.run`` saves it, imports and unifies: the mouse_click lands on the Login button."""
    from mag_dataset.harness.unify import unify_corpus
    from mag_dataset.live.env import make_env, strict_success
    from mag_dataset.live.observe import observe

    import browsergym.core as bg_core

    exp = tmp_path / "study" / "2026-11-29_12-00-00_Expert_on_miniwob.login-user_3"
    exp.mkdir(parents=True)
    started_here = bg_core._PLAYWRIGHT is None
    with FakeBrowserGym() as fb:
        env = make_env("login-user")
        try:
            obs, info = env.reset(seed=3)
            goal = obs["goal"]
            user, pw = re.findall(r'"([^"]+)"', goal)
            ob = observe(obs)
            bids = {el.attrs.get("id"): bid for bid, el in ob.elements.items()}
            x0, y0, x1, y1 = ob.elements[bids["subbtn"]].bbox  # full-screenshot px, as mouse_click takes them
            actions = [f"fill('{bids['username']}', '{user}')", f"fill('{bids['password']}', '{pw}')",
                       f"mouse_click({(x0 + x1) / 2}, {(y0 + y1) / 2})"]
            infos = [fb.loop.StepInfo(step=0, obs=obs, terminated=False, truncated=False)]
            for n, action in enumerate(actions):
                infos[-1].action = action
                obs, reward, term, trunc, info = env.step(action)
                infos.append(fb.loop.StepInfo(step=n + 1, obs=obs, reward=reward, terminated=term, truncated=trunc))
            assert strict_success(info)
        finally:
            env.close()
            if started_here and bg_core._PLAYWRIGHT is not None:
                # BrowserGym keeps a global sync Playwright running in this thread; stop the one
                # this test started, so later sync_playwright() users in the process still work
                pw = bg_core._PLAYWRIGHT
                bg_core._set_global_playwright(None)
                pw.stop()
        (exp / "exp_args.pkl").write_bytes(pickle.dumps(fb.loop.ExpArgs(
            agent_args=fb.agents.GenericAgentArgs(agent_name="Expert"),
            env_args=fb.loop.EnvArgs(task_name="miniwob.login-user", task_seed=3))))
        for si in infos:
            Image.fromarray(si.obs.pop("screenshot")).save(exp / f"screenshot_step_{si.step}.png")
            (exp / f"step_{si.step}.pkl.gz").write_bytes(gzip.compress(pickle.dumps(si)))
        (exp / "summary_info.json").write_text(json.dumps({"n_steps": 3, "cum_reward": 1.0, "err_msg": None,
                                                           "terminated": True, "truncated": False}))
    raw = tmp_path / "raw"
    report = import_experiments([tmp_path / "study"], raw)
    assert report.imported == ["miniwob.login-user.seed-3"], report.skipped
    ep = read_episode(raw / "miniwob.login-user.seed-3")
    assert ep.intent == goal and [s.action.type.value for s in ep.steps] == ["type", "type", "click"]
    assert ep.steps[0].guide == f"Type '{user}' into the Username field."
    assert ep.steps[2].action.element_id is None
    assert unify_corpus(raw).restored == 1
    st = read_episode(raw / "miniwob.login-user.seed-3").steps[2]
    login = next(c for c in st.candidates if c.id == st.action.element_id)
    assert (login.role, login.text) == ("button", "Login")
