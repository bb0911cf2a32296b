"""Every baseline YAML config parses into its script's dataclasses; the accelerate configs load."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo root, for `baselines`

from baselines import api_zero_shot, common, infer, mediation, mg_grpo, paraphrase, sft  # noqa: E402

# config file -> (dataclasses of its script, required flags not in the file)
CONFIGS = {
    "sft_qwen35_4b.yaml": ("sft", ["--output_dir", "runs/x"]),
    "sft_qwen35_9b.yaml": ("sft", ["--output_dir", "runs/x"]),
    "infer.yaml": ("infer", ["--model_name_or_path", "m", "--output", "p.jsonl"]),
    "api_zero_shot.yaml": ("api", ["--model", "gpt", "--output", "p.jsonl"]),
    "mediation.yaml": ("mediation", ["--model_name_or_path", "m", "--output_dir", "out"]),
    "mg_grpo.yaml": ("grpo", ["--model_name_or_path", "m", "--output_dir", "runs/x"]),
}


def _types(kind):
    from trl import GRPOConfig, ModelConfig, SFTConfig

    return {
        "sft": [sft.SFTScriptArguments, SFTConfig, ModelConfig],
        "infer": [infer.InferArguments],
        "api": [api_zero_shot.APIArguments],
        "mediation": [mediation.MediationArguments],
        "grpo": [mg_grpo.GRPOScriptArguments, GRPOConfig, ModelConfig],
        "paraphrase": [paraphrase.ParaphraseArguments],
    }[kind]


def _same(parsed, raw):
    """Equal after the parsers' normalisation (enums, report_to 'none' -> [])."""
    if raw == "none" and parsed == []:
        return True
    return parsed == raw or getattr(parsed, "value", parsed) == raw or str(parsed) == str(raw)


#: configs of other engineers' scripts in the same folder (tested with their scripts)
OTHERS = {"heuristic.yaml"}


def test_every_config_is_covered():
    found = sorted(p.name for p in (ROOT / "baselines" / "configs").glob("*.yaml"))
    assert set(CONFIGS) <= set(found), "a parse test without its file"
    assert set(found) <= set(CONFIGS) | OTHERS, "a config without a parse test"
    assert len(CONFIGS) == 6


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_parses_with_its_script(name, monkeypatch):
    pytest.importorskip("trl")
    kind, extra = CONFIGS[name]
    path = ROOT / "baselines" / "configs" / name
    raw = yaml.safe_load(path.read_text())
    # on this CPU-only machine, bf16 / vLLM are switched off on the command line, as a user would
    extra = list(extra)
    if "bf16" in raw:
        extra += ["--bf16", "false"]
    if raw.get("use_vllm"):
        extra += ["--use_vllm", "false"]
    parsed = common.parse_args(_types(kind), ["--config", str(path), *extra])
    values = {}
    for obj in parsed:
        values.update(vars(obj))
    for key, value in raw.items():
        if key in ("bf16", "use_vllm"):
            continue
        assert key in values, f"{name}: unknown key {key!r}"
        assert _same(values[key], value), (key, values[key], value)
    if kind in ("sft", "grpo", "infer", "mediation", "api"):
        assert values["view"] in ("som", "coord")


def test_sft_configs_are_the_paper_models():
    for size in ("4b", "9b"):
        raw = yaml.safe_load((ROOT / "baselines" / "configs" / f"sft_qwen35_{size}.yaml").read_text())
        assert raw["model_name_or_path"] == f"Qwen/Qwen3.5-{size.upper()}"
        assert raw["packing"] is False and raw["max_length"] is None


def test_grpo_config_is_one_update_per_16_prompt_chunk_without_kl():
    raw = yaml.safe_load((ROOT / "baselines" / "configs" / "mg_grpo.yaml").read_text())
    completions = raw["per_device_train_batch_size"] * raw["gradient_accumulation_steps"]
    assert completions // raw["num_generations"] == 16
    assert raw["steps_per_generation"] == raw["gradient_accumulation_steps"] and raw["num_iterations"] == 1
    assert raw["beta"] == 0.0 and raw["num_prompts"] == 1500


@pytest.mark.parametrize("name", ["zero3.yaml", "fsdp.yaml"])
def test_accelerate_configs_load(name):
    pytest.importorskip("accelerate")
    from accelerate.commands.config.config_args import ClusterConfig

    files = sorted(p.name for p in (ROOT / "baselines" / "accelerate").glob("*.yaml"))
    assert files == ["fsdp.yaml", "zero3.yaml"]
    cfg = ClusterConfig.from_yaml_file(str(ROOT / "baselines" / "accelerate" / name))
    assert str(cfg.distributed_type).endswith("DEEPSPEED" if name == "zero3.yaml" else "FSDP")
    assert cfg.mixed_precision == "bf16" and cfg.num_processes == 8


def test_readme_reproduction_commands_parse_with_their_scripts():
    """Every `-m baselines.X ...` command of the README's reproduction table parses (flags and config)."""
    import re
    import shlex

    pytest.importorskip("trl")
    readme = (ROOT / "baselines" / "README.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in readme.splitlines() if line.startswith("| "))
    commands = re.findall(r"`[^`]*-m baselines\.[^`]*`", table)
    kinds = {"sft": "sft", "infer": "infer", "api_zero_shot": "api", "mediation": "mediation", "mg_grpo": "grpo",
             "paraphrase": "paraphrase"}
    seen = set()
    for span in commands:
        cmd = next(part for part in span.strip("`").split(";") if "-m baselines." in part)
        cmd = cmd.replace("$DS", "bundled").replace("$C", "J").replace("$S", "0")
        cmd = re.sub(r"<[^>]+>", "x", cmd)
        words = shlex.split(cmd)
        module = words[words.index("-m") + 1].split(".", 1)[1]
        argv = words[words.index("-m") + 2:]
        if kinds[module] in ("sft", "grpo"):  # this CPU machine: no bf16, no vLLM (as the config test)
            argv += ["--bf16", "false"] + (["--use_vllm", "false"] if module == "mg_grpo" else [])
        parsed = common.parse_args(_types(kinds[module]), argv)
        values = {k: v for obj in parsed for k, v in vars(obj).items()}
        assert values["dataset"] == "bundled", (module, "the command must pass --dataset $DS")
        seen.add(module)
    assert seen == set(kinds), seen
