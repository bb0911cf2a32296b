"""Set-of-Mark rendering: numbered boxes drawn over a screenshot, the same bytes on every machine.

Core layer: the raw format (:func:`mag_dataset.raw.som_image_bytes`) and the builder render a
step's Set-of-Mark image from its screenshot and candidate menu, and the live recorder and the
importers draw it when they capture a page, so the drawing lives below all of them (it needs
only Pillow and :class:`~mag_dataset.schema.Candidate`). Colours, the pinned bitmap font and
the encodings are fixed here; ``tests/test_compact.py`` pins the rendered pixels.
"""

from __future__ import annotations

import io
from typing import Any

from mag_dataset.schema import Candidate


def encode_png(image: Any) -> bytes:
    """Encode a PIL image as PNG, zlib level 1 (deterministic for the same pixels).

    A recorded step's PNG is transient: ``mag compact`` stores lossless WebP. On a 1280x720 site
    screenshot (2 CPU cores) level 1 takes 26 ms for 70 KB, ``optimize=True`` 115 ms for 65 KB;
    a recorded step encodes two (raw and Set-of-Mark).
    """
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


_PALETTE = ((230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180),
            (70, 160, 160), (240, 50, 230), (128, 128, 0), (0, 0, 128), (170, 110, 40))


def som_font() -> Any:
    """The font of Set-of-Mark labels: Pillow's built-in *bitmap* font, pinned.

    ``ImageFont.load_default(size=...)`` returns a FreeType font whose glyphs (and
    antialiasing) follow the FreeType and Pillow versions, so the same marks could come out
    as different bytes on another machine. The bitmap font (``load_default_imagefont``,
    6 px wide digits, 11 px high, no antialiasing, the same data since PIL 1.1) does not
    depend on FreeType; ``tests/test_som_render.py`` pins the rendered bytes so a change
    fails loudly instead of silently changing every built Set-of-Mark image.
    """
    from PIL import ImageFont

    return ImageFont.load_default_imagefont()


def draw_som(image: Any, candidates: list[Candidate]) -> Any:
    """Draw Set-of-Mark boxes and id labels on a copy of ``image`` (PIL).

    Deterministic: the same pixels and candidates (ids, boxes, in menu order) give the same
    pixels, with the pinned :func:`som_font`. Boxes are 1 px outlines in a colour chosen by
    the id; the id is written white on that colour, above the box when it fits, else inside.
    """
    from PIL import ImageDraw

    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    font = som_font()
    for c in candidates:
        color = _PALETTE[int(c.id) % len(_PALETTE)] if c.id.isdigit() else _PALETTE[0]
        x0, y0, x1, y1 = c.bbox
        draw.rectangle((x0, y0, max(x0, x1 - 1), max(y0, y1 - 1)), outline=color, width=1)
        tb = draw.textbbox((0, 0), c.id, font=font)
        tw, th = tb[2] - tb[0] + 2, tb[3] - tb[1] + 2
        lx, ly = x0, y0 - th if y0 - th >= 0 else y0
        lx = min(lx, max(0, out.width - tw))
        draw.rectangle((lx, ly, lx + tw, ly + th), fill=color)
        draw.text((lx + 1 - tb[0], ly + 1 - tb[1]), c.id, fill=(255, 255, 255), font=font)
    return out


#: Encodings of Set-of-Mark images rendered from a raw screenshot (:func:`render_som`).
#: Measured on 16 1280x720 site screenshots (``benchmarks/bench_compact.py``, CPU ms per
#: image): lossless WebP method 1 (effort 10) 42 KB in 23 ms, PNG zlib level 1 89 KB in
#: 16 ms, PNG ``optimize=True`` 79 KB in 103 ms. The builder stores ``webp`` (half the
#: Parquet of PNG, and faster to decode for a training loop); ``png`` is what readers that
#: send the image to a chat API as ``image/png`` get (audit, guide drafting).
SOM_ENCODINGS: dict[str, dict[str, Any]] = {
    "webp": {"format": "WEBP", "lossless": True, "method": 1, "quality": 10, "exact": True},
    "png": {"format": "PNG", "compress_level": 1},
}


def render_som(screenshot: bytes, candidates: Any, encoding: str = "png") -> bytes:
    """Render the Set-of-Mark image of a raw screenshot (PNG or WebP bytes).

    What the builder stores for a step whose raw corpus keeps no Set-of-Mark file (raw
    format v2): :func:`draw_som` with the pinned font, encoded losslessly with
    :data:`SOM_ENCODINGS` ``[encoding]``, no metadata — the same bytes on every build with
    the same Pillow, zlib and libwebp.

    Args:
        screenshot: the raw screenshot file's bytes.
        candidates: the step's candidate menu (ids and boxes in screenshot px), in menu order.
        encoding: ``png`` or ``webp`` (see :data:`SOM_ENCODINGS`).
    """
    from PIL import Image

    with Image.open(io.BytesIO(screenshot)) as im:
        drawn = draw_som(im, list(candidates))
    buf = io.BytesIO()
    drawn.save(buf, **SOM_ENCODINGS[encoding])
    return buf.getvalue()
