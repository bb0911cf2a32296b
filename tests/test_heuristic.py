"""The no-model heuristic baseline: deterministic, gate-passing, menu-driven in both views."""

from __future__ import annotations

import json

from hand_built_steps import MENU, gold_steps, make_step
from mag_dataset.actions import Contract, View
from mag_dataset.heuristic import choose_action, heuristic_output, heuristic_predictions, heuristic_reports
from mag_dataset.parsing import parse_output
from mag_dataset.schema import Action, box_center


def test_outputs_pass_the_gate_in_every_condition_and_are_deterministic():
    steps = gold_steps()
    n = 0
    for view in View:
        for contract in Contract:
            for s in steps:
                out = heuristic_output(s, view, contract, menu=MENU)
                assert parse_output(out, view, contract).ok, out
                assert out == heuristic_output(s, view, contract, menu=MENU)
                n += 1
    assert n == 8 * 12


def test_types_quoted_values_into_the_named_field_then_clicks_mentioned_buttons():
    first = make_step("t/0", "t", Action("click", element_id="7"), guide="x", target_bbox=MENU[3].bbox,
                      intent='Enter "Cheree" as username and "x1y2" as password, then click Submit')
    a, target = choose_action(first)
    assert (a.type.value, a.element_id, a.text) == ("type", "3", "Cheree")
    second = make_step("t/1", "t", Action("click", element_id="7"), guide="x", target_bbox=MENU[3].bbox, step_index=1,
                       intent=first.intent, previous_guides=("Type 'Cheree' into the Username field.",))
    a, _ = choose_action(second)
    assert (a.type.value, a.element_id, a.text) == ("type", "4", "x1y2")
    third = make_step("t/2", "t", Action("click", element_id="7"), guide="x", target_bbox=MENU[3].bbox, step_index=2,
                      intent=first.intent, previous_guides=second.previous_guides + ("Type 'x1y2' into the Password field.",))
    a, target = choose_action(third)
    assert (a.type.value, a.element_id) == ("click", "7") and target.text == "Submit"
    done = make_step("t/2", "t", Action("finish"), guide="x", step_index=2, intent=first.intent,
                     previous_guides=third.previous_guides + ("Click the 'Submit' button.",))
    assert choose_action(done)[0].type.value == "finish"


def test_coord_view_clicks_the_centre_of_the_chosen_box_from_the_som_menu():
    step = make_step("c/0", "c", Action("click", element_id="7", coordinate=(50.0, 140.0)), guide="x",
                     target_bbox=MENU[3].bbox, intent='Click on the "Submit" button.', candidates=())
    assert json.loads(heuristic_output(step, "coord", "A"))["action"] == {"type": "finish"}  # no menu: nothing to match
    out = json.loads(heuristic_output(step, "coord", "J", menu=MENU))
    assert out["action"] == {"type": "click", "coordinate": list(box_center(MENU[3].bbox))}
    assert out["guide"] == "Click the 'Submit' button."


def test_reports_for_every_contract_and_view():
    steps = gold_steps()
    reports = heuristic_reports({"som": steps, "coord": steps})
    assert list(reports) == [(v.value, c.value) for v in View for c in Contract]
    assert all(r.value("ofcr") == 1.0 for r in reports.values())
    assert len(heuristic_predictions(steps, "som", "JG", seed=3)) == 12


def test_baseline_script_config_and_bad_flags_are_clean_errors(tmp_path, capsys):
    import sys
    from pathlib import Path

    import pytest

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    from baselines import heuristic as script

    config = root / "baselines" / "configs" / "heuristic.yaml"  # the file the script's docstring launches
    assert config.is_file()
    args = script.parse_args(["--config", str(config), "--output", "p.jsonl", "--view", "coord"])
    assert (args.dataset, args.view, args.contract, args.split) == ("bundled", "coord", "J", "test")
    for argv in (["--view", "pixels"], ["--contract", "B"], ["--split", "dev"]):
        with pytest.raises(SystemExit) as e:
            script.parse_args(["--output", "p.jsonl", *argv])
        assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("view: pixels\n", "utf-8")
    with pytest.raises(SystemExit):
        script.parse_args(["--config", str(bad), "--output", "p.jsonl"])
    assert "--view must be one of som, coord" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="cannot read the config"):
        script.parse_args(["--config", str(tmp_path / "none.yaml"), "--output", "p.jsonl"])
    out = tmp_path / "p.jsonl"
    assert script.main(["--dataset", str(tmp_path / "nodata"), "--output", str(out)]) == 2
    assert "cannot load som/test" in capsys.readouterr().err and not out.exists()
