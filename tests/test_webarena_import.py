"""``mag import-webarena``'s reading of WebArena's render files, written by WebArena's own ``RenderHelper``.

No browser: a render file is written by webarenax's ``RenderHelper`` from hand-made
observations (one step per WebArena action type, ``create_id_based_action`` parsing each
action string as WebArena's agent does), read back by
:func:`~mag_dataset.harness.webarena_import.results.read_render`, and every action type is checked
against the mapping table. The site runs (``ScriptBrowserEnv`` + tracing, imported end to
end) are tests/test_site_webarena_import.py.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

#: one id-based action string per WebArena action type the id-based set can write
ACTIONS = ["click [12]", "type [13] [blue shoes] [1]", "type [13] [red] [0]", "hover [12]", "scroll [down]",
           "press [Meta+a]", "goto [http://127.0.0.1:1/x?a=1]", "new_tab", "tab_focus [1]", "close_tab", "go_back",
           "go_forward", "not an action", "stop [42 <b>items</b>]"]


def _render(tmp_path):
    from mag_dataset.sites.webarena import _webarena_evaluators

    _webarena_evaluators()
    from PIL import Image
    from webarena.browser_env import create_id_based_action, create_none_action
    from webarena.browser_env.actions import ActionParsingError
    from webarena.browser_env.helper_functions import RenderHelper
    from webarena.browser_env.utils import DetachedPage

    config = {"sites": ["reddit"], "task_id": 5, "intent": "Find <the> 'blue' shoes", "intent_template_id": 3,
              "intent_template": "Find {{x}}", "instantiation_dict": {"x": "<the> 'blue' shoes"}, "start_url": "u"}
    path = tmp_path / "5.json"
    path.write_text(json.dumps(config))
    helper = RenderHelper(str(path), str(tmp_path), "id_accessibility_tree")
    # an observation with text that looks like the render's own markers (nothing is escaped)
    text = ("Tab 0 (current): Shop\n\n[1] RootWebArea 'Shop'\n\t[12] link 'Home \uf078'\n\t[13] textbox 'Search' "
            "required: False\n\t[14] StaticText '</pre><div> <h2>New Page</h2>'")
    nodes = {"12": {"backend_id": 1, "union_bound": [1, 2, 3, 4], "text": "[12] link 'Home \uf078'"},
             "13": {"backend_id": 2, "union_bound": [1, 2, 3, 4], "text": "[13] textbox 'Search'"}}
    image = np.zeros((4, 6, 3), dtype=np.uint8)
    image[1, 2] = (255, 0, 0)
    history = ["None"]
    for k, a in enumerate(ACTIONS):
        try:
            action = create_id_based_action(a)
        except ActionParsingError:
            action = create_none_action()
        action["raw_prediction"] = f"step {k}: ```{a}```"
        state = {"observation": {"text": text, "image": image},
                 "info": {"page": DetachedPage(f"http://127.0.0.1:1/p{k}", ""),
                          "observation_metadata": {"text": {"obs_nodes_info": nodes}}}}
        helper.render(action, state, {"action_history": history}, render_screenshot=k != 3)
        history.append(a)
    helper.close()
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return tmp_path / "render_5.html", buf.getvalue()


def test_render_file_of_webarenas_render_helper_reads_back_every_action(tmp_path):
    from PIL import Image

    from mag_dataset.harness.webarena_import.convert import DROPPED, WEBARENA_ACTIONS
    from mag_dataset.harness.webarena_import.results import read_render
    from mag_dataset.harness.webarena_import.convert import _key_names, _node_name, _step_action, _typed_text

    path, png = _render(tmp_path)
    render = read_render(path)
    assert render.config["task_id"] == 5 and render.config["intent"] == "Find <the> 'blue' shoes"
    assert render.config["instantiation_dict"] == {"x": "<the> 'blue' shoes"}
    assert len(render.steps) == len(ACTIONS)
    kinds = [s.action["action_type"] for s in render.steps]
    assert kinds == ["CLICK", "TYPE", "TYPE", "HOVER", "SCROLL", "KEY_PRESS", "GOTO_URL", "NEW_TAB", "PAGE_FOCUS",
                     "PAGE_CLOSE", "GO_BACK", "GO_FORWARD", "NONE", "STOP"]
    assert all(k in WEBARENA_ACTIONS or k in DROPPED for k in kinds)
    for k, s in enumerate(render.steps):
        assert s.url == f"http://127.0.0.1:1/p{k}"
        assert s.observation.endswith("[14] StaticText '</pre><div> <h2>New Page</h2>'"), s.observation[-80:]
        assert s.raw_prediction == f"step {k}: ```{ACTIONS[k]}```"
        if k == 3:
            assert s.screenshot is None  # rendered without --render_screenshot
        else:
            assert np.array_equal(np.asarray(Image.open(io.BytesIO(s.screenshot))), np.asarray(Image.open(io.BytesIO(png))))
    keys = _key_names()
    assert keys is not None
    assert _typed_text(render.steps[1], keys) == "blue shoes\n"  # [1]: Enter after the text
    assert _typed_text(render.steps[2], keys) == "red"
    assert _typed_text(render.steps[2], None) == "red"  # from the parsed action, without webarenax
    assert render.steps[0].action["element_id"] == "12"
    assert _node_name(render.steps[0].node_line("12")) == ("link", "Home \uf078")
    assert _node_name(render.steps[1].node_line("13")) == ("textbox", "Search")
    got = [_step_action(s, s.action["action_type"], keys)[0].to_dict() for s in render.steps[4:12]]
    assert [(a["type"], a["direction"] or a["key"] or a["url"] or a["value"]) for a in got] == [
        ("scroll", "down"), ("press", "Meta+a"), ("goto", "http://127.0.0.1:1/x?a=1"), ("new_tab", None),
        ("tab_focus", "1"), ("close_tab", None), ("go_back", None), ("go_forward", None)]
    stop = _step_action(render.steps[13], "STOP", keys)[0]
    assert (stop.type.value, stop.answer) == ("finish", "42 <b>items</b>")


def test_actions_without_a_counterpart_are_named(tmp_path):
    from mag_dataset.harness.webarena_import import WebArenaImportError
    from mag_dataset.harness.webarena_import.convert import convert_task
    from mag_dataset.harness.webarena_import.results import read_render

    path, _ = _render(tmp_path)
    render = read_render(path)
    step = render.steps[0]
    for kind in ("SELECT_OPTION", "CHECK", "KEYBOARD_TYPE"):
        render.steps[0] = type(step)(**{**step.__dict__, "action": {**step.action, "action_type": kind}})
        with pytest.raises(WebArenaImportError, match=rf"step 0: WebArena's {kind.lower()} action has no counterpart"):
            convert_task("5", render, tmp_path / "none.zip", {"intent": "x"}, browser=None)


def test_verdicts_and_configs_are_found_where_run_py_writes_them(tmp_path):
    from mag_dataset.harness.webarena_import.results import find_config, read_render, read_verdicts, verdict_of

    path, _ = _render(tmp_path)
    render = read_render(path)
    logs = tmp_path / "elsewhere"
    logs.mkdir()
    (logs / "log_1.log").write_text("2024 - INFO - [Result] (FAIL) config_files/5.json\n"
                                    "2024 - INFO - [Result] (PASS) config_files/15.json\n")
    (tmp_path / "log_files.txt").write_text(f"{logs / 'log_1.log'}\n")
    (tmp_path / "merge_log.txt").write_text("[Result] (PASS) config_files/6.json\n")
    verdicts = read_verdicts(tmp_path)
    assert verdict_of("5", verdicts) == (False, "config_files/5.json", "log_1.log")
    assert verdict_of("6", verdicts)[0] is True and verdict_of("1", verdicts) is None
    # no --configs and no file where the log says: the render file's config block
    config, source = find_config("5", "config_files/5.json", None, tmp_path, render)
    assert source == "render_5.html" and config["intent_template_id"] == 3
    configs = tmp_path / "config_files"
    configs.mkdir()
    (configs / "5.json").write_text(json.dumps({"intent": "from the file", "task_id": 5}))
    assert find_config("5", None, configs, tmp_path, render)[0]["intent"] == "from the file"


def test_each_action_replays_as_the_browsergym_action_that_does_what_webarenas_did(tmp_path):
    """``metadata["browsergym_action"]`` of every action type, parsed by the action set ``mag recapture``
    replays with (:data:`mag_dataset.live.env.ACTION_SUBSETS`)."""
    from browsergym.core.action.highlevel import HighLevelActionSet

    from mag_dataset.harness.webarena_import.results import read_render
    from mag_dataset.harness.webarena_import.convert import _key_names, _step_action, browsergym_action
    from mag_dataset.live.env import ACTION_SUBSETS
    from mag_dataset.live.observe import Conversion
    from mag_dataset.schema import Action

    render = read_render(_render(tmp_path)[0])
    keys = _key_names()
    conv = Conversion(1.0, (0, 0, 1280, 720))
    point = (100.5, 200.25)
    got = {"click": browsergym_action("CLICK", Action(type="click", coordinate=point), conv, (1280, 720)),
           "type": browsergym_action("TYPE", Action(type="type", coordinate=point, text="blue shoes"), conv,
                                     (1280, 720), enter=True),
           "hover": browsergym_action("HOVER", Action(type="hover", coordinate=point), conv, (1280, 720)),
           "mouse_click": browsergym_action("MOUSE_CLICK", Action(type="click", coordinate=point), conv, (1280, 720))}
    for s in render.steps[4:12] + [render.steps[13]]:
        kind = s.action["action_type"]
        got[kind.lower()] = browsergym_action(kind, _step_action(s, kind, keys)[0], conv, (1280, 720))
    assert got == {
        "click": "mouse_click(100.5, 200.25)", "mouse_click": "mouse_click(100.5, 200.25)",
        "type": "mouse_click(100.5, 200.25)\nkeyboard_type('blue shoes')\nkeyboard_press('Enter')",
        "hover": "mouse_move(100.5, 200.25)", "scroll": "scroll(0, 720.0)",
        "key_press": "keyboard_press('Control+a')",  # WebArena presses Meta as Control off a Mac
        "goto_url": "goto('http://127.0.0.1:1/x?a=1')", "new_tab": "new_tab()", "page_focus": "tab_focus(1)",
        "page_close": "tab_close()", "go_back": "go_back()", "go_forward": "go_forward()",
        "stop": "send_msg_to_user('42 <b>items</b>')"}
    actions = HighLevelActionSet(subsets=list(ACTION_SUBSETS), multiaction=True, strict=False)
    for text in got.values():
        assert actions.to_python_code(text)


def test_a_config_of_other_sites_is_no_task_of_the_package_and_ours_gives_template_and_seed():
    from mag_dataset.sites import task_class
    from mag_dataset.sites.webarena import NotOurTask, task_of_config, template_ids, webarena_sites, webarena_template

    template = "sites.forum.open_search_results"
    task = task_class(template)(4)
    ours = {"intent_template_id": template_ids()[template], "intent_template": webarena_template(task.intent_template),
            "intent": task.goal, "instantiation_dict": {k: str(v) if not isinstance(v, (int, str)) else v
                                                         for k, v in task.instantiation_dict.items()},
            "sites": webarena_sites(task)}
    found, seed = task_of_config(ours)
    assert found == template and task_class(template)(seed).goal == task.goal
    # WebArena's own task 0 (shopping_admin, template 279): its id is one of ours, its template is not
    theirs = {"intent_template_id": 279, "intent_template": "What is the top-{{n}} best-selling brand in {{period}}",
              "intent": "What is the top-1 best-selling brand in Quarter 1 2022", "sites": ["shopping_admin"]}
    with pytest.raises(NotOurTask, match="none of the package's|not that of"):
        task_of_config(theirs)
    with pytest.raises(NotOurTask, match="no seed below"):
        task_of_config({**ours, "intent": "Something else"})


def test_a_step_without_a_screenshot_reads_and_build_names_it_and_recapture_reports_what_it_cannot(tmp_path, capsys):
    """Raw format: ``"screenshot": null``; ``mag build`` refuses it in one line naming the step and
    ``mag recapture``; an imported episode of other sites is reported as not recapturable, not replayed."""
    from synthetic_raw import edit_episode, make_corpus

    from mag_dataset.cli import main
    from mag_dataset.raw import RawDataError, read_episode, screenshot_bytes

    raw = tmp_path / "raw"
    make_corpus(raw, seeds_per_template=1)
    folders = sorted(p for p in raw.iterdir() if p.is_dir())
    assert len(folders) == 5

    def blank(d):
        d["steps"][1]["screenshot"], d["steps"][1]["som_screenshot"] = None, None

    def webarena(d):
        d["source"], d["metadata"] = "webarena", {"not_recapturable": "not a task of the package's sites: its "
                                                                      "intent_template_id 279 is none of ..."}

    edit_episode(folders[0], blank)
    edit_episode(folders[1], webarena)
    ep = read_episode(folders[0])
    assert ep.steps[1].screenshot == "" and ep.steps[1].to_json()["screenshot"] is None
    with pytest.raises(RawDataError, match="step 1, field 'screenshot': no screenshot .*mag recapture"):
        screenshot_bytes(folders[0], ep.steps[1])
    assert main(["compact", "--raw", str(raw), "--workers", "1"]) == 0  # the other steps compacted, it left as it is
    capsys.readouterr()
    ep = read_episode(folders[0])
    assert ep.steps[1].screenshot == "" and ep.steps[0].screenshot.endswith(".webp")
    assert main(["build", "--raw", str(raw), "--out", str(tmp_path / "ds"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"mag build: error: episode '{ep.episode_id}', step 1, field 'screenshot': no screenshot (imported without one); " \
           f"`mag recapture --raw {raw} --share 0` gives it one" in err
    # not a site episode (synthetic MiniWoB-like): nothing to replay; the imported one is named with its reason
    assert main(["recapture", "--raw", str(raw), "--share", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "recaptured 0 episodes" in out
    assert f"not recapturable {read_episode(folders[1]).episode_id}: not a task of the package's sites" in out
