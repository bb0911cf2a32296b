"""Parquet uploads to JSON Lines within a budget: the footer is checked first (exact columns
and types, row count, declared uncompressed sizes), then the strings' decoded size is added
up dictionary-encoded before any is expanded, then the rows are converted in bounded
batches. Used by :func:`mag_dataset.board.upload.decode_upload`; holds no other format.
"""

from __future__ import annotations

import io
import json
from typing import Any

from mag_dataset.board.errors import SubmissionRejected

#: Rows read from a Parquet file at a time.
PARQUET_BATCH_ROWS = 1024
_PARQUET_COLUMNS = ("step_id", "output", "seed", "coord_space")


def parquet_to_jsonl(data: bytes, max_lines: int, max_bytes: int) -> bytes:
    """Parquet -> JSON Lines within a budget: metadata checks first, then bounded batches.

    From the footer alone: exactly the columns ``step_id``, ``output`` (strings), an
    optional integer ``seed`` and an optional string ``coord_space``, each once and flat;
    at most ``max_lines`` rows; declared uncompressed column sizes within ``max_bytes``.
    Then a first pass reads the strings dictionary-encoded (a value repeated on many rows
    is held once) and adds up their decoded size, so a file whose strings decode to over
    ``max_bytes`` is refused before any of them is expanded; only then a second pass
    converts batch by batch.

    Raises:
        SubmissionRejected: with the reason.
    """
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        meta, schema = pf.metadata, pf.schema_arrow
    except Exception as e:  # pyarrow raises several types for a non-Parquet file
        raise SubmissionRejected(f"the file ends in .parquet but is not a readable Parquet file ({type(e).__name__})") from None
    string_cols = _check_columns(schema)
    _check_footer(meta, len(schema.names), max_lines, max_bytes)
    try:
        _check_decoded_size(data, string_cols, max_lines, max_bytes)
        lines = _convert(pf, string_cols)
    except SubmissionRejected:
        raise
    except MemoryError:
        raise
    except Exception as e:  # corrupt pages, a footer that lies about the data, ...
        raise SubmissionRejected(f"the Parquet file could not be read ({type(e).__name__}: {str(e)[:200]})") from None
    return ("\n".join(lines) + "\n").encode("utf-8")


def _check_columns(schema: Any) -> list[str]:
    """Exactly the allowed columns, each once, of the right types; returns the string columns."""
    import pyarrow as pa

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
    return string_cols


def _check_footer(meta: Any, n_fields: int, max_lines: int, max_bytes: int) -> None:
    """Flat columns, at most ``max_lines`` rows and ``max_bytes`` of declared uncompressed data."""
    if meta.num_columns != n_fields:  # a nested column has several leaves
        raise SubmissionRejected(f"the Parquet file has {meta.num_columns} leaf columns for {n_fields} fields: nested columns are not allowed")
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


def _check_decoded_size(data: bytes, string_cols: list[str], max_lines: int, max_bytes: int) -> None:
    """First pass: the strings' decoded size, read dictionary-encoded (nothing expanded)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

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


def _convert(pf: Any, string_cols: list[str]) -> list[str]:
    """Second pass: one JSON line per row, batch by batch."""
    import pyarrow as pa

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
            rec = _record(row, {name: values[name][i] for name in string_cols})
            if seeds[i] is not None:
                rec["seed"] = seeds[i]
            lines.append(json.dumps(rec, ensure_ascii=False))
    return lines


def _record(row: int, raw: dict[str, bytes | None]) -> dict[str, Any]:
    """One row's string columns decoded from UTF-8 (a null ``coord_space`` is left out)."""
    rec: dict[str, Any] = {}
    for name, value in raw.items():
        if value is None:
            if name != "coord_space":
                rec[name] = None
            continue
        try:
            rec[name] = value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SubmissionRejected(
                f"row {row}: the Parquet column {name!r} holds invalid UTF-8 (byte 0x{value[e.start]:02x} at offset {e.start})"
            ) from None
    return rec


__all__ = ["PARQUET_BATCH_ROWS", "parquet_to_jsonl"]
