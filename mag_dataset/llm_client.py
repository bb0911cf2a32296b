"""A small client for OpenAI-compatible chat-completions endpoints, on the ``openai`` package.

Used by guide drafting, the three-judge label audit (WebMRE, arXiv 2609.27353, §3), the
zero-shot API baselines and live evaluation of an endpoint agent. Requests go through the
official ``openai`` client (``openai.OpenAI(base_url=..., max_retries=..., timeout=...)``),
so they work with OpenAI, vLLM, SGLang, llama.cpp, Ollama and any other server of that
dialect, and the transport, retries (HTTP 408/409/429/5xx, timeouts and connection
errors, exponential backoff with jitter, ``Retry-After`` / ``retry-after-ms`` honoured)
and typed HTTP errors are the ``openai`` package's. This module adds what a benchmark
needs on top:

* greedy decoding by default (``temperature=0``);
* an on-disk cache keyed by a SHA-256 hash of the full request (endpoint URL, model,
  messages and every parameter), so a rerun of the same requests makes zero requests;
* bounded concurrency for batches (:meth:`ChatClient.map`);
* one readable line per failure: ``openai``'s exceptions become :class:`LLMError`
  subclasses (the original stays as ``__cause__``), and a missing API key or a malformed
  base URL is a :class:`LLMConfigError`, never a bare traceback;
* counters of HTTP attempts, retries and cache hits (:attr:`ChatClient.stats`).

Parameters other than ``model`` and ``messages`` are sent exactly as given (through
``extra_body``), so server-specific ones such as vLLM's ``top_k`` or
``chat_template_kwargs`` pass through and the request body is the one the cache key hashes.

``base_url`` follows the OpenAI convention and includes the version prefix, e.g.
``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``.

Example::

    from mag_dataset.llm_client import ChatClient, image_part

    client = ChatClient("http://127.0.0.1:8000/v1", "Qwen/Qwen3.5-9B", api_key_env=None,
                        cache_dir=".cache/llm")
    text = client.complete([{"role": "user", "content": [
        {"type": "text", "text": "What is on this screenshot?"}, image_part(png_bytes)]}])
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import os
import socket
import threading
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from mag_dataset.fileio import atomic_write

if TYPE_CHECKING:  # ``openai`` takes seconds to import: loaded by the first ChatClient
    import openai

__all__ = [
    "CACHE_FORMAT_VERSION",
    "FATAL_STATUSES",
    "ChatClient",
    "LLMConfigError",
    "LLMError",
    "LLMHTTPError",
    "LLMResponseError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "fill_images",
    "image_part",
    "request_key",
]

#: Bumped when the cache layout or key changes, so old entries are never misread.
CACHE_FORMAT_VERSION = 1

#: HTTP statuses that mean the endpoint is misconfigured (wrong key, host or model name), not
#: flaky: every later call would fail alike, so a batch stops at once.
FATAL_STATUSES = frozenset({401, 403, 404})


class LLMError(Exception):
    """Any failure of a chat-completions call. The message is one readable line."""


class LLMConfigError(LLMError):
    """The client is misconfigured (no API key, malformed base URL, bad parameters)."""


class LLMHTTPError(LLMError):
    """The server answered with an HTTP error status that retrying will not fix (or retries ran out).

    Attributes:
        status: the HTTP status code.
    """

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class LLMTimeoutError(LLMError):
    """Every attempt timed out."""


class LLMUnavailableError(LLMError):
    """The endpoint could not be reached (connection refused, DNS failure) after all retries."""


class LLMResponseError(LLMError):
    """The server answered 200 but the body is not a chat-completions response."""


def image_part(png_bytes: bytes, mime: str = "image/png", detail: str | None = None) -> dict[str, Any]:
    """An OpenAI ``image_url`` content part holding the image as a base64 data URL.

    Args:
        png_bytes: the encoded image.
        mime: its MIME type.
        detail: optional OpenAI ``detail`` hint (``low``, ``high``, ``auto``).

    Returns:
        ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``.
    """
    if not isinstance(png_bytes, (bytes, bytearray)):
        raise TypeError(f"image_part needs bytes, got {type(png_bytes).__name__}")
    url = f"data:{mime};base64," + base64.b64encode(bytes(png_bytes)).decode("ascii")
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
    if detail is not None:
        part["image_url"]["detail"] = detail
    return part


def fill_images(messages: Sequence[dict[str, Any]], images: Sequence[bytes]) -> list[dict[str, Any]]:
    """Turn transformers-style chat messages into OpenAI ones.

    :func:`mag_dataset.prompts.build_messages` marks the screenshot with a
    ``{"type": "image"}`` content part; this replaces the i-th such part with
    :func:`image_part` of ``images[i]``. Messages are copied, never modified in place.

    Raises:
        LLMConfigError: if the number of image parts and images differ.
    """
    out: list[dict[str, Any]] = []
    used = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for p in content:
                if isinstance(p, dict) and p.get("type") == "image":
                    if used >= len(images):
                        raise LLMConfigError(f"messages hold more image parts than the {len(images)} image(s) given")
                    parts.append(image_part(images[used]))
                    used += 1
                else:
                    parts.append(dict(p) if isinstance(p, dict) else p)
            m = {**m, "content": parts}
        else:
            m = dict(m)
        out.append(m)
    if used != len(images):
        raise LLMConfigError(f"messages hold {used} image part(s) but {len(images)} image(s) were given")
    return out


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def request_key(url: str, body: dict[str, Any]) -> str:
    """The cache key of a request: SHA-256 over the endpoint URL and the full JSON body."""
    h = hashlib.sha256()
    h.update(f"mag-llm-cache-v{CACHE_FORMAT_VERSION}\n{url}\n".encode())
    h.update(_canonical(body))
    return h.hexdigest()


def _is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _openai_client(base_url: str, api_key: Any, timeout: float, max_retries: int, backoff: float,
                   max_backoff: float, on_request: Any, on_timeout: Any = None) -> "openai.OpenAI":
    """An ``openai.OpenAI`` whose retry waits start at ``backoff`` seconds instead of 0.5.

    The retry loop, jitter and ``Retry-After`` handling stay ``openai``'s: only the wait it
    computes when the server sets no ``Retry-After`` is rescaled (so tests and impatient
    users can shorten it), and every wait is capped at ``max_backoff``. ``on_timeout`` is
    called for every attempt that timed out (``openai`` retries those silently).
    """
    import openai
    from openai._constants import INITIAL_RETRY_DELAY

    class OpenAI(openai.OpenAI):  # the class name is the User-Agent openai sends
        def _calculate_retry_timeout(self, remaining_retries, options, response_headers=None):  # type: ignore[no-untyped-def]
            wait = super()._calculate_retry_timeout(remaining_retries, options, response_headers)
            server = self._parse_retry_after_header(response_headers)
            if not (server is not None and 0 < server and abs(server - wait) < 1e-9):
                wait *= backoff / INITIAL_RETRY_DELAY
            return min(wait, max_backoff)

        if on_timeout is not None and hasattr(openai.OpenAI, "_send_request"):
            def _send_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                try:
                    return super()._send_request(*args, **kwargs)
                except Exception as e:
                    if "Timeout" in type(e).__name__:  # httpx's TimeoutException and its subclasses
                        on_timeout()
                    raise

    return OpenAI(
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        http_client=openai.DefaultHttpxClient(event_hooks={"request": [on_request]}),
    )


class ChatClient:
    """Client for one model behind one OpenAI-compatible endpoint.

    Args:
        base_url: endpoint root including the version prefix, e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name sent in every request.
        api_key_env: name of the environment variable holding the API key, or None for an
            endpoint without authentication. When the variable is unset, loopback
            endpoints (localhost, 127.0.0.1) are called without a key; any other host
            raises :class:`LLMConfigError` on the first request that is not cached.
            The variable is read on every request, so a rotated key is picked up.
        timeout: seconds per attempt (connect + read).
        max_retries: extra attempts after the first on 408, 409, 429, 5xx, timeouts and
            connection errors (0 = no retry); passed to ``openai.OpenAI``.
        cache_dir: folder of the response cache, or None for no cache.
        concurrency: the most requests in flight at once from this client (all
            :meth:`map` calls and threads together).
        backoff: seconds before the first retry when the server sends no ``Retry-After``
            (``openai``'s schedule: doubling, minus up to 25% jitter; its own start is 0.5).
        max_backoff: cap on one wait, also applied to ``Retry-After``.
        default_params: parameters merged into every request (``temperature`` defaults to 0).

    Attributes:
        stats: counters ``requests`` (HTTP attempts sent), ``cache_hits``, ``retries``,
            ``timeouts`` (attempts that timed out, retried or not), ``failures`` (calls
            that raised); read them to check that a rerun made zero requests.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 3,
        cache_dir: str | os.PathLike | None = None,
        concurrency: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        default_params: dict[str, Any] | None = None,
    ):
        if not isinstance(base_url, str) or not base_url.strip():
            raise LLMConfigError("base_url is empty; give the endpoint root, e.g. http://127.0.0.1:8000/v1")
        parsed = urllib.parse.urlparse(base_url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise LLMConfigError(
                f"base_url {base_url!r} is not an http(s) URL; give the endpoint root, e.g. http://127.0.0.1:8000/v1"
            )
        if not isinstance(model, str) or not model.strip():
            raise LLMConfigError("model name is empty")
        if timeout <= 0:
            raise LLMConfigError(f"timeout must be positive, got {timeout}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise LLMConfigError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if concurrency < 1:
            raise LLMConfigError(f"concurrency must be >= 1, got {concurrency}")
        if backoff < 0 or max_backoff < 0:
            raise LLMConfigError(f"backoff and max_backoff must be >= 0, got {backoff} and {max_backoff}")
        self.base_url = base_url.strip().rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.host = parsed.hostname
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.concurrency = int(concurrency)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.default_params = {"temperature": 0, **(default_params or {})}
        self.stats = {"requests": 0, "cache_hits": 0, "retries": 0, "timeouts": 0, "failures": 0}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._attempts = threading.local()  # HTTP attempts of the call running in this thread
        self._openai: openai.OpenAI | None = None

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r}, {self.model!r})"

    def close(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        with self._lock:
            client, self._openai = self._openai, None
        if client is not None:
            client.close()

    # -- request building -------------------------------------------------------------

    def build_body(self, messages: Sequence[dict[str, Any]], **params: Any) -> dict[str, Any]:
        """The JSON body sent for ``messages`` and ``params`` (also what the cache key hashes)."""
        if not isinstance(messages, (list, tuple)) or not messages:
            raise LLMConfigError("messages must be a non-empty list of {'role', 'content'} objects")
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise LLMConfigError(f"messages[{i}] must be an object with 'role' and 'content'")
        if "model" in params or "messages" in params:
            raise LLMConfigError("model and messages are set by the client, not passed as parameters")
        body = {"model": self.model, "messages": list(messages), **self.default_params, **params}
        if body.get("stream"):
            raise LLMConfigError("streaming responses are not supported")
        return body

    def _api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if _is_loopback(self.host):
            return None
        raise LLMConfigError(
            f"environment variable {self.api_key_env} is not set: export the API key for {self.base_url} "
            f"(or configure api_key_env=None for an endpoint without authentication)"
        )

    def preflight(self, connect_timeout: float = 5.0) -> None:
        """Check, without sending a request, that a call could go out.

        The API key must be set (see ``api_key_env``) and the endpoint's host must accept a
        TCP connection (unless the request would go through an ``https_proxy`` /
        ``http_proxy``); both are checked in well under a second, so a batch stops before
        its first request instead of after retries.

        Raises:
            LLMConfigError: the API key is missing.
            LLMUnavailableError: the endpoint refuses connections or its host is unknown.
        """
        self._api_key()
        parsed = urllib.parse.urlparse(self.base_url)
        try:
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
        except ValueError:
            raise LLMConfigError(f"base_url {self.base_url!r} has an invalid port") from None
        if urllib.request.getproxies().get(parsed.scheme) and not urllib.request.proxy_bypass(self.host):
            return  # requests go through a proxy: the host itself may be unreachable from here
        try:
            with socket.create_connection((self.host, port), timeout=min(connect_timeout, self.timeout)):
                pass
        except OSError as e:
            reason = e.strerror or type(e).__name__
            raise LLMUnavailableError(f"cannot reach {self.base_url}: {reason}") from None

    # -- cache ------------------------------------------------------------------------

    def _cache_path(self, key: str) -> Path | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / key[:2] / f"{key}.json"

    def cached(self, messages: Sequence[dict[str, Any]], **params: Any) -> str | None:
        """The cached answer for this request, or None (never sends a request)."""
        body = self.build_body(messages, **params)
        return self._read_cache(request_key(self.url, body))

    def _read_cache(self, key: str) -> str | None:
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        try:
            d = json.loads(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None  # a torn or foreign file is a miss, and is overwritten on success
        if not isinstance(d, dict) or d.get("cache_format") != CACHE_FORMAT_VERSION or not isinstance(d.get("content"), str):
            return None
        return d["content"]

    def _write_cache(self, key: str, content: str, finish_reason: Any, usage: Any) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "cache_format": CACHE_FORMAT_VERSION,
            "url": self.url,
            "model": self.model,
            "content": content,
            "finish_reason": finish_reason,
            "usage": usage,
        }
        atomic_write(path, json.dumps(entry, ensure_ascii=False, indent=1))

    # -- calls ------------------------------------------------------------------------

    def complete(self, messages: Sequence[dict[str, Any]], **params: Any) -> str:
        """Send one chat request and return the assistant message text.

        Args:
            messages: OpenAI chat messages; images as :func:`image_part` content parts.
            **params: request parameters (``max_tokens``, ``temperature``, ``seed``,
                ``response_format``...), merged over ``default_params``.

        Returns:
            The content of the first choice (cached answers are returned without a request).

        Raises:
            LLMConfigError: bad messages/parameters, or a missing API key.
            LLMHTTPError: a non-retryable HTTP status, or a retryable one that persisted.
            LLMTimeoutError: every attempt timed out.
            LLMUnavailableError: the endpoint could not be reached.
            LLMResponseError: the body is not a chat-completions response.
        """
        body = self.build_body(messages, **params)
        key = request_key(self.url, body)
        hit = self._read_cache(key)
        if hit is not None:
            with self._lock:
                self.stats["cache_hits"] += 1
            return hit
        try:
            content, finish_reason, usage = self._send(body)
        except LLMError:
            with self._lock:
                self.stats["failures"] += 1
            raise
        self._write_cache(key, content, finish_reason, usage)
        return content

    def map(
        self,
        requests: Iterable[Sequence[dict[str, Any]] | dict[str, Any]],
        return_exceptions: bool = False,
    ) -> list[Any]:
        """Run many requests with at most ``concurrency`` in flight; results keep input order.

        Args:
            requests: each either a message list, or a dict ``{"messages": [...], **params}``.
            return_exceptions: put an :class:`LLMError` in the result list for a failed
                request instead of raising the first failure.

        Returns:
            The answer texts (or :class:`LLMError` instances when ``return_exceptions``).
        """
        items = list(requests)

        def one(item: Any) -> Any:
            if isinstance(item, dict):
                if "messages" not in item:
                    raise LLMConfigError("a request dict needs a 'messages' key")
                params = {k: v for k, v in item.items() if k != "messages"}
                call = lambda: self.complete(item["messages"], **params)  # noqa: E731
            else:
                call = lambda: self.complete(item)  # noqa: E731
            if not return_exceptions:
                return call()
            try:
                return call()
            except LLMError as e:
                return e

        if len(items) <= 1 or self.concurrency == 1:
            return [one(it) for it in items]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items)), thread_name_prefix="mag-llm") as pool:
            return list(pool.map(one, items))

    # -- the openai client ------------------------------------------------------------------

    def _client(self) -> "openai.OpenAI":
        with self._lock:
            if self._openai is None:
                self._openai = _openai_client(
                    self.base_url, self._bearer, self.timeout, self.max_retries, self.backoff,
                    self.max_backoff, self._on_request, self._on_timeout,
                )
            return self._openai

    def _bearer(self) -> str:
        # openai asks for the key before every attempt; "" goes with an omitted Authorization header
        return self._api_key() or ""

    def _on_request(self, request: Any) -> None:
        self._attempts.n = getattr(self._attempts, "n", 0) + 1
        with self._lock:
            self.stats["requests"] += 1
            if self._attempts.n > 1:
                self.stats["retries"] += 1

    def _on_timeout(self) -> None:
        with self._lock:
            self.stats["timeouts"] += 1

    def _send(self, body: dict[str, Any]) -> tuple[str, Any, Any]:
        import openai

        key = self._api_key()  # a missing key fails here, before anything is sent
        rest = {k: v for k, v in body.items() if k not in ("model", "messages")}
        headers = None if key else {"Authorization": openai.omit}
        client = self._client()
        self._attempts.n = 0
        with self._slots:
            try:
                completion = client.chat.completions.create(
                    model=body["model"], messages=body["messages"], extra_body=rest, extra_headers=headers
                )
            except openai.APIStatusError as e:
                raise self._status_error(e) from e
            except openai.APITimeoutError as e:
                raise LLMTimeoutError(self._gave_up(f"{self.url} did not answer within {self.timeout:g}s")) from e
            except openai.APIConnectionError as e:
                reason = _short(str(e.__cause__ or e))
                raise LLMUnavailableError(self._gave_up(f"cannot reach {self.url}: {reason}")) from e
            except (openai.APIResponseValidationError, ValueError) as e:  # ValueError: a body that is not JSON
                raise LLMResponseError(f"{self.url} returned a body that is not JSON: {_short(str(e), 120)}") from e
        return self._content(completion)

    def _gave_up(self, message: str) -> str:
        n = getattr(self._attempts, "n", 0)
        return f"{message} (gave up after {n} attempts)" if n > 1 else message

    def _status_error(self, e: "openai.APIStatusError") -> LLMHTTPError:
        status = e.status_code
        detail = _short(e.body if e.body is not None else e.message)
        msg = f"{self.url} answered HTTP {status}" + (f": {detail}" if detail else "")
        if status == 401:
            msg += f" (check the API key in ${self.api_key_env})" if self.api_key_env else " (the endpoint wants an API key)"
        elif status == 404:
            msg += " (check base_url: it should end with the version prefix, e.g. /v1, and the model name)"
        return LLMHTTPError(self._gave_up(msg), status)

    def _content(self, completion: Any) -> tuple[str, Any, Any]:
        if isinstance(completion, (str, bytes)):  # openai hands back a body whose content type is not JSON as is
            raise LLMResponseError(f"{self.url} returned a body that is not JSON: {_short(repr(completion), 120)}")
        choices = getattr(completion, "choices", None)
        if not choices:
            error = (getattr(completion, "model_extra", None) or {}).get("error")
            if error is not None:
                raise LLMResponseError(f"{self.url} returned an error: {_short(error)}")
            raise LLMResponseError(f"{self.url} returned no choices[0].message.content")
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if isinstance(content, list):  # some servers return content parts
            texts = [p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content]
            content = "".join(texts) if all(isinstance(t, str) for t in texts) else None
        if not isinstance(content, str):
            raise LLMResponseError(f"{self.url} returned no choices[0].message.content")
        usage = getattr(completion, "usage", None)
        if usage is not None and hasattr(usage, "model_dump"):
            usage = usage.model_dump(exclude_none=True)
        return content, getattr(choice, "finish_reason", None), usage


def _short(obj: Any, n: int = 200) -> str:
    if isinstance(obj, dict) and "message" in obj:
        obj = obj["message"]
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, default=str)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."
