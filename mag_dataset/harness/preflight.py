"""Checks made before the first request of a batch of LLM calls, and the failure guard after it.

``mag audit`` and ``mag draft-guides`` send one request per step to paid or slow endpoints.
A misconfiguration found after hundreds of requests, or an endpoint that is down turning
every answer into "no answer", must not cost money, time or the labels already made. So,
before the first request:

* every screenshot that will be sent is decoded (:func:`check_images`): a truncated or
  missing PNG stops the run with its path;
* every endpoint's API key is looked up and its host must accept a TCP connection
  (:meth:`mag_dataset.llm_client.ChatClient.preflight`);
* the first request that is not cached goes out alone (:func:`probe`): when it fails after
  its retries (HTTP 5xx, garbage, timeout), the endpoint is down and nothing else is sent.

After the run, :func:`check_failures` stops a run in which an endpoint failed more than
:data:`MAX_FAILED_SHARE` of its calls. Answers already received are cached, so a rerun pays
only for the failed calls.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mag_dataset.llm_client import FATAL_STATUSES, ChatClient, LLMConfigError, LLMError, LLMHTTPError

#: An endpoint whose calls failed (no answer after retries) on more than this share of the
#: steps stops the run, which then writes nothing.
MAX_FAILED_SHARE = 0.2


class PreflightError(ValueError):
    """A check before the first request failed; nothing was sent and nothing was written."""


class EndpointFailedError(ValueError):
    """An endpoint failed too many calls; nothing was written."""


def describe(e: BaseException) -> str:
    """One line for a failed call, with the HTTP status when there is one."""
    text = str(e)
    if isinstance(e, LLMHTTPError) and f"HTTP {e.status}" not in text:
        text = f"HTTP {e.status}: {text}"
    return text


def raise_if_fatal(answer: Any, who: str | None = None) -> None:
    """Raise :class:`LLMConfigError` when ``answer`` is a misconfiguration (missing key, HTTP
    401/403/404), prefixed with ``who``; anything else returns."""
    if isinstance(answer, LLMConfigError) or (isinstance(answer, LLMHTTPError) and answer.status in FATAL_STATUSES):
        raise LLMConfigError(f"{who}: {answer}" if who else str(answer))


def check_images(paths: Iterable[Path]) -> int:
    """Decode every image that will be sent.

    Returns:
        The number of images checked.

    Raises:
        PreflightError: naming the first unreadable image and how many are unreadable.
    """
    from PIL import Image, UnidentifiedImageError

    bad: list[str] = []
    n = 0
    for path in paths:
        n += 1
        try:
            data = Path(path).read_bytes()
            with Image.open(io.BytesIO(data)) as im:
                im.verify()  # chunk checksums; a truncated file fails here
        except FileNotFoundError:
            bad.append(f"{path}: missing")
        except (UnidentifiedImageError, OSError, SyntaxError) as e:
            bad.append(f"{path}: not a readable image ({e})")
    if bad:
        raise PreflightError(f"{len(bad)} of {n} screenshots cannot be sent, e.g. {bad[0]}; nothing was sent")
    return n


def check_endpoints(clients: Sequence[tuple[str, ChatClient]]) -> None:
    """API key and TCP reachability of every endpoint, before any request.

    Raises:
        LLMConfigError: a missing API key (naming the endpoint).
        PreflightError: an endpoint that cannot be reached.
    """
    for name, client in clients:
        try:
            client.preflight()
        except LLMConfigError as e:
            raise LLMConfigError(f"{name}: {e}; nothing was sent") from None
        except LLMError as e:
            raise PreflightError(f"{name}: {e}; nothing was sent") from None


def probe(client: ChatClient, messages: Iterable[Callable[[], list[dict[str, Any]]]]) -> tuple[int, Any] | None:
    """Send the first request that is not cached, alone.

    Args:
        client: the endpoint.
        messages: thunks building each request's messages, in batch order (built lazily,
            so a fully cached batch reads each image once here).

    Returns:
        ``(index, answer or LLMError)`` of the probed request, or None when every request
        is cached.
    """
    for i, make in enumerate(messages):
        msgs = make()
        if client.cached(msgs) is not None:
            continue
        try:
            return i, client.complete(msgs)
        except LLMError as e:
            return i, e
    return None


def check_failures(name: str, failures: Sequence[BaseException], total: int, what: str = "steps") -> str | None:
    """The problem line when ``failures`` exceed :data:`MAX_FAILED_SHARE` of ``total``, else None."""
    if total and len(failures) > MAX_FAILED_SHARE * total:
        return f"{name}: {len(failures)} of {total} calls failed (first: {describe(failures[0])})"
    return None
