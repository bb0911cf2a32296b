"""baselines.mediation: the free decoding and four forced-guide conditions, scored by the library scorer."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, mediation  # noqa: E402
from mag_dataset import runners  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402


def _examples(n=4):
    return [common.Example(s, im) for s, im in tiny_steps(n)]


def _paraphrases(tmp_path, examples):
    path = tmp_path / "para.jsonl"
    path.write_text("".join(json.dumps({"step_id": e.step.step_id, "guide": "Please " + e.step.guide.lower()}) + "\n"
                            for e in examples), encoding="utf-8")
    return path


class GuideFollower:
    """A deterministic 'model' that acts on the element named in the forced guide (no guide: a fixed bad answer).

    It lets the test check the mediation arithmetic exactly; the tiny real model below checks the decoding path.
    """

    name = "guide-follower"

    def __init__(self, examples):
        self.by_prompt = {}
        self.calls = []
        self.examples = examples

    def prompt(self, step, view, contract):
        p = f"PROMPT {step.step_id}"
        self.by_prompt[p] = step
        return p

    def decode(self, prompts, images, prefixes=None):
        from mag_dataset.prompts import action_object, render_output

        self.calls.append(list(prefixes) if prefixes else None)
        out = []
        for p, f in zip(prompts, prefixes or [""] * len(prompts)):
            step = self.by_prompt[p]
            if not f:  # free decoding: the gold answer for even steps, garbage for odd ones
                text = render_output(action_object(step.action, "som"), step.guide, "JG") if step.step_index == 0 \
                    else "not json"
                out.append(runners.Decoded("", text, 1))
                continue
            guide = json.loads(f[len('{"guide": '): f.rindex(', "action"')])
            follow = next((s for s in (e.step for e in self.examples) if s.guide == guide), None)
            action = follow.action if follow is not None else step.action
            full = render_output(action_object(action, "som"), guide, "JG")
            assert full.startswith(f)
            out.append(runners.Decoded(f, full[len(f):], 1))
        return out


def test_conditions_and_scores_are_exact_with_a_guide_follower(tmp_path, capsys):
    examples = _examples(4)
    args = mediation.MediationArguments(model_name_or_path="none", output_dir=str(tmp_path / "med"),
                                        paraphrases=str(_paraphrases(tmp_path, examples)), seed=7)
    rows = mediation.run(args, examples, GuideFollower(examples))
    by = {r["condition"]: r for r in rows}
    assert list(by) == list(mediation.CONDITIONS)
    assert by["free"]["saa"] == 0.5 and by["free"]["forced"] == 0
    assert by["gold"]["saa"] == 1.0
    assert by["other"]["saa"] == 0.0, "every other-step guide names another step's action"
    assert by["own"]["forced"] == 2 and by["own"]["saa"] == 0.5, "2 free outputs fail the gate"
    assert by["paraphrase"]["saa"] == 1.0  # paraphrases here keep the target's description
    table = capsys.readouterr().out
    assert len([line for line in table.splitlines() if re.match(r"(free|own|gold|other|paraphrase)\s+\d", line)]) == 5
    assert "own vs free: 2/2 forced steps decode the same text, 2/2 the same action" in table
    saved = json.loads((tmp_path / "med" / "mediation.json").read_text())
    assert [r["condition"] for r in saved["rows"]] == list(mediation.CONDITIONS)
    assert saved["own_vs_free"] == {"forced": 2, "same_text": 2, "same_action": 2, "same_text_rate": 1.0,
                                    "same_action_rate": 1.0}
    assert saved["other_scope"] == "task"
    for cond in mediation.CONDITIONS:
        assert len((tmp_path / "med" / f"{cond}.jsonl").read_text().splitlines()) == 4


def test_other_step_draw_is_seeded_and_never_the_own_guide():
    steps = [e.step for e in _examples(8)]
    a = mediation.other_step_guides(steps, seed=3)
    assert a == mediation.other_step_guides(steps, seed=3)
    assert all(g != s.guide for g, s in zip(a, steps))
    assert len({tuple(mediation.other_step_guides(steps, seed=k)) for k in range(6)}) > 1


def test_other_guide_comes_from_another_task_by_default():
    steps = [e.step for e in _examples(8)]  # 4 tasks of 2 steps
    task_of = {}
    for s in steps:
        task_of.setdefault(s.guide, set()).add(s.task_id)
    for seed in range(5):
        for g, s in zip(mediation.other_step_guides(steps, seed=seed), steps):
            assert task_of[g] - {s.task_id}, (s.step_id, g)
    # one task only: no other task to draw from is a clear error (any other step still works)
    one_task = [s for s in steps if s.task_id == steps[0].task_id]
    with pytest.raises(ValueError, match="another task"):
        mediation.other_step_guides(one_task, seed=0)
    assert mediation.other_step_guides(one_task, seed=0, scope="step") == [one_task[1].guide, one_task[0].guide]


def test_paraphrase_file_errors_name_the_problem(tmp_path):
    from mag_dataset.cli import UserError

    ids = ["t:0", "t:1"]
    p = tmp_path / "p.jsonl"
    p.write_text('{"step_id": "t:0", "guide": "g"}\n', encoding="utf-8")
    with pytest.raises(UserError, match="1 step.* no paraphrase.*'t:1'"):
        mediation.read_paraphrases(p, ids)
    p.write_text('{"step_id": "t:0", "guide": "g"}\n{"step_id": "zz", "guide": "g"}\n', encoding="utf-8")
    with pytest.raises(UserError, match=r":2: unknown step_id 'zz'"):
        mediation.read_paraphrases(p, ids)
    p.write_text("{oops\n", encoding="utf-8")
    with pytest.raises(UserError, match=r":1: not JSON"):
        mediation.read_paraphrases(p, ids)


def _steered_tiny_vlm(tiny_vlm, tmp_path, answer):
    """The tiny random VLM whose greedy decoding writes ``answer`` whatever the input.

    Its weights are untouched; its ``generation_config`` carries a ``sequence_bias`` that adds
    +100 to each token of ``answer`` when the tokens before it are the answer so far (keyed on the
    full answer prefix, so a repeated JSON token has one successor per context). A decode forced
    with a prefix that re-tokenizes differently from the answer leaves that path.
    """
    import shutil

    from transformers import GenerationConfig

    from mag_dataset.testing.tiny_vlm import load_processor

    out = tmp_path / "steered"
    shutil.copytree(tiny_vlm, out)
    tok = load_processor(out).tokenizer
    lead = tok("</think>\n\n", add_special_tokens=False)["input_ids"][-1:]  # the prompt's last token
    ids = tok(answer, add_special_tokens=False)["input_ids"] + [tok.convert_tokens_to_ids("<|im_end|>")]
    bias = [[lead + ids[: i + 1], 100.0] for i in range(len(ids))]
    config = GenerationConfig.from_pretrained(out)
    config.sequence_bias = bias
    config.save_pretrained(out)
    return out


@pytest.mark.train
@pytest.mark.slow
def test_own_guide_reproduces_free_decoding_on_the_tiny_model(tmp_path, tiny_vlm):
    """Greedy + a token-aligned prefix: forcing the model's own guide gives back its free output."""
    from mag_dataset.prompts import render_target

    examples = _examples(4)
    answer = render_target(examples[1].step, "som", "JG")
    model = _steered_tiny_vlm(tiny_vlm, tmp_path, answer)
    backend = common.TransformersBackend(str(model), batch_size=4, max_new_tokens=48, device="cpu")
    args = mediation.MediationArguments(model_name_or_path=str(model), output_dir=str(tmp_path / "med"), seed=0)
    rows = {r["condition"]: r for r in mediation.run(args, examples, backend)}
    saved = json.loads((tmp_path / "med" / "mediation.json").read_text())
    free = [json.loads(x)["output"] for x in (tmp_path / "med" / "free.jsonl").read_text().splitlines()]
    own = [json.loads(x)["output"] for x in (tmp_path / "med" / "own.jsonl").read_text().splitlines()]
    assert free == [answer] * 4, free  # the model writes a parsable JG answer freely ...
    assert rows["own"]["forced"] == 4 and own == free  # ... and its own guide forced reproduces it
    assert saved["own_vs_free"]["same_text"] == saved["own_vs_free"]["same_action"] == 4
    assert rows["own"]["saa"] == rows["free"]["saa"] == 0.25
    # the same model forced with the old prefix (a trailing space: token 'Ġ' where training had 'Ġ{"')
    # leaves the answer: the alignment is what makes own == free
    step = examples[0].step
    prompt = backend.prompt(step, "som", "JG")
    guide = examples[1].step.guide
    aligned = backend.decode([prompt], [examples[0].image], [common.guide_prefix(guide)])[0]
    split = backend.decode([prompt], [examples[0].image], [common.guide_prefix(guide) + " "])[0]
    assert aligned.text == answer and split.text != answer


@pytest.mark.train
@pytest.mark.slow
def test_mediation_on_tiny_real_model_prints_five_rows(tmp_path, tiny_vlm, capsys):
    examples = _examples(4)
    backend = common.TransformersBackend(str(tiny_vlm), batch_size=4, max_new_tokens=10, device="cpu")
    args = mediation.MediationArguments(model_name_or_path=str(tiny_vlm), output_dir=str(tmp_path / "med"),
                                        paraphrases=str(_paraphrases(tmp_path, examples)), seed=0)
    rows = mediation.run(args, examples, backend)
    assert [r["condition"] for r in rows] == list(mediation.CONDITIONS)
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["condition", "steps", "forced", "SAA"]
    rows_printed = [w for w in (line.split() for line in out.splitlines()) if len(w) > 1 and w[1].isdigit()]
    assert [w[0] for w in rows_printed] == list(mediation.CONDITIONS)
    assert "own vs free:" in out
    saved = json.loads((tmp_path / "med" / "mediation.json").read_text())
    for cond in ("gold", "other", "paraphrase"):
        assert len(saved["decoded"][cond]) == 4
        for d in saved["decoded"][cond]:
            assert d["prefix"].startswith('{"guide": ') and d["prefix"].endswith('"action":')
        preds = [json.loads(x)["output"] for x in (tmp_path / "med" / f"{cond}.jsonl").read_text().splitlines()]
        assert all(p.startswith(d["prefix"]) for p, d in zip(preds, saved["decoded"][cond]))
    gold_prefixes = [d["prefix"] for d in saved["decoded"]["gold"]]
    assert gold_prefixes == [common.guide_prefix(e.step.guide) for e in examples]
