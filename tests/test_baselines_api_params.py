"""baselines.api_zero_shot: reasoning-model parameters and extra request parameters, against the
local chat-completions stub (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import api_zero_shot, common  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402
from stub_openai import StubOpenAI  # noqa: E402


def _examples(n=2):
    return [common.Example(s, im) for s, im in tiny_steps(n)]


def test_reasoning_model_gets_max_completion_tokens_no_temperature_and_extra_params(tmp_path):
    with StubOpenAI(responder=lambda body: '{"action": {"type": "finish", "answer": "x"}}') as stub:
        args = api_zero_shot.APIArguments(
            base_url=stub.base_url, model="stub-reasoner", output=str(tmp_path / "r.jsonl"), api_key_env="",
            contract="A", cache_dir=str(tmp_path / "cache"), progress=False, max_tokens=2048, reasoning=True,
            request_params='{"reasoning_effort": "low", "top_p": 1}')
        out = api_zero_shot.run(args, _examples())
        assert stub.count == 2
        for body in stub.requests:
            assert body["max_completion_tokens"] == 2048 and "max_tokens" not in body
            assert "temperature" not in body
            assert body["reasoning_effort"] == "low" and body["top_p"] == 1 and body["seed"] == 0
    prov = json.loads(common.provenance_path(out).read_text())
    assert prov["decoding"]["temperature"] is None and prov["decoding"]["max_completion_tokens"] == 2048
    assert prov["decoding"]["reasoning_effort"] == "low" and "reasoning" in prov["decoding"]["strategy"]


def test_request_params_from_a_yaml_mapping_reach_the_request(tmp_path):
    cfg = tmp_path / "api.yaml"
    cfg.write_text("api_key_env: ''\nmax_tokens: 64\nrequest_params:\n  top_k: 5\n  stop: ['}}']\n", encoding="utf-8")
    with StubOpenAI(responder=lambda body: "{}") as stub:
        (args,) = common.parse_args([api_zero_shot.APIArguments], [
            "--config", str(cfg), "--base_url", stub.base_url, "--model", "m", "--output", str(tmp_path / "p.jsonl"),
            "--cache_dir", str(tmp_path / "c"), "--progress", "false"])
        assert args.request_params == {"top_k": 5, "stop": ["}}"]}
        api_zero_shot.run(args, _examples(1))
        body = stub.requests[0]
    assert body["top_k"] == 5 and body["stop"] == ["}}"] and body["max_tokens"] == 64 and body["temperature"] == 0


@pytest.mark.parametrize("value, message", [
    ("{oops", "request_params is not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"model": "other"}', "may not set 'model'"),
])
def test_bad_request_params_are_one_line_and_no_file(tmp_path, capsys, value, message):
    out = tmp_path / "x.jsonl"
    rc = api_zero_shot.main(["--base_url", "http://127.0.0.1:9/v1", "--model", "m", "--output", str(out),
                             "--api_key_env", "", "--request_params", value])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err
    assert not out.exists()


def test_negated_flags_say_what_they_do(capsys):
    """--no_progress hides the progress bar; its help said "show a progress bar" (HfArgumentParser's copy)."""
    from baselines import api_zero_shot, infer

    for module in (api_zero_shot, infer):
        with pytest.raises(SystemExit):
            module.main(["--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--no_progress, --no-progress don't show a progress bar" in text, module.__name__
