"""A scriptable OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

A real threaded ``http.server`` speaking ``POST /v1/chat/completions``: the client under
test talks real HTTP to it. Each request is answered by the next item of ``script`` (a
queue) or, when the queue is empty, by ``responder(body)``. An answer is either a plain
string (the assistant message content) or one of the behaviours below::

    from stub_openai import StubOpenAI, Status, Slow, Malformed  # pytest puts tests/ on sys.path

    with StubOpenAI(responder=lambda body: '{"verdict": "confirm"}') as stub:
        stub.script += [Status(429), Status(500), Slow(2.0), Malformed()]
        client = ChatClient(stub.base_url, "stub", api_key_env=None, timeout=0.5)
        ...
        assert stub.count == 5
        assert stub.requests[0]["model"] == "stub"

Behaviours:
    Reply(text): 200 with ``choices[0].message.content == text`` (same as a plain string).
    Status(code, retry_after=None, message=...): that HTTP status with an OpenAI error body.
    Slow(seconds, then=...): sleep before answering ``then`` (a timeout for the client).
    Malformed(raw=..., content_type=...): 200 with a body that is not JSON (e.g. a proxy's HTML page).
    Raw(obj): 200 with ``obj`` as the JSON body (e.g. a response without choices).

``require_key`` makes the server answer 401 unless ``Authorization: Bearer <key>`` matches.
Engineers E and F2 may import this helper for their endpoint tests.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    text: str


@dataclass
class Status:
    code: int
    retry_after: float | None = None
    message: str = "stub error"


@dataclass
class Slow:
    seconds: float
    then: Any = "slow answer"


@dataclass
class Malformed:
    raw: bytes = b'{"choices": [ this is not json'
    content_type: str = "application/json"


@dataclass
class Raw:
    obj: Any = field(default_factory=dict)


Responder = Callable[[dict[str, Any]], Any]


def completion(text: str, model: str = "stub") -> dict[str, Any]:
    """A minimal chat-completions response body."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class StubOpenAI:
    """The stub server. Start with ``start()`` or a ``with`` block; ``base_url`` ends in ``/v1``.

    Attributes:
        script: answers consumed first, in order.
        responder: answers the rest (default: the text ``"ok"``).
        requests: JSON bodies received, in arrival order.
        headers: request headers received, in the same order.
    """

    def __init__(self, responder: Responder | None = None, script: list[Any] | None = None, require_key: str | None = None):
        self.responder: Responder = responder or (lambda body: "ok")
        self.script: list[Any] = list(script or [])
        self.require_key = require_key
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def count(self) -> int:
        """Number of chat-completions requests received."""
        with self._lock:
            return len(self.requests)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the stub first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next(self, body: dict[str, Any]) -> Any:
        with self._lock:
            self.requests.append(body)
            if self.script:
                return self.script.pop(0)
        return self.responder(body)

    def start(self) -> "StubOpenAI":
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, code: int, payload: bytes, extra: dict[str, str] | None = None,
                      content_type: str = "application/json") -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in (extra or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
                    return
                if stub.require_key is not None and self.headers.get("Authorization") != f"Bearer {stub.require_key}":
                    self._send(401, json.dumps({"error": {"message": "invalid api key"}}).encode())
                    return
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    self._send(400, json.dumps({"error": {"message": "request body is not JSON"}}).encode())
                    return
                with stub._lock:
                    stub.headers.append(dict(self.headers.items()))
                answer = stub._next(body)
                self._answer(answer, body)

            def _answer(self, answer: Any, body: dict[str, Any]) -> None:
                if isinstance(answer, Slow):
                    time.sleep(answer.seconds)
                    answer = answer.then
                if isinstance(answer, str):
                    answer = Reply(answer)
                if isinstance(answer, Reply):
                    self._send(200, json.dumps(completion(answer.text, body.get("model", "stub"))).encode())
                elif isinstance(answer, Status):
                    extra = {"Retry-After": f"{answer.retry_after:g}"} if answer.retry_after is not None else None
                    payload = json.dumps({"error": {"message": answer.message, "code": answer.code}}).encode()
                    self._send(answer.code, payload, extra)
                elif isinstance(answer, Malformed):
                    self._send(200, answer.raw, content_type=answer.content_type)
                elif isinstance(answer, Raw):
                    self._send(200, json.dumps(answer.obj).encode())
                else:
                    raise TypeError(f"stub cannot answer with {answer!r}")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="stub-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "StubOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
