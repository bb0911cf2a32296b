"""The pure scorer: gold scores 1.0, applicability, metric definitions, aggregates, determinism."""

from __future__ import annotations

import json
import random
import statistics

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from hand_built_steps import gold_steps, make_step
from mag_dataset.actions import Contract, View
from mag_dataset.predictions import Prediction
from mag_dataset.prompts import render_output, render_target
from mag_dataset.schema import Action
from mag_dataset.scoring import (
    METRIC_NAMES,
    GoldSteps,
    SCORER_VERSION,
    aggregate,
    bleu,
    dataset_fingerprint,
    normalize_arg,
    rouge_l,
    score_predictions,
    score_step,
    token_f1,
)
from mag_dataset.verdicts import UsefulnessVerdict, Verdicts

STEPS = gold_steps()
BY_ID = {s.step_id: s for s in STEPS}
CONDITIONS = [(v, c) for v in View for c in Contract]


def gold_of(view):
    """The scoring input of ``view``: the hand-built steps serve both views, and the coord
    view's gold takes their menus as the som rows' (what the consistency check reads)."""
    return GoldSteps.from_views(view, {"som": STEPS, view: STEPS})


def gold_preds(view, contract, seed=0):
    return [Prediction(s.step_id, render_target(s, view, contract), seed) for s in STEPS]


@pytest.mark.parametrize("view,contract", CONDITIONS, ids=[f"{v.value}-{c.value}" for v, c in CONDITIONS])
def test_gold_outputs_score_one_on_every_applicable_metric(view, contract):
    report = score_predictions(gold_preds(view, contract), gold_of(view), view, contract, keep_steps=True)
    checked = 0
    for sc in report.steps:
        for m in METRIC_NAMES:
            v = sc.metric(m)
            if v is not None:
                assert v == 1.0, (sc.step_id, m, v)
                checked += 1
    assert checked >= 12
    for m in METRIC_NAMES:
        assert report.value(m) in (1.0, None)
    has_action, has_guide = contract is not Contract.G, contract is not Contract.A
    assert (report.value("saa") == 1.0) == has_action
    assert (report.value("bleu4") == 1.0) == has_guide


def test_applicability_none_vs_zero():
    junk = "not json"
    for contract in Contract:
        sc = score_step(junk, STEPS[0], "som", contract)
        action, guide = contract is not Contract.G, contract is not Contract.A
        assert sc.ofcr == 0.0
        for m in ("action_type_acc", "target_acc", "text_f1", "saa"):
            assert (sc.metric(m) == 0.0) if action else (sc.metric(m) is None)
        for m in ("bleu1", "bleu4", "rouge_l"):
            assert (sc.metric(m) == 0.0) if guide else (sc.metric(m) is None)
        assert sc.usefulness is None  # no verdicts given
    # text_f1 applies only to gold type actions; target only to targeted golds
    sc = score_step(junk, BY_ID["login-2/1"], "som", "A")  # scroll
    assert sc.text_f1 is None and sc.target_acc is None and sc.saa == 0.0


def test_disputed_and_unmappable_are_excluded_from_element_level_terms_only():
    for sid in ("audit-1/0", "audit-1/1"):
        step = BY_ID[sid]
        sc = score_step(render_target(step, "som", "J"), step, "som", "J")
        assert sc.target_acc is None and sc.saa is None
        assert sc.action_type_acc == 1.0 and sc.bleu1 == 1.0 and sc.ofcr == 1.0
    report = score_predictions(gold_preds("som", "J"), STEPS, "som", "J")
    assert report.counts["disputed"] == 1 and report.counts["unmappable"] == 1
    assert report.provenance["steps_excluded"] == 2 and report.provenance["steps_scored"] == 12
    assert report.metrics["saa"]["n"] == 10 and report.metrics["action_type_acc"]["n"] == 12
    # targeted, not excluded: type x2 + select + click + confirmed type = 5
    assert report.metrics["target_acc"]["n"] == 5
    assert report.metrics["text_f1"]["n"] == 3


def test_coord_target_is_point_in_box_edges_included():
    step = BY_ID["login-2/0"]  # box (20, 130, 80, 150)
    for point, hit in [([20, 130], 1.0), ([80, 150], 1.0), ([50.5, 140], 1.0), ([19.999, 140], 0.0), ([50, 150.01], 0.0)]:
        sc = score_step(json.dumps({"action": {"type": "click", "coordinate": point}}), step, "coord", "A")
        assert sc.target_acc == hit and sc.saa == hit, point


def test_som_target_compares_ids_as_strings():
    step = BY_ID["login-2/0"]
    assert score_step('{"action": {"type": "click", "element": 7}}', step, "som", "A").target_acc == 1.0
    assert score_step('{"action": {"type": "click", "element": "07"}}', step, "som", "A").target_acc == 0.0
    assert score_step('{"action": {"type": "hover", "element": "7"}}', step, "som", "A").saa == 0.0


def test_text_f1_squad_style():
    assert token_f1("Hello, World!", "hello world") == pytest.approx(2 * (2 / 4) * 1 / (2 / 4 + 1))
    assert token_f1("a a b", "a b b") == pytest.approx(2 / 3)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0
    step = BY_ID["audit-1/2"]  # gold text "Hello, World!"
    sc = score_step('{"action": {"type": "type", "element": "3", "text": "hello world"}}', step, "som", "A")
    assert sc.text_f1 == pytest.approx(2 / 3) and sc.saa == 0.0  # "," and "!" are tokens
    sc = score_step('{"action": {"type": "click", "element": "3"}}', step, "som", "A")
    assert sc.text_f1 == 0.0


def test_saa_argument_rules():
    def saa(action, sid):
        step = BY_ID[sid]
        return score_step(json.dumps({"action": action}), step, "som", "A").saa

    assert saa({"type": "type", "element": "3", "text": "  CHEREE "}, "login-1/0") == 1.0
    assert saa({"type": "type", "element": "3", "text": "Cheree!"}, "login-1/0") == 0.0
    assert saa({"type": "type", "element": "4", "text": "Cheree"}, "login-1/0") == 0.0  # wrong target
    assert saa({"type": "select", "element": "5", "value": "france"}, "login-1/2") == 1.0
    assert saa({"type": "select", "element": "5", "value": "Spain"}, "login-1/2") == 0.0
    assert saa({"type": "scroll", "direction": "down"}, "login-2/1") == 1.0
    assert saa({"type": "scroll", "direction": "up"}, "login-2/1") == 0.0
    assert saa({"type": "press", "key": "enter"}, "login-2/2") == 1.0
    assert saa({"type": "press", "key": "Tab"}, "login-2/2") == 0.0
    assert saa({"type": "goto", "url": "https://en.wikipedia.org/wiki/Lyon/"}, "wiki-1/0") == 1.0
    assert saa({"type": "goto", "url": "https://en.wikipedia.org/wiki/Paris"}, "wiki-1/0") == 0.0
    assert saa({"type": "finish", "answer": "something else"}, "login-2/3") == 1.0  # answer ignored
    assert saa({"type": "finish"}, "login-2/3") == 1.0
    assert saa({"type": "go_back"}, "wiki-1/1") == 1.0
    assert saa({"type": "go_forward"}, "wiki-1/1") == 0.0
    assert normalize_arg("  Ａ  b\tC ") == "a b c"


def test_bleu_and_rouge_are_the_library_calls():
    pairs = [("click the submit button", "Click the 'Submit' button."), ("Type Bob", "Type 'Bob' into the field."),
             ("", "Scroll down."), ("Scroll DOWN now please", "Scroll down.")]
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    for hyp, ref in pairs:
        assert bleu(hyp, ref, 4) == round(sacrebleu.sentence_bleu(hyp, [ref], lowercase=True).score / 100, 10)
        b1 = sacrebleu.metrics.BLEU(lowercase=True, max_ngram_order=1, effective_order=True)
        assert bleu(hyp, ref, 1) == round(b1.sentence_score(hyp, [ref]).score / 100, 10)
        assert rouge_l(hyp, ref) == round(scorer.score(ref, hyp)["rougeL"].fmeasure, 10)
    step = BY_ID["login-2/0"]
    sc = score_step('{"guide": "click the blue submit button now"}', step, "som", "G")
    assert 0 < sc.bleu4 < sc.bleu1 < 1 and 0 < sc.rouge_l < 1


_ROUGE_REFERENCE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
# guide-like words, case and punctuation variants, digits, non-ASCII letters (dropped by
# rouge-score's tokenizer), and characters whose lower case is ASCII (KELVIN SIGN -> k)
_GUIDE_TEXT = st.lists(st.sampled_from(["Click", "click", "the", "'Submit'", "button", "SUBMIT", "Type", "Bob",
                                        "into", "field.", "2", "42", "café", "naïve", "\u212a", "e-mail", "--",
                                        "\u0130", "Ω", "scroll", "down", "", " ", "\n", "tab"]),
                       max_size=14).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(pred=st.one_of(_GUIDE_TEXT, st.text(max_size=60)), gold=st.one_of(_GUIDE_TEXT, st.text(max_size=60)))
def test_rouge_l_equals_rouge_score_on_generated_strings(pred, gold):
    assert rouge_l(pred, gold) == round(_ROUGE_REFERENCE.score(gold, pred)["rougeL"].fmeasure, 10)


def _verdicts(step_guide_votes):
    vs = []
    for sid, guide, votes in step_guide_votes:
        for judge, useful in zip(("j-a", "j-b", "j-c"), votes):
            if useful is not None:
                vs.append(UsefulnessVerdict(sid, guide, judge, useful))
    return Verdicts.from_verdicts(vs)


def test_usefulness_is_the_majority_of_three_cached_verdicts():
    s0, s1, s2 = STEPS[0], STEPS[3], STEPS[4]
    verdicts = _verdicts([
        (s0.step_id, s0.guide, (True, True, False)),
        (s1.step_id, s1.guide, (True, False, False)),
        (s2.step_id, s2.guide, (True, None, True)),  # one judge missing -> unjudged
    ])
    assert score_step(render_target(s0, "som", "G"), s0, "som", "G", verdicts).usefulness == 1.0
    assert score_step(render_target(s1, "som", "G"), s1, "som", "G", verdicts).usefulness == 0.0
    sc = score_step(render_target(s2, "som", "G"), s2, "som", "G", verdicts)
    assert sc.usefulness is None and sc.unjudged
    # a different guide for a judged step has no verdict; a failed output scores 0
    assert score_step('{"guide": "Do it."}', s0, "som", "G", verdicts).usefulness is None
    assert score_step("nope", s0, "som", "G", verdicts).usefulness == 0.0
    assert score_step(render_target(s0, "som", "A"), s0, "som", "A", verdicts).usefulness is None
    report = score_predictions(gold_preds("som", "J"), STEPS, "som", "J", verdicts=verdicts)
    u = report.metrics["usefulness"]
    assert u["n"] == 2 and u["micro"] == 0.5 and report.counts["usefulness_unjudged"] == 10
    assert report.provenance["verdicts"]["judges"] == ["j-a", "j-b", "j-c"]



@pytest.mark.parametrize("line,message", [
    ("[" * 100_000, "line 2: not a JSON object (RecursionError)"),
    ('{"key": 1' + "0" * 5000 + "}", "line 2: not a JSON object (ValueError)"),
    ("{nope", "line 2: not a JSON object"),
    ('["key"]', "line 2: not a JSON object"),
    ('{"key": "' + "z" * 64 + '", "judge": "j-a", "useful": true}', "line 2: 'key' must be a sha256 hex string"),
    ('{"key": "' + "a" * 63 + '", "judge": "j-a", "useful": true}', "line 2: 'key' must be a sha256 hex string"),
    ('{"key": "' + "a" * 64 + '", "judge": "", "useful": true}', "line 2: 'judge' must be a non-empty string"),
    ('{"key": "' + "a" * 64 + '", "judge": "j-a", "useful": 1}', "line 2: 'useful' must be true or false"),
])
def test_bad_verdict_file_lines_are_named_not_raised(tmp_path, line, message):
    from mag_dataset.verdicts import VerdictsError, read_usefulness_verdicts, write_verdicts

    path = write_verdicts(tmp_path / "v.jsonl", [UsefulnessVerdict("s/0", "Click.", "j-a", True)])
    path.write_text(path.read_text("utf-8") + line + "\n", "utf-8")
    with pytest.raises(VerdictsError) as e:
        read_usefulness_verdicts(path)
    assert message in str(e.value)

def _noisy_preds(view, contract, seed, p_wrong):
    rng = random.Random(seed)
    out = []
    for s in STEPS:
        text = render_target(s, view, contract)
        if rng.random() < p_wrong:
            text = render_output({"type": "scroll", "direction": "up"}, "Scroll up.", contract) if rng.random() < 0.7 else "oops"
        out.append(Prediction(s.step_id, text, seed))
    return out


def test_report_shape_and_top_level_keys():
    report = score_predictions(_noisy_preds("som", "J", 1, 0.4), STEPS, "som", "J")
    d = json.loads(report.to_json())
    assert list(d) == list(METRIC_NAMES) + ["extensions", "counts", "breakdowns", "provenance", "warnings"]
    assert list(d["extensions"]) == ["guide_action_consistency", "joint_step_acc"]
    for m in METRIC_NAMES:
        assert set(d[m]) == {"micro", "macro", "n", "n_tasks", "std", "ci95", "per_seed"}
    for m in d["extensions"].values():
        assert set(m) == {"micro", "macro", "n", "n_tasks", "std", "ci95", "per_seed"}
    prov = d["provenance"]
    assert prov["scorer_version"] == SCORER_VERSION and prov["view"] == "som" and prov["contract"] == "J"
    assert prov["dataset_fingerprint"] == dataset_fingerprint(STEPS)
    assert set(d["breakdowns"]) == {"site", "action_type", "stale", "unseen_template"}
    assert set(d["breakdowns"]["site"]) == {"miniwob", "wikipedia"}
    assert set(d["breakdowns"]["action_type"]) == {"type", "select", "click", "scroll", "press", "finish", "goto", "go_back"}
    assert d["breakdowns"]["stale"]["true"]["steps"] == 1 and d["breakdowns"]["unseen_template"]["true"]["steps"] == 2
    assert d["counts"]["steps"] == 12 and d["counts"]["tasks"] == 4


def test_micro_macro_and_breakdown_values_by_hand():
    # wrong on every step of task login-2 (4 steps), right elsewhere (8 steps)
    preds = []
    for s in STEPS:
        text = render_target(s, "som", "A") if s.task_id != "login-2" else '{"action": {"type": "go_forward"}}'
        preds.append(Prediction(s.step_id, text))
    r = score_predictions(preds, STEPS, "som", "A")
    assert r.value("action_type_acc") == pytest.approx(8 / 12, abs=1e-6)
    assert r.metrics["action_type_acc"]["macro"] == pytest.approx(3 / 4, abs=1e-6)
    assert r.value("ofcr") == 1.0
    assert r.breakdowns["site"]["wikipedia"]["action_type_acc"] == {"value": 1.0, "n": 2, "gold_n": 2}
    assert r.breakdowns["action_type"]["click"]["action_type_acc"]["n"] == 3
    assert r.breakdowns["action_type"]["click"]["action_type_acc"]["value"] == pytest.approx(2 / 3, abs=1e-6)
    # three seeds of the same outputs: three times the scores, the same gold steps
    seeded = [Prediction(p.step_id, p.output, seed=k) for k in range(3) for p in preds]
    r3 = score_predictions(seeded, STEPS, "som", "A")
    wiki = r3.breakdowns["site"]["wikipedia"]
    assert (wiki["steps"], wiki["gold_steps"]) == (3 * r.breakdowns["site"]["wikipedia"]["steps"], 2)
    assert wiki["action_type_acc"] == {"value": 1.0, "n": 6, "gold_n": 2}


def test_multi_seed_mean_and_sample_std():
    preds = []
    for seed in (0, 1, 2):
        preds += _noisy_preds("coord", "JG", seed, 0.5)
    r = score_predictions(preds, gold_of("coord"), "coord", "JG")
    per_seed = []
    for seed in (0, 1, 2):
        single = score_predictions([p for p in preds if p.seed == seed], gold_of("coord"), "coord", "JG")
        per_seed.append(single.value("saa"))
        assert r.metrics["saa"]["per_seed"][str(seed)]["micro"] == single.value("saa")
    assert r.counts["seeds"] == [0, 1, 2] and r.metrics["saa"]["n"] == 30
    assert r.value("saa") == pytest.approx(statistics.mean(per_seed), abs=1e-6)
    assert r.metrics["saa"]["std"] == pytest.approx(statistics.stdev(per_seed), abs=1e-6)
    assert score_predictions(preds[:12], gold_of("coord"), "coord", "JG").metrics["saa"]["std"] is None


def test_bootstrap_interval_is_fixed_and_brackets_the_mean():
    preds = _noisy_preds("som", "J", 7, 0.5)
    a = score_predictions(preds, STEPS, "som", "J")
    b = score_predictions(list(reversed(preds)), STEPS, "som", "J")
    for m in ("ofcr", "saa", "bleu1"):
        lo, hi = a.metrics[m]["ci95"]
        assert lo <= a.value(m) <= hi and lo < hi
        assert a.metrics[m]["ci95"] == b.metrics[m]["ci95"]
    assert a.metrics["usefulness"]["ci95"] is None
    assert score_predictions(preds, STEPS, "som", "J", bootstrap_resamples=0).metrics["saa"]["ci95"] is None


def test_same_inputs_give_byte_identical_json():
    preds = _noisy_preds("som", "JG", 3, 0.5) + _noisy_preds("som", "JG", 4, 0.3)
    a = score_predictions(preds, STEPS, "som", "JG").to_json()
    b = score_predictions(list(reversed(preds)), list(reversed(STEPS)), "som", "JG").to_json()
    assert a == b and a.endswith("\n")
    c = aggregate([score_step(p.output, BY_ID[p.step_id], "som", "JG", seed=p.seed) for p in preds], STEPS, "som", "JG")
    assert c.to_json() == a


def test_fingerprint_tracks_the_gold():
    fp = dataset_fingerprint(STEPS)
    assert fp.startswith("sha256:") and fp == dataset_fingerprint(list(reversed(STEPS)))
    changed = list(STEPS)
    s = changed[0]
    changed[0] = make_step(s.step_id, s.task_id, Action("type", element_id="3", coordinate=(80.0, 50.0), text="Other"),
                           guide=s.guide, target_bbox=s.target_bbox)
    assert dataset_fingerprint(changed) != fp


def test_per_step_scores_are_kept_sorted_and_serialisable():
    r = score_predictions(_noisy_preds("coord", "J", 2, 0.5), gold_of("coord"), "coord", "J", keep_steps=True)
    assert [s.step_id for s in r.steps] == sorted(BY_ID)
    d = json.loads(r.to_json(include_steps=True))
    assert len(d["steps"]) == 12 and "steps" not in json.loads(r.to_json())


def test_targeted_gold_without_a_comparable_target_is_not_applicable():
    # coord gold with no target box (som id only): neither target_acc nor saa can be judged
    step = make_step("x/0", "x", Action("click", element_id="7"), guide="Click the 'Submit' button.")
    sc = score_step('{"action": {"type": "click", "coordinate": [50, 140]}}', step, "coord", "A")
    assert sc.target_acc is None and sc.saa is None and sc.action_type_acc == 1.0
    sc = score_step('{"action": {"type": "click", "element": "7"}}', step, "som", "A")
    assert sc.target_acc == 1.0 and sc.saa == 1.0


_WORDS = st.sampled_from("the a Click Submit button 'Submit' field , . ! type into 12 Ünïcode émoji 😀 -- x y z".split())


@settings(max_examples=400, deadline=None, database=None, derandomize=True)
@given(st.lists(_WORDS, max_size=14).map(" ".join), st.lists(_WORDS, max_size=14).map(" ".join))
def test_shared_statistics_bleu_equals_two_sentence_bleu_calls(hyp, ref):
    from mag_dataset.scoring import bleu_1_4

    b1 = sacrebleu.metrics.BLEU(lowercase=True, max_ngram_order=1, effective_order=True).sentence_score(hyp, [ref])
    b4 = sacrebleu.sentence_bleu(hyp, [ref], lowercase=True)
    assert bleu_1_4(hyp, ref) == (round(b1.score / 100, 10), round(b4.score / 100, 10))
    assert bleu_1_4(hyp, ref) == (bleu(hyp, ref, 1), bleu(hyp, ref, 4))


# --------------------------------------------------------------------------- the metric declaration


def test_every_metric_is_declared_once_and_the_derived_names_read_the_table():
    import dataclasses

    import mag_dataset.scoring as scoring_module
    from mag_dataset.scoring import (
        ALL_METRICS,
        BOARD_COLUMNS,
        EXTENSION_METRICS,
        MCNEMAR_METRICS,
        METRIC_BY_NAME,
        METRIC_TABLE,
        METRICS,
        StepScore,
    )

    names = [m.name for m in METRIC_TABLE]
    assert len(names) == len(set(names)) == 11
    assert ALL_METRICS == tuple(names) and METRIC_NAMES + EXTENSION_METRICS == ALL_METRICS
    assert EXTENSION_METRICS == ("guide_action_consistency", "joint_step_acc")
    assert list(METRICS) == list(METRIC_NAMES) and all(METRICS[n] is METRIC_BY_NAME[n].rule for n in METRICS)
    # StepScore: identity fields, then one field per declared metric in table order, then the taxonomy
    fields = [f.name for f in dataclasses.fields(StepScore)]
    assert fields[10:21] == names and fields[21:] == ["error", "pred_type", "box_distance"]
    assert dataclasses.is_dataclass(StepScore) and StepScore.__module__ == "mag_dataset.scoring.step"
    # the board's columns (the leaderboard's order) and the paired tests of mag compare
    assert list(BOARD_COLUMNS.items()) == [
        ("saa", "SAA"), ("target_acc", "target acc"), ("action_type_acc", "type acc"), ("text_f1", "text F1"),
        ("ofcr", "OFCR"), ("bleu1", "BLEU-1"), ("bleu4", "BLEU-4"), ("rouge_l", "ROUGE-L"), ("usefulness", "usefulness"),
    ]
    assert MCNEMAR_METRICS == {"ofcr", "action_type_acc", "target_acc", "saa", "guide_action_consistency", "joint_step_acc"}
    assert {c.value: m for c, m in scoring_module.HEADLINE_METRIC.items()} == {"A": "saa", "G": "bleu1", "J": "saa",
                                                                              "JG": "saa"}
    for m in METRIC_TABLE:
        assert m.title and m.label and m.applies and m.definition.endswith(".") and m.kind
        assert f"``{m.name}``" in scoring_module.__doc__ and m.definition in scoring_module.__doc__  # its table


def test_a_step_score_pickles_and_round_trips():
    import pickle

    from mag_dataset.scoring import StepScore

    sc = score_step(render_target(STEPS[0], "som", "J"), STEPS[0], "som", "J")
    assert pickle.loads(pickle.dumps(sc)) == sc
    assert StepScore(**sc.to_dict()) == sc and sc.metric("saa") == sc.saa == 1.0


def test_metric_rules_read_the_declared_rule_not_a_copy(monkeypatch):
    """The scorer runs each row's rule: a row whose rule is replaced changes that metric only."""
    import mag_dataset.scoring.step as step_mod

    rules = tuple((name, (lambda x, done: 0.25) if name == "text_f1" else rule) for name, rule in step_mod._RULES)
    monkeypatch.setattr(step_mod, "_RULES", rules)
    typed = next(s for s in STEPS if s.action.type.value == "type")
    sc = score_step(render_target(typed, "som", "A"), typed, "som", "A")
    assert sc.text_f1 == 0.25 and sc.saa == 1.0 and sc.ofcr == 1.0


@pytest.mark.parametrize("doc", ["README.md", "loaders/webmre_metric/README.md"])
def test_docs_metric_tables_are_generated_from_the_declaration(doc):
    from pathlib import Path

    from mag_dataset.scoring import METRIC_TABLE, metric_table_markdown

    text = (Path(__file__).resolve().parents[1] / doc).read_text("utf-8")
    start = "<!-- metric table: generated from METRIC_TABLE (metric_table_markdown()); a test checks it -->\n"
    assert text.count(start) == 1, f"{doc} has no generated metric table"
    table = text.split(start, 1)[1].split("\n<!-- end of metric table -->", 1)[0]
    assert table == metric_table_markdown(), (
        f"{doc}: the metric table is stale; paste the output of python -c 'from mag_dataset.scoring import "
        "metric_table_markdown as t; print(t())'"
    )
    assert table.count("\n| `") == len(METRIC_TABLE)
