"""The one model-runner interface (mag_dataset.runners): generate(messages) -> str.

Real parts: a tiny random Qwen3.5-style checkpoint built locally (transformers, CPU), a
local 127.0.0.1 HTTP server speaking the OpenAI protocol (tests/stub_openai.py), the
heuristic baseline; vLLM, a GPU-only extra, through a stand-in module that records what the
runner hands the engine. Structure is asserted, not quality: every runner answers a
string, the same messages give the same answer, and the callers (live evaluation's agents,
the batch backends, the API baseline) reach the model through the runner.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import api_zero_shot, common  # noqa: E402
from mag_dataset.actions import Contract, View  # noqa: E402
from mag_dataset.harness.agents import AgentSpec, HeuristicAgent, OpenAIAgent  # noqa: E402
from mag_dataset.heuristic import heuristic_output  # noqa: E402
from mag_dataset.runners import (  # noqa: E402
    RUNNERS,
    HeuristicRunner,
    HFRunner,
    OpenAIRunner,
    Runner,
    VLLMRunner,
    chat_text,
    png_bytes,
    step_messages,
)
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402
from stub_openai import StubOpenAI  # noqa: E402


@pytest.fixture(scope="module")
def pairs():
    out = tiny_steps(3)
    assert len(out) == 3
    return out


@pytest.fixture(scope="module")
def hf(tiny_vlm):
    return HFRunner(str(tiny_vlm), device="cpu", max_new_tokens=12)


def test_the_table_names_four_runners_and_each_is_a_runner(hf, tiny_vlm, monkeypatch):
    assert set(RUNNERS) == {"heuristic", "transformers", "vllm", "openai"}
    assert common.BACKENDS == {"transformers": HFRunner, "vllm": VLLMRunner}  # the baselines' backends are runners
    with StubOpenAI(responder=lambda body: "x") as stub:
        api = OpenAIRunner(stub.base_url, "stub", api_key_env=None)
        assert isinstance(api, Runner)
        api.close()
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm({}))
    for runner in (hf, HeuristicRunner(), VLLMRunner(str(tiny_vlm), max_new_tokens=4)):
        assert isinstance(runner, Runner), runner


def test_hf_runner_on_a_tiny_random_model(hf, pairs):
    step, image = pairs[0]
    messages = step_messages(step, "som", "J", png_bytes(image))
    out = hf.generate(messages)
    assert isinstance(out, str) and out == hf.generate(messages)  # greedy: the same answer again
    # a PIL image in the image part reads the same as its PNG bytes
    assert hf.generate(step_messages(step, "som", "J", image)) == out
    # the batch path of the same runner (the inference baseline's) gives the same greedy answer
    assert hf.decode([hf.prompt(step, "som", "J")], [image])[0].text == out


def test_live_agents_answer_through_their_runner(tiny_vlm, pairs):
    from mag_dataset.harness.agents import HFAgent

    step, image = pairs[1]
    png = png_bytes(image)
    agent = HFAgent(AgentSpec.parse(f"hf:{tiny_vlm}", device="cpu", max_new_tokens=12))
    try:
        assert isinstance(agent.runner, HFRunner)
        assert agent.act(step, View.SOM, Contract.J, png) == agent.runner.generate(step_messages(step, "som", "J", png))
    finally:
        agent.close()
    heur = HeuristicAgent(AgentSpec.parse("heuristic"))
    assert isinstance(heur.runner, HeuristicRunner)
    assert heur.act(step, View.SOM, Contract.JG, png) == heuristic_output(step, "som", "JG")


def test_heuristic_runner_reads_the_step_not_the_prompt(pairs):
    runner = HeuristicRunner()
    for step, _ in pairs:
        for contract in Contract:
            assert runner.generate(step_messages(step, "som", contract)) == heuristic_output(step, "som", contract)
    with pytest.raises(TypeError, match="reads the step"):
        runner.generate([{"role": "user", "content": "click the button"}])


def test_openai_runner_against_a_local_server(pairs):
    step, image = pairs[0]
    with StubOpenAI(responder=lambda body: f"answer to {body['model']}") as stub:
        runner = OpenAIRunner(stub.base_url, "stub-model", params={"max_tokens": 64, "seed": 5}, api_key_env=None)
        try:
            assert runner.generate(step_messages(step, "coord", "A", image)) == "answer to stub-model"
            answers = runner.generate_many([step_messages(s, "som", "J", im) for s, im in pairs])
        finally:
            runner.close()
        assert answers == ["answer to stub-model"] * 3 and stub.count == 4
        body = stub.requests[0]
        assert body["model"] == "stub-model" and body["max_tokens"] == 64 and body["seed"] == 5
        parts = body["messages"][-1]["content"]
        url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        assert url.startswith("data:image/png;base64,")
        assert not any("image" in p for p in parts if p["type"] == "text")


def test_openai_agent_and_the_api_baseline_send_what_they_sent_before(pairs, tmp_path):
    """The runner builds byte for byte the requests the agent and the API baseline built
    themselves (so their on-disk caches still answer)."""
    from mag_dataset.llm_client import fill_images
    from mag_dataset.prompts import build_messages

    step, image = pairs[2]
    png = png_bytes(image)
    with StubOpenAI(responder=lambda body: "ok") as stub:
        agent = OpenAIAgent(AgentSpec.parse(f"openai:stub@{stub.base_url}", api_key_env="", max_new_tokens=33))
        try:
            assert agent.act(step, View.SOM, Contract.JG, png) == "ok"
        finally:
            agent.close()
        body = stub.requests[0]
    old = fill_images(build_messages(step, "som", "JG"), [png])
    assert body["messages"] == json.loads(json.dumps(old)) and body["max_tokens"] == 33
    args = api_zero_shot.APIArguments(base_url="http://127.0.0.1:9/v1", model="m", output=str(tmp_path / "p.jsonl"),
                                      api_key_env="", view="coord", contract="J", coord_space="norm1000")
    example = common.Example(step, image)
    old = fill_images(build_messages(step, "coord", "J", coord_space="norm1000"), [png])
    old = [{**m, "content": "".join(p["text"] for p in m["content"])}
           if isinstance(m["content"], list) and all(p.get("type") == "text" for p in m["content"]) else m for m in old]
    assert api_zero_shot.request_for(example, "coord", "J", args) == {"messages": old,
                                                                        **api_zero_shot.decoding_params(args)}


def _fake_vllm(seen: dict) -> types.SimpleNamespace:
    class SamplingParams:
        def __init__(self, **kw):
            seen["params"] = kw

    class LLM:
        def __init__(self, **kw):
            seen["llm"] = kw

        def generate(self, requests, params, use_tqdm=True):
            seen.setdefault("requests", []).extend(requests)
            out = types.SimpleNamespace
            return [out(outputs=[out(text=f"answer {i}", token_ids=[1, 2])]) for i in range(len(requests))]

    return types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams)


def test_vllm_runner_hands_the_engine_the_chat_text_and_the_image(tiny_vlm, pairs, monkeypatch):
    seen: dict = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(seen))
    runner = VLLMRunner(str(tiny_vlm), max_new_tokens=9, seed=2)
    step, image = pairs[0]
    messages = step_messages(step, "som", "J", png_bytes(image))
    assert runner.generate(messages) == "answer 0"
    (req,) = seen["requests"]
    assert req["prompt"] == chat_text(runner.processor, messages) == runner.prompt(step, "som", "J")
    assert req["multi_modal_data"]["image"].size == image.size
    assert seen["params"] == {"temperature": 0.0, "max_tokens": 9, "seed": 2, "ignore_eos": False}
