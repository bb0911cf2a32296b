"""The OpenAI-compatible client against a real local HTTP stub (tests/stub_openai.py)."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest
from stub_openai import Malformed, Raw, Slow, Status, StubOpenAI

from mag_dataset.llm_client import (
    ChatClient,
    LLMConfigError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    LLMUnavailableError,
    fill_images,
    image_part,
    request_key,
)

MSG = [{"role": "user", "content": "hello"}]


def client(stub: StubOpenAI, **kw) -> ChatClient:
    kw.setdefault("api_key_env", None)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5)
    return ChatClient(stub.base_url, kw.pop("model", "stub-model"), **kw)


@pytest.fixture()
def stub():
    with StubOpenAI(responder=lambda body: "echo:" + json.dumps(body["messages"][-1]["content"])) as s:
        yield s


def test_complete_sends_greedy_request_and_returns_content(stub):
    c = client(stub)
    assert c.complete(MSG) == 'echo:"hello"'
    assert stub.count == 1
    body = stub.requests[0]
    assert body["model"] == "stub-model" and body["temperature"] == 0 and body["messages"] == MSG
    assert c.complete(MSG, temperature=0.7, max_tokens=5) == 'echo:"hello"'
    assert stub.requests[1]["temperature"] == 0.7 and stub.requests[1]["max_tokens"] == 5


def test_cache_rerun_makes_zero_requests(stub, tmp_path):
    c = client(stub, cache_dir=tmp_path / "cache")
    msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
    first = c.map(msgs)
    assert stub.count == 5
    # a fresh client (a rerun) over the same cache: zero requests, same answers
    c2 = client(stub, cache_dir=tmp_path / "cache")
    assert c2.map(msgs) == first
    assert stub.count == 5 and c2.stats["requests"] == 0 and c2.stats["cache_hits"] == 5
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 5
    # any change to the request is a different key
    c2.complete(msgs[0], max_tokens=3)
    assert stub.count == 6


def test_cache_key_covers_every_field():
    body = {"model": "m", "messages": MSG, "temperature": 0}
    k = request_key("http://x/v1/chat/completions", body)
    assert k == request_key("http://x/v1/chat/completions", dict(reversed(body.items())))
    assert k != request_key("http://y/v1/chat/completions", body)
    assert k != request_key("http://x/v1/chat/completions", {**body, "model": "n"})
    assert k != request_key("http://x/v1/chat/completions", {**body, "seed": 1})


def test_retries_429_and_5xx_then_succeeds(stub):
    stub.script += [Status(429, retry_after=0), Status(500), Status(503)]
    c = client(stub, max_retries=3)
    assert c.complete(MSG) == 'echo:"hello"'
    assert stub.count == 4 and c.stats["retries"] == 3


def test_retries_exhausted_raise_typed_error(stub):
    stub.script += [Status(500)] * 3
    c = client(stub, max_retries=2)
    with pytest.raises(LLMHTTPError) as e:
        c.complete(MSG)
    assert e.value.status == 500 and "gave up after 3 attempts" in str(e.value)
    assert stub.count == 3 and c.stats["failures"] == 1


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The waits openai's retry loop asks for, recorded instead of slept (behaviour, not wall time)."""
    import openai._base_client

    asked: list[float] = []
    monkeypatch.setattr(openai._base_client.time, "sleep", asked.append)
    return asked


def test_backoff_is_exponential(stub, waits):
    stub.script += [Status(500), Status(500)]
    c = client(stub, max_retries=2, backoff=0.2)
    c.complete(MSG)
    # openai's schedule: backoff * 2**k, each minus up to 25% jitter
    assert len(waits) == 2, waits
    assert 0.75 * 0.2 <= waits[0] <= 0.2 and 0.75 * 0.4 <= waits[1] <= 0.4, waits
    # backoff reaches openai's retry loop: with 0 the two retries do not wait (openai's own
    # schedule would wait 0.5 s then 1 s, minus jitter)
    waits.clear()
    stub.script += [Status(500), Status(500)]
    c = client(stub, max_retries=2, backoff=0)
    assert c.complete([{"role": "user", "content": "fast"}]) == 'echo:"fast"'
    assert waits == [0, 0] and c.stats["retries"] == 2


def test_retry_after_is_honoured_and_capped(stub, waits):
    stub.script += [Status(429, retry_after=0.4)]
    c = client(stub, max_retries=1, backoff=0.01)
    assert c.complete(MSG) == 'echo:"hello"'
    assert waits == [pytest.approx(0.4, abs=0.01)]  # the server's wait, not the 0.01 s backoff
    waits.clear()
    stub.script += [Status(503, retry_after=60)]
    c = client(stub, max_retries=1, backoff=0.01, max_backoff=0.2)
    assert c.complete([{"role": "user", "content": "again"}]) == 'echo:"again"'
    assert waits == [0.2]  # capped at max_backoff


def test_requests_go_through_the_openai_package(stub):
    """No hand-written transport: the stub sees openai's client, its retry counter, and the exact body."""
    import openai

    stub.script += [Status(502, retry_after=0.01)]
    c = client(stub, max_retries=1)
    params = {"max_tokens": 7, "top_k": 3, "chat_template_kwargs": {"enable_thinking": False}}
    assert c.complete(MSG, **params) == 'echo:"hello"'
    sent = [{k.lower(): v for k, v in h.items()} for h in stub.headers]
    assert [h["user-agent"].split("/")[0] for h in sent] == ["OpenAI", "OpenAI"]
    assert [h["x-stainless-retry-count"] for h in sent] == ["0", "1"]
    assert "authorization" not in sent[0]  # no key for a loopback endpoint without one
    # the body on the wire is the one the cache key hashes, server-specific parameters included
    assert stub.requests[0] == stub.requests[1] == c.build_body(MSG, **params)
    assert c.stats == {"requests": 2, "cache_hits": 0, "retries": 1, "timeouts": 0, "failures": 0}
    import mag_dataset.llm_client as mod

    source = open(mod.__file__, encoding="utf-8").read()
    for hand_written in ("urlopen", "http.client", "time.sleep", "_Retryable"):
        assert hand_written not in source
    stub.script += [Status(400, message="nope")]
    with pytest.raises(LLMHTTPError) as e:
        c.complete([{"role": "user", "content": "x"}])
    assert isinstance(e.value.__cause__, openai.BadRequestError)  # openai's typed error stays reachable


def test_non_retryable_status_fails_at_once(stub):
    stub.script += [Status(400, message="bad request: unknown field")]
    c = client(stub, max_retries=3)
    with pytest.raises(LLMHTTPError, match="HTTP 400: bad request: unknown field"):
        c.complete(MSG)
    assert stub.count == 1


def test_timeout_is_retried_then_typed(stub):
    stub.script += [Slow(4.0), Slow(4.0)]
    c = client(stub, timeout=1.0, max_retries=1)
    with pytest.raises(LLMTimeoutError, match="did not answer within 1s"):
        c.complete(MSG)
    assert stub.count == 2 and c.stats["timeouts"] == 2  # openai retries a timeout silently: counted here
    stub.script += [Slow(4.0)]
    assert c.complete(MSG) == 'echo:"hello"'  # one timeout, then the answer
    assert c.stats["timeouts"] == 3 and c.stats["requests"] == 4


def test_malformed_body_is_a_response_error(stub):
    stub.script += [Malformed(), Malformed(b"<html>proxy login</html>", "text/html"), Raw({"no": "choices"}),
                    Raw({"error": {"message": "model overloaded"}})]
    c = client(stub, max_retries=0, cache_dir=None)
    with pytest.raises(LLMResponseError, match="not JSON"):
        c.complete(MSG)
    with pytest.raises(LLMResponseError, match="not JSON: '<html>proxy login</html>'"):
        c.complete(MSG)
    with pytest.raises(LLMResponseError, match="no choices"):
        c.complete(MSG)
    with pytest.raises(LLMResponseError, match="model overloaded"):
        c.complete(MSG)
    # a choice whose message is null, a string, or content parts without text: typed, no AttributeError
    stub.script += [Raw({"choices": [{"message": None}]}), Raw({"choices": [{"message": "hi"}]}),
                    Raw({"choices": [{"message": {"content": [{"type": "text", "text": None}]}}]})]
    for _ in range(3):
        with pytest.raises(LLMResponseError, match="no choices"):
            c.complete(MSG)


def test_failures_are_not_cached(stub, tmp_path):
    stub.script += [Malformed()]
    c = client(stub, max_retries=0, cache_dir=tmp_path)
    with pytest.raises(LLMResponseError):
        c.complete(MSG)
    assert c.complete(MSG) == 'echo:"hello"'
    assert c.complete(MSG) == 'echo:"hello"'
    assert stub.count == 2


def test_api_key_sent_and_missing_key_is_config_error(monkeypatch):
    with StubOpenAI(require_key="sk-test") as stub:
        monkeypatch.setenv("MAG_TEST_KEY", "sk-test")
        c = ChatClient(stub.base_url, "m", api_key_env="MAG_TEST_KEY", backoff=0.01)
        assert c.complete(MSG) == "ok"
        sent = {k.lower(): v for k, v in stub.headers[0].items()}  # HTTP header names are case-insensitive
        assert sent["authorization"] == "Bearer sk-test"
        monkeypatch.setenv("MAG_TEST_KEY", "wrong")
        with pytest.raises(LLMHTTPError, match=r"HTTP 401.*\$MAG_TEST_KEY"):
            c.complete([{"role": "user", "content": "other"}])
    monkeypatch.delenv("MAG_TEST_KEY")
    remote = ChatClient("https://api.example.invalid/v1", "m", api_key_env="MAG_TEST_KEY")
    with pytest.raises(LLMConfigError, match="MAG_TEST_KEY is not set"):
        remote.complete(MSG)
    assert remote.stats["requests"] == 0


@pytest.mark.parametrize("url", ["", "127.0.0.1:8000/v1", "ftp://host/v1", "http:///v1", "not a url"])
def test_bad_base_url_is_config_error(url):
    with pytest.raises(LLMConfigError, match="base_url"):
        ChatClient(url, "m")


def test_wrong_path_is_explained(stub):
    c = ChatClient(stub.base_url.removesuffix("/v1"), "m", api_key_env=None)
    with pytest.raises(LLMHTTPError, match="check base_url"):
        c.complete(MSG)


def test_unreachable_endpoint_is_typed():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = ChatClient(f"http://127.0.0.1:{port}/v1", "m", api_key_env=None, max_retries=1, backoff=0.01)
    with pytest.raises(LLMUnavailableError, match="cannot reach"):
        c.complete(MSG)
    assert c.stats["requests"] == 2


def test_bad_messages_are_config_errors(stub):
    c = client(stub)
    for bad in ([], "hello", [{"content": "x"}]):
        with pytest.raises(LLMConfigError):
            c.complete(bad)
    with pytest.raises(LLMConfigError):
        c.complete(MSG, model="other")
    assert stub.count == 0


def test_map_bounds_concurrency_and_keeps_order():
    live = {"now": 0, "max": 0}
    lock = threading.Lock()

    def responder(body):
        with lock:
            live["now"] += 1
            live["max"] = max(live["max"], live["now"])
        time.sleep(0.1)
        with lock:
            live["now"] -= 1
        return body["messages"][0]["content"].upper()

    with StubOpenAI(responder=responder) as stub:
        c = client(stub, concurrency=3)
        reqs = [[{"role": "user", "content": f"q{i}"}] for i in range(9)]
        reqs.append({"messages": [{"role": "user", "content": "last"}], "max_tokens": 4})
        out = c.map(reqs)
    assert out == [f"Q{i}" for i in range(9)] + ["LAST"]
    assert stub.count == 10
    assert live["max"] == 3


def test_map_return_exceptions(stub):
    stub.script += [Status(400)]
    c = client(stub, concurrency=1, max_retries=0)
    out = c.map([MSG, [{"role": "user", "content": "b"}]], return_exceptions=True)
    assert isinstance(out[0], LLMHTTPError) and out[1] == 'echo:"b"'


def test_image_part_and_fill_images(stub):
    png = b"\x89PNG\r\n\x1a\nfake"
    part = image_part(png)
    assert part["type"] == "image_url"
    assert base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) == png
    hf = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "what?"}]},
    ]
    oa = fill_images(hf, [png])
    assert oa[1]["content"][0] == part and hf[1]["content"][0] == {"type": "image"}
    with pytest.raises(LLMConfigError):
        fill_images(hf, [])
    with pytest.raises(LLMConfigError):
        fill_images(hf, [png, png])
    c = client(stub)
    c.complete(oa)
    assert stub.requests[0]["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_one_cache_directory_rule(monkeypatch, tmp_path):
    import warnings
    from pathlib import Path

    from mag_dataset import cache, dataset
    from mag_dataset.harness import audit

    for var in ("MAG_CACHE_DIR", "MAG_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "home" / ".cache" / "mag_dataset"
    # one function: the built sample and the LLM answers share a root, the answers in llm/
    assert dataset.default_cache_dir is cache.default_cache_dir and cache.CACHE_ENV == "MAG_CACHE_DIR"
    assert cache.default_cache_dir() == home and cache.llm_cache_dir() == audit.default_cache_dir() == home / "llm"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.llm_cache_dir() == tmp_path / "xdg" / "mag_dataset" / "llm"
    monkeypatch.setenv("MAG_CACHE", str(tmp_path / "old"))  # the audit's former variable: still honoured, with a warning
    with pytest.warns(DeprecationWarning, match="MAG_CACHE is deprecated: set MAG_CACHE_DIR"):
        assert cache.llm_cache_dir() == tmp_path / "old" / "llm"
    monkeypatch.setenv("MAG_CACHE_DIR", str(tmp_path / "new"))  # the one variable wins, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.default_cache_dir() == Path(tmp_path / "new") and audit.default_cache_dir() == tmp_path / "new" / "llm"
