"""baselines.api_zero_shot against a local chat-completions stub on 127.0.0.1 (real HTTP)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import api_zero_shot, common  # noqa: E402
from mag_dataset.prompts import render_target, user_text  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402
from stub_openai import Status, StubOpenAI  # noqa: E402


def _examples(view="som"):
    return [common.Example(s, im) for s, im in tiny_steps(4, view=view)]


def _gold_responder(examples, view, contract):
    """Answer each request with the gold answer of the step whose prompt it carries."""
    by_text = {user_text(e.step, view): render_target(e.step, view, contract) for e in examples}

    def respond(body):
        user = body["messages"][-1]["content"]
        text = next(p["text"] for p in user if p["type"] == "text")
        return by_text[text]

    return respond


def _args(stub, tmp_path, **kw):
    base = dict(base_url=stub.base_url, model="stub-frontier", output=str(tmp_path / "api.jsonl"),
                api_key_env="", view="som", contract="JG", cache_dir=str(tmp_path / "cache"),
                backoff=0.01, concurrency=2, chunk_size=3, progress=False)
    base.update(kw)
    return api_zero_shot.APIArguments(**base)


def test_429_then_success_and_cached_rerun_makes_zero_requests(tmp_path, capsys):
    from mag_dataset.parsing import parse_output
    from mag_dataset.predictions import read_predictions

    examples = _examples()
    with StubOpenAI(responder=_gold_responder(examples, "som", "JG"), script=[Status(429)]) as stub:
        out = api_zero_shot.run(_args(stub, tmp_path), examples)
        assert stub.count == 5, "4 steps + one retried 429"
        body = stub.requests[-1]
        assert body["model"] == "stub-frontier" and body["temperature"] == 0 and body["max_tokens"] == 512
        assert isinstance(body["messages"][0]["content"], str) and body["messages"][0]["role"] == "system"
        image = next(p for p in body["messages"][1]["content"] if p["type"] == "image_url")
        url = image["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
        first = out.read_bytes()
        recs = [json.loads(x) for x in first.decode().splitlines()]
        assert [r["step_id"] for r in recs] == [e.step.step_id for e in examples]
        assert all(parse_output(r["output"], "som", "JG").ok for r in recs)
        assert len(list(read_predictions(out, [e.step.step_id for e in examples]))) == 4
        prov = json.loads(common.provenance_path(out).read_text())
        assert prov["model"] == "stub-frontier" and prov["decoding"]["temperature"] == 0
        assert prov["contract"] == "JG" and prov["steps"] == 4

        out.unlink()
        api_zero_shot.run(_args(stub, tmp_path), examples)
        assert stub.count == 5, "the rerun is answered from the cache"
        assert out.read_bytes() == first
    assert "cache hits: 4" in capsys.readouterr().err


def test_persistent_failure_is_one_clear_error_and_no_file(tmp_path):
    from mag_dataset.cli import UserError

    with StubOpenAI(responder=lambda body: Status(503)) as stub:
        with pytest.raises(UserError, match=r"failed after retries .*rerun to resume"):
            api_zero_shot.run(_args(stub, tmp_path, max_retries=1), _examples())
    assert not (tmp_path / "api.jsonl").exists()


def test_missing_api_key_for_remote_endpoint_is_a_user_error(tmp_path, monkeypatch):
    monkeypatch.delenv("MAG_TEST_NO_SUCH_KEY", raising=False)
    args = api_zero_shot.APIArguments(base_url="https://api.example.invalid/v1", model="m",
                                      output=str(tmp_path / "x.jsonl"), api_key_env="MAG_TEST_NO_SUCH_KEY",
                                      cache_dir="", max_retries=0, progress=False)
    from mag_dataset.cli import UserError

    with pytest.raises(UserError, match="MAG_TEST_NO_SUCH_KEY"):
        api_zero_shot.run(args, _examples()[:1])
    assert not Path(args.output).exists()


def test_main_exit_status_on_bad_view(tmp_path, capsys):
    rc = api_zero_shot.main(["--base_url", "http://127.0.0.1:9/v1", "--model", "m", "--output",
                             str(tmp_path / "x.jsonl"), "--view", "pixels"])
    assert rc == 2 and "unknown view 'pixels'" in capsys.readouterr().err
