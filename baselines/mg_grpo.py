"""Mediated-Guide GRPO, its action-only control, and GRPO with expert trajectories (TRL ``GRPOTrainer``).

Three arms, one recipe; every arm starts from the same supervised guide-first (JG)
checkpoint and samples JG answers (WebMRE reports one supervised start, .436, for both of
its arms):

* ``--arm mediated`` — **Mediated-Guide GRPO** (WebMRE, arXiv 2609.27353): a sampled answer
  is rewarded by the action its *guide* induces. The guide is forced as a decoding prefix
  (:func:`baselines.common.guide_prefix`, token-aligned with the trained answer) for the
  current policy on the frozen observation (same screenshot and prompt), the action is
  decoded greedily, and the reward is the library scorer's step action accuracy (SAA) of
  ``prefix + decoded action``. The sampled action itself is not scored; an answer that
  fails the format gate (no parsable guide) gets 0. The paper trains on 1,500 SoM train
  prompts, one clipped update per 16-prompt chunk per rank, no KL (``beta: 0``): .433 vs
  .429 for the action-only control, no checkpoint above the .436 supervised start.
* ``--arm action_only`` — the paper's **control**: the same JG start and prompts, rewarded
  by the SAA of the *sampled* action (the guide is written but not used by the reward).
* ``--arm expert_trajectories`` — **GRPO with expert trajectories** (MAG, arXiv 2607.10079:
  "a GRPO method augmented with expert trajectories nearly doubles the success rate of a
  supervised 9B agent (6.9% -> 13.2%)"). The MAG description stops there; this arm follows
  the off-policy guidance it builds on, LUFFY ("Learning to Reason under Off-Policy
  Guidance", Yan et al., 2025): the reward is the SAA of the sampled action; the prompts
  are whole *episodes* of the corpus (tasks drawn with the prompt seed, every scored step
  of a drawn task, in order, each prompt carrying the expert's earlier guides as the
  corpus records them); and the expert trajectory's answer at each step (the gold answer,
  :func:`mag_dataset.prompts.render_target`) replaces one of the group's samples. The group's
  advantages are computed over on- and off-policy samples together; the expert tokens get
  LUFFY's regularised importance weight: with the expert's probability taken as 1, the
  ratio is ``pi_theta(token)`` itself, shaped by ``f(p) = p / (p + gamma)``
  (``--expert_gamma``, LUFFY's 0.1) and never clipped, so low-probability expert tokens
  still receive gradient (:func:`luffy_surrogate`). On-policy samples keep the clipped
  GRPO objective. Offline there is no environment to roll the policy's own actions
  forward, so an episode's later prompts show the expert's history; live success is
  measured with ``mag live-eval`` on the trained checkpoint.

Multi-GPU: under ZeRO-3 / FSDP transformers steps ``generate`` in lock-step across ranks
(``synced_gpus``). The mediated reward therefore makes the same number of decode calls on
every rank (the largest count of any rank; a rank with fewer parsable guides decodes a
discarded filler) and always passes ``synced_gpus=True`` when more than one process runs,
so DDP, ZeRO-3 and FSDP2 follow one code path (tested with two CPU processes over gloo).

Launch::

    accelerate launch --config_file baselines/accelerate/zero3.yaml -m baselines.mg_grpo \\
        --config baselines/configs/mg_grpo.yaml \\
        --model_name_or_path runs/sft-qwen35-9b-som-JG-s0 --output_dir runs/mg-grpo-9b
    # control arm (same JG start): --arm action_only --output_dir runs/ctl-9b
    # MAG expert trajectories: --arm expert_trajectories --vllm_importance_sampling_correction false
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from baselines import common
from mag_dataset import runners
from mag_dataset.fileio import atomic_write_json


@dataclass(frozen=True)
class Arm:
    """How one arm is rewarded and which prompts it draws."""

    reward: str  # "mediated" (forced-guide decode) or "action" (SAA of the sampled action)
    expert: bool  # mix the expert trajectory's answer into every group (off-policy, LUFFY weights)
    episodes: bool  # draw whole tasks (episodes) instead of independent steps


#: every arm samples guide-first (JG) answers from the same supervised JG start
CONTRACT = "JG"
ARMS: dict[str, Arm] = {
    "mediated": Arm(reward="mediated", expert=False, episodes=False),
    "action_only": Arm(reward="action", expert=False, episodes=False),
    "expert_trajectories": Arm(reward="action", expert=True, episodes=True),
}


@dataclass
class GRPOScriptArguments:
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som or coord"})
    split: str = field(default="train", metadata={"help": "split the prompts come from"})
    arm: str = field(default="mediated", metadata={"help": "mediated, action_only or expert_trajectories"})
    num_prompts: int | None = field(default=1500, metadata={"help": "train prompts drawn (paper: 1,500); None: all"})
    prompt_seed: int = field(default=0, metadata={"help": "seed of the prompt (or episode) draw"})
    expert_gamma: float = field(default=0.1, metadata={"help": "LUFFY's shaping constant for expert tokens"})
    reward_max_new_tokens: int = field(default=96, metadata={"help": "budget of the forced-prefix action decode"})
    reward_batch_size: int = field(default=16, metadata={"help": "forced-prefix decodes per generate call"})


def select_prompts(examples: Sequence[common.Example], n: int | None, seed: int) -> list[common.Example]:
    """Element-scored steps (SAA applies), then ``n`` of them drawn with ``random.Random(seed)``."""
    import random

    pool = [e for e in examples if e.step.element_scored]
    if n is None or n >= len(pool):
        return pool
    return random.Random(seed).sample(pool, n)


def select_episodes(examples: Sequence[common.Example], n: int | None, seed: int) -> list[common.Example]:
    """Whole expert episodes: tasks drawn with ``random.Random(seed)`` until ``n`` steps are reached.

    Every element-scored step of a drawn task is kept, in step order, so each drawn task
    contributes its full expert trajectory (as far as SAA applies to it).
    """
    import random

    by_task: dict[str, list[common.Example]] = {}
    for e in examples:
        if e.step.element_scored:
            by_task.setdefault(e.step.task_id, []).append(e)
    tasks = sorted(by_task)
    random.Random(seed).shuffle(tasks)
    out: list[common.Example] = []
    for t in tasks:
        if n is not None and len(out) >= n:
            break
        out += sorted(by_task[t], key=lambda e: e.step.step_index)
    return out


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
    ``decode_calls`` counts the ``generate`` calls of the latest reward call (the same on
    every rank).
    """

    __name__ = "mediated_saa"

    def __init__(self, steps: dict[str, Any], view: str, max_new_tokens: int = 96, batch_size: int = 16,
                 menus: dict[str, Any] | None = None):
        # coord: the som menus the JG score needs (:func:`common.gold_for`); None in the som view
        self.steps, self.view, self.menus = steps, view, menus
        self.max_new_tokens, self.batch_size = max_new_tokens, max(1, batch_size)
        self.trainer: Any = None
        self.last: list[tuple[str, runners.Decoded | None]] = []
        self.calls = 0
        self.decode_calls = 0

    def _num_decode_calls(self, n_items: int) -> int:
        """The number of generate calls every rank makes: the largest any rank needs."""
        import torch

        mine = math.ceil(n_items / self.batch_size)
        acc = self.trainer.accelerator
        if acc.num_processes == 1:
            return mine
        return int(acc.gather(torch.tensor([mine], device=acc.device)).max().item())

    def decode(self, items: list[tuple[str, str, Any]], filler: tuple[str, str, Any]) -> list[runners.Decoded]:
        """Greedy action decodes for ``(step_id, guide, image)`` with the trainer's current policy.

        Every rank makes the same number of ``generate`` calls (with ``synced_gpus`` when
        distributed); a rank with fewer items decodes ``filler`` (discarded) for the rest.
        """
        import contextlib

        import torch
        from trl.models import unwrap_model_for_generation

        t = self.trainer
        processor = t.processing_class
        n_calls = self._num_decode_calls(len(items))
        synced = True if t.accelerator.num_processes > 1 else None
        out: list[runners.Decoded] = []
        # Every rank enters this context on every call (even with nothing to decode): under
        # ZeRO-3 / FSDP it gathers the sharded weights collectively.
        dist = getattr(t, "_dist", None)
        full_params = (dist.summon_full_params(t.model_wrapped, recurse=False) if dist is not None
                       else contextlib.nullcontext())
        with unwrap_model_for_generation(
            t.model_wrapped, t.accelerator, gather_deepspeed3_params=t.args.ds3_gather_for_generation,
            gradient_checkpointing_kwargs=t.args.gradient_checkpointing_kwargs,
        ) as model, torch.no_grad(), full_params:
            for k in range(n_calls):
                part = items[k * self.batch_size : (k + 1) * self.batch_size]
                batch = part or [filler]
                decoded = runners.greedy_generate(
                    model, processor,
                    [runners.prompt_text(processor, self.steps[sid], self.view, CONTRACT) for sid, _, _ in batch],
                    [im for _, _, im in batch], [common.guide_prefix(g) for _, g, _ in batch],
                    self.max_new_tokens, synced_gpus=synced)
                out += decoded if part else []
        self.decode_calls = n_calls
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
            parsed = parse_output(_completion_text(c), self.view, CONTRACT)
            guides.append(parsed.guide if parsed.ok and parsed.guide else None)
        todo = [(i, sid, g, image[i]) for i, (sid, g) in enumerate(zip(step_id, guides)) if g is not None]
        filler = (step_id[0], self.steps[step_id[0]].guide, image[0])
        decoded = self.decode([(sid, g, im) for _, sid, g, im in todo], filler)
        by_index = {i: d for (i, *_), d in zip(todo, decoded)}
        rewards, self.last = [], []
        for i, sid in enumerate(step_id):
            d = by_index.get(i)
            self.last.append((sid, d))
            if d is None:
                rewards.append(0.0)
                continue
            menu = None if self.menus is None else self.menus[sid]
            saa = score_step(d.text, self.steps[sid], self.view, CONTRACT, menu=menu).saa
            rewards.append(float(saa or 0.0))
        if log_extra is not None:
            log_extra("mediated_action", [d.generated if d is not None else "" for _, d in self.last])
        return rewards


def luffy_surrogate(logps: Any, gamma: float) -> Any:
    """Per-token log-probabilities whose gradient is LUFFY's shaped off-policy gradient.

    LUFFY weights an off-policy token by ``f(r) = r / (r + gamma)`` of its importance ratio
    ``r = pi_theta / pi_expert`` with ``pi_expert = 1``, without clipping. GRPO's loss uses
    ``exp(logp - logp.detach()) * A``; feeding it this surrogate, whose value is ``logp`` and
    whose gradient is ``f'(p) * p * grad(logp) = grad f(p)``, makes the expert tokens'
    gradient ``-A * grad f(pi_theta)`` while the ratio's value stays 1 (inside the clip range,
    so never clipped).

    Args:
        logps: per-token log-probabilities under the current policy (with grad).
        gamma: LUFFY's shaping constant (0.1 in the paper).
    """
    p = logps.detach().exp()
    weight = gamma * p / (p + gamma) ** 2  # d f(p) / d log p
    return logps.detach() + weight * (logps - logps.detach())


def make_trainer_class() -> type:
    """``GRPOTrainer`` that can mix the expert trajectory's answer into each group (off-policy, LUFFY)."""
    import torch
    from trl import GRPOTrainer

    class MagGRPOTrainer(GRPOTrainer):
        expert_texts: dict[str, str] | None = None  # step id -> expert answer; None disables mixing
        expert_gamma: float = 0.1
        expert_rows: list[int] = []
        expert_loss_calls: int = 0

        def _generate_and_score_completions(self, inputs):
            self._mag_step_ids = [x["step_id"] for x in inputs]
            self.expert_rows = []
            output = super()._generate_and_score_completions(inputs)
            mask = torch.zeros(len(inputs), dtype=torch.bool, device=output["advantages"].device)
            mask[self.expert_rows] = True
            output["mag_expert"] = mask
            return output

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
                if logprobs is not None:  # the expert's probability is taken as 1 (LUFFY)
                    logprobs[i] = [0.0] * len(gold)
            self.expert_rows = rows
            return completion_ids, logprobs

        def _compute_loss(self, model, inputs):
            expert = inputs.get("mag_expert")
            if expert is None or not bool(expert.any()):
                return super()._compute_loss(model, inputs)
            real = self._get_per_token_logps_and_entropies
            gamma = self.expert_gamma

            def shaped(*a: Any, **k: Any) -> Any:
                logps, entropies, aux = real(*a, **k)
                logps = torch.where(expert[:, None], luffy_surrogate(logps, gamma), logps)
                return logps, entropies, aux

            self._get_per_token_logps_and_entropies = shaped  # this call only
            try:
                self.expert_loss_calls += 1
                return super()._compute_loss(model, inputs)
            finally:
                del self._get_per_token_logps_and_entropies

    return MagGRPOTrainer


def _checked_arm(script_args: GRPOScriptArguments, training_args: Any) -> Arm:
    """The chosen arm, after refusing the settings it cannot train with.

    Raises:
        mag_dataset.errors.UserError: an unknown arm, or (expert arm) vLLM importance-sampling
            correction, more than one update per generation batch, or ``expert_gamma <= 0``.
    """
    from mag_dataset.errors import UserError

    if script_args.arm not in ARMS:
        raise UserError(f"unknown arm {script_args.arm!r}; choose one of {sorted(ARMS)}")
    arm = ARMS[script_args.arm]
    if arm.expert:
        if training_args.use_vllm and training_args.vllm_importance_sampling_correction:
            raise UserError("--arm expert_trajectories with vLLM needs vllm_importance_sampling_correction: false "
                            "(expert tokens carry their own LUFFY importance weight)")
        if training_args.num_iterations != 1 or training_args.gradient_accumulation_steps % (
                training_args.steps_per_generation or training_args.gradient_accumulation_steps):
            raise UserError("--arm expert_trajectories needs one update per generation batch (num_iterations: 1, "
                            "steps_per_generation dividing gradient_accumulation_steps): the expert tokens' "
                            "importance weight is taken against the policy that generated the batch")
        if not script_args.expert_gamma > 0:
            raise UserError(f"expert_gamma must be > 0, got {script_args.expert_gamma}")
    return arm


def _write_run_record(trainer: Any, script_args: GRPOScriptArguments, training_args: Any, model_args: Any, arm: Arm,
                      contract: Any, chosen: Sequence[common.Example], from_dataset: bool) -> None:
    """``mag_grpo_run.json`` beside the saved model: the arm, data, sizes and environment of the run."""
    atomic_write_json(Path(training_args.output_dir) / "mag_grpo_run.json", {
        "kind": "mag-grpo-run",
        "script": asdict(script_args),
        "arm": asdict(arm),
        "dataset_revision": common.dataset_revision(script_args.dataset) if from_dataset else None,
        "contract": contract.value,
        "model": model_args.model_name_or_path,
        "prompts": len(chosen),
        "episodes": len({e.step.task_id for e in chosen}),
        "global_steps": trainer.state.global_step,
        "beta": training_args.beta,
        "num_generations": training_args.num_generations,
        "processes": trainer.accelerator.num_processes,
        "seed": training_args.seed,
        "environment": common.environment(),
    })


def train(
    script_args: GRPOScriptArguments,
    training_args: Any,
    model_args: Any,
    examples: Sequence[common.Example] | None = None,
) -> Any:
    """Build the trainer for the chosen arm, train, save; returns the trainer.

    Args:
        script_args: data, arm, reward decoding budget.
        training_args: a TRL ``GRPOConfig`` (``beta: 0`` for no KL; one update per
            generation batch: ``num_iterations: 1`` and ``steps_per_generation`` equal to
            ``gradient_accumulation_steps``).
        model_args: a TRL ``ModelConfig`` (the supervised JG checkpoint, for every arm).
        examples: the candidate train steps (default: loaded from ``script_args.dataset``).
    """
    from trl import get_peft_config

    from mag_dataset.errors import UserError
    from mag_dataset.prompts import render_target

    arm = _checked_arm(script_args, training_args)
    view, contract = common.view_and_contract(script_args.view, CONTRACT)
    from_dataset = examples is None
    if from_dataset:
        examples = common.load_examples(script_args.dataset, view, script_args.split)
    select = select_episodes if arm.episodes else select_prompts
    chosen = select(examples, script_args.num_prompts, script_args.prompt_seed)
    if not chosen:
        raise UserError("no element-scored train steps to build prompts from")
    steps = {e.step.step_id: e.step for e in chosen}
    training_args.chat_template_kwargs = dict(runners.CHAT_TEMPLATE_KWARGS)
    if arm.reward == "mediated":
        menus = common.gold_for(list(steps.values()), view, script_args.dataset, script_args.split).menus
        reward: Any = MediatedReward(steps, view.value, script_args.reward_max_new_tokens,
                                     script_args.reward_batch_size, menus=menus)
    else:
        reward = ActionReward(steps, view.value, contract.value)
    from baselines.sft import load_model

    model, processor = load_model(model_args, training_args)
    if arm.reward == "mediated":
        common.check_guide_prefix_alignment(processor.tokenizer, chosen[0].step, view)
    trainer_cls = make_trainer_class()
    trainer = trainer_cls(
        model=model,
        reward_funcs=[reward],
        args=training_args,
        train_dataset=grpo_dataset(chosen, view, contract),
        processing_class=processor,
        peft_config=get_peft_config(model_args),
    )
    if arm.expert:
        trainer.expert_texts = {sid: render_target(s, view, contract) for sid, s in steps.items()}
        trainer.expert_gamma = script_args.expert_gamma
    if isinstance(reward, MediatedReward):
        reward.trainer = trainer
    trainer.train()
    trainer.save_model(training_args.output_dir)
    if trainer.accelerator.is_main_process:
        processor.save_pretrained(training_args.output_dir)
        _write_run_record(trainer, script_args, training_args, model_args, arm, contract, chosen, from_dataset)
    return trainer


def main(argv: Sequence[str] | None = None) -> int:
    from trl import GRPOConfig, ModelConfig

    from mag_dataset.errors import UserError

    script_args, training_args, model_args = common.parse_args([GRPOScriptArguments, GRPOConfig, ModelConfig], argv)
    try:
        train(script_args, training_args, model_args)
    except UserError as e:
        print(f"mg_grpo: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
