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


def test_no_page_of_the_bundled_sample_is_an_error_page():
    raw = bundled_raw_dir()
    shots = sorted(raw.glob("*/*.webp"))  # site and MiniWoB++ episodes
    recaptured = [p for p in shots if "_recaptured" in p.name]  # where an error page can arise: all of them
    sample = sorted(set(shots[:: max(1, len(shots) // 60)]) | set(recaptured))  # + ~60 pages of every kind
    assert len(recaptured) >= 100 and len(sample) >= 150
    found = []
    for path in sample:
        with Image.open(path) as im:
            if is_browser_error_page(im):
                found.append(path.relative_to(raw).as_posix())
    assert found == [], found  # the one the sample shipped was undone with `mag recapture --end-at-error-pages`


def _site_corpus_with_a_recaptured_error_page(root: Path) -> tuple[Path, str]:
    """Six bundled shop episodes; in one, step 1 was "recaptured" as Chromium's error page and
    step 2 as a page of the site (as a recapture made before recaptures checked their pages)."""
    import dataclasses
    import shutil

    from mag_dataset.raw import copy_episodes, iter_episode_dirs, read_episode, rewrite_episode_json

    src = bundled_raw_dir()
    raw = root / "raw"
    from mag_dataset.cli import main

    episodes = [p for p in iter_episode_dirs(src) if p.name.startswith("sites.shop.")][:6]
    copy_episodes(src, raw, [p.name for p in episodes])
    # every bundled site episode was recaptured: give them their action-time screenshots back first
    assert main(["recapture", "--raw", str(raw), "--undo"]) == 0
    folder = next(raw / p.name for p in episodes if len(read_episode(raw / p.name).steps) >= 3)
    ep = read_episode(folder)
    shutil.copy(GOLDEN, folder / "step_001_recaptured.webp")
    with Image.open(folder / ep.steps[2].screenshot) as im:
        moved = np.asarray(im.convert("RGB")).copy()
    moved[:40] = 0  # the site's page, moved on
    Image.fromarray(moved).save(folder / "step_002_recaptured.webp", lossless=True)
    steps = list(ep.steps)
    for k in (1, 2):
        st = steps[k]
        steps[k] = dataclasses.replace(st, screenshot=f"step_00{k}_recaptured.webp", stale=True, metadata={
            **st.metadata, "recaptured": True, "action_time_screenshot": st.screenshot, "recaptured_identical": False,
            "recaptured_candidates": 9, "recapture_diverged": False,
            "stale_check": {"stale": True, "reason": "pixels", "pixel_fraction": 0.2}})
    rewrite_episode_json(folder, dataclasses.replace(ep, steps=tuple(steps), metadata={
        **ep.metadata, "recaptured": {"diverged": False, "site_reset_before": False}}))
    return raw, folder.name


def test_the_builder_refuses_a_recaptured_error_page_and_recapture_ends_there(tmp_path, capsys):
    from mag_dataset.cli import main
    from mag_dataset.raw import read_episode

    raw, name = _site_corpus_with_a_recaptured_error_page(tmp_path)
    from mag_dataset.dataset import bundled_raw_dir
    from mag_dataset.raw import copy_episodes

    copy_episodes(bundled_raw_dir(), tmp_path / "before", [name])
    assert main(["recapture", "--raw", str(tmp_path / "before"), "--undo"]) == 0  # as the fixture's, action-time
    capsys.readouterr()
    out = tmp_path / "dataset"
    assert main(["build", "--raw", str(raw), "--out", str(out), "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert f"{name}" in err and "step 1" in err and "browser error page" in err and "--end-at-error-pages" in err, err
    assert not out.exists()  # nothing half-written

    assert main(["recapture", "--raw", str(raw), "--end-at-error-pages", "--no-progress"]) == 0
    assert f"ended the recapture of 1 episodes at a browser error page ({name})" in capsys.readouterr().out
    before = read_episode(tmp_path / "before" / name)
    ep = read_episode(raw / name)
    assert [st.screenshot for st in ep.steps[:3]] == [st.screenshot for st in before.steps[:3]]  # action-time files
    assert [st.stale for st in ep.steps] == [False] * len(ep.steps)
    assert ep.steps[1].metadata["recapture_ended"]["step"] == 1 and ep.steps[2].metadata["recapture_ended_before"] == 1
    assert not any(k in st.metadata for st in ep.steps for k in ("action_time_screenshot", "stale_check"))
    assert ep.metadata["recaptured"]["ended"]["step"] == 1
    assert not list((raw / name).glob("*_recaptured*"))  # the recaptured images are gone
    # a second run finds nothing; the corpus now builds
    assert main(["recapture", "--raw", str(raw), "--end-at-error-pages", "--no-progress"]) == 0
    assert "ended the recapture of 0 episodes" in capsys.readouterr().out
    assert main(["unify", "--raw", str(raw)]) == 0
    assert main(["build", "--raw", str(raw), "--out", str(out), "--no-progress"]) == 0
