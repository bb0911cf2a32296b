"""baselines.mg_grpo on two CPU processes (accelerate launch, gloo): one step finishes even when
the ranks have different numbers of guides to force (the reward decode cannot hang)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
pytest.importorskip("trl")
pytest.importorskip("accelerate")

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_process_mg_grpo_step_finishes_with_unequal_reward_decodes(tmp_path, tiny_vlm):
    out = tmp_path / "out"
    out.mkdir()
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "--main_process_ip", "127.0.0.1", "--main_process_port", str(_free_port()),
           "--num_cpu_threads_per_process", "1",
           str(ROOT / "tests" / "_grpo_two_ranks.py"), str(tiny_vlm), str(out)]
    # TMPDIR: torch elastic writes its log folder (torchelastic_*) there and leaves it
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TMPDIR": str(tmp_path)}
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=420)
    except subprocess.TimeoutExpired as e:  # a hang of the collectives: the group is killed with the launcher
        pytest.fail(f"two-process MG-GRPO step did not finish (hung collectives?): {str(e.stderr)[-2000:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["processes"] == 2 and r["global_step"] == 1 for r in ranks)
    # the condition the fix is for: rank 0 has guides to force, rank 1 (random weights) has none ...
    assert ranks[0]["expert_rows"] == [0, 2] and ranks[0]["forced"] >= 2
    assert ranks[1]["expert_rows"] == [] and ranks[1]["forced"] < ranks[0]["forced"]
    # ... and yet both made the same number of generate calls (one per forced guide on rank 0)
    assert ranks[0]["decode_calls"] == ranks[1]["decode_calls"] == ranks[0]["forced"]
