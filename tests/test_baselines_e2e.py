"""End to end on a real built dataset: sft (CLI) -> infer (CLI) -> `mag score` accepts the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
pytest.importorskip("trl")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, infer, sft  # noqa: E402


def test_sft_infer_score_through_the_command_lines(built, tiny_vlm, tmp_path, capsys):
    from mag_dataset.cli import main as mag
    from mag_dataset.dataset import load_steps

    ckpt = tmp_path / "ckpt"
    rc = sft.main([
        "--dataset", str(built), "--view", "som", "--contract", "JG", "--limit", "4",
        "--model_name_or_path", str(tiny_vlm), "--dtype", "float32", "--output_dir", str(ckpt),
        "--max_steps", "1", "--per_device_train_batch_size", "2", "--bf16", "false",
        "--activation_checkpointing", "false", "--use_cpu", "true", "--report_to", "none",
        "--save_strategy", "no", "--dataloader_num_workers", "0",
    ])
    assert rc == 0 and (ckpt / "model.safetensors").exists()
    run = json.loads((ckpt / "mag_sft_run.json").read_text())
    assert run["train_steps"] == 4 and run["global_steps"] == 1

    test_steps = load_steps(built, "som", "test")
    assert len(test_steps) >= 10
    preds = tmp_path / "preds.jsonl"
    rc = infer.main(["--model_name_or_path", str(ckpt), "--dataset", str(built), "--view", "som",
                     "--contract", "JG", "--output", str(preds), "--max_new_tokens", "6", "--batch_size", "16",
                     "--progress", "false", "--device", "cpu", "--seed", "0"])
    assert rc == 0
    lines = preds.read_text().splitlines()
    assert [json.loads(x)["step_id"] for x in lines] == [s.step_id for s in test_steps]
    prov = json.loads(common.provenance_path(preds).read_text())
    assert prov["dataset"] == str(built) and prov["steps"] == len(test_steps)

    report = tmp_path / "report.json"
    rc = mag(["score", "--predictions", str(preds), "--dataset", str(built), "--view", "som",
              "--contract", "JG", "--out", str(report)])
    assert rc == 0, capsys.readouterr().err
    data = json.loads(report.read_text())
    assert data["counts"]["steps"] == len(test_steps)
    assert data["provenance"]["contract"] == "JG" and data["provenance"]["view"] == "som"

    # and the leaderboard store accepts the same file against the same gold
    from mag_dataset.board import Board, BoardConfig

    from mag_dataset.board import SubmissionRejected

    # a one-step random model writes no valid output: the board's integrity rule refuses it by
    # default (format-failure rate), and a board configured to take any rate stores it
    board = Board(BoardConfig(data_dir=tmp_path / "board", gold=str(built)))
    with pytest.raises(SubmissionRejected, match="fail the format gate of view som, contract JG"):
        board.submit(data=preds.read_bytes(), filename="preds.jsonl", model_name="tiny-sft", view="som", contract="JG")
    board = Board(BoardConfig(data_dir=tmp_path / "board-any", gold=str(built), max_format_failure_rate=1.0))
    sub = board.submit(data=preds.read_bytes(), filename="preds.jsonl", model_name="tiny-sft",
                       view="som", contract="JG")
    assert sub.file_sha256 == common.sha256_file(preds) and sub.contract == "JG"


def test_load_examples_reads_the_view_images(built):
    som = common.load_examples(str(built), "som", "test", limit=3)
    coord = common.load_examples(str(built), "coord", "test", limit=3)
    assert len(som) == len(coord) == 3
    assert [e.step.step_id for e in som] == [e.step.step_id for e in coord]
    assert som[0].image.size == (som[0].step.image_width, som[0].step.image_height)
    assert som[0].step.candidates and not coord[0].step.candidates
    assert som[0].image.tobytes() != coord[0].image.tobytes(), "SoM screenshot differs from the raw one"
