"""Tell a browser's error page from a page of the site: what the builder refuses as a screenshot.

A screenshot of Chromium's network-error page ("This site can't be reached",
``ERR_CONNECTION_REFUSED``: the server stopped answering during a recapture or an imported
trajectory) shows no state the action was taken in, so no step may show one. The page is
recognised by its look, so a screenshot is checked without the page's address: a page that
is at least :data:`MIN_WHITE` near-white and holds Chromium's "sad page" glyph
(:data:`SAD_PAGE`, 33x42 px at device scale 1; scale 2 doubles it) with at least
:data:`MIN_MATCH` of its pixels agreeing. Candidate places are found from the glyph's solid
bottom bar (a dark run exactly as wide as the glyph), then the whole glyph is compared
there. Pure functions (numpy); no browser.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Chromium's "sad page" glyph at device scale 1: ``(row, times)`` pairs, ``#`` dark.
SAD_PAGE = (
    ("###########################......", 3),
    ("###...............###......###...", 3),
    ("###...............###.........###", 3),
    ("###......###......###.........###", 3),
    ("###......###......###############", 3),
    ("###...........................###", 12),
    ("###.........##########........###", 3),
    ("###......###..........###.....###", 3),
    ("###...........................###", 6),
    ("#################################", 3),
)
#: Device scales tried.
SCALES = (1, 2)
#: Least share of near-white (>= 240 grey) pixels of an error page.
MIN_WHITE = 0.85
#: Least share of the glyph's pixels (dark and light alike) that must agree.
MIN_MATCH = 0.97
#: Grey level under which a pixel is dark.
DARK = 128


def _glyph(scale: int) -> np.ndarray:
    rows = [[c == "#" for c in row] for row, times in SAD_PAGE for _ in range(times)]
    return np.kron(np.array(rows, dtype=bool), np.ones((scale, scale), dtype=bool))


def _runs(dark: np.ndarray, width: int) -> list[tuple[int, int]]:
    """``(row, x)`` of every dark run of exactly ``width`` pixels."""
    padded = np.pad(dark, ((0, 0), (1, 1))).astype(np.int8)
    edges = np.diff(padded, axis=1)
    out = []
    for y in np.nonzero((edges != 0).any(axis=1))[0]:
        starts, ends = np.nonzero(edges[y] == 1)[0], np.nonzero(edges[y] == -1)[0]
        out += [(int(y), int(s)) for s, e in zip(starts, ends) if e - s == width]
    return out


def _found(dark: np.ndarray, glyph: np.ndarray) -> bool:
    gh, gw = glyph.shape
    bar = int(round(gh * 3 / 42))  # the solid bottom bar's height
    for y, x in _runs(dark, gw):
        top = y - (gh - bar)
        if top < 0 or top + gh > dark.shape[0] or x + gw > dark.shape[1]:
            continue
        if float((dark[top:top + gh, x:x + gw] == glyph).mean()) >= MIN_MATCH:
            return True
    return False


def is_browser_error_page(image: Any) -> bool:
    """Whether ``image`` (a PIL image, or an array) is a screenshot of Chromium's network-error page."""
    gray = np.asarray(image.convert("L") if hasattr(image, "convert") else image)
    if gray.ndim == 3:
        gray = gray[..., :3].mean(axis=2)
    if gray.size == 0 or float((gray >= 240).mean()) < MIN_WHITE:
        return False
    dark = gray < DARK
    return any(_found(dark, _glyph(scale)) for scale in SCALES)


def is_error_screenshot(image: Any, shown_url: str = "") -> bool:
    """Whether a step's screenshot shows a browser error page: the address of the page it shows
    says so (``chrome-error://``, when recorded), or its pixels do (:func:`is_browser_error_page`)."""
    return shown_url.startswith("chrome-error://") or is_browser_error_page(image)
