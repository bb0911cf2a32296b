"""Leaderboard store: validate an uploaded predictions file, score it against hidden gold
with the library scorer, and keep it in SQLite with the file itself, content-addressed.

The leaderboard Space (``leaderboard/app.py``) and ``mag leaderboard`` are thin edges
over :class:`Board`; this module never re-implements a scoring rule: every figure comes
from :func:`mag_dataset.scoring.score_predictions`, the same call ``mag score`` makes.
The protocol is WebMRE's (arXiv 2609.27353): deterministic, rule-based scoring, so a
stored file re-scores to the same bytes (:meth:`Board.rescore_all`).

Configuration, read by :meth:`BoardConfig.from_env` (every variable optional):

=========================  ================================================================
``MAG_BOARD_GOLD``         gold source: a built dataset folder or a Hub dataset repo id
                           (default: the bundled sample corpus, built once into a cache)
``MAG_BOARD_GOLD_TOKEN``   token for a private Hub gold dataset (default: ``HF_TOKEN``)
``MAG_BOARD_SPLIT``        split scored (default ``test``)
``MAG_BOARD_DIR``          data folder holding ``board.sqlite`` and ``files/``
                           (default ``./leaderboard_data``)
``MAG_BOARD_DB``           database path (default ``$MAG_BOARD_DIR/board.sqlite``)
``MAG_BOARD_MAX_MB``       upload cap in MiB, enforced by the server and the handler
                           (default 20); also caps a ``.jsonl.gz`` file's decompressed size
``MAG_BOARD_MAX_LINES``    most lines a predictions file may have (default 200000)
``MAG_BOARD_MAX_SEEDS``    most seeds one predictions file may hold (default 10)
``MAG_BOARD_SCORE_SECONDS`` time limit for decoding and scoring one submission (default 60)
``MAG_BOARD_WORKER_MB``    memory limit of the process that decodes and scores one
                           submission, in MiB (default 1024)
``MAG_BOARD_WORKERS``      submissions decoded and scored at once; more wait in the
                           queue, which shows each its position (default 2)
``MAG_BOARD_DAILY_CAP``    accepted submissions per submitter per UTC day (default 5)
``MAG_BOARD_ADMINS``       comma-separated submitter names exempt from the daily cap
``MAG_BOARD_SYNC_REPO``    Hub dataset repo id the database and files are mirrored to
                           after each accepted submission and restored from at start-up
                           when the local database is missing (default: no sync)
``MAG_BOARD_SYNC_TOKEN``   token for that repo (default: ``HF_TOKEN``)
``MAG_BOARD_VERDICTS``     a cached judge-verdict file (:mod:`mag_dataset.verdicts`) for the
                           usefulness column; guides without verdicts stay unjudged
                           (default: none, usefulness not applicable)
``MAG_BOARD_MAX_FORMAT_FAILURES`` most format failures a file may have, in percent of its
                           predictions (default 50); over it the file is rejected
=========================  ================================================================

Integrity rules (every one names its reason when it rejects a file):

* **Duplicates** are found on the normalised content, not the bytes: the sorted
  ``(seed, step_id, output stripped of surrounding whitespace, coord_space)`` records of
  the parsed file (:func:`content_sha256`). The same predictions as ``.jsonl`` with a
  trailing blank line, ``.jsonl.gz`` or ``.parquet`` are the same submission.
* **Format failures**: a file whose outputs fail the format gate of the declared view and
  contract on more than ``MAG_BOARD_MAX_FORMAT_FAILURES`` percent of its predictions is
  rejected (a file of empty outputs around one real answer would otherwise be scored).
* **Another contract**: a file whose outputs pass the format gate of another view or
  contract more often than the declared one's is rejected, naming the better one (a
  contract-J file declared as A would otherwise rank with all zeros).
* **Breakdown granularity** (:func:`public_report`): a per-site, per-action-type, stale or
  unseen-template group is shown only when it holds at least :data:`MIN_GROUP_STEPS` gold
  steps; smaller groups are pooled into ``other`` (and, while ``other`` is still smaller,
  the next smallest group joins it); a breakdown that cannot keep two groups of that size
  is withheld, and a metric scored on fewer than :data:`MIN_GROUP_STEPS` steps of a shown
  group is left out. So no figure the board shows rests on fewer than
  :data:`MIN_GROUP_STEPS` gold steps, and no withheld group can be recovered by
  subtracting the shown ones from the total. Probing one label by changing one prediction
  between two submissions is bounded by the daily cap, not by this rule.

Ranking (:meth:`Board.ranking`, shared by the Space and the API): within a view and a
contract, by :func:`ranking_metric` (SAA for contracts with an action, BLEU-1 for G), then
:func:`rank_key`'s tie-breakers. A submission's rank is one plus the number of submissions
of its table that beat it *significantly*: a higher ranking-metric micro mean and a
two-sided p < :data:`RANK_ALPHA` in the paired comparison of :mod:`mag_dataset.compare`
for that metric (exact McNemar on the paired steps for SAA; the task-level sign-flip test,
1,000 draws, seed 0, for BLEU-1; no multiplicity correction), so submissions whose
difference is not significant share a rank.

Untrusted decoding: an upload is decoded, validated and scored in a child process
(:func:`mag_dataset.isolation.run_isolated`) with ``MAG_BOARD_WORKER_MB`` of address space
and ``MAG_BOARD_SCORE_SECONDS`` of time, at most ``MAG_BOARD_WORKERS`` at once; a file that
exhausts either is rejected with the limit named, and the server never holds the decoded
data. A Parquet file is checked from its footer first (exact columns and types, row count,
declared uncompressed sizes) and its strings' decoded size is added up, dictionary-encoded,
before any is expanded: the decoded text is capped at ``MAG_BOARD_MAX_MB`` like a gzip
file's.

Storage: one SQLite database in WAL mode, one row per accepted submission, each write a
short ``BEGIN IMMEDIATE`` transaction (scoring happens before it, outside any lock on the
database). A row keeps the report JSON exactly as the scorer wrote it, the scorer
version, the gold fingerprint, the SHA-256 of the uploaded bytes and its extension; the
bytes live in ``files/<sha[:2]>/<sha><ext>``. A rejected file stores nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import sqlite3
import tempfile
import threading
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from mag_dataset.actions import Contract, View
from mag_dataset.fileio import atomic_write
from mag_dataset.schema import Step

log = logging.getLogger(__name__)

#: Upload formats the board accepts, longest suffix first.
EXTENSIONS: tuple[str, ...] = (".jsonl.gz", ".jsonl", ".parquet")

#: Self-declared provenance of a submission's predictions.
PROVENANCE_TAGS: tuple[str, ...] = ("self-reported", "externally evaluated", "reproduced")

#: Report metrics shown on the board, in column order: report key -> column title.
METRIC_COLUMNS: dict[str, str] = {
    "saa": "SAA",
    "target_acc": "target acc",
    "action_type_acc": "type acc",
    "text_f1": "text F1",
    "ofcr": "OFCR",
    "bleu1": "BLEU-1",
    "bleu4": "BLEU-4",
    "rouge_l": "ROUGE-L",
    "usefulness": "usefulness",
}

#: Smallest number of gold steps behind any figure of a shown breakdown (see the module docstring).
MIN_GROUP_STEPS = 10

#: Significance level of the rank rule (see :meth:`Board.ranking`).
RANK_ALPHA = 0.05

#: Largest share of format failures a file may have before it is rejected (default).
MAX_FORMAT_FAILURE_RATE = 0.5

MAX_NAME_CHARS = 120
MAX_LINK_CHARS = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at       TEXT    NOT NULL,
    submitter        TEXT    NOT NULL,
    model_name       TEXT    NOT NULL,
    organisation     TEXT    NOT NULL DEFAULT '',
    link             TEXT    NOT NULL DEFAULT '',
    provenance_tag   TEXT    NOT NULL,
    view             TEXT    NOT NULL,
    contract         TEXT    NOT NULL,
    split            TEXT    NOT NULL,
    file_sha256      TEXT    NOT NULL,
    file_ext         TEXT    NOT NULL,
    file_size        INTEGER NOT NULL,
    seeds            INTEGER NOT NULL,
    scorer_version   TEXT    NOT NULL,
    gold_fingerprint TEXT    NOT NULL,
    summary_json     TEXT    NOT NULL,
    report_json      TEXT    NOT NULL,
    UNIQUE (file_sha256, view, contract)
);
CREATE INDEX IF NOT EXISTS submissions_by_submitter ON submissions (submitter, created_at);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '1');
"""

#: Columns added after schema version 1: (name, SQL type). Old databases gain them at start-up
#: (``NULL`` in old rows, filled lazily from the stored file).
_ADDED_COLUMNS: tuple[tuple[str, str], ...] = (("content_sha256", "TEXT"), ("step_values_json", "TEXT"))


class SubmissionRejected(ValueError):
    """A submission was refused; the message says exactly why and is safe to show.

    Messages never quote gold data: they name the file's line, the step id the file
    gave, or the limit that was hit.
    """


# --------------------------------------------------------------------------- config


def _env_int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value


@dataclass(frozen=True)
class BoardConfig:
    """Board settings; see the module docstring for the environment variables.

    Attributes:
        data_dir: folder for the database (by default) and the stored files.
        db_path: the SQLite database.
        gold: gold source (folder or Hub repo id); ``None`` means the bundled corpus.
        gold_token: token for a private Hub gold dataset.
        split: split scored.
        max_bytes: upload cap in bytes (also the decompressed cap of ``.jsonl.gz``).
        max_lines: most lines a predictions file may have.
        max_seeds: most seeds one file may hold.
        score_seconds: time limit for decoding and scoring one submission.
        worker_mb: memory limit (MiB) of the process that decodes and scores it.
        workers: submissions decoded and scored at once.
        daily_cap: accepted submissions per submitter per UTC day.
        admins: submitter names exempt from the daily cap.
        sync_repo: Hub dataset repo id to mirror to, or ``None``.
        sync_token: token for ``sync_repo``.
        verdicts: cached judge verdicts for usefulness, or ``None``.
        max_format_failure_rate: largest share of format failures a file may have.
    """

    data_dir: Path = Path("leaderboard_data")
    db_path: Path | None = None
    gold: str | None = None
    gold_token: str | None = None
    split: str = "test"
    max_bytes: int = 20 * 1024 * 1024
    max_lines: int = 200_000
    max_seeds: int = 10
    score_seconds: float = 60.0
    worker_mb: int = 1024
    workers: int = 2
    daily_cap: int = 5
    admins: frozenset[str] = frozenset()
    sync_repo: str | None = None
    sync_token: str | None = None
    verdicts: Path | None = None
    max_format_failure_rate: float = MAX_FORMAT_FAILURE_RATE

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", Path(self.data_dir))
        if self.db_path is None:
            object.__setattr__(self, "db_path", self.data_dir / "board.sqlite")
        else:
            object.__setattr__(self, "db_path", Path(self.db_path))
        object.__setattr__(self, "admins", frozenset(self.admins))
        if self.max_bytes <= 0 or self.max_lines <= 0:
            raise ValueError("max_bytes and max_lines must be positive")
        if self.max_seeds <= 0 or self.workers <= 0 or self.score_seconds <= 0:
            raise ValueError("max_seeds, workers and score_seconds must be positive")
        if not 0.0 <= self.max_format_failure_rate <= 1.0:
            raise ValueError("MAG_BOARD_MAX_FORMAT_FAILURES must be a percentage from 0 to 100")
        if self.worker_mb < 256:
            raise ValueError(f"MAG_BOARD_WORKER_MB must be at least 256, got {self.worker_mb}")

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> "BoardConfig":
        """Read the ``MAG_BOARD_*`` variables; keyword overrides win over the environment."""
        env = dict(os.environ if env is None else env)
        hf_token = env.get("HF_TOKEN") or None
        kwargs: dict[str, Any] = {
            "data_dir": Path(env.get("MAG_BOARD_DIR") or "leaderboard_data"),
            "db_path": Path(env["MAG_BOARD_DB"]) if env.get("MAG_BOARD_DB") else None,
            "gold": env.get("MAG_BOARD_GOLD") or None,
            "gold_token": env.get("MAG_BOARD_GOLD_TOKEN") or hf_token,
            "split": env.get("MAG_BOARD_SPLIT") or "test",
            "max_bytes": _env_int(env, "MAG_BOARD_MAX_MB", 20) * 1024 * 1024,
            "max_lines": _env_int(env, "MAG_BOARD_MAX_LINES", 200_000),
            "max_seeds": _env_int(env, "MAG_BOARD_MAX_SEEDS", 10),
            "score_seconds": float(_env_int(env, "MAG_BOARD_SCORE_SECONDS", 60)),
            "worker_mb": _env_int(env, "MAG_BOARD_WORKER_MB", 1024),
            "workers": _env_int(env, "MAG_BOARD_WORKERS", 2),
            "daily_cap": _env_int(env, "MAG_BOARD_DAILY_CAP", 5),
            "admins": frozenset(a.strip() for a in env.get("MAG_BOARD_ADMINS", "").split(",") if a.strip()),
            "sync_repo": env.get("MAG_BOARD_SYNC_REPO") or None,
            "sync_token": env.get("MAG_BOARD_SYNC_TOKEN") or hf_token,
            "verdicts": Path(env["MAG_BOARD_VERDICTS"]) if env.get("MAG_BOARD_VERDICTS") else None,
            "max_format_failure_rate": _env_int(env, "MAG_BOARD_MAX_FORMAT_FAILURES", 50) / 100,
        }
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kwargs)


# --------------------------------------------------------------------------- gold


@dataclass
class Gold:
    """The hidden gold: the scored split's steps of each view. Never leaves the server.

    Attributes:
        source: where it came from (folder, repo id, or a label for in-memory gold).
        split: the split.
        steps: view -> steps, in dataset order.
        public: the gold is the public bundled sample (anyone can score against it), not
            a hidden split; the main page says which.
    """

    source: str
    split: str
    steps: dict[View, list[Step]]
    public: bool = False
    _ids: dict[View, list[str]] = field(default_factory=dict, repr=False)
    _info: dict[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.steps = {View(v): list(s) for v, s in self.steps.items()}
        for view, steps in self.steps.items():
            if not steps:
                raise ValueError(f"gold {self.source} has no {view.value} {self.split} steps")
            self._ids[view] = [s.step_id for s in steps]

    def views(self) -> list[View]:
        return [v for v in View if v in self.steps]

    def step_ids(self, view: View) -> list[str]:
        return self._ids[View(view)]

    def menus(self, view: View | str, contract: Contract | str) -> dict[str, Any] | None:
        """The som candidate menus by step id where the scorer needs them: the coord view
        under J and JG, for guide-action consistency (which element a point hits), as
        ``mag score`` loads them. The two views share step ids."""
        if View(view) is not View.COORD or Contract(contract) not in (Contract.J, Contract.JG):
            return None
        if View.SOM not in self.steps:
            return None
        return {s.step_id: s.candidates for s in self.steps[View.SOM]}

    def describe(self) -> dict[str, Any]:
        """What the main page says about the gold: kind, split, sizes and fingerprints."""
        if self._info is None:
            from mag_dataset.scoring import dataset_fingerprint

            self._info = {
                "kind": "public sample" if self.public else "hidden",
                "source": self.source if not self.public else "bundled sample corpus",
                "split": self.split,
                "views": {
                    v.value: {"steps": len(st), "tasks": len({s.task_id for s in st}),
                              "fingerprint": dataset_fingerprint(st)}
                    for v, st in self.steps.items()
                },
            }
        return self._info

    @classmethod
    def load(cls, source: str | Path | None = None, split: str = "test", token: str | None = None) -> "Gold":
        """Load both views' ``split`` from a built folder, a Hub repo id, or the bundled corpus.

        Args:
            source: a built dataset folder or a Hub dataset repo id; ``None`` builds (once,
                cached) and uses the bundled sample corpus.
            split: the split to score against.
            token: Hub token for a private gold dataset.
        """
        from mag_dataset import dataset

        if source is None:
            folder: str | Path = dataset.bundled_dataset()
            label = f"bundled sample corpus ({folder})"
        elif dataset.is_local(source):  # a path (existing or written like one), not a repo id
            if not Path(source).expanduser().is_dir():
                raise FileNotFoundError(f"gold dataset folder not found: {source}")
            folder, label = Path(source).expanduser(), str(source)
        else:
            from huggingface_hub import snapshot_download

            folder = snapshot_download(repo_id=str(source), repo_type="dataset", token=token)
            label = str(source)
        steps = {view: dataset.load_steps(folder, view.value, split) for view in View}
        return cls(source=label, split=split, steps=steps, public=source is None)


# --------------------------------------------------------------------------- upload decoding


def file_extension(filename: str) -> str | None:
    """The accepted extension ``filename`` ends with (case-insensitive), else ``None``."""
    low = filename.lower()
    return next((ext for ext in EXTENSIONS if low.endswith(ext)), None)


def decode_upload(data: bytes, filename: str, *, max_bytes: int, max_lines: int) -> bytes:
    """Turn uploaded bytes into JSON Lines bytes, or refuse with a specific message.

    Checks, in order: extension, size cap, emptiness, (gzip / Parquet decoding), binary
    content, UTF-8, line count. JSON validity and step ids are checked afterwards by
    :func:`mag_dataset.predictions.read_predictions`.

    Args:
        data: the uploaded bytes.
        filename: the uploaded file's name (only its extension is used).
        max_bytes: upload cap; also the cap on a gzip file's decompressed size.
        max_lines: most non-empty lines allowed.

    Returns:
        UTF-8 JSON Lines bytes.

    Raises:
        SubmissionRejected: with the reason.
    """
    _check_upload_envelope(data, filename, max_bytes)
    ext = file_extension(filename)
    if ext == ".jsonl.gz":
        data = _gunzip(data, max_bytes)
        if not data.strip():
            raise SubmissionRejected("the file is empty after decompression: expected one JSON object per line")
    elif ext == ".parquet":
        data = _parquet_to_jsonl(data, max_lines, max_bytes)
    if not data.strip():
        raise SubmissionRejected("the file is empty: it holds only whitespace, expected one JSON object per line")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise SubmissionRejected(
            f"the file looks binary (a NUL byte at offset {nul}), not JSON Lines text"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise SubmissionRejected(
            f"line {line}: the file is not UTF-8 text (invalid byte 0x{data[e.start]:02x} at offset {e.start})"
        ) from None
    n_lines = sum(1 for line in data.splitlines() if line.strip())
    if n_lines > max_lines:
        raise SubmissionRejected(f"too many lines: {n_lines:,} non-empty lines, the limit is {max_lines:,}")
    return data


def _check_upload_envelope(data: bytes, filename: str, max_bytes: int) -> None:
    """The checks of :func:`decode_upload` that need no decoding: extension, size, emptiness."""
    if file_extension(filename) is None:
        suffix = Path(filename).suffix or "(none)"
        raise SubmissionRejected(
            f"wrong file extension {suffix!r}: upload a .jsonl, .jsonl.gz or .parquet predictions file"
        )
    if len(data) > max_bytes:
        raise SubmissionRejected(f"the file is {len(data):,} bytes, over the upload cap of {max_bytes:,} bytes")
    if not data:
        raise SubmissionRejected("the file is empty: expected one JSON object per line")


def content_sha256(predictions: Any) -> str:
    """SHA-256 of a predictions file's normalised content: its ``(seed, step_id, output,
    coord_space)`` records sorted, each output stripped of surrounding whitespace (which
    the format gate ignores). The same predictions in another line order, with blank
    lines, or as ``.jsonl.gz`` or ``.parquet`` hash the same."""
    records = sorted((p.seed, p.step_id, p.output.strip(), p.coord_space or "") for p in predictions)
    return hashlib.sha256(json.dumps(records, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


def format_gate_counts(predictions: Any) -> dict[tuple[str, str], int]:
    """How many outputs pass the format gate of each (view, contract)."""
    from mag_dataset.parsing import parse_output

    counts = {}
    outputs = [p.output for p in predictions]
    for v in View:
        for c in Contract:
            counts[(v.value, c.value)] = sum(1 for o in outputs if parse_output(o, v, c).ok)
    return counts


def check_integrity(predictions: Any, view: View, contract: Contract, max_failure_rate: float) -> dict[str, Any]:
    """Refuse a file that parses better under another view or contract, or whose format
    failures exceed ``max_failure_rate`` (see the module docstring).

    Returns:
        ``{"passed": n, "total": n, "best": (view, contract), "best_passed": n}``.

    Raises:
        SubmissionRejected: with the reason.
    """
    preds = list(predictions)
    total = len(preds)
    counts = format_gate_counts(preds)
    declared = counts[(view.value, contract.value)]
    best = max(counts, key=lambda k: (counts[k], k == (view.value, contract.value)))
    info = {"passed": declared, "total": total, "best": best, "best_passed": counts[best]}
    if counts[best] > declared:
        bv, bc = best
        raise SubmissionRejected(
            f"the outputs parse better under view {bv}, contract {bc} ({counts[best]:,} of {total:,} pass its "
            f"format gate) than under the declared view {view.value}, contract {contract.value} "
            f"({declared:,} of {total:,}): submit it as view {bv}, contract {bc}, or fix the outputs"
        )
    failures = total - declared
    if total and failures / total > max_failure_rate:
        raise SubmissionRejected(
            f"{failures:,} of {total:,} outputs ({failures / total:.1%}) fail the format gate of view {view.value}, "
            f"contract {contract.value}: the board accepts at most {max_failure_rate:.0%} format failures"
        )
    return info


def step_values(report: Any, step_ids: list[str], metric: str) -> list[float | None]:
    """Per-step mean over seeds of ``metric`` from a report kept with its steps, in
    ``step_ids`` order (``None`` where the metric does not apply)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for sc in report.steps or ():
        v = getattr(sc, metric)
        if v is not None:
            sums[sc.step_id] = sums.get(sc.step_id, 0.0) + float(v)
            counts[sc.step_id] = counts.get(sc.step_id, 0) + 1
    return [round(sums[i] / counts[i], 10) if counts.get(i) else None for i in step_ids]


def isolated_score(request: dict[str, Any]) -> dict[str, Any]:
    """Child side of :meth:`Board._score_isolated`: decode, validate and score one upload
    (or, with ``mode="validate"``, only check it: nothing is scored).

    Runs in :mod:`mag_dataset.isolation`'s limited child; returns plain data only.
    """
    from mag_dataset.predictions import PredictionsError, read_predictions
    from mag_dataset.scoring import score_predictions

    steps = request["steps"]
    validate = request.get("mode") == "validate"
    jsonl = decode_upload(request["data"], request["filename"], max_bytes=request["max_bytes"],
                          max_lines=request["max_lines"])
    del request["data"]
    ids = [s.step_id for s in steps]
    try:
        predictions = read_predictions(jsonl, ids, max_lines=request["max_lines"],
                                       max_seeds=request["max_seeds"], allow_missing=validate)
    except PredictionsError as e:
        raise SubmissionRejected(str(e)) from None
    del jsonl
    view, contract = View(request["view"]), Contract(request["contract"])
    if validate:
        return validation_summary(predictions, ids, view, contract, request["max_format_failure_rate"])
    check_integrity(predictions, view, contract, request["max_format_failure_rate"])
    report = score_predictions(predictions, steps, view, contract, verdicts=request["verdicts"],
                               menus=request.get("menus"), keep_steps=True)
    return {
        "report_json": report.to_json(),
        "seeds": len({p.seed for p in predictions}) or 1,
        "content_sha256": content_sha256(predictions),
        "step_values": step_values(report, ids, ranking_metric(contract)),
    }


def validation_summary(predictions: Any, step_ids: list[str], view: View, contract: Contract,
                       max_failure_rate: float) -> dict[str, Any]:
    """What "validate only" reports: step counts, missing ids per seed, the format gate, and
    whether the integrity rules would accept the file. No score, nothing stored."""
    preds = list(predictions)
    seeds = sorted({p.seed for p in preds}) or [0]
    have: dict[int, set[str]] = {sd: set() for sd in seeds}
    for p in preds:
        have[p.seed].add(p.step_id)
    missing = {sd: [i for i in step_ids if i not in have[sd]] for sd in seeds}
    problems = []
    for sd in seeds:
        if missing[sd]:
            problems.append(f"{len(missing[sd]):,} step id(s) have no prediction for seed {sd}")
    try:
        gate = check_integrity(preds, view, contract, max_failure_rate)
    except SubmissionRejected as e:
        problems.append(str(e))
        counts = format_gate_counts(preds)
        gate = {"passed": counts[(view.value, contract.value)], "total": len(preds)}
    return {
        "steps_expected": len(step_ids),
        "predictions": len(preds),
        "seeds": seeds,
        "missing": {str(sd): {"count": len(m), "first": m[:10]} for sd, m in missing.items()},
        "format_passed": gate["passed"],
        "content_sha256": content_sha256(preds),
        "problems": problems,
    }


def _gunzip(data: bytes, max_bytes: int) -> bytes:
    # Decompress in bounded chunks so a gzip bomb is refused before it fills memory.
    out = io.BytesIO()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        chunk = d.decompress(data, max_bytes + 1)
        while True:
            out.write(chunk)
            if out.tell() > max_bytes:
                raise SubmissionRejected(f"the gzip file decompresses to over the cap of {max_bytes:,} bytes")
            if not d.unconsumed_tail:
                break
            chunk = d.decompress(d.unconsumed_tail, max_bytes + 1 - out.tell())
        out.write(d.flush())
    except zlib.error as e:
        raise SubmissionRejected(f"the file ends in .jsonl.gz but is not valid gzip data ({e})") from None
    if not d.eof:
        raise SubmissionRejected("the .jsonl.gz file is truncated: the gzip stream does not end")
    if d.unused_data:
        raise SubmissionRejected(
            f"the .jsonl.gz file has {len(d.unused_data):,} more bytes after its gzip stream (a second gzip member?): "
            "compress the predictions as one gzip stream"
        )
    if out.tell() > max_bytes:
        raise SubmissionRejected(f"the gzip file decompresses to over the cap of {max_bytes:,} bytes")
    return out.getvalue()


#: Rows read from a Parquet file at a time.
PARQUET_BATCH_ROWS = 1024
_PARQUET_COLUMNS = ("step_id", "output", "seed", "coord_space")


def _parquet_to_jsonl(data: bytes, max_lines: int, max_bytes: int) -> bytes:
    """Parquet -> JSON Lines within a budget: metadata checks first, then bounded batches.

    From the footer alone: exactly the columns ``step_id``, ``output`` (strings), an
    optional integer ``seed`` and an optional string ``coord_space``, each once and flat; at most ``max_lines`` rows; declared
    uncompressed column sizes within ``max_bytes``. Then a first pass reads the strings
    dictionary-encoded (a value repeated on many rows is held once) and adds up their
    decoded size, so a file whose strings decode to over ``max_bytes`` is refused before
    any of them is expanded; only then a second pass converts batch by batch.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        meta, schema = pf.metadata, pf.schema_arrow
    except Exception as e:  # pyarrow raises several types for a non-Parquet file
        raise SubmissionRejected(f"the file ends in .parquet but is not a readable Parquet file ({type(e).__name__})") from None
    names = list(schema.names)
    for name in names:
        if names.count(name) > 1:
            raise SubmissionRejected(f"the Parquet file has the column {name!r} {names.count(name)} times: each column may appear once")
    missing = [c for c in ("step_id", "output") if c not in names]
    if missing:
        raise SubmissionRejected(f"the Parquet file lacks the column(s) {missing}: it needs step_id and output (and optionally seed)")
    extra = sorted(set(names) - set(_PARQUET_COLUMNS))
    if extra:
        raise SubmissionRejected(
            f"the Parquet file has unexpected column(s) {extra}: only step_id, output, seed and coord_space are allowed"
        )
    string_cols = [c for c in ("step_id", "output", "coord_space") if c in names]
    for col in string_cols:
        t = schema.field(col).type
        value_type = t.value_type if pa.types.is_dictionary(t) else t
        if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
            raise SubmissionRejected(f"the Parquet column {col!r} must be strings, got {t}")
    if "seed" in names:
        seed_type = schema.field("seed").type
        if not (pa.types.is_integer(seed_type) or pa.types.is_null(seed_type)):
            raise SubmissionRejected(f"the Parquet column 'seed' must be integers, got {seed_type}")
    if meta.num_columns != len(names):  # a nested column has several leaves
        raise SubmissionRejected(f"the Parquet file has {meta.num_columns} leaf columns for {len(names)} fields: nested columns are not allowed")
    if meta.num_rows > max_lines:
        raise SubmissionRejected(f"too many lines: {meta.num_rows:,} rows, the limit is {max_lines:,}")
    declared = 0
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        for j in range(rg.num_columns):
            col = rg.column(j)
            if col.num_values > max(rg.num_rows, 0):
                raise SubmissionRejected(
                    f"the Parquet column {col.path_in_schema!r} declares {col.num_values:,} values in a row group of "
                    f"{rg.num_rows:,} rows: only flat columns are allowed"
                )
            declared += max(int(col.total_uncompressed_size), 0)
    if declared > max_bytes:
        raise SubmissionRejected(
            f"the Parquet file declares {declared:,} bytes of uncompressed column data, over the cap of {max_bytes:,} bytes"
        )
    try:
        # pass 1: sizes only, strings kept dictionary-encoded
        decoded, rows = 0, 0
        sized = pq.ParquetFile(io.BytesIO(data), read_dictionary=string_cols)
        for batch in sized.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=string_cols, use_threads=False):
            rows += batch.num_rows
            if rows > max_lines:
                raise SubmissionRejected(f"too many lines: over {max_lines:,} rows, the limit is {max_lines:,}")
            for arr in batch.columns:
                if not isinstance(arr, pa.DictionaryArray):
                    arr = arr.dictionary_encode()
                lengths = pc.take(pc.binary_length(arr.dictionary), arr.indices)
                decoded += int(pc.sum(lengths).as_py() or 0)
            if decoded > max_bytes:
                raise SubmissionRejected(
                    f"the Parquet file's strings decode to at least {decoded:,} bytes (a value repeated on many rows "
                    f"counts on each), over the cap of {max_bytes:,} bytes"
                )
        # pass 2: convert, batch by batch
        lines: list[str] = []
        row = 0
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
            cols = {name: batch.column(name) for name in batch.schema.names}
            values = {}
            for name in string_cols:
                arr = cols[name]
                if pa.types.is_dictionary(arr.type):
                    arr = arr.dictionary_decode()
                values[name] = arr.cast(pa.large_binary()).to_pylist()
            seeds = cols["seed"].to_pylist() if "seed" in cols else [None] * batch.num_rows
            for i in range(batch.num_rows):
                row += 1
                rec: dict[str, Any] = {}
                for name in string_cols:
                    raw = values[name][i]
                    if raw is None:
                        if name != "coord_space":
                            rec[name] = None
                        continue
                    try:
                        rec[name] = raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise SubmissionRejected(
                            f"row {row}: the Parquet column {name!r} holds invalid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})"
                        ) from None
                if seeds[i] is not None:
                    rec["seed"] = seeds[i]
                lines.append(json.dumps(rec, ensure_ascii=False))
    except SubmissionRejected:
        raise
    except MemoryError:
        raise
    except Exception as e:  # corrupt pages, a footer that lies about the data, ...
        raise SubmissionRejected(f"the Parquet file could not be read ({type(e).__name__}: {str(e)[:200]})") from None
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- records


#: Bidirectional-text controls: they make a name display differently from how it is stored
#: (U+202E turns "fo\u202eoba" into "foabo"), so a name could pass for another.
BIDI_CONTROLS: frozenset[int] = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})


def check_characters(text: str, what: str) -> None:
    """Refuse lone surrogates (not storable as UTF-8) and bidirectional controls in ``text``."""
    for i, ch in enumerate(text, 1):
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF:
            raise SubmissionRejected(
                f"{what} contains a lone surrogate U+{o:04X} (character {i}), which is not valid Unicode text"
            )
        if o in BIDI_CONTROLS:
            raise SubmissionRejected(
                f"{what} contains the bidirectional control character U+{o:04X} (character {i}), "
                "which makes text display differently from how it is stored"
            )


def clean_text(value: str | None, what: str, limit: int = MAX_NAME_CHARS, required: bool = False) -> str:
    """Normalise a free-text field (names) or refuse it; the text is always shown as text."""
    if value is not None and not isinstance(value, str):
        raise SubmissionRejected(f"{what} must be text, got {type(value).__name__}")
    text = " ".join((value or "").split())
    if required and not text:
        raise SubmissionRejected(f"{what} is required")
    if len(text) > limit:
        raise SubmissionRejected(f"{what} is {len(text)} characters long, the limit is {limit}")
    check_characters(text, what)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise SubmissionRejected(f"{what} contains control characters")
    return text


def clean_link(value: str | None) -> str:
    """An optional link: empty, or an http(s) URL without spaces."""
    if value is not None and not isinstance(value, str):
        raise SubmissionRejected(f"link must be text, got {type(value).__name__}")
    link = (value or "").strip()
    if not link:
        return ""
    if len(link) > MAX_LINK_CHARS:
        raise SubmissionRejected(f"link is {len(link)} characters long, the limit is {MAX_LINK_CHARS}")
    check_characters(link, "link")
    low = link.lower()
    if not (low.startswith("http://") or low.startswith("https://")) or len(link.split("//", 1)[1]) == 0:
        raise SubmissionRejected("link must be an http:// or https:// URL")
    if any(c.isspace() or ord(c) < 32 for c in link) or any(c in link for c in "<>\"'`"):
        raise SubmissionRejected("link must be a plain URL (no spaces, quotes or angle brackets)")
    return link


def summary_from_report(report: dict[str, Any]) -> dict[str, float | None]:
    """The board's metric columns from a report dict (``None`` where not applicable)."""
    return {key: metric_value(report.get(key)) for key in METRIC_COLUMNS}


def metric_value(v: Any) -> float | None:
    """A report entry's headline number: a bare number, or an aggregate's ``micro`` mean
    (breakdown entries carry ``value``); ``None`` when not applicable."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        for key in ("mean", "value", "micro", "score"):
            if key in v:
                return metric_value(v[key])
    return None


def report_fingerprint(report: dict[str, Any]) -> str:
    """The gold fingerprint recorded in a report's provenance block."""
    prov = report.get("provenance") or {}
    for key in ("dataset_fingerprint", "gold_fingerprint", "fingerprint"):
        if prov.get(key):
            return str(prov[key])
    raise ValueError("the report's provenance carries no dataset fingerprint")


@dataclass(frozen=True)
class Submission:
    """One stored submission (a row of the board)."""

    id: int
    created_at: str
    submitter: str
    model_name: str
    organisation: str
    link: str
    provenance_tag: str
    view: str
    contract: str
    split: str
    file_sha256: str
    file_ext: str
    file_size: int
    seeds: int
    scorer_version: str
    gold_fingerprint: str
    summary: dict[str, float | None]
    report_json: str
    content_sha256: str | None = None

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(self.report_json)

    @property
    def metric(self) -> str:
        """The report key that ranks this submission (:func:`ranking_metric`)."""
        return ranking_metric(self.contract)

    @property
    def ci95(self) -> tuple[float, float] | None:
        """The report's task-level bootstrap 95% interval of the ranking metric's micro mean."""
        block = self.report.get(self.metric)
        ci = block.get("ci95") if isinstance(block, dict) else None
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci):
            return float(ci[0]), float(ci[1])
        return None

    @property
    def date(self) -> str:
        return self.created_at[:10]

    def public_dict(self) -> dict[str, Any]:
        """What the board shows: everything but the submitter's name and the report body."""
        return {
            "id": self.id,
            "date": self.date,
            "model_name": self.model_name,
            "organisation": self.organisation,
            "link": self.link,
            "provenance_tag": self.provenance_tag,
            "view": self.view,
            "contract": self.contract,
            "split": self.split,
            "seeds": self.seeds,
            "file_sha256": self.file_sha256,
            "scorer_version": self.scorer_version,
            "gold_fingerprint": self.gold_fingerprint,
            **self.summary,
            "ranking_metric": self.metric,
            "ci95_low": None if self.ci95 is None else self.ci95[0],
            "ci95_high": None if self.ci95 is None else self.ci95[1],
        }


_COLUMNS = (
    "id, created_at, submitter, model_name, organisation, link, provenance_tag, view, contract, split, "
    "file_sha256, file_ext, file_size, seeds, scorer_version, gold_fingerprint, summary_json, report_json, "
    "content_sha256"
)


def _row_to_submission(row: tuple) -> Submission:
    values = list(row)
    values[16] = json.loads(values[16])
    return Submission(*values)


@dataclass(frozen=True)
class Ranked:
    """One row of a ranked table (:meth:`Board.ranking`).

    Attributes:
        rank: one plus the number of submissions of the table that beat this one
            significantly (shared when differences are not significant).
        submission: the submission.
        metric: the ranking metric's report key.
        value: its micro mean (``None`` if the file scored none).
        ci95: the report's 95% interval of that mean, or ``None``.
        beaten_by: ids of the submissions that beat it significantly.
    """

    rank: int
    submission: Submission
    metric: str
    value: float | None
    ci95: tuple[float, float] | None
    beaten_by: tuple[int, ...] = ()


@dataclass(frozen=True)
class RescoreResult:
    """Outcome of re-scoring one stored submission."""

    id: int
    identical: bool
    stored_version: str
    current_version: str
    detail: str = ""
    failed: bool = False  # the stored file could not be re-scored (missing, altered, gold without its ids)


# --------------------------------------------------------------------------- the board


class Board:
    """The leaderboard: validate, score with the library, store, list.

    Thread-safe: each operation opens its own short-lived SQLite connection; writes take
    a process lock and a ``BEGIN IMMEDIATE`` transaction, so concurrent submissions are
    never lost.

    Args:
        config: settings.
        gold: the gold; loaded from ``config`` on first use when not given.
        clock: returns the current UTC time (tests pass a fixed clock).
    """

    def __init__(
        self,
        config: BoardConfig,
        gold: Gold | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = config
        self._gold = gold
        self._verdicts: Any = None
        self._gold_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._sync_lock = threading.Lock()
        self._workers = threading.BoundedSemaphore(config.workers)
        config.data_dir.mkdir(parents=True, exist_ok=True)
        config.db_path.parent.mkdir(parents=True, exist_ok=True)
        self._sync_blocked: str | None = None
        if config.sync_repo and not config.db_path.exists():
            try:
                restore_from_hub(config)
            except Exception as e:  # a Space must still start when the Hub is down ...
                # ... but must not then overwrite the mirror with a database that lacks its rows
                self._sync_blocked = f"the start-up restore from {config.sync_repo} failed ({e})"
                log.warning("could not restore the board from %s: %s; Hub sync is off for this run",
                            config.sync_repo, e)
        self._rank_cache: dict[tuple, list[Ranked]] = {}
        self._pair_p: dict[tuple[int, int], float] = {}
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)
            have = {r[1] for r in con.execute("PRAGMA table_info(submissions)")}
            for name, sql_type in _ADDED_COLUMNS:
                if name not in have:
                    con.execute(f"ALTER TABLE submissions ADD COLUMN {name} {sql_type}")

    # ---- infrastructure

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.config.db_path, timeout=60, isolation_level=None)
        try:
            con.execute("PRAGMA busy_timeout=60000")
            con.execute("PRAGMA synchronous=NORMAL")
            yield con
        finally:
            con.close()

    @property
    def verdicts(self) -> Any:
        """The cached judge verdicts (``None`` when not configured), read once."""
        if self.config.verdicts is None:
            return None
        if self._verdicts is None:
            from mag_dataset.verdicts import read_verdicts

            self._verdicts = read_verdicts(self.config.verdicts)
        return self._verdicts

    @property
    def gold(self) -> Gold:
        if self._gold is None:
            with self._gold_lock:
                if self._gold is None:
                    self._gold = Gold.load(self.config.gold, self.config.split, self.config.gold_token)
        return self._gold

    def file_path(self, sha256: str, ext: str) -> Path:
        """Where the uploaded bytes with this hash are kept."""
        return self.config.files_dir / sha256[:2] / f"{sha256}{ext}"

    # ---- submitting

    def submit(
        self,
        *,
        data: bytes,
        filename: str,
        model_name: str,
        view: str,
        contract: str,
        submitter: str | None = None,
        organisation: str = "",
        link: str = "",
        provenance_tag: str = "self-reported",
    ) -> Submission:
        """Validate, score and store one predictions file.

        Args:
            data: the uploaded bytes.
            filename: the uploaded file's name (for its extension).
            model_name: shown on the board.
            view: ``som`` or ``coord``.
            contract: ``A``, ``G``, ``J`` or ``JG``.
            submitter: who submits (the HF login on a Space); the daily cap counts per
                submitter. Defaults to the organisation, else the model name.
            organisation: shown on the board.
            link: optional http(s) link (paper, model card).
            provenance_tag: one of :data:`PROVENANCE_TAGS`.

        Returns:
            The stored submission.

        Raises:
            SubmissionRejected: for any bad input or limit; nothing is stored then.
        """
        model_name = clean_text(model_name, "model name", required=True)
        organisation = clean_text(organisation, "organisation")
        link = clean_link(link)
        v = _parse_enum(View, view, "view")
        c = _parse_enum(Contract, contract, "contract")
        tag = (provenance_tag or "self-reported").strip() if isinstance(provenance_tag, (str, type(None))) else provenance_tag
        if tag not in PROVENANCE_TAGS:
            raise SubmissionRejected(f"provenance tag must be one of {list(PROVENANCE_TAGS)}, got {tag!r}")
        who = clean_text(submitter, "submitter") or organisation or model_name
        if not isinstance(data, (bytes, bytearray)):
            raise SubmissionRejected("no predictions file was uploaded")
        data = bytes(data)
        ext = file_extension(filename or "")
        _check_upload_envelope(data, filename or "", self.config.max_bytes)
        sha = hashlib.sha256(data).hexdigest()
        with self._connect() as con:  # cheap early checks, repeated under the write lock
            self._check_limits(con, who, sha, v, c)
        gold = self.gold
        if v not in gold.steps:
            raise SubmissionRejected(f"this board has no gold for the {v.value} view")
        scored = self._score_isolated(data, filename or "", v, c)
        content = str(scored["content_sha256"])
        with self._connect() as con:
            self._check_limits(con, who, sha, v, c, content)
        report_json = scored["report_json"]
        report_dict = json.loads(report_json)
        seeds = int(scored["seeds"])
        version = str(report_dict.get("provenance", {}).get("scorer_version") or _scorer_version())
        row = {
            "created_at": self._clock().astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "submitter": who,
            "model_name": model_name,
            "organisation": organisation,
            "link": link,
            "provenance_tag": tag,
            "view": v.value,
            "contract": c.value,
            "split": gold.split,
            "file_sha256": sha,
            "file_ext": ext,
            "file_size": len(data),
            "seeds": seeds,
            "scorer_version": version,
            "gold_fingerprint": report_fingerprint(report_dict),
            "summary_json": json.dumps(summary_from_report(report_dict), sort_keys=True),
            "report_json": report_json,
            "content_sha256": content,
            "step_values_json": json.dumps(scored["step_values"]),
        }
        new_id = self._store(row, data, who)
        sub = self.get(new_id)
        assert sub is not None
        if self.config.sync_repo:
            threading.Thread(target=self._sync_quietly, args=(sub,), daemon=True).start()
        return sub

    def validate(self, *, data: bytes, filename: str, view: str, contract: str) -> dict[str, Any]:
        """"Validate only": decode and check a file as :meth:`submit` would, without scoring
        or storing it (so it reveals no score and counts against no cap).

        Returns:
            :func:`validation_summary`'s dict plus ``duplicate_of`` (the id of a stored
            submission with the same content, view and contract, or ``None``).

        Raises:
            SubmissionRejected: a file that cannot be read at all (the reason).
        """
        v = _parse_enum(View, view, "view")
        c = _parse_enum(Contract, contract, "contract")
        if not isinstance(data, (bytes, bytearray)):
            raise SubmissionRejected("no predictions file was uploaded")
        _check_upload_envelope(bytes(data), filename or "", self.config.max_bytes)
        if v not in self.gold.steps:
            raise SubmissionRejected(f"this board has no gold for the {v.value} view")
        out = self._score_isolated(bytes(data), filename or "", v, c, mode="validate")
        with self._connect() as con:
            self._backfill_content(con)
            dup = _same(con, "content_sha256", out["content_sha256"], v, c)
        out["duplicate_of"] = dup
        if dup:
            out["problems"].append(f"the same predictions were already scored (submission #{dup})")
        return out

    def _score_isolated(self, data: bytes, filename: str, view: View, contract: Contract,
                        mode: str = "score") -> dict[str, Any]:
        """Decode, validate and score an upload in a limited child process (see the module docstring)."""
        from mag_dataset.isolation import Limits, run_isolated

        cfg = self.config
        request = {
            "data": data, "filename": filename, "view": view.value, "contract": contract.value,
            "steps": self.gold.steps[view], "verdicts": self.verdicts, "max_bytes": cfg.max_bytes,
            "max_lines": cfg.max_lines, "max_seeds": cfg.max_seeds, "mode": mode,
            "menus": self.gold.menus(view, contract), "max_format_failure_rate": cfg.max_format_failure_rate,
        }
        with self._workers:
            try:
                out = run_isolated("board.score", request, Limits(memory_mb=cfg.worker_mb, seconds=cfg.score_seconds))
            except OSError as e:  # no process could be started (out of PIDs, memory): not the file's fault
                log.warning("could not start the isolated scorer: %s", e)
                raise SubmissionRejected("the server could not start a scoring process right now; try again later") from None
        if out.kind == "ok" and isinstance(out.value, dict):
            return out.value
        if out.kind == "refused":
            raise SubmissionRejected(out.message)
        if out.kind == "time":
            raise SubmissionRejected(
                f"decoding and scoring this file took longer than the limit of {cfg.score_seconds:g} s per submission"
            )
        if out.kind == "memory":
            raise SubmissionRejected(
                f"decoding this file needs more than the memory limit of {cfg.worker_mb:,} MiB per submission"
            )
        log.warning("isolated scoring of %s failed: %s %s", filename, out.kind, out.message)
        raise SubmissionRejected(f"the file could not be decoded: {out.message}")

    def _check_limits(self, con: sqlite3.Connection, who: str, sha: str, view: View, contract: Contract,
                      content: str | None = None) -> None:
        dup = _same(con, "file_sha256", sha, view, contract)
        if dup:
            raise SubmissionRejected(
                f"this exact file was already scored for view {view.value}, contract {contract.value} "
                f"(submission #{dup}); it is not scored twice"
            )
        if content is not None:
            self._backfill_content(con)
            dup = _same(con, "content_sha256", content, view, contract)
            if dup:
                raise SubmissionRejected(
                    f"the same predictions (the same step ids and outputs, whatever the file's format, line order "
                    f"or blank lines) were already scored for view {view.value}, contract {contract.value} "
                    f"(submission #{dup}); they are not scored twice"
                )
        if who in self.config.admins:
            return
        day = self._clock().astimezone(timezone.utc).strftime("%Y-%m-%d")
        (n,) = con.execute(
            "SELECT COUNT(*) FROM submissions WHERE submitter=? AND substr(created_at, 1, 10)=?", (who, day)
        ).fetchone()
        if n >= self.config.daily_cap:
            raise SubmissionRejected(
                f"daily limit reached: {who!r} already has {n} submission(s) today (UTC), the cap is "
                f"{self.config.daily_cap}; try again tomorrow"
            )

    def _store(self, row: dict[str, Any], data: bytes, who: str) -> int:
        path = self.file_path(row["file_sha256"], row["file_ext"])
        with self._write_lock, self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            created_file = False
            try:
                self._check_limits(con, who, row["file_sha256"], View(row["view"]), Contract(row["contract"]),
                                   row.get("content_sha256"))
                if not path.exists():
                    atomic_write(path, data, fsync=True)
                    created_file = True
                cur = con.execute(
                    f"INSERT INTO submissions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                    tuple(row.values()),
                )
                con.execute("COMMIT")
                self._rank_cache.clear()
                return int(cur.lastrowid)
            except BaseException:
                con.execute("ROLLBACK")
                if created_file:
                    path.unlink(missing_ok=True)
                raise

    # ---- reading

    def get(self, submission_id: int) -> Submission | None:
        with self._connect() as con:
            row = con.execute(f"SELECT {_COLUMNS} FROM submissions WHERE id=?", (int(submission_id),)).fetchone()
        return _row_to_submission(row) if row else None

    def submissions(self, view: str | None = None, contract: str | None = None) -> list[Submission]:
        """Stored submissions, oldest first, optionally filtered."""
        sql, args = f"SELECT {_COLUMNS} FROM submissions WHERE 1=1", []
        if view:
            sql += " AND view=?"
            args.append(View(view).value)
        if contract:
            sql += " AND contract=?"
            args.append(Contract(contract).value)
        with self._connect() as con:
            rows = con.execute(sql + " ORDER BY id", args).fetchall()
        return [_row_to_submission(r) for r in rows]

    def count(self) -> int:
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM submissions").fetchone()[0])

    def ranked(self, view: str, contract: str | None = None) -> list[tuple[int, Submission]]:
        """``(rank, submission)`` pairs of :meth:`ranking`."""
        return [(r.rank, r.submission) for r in self.ranking(view, contract)]

    def ranking(self, view: str, contract: str | None = None) -> list[Ranked]:
        """Submissions of a view ranked within their contract (the rule of the module
        docstring: one plus the number of submissions that beat it significantly).

        Returns:
            Rows ordered by contract (A, G, J, JG), then by :func:`rank_key`.
        """
        out: list[Ranked] = []
        subs = self.submissions(view, contract)
        for c in Contract:
            group = sorted((s for s in subs if s.contract == c.value), key=rank_key)
            if group:
                out.extend(self._rank_group(View(view), c, group))
        return out

    def _rank_group(self, view: View, contract: Contract, group: list[Submission]) -> list[Ranked]:
        from mag_dataset.compare import BINARY_METRICS, paired_test

        key = (view.value, contract.value, tuple(s.id for s in group))
        cached = self._rank_cache.get(key)
        if cached is not None:
            return cached
        metric = ranking_metric(contract)
        values = {s.id: self.step_values(s) for s in group}
        tasks = self._step_tasks(view)
        beaten: dict[int, list[int]] = {s.id: [] for s in group}
        for i, better in enumerate(group):
            for worse in group[i + 1:]:
                hi, lo = better.summary.get(metric), worse.summary.get(metric)
                if hi is None or (lo is not None and hi <= lo):
                    continue
                va, vb = values[worse.id], values[better.id]
                if va is None or vb is None:  # a stored file that cannot be re-scored: compare by the means
                    p = 0.0
                else:
                    pair = (worse.id, better.id)
                    if pair not in self._pair_p:  # a pair's test never changes: a new submission adds N tests
                        self._pair_p[pair] = paired_test(va, vb, tasks, binary=metric in BINARY_METRICS,
                                                         interval=False)["p_value"]
                    p = self._pair_p[pair]
                if p < RANK_ALPHA:
                    beaten[worse.id].append(better.id)
        rows = [Ranked(rank=1 + len(beaten[s.id]), submission=s, metric=metric, value=s.summary.get(metric),
                       ci95=s.ci95, beaten_by=tuple(beaten[s.id])) for s in group]
        self._rank_cache[key] = rows
        return rows

    def _step_tasks(self, view: View) -> list[str]:
        return [s.task_id for s in self.gold.steps[view]]

    def step_values(self, sub: Submission) -> list[float | None] | None:
        """Per-step values of a submission's ranking metric (mean over its seeds), in gold
        order: stored at submission, else re-scored once from the stored file and kept.
        ``None`` when the stored file no longer scores against this gold."""
        with self._connect() as con:
            row = con.execute("SELECT step_values_json FROM submissions WHERE id=?", (sub.id,)).fetchone()
        if row and row[0]:
            vals = json.loads(row[0])
            if len(vals) == len(self.gold.step_ids(View(sub.view))):
                return vals
        try:
            report = self._rescore(sub, keep_steps=True)
        except (OSError, ValueError) as e:
            log.warning("cannot re-score submission #%s for its rank: %s", sub.id, e)
            return None
        vals = step_values(report, self.gold.step_ids(View(sub.view)), sub.metric)
        with self._write_lock, self._connect() as con:
            con.execute("UPDATE submissions SET step_values_json=? WHERE id=?", (json.dumps(vals), sub.id))
        return vals

    def _rescore(self, sub: Submission, *, keep_steps: bool = False, bootstrap: bool = True) -> Any:
        """Score a stored submission's file again against the current gold (a Report)."""
        from mag_dataset.scoring import score_predictions

        v, c, gold = View(sub.view), Contract(sub.contract), self.gold
        if v not in gold.steps:
            raise ValueError(f"the gold has no {v.value} view")
        predictions = self._stored_predictions(sub)
        kwargs: dict[str, Any] = {} if bootstrap else {"bootstrap_resamples": 0}
        return score_predictions(predictions, gold.steps[v], v, c, verdicts=self.verdicts, keep_steps=keep_steps,
                                 menus=gold.menus(v, c), **kwargs)

    def _stored_predictions(self, sub: Submission) -> list[Any]:
        """The predictions of a stored file, read against the current gold's step ids."""
        from mag_dataset.predictions import read_predictions

        jsonl = decode_upload(self.read_file(sub), f"x{sub.file_ext}",
                              max_bytes=max(self.config.max_bytes, sub.file_size) * 64, max_lines=10**9)
        return read_predictions(jsonl, self.gold.step_ids(View(sub.view)), max_lines=10**9)

    def _backfill_content(self, con: sqlite3.Connection) -> None:
        """Fill ``content_sha256`` of rows stored before it existed (decoded from their files)."""
        rows = con.execute("SELECT id FROM submissions WHERE content_sha256 IS NULL").fetchall()
        for (sid,) in rows:
            sub = self.get(sid)
            assert sub is not None
            try:
                content = content_sha256(self._stored_predictions(sub))
            except (OSError, ValueError, KeyError):  # a missing file, or gold without its ids
                content = f"unreadable:{sub.file_sha256}"
            con.execute("UPDATE submissions SET content_sha256=? WHERE id=?", (content, sid))

    def public_report(self, sub: Submission) -> dict[str, Any]:
        """The report a visitor may download: the stored report with its breakdowns cut to
        the granularity rule (:func:`public_report`)."""
        return public_report(sub.report)

    def read_file(self, sub: Submission) -> bytes:
        """The stored bytes of a submission, checked against its SHA-256."""
        data = self.file_path(sub.file_sha256, sub.file_ext).read_bytes()
        if hashlib.sha256(data).hexdigest() != sub.file_sha256:
            raise ValueError(f"stored file of submission #{sub.id} does not match its SHA-256")
        return data

    def compare(self, id_a: int, id_b: int, *, resamples: int = 1000, seed: int = 0) -> Any:
        """Paired comparison of two stored submissions of the same view (B - A), with
        :func:`mag_dataset.compare.compare_reports`, the library call behind ``mag compare``.

        Raises:
            SubmissionRejected: an unknown id, or submissions of different views.
        """
        from mag_dataset.compare import compare_reports

        subs = [self.get(i) for i in (id_a, id_b)]
        if any(s is None for s in subs):
            raise SubmissionRejected("choose two stored submissions")
        a, b = subs  # type: ignore[misc]
        if a.view != b.view:
            raise SubmissionRejected(f"submissions #{a.id} ({a.view}) and #{b.id} ({b.view}) are of different views")
        v, gold = View(a.view), self.gold
        if v not in gold.steps:
            raise SubmissionRejected(f"this board has no gold for the {v.value} view")
        reports = [self._rescore(sub, keep_steps=True, bootstrap=False) for sub in (a, b)]
        return coarsen_comparison(compare_reports(reports[0], reports[1], gold.steps[v], resamples=resamples, seed=seed))

    # ---- admin

    def rescore_all(self, update: bool = False) -> list[RescoreResult]:
        """Re-score every stored submission from its stored file and compare reports.

        Args:
            update: store the new report (and scorer version, fingerprint, summary) where
                it differs, e.g. after a deliberate scorer change.

        Returns:
            One result per submission; ``identical`` means byte-identical report JSON.
        """
        results = []
        for sub in self.submissions():
            try:
                new_json = self._rescore(sub).to_json()
            except (OSError, ValueError) as e:  # PredictionsError and SubmissionRejected are ValueErrors
                results.append(RescoreResult(sub.id, False, sub.scorer_version, _scorer_version(),
                                             f"cannot re-score: {e}", failed=True))
                continue
            new_dict = json.loads(new_json)
            version = str(new_dict.get("provenance", {}).get("scorer_version") or _scorer_version())
            same = new_json == sub.report_json
            detail = ""
            if not same:
                old = sub.report
                changed = [k for k in sorted(set(old) | set(new_dict)) if old.get(k) != new_dict.get(k)]
                detail = f"changed keys: {', '.join(changed) or '(formatting only)'}"
                if report_fingerprint(new_dict) != sub.gold_fingerprint:
                    detail += "; the gold changed since it was scored"
                if update:
                    with self._write_lock, self._connect() as con:
                        con.execute("BEGIN IMMEDIATE")
                        con.execute(
                            "UPDATE submissions SET report_json=?, summary_json=?, scorer_version=?, gold_fingerprint=?, "
                            "step_values_json=NULL WHERE id=?",
                            (new_json, json.dumps(summary_from_report(new_dict), sort_keys=True), version,
                             report_fingerprint(new_dict), sub.id),
                        )
                        con.execute("COMMIT")
                    self._rank_cache.clear()
                    self._pair_p.clear()
            results.append(RescoreResult(sub.id, same, sub.scorer_version, version, detail))
        return results

    def snapshot(self, dest: Path) -> Path:
        """A consistent copy of the database (SQLite online backup), for syncing."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.unlink(missing_ok=True)
        with self._connect() as con:
            target = sqlite3.connect(tmp)
            try:
                con.backup(target)
            finally:
                target.close()
        os.replace(tmp, dest)
        return dest

    def sync_payload(self, dest: Path) -> list[tuple[str, Path]]:
        """What a sync uploads: a database snapshot and the files not yet synced.

        Args:
            dest: folder for the snapshot.

        Returns:
            ``(path in the repo, local file)`` pairs: ``board.sqlite`` and
            ``files/<sha[:2]>/<sha><ext>`` for every submission newer than the last
            successful sync (so a failed sync is caught up by the next one).
        """
        with self._connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key='last_synced_id'").fetchone()
        last = int(row[0]) if row else 0
        snap = self.snapshot(Path(dest) / "board.sqlite")
        payload = [("board.sqlite", snap)]
        seen = set()
        for s in self.submissions():
            p = self.file_path(s.file_sha256, s.file_ext)
            if s.id > last and p not in seen:
                seen.add(p)
                payload.append((p.relative_to(self.config.data_dir).as_posix(), p))
        return payload

    def mark_synced(self, up_to_id: int) -> None:
        """Record that every submission up to ``up_to_id`` has its file in the mirror."""
        with self._write_lock, self._connect() as con:
            con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_synced_id', ?)", (str(int(up_to_id)),))

    def sync_to_hub(self) -> None:
        """Upload a database snapshot and the not-yet-synced files to ``sync_repo`` (one commit)."""
        from huggingface_hub import CommitOperationAdd, HfApi

        if not self.config.sync_repo:
            raise ValueError("MAG_BOARD_SYNC_REPO is not set")
        if self._sync_blocked:
            raise RuntimeError(f"Hub sync is off for this run: {self._sync_blocked}")
        with self._sync_lock, tempfile.TemporaryDirectory() as tmp:
            top = max((s.id for s in self.submissions()), default=0)
            payload = self.sync_payload(Path(tmp))
            ops = [CommitOperationAdd(path_in_repo, str(local)) for path_in_repo, local in payload]
            api = HfApi(token=self.config.sync_token)
            api.create_repo(self.config.sync_repo, repo_type="dataset", private=True, exist_ok=True)
            api.create_commit(
                self.config.sync_repo, ops, commit_message=f"board: {top} submissions", repo_type="dataset"
            )
            self.mark_synced(top)

    def _sync_quietly(self, sub: Submission) -> None:
        try:
            self.sync_to_hub()
        except Exception as e:  # the submission is stored locally either way; the next sync catches up
            log.warning("Hub sync of submission #%s to %s failed: %s", sub.id, self.config.sync_repo, e)


def restore_from_folder(config: BoardConfig, folder: Path) -> bool:
    """Put a mirrored ``board.sqlite`` and ``files/`` from ``folder`` into ``config``'s place.

    Returns:
        Whether a database was found and restored. Files are written before the database,
        each atomically, so a row never points at a missing file.
    """
    folder = Path(folder)
    src_db = folder / "board.sqlite"
    if not src_db.is_file():
        return False
    files = folder / "files"
    for f in sorted(files.rglob("*")) if files.is_dir() else []:
        if f.is_file():
            dest = config.data_dir / f.relative_to(folder)
            if not dest.exists():
                atomic_write(dest, f.read_bytes(), fsync=True)
    atomic_write(Path(config.db_path), src_db.read_bytes(), fsync=True)
    return True


def restore_from_hub(config: BoardConfig) -> bool:
    """Download the mirror in ``config.sync_repo`` and restore it (see :func:`restore_from_folder`)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RepositoryNotFoundError

    with tempfile.TemporaryDirectory() as tmp:
        try:
            folder = snapshot_download(config.sync_repo, repo_type="dataset", token=config.sync_token, local_dir=tmp)
        except RepositoryNotFoundError:
            return False  # no mirror yet: the first sync creates it (with the same token)
        return restore_from_folder(config, Path(folder))


def ranking_metric(contract: Contract | str) -> str:
    """The report key that ranks a contract's table: BLEU-1 for G, SAA for the rest."""
    return "bleu1" if Contract(contract) is Contract.G else "saa"


def _pool(groups: dict[str, dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Pool breakdown groups: step counts add up, each metric is the n-weighted mean."""
    out: dict[str, Any] = {"steps": sum(int(groups[g].get("steps") or 0) for g in names)}
    metrics = {k for g in names for k, v in groups[g].items() if isinstance(v, dict)}
    for m in sorted(metrics):
        n = sum(int((groups[g].get(m) or {}).get("n") or 0) for g in names)
        total = sum(float((groups[g].get(m) or {}).get("value") or 0.0) * int((groups[g].get(m) or {}).get("n") or 0)
                    for g in names if isinstance(groups[g].get(m), dict) and groups[g][m].get("value") is not None)
        out[m] = {"value": round(total / n, 6) if n else None, "n": n}
    return out


def coarsen_breakdown(groups: dict[str, dict[str, Any]], min_steps: int = MIN_GROUP_STEPS) -> dict[str, dict[str, Any]]:
    """One breakdown cut to the granularity rule of the module docstring.

    Groups with fewer than ``min_steps`` gold steps are pooled into ``other``; while
    ``other`` is still smaller, the next smallest group joins it. With fewer than two
    groups left the breakdown is withheld (``{}``: it would equal the total). A metric
    scored on fewer than ``min_steps`` steps of a kept group is dropped from that group.
    """
    sizes = {g: int((v or {}).get("steps") or 0) for g, v in groups.items() if isinstance(v, dict)}
    keep = sorted(sizes, key=lambda g: (sizes[g], g))
    small = [g for g in keep if sizes[g] < min_steps]
    keep = [g for g in keep if sizes[g] >= min_steps]
    while small and sum(sizes[g] for g in small) < min_steps and keep:
        small.append(keep.pop(0))
    out = {g: dict(groups[g]) for g in sorted(keep)}
    if small:
        out["other" if "other" not in out else "other (pooled)"] = {**_pool(groups, small), "pooled": sorted(small)}
    if len(out) < 2:
        return {}
    for g, block in out.items():
        for m in [k for k, v in block.items() if isinstance(v, dict)]:
            if int(block[m].get("n") or 0) < min_steps:
                del block[m]
    return out


def coarsen_comparison(comp: Any, min_steps: int = MIN_GROUP_STEPS) -> Any:
    """A comparison safe to show: a breakdown dimension is kept only when every compared
    cell of it rests on at least ``min_steps`` paired steps (a withheld group could be
    recovered from the headline and the others); the rest is withheld and named."""
    from dataclasses import replace

    kept, withheld = {}, []
    for dim, groups in comp.breakdowns.items():
        if all(cell["n_steps"] >= min_steps for ms in groups.values() for cell in ms.values()):
            kept[dim] = groups
        else:
            kept[dim] = {}
            withheld.append(dim)
    prov = dict(comp.provenance)
    if withheld:
        prov["breakdowns_withheld"] = (
            f"{', '.join(withheld)}: a group under {min_steps} steps (the leaderboard's granularity rule); "
            "p_holm of the shown breakdowns still counts the withheld tests")
    return replace(comp, breakdowns=kept, provenance=prov)


def public_report(report: dict[str, Any], min_steps: int = MIN_GROUP_STEPS) -> dict[str, Any]:
    """A report safe to show: every breakdown cut by :func:`coarsen_breakdown`, with the
    rule recorded under ``provenance.breakdown_rule``; the headline figures unchanged."""
    out = json.loads(json.dumps(report))
    blocks = out.get("breakdowns")
    if isinstance(blocks, dict):
        out["breakdowns"] = {k: coarsen_breakdown(v, min_steps) if isinstance(v, dict) else v for k, v in blocks.items()}
    out.setdefault("provenance", {})["breakdown_rule"] = (
        f"groups of fewer than {min_steps} gold steps pooled into 'other' (with the next smallest group while "
        f"'other' is smaller); breakdowns that cannot keep two groups withheld; metrics scored on fewer than "
        f"{min_steps} steps of a group left out"
    )
    return out


def _same(con: sqlite3.Connection, column: str, value: str, view: View, contract: Contract) -> int | None:
    """The id of a stored submission of this view and contract with ``column`` = ``value``."""
    assert column in ("file_sha256", "content_sha256")
    row = con.execute(f"SELECT id FROM submissions WHERE {column}=? AND view=? AND contract=?",
                      (value, view.value, contract.value)).fetchone()
    return int(row[0]) if row else None


def rank_key(sub: Submission) -> tuple:
    """Sort key within one (view, contract): primary metric descending, then the rest.

    The primary metric is SAA for contracts with an action (A, J, JG) and BLEU-1 for G;
    missing values sort last; the submission id (older first) breaks exact ties.
    """
    primary = ("bleu1", "rouge_l", "bleu4") if sub.contract == Contract.G.value else ("saa", "target_acc", "action_type_acc", "bleu1")
    key = tuple(-(sub.summary.get(m) if sub.summary.get(m) is not None else -1.0) for m in primary)
    return (*key, sub.id)


def _parse_enum(enum_cls: Any, value: Any, what: str) -> Any:
    try:
        return enum_cls(str(value).strip() if value is not None else value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum_cls)
        raise SubmissionRejected(f"{what} must be one of {allowed}, got {value!r}") from None


def _scorer_version() -> str:
    from mag_dataset.scoring import SCORER_VERSION

    return str(SCORER_VERSION)


__all__ = [
    "Board",
    "BoardConfig",
    "EXTENSIONS",
    "Gold",
    "METRIC_COLUMNS",
    "PROVENANCE_TAGS",
    "RescoreResult",
    "Submission",
    "SubmissionRejected",
    "clean_link",
    "clean_text",
    "decode_upload",
    "metric_value",
    "rank_key",
    "Ranked",
    "MIN_GROUP_STEPS",
    "RANK_ALPHA",
    "check_integrity",
    "coarsen_breakdown",
    "content_sha256",
    "public_report",
    "ranking_metric",
    "step_values",
    "restore_from_folder",
    "restore_from_hub",
    "summary_from_report",
]
