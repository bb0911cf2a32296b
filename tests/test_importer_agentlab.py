"""``mag import-browsergym`` on AgentLab's own runs (issue 26, item 3).

The fixture (``tests/data/agentlab_runs``, see its README) is four real GenericAgent +
gpt-4o-mini runs on MiniWoB++ from AgentLab's test data, saved by browsergym 0.12 without
screenshots; their step pickles hold AgentLab's chat messages (``dict`` subclasses). Given
by a relative path from another directory, each run is reported once as "no screenshots
saved" and the command exits 1; with a PNG per step written beside them (as BrowserGym
names them) all four import. browsergym 0.14's format is read in ``test_importer_runs.py``.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from mag_dataset.cli import main
from mag_dataset.harness.browsergym_import.unpickle import ChatMessage, load_pickle
from mag_dataset.raw import read_episode

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "agentlab_runs"
RUNS = sorted(p for p in FIXTURE.iterdir() if p.is_dir())
EPISODES = ["miniwob.click-checkboxes.seed-20", "miniwob.click-checkboxes.seed-7", "miniwob.click-dialog.seed-14",
            "miniwob.click-dialog.seed-28"]


def test_the_fixture_holds_agentlabs_four_runs_and_its_licence():
    assert len(RUNS) == 4, RUNS
    assert (FIXTURE / "LICENSE").read_text().count("Apache License") >= 1
    for run in RUNS:
        assert "GenericAgent-gpt-4o-mini_on_miniwob." in run.name
        assert "browsergym-core==0.12.0" in (run / "package_versions.txt").read_text()
        assert (run / "summary_info.json").is_file() and (run / "step_0.pkl.gz").is_file()
        assert not list(run.glob("screenshot*")), run


def test_agentlabs_step_pickles_load_with_their_chat_messages_as_dicts():
    info = load_pickle(gzip.decompress((RUNS[0] / "step_0.pkl.gz").read_bytes()))
    messages = info.agent_info.chat_messages.messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    assert all(isinstance(m, ChatMessage) and isinstance(m, dict) for m in messages)
    assert [m._class.rpartition(".")[2] for m in messages] == ["SystemMessage", "HumanMessage", "BaseMessage"]
    assert "click('18')" in messages[2]["content"]
    assert info.action == "click('18')" and isinstance(info.obs["dom_object"], dict)


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "mag_dataset.cli", "import-browsergym", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=600)


def test_runs_without_screenshots_by_a_relative_path_are_each_reported_once_and_exit_1(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rel = os.path.relpath(FIXTURE, elsewhere)
    assert not Path(rel).is_absolute() and rel.startswith("..")
    proc = _cli([rel, "--out", "raw"], elsewhere)
    assert proc.returncode == 1, (proc.stdout, proc.stderr[-3000:])
    assert "4 experiments: imported 0 episodes (0 steps), skipped 4 (no screenshots saved 4)" in proc.stdout
    for run in RUNS:
        lines = [ln for ln in proc.stdout.splitlines() if run.name in ln]
        assert len(lines) == 1 and lines[0].startswith(f"  skipped {run.name}: no screenshots saved:"), lines
        assert [ln for ln in proc.stderr.splitlines() if run.name in ln] == [f"skipped{lines[0][len('  skipped'):]}"]
    assert "step 0" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    assert not (elsewhere / "raw").exists() or not any((elsewhere / "raw").iterdir())


def _with_screenshots(tmp_path: Path) -> Path:
    """The fixture copied into ``tmp_path/study`` with a PNG per step, named as BrowserGym saves them."""
    study = tmp_path / "study"
    shutil.copytree(FIXTURE, study)
    n = 0
    for step in study.glob("*/step_*.pkl.gz"):
        k = int(re.fullmatch(r"step_(\d+)\.pkl\.gz", step.name).group(1))
        Image.new("RGB", (500, 320), (235, 235, 235)).save(step.parent / f"screenshot_step_{k}.png")
        n += 1
    assert n == 11  # 4 + 3 + 2 + 2 steps
    return study


@pytest.mark.parametrize("how", ["relative", "absolute"])
def test_with_a_screenshot_per_step_all_four_import(how, tmp_path, monkeypatch, capsys):
    study = _with_screenshots(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = os.path.relpath(study, elsewhere) if how == "relative" else str(study)
    assert main(["import-browsergym", path, "--out", "raw", "--no-progress"]) == 0
    assert "4 experiments: imported 4 episodes (7 steps), skipped 0" in capsys.readouterr().out
    raw = elsewhere / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted([*EPISODES, "corpus.json"])  # + the stage record
    ep = read_episode(raw / "miniwob.click-checkboxes.seed-20")
    assert ep.metadata["agent"] == "GenericAgent-gpt-4o-mini" and ep.intent == "Select SQkB, ug and click Submit."
    first = ep.steps[0]
    assert first.metadata["browsergym_action"] == "click('18')"
    assert (first.action.type.value, first.action.element_id) == ("click", "18")
    assert next(c for c in first.candidates if c.id == "18").role == "checkbox"
    assert [s.action.element_id for s in ep.steps] == ["18", "30", "33"]
