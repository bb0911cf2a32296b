"""WebMRE metric: the deterministic offline scorer of the WebMRE / MAG benchmark.

This module is a thin ``evaluate`` wrapper: ``_compute`` calls
:func:`mag_dataset.scoring.score_predictions`, which holds the only copy of the rules.
"""

import json

import datasets
import evaluate

from mag_dataset.actions import Contract, View
from mag_dataset.dataset import gold_from_records, step_from_record
from mag_dataset.predictions import Prediction
from mag_dataset.scoring.gold import menus_needed
from mag_dataset.scoring import EXTENSION_METRICS, METRIC_NAMES, METRIC_TABLE, SCORER_VERSION, score_predictions
from mag_dataset.verdicts import read_usefulness_verdicts

_CITATION = """\
@article{webmre2026,
  title   = {Guides That Cause Actions: An Offline Study of Guide-Action Mutual Reinforcement in Multimodal Web Agents},
  journal = {arXiv preprint arXiv:2609.27353},
  year    = {2026}
}
@article{mag2026,
  title   = {MAG: A Web-Agent Benchmark and Harness for Multimodal Action and Guide Generation},
  journal = {arXiv preprint arXiv:2607.10079},
  year    = {2026}
}
"""

_DESCRIPTION = """\
Scores raw model outputs of a web guide agent against WebMRE gold steps, with no
environment and no live judge: the same inputs always give the same numbers.

Each output must be one JSON object in the output contract (A: "action"; G: "guide";
J: "action" then "guide"; JG: "guide" then "action"); outputs that fail this format gate
count in every denominator and score 0. Metrics (each declared once, with its exact rule, in
mag_dataset.scoring.METRIC_TABLE): {metrics}; extensions, not metrics of the papers:
{extensions}.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): raw model outputs, one per reference, exactly as generated.
    references (list of dict): gold records, one per step, from
        ``mag_dataset.dataset.gold_records(load_gold(source, view, split))`` (no images;
        in the coord view each carries its step's som ``menu``, which the consistency
        extension reads); their JSON strings are accepted too. Records of a bare dataset
        split (``gold_records(load_view(...))``) do in the som view, and in the coord view
        under A and G; coord records without menus under J or JG are refused.
    view (str): "som" or "coord". Default "som".
    contract (str): "A", "G", "J" or "JG". Default "J".
    judges (str, optional): path of a cached judge-verdict JSONL file; enables usefulness.
    coord_space (str, optional): coord view: the points' space (pixels, norm1000, norm1,
        resized:WxH); converted to screenshot pixels before scoring.

Returns:
    dict: the full report: top-level keys {metric_keys} (each with micro, macro, n,
    n_tasks, std, ci95, per_seed), then extensions ({extension_keys}: not metrics of
    the papers), counts (with the error taxonomy), breakdowns, provenance and warnings.
    Metrics that do not apply are None.

Examples:
    Gold answers rendered in a contract score 1.0 on every applicable metric:

    >>> import evaluate
    >>> from mag_dataset.dataset import bundled_dataset, gold_records, load_view, step_from_record
    >>> from mag_dataset.prompts import render_target
    >>> references = gold_records(load_view(bundled_dataset(), "som", "test"))
    >>> predictions = [render_target(step_from_record(r), "som", "J") for r in references]
    >>> metric = evaluate.load("loaders/webmre_metric")
    >>> results = metric.compute(predictions=predictions, references=references, view="som", contract="J")
    >>> results["saa"]["micro"], results["bleu1"]["micro"], results["ofcr"]["micro"]
    (1.0, 1.0, 1.0)
    >>> results["usefulness"]["micro"] is None  # no verdict file given
    True

    An output that is not one JSON object fails the format gate and scores 0:

    >>> predictions[0] = "Sure! Here is the action: click the button."
    >>> results = metric.compute(predictions=predictions, references=references, view="som", contract="J")
    >>> results["counts"]["format_failures"], results["ofcr"]["micro"] < 1.0
    (1, True)

    Under contract A, guide metrics do not apply:

    >>> predictions = [render_target(step_from_record(r), "som", "A") for r in references]
    >>> results = metric.compute(predictions=predictions, references=references, view="som", contract="A")
    >>> results["bleu4"]["micro"] is None, results["action_type_acc"]["micro"]
    (True, 1.0)
"""


_DESCRIPTION = _DESCRIPTION.replace(
    "{metrics}", "; ".join(f"{m.name}: {m.label}" for m in METRIC_TABLE if not m.extension)
).replace("{extensions}", "; ".join(f"{m.name}: {m.label}" for m in METRIC_TABLE if m.extension))
_KWARGS_DESCRIPTION = _KWARGS_DESCRIPTION.replace("{metric_keys}", ", ".join(METRIC_NAMES)).replace(
    "{extension_keys}", ", ".join(EXTENSION_METRICS)
)


def _as_json(reference):
    # evaluate 0.4 rejects None inside nested string features (a gold action has many
    # None arguments), so gold records travel as canonical JSON strings.
    return reference if isinstance(reference, str) else json.dumps(reference, sort_keys=True, ensure_ascii=False)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class WebmreMetric(evaluate.Metric):
    """WebMRE deterministic scorer (see ``mag_dataset.scoring``)."""

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            homepage="https://huggingface.co/datasets/mag/webmre",
            codebase_urls=["https://huggingface.co/spaces/mag/webmre_metric"],
            reference_urls=["https://arxiv.org/abs/2609.27353", "https://arxiv.org/abs/2607.10079"],
        )

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction and its gold record."""
        if reference is not None:
            reference = _as_json(reference)
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add predictions and their gold records."""
        if references is not None:
            references = [_as_json(r) for r in references]
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score raw outputs against gold records; returns the full WebMRE report dict."""
        if references is not None:
            references = [_as_json(r) for r in references]
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, view="som", contract="J", judges=None, coord_space=None,
                 menus=None):
        if menus is not None:
            raise ValueError(
                "menus= is gone: coord gold records carry their som menu; make the references with "
                "mag_dataset.dataset.gold_records(load_gold(source, 'coord', split))"
            )
        view, contract = View(view), Contract(contract)
        records = [json.loads(r) for r in references]
        if view is View.COORD and not menus_needed(view, contract) and any("menu" not in r for r in records):
            gold = [step_from_record(r) for r in records]  # A and G read no menu
        else:
            gold = gold_from_records(view, records)  # coord records without menus: a clear error
        preds = [Prediction(s.step_id, p) for s, p in zip(gold, predictions)]
        verdicts = read_usefulness_verdicts(judges) if judges is not None else None
        report = score_predictions(preds, gold, view, contract, verdicts=verdicts, coord_space=coord_space)
        return report.to_dict()


__all__ = ["SCORER_VERSION", "WebmreMetric"]
