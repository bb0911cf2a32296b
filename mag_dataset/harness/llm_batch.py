"""One batch of LLM requests, one request per step, to one or more endpoints: the request
helper shared by guide drafting (:mod:`mag_dataset.harness.annotate`) and the label audit
(:mod:`mag_dataset.harness.audit`).

Holds the shape of a Set-of-Mark request (:func:`som_messages`) and the order in which a
batch is sent (:func:`ask_batch`): every endpoint's first uncached request alone
(:func:`~mag_dataset.harness.preflight.probe`), a misconfiguration (missing key, HTTP
401/403/404) stopping the batch at once, then the rest in chunks so that a large corpus
never holds every base64 screenshot in memory. What the answers mean (a draft, a vote)
and when a batch failed too often to be written are the callers' business, not this
module's.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from mag_dataset.harness.preflight import probe, raise_if_fatal
from mag_dataset.llm_client import ChatClient, LLMError, image_part

#: Messages of one request.
Messages = list[dict[str, Any]]


def som_messages(system_prompt: str, som_png: bytes, text: str) -> Messages:
    """A system prompt, then one user message: the Set-of-Mark screenshot and the step's text."""
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": [image_part(som_png), {"type": "text", "text": text}]},
    ]


def in_threads(endpoints: Sequence[tuple[str, ChatClient]], fn: Callable[[str, ChatClient], None]) -> None:
    """``fn(name, client)`` for every endpoint at once; the first exception is re-raised here."""
    errors: list[BaseException] = []

    def run(name: str, client: ChatClient) -> None:
        try:
            fn(name, client)
        except BaseException as e:  # re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=j, name=f"llm-{j[0]}") for j in endpoints]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def ask_batch(
    endpoints: Sequence[tuple[str, ChatClient]],
    count: int,
    messages: Callable[[int], Messages],
    *,
    who: Callable[[str], str | None] = lambda name: name,
    down: Callable[[str, LLMError], BaseException] | None = None,
    chunk_size: int = 64,
    progress: Callable[[int], None] | None = None,
) -> dict[str, list[Any]]:
    """Send request ``k`` (``messages(k)``, for k < ``count``) to every endpoint.

    Endpoints run in parallel, each with its own concurrency. Each endpoint's first uncached
    request goes out alone; ``messages(k)`` is built once per chunk and shared by the endpoints.

    Args:
        endpoints: ``(name, client)`` pairs.
        count: number of requests.
        messages: builds request ``k`` (reads its screenshot: called lazily, chunk by chunk).
        who: the prefix of a misconfiguration message for an endpoint name (None: no prefix).
        down: when given, the exception raised for an endpoint whose first request failed
            (else that failure is an answer like any other).
        chunk_size: requests whose screenshots are held in memory at once.
        progress: called with the number of requests done after each chunk.

    Returns:
        ``name -> answers``: per request, the answer text or the :class:`LLMError` of a failed call.

    Raises:
        LLMConfigError: an endpoint is misconfigured (no API key, HTTP 401/403/404), at the
            probe or at the end of the chunk in which it showed.
        BaseException: what ``down`` returns, when an endpoint's first request failed.
    """
    answers: dict[str, list[Any]] = {name: [None] * count for name, _ in endpoints}
    probed: dict[str, int] = {}

    def first(name: str, client: ChatClient) -> None:
        got = probe(client, (lambda k=k: messages(k) for k in range(count)))
        if got is not None:
            probed[name] = got[0]
            answers[name][got[0]] = got[1]

    in_threads(endpoints, first)
    for name, _ in endpoints:
        if name in probed:
            ans = answers[name][probed[name]]
            raise_if_fatal(ans, who(name))
            if down is not None and isinstance(ans, LLMError):
                raise down(name, ans)
    for start in range(0, count, chunk_size):
        stop = min(start + chunk_size, count)
        requests = {k: messages(k) for k in range(start, stop)}

        def run(name: str, client: ChatClient) -> None:
            todo = [k for k in requests if probed.get(name) != k]
            for k, ans in zip(todo, client.map([requests[k] for k in todo], return_exceptions=True)):
                answers[name][k] = ans

        in_threads(endpoints, run)
        for name, _ in endpoints:  # stop at the first misconfigured endpoint, not after the whole batch
            for ans in answers[name][start:stop]:
                raise_if_fatal(ans, who(name))
        if progress:
            progress(stop)
    return answers


__all__ = ["Messages", "ask_batch", "in_threads", "som_messages"]
