"""baselines.mg_grpo: one GRPO step per arm on a tiny real VLM: the mediated reward (forced,
token-aligned guide prefix), the action-only control from the same JG start, and expert
trajectories mixed off-policy with LUFFY's importance weighting."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
pytest.importorskip("trl")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, mg_grpo  # noqa: E402
from mag_dataset import runners  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402


def _configs(tmp_path, tiny_vlm, name):
    from trl import GRPOConfig, ModelConfig

    targs = GRPOConfig(
        output_dir=str(tmp_path / name), max_steps=1, per_device_train_batch_size=4, num_generations=2,
        max_completion_length=8, beta=0.0, num_iterations=1, bf16=False, activation_checkpointing=False,
        use_cpu=True, report_to="none", save_strategy="no", logging_steps=1, seed=0, dataloader_num_workers=0,
    )
    return targs, ModelConfig(model_name_or_path=str(tiny_vlm), dtype="float32")


def _examples():
    return [common.Example(s, im) for s, im in tiny_steps(4, split="train")]


def _spy_on_forced_decoding(monkeypatch) -> list[str]:
    """Record the text of every sequence the reward's greedy decode feeds to ``model.generate``."""
    fed: list[str] = []
    real = runners.greedy_generate

    def spy(model, processor, prompts, images, prefixes=None, max_new_tokens=256, synced_gpus=None):
        generate = model.generate

        def recording_generate(**kw):
            tok = processor.tokenizer
            for row, mask in zip(kw["input_ids"].tolist(), kw["attention_mask"].tolist()):
                fed.append(tok.decode([t for t, m in zip(row, mask) if m]))
            return generate(**kw)

        model.generate = recording_generate
        try:
            return real(model, processor, prompts, images, prefixes, max_new_tokens, synced_gpus)
        finally:
            del model.generate

    monkeypatch.setattr(runners, "greedy_generate", spy)
    return fed


def test_mediated_reward_one_step_with_expert_mixing(tmp_path, tiny_vlm, monkeypatch):
    # random weights never write a parsable guide: mixing the expert answer into every group (as the
    # expert arm does) gives the mediated reward guides to force
    monkeypatch.setitem(mg_grpo.ARMS, "mediated", mg_grpo.Arm(reward="mediated", expert=True, episodes=False))
    targs, margs = _configs(tmp_path, tiny_vlm, "mg")
    script = mg_grpo.GRPOScriptArguments(arm="mediated", reward_max_new_tokens=6, num_prompts=4)
    fed = _spy_on_forced_decoding(monkeypatch)
    trainer = mg_grpo.train(script, targs, margs, _examples())
    assert trainer.state.global_step == 1
    reward = trainer.reward_funcs[0]
    assert isinstance(reward, mg_grpo.MediatedReward) and reward.calls == 1
    assert len(reward.last) == 4, "2 prompts x 2 generations"
    # expert mixing: the first completion of each group is the gold answer, so its guide is the gold one
    assert trainer.expert_rows == [0, 2]
    assert trainer.expert_loss_calls >= 1, "the expert rows went through the LUFFY-weighted loss"
    gold = {e.step.step_id: e.step.guide for e in _examples()}
    forced = [(sid, d) for sid, d in reward.last if d is not None]
    assert len(forced) >= 2
    for row in trainer.expert_rows:
        sid, d = reward.last[row]
        assert d is not None and d.prefix == common.guide_prefix(gold[sid])
    for sid, d in forced:  # what the reward decoded starts with the forced guide prefix
        assert d.text.startswith(d.prefix) and d.prefix.startswith('{"guide": ')
        assert d.prefix.endswith('"action":')
    # ... and that prefix really was in the model's input: each forced decode's input ends with the
    # chat template's generation prompt followed by the prefix (not merely glued on afterwards)
    assert len(fed) == len(forced) and reward.decode_calls == 1
    for text, (sid, d) in zip(fed, forced):
        assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n" + d.prefix), (sid, text[-200:])
    logs = [h for h in trainer.state.log_history if "rewards/mediated_saa/mean" in h]
    assert len(logs) == 1
    meta = json.loads((Path(targs.output_dir) / "mag_grpo_run.json").read_text())
    assert meta["contract"] == "JG" and meta["beta"] == 0.0 and meta["arm"]["expert"] is True


def test_action_only_control_arm_starts_from_jg_and_scores_the_sampled_action(tmp_path, tiny_vlm, monkeypatch):
    targs, margs = _configs(tmp_path, tiny_vlm, "ctl")
    script = mg_grpo.GRPOScriptArguments(arm="action_only", num_prompts=None, dataset="org/some-dataset")
    # the steps come "from the dataset" (no examples passed): the run records the dataset's revision
    monkeypatch.setattr(common, "load_examples", lambda dataset, view, split, limit=None: _examples())
    monkeypatch.setattr(common, "dataset_revision", lambda dataset: f"rev-of-{dataset}")
    trainer = mg_grpo.train(script, targs, margs)
    assert trainer.state.global_step == 1
    reward = trainer.reward_funcs[0]
    assert isinstance(reward, mg_grpo.ActionReward) and reward.contract == "JG"
    assert any("rewards/action_saa/mean" in h for h in trainer.state.log_history)
    assert trainer.expert_rows == [] and trainer.expert_loss_calls == 0
    # the prompts are the JG prompts of the supervised start, not contract A's
    assert trainer.train_dataset[0]["prompt"] == mg_grpo.grpo_dataset(_examples()[:1], "som", "JG")[0]["prompt"]
    meta = json.loads((Path(targs.output_dir) / "mag_grpo_run.json").read_text())
    assert meta["contract"] == "JG" and meta["dataset_revision"] == "rev-of-org/some-dataset"


def test_action_reward_scores_the_sampled_jg_action_not_the_guide():
    from mag_dataset.prompts import action_object, render_output

    a, b = (e.step for e in _examples()[:2])
    reward = mg_grpo.ActionReward({a.step_id: a}, "som", "JG")
    completions = [render_output(action_object(a.action, "som"), b.guide, "JG"),  # right action, wrong guide
                   render_output(action_object(b.action, "som"), a.guide, "JG"),  # wrong action, right guide
                   render_output(action_object(a.action, "som"), a.guide, "A")]   # wrong contract: gate fails
    assert reward(prompts=[None] * 3, completions=completions, step_id=[a.step_id] * 3) == [1.0, 0.0, 0.0]


def test_expert_trajectories_arm_one_step_on_whole_episodes(tmp_path, tiny_vlm):
    targs, margs = _configs(tmp_path, tiny_vlm, "expert")
    script = mg_grpo.GRPOScriptArguments(arm="expert_trajectories", num_prompts=1, prompt_seed=0)
    trainer = mg_grpo.train(script, targs, margs, _examples())
    assert trainer.state.global_step == 1
    assert isinstance(trainer.reward_funcs[0], mg_grpo.ActionReward)
    assert trainer.expert_rows == [0, 2] and trainer.expert_loss_calls >= 1
    # num_prompts=1 still draws a whole episode: both steps of one task, in order
    ids = [r["step_id"] for r in trainer.train_dataset]
    assert len(ids) == 2 and ids[0].split(":")[0] == ids[1].split(":")[0] and ids == sorted(ids)
    meta = json.loads((Path(targs.output_dir) / "mag_grpo_run.json").read_text())
    assert meta["arm"] == {"reward": "action", "expert": True, "episodes": True} and meta["episodes"] == 1


def test_luffy_surrogate_gradient_is_the_shaped_ratio():
    """d/dtheta of the surrogate = d/dtheta f(pi) with f(p) = p / (p + gamma); its value is log pi."""
    theta = torch_tensor([-0.1, -2.0, -7.0])
    theta.requires_grad_(True)
    mg_grpo.luffy_surrogate(theta, 0.1).sum().backward()
    got = theta.grad.clone()
    theta.grad = None
    p = theta.exp()
    (p / (p + 0.1)).sum().backward()
    assert got.tolist() == pytest.approx(theta.grad.tolist(), rel=1e-5)
    assert mg_grpo.luffy_surrogate(theta, 0.1).tolist() == pytest.approx(theta.tolist())
    # low-probability expert tokens keep a gradient that a clipped ratio of pi (< 1 - eps) would lose
    assert got[2] > 0


def test_expert_arm_refuses_settings_that_break_its_importance_weight(tmp_path, tiny_vlm):
    from mag_dataset.cli import UserError

    targs, margs = _configs(tmp_path, tiny_vlm, "bad")
    targs.num_iterations = 2
    with pytest.raises(UserError, match="one update per generation batch"):
        mg_grpo.train(mg_grpo.GRPOScriptArguments(arm="expert_trajectories"), targs, margs, _examples())


def test_mediated_reward_scores_the_induced_action(monkeypatch):
    """The reward is the SAA of prefix + decoded action; the sampled action is ignored."""
    from mag_dataset.prompts import action_object, render_output

    examples = _examples()[:2]
    steps = {e.step.step_id: e.step for e in examples}
    reward = mg_grpo.MediatedReward(steps, "som")
    reward.trainer = object()

    def fake_decode(items, filler):  # a policy that acts on the element its guide names
        out = []
        for sid, guide, _ in items:
            follow = next(s for s in steps.values() if s.guide == guide)
            prefix = common.guide_prefix(guide)
            full = render_output(action_object(follow.action, "som"), guide, "JG")
            out.append(runners.Decoded(prefix, full[len(prefix):], 1))
        return out

    monkeypatch.setattr(reward, "decode", fake_decode)
    a, b = examples[0].step, examples[1].step
    wrong_action = action_object(b.action, "som")
    completions = [
        [{"role": "assistant", "content": render_output(wrong_action, a.guide, "JG")}],  # a's guide, b's action
        [{"role": "assistant", "content": render_output(action_object(a.action, "som"), b.guide, "JG")}],
        [{"role": "assistant", "content": "no json at all"}],
    ]
    rewards = reward(prompts=[None] * 3, completions=completions, step_id=[a.step_id, a.step_id, a.step_id],
                     image=[None] * 3)
    assert rewards == [1.0, 0.0, 0.0]
    assert reward.last[2] == (a.step_id, None)


def torch_tensor(values):
    import torch

    return torch.tensor(values, dtype=torch.float64)


def test_episode_selection_draws_whole_tasks_in_order():
    examples = [common.Example(s, im) for s, im in tiny_steps(8, split="train")]
    a = mg_grpo.select_episodes(examples, 3, seed=4)
    tasks = [e.step.task_id for e in a]
    assert len(a) == 4 and len(set(tasks)) == 2, "3 steps round up to two whole 2-step episodes"
    for t in set(tasks):
        idx = [e.step.step_index for e in a if e.step.task_id == t]
        assert idx == sorted(idx) == list(range(len(idx)))
    assert [e.step.step_id for e in a] == [e.step.step_id for e in mg_grpo.select_episodes(examples, 3, seed=4)]
    assert len(mg_grpo.select_episodes(examples, None, 0)) == 8


def test_prompt_selection_is_seeded_and_skips_unscored_steps():
    from dataclasses import replace

    examples = [common.Example(s, im) for s, im in tiny_steps(8, split="train")]
    disputed = replace(examples[0].step, audit_status="disputed", disputed=True)
    examples[0] = common.Example(disputed, examples[0].image)
    pool = mg_grpo.select_prompts(examples, None, 0)
    assert len(pool) == 7 and disputed not in [e.step for e in pool]
    a = mg_grpo.select_prompts(examples, 3, 5)
    assert [e.step.step_id for e in a] == [e.step.step_id for e in mg_grpo.select_prompts(examples, 3, 5)]
    assert len(a) == 3


def test_unknown_arm_is_a_user_error(tmp_path, tiny_vlm):
    from mag_dataset.cli import UserError

    targs, margs = _configs(tmp_path, tiny_vlm, "x")
    with pytest.raises(UserError, match="unknown arm 'both'"):
        mg_grpo.train(mg_grpo.GRPOScriptArguments(arm="both"), targs, margs, _examples())
