"""The benchmark on the Hugging Face Hub: ``eval.yaml`` and ``.eval_results/*.yaml``.

WebMRE ("Guides That Cause Actions: An Offline Study of Guide-Action Mutual Reinforcement
in Multimodal Web Agents", arXiv 2609.27353) on the data of MAG (arXiv 2607.10079).

The Hub turns a dataset repo with an ``eval.yaml`` at its root into a benchmark with a
leaderboard tab per task, fed by ``.eval_results/*.yaml`` files in model repos. Formats:

- ``eval.yaml``: the Hub documentation's "Eval.yaml specification"
  (huggingface/hub-docs ``docs/hub/eval-results.md`` at commit
  b695d61c888a48332765d6b30de7e6c897a5bd60): ``name``, ``description``,
  ``evaluation_framework`` (one id of huggingface.js ``packages/tasks/src/eval.ts``),
  ``tasks[]`` with a required ``id`` and optional ``config`` and ``split``.
- ``.eval_results/*.yaml``: hub-docs ``eval_results.yaml`` (commit
  2be4979eec528db07ad8cec06514a176fff50066); written and parsed with
  ``huggingface_hub``'s :class:`~huggingface_hub.EvalResultEntry`.

The framework id: the Hub's Inspect-based runner (``evaluation_framework: inspect-ai``)
accepts only Inspect's built-in scorers (``match``, ``f1``, ...; see ``inspect_ai``'s
``_eval/task/hf.py``), which cannot express this benchmark's format gate, element and
point matching or guide BLEU; declaring it would make the Hub score the benchmark with the
wrong rules. So ``eval.yaml`` names this benchmark's own framework id,
:data:`EVALUATION_FRAMEWORK`, which has to be added to ``EVALUATION_FRAMEWORKS`` in
huggingface.js (as ScreenSpot-Pro, SWE-bench and MTEB were) before the Hub accepts the file;
:func:`mag_dataset.publish.publish_folder` uploads it in a commit of its own so that a refusal
does not block the dataset upload.

One task per (view, contract) the leaderboard ranks; the value of a task is its headline
metric (:data:`HEADLINE_METRIC`): SAA for contracts with an action, guide BLEU-1 for G,
the micro mean over the test steps (the mean over seeds), a fraction in [0, 1], exactly
the number ``mag score`` prints.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mag_dataset.actions import Contract, View
from mag_dataset.scoring import HEADLINE_METRIC, METRIC_BY_NAME

#: The file at the root of the built folder that registers the benchmark on the Hub.
EVAL_FILE = "eval.yaml"

#: The folder of a model repo that holds its results.
EVAL_RESULTS_FOLDER = ".eval_results"

#: This benchmark's framework id (to be registered in huggingface.js, see the module docstring).
EVALUATION_FRAMEWORK = "webmre"

#: The Hub dataset repo of the benchmark.
DEFAULT_DATASET_ID = "mag/webmre"

#: The split every leaderboard task is scored on.
TASK_SPLIT = "test"

#: Display names of the headline metrics (their labels in :data:`mag_dataset.scoring.METRIC_TABLE`).
METRIC_TITLE: dict[str, str] = {name: METRIC_BY_NAME[name].label for name in dict.fromkeys(HEADLINE_METRIC.values())}

_NAME = "WebMRE"
_DESCRIPTION = (
    "WebMRE (arXiv 2609.27353): an offline, audited benchmark for multimodal web agents that "
    "write a guide sentence and ground an action on a screenshot, built on MAG (arXiv "
    "2607.10079). One task per grounding view (som: Set-of-Mark element ids; coord: pixel "
    "coordinates) and output contract (A: action; G: guide; J: action then guide; JG: guide "
    "then action), named <view>_<contract> and scored on the test split with `mag score` "
    "(pip install mag_dataset). Headline metric: step action accuracy (SAA) for A, J and JG; "
    "guide BLEU-1 for G; a fraction in [0, 1], the micro mean over steps (mean over seeds)."
)


class EvalFileError(ValueError):
    """A built folder or an ``.eval_results`` file that cannot be used; the message says why."""


@dataclass(frozen=True)
class BenchmarkTask:
    """One leaderboard of the benchmark: a (view, contract) pair scored on one split.

    Attributes:
        view: the grounding view; also the dataset config.
        contract: the output contract.
        split: the dataset split scored.
    """

    view: View
    contract: Contract
    split: str = TASK_SPLIT

    def __post_init__(self) -> None:
        object.__setattr__(self, "view", View(self.view))
        object.__setattr__(self, "contract", Contract(self.contract))

    @property
    def id(self) -> str:
        """The task id used in ``eval.yaml`` and ``.eval_results``, e.g. ``som_J``."""
        return f"{self.view.value}_{self.contract.value}"

    @property
    def config(self) -> str:
        return self.view.value

    @property
    def metric(self) -> str:
        return HEADLINE_METRIC[self.contract]


#: Every ranked task, views then contracts in their declaration order.
TASKS: tuple[BenchmarkTask, ...] = tuple(BenchmarkTask(v, c) for v in View for c in Contract)


def task_for(view: View | str, contract: Contract | str) -> BenchmarkTask:
    """The benchmark task of a view and contract."""
    return BenchmarkTask(View(view), Contract(contract))


# --------------------------------------------------------------------------- eval.yaml


def card_configs(folder: str | os.PathLike) -> dict[str, set[str]]:
    """The ``configs:`` of a built folder's dataset card: config name -> its splits.

    Raises:
        EvalFileError: no card, no YAML front matter, or no ``configs``.
    """
    card = Path(folder) / "README.md"
    try:
        text = card.read_text("utf-8")
    except OSError as e:
        raise EvalFileError(f"cannot read the dataset card {card}: {e}") from None
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if m is None:
        raise EvalFileError(f"{card} has no YAML front matter")
    meta = yaml.safe_load(m.group(1)) or {}
    out: dict[str, set[str]] = {}
    for cfg in meta.get("configs") or []:
        out[str(cfg["config_name"])] = {str(f["split"]) for f in cfg.get("data_files") or [] if "split" in f}
    if not out:
        raise EvalFileError(f"{card} declares no configs")
    return out


def eval_yaml_data(configs: dict[str, set[str]]) -> dict[str, Any]:
    """The ``eval.yaml`` document for a dataset with these configs (see :func:`card_configs`).

    Only the tasks whose config and split the dataset has are listed.

    Raises:
        EvalFileError: the dataset has none of the tasks.
    """
    tasks = [t for t in TASKS if t.split in configs.get(t.config, ())]
    if not tasks:
        raise EvalFileError(f"no {TASK_SPLIT} split in any of the configs {sorted(configs)}: no benchmark task to declare")
    return {
        "name": _NAME,
        "description": _DESCRIPTION,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [{"id": t.id, "config": t.config, "split": t.split} for t in tasks],
    }


def render_eval_yaml(configs: dict[str, set[str]]) -> str:
    """``eval.yaml`` as text (see :func:`eval_yaml_data`)."""
    return yaml.safe_dump(eval_yaml_data(configs), sort_keys=False, allow_unicode=True, width=100)


def write_eval_yaml(folder: str | os.PathLike) -> Path | None:
    """Write ``eval.yaml`` into a built folder, its tasks checked against the card's configs.

    Called by :func:`mag_dataset.builder.build_dataset` before the checksum manifest. A
    build without a test split (nothing to rank) gets no ``eval.yaml``.

    Returns:
        The path written, or None.
    """
    configs = card_configs(folder)
    if not any(t.split in configs.get(t.config, ()) for t in TASKS):
        return None
    path = Path(folder) / EVAL_FILE
    path.write_text(render_eval_yaml(configs), "utf-8")
    return path


# --------------------------------------------------------------------------- .eval_results


def _report_dict(report: Any) -> dict[str, Any]:
    return report.to_dict() if hasattr(report, "to_dict") else dict(report)


def eval_result_entry(
    report: Any,
    *,
    dataset_id: str = DEFAULT_DATASET_ID,
    dataset_revision: str | None = None,
    source_url: str | None = None,
    source_name: str | None = None,
    split: str = TASK_SPLIT,
) -> Any:
    """The ``.eval_results`` entry of a score report.

    Args:
        report: a :class:`mag_dataset.scoring.Report` or its ``to_dict()`` (a report JSON).
        dataset_id: the benchmark's Hub dataset repo.
        dataset_revision: the git revision of that repo the gold came from, when known.
        source_url: where the result can be checked (logs, predictions, a paper).
        source_name: display name of the source (needs ``source_url``).
        split: the split the report scored; only the test split is a leaderboard task.

    Returns:
        A ``huggingface_hub.EvalResultEntry``; ``notes`` records contract, view, seeds,
        split, scorer version and the gold's fingerprint.

    Raises:
        EvalFileError: a report of another split, without a headline value, or a source
            name without a URL.
    """
    from huggingface_hub import EvalResultEntry

    d = _report_dict(report)
    prov = d.get("provenance") or {}
    try:
        task = task_for(prov["view"], prov["contract"])
    except (KeyError, ValueError):
        raise EvalFileError("the report has no valid view/contract in its provenance") from None
    if split != task.split:
        raise EvalFileError(f"only the {task.split} split is a benchmark task, not {split!r}")
    metric = d.get(task.metric) or {}
    value = metric.get("micro")
    if value is None:
        raise EvalFileError(f"the report has no {task.metric} value for {task.id}")
    seeds = prov.get("seeds") or []
    notes = (
        f"contract {task.contract.value}, view {task.view.value}, split {task.split}, "
        f"seeds {','.join(str(s) for s in seeds)}; {METRIC_TITLE[task.metric]}, micro mean over "
        f"{metric.get('n')} steps; mag_dataset scorer {prov.get('scorer_version')}, prompt "
        f"{prov.get('prompt_version')}; gold {prov.get('dataset_fingerprint')}"
    )
    missing = (d.get("counts") or {}).get("missing") or 0
    if missing:
        notes += f"; {missing} steps had no prediction and count as format failures"
    if source_name is not None and source_url is None:
        raise EvalFileError("a source name needs a source URL")
    return EvalResultEntry(
        dataset_id=dataset_id,
        task_id=task.id,
        value=value,
        dataset_revision=dataset_revision,
        source_url=source_url,
        source_name=source_name,
        notes=notes,
    )


def eval_results_filename(entry: Any) -> str:
    """``webmre_<task id>.yaml``: one file per task, so results of several tasks sit side by side."""
    return f"{EVALUATION_FRAMEWORK}_{entry.task_id}.yaml"


def render_eval_results(entries: list[Any]) -> str:
    """The text of one ``.eval_results/*.yaml`` file (a YAML list of entries)."""
    from huggingface_hub import eval_result_entries_to_yaml

    return yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True, width=100)


def parse_eval_results(text: str) -> list[Any]:
    """Parse a ``.eval_results/*.yaml`` file into ``EvalResultEntry`` objects.

    Raises:
        EvalFileError: not YAML, not a list, or an entry without dataset id, task id or value.
    """
    from huggingface_hub import parse_eval_result_entries

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise EvalFileError(f"not YAML: {e}") from None
    if not isinstance(data, list):
        raise EvalFileError("an .eval_results file holds a YAML list of entries")
    try:
        return parse_eval_result_entries(data)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise EvalFileError(f"an entry lacks a required field: {e}") from None


def eval_results_file(report: Any, **kwargs: Any) -> tuple[str, str]:
    """The ``.eval_results`` file of a report as ``(file name, YAML text)``.

    What a leaderboard's "download for your model repo" link serves: the user commits it
    as ``.eval_results/<file name>`` in the model repo.

    Args:
        report: a :class:`mag_dataset.scoring.Report` or a report dict (the stored report JSON).
        **kwargs: passed to :func:`eval_result_entry` (``dataset_id``, ``dataset_revision``,
            ``source_url``, ``source_name``, ``split``).

    Raises:
        EvalFileError: see :func:`eval_result_entry`.
    """
    entry = eval_result_entry(report, **kwargs)
    return eval_results_filename(entry), render_eval_results([entry])


def eval_results_dir(target: str | os.PathLike) -> Path:
    """Where the files go: ``target`` itself when it is named ``.eval_results``, else ``target/.eval_results``."""
    target = Path(target)
    return target if target.name == EVAL_RESULTS_FOLDER else target / EVAL_RESULTS_FOLDER


def write_eval_results(target: str | os.PathLike, report: Any, **kwargs: Any) -> Path:
    """Write the ``.eval_results`` file of a report for a model repo (atomically).

    Args:
        target: the model repo folder (the file goes to ``target/.eval_results/``) or an
            ``.eval_results`` folder.
        report: see :func:`eval_result_entry`.
        **kwargs: passed to :func:`eval_result_entry`.

    Returns:
        The path written, e.g. ``target/.eval_results/webmre_som_J.yaml``.
    """
    from mag_dataset.fileio import atomic_write

    name, text = eval_results_file(report, **kwargs)
    path = eval_results_dir(target) / name
    atomic_write(path, text)
    return path


def hub_snapshot_revision(source: str | os.PathLike) -> str | None:
    """The commit of a Hub cache snapshot folder (``.../snapshots/<sha>/...``), else None."""
    parts = Path(source).expanduser().resolve().parts
    for i, part in enumerate(parts[:-1]):
        if part == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", parts[i + 1]):
            return parts[i + 1]
    return None


def cache_revision(cache_files: list[dict[str, Any]]) -> str | None:
    """The Hub commit a ``datasets.Dataset`` loaded from a repo id was prepared from.

    ``datasets`` (5.x, ``load.py``) pins the repo's commit when it resolves a Hub dataset
    and keys the prepared cache by it: ``<cache>/<owner>___<name>/<config>/<version>/<sha>/``.

    Args:
        cache_files: ``Dataset.cache_files``.

    Returns:
        The 40-hex commit that follows the version folder, or None.
    """
    for f in cache_files:
        parts = Path(f.get("filename", "")).parts
        for i in range(1, len(parts) - 1):
            if re.fullmatch(r"\d+\.\d+\.\d+", parts[i - 1]) and re.fullmatch(r"[0-9a-f]{40}", parts[i]):
                return parts[i]
    return None


__all__ = [
    "BenchmarkTask",
    "cache_revision",
    "DEFAULT_DATASET_ID",
    "EVALUATION_FRAMEWORK",
    "EVAL_FILE",
    "EVAL_RESULTS_FOLDER",
    "EvalFileError",
    "HEADLINE_METRIC",
    "TASKS",
    "card_configs",
    "eval_result_entry",
    "eval_results_dir",
    "eval_results_file",
    "eval_results_filename",
    "eval_yaml_data",
    "hub_snapshot_revision",
    "parse_eval_results",
    "render_eval_results",
    "render_eval_yaml",
    "task_for",
    "write_eval_results",
    "write_eval_yaml",
]
