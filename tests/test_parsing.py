"""The output parser / format gate: accepted shapes, typed failures, never raising."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mag_dataset.actions import ACTION_SPACE, ActionType, Contract, View
from mag_dataset.parsing import MAX_COORDINATE, MAX_OUTPUT_CHARS, Parsed, parse_output

CLICK_SOM = {"type": "click", "element": "7"}
CLICK_COORD = {"type": "click", "coordinate": [50, 140.5]}


def dumps(obj) -> str:
    return json.dumps(obj)


@pytest.mark.parametrize("contract,obj", [
    ("A", {"action": CLICK_SOM}),
    ("G", {"guide": "Click Submit."}),
    ("J", {"action": CLICK_SOM, "guide": "Click Submit."}),
    ("JG", {"guide": "Click Submit.", "action": CLICK_SOM}),
])
def test_each_contract_accepts_its_exact_keys(contract, obj):
    p = parse_output(dumps(obj), "som", contract)
    assert p.ok and p.reason is None
    assert (p.action is not None) == ("action" in obj)
    assert (p.guide == "Click Submit.") == ("guide" in obj)
    if p.action is not None:
        assert p.action.type is ActionType.CLICK and p.action.element_id == "7"


@pytest.mark.parametrize("text", [
    '  \n{"action": {"type": "click", "element": "7"}}\n\t',
    '```json\n{"action": {"type": "click", "element": "7"}}\n```',
    '```\n{"action": {"type": "click", "element": "7"}}\n```',
    '  ```json\n{"action": {"type": "click", "element": "7"}}```  ',
])
def test_whitespace_and_one_fence_are_tolerated(text):
    p = parse_output(text, "som", "A")
    assert p.ok, p.reason


@pytest.mark.parametrize("text,reason", [
    ('```json\n```json\n{"action": {"type": "click", "element": "7"}}\n```\n```', "fence"),
    ('```json\n{"action": {"type": "click", "element": "7"}}', "fence"),
    ('```python\n{"action": {"type": "click", "element": "7"}}\n```', "fence"),
    ("", "empty output"),
    ("   ", "empty output"),
    ("[1, 2]", "does not start with a JSON object"),
    ('{"action": {"type": "click", "element": "7"}', "invalid JSON"),
])
def test_malformed_wrappers_fail_with_a_reason(text, reason):
    p = parse_output(text, "som", "A")
    assert not p.ok and reason in p.reason and p.action is None and p.guide is None


def test_element_int_is_accepted_and_compared_as_string():
    p = parse_output('{"action": {"type": "click", "element": 12}}', "som", "A")
    assert p.ok and p.action.element_id == "12"


@pytest.mark.parametrize("element", [12.0, True, None, [12], {"id": 12}, "", "  "])
def test_element_of_other_types_fails(element):
    p = parse_output(dumps({"action": {"type": "click", "element": element}}), "som", "A")
    assert not p.ok and "element" in p.reason


def test_grounding_key_must_match_the_view():
    assert not parse_output(dumps({"action": CLICK_COORD}), "som", "A").ok
    assert not parse_output(dumps({"action": CLICK_SOM}), "coord", "A").ok
    p = parse_output(dumps({"action": CLICK_COORD}), "coord", "A")
    assert p.ok and p.action.coordinate == (50.0, 140.5)


@pytest.mark.parametrize("coord", [[1], [1, 2, 3], "1,2", [True, 2], ["1", 2], {"x": 1, "y": 2}, [None, 1]])
def test_coordinate_shape_and_types(coord):
    p = parse_output(dumps({"action": {"type": "click", "coordinate": coord}}), "coord", "A")
    assert not p.ok and "coordinate" in p.reason


def test_coordinate_bound_is_inclusive():
    ok = parse_output(dumps({"action": {"type": "click", "coordinate": [MAX_COORDINATE, -MAX_COORDINATE]}}), "coord", "A")
    assert ok.ok
    bad = parse_output(dumps({"action": {"type": "click", "coordinate": [MAX_COORDINATE + 1, 0]}}), "coord", "A")
    assert not bad.ok and "out of range" in bad.reason


def test_every_action_type_round_trips_with_its_required_arguments():
    args = {"text": "hi", "value": "France", "direction": "down", "key": "Enter", "url": "https://x.org", "answer": "42"}
    n = 0
    for view in View:
        for spec in ACTION_SPACE.values():
            obj = {"type": spec.type.value}
            if spec.targeted:
                obj.update({"element": "3"} if view is View.SOM else {"coordinate": [1, 2]})
            obj.update({a.name: args[a.name] for a in spec.args})
            p = parse_output(dumps({"action": obj}), view, "A")
            assert p.ok, (view, obj, p.reason)
            assert p.action.type is spec.type
            n += 1
            for a in spec.args:  # drop each argument: required ones fail, optional ones pass
                partial = {k: v for k, v in obj.items() if k != a.name}
                assert parse_output(dumps({"action": partial}), view, "A").ok is (not a.required)
    assert n == 26


@pytest.mark.parametrize("action,fragment", [
    ({"type": "scroll", "direction": "sideways"}, "direction"),
    ({"type": "scroll", "direction": "down", "element": "3"}, "not an argument"),
    ({"type": "type", "element": "3", "text": 5}, "must be a string"),
    ({"type": "type", "element": "3"}, "needs action.text"),
    ({"type": "click"}, "needs action.element"),
    ({"type": "jump", "element": "3"}, "unknown action type"),
    ({"element": "3"}, "action.type"),
    ({"type": ["click"], "element": "3"}, "action.type"),
    ("click 3", "action must be an object"),
    ({"type": "click", "element": "3", "confidence": 0.9}, "not an argument"),
])
def test_invalid_actions_fail_with_a_typed_reason(action, fragment):
    p = parse_output(dumps({"action": action}), "som", "A")
    assert isinstance(p, Parsed) and not p.ok and fragment in p.reason, p.reason


@pytest.mark.parametrize("guide", ["", "   ", 3, None, ["Click."]])
def test_guide_must_be_a_non_empty_string(guide):
    p = parse_output(dumps({"guide": guide}), "som", "G")
    assert not p.ok and "guide" in p.reason


def test_guide_is_stripped():
    assert parse_output('{"guide": "  Click Submit.  "}', "coord", "G").guide == "Click Submit."


def test_non_string_inputs_fail_instead_of_raising():
    for value in (None, 3, b'{"guide": "x"}', {"guide": "x"}):
        p = parse_output(value, "som", "G")
        assert not p.ok and "string" in p.reason


def test_unknown_view_or_contract_is_a_caller_error():
    with pytest.raises(ValueError):
        parse_output("{}", "pixels", "A")
    with pytest.raises(ValueError):
        parse_output("{}", "som", "B")


def test_deep_nesting_does_not_raise():
    text = '{"guide": ' + "[" * 5000 + "]" * 5000 + "}"
    assert len(text) < MAX_OUTPUT_CHARS
    p = parse_output(text, "som", "G")
    assert not p.ok


@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
@given(st.text(max_size=200), st.sampled_from([(v, c) for v in View for c in Contract]))
def test_arbitrary_strings_never_raise(text, cond):
    p = parse_output(text, *cond)
    assert isinstance(p, Parsed)
    assert p.ok == (p.reason is None)


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["action", "guide", "type", "element", "coordinate", "text"]), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
@given(_JSONISH, st.sampled_from([(v, c) for v in View for c in Contract]))
def test_arbitrary_json_values_never_raise(value, cond):
    p = parse_output(json.dumps(value), *cond)
    assert isinstance(p, Parsed) and p.ok == (p.reason is None)
