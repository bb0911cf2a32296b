"""``mag import-webarena`` on result folders written by WebArena's own code, one per site.

:func:`mag_dataset.sites.webarena_run.record_run` runs a template's expert the way WebArena's
``run.py`` runs an agent (webarenax's ``ScriptBrowserEnv`` with tracing on, its
``RenderHelper``, its evaluators, ``[Result]`` log lines): no hand-written render files or
traces. Each site's folder (one short template, recorded once for the module) is imported,
unified, built, and its gold echo scores 1.0; on the forum, the batch rules (FAIL, no trace,
an action without a counterpart, no verdict, resuming, ``--all``) are checked on copies of it,
the forum's run goes the whole documented path (import, unify, recapture, audit, build), and
a copy of it whose step 1 has no screenshot (none rendered, no screencast frame) is imported,
refused by the build and given one by ``mag recapture``.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: one short template per site (seed 0): 3 to 7 WebArena actions each (click, type, scroll, press, stop)
TEMPLATES = {"forum": "sites.forum.open_search_results", "shop": "sites.shop.product_price",
             "tracker": "sites.tracker.ticket_reporter", "wiki": "sites.wiki.talk_page"}
SITES = [pytest.param(name, marks=pytest.mark.xdist_group(f"site-{name}"), id=name) for name in TEMPLATES]
#: WebArena's id-based action (its first word) -> the imported step's action type
KINDS = {"click": "click", "type": "type", "hover": "hover", "scroll": "scroll", "press": "press", "goto": "goto",
         "go_back": "go_back", "go_forward": "go_forward", "new_tab": "new_tab", "tab_focus": "tab_focus",
         "close_tab": "close_tab", "stop": "finish"}

_runs: dict[str, tuple] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``site -> (summary, result folder, config folder)``, each site's run recorded once per module."""
    from mag_dataset.sites.webarena_run import record_run

    def get(name: str):
        if name not in _runs:
            root = tmp_path_factory.mktemp(f"webarena-{name}")
            summary = record_run([TEMPLATES[name]], root / "results", root / "config_files")
            _runs[name] = (summary, root / "results", root / "config_files")
        return _runs[name]

    yield get
    _runs.clear()


def _mag(*args: str) -> int:
    from mag_dataset.cli import main

    return main(list(args))


@pytest.mark.parametrize("site", SITES)
def test_a_webarena_run_imports_unifies_builds_and_its_gold_echo_scores_one(site, runs, tmp_path):
    from mag_dataset.harness.webarena_import.convert import _node_name, _plain
    from mag_dataset.raw import read_episode

    summary, results, configs = runs(site)
    (task,) = summary.tasks
    assert task.passed, task.reason
    # what run.py writes, by WebArena's own code
    assert (results / "render_0.html").is_file() and (results / "traces" / "0.zip").is_file()
    log = Path((results / "log_files.txt").read_text().split()[0])
    assert f"[Result] (PASS) {configs / '0.json'}" in log.read_text()
    config = json.loads((configs / "0.json").read_text())

    raw = tmp_path / "raw"
    assert _mag("import-webarena", str(results), "--configs", str(configs), "--out", str(raw)) == 0
    ep = read_episode(raw / "webarena.0")
    assert (ep.intent, ep.site, ep.source, ep.success) == (config["intent"], "+".join(config["sites"]), "webarena", True)
    assert ep.intent_template_id == str(config["intent_template_id"])
    assert ep.metadata["webarena"]["instantiation_dict"] == config["instantiation_dict"]
    # every step's action type, in order; the targets' labels and boxes against WebArena's observation
    assert [s.action.type.value for s in ep.steps] == [KINDS[a.split(" ")[0]] for a in task.actions]
    deviations = []
    for st, action, bound, label in zip(ep.steps, task.actions, task.union_bounds, task.labels):
        assert (st.image_width, st.image_height) == (1280, 720) and st.metadata["screenshot_source"] == "render"
        assert len(st.candidates) >= 5
        if bound is None:
            continue
        target = next(c for c in st.candidates if c.id == st.action.element_id)
        assert _plain(target.text) == _plain(_node_name(label.split("] ", 1)[1])[1]), (action, target, label)
        x, y, w, h = bound
        deviations.append(max(abs(a - b) for a, b in zip(target.bbox, (x, y, x + w, y + h))))
        assert st.metadata["webarena_node"] == label.split("] ", 1)[1]
    assert deviations and max(deviations) <= 3.0, deviations
    print(f"{site}: {len(ep.steps)} steps, box deviation from union_bound max {max(deviations):.2f} px")
    if ep.steps[-1].action.answer is not None:
        assert task.actions[-1] == f"stop [{ep.steps[-1].action.answer}]"

    assert _mag("unify", "--raw", str(raw)) == 0
    _gold_echo_scores_one(raw, tmp_path / "ds", len(ep.steps))


def _gold_echo_scores_one(raw: Path, out: Path, n_steps: int) -> None:
    """Build ``raw`` (one task) and score its gold targets: every applicable metric 1.0 in both views."""
    from mag_dataset.builder import build_dataset
    from mag_dataset.dataset import load_gold
    from mag_dataset.predictions import Prediction
    from mag_dataset.prompts import render_target
    from mag_dataset.scoring import METRIC_NAMES, score_predictions

    built = build_dataset(raw, out, progress=False)
    for view in ("som", "coord"):
        steps = load_gold(built, view, "test")  # one task: the default split puts it in test (coord: with som menus)
        assert len(steps) == n_steps
        for contract in ("A", "JG"):
            report = score_predictions([Prediction(s.step_id, render_target(s, view, contract)) for s in steps], steps,
                                       view, contract)
            data = json.loads(report.to_json())
            values = [data[m]["micro"] for m in METRIC_NAMES if data[m]["micro"] is not None]
            assert values and all(v == 1.0 for v in values), (view, contract, data)


@pytest.mark.xdist_group("site-forum")
def test_batch_rules_on_copies_of_the_forum_run(runs, tmp_path, capsys):
    _, results, shared_configs = runs("forum")
    folder, configs = tmp_path / "results", tmp_path / "config_files"
    shutil.copytree(results, folder)
    shutil.copytree(shared_configs, configs)
    render = (folder / "render_0.html").read_text()
    trace = folder / "traces" / "0.zip"
    # 7: FAIL; 8: PASS without its trace; 9: PASS with an action WebArena writes only from
    # Playwright code; 10: no [Result] line
    for tid in (7, 8, 9, 10):
        text = render.replace("task_id: 0", f"task_id: {tid}")
        if tid == 9:
            text = text.replace("<ActionTypes.CLICK: 6>", "<ActionTypes.SELECT_OPTION: 16>", 1).replace(
                "<ActionTypes.TYPE: 7>", "<ActionTypes.SELECT_OPTION: 16>", 1)
        (folder / f"render_{tid}.html").write_text(text)
        if tid != 8:
            shutil.copy(trace, folder / "traces" / f"{tid}.zip")
        shutil.copy(configs / "0.json", configs / f"{tid}.json")
    (folder / "merge_log.txt").write_text("".join(f"INFO - [Result] ({v}) config_files/{t}.json\n"
                                                  for t, v in ((7, "FAIL"), (8, "PASS"), (9, "PASS"))))
    raw = tmp_path / "raw"
    assert _mag("import-webarena", str(folder), "--configs", str(configs), "--out", str(raw), "--no-progress") == 0
    out = capsys.readouterr().out
    assert "5 tasks: imported 1 episodes" in out, out
    assert "skipped 7: FAIL in merge_log.txt; --all imports failed tasks too" in out
    assert "skipped 8: no traces/8.zip (run.py --save_trace_enabled)" in out
    assert "skipped 9: step 0: WebArena's select_option action has no counterpart" in out
    assert "skipped 10: no [Result] line names 10.json" in out
    # resumable: a second run imports nothing new and says why (exit 1, as import-browsergym's: nothing
    # imported while some tasks were skipped for another reason than being imported already)
    assert _mag("import-webarena", str(folder), "--configs", str(configs), "--out", str(raw), "--no-progress") == 1
    assert "skipped 0: already imported: webarena.0 exists" in capsys.readouterr().out
    assert _mag("import-webarena", str(folder), "--configs", str(configs), "--out", str(raw), "--all",
                "--no-progress") == 0
    out = capsys.readouterr().out
    assert "imported 2 episodes" in out, out  # 7 (FAIL) and 10 (no verdict)
    from mag_dataset.raw import read_episode

    assert read_episode(raw / "webarena.7").metadata["webarena_result"] == "FAIL"
    assert read_episode(raw / "webarena.7").success is False
    assert read_episode(raw / "webarena.10").metadata["webarena_result"] == "unknown"
    assert sorted(p.name for p in raw.iterdir() if p.is_dir()) == ["webarena.0", "webarena.10", "webarena.7"]


@pytest.mark.xdist_group("site-forum")
def test_the_forum_run_goes_through_import_unify_recapture_audit_and_build(runs, tmp_path, capsys):
    """The README's worked example: every step recaptured on the reset site, none stale, audited by the
    offline judges, built, its gold echo 1.0."""
    from mag_dataset.raw import read_episode

    summary, results, configs = runs("forum")
    (task,) = summary.tasks
    raw = tmp_path / "raw"
    assert _mag("import-webarena", str(results), "--configs", str(configs), "--out", str(raw), "--no-progress") == 0
    ep = read_episode(raw / "webarena.0")
    assert (ep.metadata["expert"], ep.seed) == (task.template, task.seed)  # from the config alone
    assert "not_recapturable" not in ep.metadata
    replayed = [st.metadata["browsergym_action"] for st in ep.steps]
    assert [a.split("(")[0] for a in replayed] == [
        {"click": "mouse_click", "type": "mouse_click", "hover": "mouse_move", "scroll": "scroll",
         "press": "keyboard_press", "stop": "send_msg_to_user"}[a.split(" ")[0]] for a in task.actions], replayed
    assert _mag("unify", "--raw", str(raw)) == 0
    capsys.readouterr()
    assert _mag("recapture", "--raw", str(raw), "--share", "1", "--seed", "0", "--no-progress") == 0
    out = capsys.readouterr().out
    assert f"recaptured 1 episodes ({len(ep.steps)} steps); replay diverged in 0" in out, out
    assert _mag("unify", "--raw", str(raw)) == 0
    ep = read_episode(raw / "webarena.0")
    assert ep.metadata["recaptured"]["diverged"] is False
    assert [st.metadata.get("recaptured") for st in ep.steps] == [True] * len(ep.steps)
    assert [st.stale for st in ep.steps] == [False] * len(ep.steps), [st.metadata["stale_check"] for st in ep.steps]
    assert _mag("audit", "--raw", str(raw), "--judges", "dom,name,pixel", "--steps", "all") == 0
    assert (raw / "audit.jsonl").is_file()
    _gold_echo_scores_one(raw, tmp_path / "ds", len(ep.steps))


def _without_screencast(trace: Path) -> int:
    """Rewrite a trace archive without its screencast frames; returns how many were dropped."""
    dropped = 0
    with zipfile.ZipFile(io.BytesIO(trace.read_bytes())) as src, zipfile.ZipFile(trace, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".trace"):
                lines = data.decode("utf-8").split("\n")
                kept = [line for line in lines if not (line.strip() and json.loads(line).get("type") == "screencast-frame")]
                dropped += len(lines) - len(kept)
                data = "\n".join(kept).encode("utf-8")
            out.writestr(info, data)
    return dropped


@pytest.mark.xdist_group("site-forum")
def test_a_step_without_any_screenshot_is_imported_refused_by_build_and_recaptured(runs, tmp_path, capsys):
    from mag_dataset.builder import build_dataset
    from mag_dataset.raw import read_episode

    _, results, configs = runs("forum")
    folder = tmp_path / "results"
    shutil.copytree(results, folder)
    render = folder / "render_0.html"
    text = render.read_text()
    shots = list(re.finditer(r"data:image/png;base64,[A-Za-z0-9+/=\s]+", text))
    assert len(shots) >= 3
    render.write_text(text[:shots[1].start()] + "data:image/png;base64," + text[shots[1].end():])
    assert _without_screencast(folder / "traces" / "0.zip") > 0
    raw = tmp_path / "raw"
    assert _mag("import-webarena", str(folder), "--configs", str(configs), "--out", str(raw), "--no-progress") == 0
    ep = read_episode(raw / "webarena.0")
    st = ep.steps[1]
    assert st.screenshot == "" and st.metadata["screenshot_source"] == "none"
    assert (st.image_width, st.image_height) == (1280, 720) and len(st.candidates) >= 5
    assert [s.metadata["screenshot_source"] for s in ep.steps[::2]] == ["render"] * len(ep.steps[::2])
    assert sorted(p.name for p in (raw / "webarena.0").glob("step_*")) == [
        f"step_{k:03d}.png" for k in range(len(ep.steps)) if k != 1]
    capsys.readouterr()
    assert _mag("build", "--raw", str(raw), "--out", str(tmp_path / "refused"), "--no-progress") == 2
    err = capsys.readouterr().err.strip()
    assert err == ("mag build: error: episode 'webarena.0', step 1, field 'screenshot': no screenshot (imported "
                   f"without one); `mag recapture --raw {raw} --share 0` gives it one"), err
    assert _mag("recapture", "--raw", str(raw), "--share", "0", "--no-progress") == 0  # chosen whatever the share
    assert "recaptured 1 episodes" in capsys.readouterr().out
    assert _mag("unify", "--raw", str(raw)) == 0
    ep = read_episode(raw / "webarena.0")
    st = ep.steps[1]
    assert st.screenshot == "step_001_recaptured.png" and st.metadata["recaptured"] is True
    assert st.metadata["action_time_screenshot"] == "" and st.metadata["stale_check"]["reason"] == \
        "no_action_time_observation" and st.stale  # a recapture that cannot be compared with the action's page
    assert [s.stale for s in ep.steps if s.step_index != 1] == [False] * (len(ep.steps) - 1)
    built = build_dataset(raw, tmp_path / "ds", progress=False)
    assert built.exists()
