"""Warm isolated children (mag_dataset.isolation, ``warm=True``): a child started ahead of its
request, one fresh process per request, today's limits, nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mag_dataset.actions import View
from mag_dataset.isolation import _WARM, WARM_CHILDREN, Limits, run_isolated

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_leaderboard_board import gold, jsonl  # noqa: E402

LIMITS = Limits(memory_mb=1024, seconds=60)


def _request(data: bytes | None = None) -> dict:
    g = gold()
    return {"data": data if data is not None else jsonl(), "filename": "p.jsonl", "view": "som", "contract": "J",
            "gold": g.for_view(View.SOM), "verdicts": None, "max_bytes": 10**7, "max_lines": 10**5, "max_seeds": 10,
            "mode": "score", "max_format_failure_rate": 0.5}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_until_waiting(pids: list[int], timeout: float = 120) -> None:
    """Until every child in ``pids`` has done its imports and blocks reading its request."""
    deadline = time.monotonic() + timeout
    pending = set(pids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                if "pipe_read" in Path(f"/proc/{pid}/wchan").read_text():
                    pending.discard(pid)
            except OSError:
                pending.discard(pid)
        time.sleep(0.1)
    assert not pending, f"children {sorted(pending)} still starting after {timeout} s"


def test_each_request_takes_a_waiting_child_and_another_is_started():
    cold = run_isolated("board.score", _request(), LIMITS)
    first = run_isolated("board.score", _request(), LIMITS, warm=True)
    assert cold.ok and first.ok and first.value == cold.value  # the same answer as a child started on demand
    waiting = _WARM.waiting("board.score", LIMITS)
    assert len(waiting) == WARM_CHILDREN >= 1
    second = run_isolated("board.score", _request(), LIMITS, warm=True)
    assert second.ok and second.value == cold.value
    now = _WARM.waiting("board.score", LIMITS)
    taken = set(waiting) - set(now)
    assert len(taken) == 1 and len(now) == WARM_CHILDREN  # one was used (and is gone), one took its place
    assert not any(_alive(pid) for pid in taken)  # a child serves one request, never two


def test_a_warm_child_keeps_the_limits_and_refuses_as_a_cold_one():
    refused = run_isolated("board.score", _request(b"not json\n"), LIMITS, warm=True)
    assert refused.kind == "refused" and "line 1" in refused.message
    # the CPU limit counts from the request: the child's imports and warm-up before it (about 2 s of
    # CPU) are not charged, so a 1 s limit still scores a small file
    one_second = Limits(memory_mb=1024, seconds=1)
    run_isolated("board.score", _request(), one_second, warm=True)  # started on demand: may run out of time
    _wait_until_waiting(_WARM.waiting("board.score", one_second))
    quick = run_isolated("board.score", _request(), one_second, warm=True)
    assert quick.ok, quick
    # the memory limit holds for the request: a normal file fits in 256 MiB, 150 MB of outputs cannot
    # even be read and unpickled in it, warm or not
    small = Limits(memory_mb=256, seconds=60)
    assert run_isolated("board.score", _request(), small, warm=True).ok
    line = json.dumps({"step_id": gold().steps[View.SOM][0].step_id, "output": "x" * 5_000_000}) + "\n"
    data = (line * 30).encode()
    warm = run_isolated("board.score", _request(data), small, warm=True)
    cold = run_isolated("board.score", _request(data), small)
    assert warm.kind == cold.kind == "memory" and "256" in warm.message, (warm, cold)


@pytest.mark.parametrize("how", ["exit", "killed"])
def test_waiting_children_do_not_outlive_their_parent(how, tmp_path):
    code = (
        "import os, sys, json\n"
        "sys.path.insert(0, %r)\n"
        "from test_isolation_warm import _request, LIMITS\n"
        "from mag_dataset.isolation import _WARM, run_isolated\n"
        "assert run_isolated('board.score', _request(), LIMITS, warm=True).ok\n"
        "print(json.dumps(_WARM.waiting('board.score', LIMITS)), flush=True)\n"
        "if sys.argv[1] == 'killed':\n"
        "    os._exit(0)  # no atexit: the children see their stdin close\n"
    ) % str(Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.returncode == 0, out.stderr[-2000:]
    pids = json.loads(out.stdout.strip().splitlines()[-1])
    assert pids
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in pids), pids
