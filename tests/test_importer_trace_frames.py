"""Untrusted screenshots in both importers: one decoding rule (``import_common.open_image``) and
what a crafted frame of a Playwright trace archive costs (the archive, never the batch).

The archives here are written by the test (a crafted frame, as the hostile pickles of
test_importer_hostile are): their one frame is refused before any snapshot is laid out, so
no browser runs.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from PIL import Image

from mag_dataset.harness.browsergym_import import ImportErrorForEpisode
from mag_dataset.harness.browsergym_import.limits import MAX_PIXELS
from mag_dataset.harness.import_common import MAX_IMAGE_PIXELS, open_image
from mag_dataset.harness.trace_import import TraceImportError, TraceTask
from mag_dataset.harness.trace_import.convert import convert_trace
from test_importer_hostile import _png_header


def _png(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), "white").save(buf, format="PNG")
    return buf.getvalue()


FRAMES = {
    "not an image": (b"this is not an image", "resources/frame.png cannot be read: UnidentifiedImageError"),
    "truncated": (_png(40, 30)[:60], "resources/frame.png cannot be read: "),
    "over the pixel cap": (_png_header(6_000, 6_000), "resources/frame.png is 6000x6000 pixels, over the cap of 25,000,000 pixels"),
}


def _trace(path, frame: bytes) -> None:
    """A one-click trace archive (format 5 events) whose screencast frame is ``frame``."""
    events = [
        {"type": "context-options", "options": {"viewport": {"width": 40, "height": 30}}},
        {"type": "screencast-frame", "pageId": "page@1", "sha1": "frame.png", "width": 40, "height": 30, "timestamp": 1},
        {"type": "before", "callId": "call@1", "startTime": 2, "apiName": "locator.click", "class": "Frame",
         "method": "click", "params": {"selector": "#go"}, "pageId": "page@1", "beforeSnapshot": "before@call@1"},
        {"type": "frame-snapshot", "snapshot": {"frameId": "frame@1", "snapshotName": "before@call@1", "isMainFrame": True,
                                                "frameUrl": "http://127.0.0.1/", "viewport": {"width": 40, "height": 30},
                                                "html": ["HTML", {}, ["BODY", {}, ["BUTTON", {"id": "go"}, "Go"]]]}},
        {"type": "after", "callId": "call@1"},
    ]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("trace.trace", "\n".join(json.dumps(e) for e in events) + "\n")
        z.writestr("trace.network", "")
        z.writestr("resources/frame.png", frame)


@pytest.mark.parametrize("case", sorted(FRAMES))
def test_a_crafted_trace_frame_refuses_its_archive_with_the_reason(tmp_path, case):
    frame, reason = FRAMES[case]
    path = tmp_path / "crafted.zip"
    _trace(path, frame)
    with pytest.raises(TraceImportError) as e:  # never PIL's own error: import_traces skips only TraceImportError
        convert_trace(path, TraceTask(intent="Click Go."), browser=None)
    assert str(e.value).startswith(reason), str(e.value)


def test_open_image_one_rule_for_both_importers(tmp_path):
    assert MAX_PIXELS == MAX_IMAGE_PIXELS == 25_000_000  # the importer's cap is the shared one
    img = open_image(io.BytesIO(_png(40, 30)), "ok.png", ImportErrorForEpisode)
    assert (img.mode, img.size) == ("RGB", (40, 30))
    (tmp_path / "big.png").write_bytes(_png_header(6_000, 6_000))
    with pytest.raises(ImportErrorForEpisode) as e:
        open_image(tmp_path / "big.png", "big.png", ImportErrorForEpisode)
    # the cap's own sentence (it was wrapped as "cannot be read: ImportErrorForEpisode: ...")
    assert str(e.value) == "big.png is 6000x6000 pixels, over the cap of 25,000,000 pixels"
    with pytest.raises(ImportErrorForEpisode, match=r"^small.png is 40x30 pixels, over the cap of 1,000 pixels$"):
        open_image(io.BytesIO(_png(40, 30)), "small.png", ImportErrorForEpisode, max_pixels=1_000)
