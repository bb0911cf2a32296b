"""The recorder writes each step's capture geometry (raw format v2) from the live page."""

from __future__ import annotations

import pytest

from mag_dataset.raw import capture_geometry, read_episode, write_episode

pytestmark = [pytest.mark.browser]


def test_recorded_steps_carry_viewport_and_ratio(tmp_path, chromium):
    from mag_dataset.harness.recorder import record_episode

    res = record_episode("click-button", seed=7)
    assert res.ok, res.reason
    assert len(res.episode.steps) >= 1
    for st in res.episode.steps:
        # BrowserGym's MiniWoB++ page: a 332x214 CSS viewport captured at 1.5 px per CSS px, cropped
        assert (st.viewport_width, st.viewport_height, st.device_pixel_ratio) == (332, 214, 1.5)
        assert st.image_width <= 332 * 1.5 and st.image_height <= 214 * 1.5 + 1
        assert capture_geometry(st, "miniwob") == (332, 214, 1.5)
    back = read_episode(write_episode(tmp_path, res.episode, res.images))
    assert [(s.viewport_width, s.viewport_height, s.device_pixel_ratio) for s in back.steps] == [(332, 214, 1.5)] * len(back.steps)
