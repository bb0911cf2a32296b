"""A raw corpus read, validated and labelled: :func:`prepare_corpus` → :class:`Corpus`.

Holds the reading side of the builder: episodes read (successful ones unless asked),
duplicate step ids refused, the audit file read and checked against the steps, splits
(:mod:`mag_dataset.builder.splits`) and labels (:mod:`mag_dataset.builder.labels`)
resolved per step, each step's row of either view, its screenshot bytes checked against
the step, and the raw fingerprint. It writes nothing; the HF builder and the folder writer
are :mod:`mag_dataset.builder.hf_builder` and :mod:`mag_dataset.builder.write`.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mag_dataset.actions import View
from mag_dataset.builder.labels import resolve_labels, verification, verified_by
from mag_dataset.builder.layout import BUILD_VERSION, BuildError
from mag_dataset.builder.splits import CorpusSplits, read_splits
from mag_dataset.builder.splits import site_family
from mag_dataset.raw import (
    AUDIT_FILE,
    NO_SCREENSHOT,
    RawDataError,
    RawEpisode,
    RawStep,
    StageRecordError,
    capture_geometry,
    corpus_file_digests,
    image_bytes,
    image_format,
    image_key,
    is_delta,
    iter_episode_dirs,
    read_audit,
    read_episode,
    read_stages,
    step_id,
)
from mag_dataset.schema import Action, AuditRecord, Split


@dataclass(frozen=True)
class PreparedStep:
    """One validated step with its labels resolved, before the image bytes are read."""

    episode_dir: Path
    episode: RawEpisode
    raw: RawStep
    split: Split
    unseen_template: bool
    previous_guides: tuple[str, ...]
    som_action: Action
    coord_action: Action
    target_bbox: tuple[float, float, float, float] | None
    audit: AuditRecord
    original_element_id: str | None
    geometry: tuple[int, int, float]

    @property
    def step_id(self) -> str:
        return step_id(self.episode.task_id, self.raw.step_index)

    def row(self, view: View) -> dict[str, Any]:
        """The row of ``view`` without the ``screenshot`` column (JSON-able)."""
        ep, st = self.episode, self.raw
        som = view is View.SOM
        return {
            "step_id": self.step_id,
            "task_id": ep.task_id,
            "site": ep.site,
            "site_family": site_family(ep.source, ep.site),
            "intent": ep.intent,
            "intent_template_id": ep.intent_template_id,
            "step_index": st.step_index,
            "num_steps": len(ep.steps),
            "image_width": st.image_width,
            "image_height": st.image_height,
            "viewport_width": self.geometry[0],
            "viewport_height": self.geometry[1],
            "device_pixel_ratio": self.geometry[2],
            "url": st.url,
            "previous_guides": list(self.previous_guides),
            "guide": st.guide,
            "guide_source": st.guide_source.value,
            "verified_by": verified_by(st),
            **verification(st),
            "action": (self.som_action if som else self.coord_action).to_dict(),
            "target_bbox": list(self.target_bbox) if self.target_bbox is not None else None,
            "candidates": [c.to_dict() for c in st.candidates] if som else [],
            "audit_status": self.audit.status.value,
            "disputed": self.audit.disputed,
            "stale": self.audit.stale,
            "coordinate_restored": self.audit.coordinate_restored,
            "original_element_id": self.original_element_id if som else None,
            "unseen_template": self.unseen_template,
            "split": self.split.value,
        }

    def screenshot(self, view: View) -> dict[str, Any]:
        """The screenshot of ``view`` as a datasets Image value, validated against the step.

        som: the recorded Set-of-Mark file, or one rendered from the raw screenshot (raw
        format v2 without ``som_screenshot``); coord: the raw screenshot's bytes.
        """
        # Both stored images are checked in both views, so an error names the same field either way.
        keys = ("screenshot", "som_screenshot") if self.raw.som_screenshot else ("screenshot",)
        data = {key: read_image(self.episode_dir / getattr(self.raw, key), self.episode.episode_id, self.raw, key) for key in keys}
        if is_delta(self.raw.screenshot):  # a recaptured screenshot stored as a difference: the image itself
            data["screenshot"] = _rebuilt_screenshot(image_key(self.episode_dir, self.raw.screenshot),
                                                     self.episode_dir, self.raw.screenshot)
        self._refuse_error_page(data["screenshot"])
        if view is View.COORD:
            return {"bytes": data["screenshot"], "path": None}
        if "som_screenshot" in data:
            return {"bytes": data["som_screenshot"], "path": None}
        from mag_dataset.som import render_som

        try:
            return {"bytes": render_som(data["screenshot"], self.raw.candidates, "webp"), "path": None}
        except OSError as e:  # a header that reads but pixels that do not decode
            raise RawDataError(self.episode.episode_id, self.raw.step_index, "screenshot",
                               f"{self.raw.screenshot!r} does not decode: {e}") from None

    def _refuse_error_page(self, data: bytes) -> None:
        """Raise when the step shows a browser error page (:mod:`mag_dataset.error_pages`).

        Looked at where one can arise: a recaptured screenshot that differs from the
        action-time one, and every screenshot of an imported trajectory. The package's own
        recorder never keeps one (its expert cannot act on an error page).
        """
        m, st = self.raw.metadata, self.raw
        shown_url = str((m.get("shown_page") or {}).get("url") or "")
        recaptured = bool(m.get("recaptured")) and not m.get("recaptured_identical")
        if not (recaptured or self.episode.source not in RECORDED_SOURCES or shown_url.startswith("chrome-error://")):
            return
        if _shows_error_page(data, shown_url):
            raise RawDataError(self.episode.episode_id, st.step_index, "screenshot",
                               f"{st.screenshot!r} is a browser error page (\"This site can't be reached\"), not a page "
                               "of the task: a recapture made before recaptures checked their pages; "
                               "`mag recapture --raw RAW --end-at-error-pages` gives the step its action-time "
                               "screenshot back (then `mag unify`)")


@functools.lru_cache(maxsize=512)
def _rebuilt_screenshot(key: str, episode_dir: Path, name: str) -> bytes:
    """A screenshot stored as a difference, rebuilt (:func:`~mag_dataset.raw.image_bytes`: a
    lossless WebP encode, ~0.25 s) once per build rather than once per view; ``key`` (its
    :func:`~mag_dataset.raw.image_key`) makes the cache hold content, not a path's past."""
    return image_bytes(episode_dir, name)


_ERROR_PAGES: dict[tuple[str, str], bool] = {}


def _shows_error_page(data: bytes, shown_url: str) -> bool:
    """:func:`~mag_dataset.error_pages.is_error_screenshot` of an image file's bytes, remembered
    by content (both views of a build look at the same screenshot)."""
    key = (hashlib.sha256(data).hexdigest(), shown_url)
    if key not in _ERROR_PAGES:
        from PIL import Image

        from mag_dataset.error_pages import is_error_screenshot

        with Image.open(io.BytesIO(data)) as im:
            if len(_ERROR_PAGES) >= 65536:
                _ERROR_PAGES.clear()
            _ERROR_PAGES[key] = is_error_screenshot(im, shown_url)
    return _ERROR_PAGES[key]


@dataclass
class Corpus:
    """A validated raw corpus, ready to be generated into both views."""

    raw_dir: Path
    splits: CorpusSplits
    steps: list[PreparedStep]
    audit_path: Path | None
    fingerprint: str
    #: The corpus's stage record (``corpus.json`` ``stages``, JSON form; [] when it has none).
    stages: list[dict[str, Any]] = field(default_factory=list)
    #: What :func:`test_echoes` found: ``{"dropped": [step ids left out of test],
    #: "echoes": n, "shared_screenshots": n}`` (see :func:`test_echoes`).
    echoes: dict[str, Any] = field(default_factory=dict)

    def steps_in(self, split: Split | str) -> list[PreparedStep]:
        split = Split(split)
        return [s for s in self.steps if s.split is split]

    @property
    def splits_present(self) -> list[Split]:
        """Splits that hold at least one step, train first."""
        present = {s.split for s in self.steps}
        return [s for s in Split if s in present]


#: Episode sources written by this package's own recorder, whose action-time screenshots are
#: pages the expert acted on (never an error page).
RECORDED_SOURCES = ("sites", "miniwob")


def read_image(path: Path, episode: str, step: RawStep, key: str) -> bytes:
    """The bytes of a raw image file: a PNG or a lossless WebP of the step's size.

    Raises:
        RawDataError: a missing, lossy, unreadable or wrongly sized file, naming ``key``.
    """
    try:
        data = path.read_bytes()
    except OSError:
        raise RawDataError(episode, step.step_index, key, f"missing image file {path.name!r}") from None
    kind = image_format(data)
    if kind == "webp-lossy":
        raise RawDataError(episode, step.step_index, key, f"{path.name!r} is a lossy WebP; screenshots must be lossless (PNG or lossless WebP)")
    if kind is None:
        raise RawDataError(episode, step.step_index, key, f"{path.name!r} is not a PNG or lossless WebP file")
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            size = im.size
            if kind == "png":
                im.verify()  # chunk checksums, without decoding pixels
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise RawDataError(episode, step.step_index, key, f"{path.name!r} is not a readable {kind.upper()}: {e}") from None
    if size != (step.image_width, step.image_height):
        raise RawDataError(
            episode,
            step.step_index,
            key,
            f"{path.name!r} is {size[0]}x{size[1]} but the step says {step.image_width}x{step.image_height}",
        )
    return data


def raw_fingerprint(raw_dir: str | os.PathLike, audit_path: str | os.PathLike | None = None) -> str:
    """sha256 over every file of a raw corpus (names and contents), the audit file and BUILD_VERSION.

    Hidden files and folders (temp folders of an interrupted recording) are skipped, and
    ``corpus.json`` counts without its stage record (:func:`mag_dataset.raw.corpus_file_digests`):
    the fingerprint says what the corpus holds, which the built rows come from; how it was made
    goes to ``build_info.json`` (``corpus_stages``), so recording a stage changes no fingerprint.
    """
    root = Path(raw_dir)
    h = hashlib.sha256(f"mag-build-v{BUILD_VERSION}\n".encode())
    for rel, digest in corpus_file_digests(root):
        h.update(f"{rel}\n{digest}\n".encode())
    if audit_path is not None and Path(audit_path).resolve() != (root / AUDIT_FILE).resolve():
        h.update(b"audit\n" + hashlib.sha256(Path(audit_path).read_bytes()).digest())
    return h.hexdigest()


def prepare_corpus(
    raw_dir: str | os.PathLike,
    audit_path: str | os.PathLike | None = None,
    progress: bool = True,
    *,
    include_failed: bool = False,
    unmappable_point_only: bool = False,
) -> Corpus:
    """Read, validate and label a raw corpus (everything but the image bytes).

    Args:
        raw_dir: the raw corpus folder (episode folders, optional corpus.json / audit.jsonl).
        audit_path: an audit file; default ``raw_dir/audit.jsonl`` when it exists.
        progress: show a progress bar while reading episodes.
        include_failed: also build episodes marked ``"success": false`` (e.g. a
            ``mag live-eval`` run folder, for inspection). Gold data comes from successful
            episodes only, so they are skipped by default.
        unmappable_point_only: build point-only steps that ``mag unify`` has not restored
            as ``unmappable`` (module docstring) instead of refusing the corpus.

    Raises:
        RawDataError: naming the episode, step and field of an inconsistency.
        BuildError: corpus-level problems (manifest, audit file naming unknown steps).
        FileNotFoundError: ``raw_dir`` or ``audit_path`` does not exist.
    """
    raw_dir = Path(raw_dir)
    episodes = _read_episodes(raw_dir, progress, include_failed)
    owner = _step_owners(episodes)
    if audit_path is None and (raw_dir / AUDIT_FILE).is_file():
        audit_path = raw_dir / AUDIT_FILE
    audit = _read_audit_of(audit_path, owner) if audit_path is not None else {}
    splits = read_splits(raw_dir, [ep for _, ep in episodes])
    try:
        stages = [e.to_json() for e in read_stages(raw_dir)]
    except StageRecordError as e:
        raise BuildError(str(e)) from None
    steps = _prepared_steps(episodes, splits, audit, unmappable_point_only)
    echo_ids, shared = test_echoes(steps)
    if splits.drop_test_echoes:
        steps = [s for s in steps if s.step_id not in echo_ids]
    echoes = {"echoes": len(echo_ids), "shared_screenshots": shared,
              "dropped": sorted(echo_ids) if splits.drop_test_echoes else []}
    if not steps:
        # e.g. only failed live-eval episodes without steps: the folder would not load
        raise BuildError(f"{raw_dir}: the {len(episodes)} episodes hold no steps; nothing to build")
    return Corpus(
        raw_dir=raw_dir,
        splits=splits,
        steps=steps,
        audit_path=Path(audit_path) if audit_path is not None else None,
        fingerprint=raw_fingerprint(raw_dir, audit_path),
        stages=stages,
        echoes=echoes,
    )


def test_echoes(steps: list[PreparedStep]) -> tuple[set[str], int]:
    """Test steps that echo train: ``(ids of the test steps that repeat a train step's
    screenshot, byte for byte, and its gold actions in both views; how many other test steps
    show a screenshot that train shows too)``.

    An echo can be answered by memory, not by reading the page: the episodes of one template
    share their start page, and a test task of a seen template that begins with the same
    click as a train task repeats that train step exactly. A shared screenshot with another
    action (a start page, then another link) is no echo. ``corpus.json``'s
    ``drop_test_echoes`` leaves the echoes out of the built test split; either way the
    counts go to ``build_info.json`` and the card.
    """
    digests: dict[Path, str] = {}

    def shot(s: PreparedStep) -> str:  # what the step shows, a difference by what it differs from
        path = (s.episode_dir / s.raw.screenshot).resolve()
        if path not in digests:
            digests[path] = image_key(s.episode_dir, s.raw.screenshot)
        return digests[path]

    def key(s: PreparedStep) -> tuple[str, str, str]:
        return (shot(s), json.dumps(s.som_action.to_dict(), sort_keys=True),
                json.dumps(s.coord_action.to_dict(), sort_keys=True))

    train = [s for s in steps if s.split is Split.TRAIN]
    train_keys = {key(s) for s in train}
    train_shots = {shot(s) for s in train}
    echoes: set[str] = set()
    shared = 0
    for s in steps:
        if s.split is not Split.TEST:
            continue
        if key(s) in train_keys:
            echoes.add(s.step_id)
        elif shot(s) in train_shots:
            shared += 1
    return echoes, shared


def _read_episodes(raw_dir: Path, progress: bool, include_failed: bool) -> list[tuple[Path, RawEpisode]]:
    """``(folder, episode)`` of every episode to build: the successful ones, or all with ``include_failed``."""
    from tqdm.auto import tqdm

    folders = iter_episode_dirs(raw_dir)
    if not folders:
        raise BuildError(f"{raw_dir}: no episode folders found")
    episodes: list[tuple[Path, RawEpisode]] = []
    for folder in tqdm(folders, desc="reading raw episodes", unit="ep", disable=not progress):
        ep = read_episode(folder)
        if ep.success or include_failed:
            blank = next((st for st in ep.steps if not st.screenshot), None)
            if blank is not None:  # imported without one: a recapture gives it one
                raise RawDataError(ep.episode_id, blank.step_index, "screenshot",
                                   NO_SCREENSHOT.replace("RAW_DIR", str(raw_dir)))
            episodes.append((folder, ep))
    if not episodes:
        raise BuildError(f"{raw_dir}: all {len(folders)} episodes are marked unsuccessful (include them with include_failed / --include-failed)")
    return episodes


def _step_owners(episodes: list[tuple[Path, RawEpisode]]) -> dict[str, str]:
    """``{step id: episode id}``; a step id two episodes share is refused."""
    owner: dict[str, str] = {}
    for _, ep in episodes:
        for st in ep.steps:
            sid = step_id(ep.task_id, st.step_index)
            if sid in owner:
                raise RawDataError(ep.episode_id, st.step_index, "step_id", f"duplicate step id {sid!r}, also in episode {owner[sid]!r}")
            owner[sid] = ep.episode_id
    return owner


def _read_audit_of(audit_path: str | os.PathLike, owner: dict[str, str]) -> dict[str, AuditRecord]:
    """The audit file's records; one naming a step the corpus does not have is refused."""
    if not Path(audit_path).is_file():
        raise FileNotFoundError(f"audit file not found: {audit_path}")
    try:
        audit = read_audit(audit_path)
    except ValueError as e:
        raise BuildError(str(e)) from None
    unknown = sorted(set(audit) - set(owner))
    if unknown:
        raise BuildError(f"{audit_path}: audit records for {len(unknown)} unknown step ids, e.g. {unknown[0]!r}")
    return audit


def _prepared_steps(
    episodes: list[tuple[Path, RawEpisode]], splits: CorpusSplits, audit: dict[str, AuditRecord], unmappable_point_only: bool
) -> list[PreparedStep]:
    """Every step of every episode with its labels, in (task id, episode id, step) order."""
    train_templates = {ep.intent_template_id for _, ep in episodes if splits.splits[ep.task_id] is Split.TRAIN}
    steps: list[PreparedStep] = []
    for folder, ep in sorted(episodes, key=lambda x: (x[1].task_id, x[1].episode_id)):
        guides: list[str] = []
        for st in ep.steps:
            som_action, coord_action, bbox, rec, original = resolve_labels(
                ep, st, audit.get(step_id(ep.task_id, st.step_index)), unmappable_point_only
            )
            steps.append(
                PreparedStep(
                    episode_dir=folder,
                    episode=ep,
                    raw=st,
                    split=splits.splits[ep.task_id],
                    unseen_template=ep.intent_template_id not in train_templates,
                    previous_guides=tuple(guides),
                    som_action=som_action,
                    coord_action=coord_action,
                    target_bbox=bbox,
                    audit=rec,
                    original_element_id=original,
                    geometry=capture_geometry(st, ep.source),
                )
            )
            guides.append(st.guide)
    return steps
