"""Coordinates: the declared spaces of coord-view predictions, their conversion to pixels,
and the element a point acts on (:func:`restore_element`).

GUI-grounding models answer in different spaces: absolute pixels of the screenshot they
were shown, pixels of a resized copy of it, or a normalised grid (the most common
complaint in GUI-grounding issue trackers is a score that collapses silently because of a
space mix-up). A predictions file therefore declares its space, and the scorer converts
every point to *screenshot pixels* (the space of the gold boxes, see
:mod:`mag_dataset.schema`) before the point-in-box test (WebMRE, arXiv 2609.27353, scores
the coordinate view by whether the point falls inside the gold element's box).

==================  =====================================================================
space               a point ``[x, y]`` means
==================  =====================================================================
``pixels``          screenshot pixels from the top-left corner (the default).
``norm1000``        a 0-1000 grid on both axes: ``x * width / 1000``, ``y * height / 1000``.
``norm1``           fractions of the width and height: ``x * width``, ``y * height``.
``resized:WxH``     pixels of the screenshot resized to W x H:
                    ``x * width / W``, ``y * height / H``.
==================  =====================================================================

``width`` and ``height`` are the step's ``image_width`` / ``image_height``. Converted
values are rounded to :data:`ROUND_DECIMALS` places, which removes float noise only (a
point written as ``37 / 1280 * 1000`` and converted back is 37, not 36.99999999999999).

**Resolution.** A space coarser than the screenshot cannot name every pixel: on a 1280 x
720 screenshot one norm1000 unit is 1.28 x 0.72 px, so a model that answers whole grid
units is off by up to half a unit (0.64 x 0.36 px); ``resized:640x360`` answers by up to
1 px. The scorer adds no tolerance and snaps nothing: the converted point is tested against
the gold box as it is (edges included), so a whole-unit answer lands inside whenever the
gold point is at least half a unit from every edge, and a box narrower than one unit may
hold no whole-unit point at all (such a miss is counted ``point_outside_box`` with its
distance, a near miss within 10 px). The gold targets rendered by
:func:`mag_dataset.prompts.render_target` in a space never lose a point: they are written
with 4 decimals, or at full precision when 4 decimals would convert back outside the box.
On the bundled site corpus (1280 x 720) the smallest gold box is 12.5 px wide and 12 px
high, so every box holds whole norm1000 units and a model answering whole units can hit
every one; rounding the gold points themselves keeps all but one inside (a person's click
0.39 px inside a box's left edge, ``sites.forum.search_phrase.seed-814497:0``; the recorder
now keeps its clicks a pixel from the edges) (``tests/test_coords.py``).

:class:`SpaceCheck` collects the raw points of a file and warns when they look like
another space (every point inside ``[0, 1] x [0, 1]``; fewer than half of them inside the
image; or every point inside the 0-1000 grid and at least :data:`GRID_OFF_IMAGE_SHARE` of
them off the image — on a 1280 x 720 page grid values read as pixels mostly stay inside,
but those of the lower part of the page fall below it).
Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from mag_dataset.schema import Candidate, Point, point_in_box

#: The spaces a file may declare (``resized`` takes a size: ``resized:1024x768``).
COORD_SPACES: tuple[str, ...] = ("pixels", "norm1000", "norm1", "resized:WxH")

#: Decimal places of a converted coordinate (float noise only).
ROUND_DECIMALS = 6

#: Share of points off the screenshot that, with every point inside the 0-1000 grid, makes
#: a file look like a grid read as pixels (a model answering in pixels stays on the image).
GRID_OFF_IMAGE_SHARE = 0.1

#: Fewest points a look-alike warning is based on (one point at (0.5, 0.5) proves nothing).
MIN_POINTS_FOR_WARNING = 3

_RESIZED = re.compile(r"\Aresized:([1-9][0-9]{0,5})x([1-9][0-9]{0,5})\Z")


@dataclass(frozen=True)
class CoordSpace:
    """One coordinate space.

    Attributes:
        kind: ``pixels``, ``norm1000``, ``norm1`` or ``resized``.
        width, height: the resized image size (``resized`` only), else None.
    """

    kind: str
    width: int | None = None
    height: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("pixels", "norm1000", "norm1", "resized"):
            raise ValueError(f"unknown coordinate space {self.kind!r}")
        sized = self.width is not None and self.height is not None
        if (self.kind == "resized") != sized:
            raise ValueError("only the resized space takes a size (resized:WxH)")
        if sized and (self.width <= 0 or self.height <= 0):  # type: ignore[operator]
            raise ValueError("resized:WxH needs a positive width and height")

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``norm1000`` or ``resized:1024x768``."""
        return f"resized:{self.width}x{self.height}" if self.kind == "resized" else self.kind

    def __str__(self) -> str:
        return self.name

    def scale(self, image_width: int, image_height: int) -> tuple[float, float]:
        """Screenshot pixels per unit of this space, on each axis."""
        if self.kind == "pixels":
            return 1.0, 1.0
        if self.kind == "norm1000":
            return image_width / 1000.0, image_height / 1000.0
        if self.kind == "norm1":
            return float(image_width), float(image_height)
        return image_width / self.width, image_height / self.height  # type: ignore[operator]

    def to_pixels(self, point: tuple[float, float], image_width: int, image_height: int) -> tuple[float, float]:
        """Convert a point of this space to screenshot pixels."""
        if self.kind == "pixels":
            return float(point[0]), float(point[1])
        sx, sy = self.scale(image_width, image_height)
        return round(point[0] * sx, ROUND_DECIMALS), round(point[1] * sy, ROUND_DECIMALS)

    def from_pixels(self, point: tuple[float, float], image_width: int, image_height: int) -> tuple[float, float]:
        """Convert a point in screenshot pixels to this space (for prompts and targets)."""
        if self.kind == "pixels":
            return float(point[0]), float(point[1])
        sx, sy = self.scale(image_width, image_height)
        # finer than ROUND_DECIMALS: a fraction of the width needs more places than a pixel
        return round(point[0] / sx, 2 * ROUND_DECIMALS), round(point[1] / sy, 2 * ROUND_DECIMALS)

    def bounds(self, image_width: int, image_height: int) -> tuple[float, float]:
        """The largest x and y of a point inside the image, in this space."""
        if self.kind == "pixels":
            return float(image_width), float(image_height)
        if self.kind == "norm1000":
            return 1000.0, 1000.0
        if self.kind == "norm1":
            return 1.0, 1.0
        return float(self.width), float(self.height)  # type: ignore[arg-type]


PIXELS = CoordSpace("pixels")


def parse_coord_space(value: "str | CoordSpace | None") -> CoordSpace:
    """Parse a declared space (``None`` = ``pixels``).

    Raises:
        ValueError: one line naming the accepted spaces.
    """
    if value is None:
        return PIXELS
    if isinstance(value, CoordSpace):
        return value
    if not isinstance(value, str):
        raise ValueError(f"coordinate space must be a string, got {type(value).__name__}")
    text = value.strip()
    if text in ("pixels", "norm1000", "norm1"):
        return CoordSpace(text)
    m = _RESIZED.match(text)
    if m:
        return CoordSpace("resized", int(m.group(1)), int(m.group(2)))
    raise ValueError(
        f"unknown coordinate space {value[:40]!r}: use pixels, norm1000, norm1 or resized:WxH (e.g. resized:1024x768)"
    )


class SpaceCheck:
    """Collects the raw points of a file and says when they look like another space.

    Add each predicted point *before* conversion, with the space it was declared in and
    the step's image size; :meth:`warnings` then lists the suspicions (sorted, so the
    report stays byte-identical).
    """

    def __init__(self) -> None:
        self.n: dict[str, int] = {}
        self.unit: dict[str, int] = {}  # points inside [0, 1] x [0, 1]
        self.grid: dict[str, int] = {}  # points inside [0, 1000] x [0, 1000]
        self.inside: dict[str, int] = {}  # points inside the image once converted

    def add(self, point: tuple[float, float], space: CoordSpace, image_width: int, image_height: int) -> None:
        name = space.name
        x, y = point
        self.n[name] = self.n.get(name, 0) + 1
        if 0 <= x <= 1 and 0 <= y <= 1:
            self.unit[name] = self.unit.get(name, 0) + 1
        if 0 <= x <= 1000 and 0 <= y <= 1000:
            self.grid[name] = self.grid.get(name, 0) + 1
        bx, by = space.bounds(image_width, image_height)
        if 0 <= x <= bx and 0 <= y <= by:
            self.inside[name] = self.inside.get(name, 0) + 1

    def counts(self) -> dict[str, int]:
        """Points seen per declared space."""
        return dict(sorted(self.n.items()))

    def warnings(self) -> list[str]:
        out = []
        for name, n in sorted(self.n.items()):
            if n < MIN_POINTS_FOR_WARNING:
                continue
            unit, grid, inside = self.unit.get(name, 0), self.grid.get(name, 0), self.inside.get(name, 0)
            if name != "norm1" and unit == n:
                out.append(
                    f"all {n} points declared {name} lie inside [0, 1] x [0, 1]: they look like norm1 "
                    f"fractions (declare --coord-space norm1)"
                )
            elif 2 * inside < n:
                hint = (
                    " they look like a 0-1000 grid (declare --coord-space norm1000)"
                    if name != "norm1000" and grid == n
                    else " check the declared --coord-space"
                )
                out.append(f"only {inside} of the {n} points declared {name} lie inside the screenshot;{hint}")
            elif name not in ("norm1000", "norm1") and grid == n and (n - inside) >= GRID_OFF_IMAGE_SHARE * n:
                # on a wide page (1280 x 720) grid values read as pixels stay mostly inside:
                # the ones below the page give them away, since a pixel answer never leaves it
                out.append(
                    f"all {n} points declared {name} lie inside the 0-1000 grid and {n - inside} of them outside "
                    f"the screenshot: they look like a 0-1000 grid (declare --coord-space norm1000)"
                )
        return out


#: The point-mapping ambiguity rule (:mod:`mag_dataset.harness.unify`'s docstring; the
#: consistency metric uses it for the elements a point may act on): box-side tolerance in
#: px, and the area ratio above which a partly overlapping containing box competes with the
#: smallest.
AMBIGUITY_TOLERANCE = 1.0
AMBIGUITY_AREA_RATIO = 0.5


def restore_element(point: Point, candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate a point maps to: smallest box containing it, deterministic tie-break.

    Here, below the scorer and the harness, because both read a click by it: ``mag unify``
    restores coordinate-only steps with it, and the guide-action consistency metric and live
    evaluation name the element a coord-view point acts on with it.

    Args:
        point: ``(x, y)`` in screenshot pixels.
        candidates: the candidate menu, in menu order.

    Returns:
        The chosen candidate, or None when no box contains the point.
    """
    best: tuple[Any, ...] | None = None
    chosen = None
    for index, c in enumerate(candidates):
        if not point_in_box(point, c.bbox):
            continue
        x0, y0, x1, y1 = c.bbox
        area = (x1 - x0) * (y1 - y0)
        cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
        key = (area, math.hypot(point[0] - cx, point[1] - cy), index, c.id)
        if best is None or key < best:
            best, chosen = key, c
    return chosen


__all__ = [
    "AMBIGUITY_AREA_RATIO", "AMBIGUITY_TOLERANCE", "COORD_SPACES", "CoordSpace", "GRID_OFF_IMAGE_SHARE", "PIXELS",
    "ROUND_DECIMALS", "SpaceCheck", "parse_coord_space", "restore_element",
]
