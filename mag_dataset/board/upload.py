"""Upload decoding: uploaded bytes (``.jsonl``, ``.jsonl.gz`` or ``.parquet``) to JSON Lines
bytes within the board's caps, or a :class:`SubmissionRejected` naming the first problem.

Holds the envelope checks (extension, size, emptiness), bounded gzip decompression and the
text checks; the Parquet reader is :mod:`mag_dataset.board.parquet`. JSON validity and step
ids are checked afterwards by :func:`mag_dataset.predictions.read_predictions`; nothing
here scores or stores.
"""

from __future__ import annotations

import io
import zlib
from pathlib import Path

from mag_dataset.board.errors import SubmissionRejected
from mag_dataset.board.parquet import parquet_to_jsonl

#: Upload formats the board accepts, longest suffix first.
EXTENSIONS: tuple[str, ...] = (".jsonl.gz", ".jsonl", ".parquet")


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
    check_upload_envelope(data, filename, max_bytes)
    ext = file_extension(filename)
    if ext == ".jsonl.gz":
        data = _gunzip(data, max_bytes)
        if not data.strip():
            raise SubmissionRejected("the file is empty after decompression: expected one JSON object per line")
    elif ext == ".parquet":
        data = parquet_to_jsonl(data, max_lines, max_bytes)
    if not data.strip():
        raise SubmissionRejected("the file is empty: it holds only whitespace, expected one JSON object per line")
    _check_text(data, max_lines)
    return data


def check_upload_envelope(data: bytes, filename: str, max_bytes: int) -> None:
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


def _check_text(data: bytes, max_lines: int) -> None:
    """Decoded bytes must be UTF-8 text without NUL bytes, within ``max_lines`` non-empty lines."""
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


__all__ = ["EXTENSIONS", "check_upload_envelope", "decode_upload", "file_extension"]
