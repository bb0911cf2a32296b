"""Hostile leaderboard uploads of issue 17, generated in memory (never committed as blobs).

Used by ``tests/test_leaderboard_hostile.py`` and ``benchmarks/bench_hostile_uploads.py``.
Every generator builds its file without ever holding the decoded data: a repeated string
is written dictionary-encoded from a one-entry dictionary, so a file that decodes to
gigabytes costs the generator a megabyte.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Sequence


def _parquet(table, **kwargs) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, **kwargs)
    return buf.getvalue()


def dictionary_bomb(step_id: str, rows: int, value_bytes: int = 1 << 20) -> bytes:
    """A Parquet file whose ``output`` is one ``value_bytes`` string referenced by ``rows`` rows.

    2,000 rows of 1 MiB is ~600 bytes on disk and 2 GiB decoded; 200,000 rows ~2 KB and 200 GiB.
    """
    import pyarrow as pa

    idx = pa.array([0] * rows, pa.int32())
    table = pa.table({
        "step_id": pa.DictionaryArray.from_arrays(idx, pa.array([step_id])),
        "output": pa.DictionaryArray.from_arrays(idx, pa.array(["x" * value_bytes])),
    })
    return _parquet(table, compression="zstd")


def nested_list_bomb(step_id: str, values: int) -> bytes:
    """A Parquet file with a ``seed`` column of type ``list<int8>`` holding ``values`` zeros in one row."""
    import numpy as np
    import pyarrow as pa

    inner = pa.array(np.zeros(values, dtype=np.int8))
    seed = pa.ListArray.from_arrays(pa.array([0, values], pa.int32()), inner)
    table = pa.table({"step_id": [step_id], "output": ["{}"], "seed": seed})
    return _parquet(table, compression="zstd")


def duplicate_column(step_ids: Sequence[str]) -> bytes:
    """A Parquet file with the column ``output`` twice."""
    import pyarrow as pa

    n = len(step_ids)
    table = pa.Table.from_arrays([pa.array(list(step_ids)), pa.array(["{}"] * n), pa.array(["{}"] * n)],
                                 names=["step_id", "output", "output"])
    return _parquet(table)


def invalid_utf8(step_ids: Sequence[str], row: int = 3) -> bytes:
    """A Parquet file whose ``output`` string column holds bytes that are not UTF-8 on ``row`` (1-based)."""
    import pyarrow as pa

    outs = [b"{}"] * len(step_ids)
    outs[row - 1] = b"{\xff\xfe}"
    table = pa.Table.from_arrays([pa.array(list(step_ids)), pa.array(outs, pa.binary()).cast(pa.string(), safe=False)],
                                 names=["step_id", "output"])
    return _parquet(table)


def many_seeds_gz(step_ids: Sequence[str], seeds: int, output: str = "{}") -> bytes:
    """A ``.jsonl.gz`` file with a prediction for every step under each of ``seeds`` seeds."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9, mtime=0) as gz:
        for seed in range(seeds):
            gz.write("".join(json.dumps({"step_id": s, "output": output, "seed": seed}) + "\n"
                             for s in step_ids).encode())
    return buf.getvalue()


def two_gzip_members(first: bytes, second: bytes) -> bytes:
    """Two gzip members back to back (``cat a.gz b.gz``): a reader that stops after one ignores ``second``."""
    return gzip.compress(first, mtime=0) + gzip.compress(second, mtime=0)
