"""Guide-action consistency and joint step accuracy (an extension, reported apart)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mag_dataset.consistency import (
    ENCLOSING_AREA_RATIO,
    MIN_CUT_QUOTE_TOKENS,
    ROLE_NOUNS,
    STOPWORDS,
    VERBS,
    acted_element,
    acted_elements,
    check,
    guide_tokens,
)
from mag_dataset.dataset import bundled_dataset, load_steps
from mag_dataset.heuristic import heuristic_predictions
from mag_dataset.actions import ActionType
from mag_dataset.predictions import Prediction
from mag_dataset.prompts import action_object, render_output, render_target
from mag_dataset.schema import Action, Candidate, box_center, point_in_box
from mag_dataset.scoring import METRIC_NAMES, GoldSteps, score_predictions, score_step

C = [
    Candidate("1", "button", "Save", (0, 0, 50, 20)),
    Candidate("2", "button", "Cancel", (60, 0, 110, 20)),
    Candidate("3", "textbox", "Username:", (0, 30, 200, 50)),
    Candidate("4", "combobox", "", (0, 60, 200, 80)),
    Candidate("5", "div", "Panel", (0, 0, 300, 300)),
]


def test_every_action_type_has_verbs():
    assert set(VERBS) == set(ActionType)
    assert all(VERBS[t] for t in ActionType)


@pytest.mark.parametrize("guide,action,ok,why", [
    ("Click 'Save'.", Action("click", element_id="1"), True, None),
    ("Click 'Save'.", Action("click", element_id="2"), False, "element"),
    ("Clicking the Save button saves it.", Action("click", element_id="1"), True, None),
    ("Type 'Cancel' here.", Action("click", element_id="2"), False, "verb"),
    ("Scroll to 'Cancel'.", Action("click", element_id="2"), False, "verb"),
    ("Type 'bob' into the Username field.", Action("type", element_id="3", text="bob"), True, None),
    ("Type 'bob' into the Username field.", Action("type", element_id="3", text="alice"), False, "argument"),
    ("Enter bob in the username box.", Action("type", element_id="3", text="bob"), True, None),
    ("Select 'Angola' from the drop-down.", Action("select", element_id="4", value="Angola"), True, None),
    ("Select 'Angola' from the list.", Action("select", element_id="4", value="Benin"), False, "argument"),
    ("Select 'Angola'.", Action("select", element_id="4", value="Angola"), False, "element"),
    ("Click 'Save'.", Action("click", element_id="99"), False, "element"),
    ("Scroll down to see more.", Action("scroll", direction="down"), True, None),
    ("Press Enter.", Action("press", key="Enter"), True, None),
    ("Go back to the previous page.", Action("go_back"), True, None),
    ("The task is done.", Action("finish"), True, None),
    ("Click 'Save'.", Action("click", coordinate=(10, 10)), True, None),  # innermost box: Save, not Panel
    ("Click 'Save'.", Action("click", coordinate=(250, 250)), False, "element"),  # only the Panel holds it
    ("Click 'Save'.", Action("click", coordinate=(999, 999)), False, "element"),  # on no element
])
def test_check_by_hand(guide, action, ok, why):
    assert check(guide, action, C) == (ok, why)


# realistic shapes from the recorded corpus: a drop-down list drawn over a text field, an icon
# inside its button, a form around its fields, a long typed text quoted cut
R = [
    Candidate("21", "textbox", "To:", (6.0, 84.89, 195.0, 116.39)),
    Candidate("35", "div", "Chicago, IL - O'Hare (ORD)", (7.5, 80.39, 196.5, 122.39)),
    Candidate("102", "span", "Reply", (35.41, 171.0, 95.41, 211.5)),
    Candidate("103", "image", "icon", (51.91, 171.0, 78.91, 198.0)),
    Candidate("7", "form", "Title Body Save", (0.0, 300.0, 600.0, 700.0)),
    Candidate("8", "textbox", "", (10.0, 320.0, 300.0, 340.0)),
    Candidate("9", "textbox", "Title", (10.0, 350.0, 300.0, 370.0)),
]
LONG = "= Architecture =\n\nThe backend is a set of workers around a SQL database; the REST API.\n"


@pytest.mark.parametrize("guide,action,ok,why", [
    # overlapping boxes of similar size: the point may hit either, the guide may name either
    ("Click \"Chicago, IL - O'Hare (ORD)\".", Action("click", coordinate=(102.0, 101.39)), True, None),
    ("Click the 'To:' field.", Action("click", coordinate=(102.0, 101.39)), True, None),
    ("Click 'Reply'.", Action("click", coordinate=(102.0, 101.39)), False, "element"),
    # an unnamed icon acts on the button around it; the icon's own noun names it too
    ("Click 'Reply'.", Action("click", coordinate=(65.41, 191.25)), True, None),
    ("Click the icon.", Action("click", coordinate=(65.41, 191.25)), True, None),
    ("Click 'Forward'.", Action("click", coordinate=(65.41, 191.25)), False, "element"),
    # an unnamed field does not act on the form around it (40x its area): naming another field is wrong
    ("Click 'Title'.", Action("click", coordinate=(100.0, 330.0)), False, "element"),
    ("Click the text field.", Action("click", coordinate=(100.0, 330.0)), True, None),  # its role's noun
    # a long text quoted cut: its first tokens, in order, and an ellipsis
    ("Type '= Architecture = The backend is a set of workers around a…' into the text field.",
     Action("type", element_id="8", text=LONG), True, None),
    ("Type '= Architecture = The backend is a set of workers around a...' into the text field.",
     Action("type", element_id="8", text=LONG), True, None),
    ("Type '= Architecture = The backend is a set of workers around a' into the text field.",
     Action("type", element_id="8", text=LONG), False, "argument"),  # cut without saying so
    ("Type '= Architecture = The…' into the text field.", Action("type", element_id="8", text=LONG),
     False, "argument"),  # too few tokens
    ("Type '= Architecture = The frontend is a set…' into the text field.", Action("type", element_id="8", text=LONG),
     False, "argument"),  # not the text's beginning
    ("Type 'The backend is a set of workers…' into the text field.", Action("type", element_id="8", text=LONG),
     False, "argument"),  # a later part, not the beginning
])
def test_check_on_realistic_shapes(guide, action, ok, why):
    assert check(guide, action, R) == (ok, why)


def test_acted_elements():
    ids = lambda a: [c.id for c in acted_elements(a, R)]  # noqa: E731
    assert ids(Action("click", coordinate=(102.0, 101.39))) == ["21", "35"]
    assert ids(Action("click", coordinate=(65.41, 191.25))) == ["103", "102"]
    assert ids(Action("click", coordinate=(100.0, 330.0))) == ["8"]
    assert ids(Action("click", element_id="35")) == ["35"]
    assert ids(Action("click", coordinate=(5000.0, 5000.0))) == [] and ids(Action("click", element_id="0")) == []
    assert ENCLOSING_AREA_RATIO > 1 and MIN_CUT_QUOTE_TOKENS >= 3


def test_acted_element_and_tokens():
    assert acted_element(Action("click", coordinate=(70, 10)), C).id == "2"
    assert acted_element(Action("click", element_id="5"), C).id == "5"
    assert guide_tokens("Click 'Save & Exit'!") == ["click", "save", "exit"]
    assert "drop" in ROLE_NOUNS["combobox"]


@pytest.fixture(scope="module")
def corpus():
    folder = str(bundled_dataset())
    som = {sp: load_steps(folder, "som", sp) for sp in ("train", "test")}
    coord = {sp: load_steps(folder, "coord", sp) for sp in ("train", "test")}
    assert len(som["test"]) >= 100 and len(som["train"]) >= 100
    return som, coord


@pytest.mark.parametrize("contract", ["J", "JG"])
def test_gold_guides_are_consistent_on_the_bundled_corpus(corpus, contract):
    som, coord = corpus
    for split in ("train", "test"):
        steps = som[split]
        preds = [Prediction(s.step_id, render_target(s, "som", contract)) for s in steps]
        r = score_predictions(preds, steps, "som", contract, bootstrap_resamples=0)
        assert r.value("guide_action_consistency") >= 0.9
        assert r.metrics["guide_action_consistency"]["n"] == len(steps)
        cs = GoldSteps.from_views("coord", {"som": steps, "coord": coord[split]})
        preds = [Prediction(s.step_id, render_target(s, "coord", contract)) for s in cs]
        r = score_predictions(preds, cs, "coord", contract, keep_steps=True, bootstrap_resamples=0)
        assert r.value("guide_action_consistency") >= 0.9
        # joint = saa and consistent; gold has saa 1 wherever saa applies, so there joint = consistency
        scored = [sc for sc in r.steps if sc.saa is not None]
        assert all(sc.saa == 1.0 for sc in scored)
        assert r.metrics["joint_step_acc"]["n"] == len(scored)
        assert r.value("joint_step_acc") == pytest.approx(
            sum(sc.guide_action_consistency for sc in scored) / len(scored), abs=1e-6)


def _family_consistency(folder, view, contract):
    """Gold consistency per site family (train + test): {family: (consistent, n)}."""
    from mag_dataset.dataset import load_view

    out: dict[str, list[int]] = {}
    for split in ("train", "test"):
        som = load_steps(folder, "som", split)
        steps = som if view == "som" else load_steps(folder, "coord", split)
        family = dict(zip(*(load_view(folder, "som", split)[k] for k in ("step_id", "site_family"))))
        preds = [Prediction(s.step_id, render_target(s, view, contract)) for s in steps]
        gold = GoldSteps.from_views(view, {"som": som, view: steps})
        r = score_predictions(preds, gold, view, contract, keep_steps=True, bootstrap_resamples=0)
        for sc in r.steps:
            acc = out.setdefault(family[sc.step_id], [0, 0])
            acc[0] += sc.guide_action_consistency == 1.0
            acc[1] += 1
    return out


@pytest.mark.parametrize("view", ["som", "coord"])
def test_gold_guides_are_consistent_in_every_site_family(view):
    fams = _family_consistency(str(bundled_dataset()), view, "J")
    assert {"shop", "tracker", "wiki", "forum", "miniwob"} <= set(fams)  # every family of the bundled corpus
    assert sum(n for _, n in fams.values()) >= 1000
    for fam, (ok, n) in fams.items():
        assert ok / n >= 0.9, (fam, ok, n)


def test_swapping_the_element_drops_consistency_by_the_targeted_share(corpus):
    steps = corpus[0]["test"]
    gold = [Prediction(s.step_id, render_target(s, "som", "J")) for s in steps]
    base = score_predictions(gold, steps, "som", "J", keep_steps=True, bootstrap_resamples=0)
    swapped, n_swapped = [], 0
    for s in steps:
        if s.has_target and s.action.element_id is not None:
            toks = set(guide_tokens(s.guide))
            wrong = next((c.id for c in s.candidates if c.id != s.action.element_id
                          and set(guide_tokens(c.text)) - STOPWORDS and not toks & set(guide_tokens(c.text))), None)
            # a menu whose every other element shares a word with the guide: an id off the menu
            wrong = wrong or "99999"
            obj = action_object(dataclasses.replace(s.action, element_id=wrong), "som")
            swapped.append(Prediction(s.step_id, render_output(obj, s.guide, "J")))
            n_swapped += 1
        else:
            swapped.append(Prediction(s.step_id, render_target(s, "som", "J")))
    r = score_predictions(swapped, steps, "som", "J", keep_steps=True, bootstrap_resamples=0)
    share = n_swapped / len(steps)
    assert n_swapped > 50
    drop = base.value("guide_action_consistency") - r.value("guide_action_consistency")
    was_consistent = sum(1 for sc in base.steps if sc.guide_action_consistency == 1.0 and
                         next(s for s in steps if s.step_id == sc.step_id).action.element_id is not None and
                         next(s for s in steps if s.step_id == sc.step_id).has_target)
    assert drop == pytest.approx(was_consistent / len(steps), abs=1e-6)
    assert drop == pytest.approx(share, abs=1.0 - base.value("guide_action_consistency") + 1e-6)
    # the papers' guide metrics do not see it: the guides are unchanged
    assert r.value("bleu1") == base.value("bleu1") == 1.0
    assert r.value("joint_step_acc") < base.value("joint_step_acc")


def _clean_wrong_point(step, menu):
    """The centre of a candidate off the gold box whose every candidate there shares no word
    with the guide (so no rule of the check can find the guide's element there); else a point
    on no candidate at all."""
    toks = set(guide_tokens(step.guide))
    for c in menu:
        centre = box_center(c.bbox)
        if point_in_box(centre, step.target_bbox):
            continue
        there = [o for o in menu if point_in_box(centre, o.bbox)]
        if all(not (set(guide_tokens(o.text)) - STOPWORDS) & toks for o in there) and \
                any(set(guide_tokens(o.text)) - STOPWORDS for o in there):
            return centre, True
    return (step.image_width + 50.0, step.image_height + 50.0), False


def test_moving_the_point_to_a_wrong_element_drops_coord_consistency_by_the_targeted_share(corpus):
    som, coord = corpus
    steps = GoldSteps.from_views("coord", {"som": som["test"], "coord": coord["test"]})
    menus = steps.menus
    gold = [Prediction(s.step_id, render_target(s, "coord", "J")) for s in steps]
    base = score_predictions(gold, steps, "coord", "J", keep_steps=True, bootstrap_resamples=0)
    moved, was_consistent, on_element = [], 0, 0
    cons = {sc.step_id: sc.guide_action_consistency for sc in base.steps}
    for s in steps:
        if s.target_bbox is None:
            moved.append(Prediction(s.step_id, render_target(s, "coord", "J")))
            continue
        point, clean = _clean_wrong_point(s, menus[s.step_id])
        on_element += clean
        was_consistent += cons[s.step_id] == 1.0
        obj = action_object(dataclasses.replace(s.action, coordinate=point), "coord")
        moved.append(Prediction(s.step_id, render_output(obj, s.guide, "J")))
    targeted = sum(1 for s in steps if s.target_bbox is not None)
    assert targeted > 50 and on_element >= 0.8 * targeted  # mostly a real element, not off the page
    r = score_predictions(moved, steps, "coord", "J", keep_steps=True, bootstrap_resamples=0)
    drop = base.value("guide_action_consistency") - r.value("guide_action_consistency")
    assert drop == pytest.approx(was_consistent / len(steps), abs=1e-6)
    assert drop == pytest.approx(targeted / len(steps), abs=1.0 - base.value("guide_action_consistency") + 1e-6)
    assert r.value("target_acc") == 0.0 and r.value("bleu1") == base.value("bleu1") == 1.0


def test_applies_to_joint_contracts_only_and_reported_apart(corpus):
    steps = corpus[0]["test"]
    for contract, applies in (("A", False), ("G", False), ("J", True), ("JG", True)):
        preds = heuristic_predictions(steps, "som", contract)
        r = score_predictions(preds, steps, "som", contract, bootstrap_resamples=0)
        assert (r.metrics["guide_action_consistency"]["n"] > 0) == applies
        d = json.loads(r.to_json())
        assert "guide_action_consistency" not in d and "guide_action_consistency" in d["extensions"]
        assert "joint_step_acc" in d["extensions"] and list(d)[: len(METRIC_NAMES)] == list(METRIC_NAMES)
    # a failed output is inconsistent (0), and so is its joint accuracy
    sc = score_step("not json", steps[0], "som", "J")
    assert sc.guide_action_consistency == 0.0 and sc.joint_step_acc in (0.0, None)


def test_coord_consistency_cannot_lose_its_menus(corpus):
    """The menus come with the gold: bare coord steps under J or JG are a clear error (they
    were a silent n/a), and a coord gold cannot be built without a menu for each step."""
    som, coord = corpus[0]["test"], corpus[1]["test"]
    preds = [Prediction(s.step_id, render_target(s, "coord", "J")) for s in coord]
    for contract in ("J", "JG"):
        with pytest.raises(ValueError, match="needs the som menus"):
            score_predictions(preds, coord, "coord", contract, bootstrap_resamples=0)
        with pytest.raises(ValueError, match="needs the step's som menu"):
            score_step(preds[0].output, coord[0], "coord", contract)
    with pytest.raises(ValueError, match="coord gold needs the som menu"):
        GoldSteps("coord", tuple(coord))
    with pytest.raises(ValueError, match="1 coord gold step"):
        GoldSteps.from_views("coord", {"som": som[1:], "coord": coord})
    with pytest.raises(ValueError, match="not coord"):
        score_predictions(preds, GoldSteps.from_views("som", {"som": som}), "coord", "J", bootstrap_resamples=0)
    # A and G read no menu: bare coord steps still score, with no consistency to report
    r = score_predictions(preds, coord, "coord", "A", bootstrap_resamples=0)
    assert r.metrics["guide_action_consistency"]["n"] == 0
    # and with the gold the consistency is computed on every step
    r = score_predictions(preds, GoldSteps.from_views("coord", {"som": som, "coord": coord}), "coord", "J",
                          bootstrap_resamples=0)
    assert r.metrics["guide_action_consistency"]["n"] == len(coord)


def test_metric_module_reports_the_extension(corpus):
    import evaluate

    from mag_dataset.dataset import gold_records, load_view

    refs = gold_records(load_view(bundled_dataset(), "som", "test"))
    from mag_dataset.dataset import step_from_record

    preds = [render_target(step_from_record(r), "som", "J") for r in refs]
    metric = evaluate.load("loaders/webmre_metric")
    res = metric.compute(predictions=preds, references=refs, view="som", contract="J")
    assert res["extensions"]["guide_action_consistency"]["micro"] >= 0.9
    assert res["extensions"]["joint_step_acc"]["n"] > 0


def test_metric_module_coord_space_and_menus():
    import evaluate

    from mag_dataset.dataset import gold_records, load_gold, load_view, step_from_record

    refs = gold_records(load_gold(bundled_dataset(), "coord", "test"))  # each record carries its som menu
    assert all(r["menu"] for r in refs[:5])
    preds = [render_target(step_from_record(r), "coord", "J", coord_space="norm1000") for r in refs]
    metric = evaluate.load("loaders/webmre_metric")
    res = metric.compute(predictions=preds, references=refs, view="coord", contract="J", coord_space="norm1000")
    assert res["target_acc"]["micro"] == 1.0 and res["warnings"] == []
    assert res["provenance"]["coord_space"]["space"] == "norm1000"
    assert res["extensions"]["guide_action_consistency"]["micro"] >= 0.9
    res = metric.compute(predictions=preds, references=refs, view="coord", contract="J")
    # norm1000 points scored as pixels miss; on 1280x720 site pages most still fall inside the
    # screenshot, so only the fractions of norm1 trip the "looks like another space" warning
    assert res["target_acc"]["micro"] < 0.2
    preds = [render_target(step_from_record(r), "coord", "J", coord_space="norm1") for r in refs]
    res = metric.compute(predictions=preds, references=refs, view="coord", contract="J")
    assert res["target_acc"]["micro"] < 0.2 and res["warnings"]
    # records of a bare coord split carry no menu: refused under J, scored under A
    bare = gold_records(load_view(bundled_dataset(), "coord", "test"))
    with pytest.raises(ValueError, match="carry no som menu"):
        metric.compute(predictions=preds, references=bare, view="coord", contract="J")
    assert metric.compute(predictions=preds, references=bare, view="coord", contract="A")["ofcr"]["n"] == len(bare)
    with pytest.raises(ValueError, match="menus= is gone"):
        metric.compute(predictions=preds, references=refs, view="coord", contract="J", menus={})
