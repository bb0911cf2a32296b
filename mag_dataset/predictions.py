"""Predictions files: JSONL, one model output per step (and seed).

Each line is one JSON object::

    {"step_id": "enter-text-3/0", "output": "<raw model text>", "seed": 0}

``step_id`` and ``output`` are strings; ``seed`` is an optional integer (default 0);
``coord_space`` optionally declares the coordinate space of this line's point (coord view:
``pixels``, ``norm1000``, ``norm1`` or ``resized:WxH``, see :mod:`mag_dataset.coords`;
it overrides the file's space). No other field is allowed (a spoofed ``"score"`` is
rejected, not ignored). Blank lines are skipped.
A file may hold several seeds; each ``(step_id, seed)`` pair appears at most once.

Validation stops at the first problem and names its line: not UTF-8, not a JSON object, a
missing or mistyped field, an unknown step id, a duplicate ``(step_id, seed)``, and, at the
end, the step ids without a prediction (an error unless ``allow_missing``: the scorer then
counts them as format failures).

Reading streams: :func:`iter_predictions` keeps only a per-seed bitmap of the steps seen, so
memory does not grow with the number of lines.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Union
from mag_dataset.coords import parse_coord_space
from mag_dataset.fileio import atomic_write

Source = Union[str, bytes, os.PathLike, IO[bytes]]

_FIELDS = ("step_id", "output", "seed", "coord_space")


class PredictionsError(ValueError):
    """A predictions file is invalid; the message names the line and the problem."""


@dataclass(frozen=True)
class Prediction:
    """One model output for one step.

    Attributes:
        step_id: the step's id in the dataset.
        output: the raw model text, exactly as generated.
        seed: the run's seed (several seeds → mean and std in the report).
        coord_space: this output's coordinate space, when it declares one (else the
            file's space applies).
    """

    step_id: str
    output: str
    seed: int = 0
    coord_space: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.step_id, str) or not self.step_id:
            raise PredictionsError(f"step_id must be a non-empty string, got {self.step_id!r}")
        if not isinstance(self.output, str):
            raise PredictionsError(f"{self.step_id}: output must be a string, got {type(self.output).__name__}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise PredictionsError(f"{self.step_id}: seed must be an integer, got {self.seed!r}")
        if self.coord_space is not None:
            try:
                object.__setattr__(self, "coord_space", parse_coord_space(self.coord_space).name)
            except ValueError as e:
                raise PredictionsError(f"{self.step_id}: {e}") from None

    def to_json(self) -> str:
        d: dict[str, object] = {"step_id": self.step_id, "output": self.output, "seed": self.seed}
        if self.coord_space is not None:
            d["coord_space"] = self.coord_space
        return json.dumps(d, ensure_ascii=False)


class SeenSteps:
    """Which ``(step_id, seed)`` pairs were seen: one bit per step and seed.

    A 1,000,000-line file over 1,220 steps costs ~150 KB here, whatever the seed layout.
    """

    def __init__(self, step_ids: Sequence[str]):
        self.step_ids = list(step_ids)
        self.index = {sid: i for i, sid in enumerate(self.step_ids)}
        self._nbytes = (len(self.step_ids) + 7) // 8
        self._seen: dict[int, bytearray] = {}

    def add(self, i: int, seed: int) -> bool:
        """Mark step ``i`` of ``seed`` as seen; return whether it was seen before."""
        bits = self._seen.get(seed)
        if bits is None:
            bits = self._seen[seed] = bytearray(self._nbytes)
        byte, mask = i >> 3, 1 << (i & 7)
        if bits[byte] & mask:
            return True
        bits[byte] |= mask
        return False

    def has_seed(self, seed: int) -> bool:
        return seed in self._seen

    @property
    def n_seeds(self) -> int:
        return len(self._seen)

    @property
    def seeds(self) -> list[int]:
        return sorted(self._seen) or [0]

    def missing(self, seed: int) -> list[str]:
        bits = self._seen.get(seed)
        if bits is None:
            return list(self.step_ids)
        return [sid for i, sid in enumerate(self.step_ids) if not bits[i >> 3] & (1 << (i & 7))]


def _open_lines(src: Source) -> Iterator[bytes]:
    if isinstance(src, bytes):
        yield from io.BytesIO(src)
        return
    if isinstance(src, str) and (not src or "\n" in src or src.lstrip().startswith("{")):
        yield from io.BytesIO(src.encode("utf-8"))
        return
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        if not path.is_file():
            raise PredictionsError(f"predictions file not found: {path}")
        with open(path, "rb") as f:
            yield from f
        return
    if hasattr(src, "read"):
        yield from src  # type: ignore[misc]
        return
    raise PredictionsError(f"cannot read predictions from a {type(src).__name__}")


def _parse_line(raw: bytes, n: int) -> Prediction | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PredictionsError(f"line {n}: not valid UTF-8 (byte {e.start})") from None
    if n == 1 and text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, ValueError, RecursionError) as e:
        msg = e.msg if isinstance(e, json.JSONDecodeError) else type(e).__name__
        raise PredictionsError(f"line {n}: not a JSON object ({msg})") from None
    if not isinstance(obj, dict):
        raise PredictionsError(f"line {n}: not a JSON object (got a JSON {type(obj).__name__})")
    extra = sorted(k for k in obj if k not in _FIELDS)
    if extra:
        raise PredictionsError(f"line {n}: unknown field {extra[0]!r} (allowed: step_id, output, seed, coord_space)")
    for k in ("step_id", "output"):
        if k not in obj:
            raise PredictionsError(f"line {n}: missing field {k!r}")
    sid, out, seed = obj["step_id"], obj["output"], obj.get("seed", 0)
    if not isinstance(sid, str) or not sid:
        raise PredictionsError(f"line {n}: step_id must be a non-empty string, got {json.dumps(sid)[:60]}")
    if not isinstance(out, str):
        raise PredictionsError(f"line {n}: output must be a string (the raw model text), got {type(out).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise PredictionsError(f"line {n}: seed must be an integer, got {json.dumps(seed)[:60]}")
    space = obj.get("coord_space")
    if space is not None:
        if not isinstance(space, str):
            raise PredictionsError(f"line {n}: coord_space must be a string, got {json.dumps(space)[:60]}")
        try:
            space = parse_coord_space(space).name
        except ValueError as e:
            raise PredictionsError(f"line {n}: {e}") from None
    return Prediction(sid, out, seed, space)


def _first_line(src: Source, step_id: str, seed: int, upto: int) -> int | None:
    """On the error path only: re-read a re-readable source to find a duplicate's first line."""
    if hasattr(src, "read"):
        return None
    try:
        for n, raw in enumerate(_open_lines(src), start=1):
            if n >= upto:
                break
            pred = _parse_line(raw, n)
            if pred is not None and pred.step_id == step_id and pred.seed == seed:
                return n
    except (OSError, PredictionsError):
        return None
    return None


def iter_predictions(
    src: Source,
    step_ids: Iterable[str],
    *,
    allow_missing: bool = False,
    max_lines: int | None = None,
    seen: SeenSteps | None = None,
    max_seeds: int | None = None,
) -> Iterator[Prediction]:
    """Stream and validate a predictions file.

    Args:
        src: a path (``str`` or ``PathLike``), the file's bytes, its text (a ``str`` that
            contains a newline or starts with ``{``), or a binary file object.
        step_ids: every step id of the split being scored.
        allow_missing: do not fail on step ids without a prediction.
        max_lines: fail when the file has more lines than this.
        seen: a :class:`SeenSteps` to fill (lets the caller list missing ids afterwards).
        max_seeds: fail when the file holds more seeds than this (each seed is scored
            over the whole split, so the seed count bounds the scoring time).

    Yields:
        Predictions in file order.

    Raises:
        PredictionsError: naming the line and the problem.
    """
    seen = seen if seen is not None else SeenSteps(list(step_ids))
    n = 0
    for n, raw in enumerate(_open_lines(src), start=1):
        if max_lines is not None and n > max_lines:
            raise PredictionsError(f"line {n}: the file has more than {max_lines} lines")
        pred = _parse_line(raw, n)
        if pred is None:
            continue
        i = seen.index.get(pred.step_id)
        if i is None:
            raise PredictionsError(f"line {n}: unknown step_id {pred.step_id[:200]!r} (not in the split being scored)")
        if max_seeds is not None and not seen.has_seed(pred.seed) and seen.n_seeds >= max_seeds:
            raise PredictionsError(
                f"line {n}: seed {pred.seed} would be seed number {seen.n_seeds + 1}: a file may hold at most "
                f"{max_seeds} seeds"
            )
        if seen.add(i, pred.seed):
            first = _first_line(src, pred.step_id, pred.seed, n)
            where = f" (first on line {first})" if first else ""
            raise PredictionsError(
                f"line {n}: duplicate step_id {pred.step_id[:200]!r} for seed {pred.seed}{where}"
            )
        yield pred
    if not allow_missing:
        for seed in seen.seeds:
            missing = seen.missing(seed)
            if missing:
                shown = ", ".join(repr(s) for s in missing[:5]) + (", ..." if len(missing) > 5 else "")
                raise PredictionsError(
                    f"line {n + 1} (end of file): {len(missing)} step id(s) have no prediction for seed {seed}: "
                    f"{shown} (pass allow_missing / --allow-missing to score them as format failures)"
                )


def read_predictions(
    src: Source,
    step_ids: Iterable[str],
    *,
    allow_missing: bool = False,
    max_lines: int | None = None,
    max_seeds: int | None = None,
) -> list[Prediction]:
    """Read and validate a whole predictions file (see :func:`iter_predictions`).

    Args:
        src: path, bytes, text or binary file object.
        step_ids: every step id of the split being scored.
        allow_missing: do not fail on step ids without a prediction.
        max_lines: fail when the file has more lines than this.
        max_seeds: fail when the file holds more seeds than this.

    Returns:
        The predictions, in file order.

    Raises:
        PredictionsError: naming the line and the problem.
    """
    return list(iter_predictions(src, step_ids, allow_missing=allow_missing, max_lines=max_lines, max_seeds=max_seeds))


def write_predictions(path: str | os.PathLike, predictions: Iterable[Prediction]) -> Path:
    """Write predictions as JSONL, atomically (a temp file renamed into place).

    Args:
        path: output file.
        predictions: the predictions to write, in order.

    Returns:
        The path written.
    """

    def lines() -> Iterator[str]:
        for p in predictions:
            if not isinstance(p, Prediction):
                raise TypeError(f"expected Prediction, got {type(p).__name__}")
            yield p.to_json() + "\n"

    return atomic_write(path, lines())


__all__ = [
    "Prediction",
    "PredictionsError",
    "SeenSteps",
    "iter_predictions",
    "read_predictions",
    "write_predictions",
]
