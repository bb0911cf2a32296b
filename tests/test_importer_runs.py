"""``mag import-browsergym`` on experiment folders written by ``browsergym-experiments``' own
``ExpArgs.run()`` loop (0.14.3), with scripted agents on MiniWoB++ and on a local order form
(tests/_bgym_runs.py), the way a maintainer imports other people's runs.

The runs are written once per module, in a child process (BrowserGym's process-wide
Playwright and the loop's logging changes stay out of this one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mag_dataset.cli import main
from mag_dataset.harness.browsergym_import import import_experiments
from mag_dataset.harness.browsergym_import.folders import find_experiments
from mag_dataset.raw import read_corpus, read_episode

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HERE = Path(__file__).resolve().parent

RUNS = [
    # BrowserGym's default obs_preprocessor (no dom_object / axtree_object), check() actions;
    # the same task and seed twice: a worse run (a noop, and a check() of a box already checked)
    # then a better one
    {"task": "miniwob.click-checkboxes", "seed": 1, "agent": "click-checkboxes",
     "options": {"noop_first": True, "recheck": True},
     "exp_name": "A_on_miniwob.click-checkboxes_1"},
    {"task": "miniwob.click-checkboxes", "seed": 1, "agent": "click-checkboxes", "exp_name": "B_on_miniwob.click-checkboxes_1"},
    # focus, keyboard_insert_text, check, a <label for> select, a multi-option select, report_infeasible
    {"task": "mag.pizza-infeasible", "seed": 0, "agent": "pizza-infeasible", "preprocessor": "objects"},
    # an AgentLab tool-call agent: actions stored as ToolCallAction.model_dump_json()
    {"task": "mag.pizza", "seed": 0, "agent": "pizza-tools"},
    # BrowserGym's demo agent's preprocessor: no url, goal, element properties, focused bid
    {"task": "miniwob.click-button", "seed": 2, "agent": "click-button", "preprocessor": "demo"},
]
#: Last, in its own folder: a run on a machine without network (tiktoken cannot download).
OFFLINE_RUN = {"task": "miniwob.click-button", "seed": 2, "agent": "click-button", "offline": True}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """(study folder of RUNS, folder of the offline run), written by ExpArgs.run() in a child."""
    base = tmp_path_factory.mktemp("bgym")
    study, offline = base / "study", base / "offline"
    spec = base / "spec.json"
    spec.write_text(json.dumps({"root": str(study), "runs": RUNS + [{**OFFLINE_RUN, "root": str(offline)}]}), "utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(HERE / "_bgym_runs.py"), str(spec)], capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(done) == len(RUNS) + 1
    assert [d["summary"]["cum_reward"] for d in done[:-1]] == [1.0] * len(RUNS), [d["summary"] for d in done]
    return study, offline


@pytest.fixture(scope="module")
def study(runs) -> Path:
    return runs[0]


@pytest.fixture(scope="module")
def imported(study, tmp_path_factory):
    """The study imported once with the defaults: (raw folder, report)."""
    raw = tmp_path_factory.mktemp("imported") / "raw"
    return raw, import_experiments([study], raw)


def _by_task(raw: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    for ep in read_corpus(raw):
        out.setdefault(ep.metadata["browsergym_task"], []).append(ep)
    return out


def test_default_preprocessor_names_from_axtree_txt_and_crop(imported):
    raw, report = imported
    assert report.found == 5 and len(report.imported) == 4, report.summary()
    (a, b) = sorted(_by_task(raw)["miniwob.click-checkboxes"], key=lambda e: e.episode_id)
    for ep in (a, b):
        assert [s.action.type.value for s in ep.steps][-1] == "click" and len(ep.steps) >= 2
        for st in ep.steps:
            target = next(c for c in st.candidates if c.id == st.action.element_id)
            assert target.text and target.role in ("checkbox", "button"), target  # was ('generic', '')
            assert all(c.text for c in st.candidates)
            # cropped to MiniWoB's task area, as the DOM path does (the page is 498 px wide)
            assert st.image_width < 300 and st.metadata["conversion"]["crop"][2] < 300
        assert ep.steps[-1].guide == "Click the 'Submit' button."
    # check() became a click on the box, named by the box's label; the noop and the check() of a
    # box already checked (read from axtree_txt) are dropped
    assert all(s.guide.startswith("Click the '") and s.guide.endswith("' checkbox.") for s in a.steps[:-1])
    assert len(a.steps) == len(b.steps) and a.metadata["n_steps"] == b.metadata["n_steps"] + 2
    assert [s.metadata["browsergym_action"] for s in a.steps] == [s.metadata["browsergym_action"] for s in b.steps]


def test_focus_check_insert_text_infeasible_import_and_gold_echo_scores_one(imported, tmp_path):
    from mag_dataset.builder import build_dataset
    from mag_dataset.dataset import load_steps
    from mag_dataset.predictions import Prediction
    from mag_dataset.prompts import render_target
    from mag_dataset.scoring import METRIC_NAMES, GoldSteps, score_predictions

    raw = imported[0]
    (ep,) = _by_task(raw)["mag.pizza-infeasible"]
    acts = [(s.action.type.value, s.action.text, s.action.value, s.action.answer) for s in ep.steps]
    assert acts == [
        ("click", None, None, None),  # focus()
        ("type", "Ann", None, None),  # keyboard_insert_text() into the focused field
        ("click", None, None, None),  # check()
        ("select", None, "Large", None),
        ("select", None, "Ham, Olives", None),  # select_option(bid, [...]): the documented join
        ("finish", None, None, "There is no purple crust: the form has no crust option."),  # the reason kept
    ]
    named = [next(c for c in s.candidates if c.id == s.action.element_id).text for s in ep.steps[:5]]
    assert named == ["Your name", "Your name", "Subscribe to news", "Size", "Toppings"]  # Size: <label for>
    assert ep.steps[3].guide == "Select 'Large' from the Size drop-down."

    built = build_dataset(raw, tmp_path / "ds", progress=False)
    for view in ("som", "coord"):
        both = {v: [s for split in ("train", "test") for s in load_steps(built, v, split)
                    if s.step_id.startswith(ep.task_id + ":")] for v in ("som", view)}
        mine = GoldSteps.from_views(view, both)  # coord: with the som menus JG's consistency reads
        assert len(mine) == 6
        for contract in ("A", "JG"):
            report = score_predictions([Prediction(s.step_id, render_target(s, view, contract)) for s in mine], mine,
                                       view, contract)
            data = json.loads(report.to_json())
            values = [data[m]["micro"] for m in METRIC_NAMES if data[m]["micro"] is not None]
            assert values and all(v == 1.0 for v in values), (view, contract, data)


def test_tool_call_actions_are_mapped(imported):
    (ep,) = _by_task(imported[0])["mag.pizza"]
    assert [s.action.type.value for s in ep.steps] == ["type", "click", "select", "select", "click"]
    assert ep.steps[0].metadata["browsergym_action"].lstrip().startswith("{")
    assert ep.steps[-1].guide == "Click the 'Order' button." and ep.steps[4].action.element_id


def test_demo_preprocessor_names_the_missing_keys(imported):
    (reason,) = [r for d, r in imported[1].skipped if "click-button" in d]
    assert reason.startswith("missing observation keys extra_element_properties, url, goal, focused_element_bid")
    assert "demo-agent obs_preprocessor" in reason and "not visible" not in reason


def test_repeats_share_a_task_key_and_a_split_and_keep_first_or_best(study, imported, tmp_path):
    from mag_dataset.builder import read_splits

    raw = imported[0]
    reps = _by_task(raw)["miniwob.click-checkboxes"]
    assert sorted(e.episode_id for e in reps) == ["miniwob.click-checkboxes.seed-1", "miniwob.click-checkboxes.seed-1-2"]
    assert {e.metadata["task_key"] for e in reps} == {"miniwob.click-checkboxes.seed-1"}
    episodes = list(read_corpus(raw))
    splits = read_splits(raw, episodes).splits
    assert len({splits[e.task_id] for e in reps}) == 1
    # (the gold-echo test builds this corpus: repeats keep distinct step ids)

    first = import_experiments([study], tmp_path / "first", keep="first")
    best = import_experiments([study], tmp_path / "best", keep="best")
    assert len(first.imported) == len(best.imported) == 3

    def kept(raw_dir):
        (ep,) = _by_task(raw_dir)["miniwob.click-checkboxes"]
        return ep.metadata["experiment"].split("_Scripted")[0], ep.metadata["n_steps"]

    (fa, na), (fb, nb) = kept(tmp_path / "first"), kept(tmp_path / "best")
    assert na == nb + 2 and fa < fb  # first: the earlier run with its noop and re-check; best: the later one
    assert any(r.startswith("a repeat: task key 'miniwob.click-checkboxes.seed-1' has a better run") for _, r in best.skipped)
    # a task-key rule: every seed of a task is one key
    by_task = import_experiments([study], tmp_path / "bytask", task_key="task", keep="first")
    assert len(by_task.imported) == 3


def test_symlinked_experiment_folders_are_followed(study, tmp_path):
    root = tmp_path / "linked"
    (root / "team").mkdir(parents=True)
    (root / "team" / "study").symlink_to(study, target_is_directory=True)
    (root / "team" / "loop").symlink_to(root, target_is_directory=True)  # a cycle ends
    exp = sorted(study.iterdir())[0]
    (root / "one").symlink_to(exp, target_is_directory=True)  # the same folder twice counts once
    assert len(find_experiments([root])) == 5
    assert len(import_experiments([root], tmp_path / "raw").imported) == 4


def test_offline_tiktoken_crash_is_reported(runs, tmp_path):
    report = import_experiments([runs[1]], tmp_path / "raw")
    ((_, reason),) = report.skipped
    # BrowserGym's loop could not even write summary_info.json (the agent returns an AgentInfo)
    assert reason.startswith("unsuccessful: the run crashed in BrowserGym's token counting") and "tiktoken" in reason


def test_cli_task_key_and_keep(study, tmp_path, capsys):
    assert main(["import-browsergym", str(study), "--out", str(tmp_path / "raw"), "--keep", "best",
                 "--task-key", "task-seed"]) == 0
    assert "5 experiments: imported 3 episodes" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["import-browsergym", str(study), "--out", str(tmp_path / "raw2"), "--keep", "worst"])
    assert e.value.code == 2 and "invalid choice: 'worst'" in capsys.readouterr().err
    assert read_episode(next(p for p in (tmp_path / "raw").iterdir() if p.name.startswith("mag.pizza.")))
