"""The built folder's names and version, its checksum manifest, and :class:`BuildError`.

Holds what both the writer (:mod:`mag_dataset.builder.write`) and readers of a built folder
(:mod:`mag_dataset.publish`, :mod:`mag_dataset.dataset`) need to agree on: file names, the
build format and version, and the ``checksums.sha256`` check. It does not read raw data
or write anything.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: Bump when the content of built rows changes for the same raw input (invalidates caches).
BUILD_VERSION = 5  # 2: the verified_by column; 3: capture geometry, SoM rendered from v2 raw, point-only rule;
# 4: site_family column, rendered SoM stored as WebP, eval.yaml; 5: guide_decision, decided_at and
# verification_notes columns, verified_by may name several annotators, build_info "annotation".
# build_info "corpus_stages" and the card's stages line came without a bump: the rows are unchanged,
# and a bump would rename every cached build (mag demo prints its folder); a cached build made
# before them lacks the field, and mag_dataset.dataset.bundled_dataset rebuilds it (LATE_BUILD_INFO_FIELDS)
#: build_info fields added without a BUILD_VERSION bump: a cached build that lacks one is rebuilt.
LATE_BUILD_INFO_FIELDS: tuple[str, ...] = ("corpus_stages",)
BUILD_INFO_FILE = "build_info.json"
CHECKSUM_FILE = "checksums.sha256"
CARD_FILE = "README.md"
BUILD_FORMAT = "mag-webmre-build"
MAX_SHARD_SIZE = "256MB"


class BuildError(ValueError):
    """The raw corpus as a whole is inconsistent (corpus.json, audit file, output folder)."""


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_build(path: Path) -> bool:
    """Whether ``path`` holds a finished build (its ``build_info.json``)."""
    return (path / BUILD_INFO_FILE).is_file()


def write_checksums(folder: Path) -> None:
    """Write ``checksums.sha256`` listing every file under ``folder`` (``sha256sum -c`` format)."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    (folder / CHECKSUM_FILE).write_text("".join(f"{sha256_file(folder / f)}  {f}\n" for f in files), "utf-8")


def verify_checksums(folder: str | os.PathLike) -> list[str]:
    """Check a built folder against its checksum manifest.

    Returns:
        The checked files, relative to ``folder``.

    Raises:
        BuildError: naming the first missing, changed or unlisted file.
    """
    folder = Path(folder)
    manifest = folder / CHECKSUM_FILE
    if not manifest.is_file():
        raise BuildError(f"{folder}: no {CHECKSUM_FILE}; is this a built dataset folder?")
    listed: dict[str, str] = {}
    for line in manifest.read_text("utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    for name, digest in listed.items():
        path = folder / name
        if not path.is_file():
            raise BuildError(f"{folder}: {name} is listed in {CHECKSUM_FILE} but missing")
        if sha256_file(path) != digest:
            raise BuildError(f"{folder}: {name} does not match its sha256 in {CHECKSUM_FILE}")
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    extra = sorted(present - set(listed) - {CHECKSUM_FILE})
    extra = [e for e in extra if not any(part.startswith(".") for part in e.split("/"))]
    if extra:
        raise BuildError(f"{folder}: {extra[0]} is not listed in {CHECKSUM_FILE}")
    return sorted(listed)
