"""Raw format v2: compact storage (`mag compact`), SoM rendered at build time, capture geometry,
and the builder's rule for point-only steps (issue 10 item 4, issue 11 item 3, issue 14 item 3)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import shutil

import numpy as np
import pytest
from PIL import Image, ImageDraw

from mag_dataset.builder import build_dataset, prepare_corpus
from mag_dataset.cli import main
from mag_dataset.compact import compact_corpus, to_lossless_webp
from mag_dataset.raw import (
    RawDataError,
    capture_geometry,
    image_format,
    read_corpus,
    read_episode,
    screenshot_bytes,
    som_image_bytes,
)

from synthetic_raw import edit_episode, episode_doc, make_corpus


@pytest.fixture()
def raw(synthetic_corpus, tmp_path):
    """A copy of the synthetic corpus (PNG screenshots and recorded Set-of-Mark images) to compact."""
    dst = tmp_path / "raw"
    shutil.copytree(synthetic_corpus[0], dst)
    return dst


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGBA"))


def test_render_som_is_pinned_and_deterministic():
    from mag_dataset.som import render_som
    from mag_dataset.schema import Candidate

    im = Image.new("RGB", (200, 120), (245, 245, 245))
    ImageDraw.Draw(im).rectangle((20, 30, 120, 60), fill=(200, 220, 255))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    cands = [Candidate("7", "button", "OK", (20, 30, 120, 60)), Candidate("123", "link", "Help", (0, 0, 40, 12)),
             Candidate("a9", "textbox", "", (150.5, 90.25, 199, 119))]
    out = render_som(buf.getvalue(), cands)
    assert out == render_som(buf.getvalue(), cands) and image_format(out) == "png"
    # The pixels are pinned: a change of Pillow's bitmap font or of draw_som must be deliberate
    # (it changes every built Set-of-Mark image).
    with Image.open(io.BytesIO(out)) as r:
        assert hashlib.sha256(r.tobytes()).hexdigest() == "537e1e9836a465157b7f613a3dbf45262f1fe64ce3b8d565a6dedae3a64598a5"
    # the same render from a lossless WebP of the same pixels
    webp = to_lossless_webp(buf.getvalue())
    assert webp is not None and np.array_equal(_pixels(render_som(webp, cands)), _pixels(out))
    # the builder's encoding: a lossless WebP of the same pixels, the same bytes every time
    built = render_som(buf.getvalue(), cands, "webp")
    assert image_format(built) == "webp" and built == render_som(buf.getvalue(), cands, "webp")
    assert np.array_equal(_pixels(built), _pixels(out))


def test_compact_converts_losslessly_drops_som_and_is_idempotent(raw, synthetic_corpus):
    png_corpus = synthetic_corpus[0]
    before = {ep.episode_id: ep for ep in read_corpus(png_corpus)}
    report = compact_corpus(raw, workers=2, share=False, delta=False)  # sharing, differences: own tests below
    n_steps = sum(len(ep.steps) for ep in before.values())
    assert report.episodes == len(before) == 10 and report.changed_episodes == 10
    assert report.converted == n_steps and report.som_dropped == n_steps and report.kept_png == 0
    for ep in read_corpus(raw):
        old = before[ep.episode_id]
        folder = raw / ep.episode_id
        assert sorted(p.name for p in folder.iterdir()) == sorted(["episode.json.gz", *(s.screenshot for s in ep.steps)])
        text = gzip.decompress((folder / "episode.json.gz").read_bytes()).decode("utf-8")
        assert json.loads(text)["format_version"] == 2
        # one line per candidate (plain objects inline), indented above that
        assert sum(line.strip().startswith('{"id": ') for line in text.splitlines()) == sum(len(s.candidates) for s in ep.steps)
        for st, st0 in zip(ep.steps, old.steps):
            data = (folder / st.screenshot).read_bytes()
            assert st.screenshot.endswith(".webp") and image_format(data) == "webp" and st.som_screenshot == ""
            assert np.array_equal(_pixels(data), _pixels((png_corpus / ep.episode_id / st0.screenshot).read_bytes()))
            # the synthetic episodes say source "miniwob" and store no conversion: MiniWoB's defaults
            assert (st.viewport_width, st.viewport_height, st.device_pixel_ratio) == (332, 214, 1.5)
            assert (st.action, st.candidates, st.guide, st.target_bbox) == (st0.action, st0.candidates, st0.guide, st0.target_bbox)
    assert not any(p.name.startswith(".") for p in raw.iterdir())  # no temp folder left
    snapshot = {p: p.read_bytes() for p in raw.rglob("*") if p.is_file()}
    again = compact_corpus(raw, share=False, delta=False)
    assert again.changed_episodes == 0 and again.converted == 0
    assert snapshot == {p: p.read_bytes() for p in raw.rglob("*") if p.is_file()}


def test_compacted_build_is_byte_identical_and_renders_som(raw, tmp_path):
    compact_corpus(raw)
    a = build_dataset(raw, tmp_path / "a", progress=False)
    b = build_dataset(raw, tmp_path / "b", progress=False)
    shards = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    assert len(shards) == 4
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in shards)
    import datasets

    som = datasets.load_dataset(str(a), "som", split="test")
    coord = datasets.load_dataset(str(a), "coord", split="test")
    corpus = prepare_corpus(raw, progress=False)
    by_id = {s.step_id: s for s in corpus.steps}
    assert len(som) == len(coord) > 0
    for s_row, c_row in zip(som, coord):
        st = by_id[s_row["step_id"]]
        folder = raw / st.episode.episode_id
        # coord keeps the raw WebP bytes; som is the rendered image, as any reader gets it
        assert c_row["screenshot"].format == "WEBP" and np.array_equal(
            np.asarray(c_row["screenshot"].convert("RGBA")), _pixels(screenshot_bytes(folder, st.raw)))
        assert np.array_equal(np.asarray(s_row["screenshot"].convert("RGBA")), _pixels(som_image_bytes(folder, st.raw)))
        assert not np.array_equal(np.asarray(s_row["screenshot"].convert("RGBA")), np.asarray(c_row["screenshot"].convert("RGBA")))
        for row in (s_row, c_row):
            assert (row["viewport_width"], row["viewport_height"], row["device_pixel_ratio"]) == (332, 214, 1.5)


def test_compact_keeps_recaptured_action_time_screenshots(raw):
    from mag_dataset.harness.unify import unify_corpus

    folder = raw / "login-form.seed-0"
    st = read_episode(folder).steps[1]
    # a recaptured step: the action-time screenshot is kept beside the re-rendered one
    shutil.copy(folder / st.screenshot, folder / "step_001_action_time.png")
    edit_episode(folder, lambda d: d["steps"][1]["metadata"].update(recaptured=True,
                                                                    action_time_screenshot="step_001_action_time.png"))
    before = _pixels((folder / "step_001_action_time.png").read_bytes())
    compact_corpus(raw, share=False, delta=False)
    st = read_episode(folder).steps[1]
    assert st.metadata["action_time_screenshot"] == "step_001_action_time.webp"
    assert np.array_equal(_pixels((folder / "step_001_action_time.webp").read_bytes()), before)
    assert not (folder / "step_001_action_time.png").exists()
    # the stale rule still reads both: identical pixels, not stale
    report = unify_corpus(raw)
    assert report.recaptured == 1 and report.stale == 0


def test_compact_never_overwrites_a_file_with_the_webp_name(raw):
    folder = raw / "login-form.seed-0"
    (folder / "step_000.webp").write_bytes(b"not mine")  # a stray file with the name the WebP would take
    report = compact_corpus(raw, share=False)
    st = read_episode(folder).steps[0]
    assert st.screenshot == "step_000.png" and report.kept_png == 1 and report.not_round_trip == ["login-form.seed-0/step_000.png"]
    assert read_episode(folder).steps[1].screenshot == "step_001.webp"


def test_rendering_threads_do_not_change_the_bytes(raw, tmp_path, monkeypatch):
    import mag_dataset.builder.hf_builder as hf_builder

    compact_corpus(raw)
    built = {}
    for n in (1, 4):
        monkeypatch.setattr(hf_builder.os, "cpu_count", lambda n=n: n)
        out = build_dataset(raw, tmp_path / f"cpus{n}", progress=False)
        built[n] = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.parquet")}
    assert len(built[1]) == 4 and built[1] == built[4]


def test_cli_compact_and_user_errors(raw, tmp_path, capsys):
    assert main(["compact", "--raw", str(raw), "--dry-run"]) == 0
    assert "would compact: 10 episodes (10 rewritten)" in capsys.readouterr().out
    assert all(s.screenshot.endswith(".png") for ep in read_corpus(raw) for s in ep.steps)  # dry run wrote nothing
    assert main(["compact", "--raw", str(raw)]) == 0
    assert "compacted: 10 episodes (10 rewritten)" in capsys.readouterr().out
    assert main(["compact", "--raw", str(tmp_path / "nope")]) == 2
    assert main(["compact", "--raw", str(raw), "--method", "9"]) == 2
    err = capsys.readouterr().err
    assert "raw corpus folder not found" in err and "WebP method must be in 0..6" in err and "Traceback" not in err


def test_lossy_webp_and_unreadable_images_are_refused(raw, tmp_path):
    folder = raw / "login-form.seed-0"
    st = read_episode(folder).steps[0]
    with Image.open(folder / st.screenshot) as im:
        buf = io.BytesIO()
        im.save(buf, format="WEBP", quality=80)  # lossy
    (folder / "step_000.webp").write_bytes(buf.getvalue())
    assert image_format(buf.getvalue()) == "webp-lossy"
    edit_episode(folder, lambda d: d["steps"][0].update(screenshot="step_000.webp", som_screenshot=None))
    with pytest.raises(RawDataError, match="lossy WebP"):
        build_dataset(raw, tmp_path / "out", progress=False)
    (folder / "step_000.webp").write_bytes(b"RIFF\x10\x00\x00\x00WEBPjunkjunk")
    with pytest.raises(RawDataError, match="not a PNG or lossless WebP"):
        build_dataset(raw, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_capture_geometry_fields_metadata_and_defaults(raw):
    st = read_episode(raw / "login-form.seed-0").steps[0]
    import dataclasses

    assert capture_geometry(st, "") == (160, 120, 1.0)  # no metadata: an uncropped capture at ratio 1
    assert capture_geometry(st, "miniwob") == (332, 214, 1.5)
    conv = dataclasses.replace(st, metadata={"conversion": {"scale_factor": 2.0, "crop": [0, 0, 320, 240]}})
    assert capture_geometry(conv) == (80, 60, 2.0)
    assert capture_geometry(conv, "miniwob") == (332, 214, 2.0)
    site = dataclasses.replace(conv, metadata={**conv.metadata, "viewport": [1280, 720]})
    assert capture_geometry(site) == (1280, 720, 2.0)
    explicit = dataclasses.replace(site, viewport_width=640, viewport_height=360, device_pixel_ratio=1.25)
    assert capture_geometry(explicit) == (640, 360, 1.25)
    # explicit fields round-trip through episode.json and are validated
    edit_episode(raw / "login-form.seed-0", lambda d: d["steps"][0].update(viewport_width=640, viewport_height=360,
                                                                          device_pixel_ratio=1.25))
    st = read_episode(raw / "login-form.seed-0").steps[0]
    assert (st.viewport_width, st.viewport_height, st.device_pixel_ratio) == (640, 360, 1.25)
    assert st.to_json()["viewport_width"] == 640
    row = next(s for s in prepare_corpus(raw, progress=False).steps if s.step_id == "login-form.seed-0:0").row
    from mag_dataset.actions import View

    assert [row(v)[k] for v in View for k in ("viewport_width", "viewport_height", "device_pixel_ratio")] == [640, 360, 1.25] * 2
    edit_episode(raw / "login-form.seed-0", lambda d: d["steps"][0].update(device_pixel_ratio=0))
    with pytest.raises(RawDataError, match="device_pixel_ratio"):
        read_episode(raw / "login-form.seed-0")


def _make_point_only(raw, step=3):
    # login-form.seed-0 has 3 steps; use a 5-step episode: seed 2 (held-out-a has seeds 30, 31)
    folder = next(p for p in sorted(raw.iterdir()) if p.is_dir() and len(read_episode(p).steps) > step
                  and read_episode(p).steps[step].action.type.value == "click")
    edit_episode(folder, lambda d: (d["steps"][step]["action"].update(element_id=None), d["steps"][step].update(target_bbox=None)))
    return folder


def test_build_refuses_unrestored_point_only_steps(tmp_path):
    root = tmp_path / "raw"
    make_corpus(root, seeds_per_template=3)
    folder = _make_point_only(root)
    with pytest.raises(RawDataError, match=r"run `mag unify`.*--unmappable-point-only"):
        build_dataset(root, tmp_path / "out", progress=False)
    assert main(["build", "--raw", str(root), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert not (tmp_path / "out").exists()
    out = build_dataset(root, tmp_path / "out", progress=False, unmappable_point_only=True)
    import datasets

    sid = f"{read_episode(folder).task_id}:3"
    for view in ("som", "coord"):
        rows = [r for s in ("train", "test") for r in datasets.load_dataset(str(out), view, split=s).remove_columns("screenshot")
                if r["step_id"] == sid]
        assert len(rows) == 1
        r = rows[0]
        assert r["audit_status"] == "unmappable" and r["target_bbox"] is None and r["action"]["element_id"] is None
        assert r["action"]["coordinate"] == [20.0, 85.0]
    assert json.loads((out / "build_info.json").read_text())["unmappable_point_only"] is True


def test_zero_size_target_box_is_refused(tmp_path):
    root = tmp_path / "raw"
    make_corpus(root, seeds_per_template=1)
    folder = root / "login-form.seed-0"
    edit_episode(folder, lambda d: (d["steps"][0].update(target_bbox=[60.0, 20.0, 60.0, 20.0]),
                                    d["steps"][0]["action"].update(coordinate=[60.0, 20.0])))
    with pytest.raises(RawDataError, match="zero-size"):
        prepare_corpus(root, progress=False)


def _fingerprint(cid: str) -> dict:
    return {"tag": "button", "role": "button", "name": f"Item {cid}", "attrs": {"id": f"b{cid}"},
            "path": f"html[0]/body[0]/main[0]/ul[0]/li[{cid}]/button[0]"}


def test_page_evidence_lives_beside_episode_json_and_reads_back_into_metadata(raw, tmp_path):
    from mag_dataset.raw import EVIDENCE_FILE, rewrite_episode_json, write_episode

    folder = sorted(p for p in raw.iterdir() if p.is_dir())[0]
    ep = read_episode(folder)
    dom = {"candidates": {str(i): _fingerprint(str(i)) for i in range(120)}, "target": _fingerprint("7"),
           "target_box": [1.0, 2.0, 30.5, 40.0]}
    shown = {"url": "http://127.0.0.1:1/x", "title": "X", "elements": [{"id": "7", "box": [1, 2, 3, 4]}]}
    steps = list(ep.steps)
    steps[0] = dataclasses.replace(steps[0], metadata={**steps[0].metadata, "dom": dom})
    steps[1] = dataclasses.replace(steps[1], metadata={**steps[1].metadata, "dom": dom, "shown_page": shown})
    with_evidence = dataclasses.replace(ep, steps=tuple(steps))
    inline_size = len(json.dumps(with_evidence.to_json()))

    # written by the writers: the evidence is out of episode.json, gzip-compressed beside it
    out = write_episode(tmp_path / "w", with_evidence, {n: (folder / n).read_bytes() for n in {s.screenshot for s in ep.steps}
                                                       | {s.som_screenshot for s in ep.steps if s.som_screenshot}})
    text = (out / "episode.json").read_text()
    assert '"dom"' not in text and '"shown_page"' not in text
    packed = (out / EVIDENCE_FILE).read_bytes()
    assert len(packed) * 10 < inline_size  # 120 fingerprints a step, as a site page has
    back = read_episode(out)
    assert back.steps[0].metadata["dom"] == dom and "shown_page" not in back.steps[0].metadata
    assert back.steps[1].metadata["shown_page"] == shown
    assert "dom" not in back.steps[2].metadata
    # rewriting keeps it, with the same bytes (gzip without a time stamp)
    rewrite_episode_json(out, back)
    assert (out / EVIDENCE_FILE).read_bytes() == packed
    assert read_episode(out).steps[1].metadata == back.steps[1].metadata
    # an episode.json that holds its evidence inline (written before) is read as it is; compact splits it out
    edit_episode(folder, lambda d: d["steps"][0]["metadata"].update(dom=dom))
    assert read_episode(folder).steps[0].metadata["dom"] == dom
    compact_corpus(raw)
    assert (folder / EVIDENCE_FILE).is_file() and "dom" not in episode_doc(folder)["steps"][0]["metadata"]
    assert not (folder / "episode.json").exists()  # compacted: episode.json.gz
    assert read_episode(folder).steps[0].metadata["dom"] == dom
    # a damaged evidence file is one error naming the episode and the file
    (out / EVIDENCE_FILE).write_bytes(packed[:40])
    with pytest.raises(RawDataError, match=EVIDENCE_FILE.replace(".", r"\.")):
        read_episode(out)
    # evidence dropped from every step: the file goes too
    rewrite_episode_json(out, ep)
    assert not (out / EVIDENCE_FILE).exists()


def test_screenshots_several_episodes_hold_are_stored_once_and_read_everywhere(raw, tmp_path, capsys):
    """A template's start page, byte for byte in several episodes, is stored once (`_shared_images`):
    every reader and the build see the same pixels; undoing a recapture never deletes it; an
    episode copied out alone names the fix; a rerun changes nothing."""
    from mag_dataset.harness.recapture import undo_recapture
    from mag_dataset.raw import SHARED_IMAGES_DIR, copy_episodes, iter_episode_dirs

    a, b = raw / "login-form.seed-0", raw / "login-form.seed-1"
    start = read_episode(a).steps[0].screenshot
    shutil.copy(a / start, b / read_episode(b).steps[0].screenshot)  # both episodes open on the same page
    edit_episode(b, lambda d: d["steps"][1]["metadata"].update(  # and b's step 1 was recaptured as that page
        recaptured=True, action_time_screenshot=d["steps"][1]["screenshot"], recaptured_identical=False))
    shutil.copy(a / start, b / "step_001_recaptured.png")
    edit_episode(b, lambda d: d["steps"][1].update(screenshot="step_001_recaptured.png"))
    compact_corpus(raw, share=False, delta=False)
    plain = build_dataset(raw, tmp_path / "plain", progress=False)
    held: dict[str, set[str]] = {}  # sha256 -> episodes holding those bytes
    copies: dict[tuple[str, str], int] = {}  # (episode, file) -> size, per sha256
    for folder in iter_episode_dirs(raw):
        for st in read_episode(folder).steps:
            for name in {st.screenshot, st.metadata.get("action_time_screenshot") or st.screenshot}:
                data = (folder / name).read_bytes()
                h = hashlib.sha256(data).hexdigest()
                held.setdefault(h, set()).add(folder.name)
                copies[folder.name, name] = (h, len(data))
    expect = {h for h, eps in held.items() if len(eps) > 1}
    planted = hashlib.sha256((a / read_episode(a).steps[0].screenshot).read_bytes()).hexdigest()
    assert planted in expect
    saved = sum(n for h, n in copies.values() if h in expect) - sum(
        next(n for g, n in copies.values() if g == h) for h in expect)

    report = compact_corpus(raw, delta=False)
    shared = sorted((raw / SHARED_IMAGES_DIR).iterdir())
    assert report.shared == len(expect) == len(shared) and report.shared_saved_bytes == saved > 0
    assert {p.stem for p in shared} == {h[:32] for h in expect} and all(p.suffix == ".webp" for p in shared)
    ref = f"../{SHARED_IMAGES_DIR}/{planted[:32]}.webp"
    ep_a, ep_b = read_episode(a), read_episode(b)
    assert ep_a.steps[0].screenshot == ep_b.steps[0].screenshot == ep_b.steps[1].screenshot == ref
    assert not (a / "step_000.webp").exists() and not (b / "step_001_recaptured.webp").exists()
    assert all(ep.steps[0].screenshot.startswith("step_") or ep.steps[0].screenshot.startswith("../")
               for ep in read_corpus(raw))
    assert SHARED_IMAGES_DIR not in {p.name for p in iter_episode_dirs(raw)}
    # the build holds the same rows and pixels as before sharing (names aside, the same bytes per step)
    shared_build = build_dataset(raw, tmp_path / "shared", progress=False)
    import datasets

    for view in ("som", "coord"):
        x = datasets.load_dataset(str(plain), view, split="train").sort("step_id")
        y = datasets.load_dataset(str(shared_build), view, split="train").sort("step_id")
        assert x["step_id"] == y["step_id"]
        assert all(np.array_equal(np.asarray(p.convert("RGBA")), np.asarray(q.convert("RGBA")))
                   for p, q in zip(x["screenshot"], y["screenshot"]))
    snapshot = {p: p.read_bytes() for p in raw.rglob("*") if p.is_file()}
    assert compact_corpus(raw, delta=False).shared_saved_bytes == 0
    assert snapshot == {p: p.read_bytes() for p in raw.rglob("*") if p.is_file()}

    # undoing b's recapture gives step 1 its own file back and leaves the shared one alone
    new, gone = undo_recapture(dataclasses.replace(ep_b, metadata={**ep_b.metadata, "recaptured": {"diverged": False}}))
    assert gone == [] and (raw / ref.removeprefix("../")).exists()
    assert new.steps[1].screenshot == ep_b.steps[1].metadata["action_time_screenshot"]

    # an episode copied out alone: a clear error; copy_episodes brings the shared file along
    lone = tmp_path / "lone"
    shutil.copytree(a, lone / a.name)
    with pytest.raises(RawDataError, match="copy_episodes"):
        read_episode(lone / a.name)
    copy_episodes(raw, tmp_path / "subset", [a.name])
    assert read_episode(tmp_path / "subset" / a.name).steps[0].screenshot == ref

    # a shared file no step names any more is removed; paths out of the corpus are refused
    shutil.rmtree(a), shutil.rmtree(b)
    compact_corpus(raw, delta=False)
    named = {n for ep in read_corpus(raw) for st in ep.steps
             for n in (st.screenshot, st.metadata.get("action_time_screenshot")) if n and n.startswith("../")}
    assert {f"../{SHARED_IMAGES_DIR}/{p.name}" for p in (raw / SHARED_IMAGES_DIR).iterdir()} == named
    c = iter_episode_dirs(raw)[0]
    for bad in ("../../secret.webp", "/etc/passwd", "../other/step_000.webp", f"../{SHARED_IMAGES_DIR}/x/y.webp"):
        edit_episode(c, lambda d, bad=bad: d["steps"][0].update(screenshot=bad))
        with pytest.raises(RawDataError, match="must be a file name in the episode folder"):
            read_episode(c)


def test_a_recaptured_screenshot_is_stored_as_its_difference_and_read_back_exactly(raw, tmp_path):
    """A recaptured screenshot that differs from its action-time one in a region is stored as a
    difference (`<stem>~<base>`, far smaller), and so is an action-time screenshot close to the
    one before it; every reader gets the screenshot itself, byte for byte: the build, the stale
    rule, the Set-of-Mark rendering; a rerun changes nothing."""
    from mag_dataset.compact import apply_delta, make_delta
    from mag_dataset.harness.unify import unify_corpus
    from mag_dataset.raw import image_bytes

    compact_corpus(raw, share=False, delta=False)
    folder = raw / "login-form.seed-0"
    ep = read_episode(folder)
    st = ep.steps[1]
    with Image.open(folder / st.screenshot) as im:
        moved = im.convert("RGB")
    ImageDraw.Draw(moved).rectangle((5, 5, 60, 20), fill=(200, 30, 30))  # the page moved on: a banner
    recaptured = to_lossless_webp(_png(moved))
    (folder / "step_001_recaptured.webp").write_bytes(recaptured)
    edit_episode(folder, lambda d: (d["steps"][1]["metadata"].update(
        recaptured=True, action_time_screenshot=d["steps"][1]["screenshot"], recaptured_identical=False),
        d["steps"][1].update(screenshot="step_001_recaptured.webp")))
    before = build_dataset(raw, tmp_path / "before", progress=False)
    compact_corpus(raw, share=False)
    st = read_episode(folder).steps[1]
    assert st.screenshot == "step_001_recaptured~" + st.metadata["action_time_screenshot"]
    assert not (folder / "step_001_recaptured.webp").exists()
    assert (folder / st.screenshot).stat().st_size < len(recaptured)  # synthetic pages are tiny; site pages: ~1/30
    assert screenshot_bytes(folder, st) == recaptured
    base = image_bytes(folder, st.metadata["action_time_screenshot"])  # itself a difference from step 0's
    assert "~" in st.metadata["action_time_screenshot"] and apply_delta(base, make_delta(base, recaptured)) == recaptured
    after = build_dataset(raw, tmp_path / "after", progress=False)
    shards = sorted(p.relative_to(before) for p in before.rglob("*.parquet"))
    assert shards and all((before / f).read_bytes() == (after / f).read_bytes() for f in shards)
    assert unify_corpus(raw).stale == 1  # the stale rule reads the screenshot itself
    from mag_dataset.som import render_som

    assert som_image_bytes(folder, st) == render_som(recaptured, st.candidates)
    snapshot = {p: p.read_bytes() for p in raw.rglob("*") if p.is_file()}
    assert compact_corpus(raw, share=False).deltas == 0  # idempotent
    assert snapshot == {p: p.read_bytes() for p in raw.rglob("*") if p.is_file()}
    # undoing the recapture removes its difference and leaves the action-time chain readable
    from mag_dataset.harness.recapture import undo_recaptures

    edit_episode(folder, lambda d: d["metadata"].update(recaptured={"diverged": False}))
    undo_recaptures(raw)
    st = read_episode(folder).steps[1]
    assert not list(folder.glob("step_001_recaptured*")) and screenshot_bytes(folder, st) == image_bytes(
        folder, st.screenshot) and "~" in st.screenshot


def _png(im) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------- episode.json.gz


def _episode_files(folder) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith("episode.json")}


def test_episode_json_gz_round_trips_and_a_rewrite_keeps_the_form_it_found(raw, tmp_path):
    from mag_dataset.raw import EPISODE_FILE, EPISODE_GZ_FILE, episode_files, rewrite_episode_json

    folder = sorted(p for p in raw.iterdir() if p.is_dir())[0]
    ep = read_episode(folder)
    plain = (folder / EPISODE_FILE).read_bytes()
    packed = episode_files(ep, compressed=True)[EPISODE_GZ_FILE]
    # the same text, gzip-compressed with nothing that varies in its header: no file name, mtime 0
    assert gzip.decompress(packed) == plain and packed[3] & 0x08 == 0 and packed[4:8] == b"\0\0\0\0"
    assert packed == episode_files(ep, compressed=True)[EPISODE_GZ_FILE]
    # a compressed copy of the folder reads as the plain one
    other = tmp_path / "gz" / folder.name
    shutil.copytree(folder, other)
    (other / EPISODE_FILE).unlink()
    (other / EPISODE_GZ_FILE).write_bytes(packed)
    assert read_episode(other) == ep
    # a rewrite writes the form it found, atomically, and never the other
    changed = dataclasses.replace(ep, steps=(dataclasses.replace(ep.steps[0], guide="Type your name first."), *ep.steps[1:]))
    assert rewrite_episode_json(other, changed) == other / EPISODE_GZ_FILE
    assert _episode_files(other) == {EPISODE_GZ_FILE} and read_episode(other) == changed
    assert rewrite_episode_json(folder, changed) == folder / EPISODE_FILE
    assert _episode_files(folder) == {EPISODE_FILE} and read_episode(folder) == changed
    assert gzip.decompress((other / EPISODE_GZ_FILE).read_bytes()) == (folder / EPISODE_FILE).read_bytes()
    assert not any(p.name.startswith(".") for p in other.iterdir())  # no temp file left
    # a damaged compressed file is one error naming the episode and the file
    (other / EPISODE_GZ_FILE).write_bytes(packed[:30])
    with pytest.raises(RawDataError, match=r"episode\.json\.gz.*not valid gzip-compressed UTF-8 JSON"):
        read_episode(other)
    (other / EPISODE_GZ_FILE).write_bytes(b"not gzip at all")
    with pytest.raises(RawDataError, match=r"episode\.json\.gz"):
        read_episode(other)


def test_a_folder_with_both_episode_files_is_refused_naming_it(raw, tmp_path, capsys):
    from mag_dataset.raw import EPISODE_FILE, EPISODE_GZ_FILE, gzip_bytes, rewrite_episode_json

    folder = sorted(p for p in raw.iterdir() if p.is_dir())[0]
    ep = read_episode(folder)
    (folder / EPISODE_GZ_FILE).write_bytes(gzip_bytes((folder / EPISODE_FILE).read_bytes()))
    for call in (lambda: read_episode(folder), lambda: rewrite_episode_json(folder, ep)):
        with pytest.raises(RawDataError, match=f"{folder}.* holds both episode.json and episode.json.gz"):
            call()
    assert _episode_files(folder) == {EPISODE_FILE, EPISODE_GZ_FILE}  # nothing written over either
    # in a command: one line naming the folder, no traceback, nothing built
    assert main(["build", "--raw", str(raw), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "holds both episode.json and episode.json.gz" in err and str(folder) in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    assert main(["compact", "--raw", str(raw)]) == 2
    assert "holds both" in capsys.readouterr().err


def test_compact_writes_episode_json_gz_and_a_second_run_is_byte_identical(raw, tmp_path):
    from mag_dataset.raw import EPISODE_GZ_FILE, SHARED_IMAGES_DIR

    before = {ep.episode_id: ep for ep in read_corpus(raw)}
    plain_bytes = sum((raw / n / "episode.json").stat().st_size for n in before)
    compact_corpus(raw)  # everything: WebP, differences, shared screenshots, compressed episodes
    folders = [p for p in raw.iterdir() if p.is_dir() and p.name != SHARED_IMAGES_DIR]
    assert len(folders) == 10 and all(_episode_files(f) == {EPISODE_GZ_FILE} for f in folders)
    assert sum((f / EPISODE_GZ_FILE).stat().st_size for f in folders) * 4 < plain_bytes
    for ep in read_corpus(raw):  # the labels are the same; only storage changed
        old = before[ep.episode_id]
        assert [(s.action, s.guide, s.candidates) for s in ep.steps] == [(s.action, s.guide, s.candidates) for s in old.steps]
    snapshot = {p.relative_to(raw): p.read_bytes() for p in raw.rglob("*") if p.is_file()}
    again = compact_corpus(raw)
    assert again.changed_episodes == 0 and again.deltas == 0
    assert snapshot == {p.relative_to(raw): p.read_bytes() for p in raw.rglob("*") if p.is_file()}
    # built from the compressed form: the same rows as from a plain copy of the same episodes
    plain = tmp_path / "plain"
    shutil.copytree(raw, plain)
    for f in folders:
        data = gzip.decompress((plain / f.name / EPISODE_GZ_FILE).read_bytes())
        (plain / f.name / EPISODE_GZ_FILE).unlink()
        (plain / f.name / "episode.json").write_bytes(data)
    a = build_dataset(raw, tmp_path / "a", progress=False)
    b = build_dataset(plain, tmp_path / "b", progress=False)
    shards = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    assert len(shards) == 4 and all((a / f).read_bytes() == (b / f).read_bytes() for f in shards)


def test_stages_that_rewrite_episodes_keep_the_compressed_form(raw):
    """unify, the recapture's offline rewrites and compact itself on a compacted corpus: each
    rewrites episode.json.gz and never leaves an episode.json (lint-guides --regenerate: in
    test_guide_lint, on the bundled corpus)."""
    from mag_dataset.harness.unify import unify_corpus
    from mag_dataset.harness.recapture import undo_recaptures
    from mag_dataset.raw import EPISODE_GZ_FILE, SHARED_IMAGES_DIR

    compact_corpus(raw)
    folder = raw / "login-form.seed-1"  # 4 steps: type, select, scroll, click
    edit_episode(folder, lambda d: d["steps"][3]["action"].update(element_id=None))  # a point-only click
    edit_episode(folder, lambda d: d["steps"][3].update(target_bbox=None))
    packed = (folder / EPISODE_GZ_FILE).read_bytes()
    report = unify_corpus(raw)
    assert report.changed_episodes == ["login-form.seed-1"] and report.restored == 1
    assert _episode_files(folder) == {EPISODE_GZ_FILE} and (folder / EPISODE_GZ_FILE).read_bytes() != packed
    assert read_episode(folder).steps[3].action.element_id == "3"
    # the recapture's offline rewrite: an episode marked recaptured, then undone
    other = raw / "pick-colour.seed-11"
    edit_episode(other, lambda d: d["metadata"].update(recaptured={"at": "x"}))
    assert undo_recaptures(raw) == ["pick-colour.seed-11"]
    assert "recaptured" not in read_episode(other).metadata
    folders = [p for p in raw.iterdir() if p.is_dir() and p.name != SHARED_IMAGES_DIR]
    assert len(folders) == 10 and all(_episode_files(f) == {EPISODE_GZ_FILE} for f in folders)
    assert not any(p.name.startswith(".") for f in folders for p in f.iterdir())
    # compact on the result: the episodes rewritten above are already in final form
    assert compact_corpus(raw).changed_episodes == 0
