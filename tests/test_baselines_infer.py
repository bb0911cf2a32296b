"""baselines.infer: batched greedy decoding on a tiny real VLM, resumable, scorer-readable output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, infer  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402


class CountingBackend(common.TransformersBackend):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.decoded: list[int] = []

    def decode(self, prompts, images, prefixes=None):
        self.decoded.append(len(prompts))
        return super().decode(prompts, images, prefixes)


@pytest.fixture(scope="module")
def backend(tiny_vlm):
    return CountingBackend(str(tiny_vlm), batch_size=3, max_new_tokens=12, device="cpu")


def _examples(n=5, view="som"):
    return [common.Example(s, im) for s, im in tiny_steps(n, view=view)]


def _args(tmp_path, tiny_vlm, **kw):
    base = dict(model_name_or_path=str(tiny_vlm), output=str(tmp_path / "preds.jsonl"), view="som",
                contract="J", seed=2, batch_size=3, max_new_tokens=12, progress=False)
    base.update(kw)
    return infer.InferArguments(**base)


def test_predict_writes_scorer_readable_file_with_provenance(tmp_path, tiny_vlm, backend, capsys):
    from mag_dataset.parsing import parse_output
    from mag_dataset.predictions import read_predictions

    examples = _examples(5)
    backend.decoded.clear()
    out = infer.predict(_args(tmp_path, tiny_vlm), examples, backend)
    assert backend.decoded == [3, 2], "batched in chunks of batch_size"
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5
    recs = [json.loads(line) for line in lines]
    assert [r["step_id"] for r in recs] == [e.step.step_id for e in examples]
    assert all(set(r) == {"step_id", "output", "seed"} and r["seed"] == 2 for r in recs)
    preds = list(read_predictions(out, [e.step.step_id for e in examples]))
    assert len(preds) == 5
    for r in recs:  # random weights: parses or fails the gate, never raises
        assert parse_output(r["output"], "som", "J").ok in (True, False)
    prov = json.loads(common.provenance_path(out).read_text())
    assert prov["model"] == str(tiny_vlm) and prov["view"] == "som" and prov["contract"] == "J"
    assert prov["seed"] == 2 and prov["steps"] == 5 and prov["backend"] == "transformers"
    assert prov["decoding"]["strategy"] == "greedy" and prov["decoding"]["max_new_tokens"] == 12
    assert prov["predictions_sha256"] == common.sha256_file(out)
    assert not (tmp_path / "preds.jsonl.partial").exists()
    assert "steps/s" in capsys.readouterr().err


def test_predict_resumes_from_partial_file(tmp_path, tiny_vlm, backend):
    examples = _examples(5)
    args = _args(tmp_path, tiny_vlm)
    partial = tmp_path / "preds.jsonl.partial"
    done = [{"step_id": e.step.step_id, "output": f"kept {i}", "seed": 2} for i, e in enumerate(examples[:2])]
    # two complete lines and one cut by a crash
    partial.write_text("".join(json.dumps(r) + "\n" for r in done) + '{"step_id": "tiny-1:0", "out',
                       encoding="utf-8")
    backend.decoded.clear()
    out = infer.predict(args, examples, backend)
    assert backend.decoded == [3], "only the 3 missing steps are decoded"
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["output"] for r in recs[:2]] == ["kept 0", "kept 1"]
    assert [r["step_id"] for r in recs] == [e.step.step_id for e in examples]
    backend.decoded.clear()
    infer.predict(args, examples, backend)  # complete file: nothing to do
    assert backend.decoded == []


def test_forced_prefix_is_kept_and_batched_equals_single(tiny_vlm, backend):
    examples = _examples(3)
    prompts = [backend.prompt(e.step, "som", "JG") for e in examples]
    prefixes = [common.guide_prefix(e.step.guide) for e in examples]
    batched = backend.decode(prompts, [e.image for e in examples], prefixes)
    single = [backend.decode([p], [e.image], [f])[0] for p, e, f in zip(prompts, examples, prefixes)]
    assert [d.text for d in batched] == [d.text for d in single]
    for d, f in zip(batched, prefixes):
        assert d.text.startswith(f) and d.prefix == f


def test_guide_prefix_matches_rendered_gold():
    from mag_dataset.prompts import render_target

    for step, _ in tiny_steps(4):
        gold = render_target(step, "som", "JG")
        prefix = common.guide_prefix(step.guide)
        assert gold.startswith(prefix) and prefix.endswith('"action":')
    with pytest.raises(ValueError, match="JG"):
        common.guide_prefix("Click it.", "J")


def test_forced_prefix_tokens_are_a_prefix_of_the_trained_answer_tokens(backend):
    """The forced prefix ends on a token boundary of the trained answer, alone and after the prompt."""
    from mag_dataset.prompts import render_target

    tok = backend.processor.tokenizer
    for step, _ in tiny_steps(4):
        full, prefix = render_target(step, "som", "JG"), common.guide_prefix(step.guide)
        a = tok(full, add_special_tokens=False)["input_ids"]
        b = tok(prefix, add_special_tokens=False)["input_ids"]
        assert a[: len(b)] == b, (tok.convert_ids_to_tokens(a[len(b) - 2 : len(b) + 1]), tok.convert_ids_to_tokens(b[-2:]))
        assert common.prefix_is_token_aligned(tok, prefix, full)
        # as the model sees it: the decoding prompt + prefix vs the SFT sequence (prompt, then answer tokens)
        prompt = backend.prompt(step, "som", "JG")
        p = tok(prompt, add_special_tokens=False)["input_ids"]
        assert tok(prompt + prefix, add_special_tokens=False)["input_ids"] == p + b
    # the old prefix, with the space after "action":, straddles the answer's 'Ġ{"' token
    assert not common.prefix_is_token_aligned(tok, prefix + " ", full)


def test_cli_rejects_bad_contract(tmp_path, tiny_vlm, capsys):
    rc = infer.main(["--model_name_or_path", str(tiny_vlm), "--output", str(tmp_path / "p.jsonl"),
                     "--contract", "X"])
    assert rc == 2
    assert "unknown contract 'X'" in capsys.readouterr().err
    assert not (tmp_path / "p.jsonl").exists()


def test_refuses_to_resume_a_different_run(tmp_path, tiny_vlm, backend):
    from mag_dataset.cli import UserError

    examples = _examples(2)
    out = infer.predict(_args(tmp_path, tiny_vlm, contract="A"), examples, backend)
    before = out.read_bytes()
    with pytest.raises(UserError, match=r"contract='A' \(now 'J'\)"):
        infer.predict(_args(tmp_path, tiny_vlm, contract="J"), examples, backend)
    assert out.read_bytes() == before


def test_an_unrelated_output_file_is_refused_and_left_untouched(tmp_path, tiny_vlm, backend):
    from mag_dataset.cli import UserError

    out = tmp_path / "preds.jsonl"
    out.write_bytes(b"my notes, not predictions\nsecond line without a newline")
    before = out.read_bytes()
    backend.decoded.clear()
    with pytest.raises(UserError, match=r"preds.jsonl:1: not a predictions line"):
        infer.predict(_args(tmp_path, tiny_vlm), _examples(2), backend)
    assert out.read_bytes() == before and backend.decoded == []


def test_examples_decode_images_lazily():
    calls = []
    step, image = tiny_steps(1)[0]

    def load():
        calls.append(1)
        return image

    e = common.Example(step, load)
    assert calls == [] and e.step.step_id == step.step_id
    assert e.image is image and calls == [1]


def test_vllm_backend_builds_greedy_multimodal_requests(tiny_vlm, monkeypatch):
    """vLLM is not installed here: a recording stand-in for its two classes checks the glue
    (prompt + forced prefix, one image per request, greedy sampling, outputs in order)."""
    import types

    seen = {}

    class SamplingParams:
        def __init__(self, **kw):
            seen["params"] = kw

    class LLM:
        def __init__(self, **kw):
            seen["llm"] = kw

        def generate(self, requests, params, use_tqdm=True):
            seen["requests"] = requests
            out = types.SimpleNamespace
            return [out(outputs=[out(text=f"answer {i}", token_ids=[1, 2])]) for i in range(len(requests))]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams))
    backend = common.make_backend("vllm", str(tiny_vlm), max_new_tokens=7, seed=3, batch_size=4)
    examples = _examples(2)
    prompts = [backend.prompt(e.step, "som", "JG") for e in examples]
    decoded = backend.decode(prompts, [e.image for e in examples], ["P0", "P1"])
    assert seen["params"] == {"temperature": 0.0, "max_tokens": 7, "seed": 3, "ignore_eos": False}
    assert seen["llm"]["model"] == str(tiny_vlm) and seen["llm"]["limit_mm_per_prompt"] == {"image": 1}
    assert [r["prompt"] for r in seen["requests"]] == [prompts[0] + "P0", prompts[1] + "P1"]
    assert [r["multi_modal_data"]["image"].size for r in seen["requests"]] == [e.image.size for e in examples]
    assert [d.text for d in decoded] == ["P0answer 0", "P1answer 1"]
    assert prompts[0].endswith("<think>\n\n</think>\n\n")
