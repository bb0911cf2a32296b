"""Image encodings for raw screenshots (lossless WebP settings) and rendered SoM images.

Picks the settings of ``mag compact`` (:data:`mag_dataset.compact.WEBP_METHOD` /
``WEBP_QUALITY``) and of the builder's Set-of-Mark rendering
(:data:`mag_dataset.som.SOM_ENCODINGS`) from measurements on real
screenshots: mean size and mean CPU milliseconds per image (``time.process_time``, so a busy
machine inflates wall time but not these figures)::

    python benchmarks/bench_compact.py --raw RAW_DIR [--images 20]

Every WebP candidate is checked pixel-identical to its source.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

WEBP = [(0, 0), (1, 50), (2, 75), (3, 100), (4, 100), (5, 100), (6, 100)]
SOM = [("PNG level 1", {"format": "PNG", "compress_level": 1}), ("PNG level 6", {"format": "PNG", "compress_level": 6}),
       ("PNG optimize", {"format": "PNG", "optimize": True}),
       ("WebP lossless m0", {"format": "WEBP", "lossless": True, "method": 0, "quality": 0}),
       ("WebP lossless m1", {"format": "WEBP", "lossless": True, "method": 1, "quality": 10})]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, required=True, help="raw corpus (PNG or WebP screenshots)")
    parser.add_argument("--images", type=int, default=20, help="screenshots to use (spread over the corpus)")
    args = parser.parse_args(argv)

    import numpy as np
    from PIL import Image

    from mag_dataset.som import draw_som
    from mag_dataset.raw import read_corpus

    steps = [(ep, st) for ep in read_corpus(args.raw) for st in ep.steps]
    if not steps:
        raise SystemExit(f"{args.raw}: no steps")
    pick = steps[:: max(1, len(steps) // args.images)][: args.images]
    images, soms = [], []
    for ep, st in pick:
        with Image.open(args.raw / ep.episode_id / st.screenshot) as im:
            rgb = im.convert("RGB")
        images.append(rgb)
        soms.append(draw_som(rgb, list(st.candidates)))
    sizes = {im.size for im in images}
    print(f"{len(images)} screenshots of {args.raw} ({', '.join(f'{w}x{h}' for w, h in sorted(sizes))})")

    def measure(ims, kw, check=False):
        total, cpu = 0, 0.0
        for im in ims:
            buf = io.BytesIO()
            start = time.process_time()
            im.save(buf, **kw)
            cpu += time.process_time() - start
            total += buf.tell()
            if check:
                with Image.open(io.BytesIO(buf.getvalue())) as back:
                    assert np.array_equal(np.asarray(back.convert("RGB")), np.asarray(im)), "not lossless"
        return total / len(ims) / 1024, cpu / len(ims) * 1000

    print("\nraw screenshot encodings (mean KB, mean CPU ms per image):")
    kb, ms = measure(images, {"format": "PNG", "optimize": True})
    print(f"  {'PNG optimize (as recorded)':28s} {kb:7.1f} KB {ms:8.0f} ms")
    for method, quality in WEBP:
        kb, ms = measure(images, {"format": "WEBP", "lossless": True, "method": method, "quality": quality}, check=True)
        print(f"  {f'WebP lossless m{method} q{quality}':28s} {kb:7.1f} KB {ms:8.0f} ms")
    print("\nrendered Set-of-Mark encodings (built at every build):")
    for name, kw in SOM:
        kb, ms = measure(soms, kw)
        print(f"  {name:28s} {kb:7.1f} KB {ms:8.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
