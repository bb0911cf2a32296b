"""The label audit's judge prompt (WebMRE, arXiv 2609.27353, §3): what every judge is asked.

Holds :data:`JUDGE_SYSTEM_PROMPT`, the per-step text (:func:`judge_user_text`), the
messages (:func:`judge_messages`: the Set-of-Mark screenshot and that text) and their hash
(:func:`prompt_key`, the verdict log's ``prompt_sha256``). It sends nothing and parses
nothing: the requests are :mod:`mag_dataset.harness.audit`'s (which re-exports these
names), the answer format :mod:`mag_dataset.harness.audit_rules`'.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from mag_dataset.harness.llm_batch import som_messages
from mag_dataset.raw import RawEpisode, RawStep

JUDGE_SYSTEM_PROMPT = """\
You audit the gold labels of a web-agent benchmark. You see a screenshot of a web page on which every \
candidate element carries a numbered Set-of-Mark box, the user's task, the guides written for the \
earlier steps, the action that was recorded at this step and the candidate menu (id, role, text and \
box in screenshot pixels of every labelled element).

Decide whether the recorded element is the element this action should act on, on this screenshot.
Answer with exactly one JSON object and nothing else:
{"verdict": "confirm"}  - the recorded element is right;
{"verdict": "remap", "element": "<id>"}  - the action belongs to another element of the menu; give its id;
{"verdict": "unmappable"}  - no element of the menu fits the action (the target is not visible, not \
listed, or the screenshot does not show the state the action was taken in).
You may add a short "reason" string to the object."""


def _cand_line(c: Any) -> str:
    box = ", ".join(f"{v:g}" for v in c.bbox)
    return f"[{c.id}] {c.role} {json.dumps(c.text, ensure_ascii=False)} [{box}]"


def judge_user_text(episode: RawEpisode, step: RawStep) -> str:
    """The text part of a judge's user message for one step."""
    a = step.action
    rec = {k: v for k, v in a.to_dict().items() if v is not None}
    target = next((c for c in step.candidates if c.id == a.element_id), None)
    previous = [s.guide for s in episode.steps[: step.step_index]]
    lines = [
        f"Task: {episode.intent}",
        f"Step {step.step_index + 1} of {len(episode.steps)}.",
        "Guides of the earlier steps:" if previous else "Guides of the earlier steps: (none, this is the first step)",
        *[f"- {g}" for g in previous],
        f"Recorded action: {json.dumps(rec, ensure_ascii=False)}",
        "Recorded element: " + (_cand_line(target) if target is not None else "none (the action was recorded as a point only)"),
        f"Recorded guide: {step.guide}",
        f"Candidate menu ({len(step.candidates)} elements):",
        *[_cand_line(c) for c in step.candidates],
        "Answer with one JSON object.",
    ]
    return "\n".join(lines)


def judge_messages(episode: RawEpisode, step: RawStep, som_png: bytes) -> list[dict[str, Any]]:
    """The chat messages sent to every judge for one step."""
    return som_messages(JUDGE_SYSTEM_PROMPT, som_png, judge_user_text(episode, step))


def prompt_key(messages: Sequence[dict[str, Any]]) -> str:
    """sha256 hex of a step's judge messages: equal exactly when every judge would be asked the
    same thing (the same screenshot, intent, guides, action and menu)."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


__all__ = ["JUDGE_SYSTEM_PROMPT", "judge_messages", "judge_user_text", "prompt_key"]
