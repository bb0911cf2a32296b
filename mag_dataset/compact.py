"""Compact storage of a raw corpus (raw format v2): lossless WebP screenshots, no stored SoM.

``mag compact --raw DIR`` rewrites every episode of a raw corpus so that each screenshot is
stored once, in the smallest lossless form:

* every PNG screenshot (``screenshot``, and a recaptured step's
  ``metadata["action_time_screenshot"]``) is re-encoded as a **lossless WebP** with
  :data:`WEBP_METHOD` / :data:`WEBP_QUALITY`, decoded again and compared with the PNG pixel by
  pixel (RGBA); a file that does not round-trip exactly, whose WebP is not smaller, or whose
  ``.webp`` name another file of the episode already has, stays a PNG;
* recorded Set-of-Mark images, and ``step_*`` files no step references, are deleted and
  ``som_screenshot`` is cleared: the builder
  renders them from the raw screenshot and the candidate boxes
  (:func:`mag_dataset.som.render_som`, deterministic);
* each step's capture geometry (:func:`mag_dataset.raw.capture_geometry`) is written into
  its fields, and the episode is rewritten in format v2, gzip-compressed: ``episode.json``
  becomes ``episode.json.gz`` (deterministic bytes; "Compressed episode files" in
  :mod:`mag_dataset.raw`). The indented JSON of a site episode compresses about sevenfold
  (7.2 MB to 1.0 MB for the 197 episodes of corpus v2.1), and every later stage reads and
  rewrites it in that form;
* a screenshot is stored as its pixel difference from another of its episode when that is
  much smaller (``<stem>~<base>``, :func:`store_differences`; "Screenshots stored as
  differences" in :mod:`mag_dataset.raw`): an action-time screenshot from the last one
  stored whole before it (a field typed into changes little), a recaptured one from its
  action-time screenshot;
* a screenshot that several episodes show, byte for byte (a template's start page), is then
  stored once, in the corpus's ``_shared_images`` folder named by its sha256, and the steps
  name it there (:func:`share_images`; "Shared screenshots" in :mod:`mag_dataset.raw`).
  On the bundled sample this is 8.9 MB of its 47 MB.

Each episode is converted atomically: the new folder is written and validated under a
hidden temp name, then swapped in; an interrupted run leaves every episode either as it was
or fully compacted (both are valid raw data) and a rerun finishes the job; sharing writes a
shared file before any episode names it and removes an episode's copy only after its
``episode.json`` names the shared one. Rerunning on a
compacted corpus changes nothing. ``corpus.json`` and ``audit.jsonl`` are untouched (step
ids do not change). Reading and validating episodes is :mod:`mag_dataset.raw`; rendering the
dropped Set-of-Mark images is the builder's (:mod:`mag_dataset.builder`).

Settings. Measured on 1280x720 screenshots of the four sites (``benchmarks/bench_compact.py``,
2 shared CPU cores): PNG ``optimize=True`` ~65 KB; lossless WebP method 6 ~29 KB but
~2-4 s per image; method 4 quality 100 ~31 KB at ~0.3-0.4 s; method 1 quality 50 ~32 KB
at ~0.1 s. Method 4 keeps 95% of method 6's saving at a tenth of its time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mag_dataset.raw import (
    DELTA_SEP,
    EPISODE_FILE,
    EPISODE_GZ_FILE,
    SHARED_IMAGES_DIR,
    RawEpisode,
    RawStep,
    capture_geometry,
    apply_delta,
    delta_base,
    episode_files,
    episode_path,
    image_bytes,
    image_format,
    is_delta,
    is_shared_image,
    iter_episode_dirs,
    make_delta,
    read_episode,
    rewrite_episode_json,
    share_ref,
)

#: libwebp's effort (0 fastest .. 6 smallest) and, for lossless, Pillow's ``quality`` (effort too).
WEBP_METHOD = 4
WEBP_QUALITY = 100


def to_lossless_webp(png: bytes, method: int = WEBP_METHOD, quality: int = WEBP_QUALITY) -> bytes | None:
    """Re-encode an image as lossless WebP; None when its pixels would not round-trip exactly.

    Args:
        png: the source file's bytes (PNG, or anything Pillow reads).
        method, quality: libwebp settings (module docstring).

    Returns:
        The WebP bytes, verified pixel-identical (RGBA) to the source, or None.
    """
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        mode = "RGBA" if im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info else "RGB"
        src = im.convert(mode)
    buf = io.BytesIO()
    src.save(buf, format="WEBP", lossless=True, method=method, quality=quality, exact=True)
    data = buf.getvalue()
    with Image.open(io.BytesIO(data)) as back:
        same = back.size == src.size and np.array_equal(np.asarray(back.convert("RGBA")), np.asarray(src.convert("RGBA")))
    return data if same and image_format(data) == "webp" else None


@dataclass
class CompactReport:
    """What :func:`compact_corpus` did (or would do with ``dry_run``)."""

    episodes: int = 0
    changed_episodes: int = 0
    converted: int = 0
    kept_png: int = 0
    som_dropped: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    seconds: float = 0.0
    not_round_trip: list[str] = field(default_factory=list)
    deltas: int = 0
    delta_saved_bytes: int = 0
    shared: int = 0
    shared_saved_bytes: int = 0

    def summary(self) -> str:
        mb = 1024 * 1024
        return (
            f"{self.episodes} episodes ({self.changed_episodes} rewritten): {self.converted} images to lossless WebP, "
            f"{self.kept_png} kept as PNG, {self.som_dropped} Set-of-Mark images dropped, "
            f"{self.deltas} screenshots stored as differences ({self.delta_saved_bytes / mb:.1f} MB saved), "
            f"{self.shared} screenshots shared across episodes ({self.shared_saved_bytes / mb:.1f} MB saved); "
            f"{self.bytes_before / mb:.1f} MB -> {self.bytes_after / mb:.1f} MB in {self.seconds:.1f} s"
        )


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def _webp_name(name: str) -> str:
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return f"{stem}.webp"


def _step_sources(ep: RawEpisode) -> set[str]:
    """Every image a step references: the screenshot and the recapture's action-time screenshot."""
    sources: set[str] = set()
    for st in ep.steps:
        if st.screenshot:  # none: a step imported without one
            sources.add(st.screenshot)
        at = st.metadata.get("action_time_screenshot")
        if isinstance(at, str) and at:
            sources.add(at)
    return sources


def _local_sources(ep: RawEpisode) -> set[str]:
    """The episode's own image files (not shared ones), differences aside."""
    return {n for n in _step_sources(ep) if not is_shared_image(n) and not is_delta(n)}


#: An action-time screenshot is stored as a difference only below this share of its size
#: (a new page is better stored whole: the next steps' differences are taken from it).
KEYFRAME_RATIO = 0.5


def _difference(folder: Path, name: str, base: str) -> bytes | None:
    """The difference that may replace ``name`` (a whole lossless WebP) against ``base``, or None
    when it is not smaller or would not give the file's bytes back on this machine."""
    data = (folder / name).read_bytes()
    if image_format(data) != "webp":
        return None
    base_bytes = image_bytes(folder, base)
    diff = make_delta(base_bytes, data)
    if diff is None or len(diff) >= len(data) or apply_delta(base_bytes, diff) != data:
        return None
    return diff


def store_differences(raw_dir: str | os.PathLike, report: CompactReport | None = None) -> CompactReport:
    """Store screenshots as differences within each episode (module docstring), in two passes:
    each action-time screenshot against the last one stored whole before it, when the
    difference is under :data:`KEYFRAME_RATIO` of its size; then each recaptured screenshot
    against its action-time screenshot, when smaller. A file another difference is taken from,
    a shared file, or one several steps name, stays as it is. Idempotent; each episode's JSON
    is replaced atomically before the replaced files are removed."""
    report = report if report is not None else CompactReport()
    for folder in iter_episode_dirs(raw_dir):
        ep = read_episode(folder)
        named: dict[str, int] = {}
        for st in ep.steps:
            for n in {st.screenshot, st.metadata.get("action_time_screenshot") or st.screenshot}:
                named[n] = named.get(n, 0) + 1
        bases = {delta_base(n) for n in named if is_delta(n)}
        renamed: dict[str, str] = {}

        def movable(name: str) -> bool:
            return (not is_delta(name) and not is_shared_image(name) and name not in bases and named.get(name) == 1
                    and name.endswith(".webp"))

        keyframe: str | None = None
        for st in ep.steps:  # action-time screenshots, in order
            name = str(st.metadata.get("action_time_screenshot") or st.screenshot)
            if keyframe is not None and movable(name):
                diff = _difference(folder, name, keyframe)
                if diff is not None and len(diff) < KEYFRAME_RATIO * (folder / name).stat().st_size:
                    renamed[name] = _store(folder, name, keyframe, diff, report)
                    bases.add(keyframe)
                    continue
            if not is_delta(name) and not is_shared_image(name) and name.endswith(".webp"):
                keyframe = name
        for st in ep.steps:  # recaptured screenshots, against their action-time screenshots
            at = st.metadata.get("action_time_screenshot")
            if st.metadata.get("recaptured") and isinstance(at, str) and at and at != st.screenshot and movable(st.screenshot):
                base = renamed.get(at, at)
                if is_shared_image(base):
                    continue
                diff = _difference(folder, st.screenshot, base)
                if diff is not None:
                    renamed[st.screenshot] = _store(folder, st.screenshot, base, diff, report)
        if renamed:
            steps = []
            for st in ep.steps:
                meta = dict(st.metadata)
                if meta.get("action_time_screenshot") in renamed:
                    meta["action_time_screenshot"] = renamed[meta["action_time_screenshot"]]
                steps.append(dataclasses.replace(st, screenshot=renamed.get(st.screenshot, st.screenshot), metadata=meta))
            rewrite_episode_json(folder, dataclasses.replace(ep, steps=tuple(steps)))
            for name in renamed:
                (folder / name).unlink()
    return report


def _store(folder: Path, name: str, base: str, diff: bytes, report: CompactReport) -> str:
    """Write the difference replacing ``name``; its new name."""
    new = f"{name.removesuffix('.webp')}{DELTA_SEP}{base}"
    (folder / new).write_bytes(diff)
    report.deltas += 1
    report.delta_saved_bytes += (folder / name).stat().st_size - len(diff)
    return new


def _encode_pngs(folder: Path, names: list[str], method: int, quality: int, workers: int) -> dict[str, bytes | None]:
    """``{name: lossless WebP bytes}`` of each PNG; None where it does not round-trip or is not smaller."""

    def convert(name: str) -> tuple[str, bytes | None]:
        png = (folder / name).read_bytes()
        webp = to_lossless_webp(png, method, quality)
        return name, webp if webp is not None and len(webp) < len(png) else None

    if workers > 1 and len(names) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return dict(pool.map(convert, names))
    return dict(convert(n) for n in names)


def _compacted_steps(ep: RawEpisode, renamed: dict[str, str]) -> list[RawStep]:
    """The steps with renamed screenshots, no Set-of-Mark file and their capture geometry."""
    steps: list[RawStep] = []
    for st in ep.steps:
        vw, vh, dpr = capture_geometry(st, ep.source)
        meta = dict(st.metadata)
        at = meta.get("action_time_screenshot")
        if isinstance(at, str) and at in renamed:
            meta["action_time_screenshot"] = renamed[at]
        steps.append(dataclasses.replace(
            st, screenshot=renamed.get(st.screenshot, st.screenshot), som_screenshot="", metadata=meta,
            viewport_width=vw, viewport_height=vh, device_pixel_ratio=dpr,
        ))
    return steps


def _swap_in(
    folder: Path, steps: list[RawStep], new_files: dict[str, bytes], renamed: dict[str, str], webps: dict[str, bytes | None],
    dropped: list[str],
) -> None:
    """Write the compacted episode under a hidden temp name, validate it, and swap it in for ``folder``."""
    tmp = folder.with_name(f".{folder.name}.compact-tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    referenced = {st.screenshot for st in steps} | {
        st.metadata["action_time_screenshot"] for st in steps if isinstance(st.metadata.get("action_time_screenshot"), str)
    }
    for p in sorted(folder.iterdir()):
        if p.is_dir() or p.name in (EPISODE_FILE, EPISODE_GZ_FILE) or p.name in dropped or p.name in renamed:
            continue
        if p.name in referenced or not p.name.startswith("step_"):
            shutil.copy2(p, tmp / p.name)  # untouched images and any other file the episode keeps
    for n, webp_name in renamed.items():
        (tmp / webp_name).write_bytes(webps[n])  # type: ignore[arg-type]
    for name, data in new_files.items():  # episode.json.gz and the page evidence split out of it
        (tmp / name).write_bytes(data)
    read_episode(tmp)  # validate before swapping in (names, sizes, references)
    old = folder.with_name(f".{folder.name}.compact-old")
    if old.exists():
        shutil.rmtree(old)
    folder.rename(old)
    tmp.rename(folder)
    shutil.rmtree(old)


def compact_episode(
    folder: Path, report: CompactReport, *, method: int = WEBP_METHOD, quality: int = WEBP_QUALITY,
    workers: int = 1, dry_run: bool = False,
) -> bool:
    """Compact one episode folder in place (atomically). Returns whether it changed."""
    ep = read_episode(folder)
    report.episodes += 1
    before = _folder_bytes(folder)
    report.bytes_before += before
    sources = _step_sources(ep)
    todo = sorted(n for n in _local_sources(ep) if image_format((folder / n).read_bytes()) == "png")
    results = _encode_pngs(folder, todo, method, quality, workers)
    # a WebP name another referenced file already has (step_000.png beside step_000.webp) keeps the PNG
    taken = sources | {p.name for p in folder.iterdir()}
    renamed = {n: _webp_name(n) for n, data in results.items() if data is not None and _webp_name(n) not in taken}
    results = {n: (data if n in renamed else None) for n, data in results.items()}
    for n, data in results.items():
        if data is None:
            report.kept_png += 1
            report.not_round_trip.append(f"{ep.episode_id}/{n}")
    report.converted += len(renamed)
    dropped = sorted({st.som_screenshot for st in ep.steps if st.som_screenshot})
    report.som_dropped += len(dropped)

    steps = _compacted_steps(ep, renamed)
    new_files = episode_files(dataclasses.replace(ep, steps=tuple(steps)), compressed=True)
    old_path = episode_path(folder)
    assert old_path is not None  # read_episode read it
    if not renamed and not dropped and old_path.name == EPISODE_GZ_FILE and new_files[EPISODE_GZ_FILE] == old_path.read_bytes():
        report.bytes_after += before
        return False
    report.changed_episodes += 1
    if dry_run:
        report.bytes_after += before - sum((folder / n).stat().st_size for n in [*renamed, *dropped, old_path.name]) + sum(
            len(results[n]) for n in renamed) + len(new_files[EPISODE_GZ_FILE])  # type: ignore[arg-type]
        return True
    _swap_in(folder, steps, new_files, renamed, results, dropped)
    report.bytes_after += _folder_bytes(folder)
    return True


def compact_corpus(
    raw_dir: str | os.PathLike, *, method: int = WEBP_METHOD, quality: int = WEBP_QUALITY,
    workers: int | None = None, dry_run: bool = False, share: bool = True, delta: bool = True,
) -> CompactReport:
    """Compact every episode of a raw corpus in place (module docstring).

    Args:
        raw_dir: the raw corpus folder.
        method, quality: libwebp settings.
        workers: threads encoding images (default: one per CPU).
        dry_run: encode and count, write nothing.
        share: store the screenshots several episodes hold once (:func:`share_images`).
        delta: store screenshots as differences within episodes (:func:`store_differences`).

    Returns:
        A :class:`CompactReport`.

    Raises:
        mag_dataset.raw.RawDataError: an episode that is not valid raw data (nothing of it changed).
        FileNotFoundError: ``raw_dir`` does not exist.
    """
    if not 0 <= method <= 6:
        raise ValueError(f"WebP method must be in 0..6, got {method}")
    if not 0 <= quality <= 100:
        raise ValueError(f"WebP quality must be in 0..100, got {quality}")
    start = time.monotonic()
    report = CompactReport()
    n = workers or os.cpu_count() or 1
    for folder in iter_episode_dirs(raw_dir):
        compact_episode(Path(folder), report, method=method, quality=quality, workers=n, dry_run=dry_run)
    if share:  # first: a file other files are differences of must stay in its folder
        share_images(raw_dir, report, dry_run=dry_run)
    if delta and not dry_run:
        store_differences(raw_dir, report)
    report.seconds = time.monotonic() - start
    return report


def _shared_name(data: bytes) -> str:
    return f"{hashlib.sha256(data).hexdigest()[:32]}.{image_format(data)}"


def share_images(raw_dir: str | os.PathLike, report: CompactReport | None = None, *, dry_run: bool = False) -> CompactReport:
    """Store each screenshot that two or more episodes hold byte for byte once, in the corpus's
    ``_shared_images`` folder, and point their steps at it; remove shared files no step names.

    An episode's own file is replaced only when another episode holds the same bytes or the
    shared folder already has them; files within one episode are left alone. Safe to
    interrupt (module docstring) and idempotent.

    Returns:
        ``report`` (a new one by default) with ``shared`` (files now shared) and
        ``shared_saved_bytes`` (bytes the corpus no longer holds: the episodes' copies removed,
        less the shared files written) added.
    """
    report = report if report is not None else CompactReport()
    root = Path(raw_dir)
    shared_dir = root / SHARED_IMAGES_DIR
    existing = {p.name for p in shared_dir.iterdir() if p.is_file()} if shared_dir.is_dir() else set()
    episodes = [(folder, read_episode(folder)) for folder in iter_episode_dirs(root)]
    named: dict[tuple[int, str], str] = {}  # (episode, local file) -> its shared name
    holders: dict[str, set[int]] = {}
    for i, (folder, ep) in enumerate(episodes):
        bases = {delta_base(n) for n in _step_sources(ep) if is_delta(n)}  # other files are differences of these
        for name in sorted(_local_sources(ep) - bases):
            named[i, name] = _shared_name((folder / name).read_bytes())
            holders.setdefault(named[i, name], set()).add(i)
    share = {h for h, eps in holders.items() if len(eps) > 1 or h in existing}
    referenced = {n.removeprefix(share_ref("")) for _, ep in episodes for n in _step_sources(ep) if is_shared_image(n)}
    for i, (folder, ep) in enumerate(episodes):
        moved = {name: h for (j, name), h in named.items() if j == i and h in share}
        if not moved:
            continue
        for name, h in moved.items():
            size = (folder / name).stat().st_size
            report.shared_saved_bytes += size if h in referenced or h in existing else 0
            referenced.add(h)
        if dry_run:
            continue
        for name, h in moved.items():  # the shared file first: no episode ever names a missing one
            if not (shared_dir / h).exists():
                shared_dir.mkdir(exist_ok=True)
                tmp = shared_dir / f".{h}.tmp"
                shutil.copyfile(folder / name, tmp)
                tmp.replace(shared_dir / h)
        refs = {name: share_ref(h) for name, h in moved.items()}
        steps = []
        for st in ep.steps:
            meta = dict(st.metadata)
            if meta.get("action_time_screenshot") in refs:
                meta["action_time_screenshot"] = refs[meta["action_time_screenshot"]]
            steps.append(dataclasses.replace(st, screenshot=refs.get(st.screenshot, st.screenshot), metadata=meta))
        rewrite_episode_json(folder, dataclasses.replace(ep, steps=tuple(steps)))
        for name in moved:
            (folder / name).unlink()
    report.shared += len(share)
    if not dry_run and shared_dir.is_dir():
        for p in shared_dir.iterdir():
            if p.is_file() and p.name not in referenced:
                p.unlink()  # named by no step (its episodes were removed or re-recorded)
    return report
