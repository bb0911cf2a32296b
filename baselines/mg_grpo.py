"""Mediated-Guide GRPO, its action-only control, and GRPO with expert trajectories (TRL ``GRPOTrainer``).

Two papers, one recipe:

* **Mediated-Guide GRPO** (WebMRE, arXiv 2609.27353): the policy writes guide-first (JG)
  answers; a sampled answer is rewarded by the action its *guide* induces. The guide is
  forced as a decoding prefix for the current policy on the frozen observation (same
  screenshot and prompt), the action is decoded greedily, and the reward is the library
  scorer's step action accuracy (SAA) of ``prefix + decoded action``. The sampled action
  itself is not scored; an answer that fails the format gate (no parsable guide) gets 0.
  The paper trains on 1,500 SoM train prompts, one clipped update per 16-prompt chunk per
  rank, no KL (``beta: 0``): .433 vs .429 for the action-only control, no checkpoint above
  the .436 supervised start.
* **Action-only control** (``--arm action_only``): contract A, reward = SAA of the sampled
  action.
* **GRPO with expert trajectories** (MAG, arXiv 2607.10079; 6.9% → 13.2% live success for a
  9B agent): ``--mix_expert`` replaces one sampled completion of each group with the gold
  answer (:func:`mag_dataset.prompts.render_target`), so every group holds one expert
  completion scored like the others.

Launch::

    accelerate launch --config_file baselines/accelerate/zero3.yaml -m baselines.mg_grpo \\
        --config baselines/configs/mg_grpo.yaml \\
        --model_name_or_path runs/sft-qwen35-9b-som-JG-s0 --output_dir runs/mg-grpo-9b
    # control arm: add --arm action_only --model_name_or_path runs/sft-qwen35-9b-som-A-s0
    # expert mixing: add --mix_expert true
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from baselines import common
from mag_dataset.fileio import atomic_write_json

ARMS: dict[str, str] = {"mediated": "JG", "action_only": "A"}


@dataclass
class GRPOScriptArguments:
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som or coord"})
    split: str = field(default="train", metadata={"help": "split the prompts come from"})
    arm: str = field(default="mediated", metadata={"help": "mediated (JG, guide-mediated reward) or action_only (A)"})
    num_prompts: int | None = field(default=1500, metadata={"help": "train prompts drawn (paper: 1,500); None: all"})
    prompt_seed: int = field(default=0, metadata={"help": "seed of the prompt draw"})
    mix_expert: bool = field(default=False, metadata={"help": "put one gold completion in every group"})
    reward_max_new_tokens: int = field(default=96, metadata={"help": "budget of the forced-prefix action decode"})
    reward_batch_size: int = field(default=16, metadata={"help": "forced-prefix decodes per generate call"})


def select_prompts(examples: Sequence[common.Example], n: int | None, seed: int) -> list[common.Example]:
    """Element-scored steps (SAA applies), then ``n`` of them drawn with ``random.Random(seed)``."""
    import random

    pool = [e for e in examples if e.step.element_scored]
    if n is None or n >= len(pool):
        return pool
    return random.Random(seed).sample(pool, n)


def grpo_dataset(examples: Sequence[common.Example], view: str, contract: str) -> Any:
    """Conversational prompts with their screenshot and step id (the reward looks the step up)."""
    from datasets import Dataset

    from mag_dataset.prompts import build_messages

    return Dataset.from_list([{"prompt": build_messages(e.step, view, contract), "image": e.image,
                               "step_id": e.step.step_id} for e in examples])


def _completion_text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        content = completion[-1]["content"]
        if isinstance(content, list):
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return content
    return completion


class ActionReward:
    """Control arm: the SAA of the sampled answer itself (contract A)."""

    __name__ = "action_saa"

    def __init__(self, steps: dict[str, Any], view: str, contract: str = "A"):
        self.steps, self.view, self.contract = steps, view, contract

    def __call__(self, prompts: list, completions: list, step_id: list[str], **kwargs: Any) -> list[float]:
        from mag_dataset.scoring import score_step

        out = []
        for c, sid in zip(completions, step_id):
            saa = score_step(_completion_text(c), self.steps[sid], self.view, self.contract).saa
            out.append(float(saa or 0.0))
        return out


class MediatedReward:
    """Reward a sampled guide by the action it induces when forced as a prefix.

    ``trainer`` is attached after the trainer is built (the reward decodes with the
    *current* policy). ``last`` keeps the forced decodings of the latest call: a list of
    ``(step_id, Decoded | None)``, None for a sample whose guide did not parse.
    """

    __name__ = "mediated_saa"

    def __init__(self, steps: dict[str, Any], view: str, max_new_tokens: int = 96, batch_size: int = 16):
        self.steps, self.view = steps, view
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size
        self.trainer: Any = None
        self.last: list[tuple[str, common.Decoded | None]] = []
        self.calls = 0

    def decode(self, items: list[tuple[str, str, Any]]) -> list[common.Decoded]:
        """Greedy action decodes for ``(step_id, guide, image)`` with the trainer's current policy."""
        import contextlib

        import torch
        from trl.models import unwrap_model_for_generation

        t = self.trainer
        processor = t.processing_class
        prompts = [common.prompt_text(processor, self.steps[sid], self.view, "JG") for sid, _, _ in items]
        prefixes = [common.guide_prefix(g) for _, g, _ in items]
        images = [im for _, _, im in items]
        out: list[common.Decoded] = []
        # Every rank enters this context on every call (even with nothing to decode): under
        # ZeRO-3 / FSDP it gathers the sharded weights collectively (keep
        # ds3_gather_for_generation true, the default, so generate itself is rank-local).
        dist = getattr(t, "_dist", None)
        full_params = (dist.summon_full_params(t.model_wrapped, recurse=False) if dist is not None
                       else contextlib.nullcontext())
        with unwrap_model_for_generation(
            t.model_wrapped, t.accelerator, gather_deepspeed3_params=t.args.ds3_gather_for_generation,
            gradient_checkpointing_kwargs=t.args.gradient_checkpointing_kwargs,
        ) as model, torch.no_grad(), full_params:
            for i in range(0, len(items), self.batch_size):
                sl = slice(i, i + self.batch_size)
                out += common.greedy_generate(model, processor, prompts[sl], images[sl], prefixes[sl],
                                              self.max_new_tokens)
        return out

    def __call__(self, prompts: list, completions: list, step_id: list[str], image: list | None = None,
                 log_extra: Any = None, **kwargs: Any) -> list[float]:
        from mag_dataset.parsing import parse_output
        from mag_dataset.scoring import score_step

        if self.trainer is None:
            raise RuntimeError("MediatedReward.trainer must be set before training")
        self.calls += 1
        guides = []
        for c in completions:
            parsed = parse_output(_completion_text(c), self.view, "JG")
            guides.append(parsed.guide if parsed.ok and parsed.guide else None)
        todo = [(i, sid, g, image[i]) for i, (sid, g) in enumerate(zip(step_id, guides)) if g is not None]
        decoded = self.decode([(sid, g, im) for _, sid, g, im in todo])
        by_index = {i: d for (i, *_), d in zip(todo, decoded)}
        rewards, self.last = [], []
        for i, sid in enumerate(step_id):
            d = by_index.get(i)
            self.last.append((sid, d))
            if d is None:
                rewards.append(0.0)
                continue
            saa = score_step(d.text, self.steps[sid], self.view, "JG").saa
            rewards.append(float(saa or 0.0))
        if log_extra is not None:
            log_extra("mediated_action", [d.generated if d is not None else "" for _, d in self.last])
        return rewards


def make_trainer_class() -> type:
    """``GRPOTrainer`` that can put one expert (gold) completion in each group."""
    from trl import GRPOTrainer

    class MagGRPOTrainer(GRPOTrainer):
        expert_texts: dict[str, str] | None = None  # step id -> gold answer; None disables mixing
        expert_rows: list[int] = []

        def _generate_and_score_completions(self, inputs):
            self._mag_step_ids = [x["step_id"] for x in inputs]
            return super()._generate_and_score_completions(inputs)

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs):
            completion_ids, logprobs = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs)
            if not self.expert_texts or not self.model.training:
                return completion_ids, logprobs
            ids = self._mag_step_ids
            tok = self.processing_class.tokenizer
            eos = tok.convert_tokens_to_ids("<|im_end|>")
            rows = [i for i in range(len(ids)) if i == 0 or ids[i] != ids[i - 1]]  # first row of each group
            for i in rows:
                gold = tok(self.expert_texts[ids[i]], add_special_tokens=False)["input_ids"] + [eos]
                completion_ids[i] = gold
                if logprobs is not None:  # off-policy rows: no sampling log-probs (see checks at init)
                    logprobs[i] = [0.0] * len(gold)
            self.expert_rows = rows
            return completion_ids, logprobs

    return MagGRPOTrainer


def train(
    script_args: GRPOScriptArguments,
    training_args: Any,
    model_args: Any,
    examples: Sequence[common.Example] | None = None,
) -> Any:
    """Build the trainer for the chosen arm, train, save; returns the trainer.

    Args:
        script_args: data, arm, expert mixing, reward decoding budget.
        training_args: a TRL ``GRPOConfig`` (``beta: 0`` for no KL; one update per
            generation batch: ``num_iterations: 1`` and ``steps_per_generation`` equal to
            ``gradient_accumulation_steps``).
        model_args: a TRL ``ModelConfig``.
        examples: the candidate train steps (default: loaded from ``script_args.dataset``).
    """
    from trl import get_peft_config

    from mag_dataset.cli import UserError
    from mag_dataset.prompts import render_target

    if script_args.arm not in ARMS:
        raise UserError(f"unknown arm {script_args.arm!r}; choose one of {sorted(ARMS)}")
    view, contract = common.view_and_contract(script_args.view, ARMS[script_args.arm])
    from_dataset = examples is None
    if from_dataset:
        examples = common.load_examples(script_args.dataset, view, script_args.split)
    chosen = select_prompts(examples, script_args.num_prompts, script_args.prompt_seed)
    if not chosen:
        raise UserError("no element-scored train steps to build prompts from")
    steps = {e.step.step_id: e.step for e in chosen}
    if script_args.mix_expert and training_args.use_vllm and training_args.vllm_importance_sampling_correction:
        raise UserError("--mix_expert with vLLM needs vllm_importance_sampling_correction: false "
                        "(expert rows have no sampling log-probs)")
    training_args.chat_template_kwargs = dict(common.CHAT_TEMPLATE_KWARGS)
    if script_args.arm == "mediated":
        reward: Any = MediatedReward(steps, view.value, script_args.reward_max_new_tokens,
                                     script_args.reward_batch_size)
    else:
        reward = ActionReward(steps, view.value, contract.value)
    from baselines.sft import load_model

    model, processor = load_model(model_args, training_args)
    trainer_cls = make_trainer_class()
    trainer = trainer_cls(
        model=model,
        reward_funcs=[reward],
        args=training_args,
        train_dataset=grpo_dataset(chosen, view, contract),
        processing_class=processor,
        peft_config=get_peft_config(model_args),
    )
    if script_args.mix_expert:
        trainer.expert_texts = {sid: render_target(s, view, contract) for sid, s in steps.items()}
    if isinstance(reward, MediatedReward):
        reward.trainer = trainer
    trainer.train()
    trainer.save_model(training_args.output_dir)
    if trainer.accelerator.is_main_process:
        processor.save_pretrained(training_args.output_dir)
        atomic_write_json(Path(training_args.output_dir) / "mag_grpo_run.json", {
            "kind": "mag-grpo-run",
            "script": asdict(script_args),
            "dataset_revision": common.dataset_revision(script_args.dataset) if from_dataset else None,
            "contract": contract.value,
            "model": model_args.model_name_or_path,
            "prompts": len(chosen),
            "global_steps": trainer.state.global_step,
            "beta": training_args.beta,
            "num_generations": training_args.num_generations,
            "seed": training_args.seed,
            "environment": common.environment(),
        })
    return trainer


def main(argv: Sequence[str] | None = None) -> int:
    from trl import GRPOConfig, ModelConfig

    from mag_dataset.cli import UserError

    script_args, training_args, model_args = common.parse_args([GRPOScriptArguments, GRPOConfig, ModelConfig], argv)
    try:
        train(script_args, training_args, model_args)
    except UserError as e:
        print(f"mg_grpo: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
