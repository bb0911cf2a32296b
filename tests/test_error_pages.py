"""Chromium's network-error page is recognised by its look (mag_dataset.error_pages), and the
site pages and MiniWoB++ pages of the bundled sample are not mistaken for one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from mag_dataset.dataset import bundled_raw_dir
from mag_dataset.error_pages import is_browser_error_page

GOLDEN = Path(__file__).parent / "golden" / "chromium_error_page.webp"  # recaptured when a shop server died


def test_the_real_error_page_is_recognised_at_both_scales_and_anywhere_on_the_page():
    with Image.open(GOLDEN) as im:
        page = im.convert("RGB")
    assert page.size == (1280, 720) and is_browser_error_page(page)
    assert is_browser_error_page(page.resize((2560, 1440), Image.NEAREST))  # device scale 2
    shifted = Image.new("RGB", (1000, 720), "white")  # a narrower window centres the column elsewhere
    shifted.paste(page.crop((200, 0, 1200, 720)), (0, 0))
    assert is_browser_error_page(shifted)


def test_a_blank_or_near_miss_page_is_not_an_error_page():
    assert not is_browser_error_page(Image.new("RGB", (1280, 720), "white"))
    with Image.open(GOLDEN) as im:
        arr = np.asarray(im.convert("RGB")).copy()
    arr[131:173, 340:373] = 255  # the glyph removed: white page with text only
    assert not is_browser_error_page(Image.fromarray(arr))


def test_no_page_of_the_bundled_sample_but_the_known_one_is_an_error_page():
    raw = bundled_raw_dir()
    shots = sorted(raw.glob("*/*.webp"))  # site and MiniWoB++ episodes
    sample = shots[:: max(1, len(shots) // 60)]  # every site family and step kind, ~60 pages
    assert len(sample) >= 50
    found = []
    for path in sample:
        with Image.open(path) as im:
            if is_browser_error_page(im):
                found.append(path.relative_to(raw).as_posix())
    assert set(found) <= {"sites.shop.count_orders_by_status.seed-72934/step_003_recaptured.webp"}, found
