"""Why a live episode failed: what the task's check expected and what it found.

Read once, after the last attempt, from the task BrowserGym ran (the page is still open):

* MiniWoB++: the page's own state (``WOB_RAW_REWARD_GLOBAL``, ``WOB_DONE_GLOBAL``,
  ``WOB_REWARD_REASON``, through :func:`mag_dataset.live.env.page_task_info`); a success
  needs raw reward 1.
* The sites (:class:`mag_dataset.sites.task.SiteTask`): the agent's ``finish`` answer, the
  check's own reason (from BrowserGym's ``info`` when the agent finished, else
  :meth:`~mag_dataset.sites.task.SiteTask.check` run on the state as it is), and what the
  check wants in WebArena's terms: the reference answers of an information task, the target
  page of a navigation task, the ``program_html`` targets of a state task.
* Other BrowserGym benchmarks: the reward and BrowserGym's ``task_info``.

Nothing here may fail an episode: a value that cannot be read is left out.
"""

from __future__ import annotations

import json
from typing import Any

#: longest text kept for one field
_MAX = 400


def _short(value: Any) -> str:
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    s = " ".join(s.split())
    return s if len(s) <= _MAX else s[: _MAX - 3] + "..."


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - an explanation must never fail the episode
        return None


def explain(env: Any, task_id: str, info: dict[str, Any] | None, raw_reward: float) -> dict[str, Any] | None:
    """What the task's check expected and found, for a failed episode.

    Args:
        env: the episode's BrowserGym env, before it is closed.
        task_id: the BrowserGym task id.
        info: BrowserGym's ``info`` of the last step (None when no step was taken).
        raw_reward: the episode's raw reward.

    Returns:
        ``{"kind", "expected", "found", "reason", ...}`` (strings; ``given_answer`` for the
        sites), or None when nothing can be read.
    """
    task = getattr(getattr(env, "unwrapped", env), "task", None)
    if task_id.startswith("miniwob."):
        return _miniwob(env, raw_reward)
    if task is not None and hasattr(task, "check") and hasattr(task, "kind"):
        return site_check(task, _answer(env), (info or {}).get("task_info") or {}, _url(env))
    task_info = (info or {}).get("task_info") or {}
    return {"kind": "browsergym", "expected": "reward 1", "found": f"reward {raw_reward:g}",
            "reason": _short(task_info) if task_info else None}


def _miniwob(env: Any, raw_reward: float) -> dict[str, Any]:
    from mag_dataset.live.env import page_task_info

    state = (_safe(lambda: page_task_info(env)) or {}).get("task_info") or {}
    done = bool(state.get("DONE_GLOBAL"))
    raw = state.get("RAW_REWARD_GLOBAL", raw_reward)
    found = f"raw reward {float(raw or 0):g}" + ("" if done else ", task not done")
    reason = state.get("REWARD_REASON")
    return {"kind": "miniwob", "expected": "MiniWoB raw reward 1 (the task done, scored by the page)",
            "found": found, "reason": _short(reason) if reason not in (None, "") else None}


def site_check(task: Any, answer: str | None, task_info: dict[str, Any], final_url: str | None) -> dict[str, Any]:
    """What a site task's check expected and found.

    Args:
        task: the :class:`~mag_dataset.sites.task.SiteTask` of the episode.
        answer: the agent's last message to the user (its ``finish`` answer), or None.
        task_info: BrowserGym's ``info["task_info"]`` of the last step: ``{"success",
            "reason"}`` when the check ran (the agent finished), else empty.
        final_url: the page the agent ended on.
    """
    reason = task_info.get("reason")
    if reason is None:  # the agent never finished: what the check says of the state as it is
        if getattr(task, "final_url", None) is None:
            task.final_url = final_url
        verdict = _safe(lambda: task.check(answer))
        reason = f"not finished; the check says: {verdict[1]}" if verdict else "not finished"
    out: dict[str, Any] = {"kind": task.kind, "expected": None, "found": None, "reason": _short(reason),
                           "given_answer": answer}
    if task.kind == "information":
        ref = _safe(task.reference_answers)
        out["expected"] = _answers(ref) if ref else None
        out["found"] = f"the answer {answer!r}" if answer else "no answer"
    elif task.kind == "navigation":
        target = _safe(task.reference_url)
        out["expected"] = f"the final page {target}" if target else None
        out["found"] = f"the final page {final_url}" if final_url else None
    else:
        targets = _safe(task.program_html)
        out["expected"] = _short("; ".join(_target(t) for t in targets)) if targets else None
        out["found"] = _short(reason)
    return out


def _answers(ref: dict[str, Any]) -> str:
    if "exact_match" in ref:
        return f"the answer {ref['exact_match']!r}"
    if "must_include" in ref:
        return "an answer including " + " and ".join(repr(s) for s in ref["must_include"])
    return _short(ref)


def _target(t: dict[str, Any]) -> str:
    want = t.get("required_contents") or {}
    what = (f"exactly {want['exact_match']!r}" if "exact_match" in want
            else "including " + ", ".join(repr(s) for s in want.get("must_include", [])))
    return f"{t.get('url')} shows {what}"


def _answer(env: Any) -> str | None:
    """The agent's last message to the user after the goal (what a site task's check reads)."""
    chat = getattr(getattr(env, "unwrapped", env), "chat", None)
    messages = getattr(chat, "messages", None) or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    answers = [m for m in messages[last_user + 1:] if m.get("role") == "assistant"]
    return str(answers[-1].get("message") or "") if answers else None


def _url(env: Any) -> str | None:
    page = getattr(getattr(env, "unwrapped", env), "page", None)
    return _safe(lambda: page.url) if page is not None else None
