"""Atomic file writes: a reader never sees a half-written file, a failure leaves none.

Every output the package writes (predictions, reports, audit and verdict files, caches)
goes through :func:`atomic_write`: the data lands in a uniquely named temporary file in the
destination folder, which is then renamed over the destination. Unique names keep
concurrent writers (threads, worker processes) from clobbering each other's temp file.
:func:`read_jsonl` reads a JSONL file back, naming the line of a bad entry.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: The process umask, read once (os.umask can only be read by setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write(path: str | os.PathLike, data: str | bytes | Iterable[str], *, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically.

    Args:
        path: destination; its folder is created if missing.
        data: bytes, a string, or an iterable of strings written one after another (so a
            large JSONL file can be streamed without building it in memory). Text is UTF-8
            with ``\\n`` line ends.
        fsync: flush the file to disk before the rename (for stores that must survive a crash).

    Returns:
        The destination path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes the file private; outputs get normal permissions
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as fb:
                fb.write(data)
                if fsync:
                    fb.flush()
                    os.fsync(fb.fileno())
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as ft:
                if isinstance(data, str):
                    ft.write(data)
                else:
                    for chunk in data:
                        ft.write(chunk)
                if fsync:
                    ft.flush()
                    os.fsync(ft.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_jsonl(path: str | os.PathLike, rows: Iterable[Any], **dumps_kwargs: Any) -> Path:
    """Write one JSON value per line, atomically (``dumps_kwargs`` go to ``json.dumps``)."""
    return atomic_write(path, (json.dumps(r, **dumps_kwargs) + "\n" for r in rows))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write indented, key-sorted JSON with a final newline, atomically."""
    return atomic_write(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_jsonl(path: str | os.PathLike, parse: Callable[[Any], T], what: str) -> list[T]:
    """``parse`` of every non-blank line's JSON value, in file order.

    Raises:
        ValueError: ``{path}:{line}: bad {what} entry: {error}`` for a line that is not JSON or
            that ``parse`` rejects (KeyError, TypeError or ValueError).
    """
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(parse(json.loads(line)))
            except (KeyError, TypeError, ValueError) as e:  # json.JSONDecodeError is a ValueError
                raise ValueError(f"{path}:{n}: bad {what} entry: {e}") from None
    return out
