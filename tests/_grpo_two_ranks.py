"""One MG-GRPO step on two processes (launched by tests/test_baselines_grpo_distributed.py).

Only rank 0 mixes expert answers into its groups, so only rank 0 has parsable guides to
force: the ranks need different numbers of reward decodes. The reward must still make the
same number of ``generate`` calls on both (``synced_gpus`` steps in lock-step), or the
collectives go unmatched and the run hangs. Each rank writes what its reward did to
``OUT/rank<r>.json``.

Usage: accelerate launch ... tests/_grpo_two_ranks.py TINY_MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from trl import GRPOConfig, ModelConfig  # noqa: E402

from baselines import common, mg_grpo  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402


def main(model_dir: str, out_dir: str) -> None:
    rank = int(os.environ["RANK"])
    if rank == 0:
        mg_grpo.ARMS["mediated"] = mg_grpo.Arm(reward="mediated", expert=True, episodes=False)
    targs = GRPOConfig(
        output_dir=str(Path(out_dir) / "run"), max_steps=1, per_device_train_batch_size=4, num_generations=2,
        max_completion_length=6, beta=0.0, num_iterations=1, bf16=False, activation_checkpointing=False,
        use_cpu=True, report_to="none", save_strategy="no", logging_steps=1, seed=0, dataloader_num_workers=0,
    )
    margs = ModelConfig(model_name_or_path=model_dir, dtype="float32")
    script = mg_grpo.GRPOScriptArguments(arm="mediated", num_prompts=None, reward_max_new_tokens=4,
                                         reward_batch_size=1)
    examples = [common.Example(s, im) for s, im in tiny_steps(4, split="train")]
    trainer = mg_grpo.train(script, targs, margs, examples)
    reward = trainer.reward_funcs[0]
    forced = sum(d is not None for _, d in reward.last)
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps({
        "rank": rank, "processes": trainer.accelerator.num_processes, "global_step": trainer.state.global_step,
        "forced": forced, "decode_calls": reward.decode_calls, "expert_rows": trainer.expert_rows,
    }))


if __name__ == "__main__":
    main(*sys.argv[1:3])
