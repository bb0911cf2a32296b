"""baselines.mediation: four forced-guide conditions, scored by the library scorer."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, mediation  # noqa: E402
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

    def generate(self, prompts, images, prefixes=None):
        from mag_dataset.prompts import action_object, render_output

        self.calls.append(list(prefixes) if prefixes else None)
        out = []
        for p, f in zip(prompts, prefixes or [""] * len(prompts)):
            step = self.by_prompt[p]
            if not f:  # free decoding: the gold answer for even steps, garbage for odd ones
                text = render_output(action_object(step.action, "som"), step.guide, "JG") if step.step_index == 0 \
                    else "not json"
                out.append(common.Decoded("", text, 1))
                continue
            guide = json.loads(f[len('{"guide": '): f.rindex(', "action"')])
            follow = next((s for s in (e.step for e in self.examples) if s.guide == guide), None)
            action = follow.action if follow is not None else step.action
            full = render_output(action_object(action, "som"), guide, "JG")
            assert full.startswith(f)
            out.append(common.Decoded(f, full[len(f):], 1))
        return out


def test_conditions_and_scores_are_exact_with_a_guide_follower(tmp_path, capsys):
    examples = _examples(4)
    args = mediation.MediationArguments(model_name_or_path="none", output_dir=str(tmp_path / "med"),
                                        paraphrases=str(_paraphrases(tmp_path, examples)), seed=7)
    rows = mediation.run(args, examples, GuideFollower(examples))
    by = {r["condition"]: r for r in rows}
    assert list(by) == list(mediation.CONDITIONS)
    assert by["gold"]["saa"] == 1.0
    assert by["other"]["saa"] == 0.0, "every other-step guide names another step's action"
    assert by["own"]["forced"] == 2 and by["own"]["saa"] == 0.5, "2 free outputs fail the gate"
    assert by["paraphrase"]["saa"] == 1.0  # paraphrases here keep the target's description
    table = capsys.readouterr().out
    assert len([line for line in table.splitlines() if re.match(r"(own|gold|other|paraphrase)\s", line)]) == 4
    saved = json.loads((tmp_path / "med" / "mediation.json").read_text())
    assert [r["condition"] for r in saved["rows"]] == list(mediation.CONDITIONS)
    for cond in mediation.CONDITIONS:
        assert len((tmp_path / "med" / f"{cond}.jsonl").read_text().splitlines()) == 4


def test_other_step_draw_is_seeded_and_never_the_own_guide():
    steps = [e.step for e in _examples(8)]
    a = mediation.other_step_guides(steps, seed=3)
    assert a == mediation.other_step_guides(steps, seed=3)
    assert all(g != s.guide for g, s in zip(a, steps))
    assert len({tuple(mediation.other_step_guides(steps, seed=k)) for k in range(6)}) > 1


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


@pytest.mark.train
@pytest.mark.slow
def test_mediation_on_tiny_real_model_prints_four_rows(tmp_path, tiny_vlm, capsys):
    examples = _examples(4)
    backend = common.TransformersBackend(str(tiny_vlm), batch_size=4, max_new_tokens=10, device="cpu")
    args = mediation.MediationArguments(model_name_or_path=str(tiny_vlm), output_dir=str(tmp_path / "med"),
                                        paraphrases=str(_paraphrases(tmp_path, examples)), seed=0)
    rows = mediation.run(args, examples, backend)
    assert [r["condition"] for r in rows] == list(mediation.CONDITIONS)
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["condition", "steps", "SAA"]
    assert sum(1 for line in out.splitlines() if line.split() and line.split()[0] in mediation.CONDITIONS) == 4
    saved = json.loads((tmp_path / "med" / "mediation.json").read_text())
    for cond in ("gold", "other", "paraphrase"):
        assert len(saved["decoded"][cond]) == 4
        for d in saved["decoded"][cond]:
            assert d["prefix"].startswith('{"guide": ') and d["prefix"].endswith('"action": ')
        preds = [json.loads(x)["output"] for x in (tmp_path / "med" / f"{cond}.jsonl").read_text().splitlines()]
        assert all(p.startswith(d["prefix"]) for p, d in zip(preds, saved["decoded"][cond]))
    gold_prefixes = [d["prefix"] for d in saved["decoded"]["gold"]]
    assert gold_prefixes == [common.guide_prefix(e.step.guide) for e in examples]
