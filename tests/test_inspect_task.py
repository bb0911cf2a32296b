"""The Inspect AI task (mag_dataset/inspect_task.py) run offline with Inspect's mock model.

The mock answers each sample with the gold rendering or a broken variant; the per-sample
scores and the aggregate micro means Inspect logs must equal what ``mag score``'s scoring
path (:func:`mag_dataset.score_file.score_file`) gives on a predictions file holding
the same outputs, exactly. A spread subset of the bundled test split keeps this fast; the
full split is checked by ``python scripts/inspect_parity.py`` (see the README).
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ContentImage, ContentText, ModelOutput, ModelUsage, get_model  # noqa: E402

import datasets  # noqa: E402

from mag_dataset.dataset import bundled_dataset, load_gold, load_view  # noqa: E402
from mag_dataset.inspect_task import webmre  # noqa: E402
from mag_dataset.prompts import system_prompt, user_text  # noqa: E402
from mag_dataset.score_file import score_file  # noqa: E402
from mag_dataset.scoring import ALL_METRICS  # noqa: E402

SUBSET = 24  # samples per condition, spread over the split


def variant(gold: str, k: int) -> str:
    """The k-th kind of output for a step: gold, or a way of being wrong."""
    kind = k % 6
    if kind == 0:
        return gold
    if kind == 1:
        return "Sorry, I cannot help with that."
    if kind == 2:  # well-formed but wrong target / text, and an off guide
        d = json.loads(gold)
        action = d.get("action") or {}
        if "element" in action:
            action["element"] = "99999"
        elif "coordinate" in action:
            action["coordinate"] = [1, 1]
        elif "text" in action:
            action["text"] = "zzz"
        if "guide" in d:
            d["guide"] = "Scroll down a little."
        return json.dumps(d)
    if kind == 3:
        return gold[: len(gold) // 2]
    if kind == 4:
        return f"```json\n{gold}\n```"
    return "x" * 20_000


def run_eval(*args, **kwargs):
    """``inspect_ai.eval`` in a thread of its own: it runs an asyncio loop, and an earlier test in
    this pytest worker (Playwright's sync API, BrowserGym) may leave a loop running on the main
    thread ("Runner.run() cannot be called from a running event loop")."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(inspect_eval, *args, **kwargs).result()


def _key(messages) -> str:
    user = messages[-1]
    image = next(p.image for p in user.content if isinstance(p, ContentImage))
    text = "".join(p.text for p in user.content if isinstance(p, ContentText))
    return hashlib.sha256((text + "\0" + image).encode()).hexdigest()


def run_condition(view: str, contract: str, tmp_path):
    task = webmre(view=view, contract=contract)
    samples = list(task.dataset)
    steps = load_gold("bundled", view, "test")
    assert len(samples) == len(steps) > SUBSET  # sizes come from the data
    stride = len(samples) // SUBSET
    chosen = samples[::stride][:SUBSET]
    answers, expected_system = {}, system_prompt(view, contract)
    for k, s in enumerate(chosen):
        # same prompt and screenshot as an earlier sample: the same answer, as a model would give
        answers.setdefault(_key(s.input), variant(s.target, k))
        assert s.input[0].text == expected_system  # the library's locked prompt
        assert s.input[1].content[1].text == user_text(steps.steps[samples.index(s)], view)
    # the image content is this view's screenshot, byte for byte
    rows = load_view(bundled_dataset(), view, "test").cast_column("screenshot", datasets.Image(decode=False))
    image = chosen[1].input[1].content[0].image
    assert base64.b64decode(image.split(",", 1)[1]) == rows[samples.index(chosen[1])]["screenshot"]["bytes"]
    seen = []

    def respond(messages, tools, tool_choice, config):
        assert config.temperature == 0  # greedy
        seen.append(_key(messages))
        out = ModelOutput.from_content("mockllm/model", answers[_key(messages)])
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer download
        return out

    log, = run_eval(
        task, model=get_model("mockllm/model", custom_outputs=respond), sample_id=[s.id for s in chosen],
        log_dir=str(tmp_path / "logs"), display="none", max_samples=8,
    )
    assert log.status == "success", log.error
    assert len(seen) == len(chosen) and set(seen) == set(answers)  # one generation per chosen sample
    return log, chosen, steps


@pytest.mark.parametrize("view,contract", [("som", "J"), ("coord", "J")])
def test_inspect_scores_equal_mag_score(view, contract, tmp_path):
    log, chosen, steps = run_condition(view, contract, tmp_path)
    assert len(log.samples) == SUBSET
    outputs = {s.id: s.output.completion for s in log.samples}
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"step_id": sid, "output": o, "seed": 0}) + "\n" for sid, o in outputs.items()))
    ids = {s.id for s in chosen}
    report = score_file(preds, steps.subset(ids), view, contract, keep_steps=True)  # the coord gold has its menus
    per_step = {sc.step_id: sc for sc in report.steps}
    for s in log.samples:
        score = s.scores["webmre_scorer"]
        # the metrics that apply to the step (Inspect's reducers never see a None); the whole step score in metadata
        assert score.value == {name: v for name in ALL_METRICS if (v := per_step[s.id].metric(name)) is not None}, s.id
        assert score.metadata["step_score"] == per_step[s.id].to_dict(), s.id
    metrics = log.results.scores[0].metrics
    expected = {name: report.value(name) for name in ALL_METRICS if report.value(name) is not None}
    assert {name: m.value for name, m in metrics.items()} == expected
    # the outputs were mixed, so the check is not vacuous
    assert 0 < expected["ofcr"] < 1 and 0 < expected["saa"] < 1
    if view == "coord":  # the som menus reached the scorer: consistency is computed in the coord view
        assert "guide_action_consistency" in expected
    assert log.eval.task == f"webmre_{view}_{contract}"
    assert log.eval.headline_metric.metric == "saa" and log.results.headline.metric == "saa"


@pytest.mark.parametrize("contract", ["J", "G"])
def test_a_full_run_logs_no_conversion_warning_and_finds_the_headline_from_the_start(contract, tmp_path):
    """Every sample of the bundled test split, answered half well-formed and half junk: metrics
    that do not apply to a step never reach Inspect's epoch reducer ("Unable to convert value to
    float: None", once per such value and sample), and the running metrics Inspect computes
    after the first samples already hold the headline ("Headline metric ... not found")."""
    import logging

    import inspect_ai.log._headline as headline_module
    import inspect_ai.scorer._metric as metric_module

    from mag_dataset.scoring import HEADLINE_METRIC

    logged: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record.getMessage())

    task = webmre(view="som", contract=contract)
    n = len(task.dataset)
    answers = iter([json.dumps({"action": {"type": "click", "element": "3"}, "guide": "Click the first link."}),
                    "no idea"] * n)

    def respond(messages, tools, tool_choice, config):
        out = ModelOutput.from_content("mockllm/model", next(answers))
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    handler = Keep(level=logging.WARNING)
    loggers = (metric_module.logger, headline_module.logger)
    for lg in loggers:
        lg.addHandler(handler)
    try:
        log, = run_eval(task, model=get_model("mockllm/model", custom_outputs=respond),
                        log_dir=str(tmp_path / "logs"), display="none", max_samples=16)
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
    assert log.status == "success" and len(log.samples) == n > 100
    assert [m for m in logged if "convert value to float" in m or "Headline" in m] == []
    assert log.results.headline.metric == HEADLINE_METRIC[contract]
    if contract == "J":  # a metric that does not apply was left out: some steps lack one that others have
        keys = {frozenset(s.scores["webmre_scorer"].value) for s in log.samples}
        assert len(keys) > 1


def test_bad_task_arguments_fail_with_one_line():
    with pytest.raises(ValueError, match="'xyz' is not a valid View"):
        webmre(view="xyz")
    with pytest.raises(ValueError, match="coord_space applies to the coord view only"):
        webmre(view="som", coord_space="norm1000")


def test_several_epochs_are_refused_not_misreported(tmp_path):
    """Inspect's epoch reducers would average the scores (and turn 'not applicable' into 0)."""
    task = webmre(view="som", contract="J")
    outputs = iter(["junk", "more junk"] * 3)

    def respond(messages, tools, tool_choice, config):
        out = ModelOutput.from_content("mockllm/model", next(outputs))
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    log, = run_eval(task, model=get_model("mockllm/model", custom_outputs=respond), limit=3, epochs=2,
                        log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "error" and "scores one epoch per run" in log.error.message


def test_inspect_entry_point_registers_the_task():
    """pyproject's inspect_ai entry point (``inspect eval mag_dataset/webmre``) names a module
    that registers the task, scorer and metric."""
    import importlib
    import tomllib
    from pathlib import Path

    from inspect_ai._util.registry import registry_info

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text("utf-8"))
    eps = meta["project"]["entry-points"]["inspect_ai"]
    assert list(eps) == ["mag_dataset"]  # the package name is the prefix in mag_dataset/webmre
    module = importlib.import_module(eps["mag_dataset"])
    names = {registry_info(getattr(module, n)).name.split("/")[-1] for n in module.__all__}
    assert names == {"webmre", "webmre_scorer", "micro_means"}
