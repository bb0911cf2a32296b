"""WebMRE as an Inspect AI task: the offline protocol run by ``inspect eval``.

WebMRE (arXiv 2609.27353, "Protocol") scores one model output per step of a built dataset
split. This module exposes that as an `Inspect AI <https://inspect.aisi.org.uk>`_ task, so
the benchmark runs under the harness the Hub's verified results and lighteval use::

    pip install "mag_dataset[inspect]"
    inspect eval mag_dataset/webmre -T view=som -T contract=J \\
        --model openai/gpt-4o            # or vllm/..., hf/..., openai-api/<provider>/...

(``mag_dataset/webmre`` comes from the package's ``inspect_ai`` entry point; in the source
tree ``inspect eval mag_dataset/inspect_task.py@webmre`` names the file instead.)

Task parameters (``-T name=value``): ``view`` (``som`` | ``coord``), ``contract``
(``A`` | ``G`` | ``J`` | ``JG``), ``dataset`` (a built folder, a Hub repo id, or
``bundled``, the default: the sample corpus shipped with the package), ``split``
(``test``), ``coord_space`` (coord view: the space the model answers in, as
``mag score --coord-space``), ``max_tokens`` and ``seed``.

* **Samples**: one per step, id = ``step_id``. The input is the library's locked prompt
  (:func:`mag_dataset.prompts.build_messages`): the system message, then the user turn
  with the view's screenshot as image content followed by the step text. The target is
  the gold rendering (:func:`mag_dataset.prompts.render_target`), for reading logs only;
  scoring uses the gold step kept in the sample metadata.
* **Decoding**: greedy (``temperature=0``), one generation per step, one epoch: the scorer
  refuses a second epoch, which Inspect would average into one score per step (another seed
  is another run, ``-T seed=N``; ``mag score`` pools seeds).
* **Scorer** :func:`webmre_scorer`: :func:`mag_dataset.scoring.score_step` on the
  completion (the rules exist once, in :mod:`mag_dataset.scoring`); the score value maps
  each metric that applies to the step to its value (a metric that does not apply is left
  out: Inspect's epoch reducer would log a warning for every such ``None`` and count it as
  0); the whole step score, ``None`` entries included, is the score's ``metadata``.
* **Metric** :func:`micro_means`: :func:`mag_dataset.scoring.aggregate` over the scored
  steps; the micro mean of each metric, rounded as in ``mag score``'s report. The headline
  metric is always present (NaN while it applies to none of the steps scored so far, as in
  Inspect's running display after the first samples), so Inspect finds it from the start.

Per-sample values and the aggregate micro means equal ``mag score`` on a predictions file
holding the same outputs (seed = the task's ``seed``). Judge-rated usefulness needs cached
verdicts and is not computed here (use ``mag score --verdicts``). ``inspect`` itself is an
optional dependency (extra ``inspect``); importing this module without it fails with one
line saying so.
"""

from __future__ import annotations

import base64
from typing import Any

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.log import HeadlineMetric
    from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, ContentImage, ContentText, GenerateConfig
    from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
    from inspect_ai.solver import TaskState, generate
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"mag_dataset.inspect_task needs Inspect AI: pip install 'mag_dataset[inspect]' ({e})") from None

from mag_dataset.actions import Contract, View
from mag_dataset.hub_eval import HEADLINE_METRIC
from mag_dataset.prompts import PROMPT_VERSION, build_messages, render_target
from mag_dataset.scoring import ALL_METRICS, SCORER_VERSION, StepScore, aggregate, score_step

__all__ = ["load_samples", "micro_means", "webmre", "webmre_scorer"]

_MIME = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"RIFF": "image/webp"}


def _data_url(image: dict[str, Any]) -> str:
    raw = image.get("bytes")
    if raw is None and image.get("path"):
        with open(image["path"], "rb") as f:
            raw = f.read()
    if not raw:
        raise ValueError("a row has no screenshot bytes")
    mime = next((m for magic, m in _MIME.items() if raw.startswith(magic)), "image/png")
    return f"data:{mime};base64," + base64.b64encode(raw).decode("ascii")


def _chat_messages(messages: list[dict[str, Any]], image_url: str) -> list[ChatMessage]:
    """The library's transformers-style messages as Inspect messages; ``{"type": "image"}``
    parts become the screenshot."""
    out: list[ChatMessage] = []
    for m in messages:
        parts: list[ContentText | ContentImage] = []
        for p in m["content"]:
            if p["type"] == "image":
                parts.append(ContentImage(image=image_url))
            else:
                parts.append(ContentText(text=p["text"]))
        if m["role"] == "system":
            out.append(ChatMessageSystem(content="".join(p.text for p in parts if isinstance(p, ContentText))))
        elif m["role"] == "user":
            out.append(ChatMessageUser(content=parts))
        else:
            raise ValueError(f"unexpected role {m['role']!r} in the prompt")
    return out


def load_samples(
    dataset: str = "bundled",
    view: View | str = "som",
    contract: Contract | str = "J",
    split: str = "test",
    coord_space: str | None = None,
) -> list[Sample]:
    """One Inspect sample per step of a built dataset split.

    Args:
        dataset: a built folder, a Hub repo id, or ``bundled``.
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        split: ``train`` or ``test``.
        coord_space: coord view: the space the prompt asks for (default screenshot pixels).

    Returns:
        The samples, in the split's stored order; each sample's metadata holds the gold
        record (``gold``: the step and, in the coord view, its som ``menu``, which the
        consistency check reads), what the scorer rebuilds the gold from.
    """
    import datasets

    from mag_dataset.dataset import bundled_dataset, gold_records, load_gold, load_view

    view, contract = View(view), Contract(contract)
    source = str(bundled_dataset()) if dataset == "bundled" else dataset
    gold = load_gold(source, view, split)
    records = {r["step_id"]: r for r in gold_records(gold)}
    ds = load_view(source, view, split).select_columns(["step_id", "screenshot"])
    ds = ds.cast_column("screenshot", datasets.Image(decode=False))
    samples = []
    for row in ds:
        image = row.pop("screenshot")
        step = gold.step(row["step_id"])
        messages = build_messages(step, view, contract, coord_space=coord_space)
        samples.append(Sample(
            id=step.step_id,
            input=_chat_messages(messages, _data_url(image)),
            target=render_target(step, view, contract, coord_space=coord_space),
            metadata={
                "gold": records[step.step_id],
                "task_id": step.task_id,
                "site": step.site,
            },
        ))
    return samples


@scorer(metrics=[])  # the metric is attached by the task, with its view and contract
def webmre_scorer(view: str = "som", contract: str = "J", coord_space: str | None = None, seed: int = 0) -> Scorer:
    """Score a completion with :func:`mag_dataset.scoring.score_step` (the library's rules).

    Args:
        view, contract: the condition.
        coord_space: coord view: the space of the predicted points.
        seed: the seed recorded in each step score (``mag score``'s prediction seed).
    """
    from mag_dataset.dataset import gold_from_records

    async def score(state: TaskState, target: Target) -> Score:
        if state.epoch > 1:  # Inspect would average epochs into one score per step
            raise ValueError(
                "the WebMRE task scores one epoch per run: drop --epochs, and run another seed with "
                "-T seed=N (mag score pools seeds)"
            )
        gold = gold_from_records(view, [state.metadata["gold"]])  # a coord record without its menu is refused
        step = gold.steps[0]
        menu = gold.menu(step.step_id) if gold.menus is not None else None
        output = state.output.completion
        sc = score_step(output, step, view, contract, seed=seed, coord_space=coord_space, menu=menu)
        return Score(
            value={name: v for name in ALL_METRICS if (v := sc.metric(name)) is not None},
            answer=output,
            explanation=sc.reason if not sc.format_ok else sc.error,
            metadata={"step_score": sc.to_dict()},
        )

    return score


@metric
def micro_means(view: str = "som", contract: str = "J") -> Metric:
    """Micro mean of every metric over the scored steps, by :func:`mag_dataset.scoring.aggregate`.

    A metric that applies to no scored step is left out (``None`` in ``mag score``), except the
    contract's headline metric, NaN then: Inspect resolves the task's headline on every running
    update, and one without it logs "Headline metric ... not found".
    """
    from mag_dataset.dataset import step_from_record

    headline = HEADLINE_METRIC[Contract(contract)]

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        steps, step_scores = [], []
        for s in scores:
            # the step scores themselves (the metadata), not the values Inspect's epoch reducer made
            steps.append(step_from_record((s.sample_metadata or {})["gold"]))
            step_scores.append(StepScore(**(s.score.metadata or {})["step_score"]))
        report = aggregate(step_scores, steps, view, contract, bootstrap_resamples=0)
        values = {name: v for name in ALL_METRICS if (v := report.value(name)) is not None}
        values.setdefault(headline, float("nan"))
        return values

    return compute


@task
def webmre(
    view: str = "som",
    contract: str = "J",
    dataset: str = "bundled",
    split: str = "test",
    coord_space: str | None = None,
    max_tokens: int = 512,
    seed: int = 0,
) -> Task:
    """The WebMRE offline benchmark for one view and contract (see the module docstring)."""
    view_, contract_ = View(view), Contract(contract)
    if coord_space is not None and view_ is not View.COORD:
        raise ValueError(f"coord_space applies to the coord view only, not {view_.value}")
    return Task(
        dataset=MemoryDataset(
            load_samples(dataset, view_, contract_, split, coord_space),
            name=f"webmre-{view_.value}-{contract_.value}-{split}",
        ),
        solver=generate(),
        scorer=webmre_scorer(view_.value, contract_.value, coord_space, seed),
        metrics=[micro_means(view_.value, contract_.value)],
        config=GenerateConfig(temperature=0.0, max_tokens=max_tokens, seed=seed),
        epochs=1,
        headline_metric=HeadlineMetric(metric=HEADLINE_METRIC[contract_]),
        name=f"webmre_{view_.value}_{contract_.value}",
        version=f"scorer-{SCORER_VERSION}_prompt-{PROMPT_VERSION}",
        metadata={"dataset": dataset, "split": split, "view": view_.value, "contract": contract_.value},
    )
