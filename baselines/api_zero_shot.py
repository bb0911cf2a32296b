"""Zero-shot frontier models through an OpenAI-compatible chat-completions endpoint.

WebMRE (arXiv 2609.27353) reports frontier models zero-shot under the same locked prompts
as the fine-tuned models (fine-tuned models beat the best zero-shot row by 17 action
points and 20 BLEU-1 points). Each step is sent as the library's prompt
(:func:`mag_dataset.prompts.build_messages`) with the screenshot as a base64 PNG data URL;
decoding is greedy (``temperature=0``). Reasoning models (``--reasoning true``: OpenAI's
o-series and GPT-5-class models) reject ``max_tokens`` and any temperature but their
default; for them the budget is sent as ``max_completion_tokens`` and no temperature is
sent. Any other request parameter (``reasoning_effort``, ``top_p``, a provider's extra
fields) comes from ``request_params``: a mapping in the YAML config or a JSON object on
the command line, merged last into every request. The runner
(:class:`mag_dataset.runners.OpenAIRunner`, the interface every model call goes through)
sends them through the client (:mod:`mag_dataset.llm_client`, on the ``openai`` package),
which bounds concurrency, retries 429/5xx/timeouts with exponential backoff and jitter
(``Retry-After`` honoured) and caches every answer on disk under a hash of the full request, so rerunning the same command makes no calls. The
API key is read from the environment variable named by ``--api_key_env``.

Launch::

    export OPENAI_API_KEY=...
    python -m baselines.api_zero_shot --base_url https://api.openai.com/v1 --model gpt-5.5 \\
        --dataset mag/webmre --view som --contract J --output preds/gpt-5.5-som-J.jsonl
    # any OpenAI-compatible server, e.g. a local vLLM: --base_url http://127.0.0.1:8000/v1 --api_key_env ""
    mag score --predictions preds/gpt-5.5-som-J.jsonl --dataset mag/webmre --view som --contract J

Output: the predictions JSONL (written atomically once every step has an answer) and
``<name>.provenance.json``. A request that still fails after the retries stops the run
with one clear line; the answers already received stay cached, so rerunning resumes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from baselines import common
from mag_dataset.fileio import atomic_write, atomic_write_json


@dataclass
class APIArguments:
    base_url: str = field(metadata={"help": "endpoint root with the version prefix, e.g. https://api.openai.com/v1"})
    model: str = field(metadata={"help": "model name sent to the endpoint"})
    output: str = field(metadata={"help": "predictions JSONL to write"})
    api_key_env: str = field(default="OPENAI_API_KEY",
                             metadata={"help": "environment variable holding the API key ('' for none)"})
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som or coord"})
    contract: str = field(default="J", metadata={"help": "A, G, J or JG"})
    split: str = field(default="test", metadata={"help": "train or test"})
    seed: int = field(default=0, metadata={"help": "seed recorded in the file and sent with each request"})
    coord_space: str = field(default="pixels", metadata={
        "help": "coord view: the space the model answers in (pixels, norm1000, norm1 or resized:WxH); "
                "sets the prompt's wording and is recorded in the provenance sidecar for mag score"})
    max_tokens: int = field(default=512, metadata={"help": "answer budget per step"})
    reasoning: bool = field(default=False, metadata={
        "help": "reasoning model: send max_completion_tokens instead of max_tokens, and no temperature"})
    request_params: str | None = field(default=None, metadata={
        "help": "extra request parameters: a JSON object (a mapping in the YAML config), e.g. "
                "'{\"reasoning_effort\": \"low\"}'"})
    concurrency: int = field(default=4, metadata={"help": "requests in flight at once"})
    max_retries: int = field(default=5, metadata={"help": "retries per request on 429/5xx/timeouts"})
    timeout: float = field(default=120.0, metadata={"help": "seconds per attempt"})
    backoff: float = field(default=2.0, metadata={"help": "seconds before the first retry (doubles each retry)"})
    cache_dir: str = field(default=".cache/mag_api", metadata={"help": "on-disk answer cache"})
    chunk_size: int = field(default=64, metadata={"help": "steps per batch of concurrent requests"})
    limit: int | None = field(default=None, metadata={"help": "only the first N steps (smoke tests)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})


def png_bytes(image: Any) -> bytes:
    from mag_dataset.runners import png_bytes as png

    return png(image)


#: request keys the script sets itself; request_params may not override them
_RESERVED = ("model", "messages", "stream")


def extra_params(args: APIArguments) -> dict[str, Any]:
    """``request_params`` as a dict (from the YAML mapping or the command line's JSON object).

    Raises:
        mag_dataset.errors.UserError: not a JSON object, or a key the script sets itself.
    """
    import json

    from mag_dataset.errors import UserError

    raw = args.request_params
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise UserError(f"request_params is not JSON ({e.msg}): {args.request_params!r}") from None
    if not isinstance(raw, dict):
        raise UserError(f"request_params must be a JSON object, got {type(raw).__name__}")
    bad = [k for k in raw if k in _RESERVED]
    if bad:
        raise UserError(f"request_params may not set {bad[0]!r} (the script sets it)")
    return dict(raw)


def decoding_params(args: APIArguments) -> dict[str, Any]:
    """The decoding parameters of every request: budget, seed, then ``request_params``."""
    budget_key = "max_completion_tokens" if args.reasoning else "max_tokens"
    return {budget_key: args.max_tokens, "seed": args.seed, **extra_params(args)}


def step_request(example: common.Example, view: str, contract: str, args: APIArguments) -> Any:
    """The messages of one step (:func:`mag_dataset.runners.step_messages`), the screenshot as PNG."""
    from mag_dataset.runners import step_messages

    return step_messages(example.step, view, contract, png_bytes(example.image), coord_space=args.coord_space)


def request_for(example: common.Example, view: str, contract: str, args: APIArguments) -> dict[str, Any]:
    """The chat-completions request of one step (messages + decoding parameters): what the
    runner sends (text-only turns as plain strings, which every OpenAI-compatible server accepts)."""
    from mag_dataset.runners import openai_request

    return openai_request(step_request(example, view, contract, args), decoding_params(args), text_as_string=True)


def run(args: APIArguments, examples: Sequence[common.Example] | None = None) -> Path:
    """Query the endpoint for every step and write the predictions file.

    Returns:
        The path of the predictions file.

    Raises:
        mag_dataset.errors.UserError: bad arguments, a configuration error of the client, or
            requests that kept failing.
    """
    from tqdm.auto import tqdm

    from mag_dataset.errors import UserError
    from mag_dataset.llm_client import LLMError
    from mag_dataset.runners import OpenAIRunner

    view, contract = common.view_and_contract(args.view, args.contract)
    params = decoding_params(args)  # a bad request_params fails before any request
    args.coord_space = common.coord_space_arg(view, args.coord_space)
    try:
        runner = OpenAIRunner(args.base_url, args.model, params=params, text_as_string=True,
                              api_key_env=args.api_key_env or None, timeout=args.timeout,
                              max_retries=args.max_retries, cache_dir=args.cache_dir or None,
                              concurrency=args.concurrency, backoff=args.backoff)
    except LLMError as e:
        raise UserError(str(e)) from None
    client = runner.client
    if args.reasoning:  # reasoning models accept only their default temperature
        client.default_params = {k: v for k, v in client.default_params.items() if k != "temperature"}
    if examples is None:
        examples = common.load_examples(args.dataset, view, args.split, args.limit)
    elif args.limit is not None:
        examples = list(examples)[: args.limit]
    outputs: list[str] = []
    meter = common.Throughput()
    bar = tqdm(total=len(examples), desc=f"api {args.model}", unit="step", disable=not args.progress)
    for i in range(0, len(examples), args.chunk_size):
        chunk = examples[i : i + args.chunk_size]
        answers = runner.generate_many([step_request(e, view, contract, args) for e in chunk], return_exceptions=True)
        failed = [(e.step.step_id, a) for e, a in zip(chunk, answers) if isinstance(a, LLMError)]
        if failed:
            sid, err = failed[0]
            raise UserError(f"{len(failed)} request(s) failed after retries (first: step {sid}: {err}); "
                            f"answers received so far are cached in {args.cache_dir}, rerun to resume")
        outputs += answers
        meter.add(len(chunk))
        bar.update(len(chunk))
    bar.close()
    meter.report(f"api_zero_shot [{args.model}]")
    print(f"requests sent: {client.stats['requests']}, cache hits: {client.stats['cache_hits']}, "
          f"retries: {client.stats['retries']}", file=sys.stderr)
    out = atomic_write(args.output, common.jsonl_lines({"step_id": e.step.step_id, "output": o, "seed": args.seed}
                                                       for e, o in zip(examples, outputs)))
    from mag_dataset.prompts import PROMPT_VERSION

    atomic_write_json(common.provenance_path(out), {
        "kind": "mag-predictions-provenance",
        "model": args.model,
        "endpoint": client.base_url,
        "dataset": args.dataset,
        "dataset_revision": common.dataset_revision(args.dataset),
        "split": args.split,
        "view": view.value,
        "contract": contract.value,
        "seed": args.seed,
        "coord_space": args.coord_space,
        "steps": len(examples),
        "prompt_version": PROMPT_VERSION,
        "decoding": {"strategy": "provider default (reasoning model)" if args.reasoning else "greedy",
                     "temperature": client.default_params.get("temperature"), **params},
        "backend": "openai-chat-completions",
        "predictions_sha256": common.sha256_file(out),
        "environment": common.environment(),
    })
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from mag_dataset.errors import UserError

    (args,) = common.parse_args([APIArguments], argv)
    try:
        out = run(args)
    except UserError as e:
        print(f"api_zero_shot: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
