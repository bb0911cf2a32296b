"""Paraphrased guides for forced-guide mediation: the same instruction, the target renamed by its function.

WebMRE (arXiv 2609.27353) forces "a paraphrase that renames the target" as one condition
of its mediation analysis (9B, guide-first: .554, between the own guide's .422 and the
gold guide's .684). This script produces that input for :mod:`baselines.mediation`
(``--paraphrases FILE``). In the manner of ``mag draft-guides``, each step of the split is
sent to an OpenAI-compatible chat-completions endpoint with the Set-of-Mark screenshot and
a text part holding the task, the gold guide and the target element (role and on-screen
label); :data:`SYSTEM_PROMPT` asks for one sentence that keeps the action, any text to
type and any option, but names the target by what it does, never by its label.

Every answer is checked: the target's label (case- and space-insensitive) must be absent.
An answer that still contains it gets one follow-up request quoting the rejected sentence;
a step that fails twice stops the run with one line (the answers received so far stay
cached, so a rerun after adjusting the model or prompt costs only the failed steps). Steps
whose action has no labelled target (scroll, finish, an unlabelled element) are reworded
all the same and not checked. The client (:mod:`mag_dataset.llm_client`) caches every
answer on disk under a hash of the full request, so rerunning makes no requests.

Output: JSONL ``{"step_id", "guide", "label"}`` in the split's order (written atomically
once every step has a checked paraphrase) and ``<name>.provenance.json`` (endpoint,
model, prompt hash, dataset, split, view).

Launch::

    export OPENAI_API_KEY=...
    python -m baselines.paraphrase --base_url https://api.openai.com/v1 --model gpt-5.5 \\
        --dataset mag/webmre --view som --split test --output data/paraphrases.jsonl
    python -m baselines.mediation ... --paraphrases data/paraphrases.jsonl
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from baselines import common
from mag_dataset.fileio import atomic_write, atomic_write_json

SYSTEM_PROMPT = """\
You rewrite guides for a digital adoption platform: short instructions overlaid on a web page that \
tell a user what to do next. You see a screenshot of the page with numbered Set-of-Mark boxes, the \
user's task, the current guide, and the element the guide's action targets (its role and its label, \
the text it shows on screen).

Rewrite the guide as one imperative sentence that asks for exactly the same action, keeps any text \
to type or option to choose word for word, but refers to the target element by its function or \
purpose on the page (what it does or is for), never by its label or visible text, and says nothing \
about element ids, boxes or coordinates. Answer with the sentence only."""

RETRY_TEMPLATE = ("Your sentence still contains the target's label {label}. Rewrite it so that the label does "
                  "not appear; describe the element by what it does. Answer with the sentence only.")


@dataclass
class ParaphraseArguments:
    base_url: str = field(metadata={"help": "endpoint root with the version prefix, e.g. https://api.openai.com/v1"})
    model: str = field(metadata={"help": "model name sent to the endpoint"})
    output: str = field(metadata={"help": "paraphrases JSONL to write (mediation's --paraphrases)"})
    api_key_env: str = field(default="OPENAI_API_KEY",
                             metadata={"help": "environment variable holding the API key ('' for none)"})
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som (the screenshot shows the marks the prompt names)"})
    split: str = field(default="test", metadata={"help": "train or test"})
    max_tokens: int = field(default=128, metadata={"help": "answer budget per step"})
    concurrency: int = field(default=4, metadata={"help": "requests in flight at once"})
    max_retries: int = field(default=5, metadata={"help": "retries per request on 429/5xx/timeouts"})
    timeout: float = field(default=120.0, metadata={"help": "seconds per attempt"})
    backoff: float = field(default=2.0, metadata={"help": "seconds before the first retry (doubles each retry)"})
    cache_dir: str = field(default=".cache/mag_api", metadata={"help": "on-disk answer cache"})
    limit: int | None = field(default=None, metadata={"help": "only the first N steps (smoke tests)"})


def target_label(step: Any) -> str | None:
    """The on-screen label of the element the gold action targets, or None (no labelled target)."""
    target = next((c for c in step.candidates if c.id == step.action.element_id), None)
    label = (target.text or "").strip() if target is not None else ""
    return label or None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def label_present(text: str, label: str | None) -> bool:
    """Whether ``label`` occurs in ``text`` (case- and whitespace-insensitive)."""
    return bool(label) and _norm(label) in _norm(text)


def clean(answer: str) -> str:
    """One line: the first non-empty line, surrounding quotes removed."""
    line = next((x.strip() for x in answer.splitlines() if x.strip()), "")
    return line.strip('"\u201c\u201d').strip()


def user_text(step: Any) -> str:
    """The text part of a step's request."""
    target = next((c for c in step.candidates if c.id == step.action.element_id), None)
    where = (f"{target.role} [{target.id}] labelled {target.text!r}" if target is not None
             else "none (the action has no target element)")
    return "\n".join([f"Task: {step.intent}", f"Current guide: {step.guide}", f"Target element: {where}",
                      "Rewritten guide:"])


def messages_for(example: common.Example) -> list[dict[str, Any]]:
    """The chat messages of one step: system prompt, then the screenshot and :func:`user_text`."""
    from baselines.api_zero_shot import png_bytes
    from mag_dataset.llm_client import image_part

    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": [image_part(png_bytes(example.image)),
                                         {"type": "text", "text": user_text(example.step)}]}]


def prompt_hash() -> str:
    """A short hash of the prompt texts, recorded with the output."""
    return hashlib.sha256((SYSTEM_PROMPT + "\n" + RETRY_TEMPLATE).encode()).hexdigest()[:12]


def run(args: ParaphraseArguments, examples: Sequence[common.Example] | None = None) -> list[dict[str, Any]]:
    """Paraphrase every step's gold guide and write the JSONL; returns the records.

    Raises:
        mag_dataset.errors.UserError: bad arguments, a configuration error of the client,
            requests that kept failing, or steps whose paraphrase kept the target's label.
    """
    import json

    from mag_dataset.errors import UserError
    from mag_dataset.llm_client import ChatClient, LLMError

    view, _ = common.view_and_contract(args.view, "JG")
    try:
        client = ChatClient(args.base_url, args.model, api_key_env=args.api_key_env or None, timeout=args.timeout,
                            max_retries=args.max_retries, cache_dir=args.cache_dir or None,
                            concurrency=args.concurrency, backoff=args.backoff)
    except LLMError as e:
        raise UserError(str(e)) from None
    if examples is None:
        examples = common.load_examples(args.dataset, view, args.split, args.limit)
    elif args.limit is not None:
        examples = list(examples)[: args.limit]

    def ask(requests: list[dict[str, Any]], ids: list[str]) -> list[str]:
        answers = client.map(requests, return_exceptions=True)
        failed = [(sid, a) for sid, a in zip(ids, answers) if isinstance(a, LLMError)]
        if failed:
            raise UserError(f"{len(failed)} request(s) failed after retries (first: step {failed[0][0]}: "
                            f"{failed[0][1]}); answers received so far are cached in {args.cache_dir}, rerun to resume")
        return [clean(a) for a in answers]

    base = [messages_for(e) for e in examples]
    ids = [e.step.step_id for e in examples]
    labels = [target_label(e.step) for e in examples]
    guides = ask([{"messages": m, "max_tokens": args.max_tokens} for m in base], ids)
    redo = [i for i, (g, lab) in enumerate(zip(guides, labels)) if not g or label_present(g, lab)]
    if redo:
        follow = [{"messages": base[i] + [{"role": "assistant", "content": guides[i]},
                                          {"role": "user", "content": RETRY_TEMPLATE.format(
                                              label=json.dumps(labels[i], ensure_ascii=False))}],
                   "max_tokens": args.max_tokens} for i in redo]
        for i, g in zip(redo, ask(follow, [ids[i] for i in redo])):
            guides[i] = g
    bad = [i for i, (g, lab) in enumerate(zip(guides, labels)) if not g or label_present(g, lab)]
    if bad:
        i = bad[0]
        raise UserError(f"{len(bad)} paraphrase(s) still name the target's label or are empty after a follow-up "
                        f"(first: step {ids[i]}, label {labels[i]!r}: {guides[i]!r}); nothing written")
    records = [{"step_id": sid, "guide": g, "label": lab} for sid, g, lab in zip(ids, guides, labels)]
    out = atomic_write(args.output, common.jsonl_lines(records))
    atomic_write_json(common.provenance_path(out), {
        "kind": "mag-paraphrases",
        "model": args.model,
        "endpoint": client.base_url,
        "prompt_sha256_12": prompt_hash(),
        "dataset": args.dataset,
        "dataset_revision": common.dataset_revision(args.dataset),
        "split": args.split,
        "view": view.value,
        "steps": len(records),
        "follow_ups": len(redo),
        "environment": common.environment(),
    })
    print(f"paraphrases: {len(records)} steps, {len(redo)} follow-up request(s); requests sent: "
          f"{client.stats['requests']}, cache hits: {client.stats['cache_hits']}", file=sys.stderr)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    from mag_dataset.errors import UserError

    (args,) = common.parse_args([ParaphraseArguments], argv)
    try:
        run(args)
    except UserError as e:
        print(f"paraphrase: error: {e}", file=sys.stderr)
        return 2
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
