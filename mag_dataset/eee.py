"""Every Eval Ever export of a score report: an aggregate record and per-sample records.

Every Eval Ever (EvalEval coalition; ``every-eval-ever`` on PyPI) is a shared schema for
evaluation results. Its package (0.3.0) needs Python >= 3.12 and ``huggingface_hub < 2``,
so it is not a dependency here; its two JSON schemas (version 0.3.0, MIT licence) are
copied unchanged into ``mag_dataset/data/every_eval_ever/`` and every record is validated
against them with ``jsonschema`` before anything is written. The datastore rules its
validator adds to the schemas are applied too (``validator/validation_core.py``): the path
``data/<benchmark>/<developer>/<model>/<uuid4>.json`` with a ``<uuid4>_samples.jsonl``
companion, the sample rows' ``evaluation_id``/``model_id`` equal to the aggregate's,
``total_rows`` equal to the row count, and scores inside ``[min_score, max_score]``.

What is exported (the WebMRE protocol, arXiv 2609.27353): one aggregate result per metric
the report has a value for (the micro mean over steps, the mean over seeds; the task-level
bootstrap interval when present), and one sample row per (seed, step) for the headline
metric of the task (:data:`mag_dataset.hub_eval.HEADLINE_METRIC`) where it applies. The
file names and ``evaluation_id`` derive from the report and the model id, so the same
inputs give the same files; only ``retrieved_timestamp`` is the clock (or
``SOURCE_DATE_EPOCH`` when set).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from mag_dataset.hub_eval import DEFAULT_DATASET_ID, BenchmarkTask, task_for
from mag_dataset.scoring import METRIC_TABLE

#: The Every Eval Ever schema version the copied schemas declare.
SCHEMA_VERSION = "0.3.0"

#: The benchmark folder of the datastore path.
BENCHMARK = "webmre"

_SCHEMA_DIR = "data/every_eval_ever"
_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
_BAD_COMPONENT = re.compile(r'[<>:"\\|?*\x00-\x1f/]')
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}

#: Metric descriptions for the aggregate records: report key -> (display name, kind), read
#: from each metric's ``label`` and ``kind`` in :data:`mag_dataset.scoring.METRIC_TABLE`.
_METRICS: dict[str, tuple[str, str]] = {m.name: (m.label, m.kind) for m in METRIC_TABLE}


class EEEError(ValueError):
    """An export that cannot be written (bad model id, a record the schema rejects)."""


@lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Any]:
    """One of the copied schemas: ``eval.schema.json`` or ``instance_level_eval.schema.json``."""
    text = resources.files("mag_dataset").joinpath(f"{_SCHEMA_DIR}/{name}").read_text("utf-8")
    return json.loads(text)


def _validator(name: str) -> Any:
    import jsonschema

    s = schema(name)
    cls = jsonschema.validators.validator_for(s)
    return cls(s)


def schema_errors(record: Mapping[str, Any], name: str) -> list[str]:
    """Every way ``record`` breaks the named schema, as ``path: message`` lines (empty: valid)."""
    out = []
    for e in sorted(_validator(name).iter_errors(record), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        out.append(f"{where}: {e.message}")
    return out


def path_components(model_id: str) -> tuple[str, str]:
    """``(developer, model)`` folders of a model id ``owner/name``.

    Raises:
        EEEError: an id that is not ``owner/name`` or has a part that is no portable folder name.
    """
    parts = model_id.split("/")
    if len(parts) != 2 or not all(parts):
        raise EEEError(f"the model id must look like owner/name (e.g. Qwen/Qwen3.5-9B), got {model_id!r}")
    for p in parts:
        if _BAD_COMPONENT.search(p) or p in (".", "..", "data") or p.endswith((".", " ")) or p.split(".", 1)[0].upper() in _RESERVED:
            raise EEEError(f"the model id part {p!r} cannot be a folder name in the Every Eval Ever datastore")
    return parts[0], parts[1]


def check_path(repo_path: str) -> list[str]:
    """The datastore path rule of Every Eval Ever's validator (``check_path_structure``)."""
    parts = repo_path.split("/")
    if len(parts) != 5 or parts[0] != "data" or any(p in ("", ".", "..") for p in parts):
        return [f"expected data/<benchmark>/<developer>/<model>/<uuid4>.json, got {repo_path!r}"]
    if not re.fullmatch(rf"{_UUID4}(\.json|_samples\.jsonl)", parts[4]):
        return [f"file name {parts[4]!r} is not <uuid4>.json or <uuid4>_samples.jsonl"]
    return []


def _stable_uuid4(*parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _timestamp() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    return str(int(epoch)) if epoch and epoch.isdigit() else str(int(time.time()))


def _fmt(v: Any) -> str:
    return "" if v is None else str(v)


def build_records(
    report: Any,
    steps: Iterable[Any],
    outputs: Mapping[tuple[str, int], str],
    *,
    model_id: str,
    dataset_id: str = DEFAULT_DATASET_ID,
    dataset_revision: str | None = None,
    split: str = "test",
    evaluator_relationship: str = "other",
    organization: str = "unknown",
    retrieved_timestamp: str | None = None,
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The aggregate and sample records of a report, validated.

    Args:
        report: a :class:`mag_dataset.scoring.Report` scored with ``keep_steps=True``.
        steps: the gold steps that were scored (for the prompt text and the reference).
        outputs: ``(step_id, seed) -> raw model output`` (missing ones count as empty).
        model_id: the model, ``owner/name``.
        dataset_id: the benchmark's Hub dataset repo.
        dataset_revision: the repo revision the gold came from, when known.
        split: the split scored.
        evaluator_relationship: ``first_party``, ``third_party``, ``collaborative`` or ``other``.
        organization: who produced the result (``source_organization_name``).
        retrieved_timestamp: Unix time as a string; default now / ``SOURCE_DATE_EPOCH``.

    Returns:
        ``(uuid, aggregate, samples)``.

    Raises:
        EEEError: a bad model id, a report without per-step scores, or a record that
            breaks the schema (naming the field).
    """
    developer, model = path_components(model_id)
    if report.steps is None:
        raise EEEError("the report has no per-step scores (score with keep_steps=True)")
    prov = report.provenance
    task = task_for(prov["view"], prov["contract"])
    uid = _stable_uuid4(BENCHMARK, model_id, dataset_id, split, report.to_json())
    stamp = retrieved_timestamp or _timestamp()
    evaluation_id = f"{BENCHMARK}_{task.id}/{model_id}/{stamp}"
    base = f"data/{BENCHMARK}/{developer}/{model}/{uid}"
    source = {
        "dataset_name": "WebMRE",
        "source_type": "hf_dataset",
        "hf_repo": dataset_id,
        "hf_split": split,
        "samples_number": report.counts["steps"],
        "additional_details": {
            "config": task.view.value,
            "gold_fingerprint": _fmt(prov.get("dataset_fingerprint")),
            **({"revision": dataset_revision} if dataset_revision else {}),
        },
    }
    results = _results(report, task, source, split)
    samples = _samples(report, task, steps, outputs, evaluation_id=evaluation_id, model_id=model_id)
    aggregate = _aggregate(report, task, results, samples, evaluation_id=evaluation_id, stamp=stamp, model_id=model_id,
                           developer=developer, organization=organization,
                           evaluator_relationship=evaluator_relationship, samples_path=f"{base}_samples.jsonl")
    problems = validate_records(aggregate, samples, f"{base}.json")
    if problems:
        raise EEEError("the Every Eval Ever record is invalid: " + "; ".join(problems[:5]))
    return uid, aggregate, samples


def _aggregate(report: Any, task: BenchmarkTask, results: list[dict[str, Any]], samples: list[dict[str, Any]], *,
               evaluation_id: str, stamp: str, model_id: str, developer: str, organization: str,
               evaluator_relationship: str, samples_path: str) -> dict[str, Any]:
    """The aggregate record: source, library, model, the results and the samples file's checksum."""
    from mag_dataset import __version__

    prov = report.provenance
    samples_text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in samples)
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "retrieved_timestamp": stamp,
        "source_metadata": {
            "source_name": "mag score (mag_dataset)",
            "source_type": "evaluation_run",
            "source_organization_name": organization,
            "evaluator_relationship": evaluator_relationship,
        },
        "eval_library": {
            "name": "mag_dataset",
            "version": __version__,
            "additional_details": {
                "scorer_version": _fmt(prov.get("scorer_version")),
                "prompt_version": _fmt(prov.get("prompt_version")),
                "view": task.view.value,
                "contract": task.contract.value,
                "seeds": ",".join(str(s) for s in prov.get("seeds") or []),
            },
        },
        "model_info": {
            "name": model_id,
            "id": model_id,
            "developer": developer,
            "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"},
        },
        "evaluation_results": results,
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": samples_path,
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(samples_text.encode("utf-8")).hexdigest(),
            "total_rows": len(samples),
        },
    }


def _results(report: Any, task: BenchmarkTask, source: dict[str, Any], split: str) -> list[dict[str, Any]]:
    """One aggregate result per metric the report has a value for (the micro mean)."""
    prov = report.provenance
    results = []
    for name, (title, kind) in _METRICS.items():
        m = report.metrics.get(name) or {}
        if m.get("micro") is None:
            continue
        details = {k: str(m[key]) for k, key in (("macro", "macro"), ("n", "n"), ("n_tasks", "n_tasks"), ("std_over_seeds", "std"))
                   if m.get(key) is not None}
        score: dict[str, Any] = {"score": m["micro"], "details": details}
        if m.get("ci95"):
            lo, hi = m["ci95"]
            score["uncertainty"] = {
                "confidence_interval": {"lower": lo, "upper": hi, "confidence_level": 0.95, "method": "task-level bootstrap"},
                "num_bootstrap_samples": int(prov["bootstrap"]["resamples"]),
            }
        results.append({
            "evaluation_result_id": f"{task.id}/{name}",
            "evaluation_name": f"{BENCHMARK}_{task.id}",
            "source_data": source,
            "metric_config": {
                "evaluation_description": f"WebMRE {task.id} ({split} split): {title}, micro mean over steps"
                + (" (headline)" if name == task.metric else ""),
                "metric_id": f"webmre.{name}",
                "metric_name": title,
                "metric_kind": kind,
                "metric_unit": "proportion",
                "lower_is_better": False,
                "score_type": "continuous",
                "min_score": 0,
                "max_score": 1,
                "additional_details": {"headline": str(name == task.metric).lower()},
            },
            "score_details": score,
        })
    return results


def _samples(report: Any, task: BenchmarkTask, steps: Iterable[Any], outputs: Mapping[tuple[str, int], str], *,
             evaluation_id: str, model_id: str) -> list[dict[str, Any]]:
    """One sample row per (seed, step) where the task's headline metric applies."""
    from mag_dataset.prompts import render_target, user_text

    by_id = {s.step_id: s for s in steps}
    multi_seed = len(report.provenance.get("seeds") or []) > 1
    samples = []
    for sc in report.steps:
        value = sc.metric(task.metric)
        if value is None:  # not applicable (disputed step, no guide...): no sample row
            continue
        step = by_id[sc.step_id]
        raw_in = user_text(step, task.view)
        reference = render_target(step, task.view, task.contract)
        out = outputs.get((sc.step_id, sc.seed), "")
        samples.append({
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": evaluation_id,
            "model_id": model_id,
            "evaluation_name": f"{BENCHMARK}_{task.id}",
            "evaluation_result_id": f"{task.id}/{task.metric}",
            "sample_id": f"{sc.step_id}@seed{sc.seed}" if multi_seed else sc.step_id,
            "sample_hash": hashlib.sha256((raw_in + reference).encode("utf-8")).hexdigest(),
            "interaction_type": "single_turn",
            "input": {"raw": raw_in, "reference": [reference]},
            "output": {"raw": [out]},
            "answer_attribution": [{
                "turn_idx": 0,
                "source": "output.raw",
                "extracted_value": out,
                "extraction_method": "mag_dataset.parsing format gate, mag_dataset.scoring rules",
                "is_terminal": True,
            }],
            "evaluation": {"score": value, "is_correct": value == 1.0},
        })
    return samples


def validate_records(aggregate: Mapping[str, Any], samples: list[Mapping[str, Any]], repo_path: str) -> list[str]:
    """Schema errors of the aggregate and each sample row, plus the validator's datastore rules.

    Returns:
        Problems as lines; empty when the export is valid.
    """
    out = [f"aggregate {e}" for e in schema_errors(aggregate, "eval.schema.json")]
    for i, row in enumerate(samples):
        out += [f"sample {i} {e}" for e in schema_errors(row, "instance_level_eval.schema.json")]
    out += check_path(repo_path)
    detail = aggregate.get("detailed_evaluation_results") or {}
    out += check_path(detail.get("file_path", ""))
    if detail.get("total_rows") != len(samples):
        out.append(f"total_rows {detail.get('total_rows')} != {len(samples)} sample rows")
    if not samples:
        out.append("samples companion must contain at least one row")
    model = (aggregate.get("model_info") or {}).get("id")
    if any(r.get("evaluation_id") != aggregate.get("evaluation_id") or r.get("model_id") != model for r in samples):
        out.append("sample rows must carry the aggregate's evaluation_id and model_info.id")
    for r in aggregate.get("evaluation_results") or []:
        cfg, score = r.get("metric_config") or {}, (r.get("score_details") or {}).get("score")
        lo, hi = cfg.get("min_score"), cfg.get("max_score")
        if isinstance(score, (int, float)) and isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and not lo <= score <= hi:
            out.append(f"{r.get('evaluation_result_id')}: score {score} outside [{lo}, {hi}]")
    return out


def write_export(target: str | os.PathLike, report: Any, steps: Iterable[Any], outputs: Mapping[tuple[str, int], str], **kwargs: Any) -> tuple[Path, Path]:
    """Write the aggregate JSON and the samples JSONL under ``target/data/webmre/<developer>/<model>/``.

    Args:
        target: the datastore root (a checkout of the Every Eval Ever datastore, or a new folder).
        report, steps, outputs, **kwargs: see :func:`build_records`.

    Returns:
        ``(aggregate path, samples path)``.
    """
    from mag_dataset.fileio import atomic_write

    uid, aggregate, samples = build_records(report, steps, outputs, **kwargs)
    rel = aggregate["detailed_evaluation_results"]["file_path"]
    samples_path = Path(target) / rel
    agg_path = samples_path.with_name(f"{uid}.json")
    atomic_write(samples_path, (json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in samples))
    atomic_write(agg_path, json.dumps(aggregate, ensure_ascii=False, indent=2) + "\n")
    return agg_path, samples_path


__all__ = ["BENCHMARK", "EEEError", "SCHEMA_VERSION", "build_records", "check_path", "path_components", "schema",
           "schema_errors", "validate_records", "write_export"]
