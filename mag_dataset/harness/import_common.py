"""What the two importers share: the report of a batch, the raw-format check, the writing, the action rules.

:mod:`mag_dataset.harness.browsergym_import` (BrowserGym/AgentLab experiment folders) and
:mod:`mag_dataset.harness.trace_import` (Playwright trace archives) each read their own
format into raw episodes (:mod:`mag_dataset.raw`); from there on they do the same things,
written once here: the episode id made from a name, the scroll direction and multi-option
rules of the benchmark action space, decoding an untrusted screenshot under one pixel cap,
the check of a converted episode against the raw format before anything is written, and a
batch's bookkeeping (skipped with a reason, not overwritten unless asked, written
atomically, one progress line per source). Building a raw step from an observed page is
:func:`mag_dataset.live.page_step.step_from_page`'s. This module reads no source format; the
other limits of hostile input are each importer's own.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from mag_dataset.raw import RawDataError, RawEpisode, parse_step, write_episode

#: The most pixels an imported screenshot may have, checked from its header before a pixel is
#: decoded (a WebArena screenshot has about a million).
MAX_IMAGE_PIXELS = 25_000_000

#: How a multi-option ``select_option(bid, [a, b])`` is stored: one ``select`` action whose
#: value is the options in the order given, joined by this separator.
MULTI_OPTION_SEPARATOR = ", "


def is_finite_number(x: object) -> bool:
    """A real number that is finite and not a bool (untrusted JSON and pickles say ``true`` and ``NaN``)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


def episode_id_from(name: str) -> str:
    """A raw episode id (a folder name) from a task or file name: runs of other characters become ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def scroll_direction(dx: float, dy: float) -> str | None:
    """The benchmark's scroll direction of a wheel delta (the larger axis wins; a tie is
    vertical); None for no movement (not a step)."""
    if dx == 0 and dy == 0:
        return None
    return ("down" if dy > 0 else "up") if abs(dy) >= abs(dx) else ("right" if dx > 0 else "left")


def open_image(source: str | Path | IO[bytes], name: str, error: type[Exception],
               max_pixels: int = MAX_IMAGE_PIXELS) -> Any:
    """An untrusted screenshot file decoded as an RGB ``PIL.Image``, its size checked first.

    Raises:
        error: ``name`` is over ``max_pixels`` pixels, truncated or not an image (why).
    """
    from PIL import Image

    try:
        img = Image.open(source)  # reads the header only
    except (OSError, ValueError, Image.DecompressionBombError) as e:  # not an image, or a bomb PIL refuses
        raise error(f"{name} cannot be read: {type(e).__name__}: {e}") from None
    with img:
        w, h = img.size
        if w * h > max_pixels:  # checked before a pixel is decoded
            raise error(f"{name} is {w}x{h} pixels, over the cap of {max_pixels:,} pixels")
        try:
            return img.convert("RGB")
        except (OSError, ValueError, Image.DecompressionBombError) as e:  # truncated
            raise error(f"{name} cannot be read: {type(e).__name__}: {e}") from None


def check_converted(ep: RawEpisode, error: type[Exception]) -> None:
    """Validate a converted episode's steps against the raw format before anything is written.

    Raises:
        error: a step is not valid raw data (the message names it).
    """
    try:
        for st in ep.steps:
            parse_step(st.to_json(), ep.episode_id, None)
    except RawDataError as e:
        raise error(f"the converted episode is not valid raw data: {e}") from None


@dataclass
class BatchReport:
    """What an import of many sources did.

    Attributes:
        found: sources (experiment folders, trace archives) found.
        imported: episode ids written.
        skipped: ``(source name, reason)`` for every source not imported.
        steps: raw steps written.
    """

    found: int = 0
    imported: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    steps: int = 0

    def skip(self, source: str, reason: str, progress: Callable[[str], None] | None = None) -> None:
        """Record a source not imported; with ``progress``, say so."""
        self.skipped.append((source, reason))
        if progress:
            progress(f"skipped {source}: {reason}")

    def skip_existing(self, out: Path, ep: RawEpisode, source: str, overwrite: bool) -> bool:
        """Skip ``source`` when its episode is already in ``out`` and ``overwrite`` is off;
        True when it was skipped."""
        if overwrite or not (out / ep.episode_id).exists():
            return False
        self.skip(source, f"already imported: {ep.episode_id} exists in {out}")
        return True

    def write(self, out: Path, ep: RawEpisode, images: dict[str, bytes], source: str,
              progress: Callable[[str], None] | None = None) -> None:
        """Write ``ep`` and its images into the raw corpus ``out`` (atomically) and count it."""
        write_episode(out, ep, images)
        self.imported.append(ep.episode_id)
        self.steps += len(ep.steps)
        if progress:
            progress(f"imported {source} -> {ep.episode_id} ({len(ep.steps)} steps)")
