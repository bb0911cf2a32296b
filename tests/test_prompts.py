"""Prompt templates: snapshot of all 8 (view x contract) templates, and their invariants.

Snapshots live in tests/snapshots/prompt_<view>_<contract>.txt. A deliberate wording change
regenerates them with ``MAG_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_prompts.py``
(and bumps ``PROMPT_VERSION``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hand_built_steps import gold_steps
from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, GROUNDING_KEY, Contract, View
from mag_dataset.parsing import parse_output
from mag_dataset.prompts import build_messages, render_target, system_prompt, user_text

SNAPSHOTS = Path(__file__).parent / "snapshots"
CONDITIONS = [(v, c) for v in View for c in Contract]


def _render(view: View, contract: Contract) -> str:
    steps = gold_steps()
    step = steps[1]  # has previous guides and a menu
    msgs = build_messages(step, view, contract, with_target=True)
    out = [f"### system\n{msgs[0]['content'][0]['text']}"]
    parts = msgs[1]["content"]
    out.append("### user parts\n" + json.dumps([p["type"] for p in parts]))
    out.append(f"### user text\n{parts[1]['text']}")
    out.append(f"### assistant (target)\n{msgs[2]['content'][0]['text']}")
    return "\n\n".join(out) + "\n"


def test_there_are_eight_conditions():
    assert len(CONDITIONS) == 8


@pytest.mark.parametrize("view,contract", CONDITIONS, ids=[f"{v.value}-{c.value}" for v, c in CONDITIONS])
def test_snapshot(view, contract):
    path = SNAPSHOTS / f"prompt_{view.value}_{contract.value}.txt"
    text = _render(view, contract)
    if os.environ.get("MAG_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing snapshot {path.name}; run with MAG_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"prompt {view.value}/{contract.value} changed"


def test_snapshot_folder_has_exactly_the_eight_templates():
    found = sorted(p.name for p in SNAPSHOTS.glob("prompt_*.txt"))
    assert found == sorted(f"prompt_{v.value}_{c.value}.txt" for v, c in CONDITIONS)


@pytest.mark.parametrize("view", list(View))
def test_action_list_is_rendered_from_action_space(view):
    text = system_prompt(view, "J")
    listed = [line for line in text.splitlines() if line.startswith("- ") and ": {\"type\"" in line]
    assert len(listed) == len(ACTION_SPACE) == 13
    for spec in ACTION_SPACE.values():
        line = next(l for l in listed if l.startswith(f"- {spec.type.value}:"))
        assert spec.description in line
        for arg in spec.args:
            assert f'"{arg.name}"' in line
        assert (f'"{GROUNDING_KEY[view]}"' in line) == spec.targeted
    other = GROUNDING_KEY[View.COORD if view is View.SOM else View.SOM]
    assert f'"{other}"' not in text


def test_inputs_identical_across_contracts_only_output_part_varies():
    step = gold_steps()[2]
    for view in View:
        users = {json.dumps(build_messages(step, view, c)[1]) for c in Contract}
        assert len(users) == 1, "the user turn must not depend on the contract"
        prompts = [system_prompt(view, c) for c in Contract]
        # everything before the task line and the action list are shared
        heads = {p.split("Task:")[0] for p in prompts}
        lists = {p.split("Available actions:")[1].split("Output format:")[0] for p in prompts}
        assert len(heads) == 1 and len(lists) == 1
    for c in Contract:
        keys = CONTRACT_KEYS[c]
        text = system_prompt("som", c)
        assert all(f'"{k}"' in text.split("Output format:")[1] for k in keys)


def test_menu_only_in_som_view_and_previous_guides_in_both():
    step = gold_steps()[1]
    som, coord = user_text(step, "som"), user_text(step, "coord")
    assert "Candidate elements:" in som and '[3] textbox "Username"' in som
    assert "Candidate elements:" not in coord and "[3]" not in coord
    for text in (som, coord):
        assert "1. Type 'Cheree' into the Username field." in text
        assert step.intent in text


def test_user_turn_has_one_image_part_for_the_caller_to_fill():
    msgs = build_messages(gold_steps()[0], "coord", "A")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[1]["content"][0] == {"type": "image"}


@pytest.mark.parametrize("view,contract", CONDITIONS, ids=[f"{v.value}-{c.value}" for v, c in CONDITIONS])
def test_render_target_passes_the_gate_for_every_gold_step(view, contract):
    steps = gold_steps()
    n = 0
    for step in steps:
        text = render_target(step, view, contract)
        parsed = parse_output(text, view, contract)
        assert parsed.ok, (step.step_id, text, parsed.reason)
        assert tuple(json.loads(text)) == CONTRACT_KEYS[contract]
        n += 1
    assert n == 12


def test_coord_target_of_an_id_only_gold_is_the_box_centre():
    from hand_built_steps import MENU, make_step
    from mag_dataset.schema import Action
    from mag_dataset.scoring import score_step

    step = make_step("x/0", "x", Action("click", element_id="8"), guide="Click the link.", target_bbox=MENU[4].bbox)
    text = render_target(step, "coord", "J")
    assert json.loads(text)["action"] == {"type": "click", "coordinate": [120, 140]}  # box (90, 130, 150, 150)
    sc = score_step(text, step, "coord", "J", menu=step.candidates)
    assert sc.target_acc == 1.0 and sc.saa == 1.0
