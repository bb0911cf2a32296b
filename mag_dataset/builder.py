"""The dataset builder: raw episodes (format v2 or v1, :mod:`mag_dataset.raw`) → a Hub-ready folder.

:class:`WebMREBuilder` is a ``datasets.GeneratorBasedBuilder`` with the configs ``som`` and
``coord``; features, splits and examples are declared the HF way. ``datasets`` 5.x no
longer runs builder scripts from a Hub repository, so the builder is used
programmatically by :func:`build_dataset`, and what is published is its *output*::

    OUT/
      README.md            dataset card; its YAML ``configs:`` + ``dataset_info`` make
                           ``datasets.load_dataset(OUT, "som")`` work with no script
      build_info.json      provenance: raw fingerprint, split seed, counts, file list
      checksums.sha256     sha256 of every other file (``sha256sum -c`` format)
      som/train-00000-of-00001.parquet   som/test-...
      coord/train-00000-of-00001.parquet coord/test-...

Guarantees:

* **Deterministic** — rows in (task_id, step_index) order, screenshots stored as the raw
  file's bytes (lossless WebP or PNG, no re-encoding); a step without a recorded Set-of-Mark
  image gets one rendered from the raw screenshot and its candidate boxes
  (:func:`mag_dataset.live.observe.render_som`: pinned bitmap font, lossless WebP method 1,
  rendered on a thread pool and stored in row order); no timestamps or absolute paths: the
  same raw input gives byte-identical Parquet files.
* **Atomic** — everything is written into a hidden temp folder next to ``OUT`` and renamed
  at the end; a failed build removes it and leaves an earlier ``OUT`` untouched.
* **Consistent** — inconsistent raw data is rejected with :class:`mag_dataset.raw.RawDataError`
  naming the episode, step and field (missing or unreadable image, image size mismatch,
  target box outside the image, gold coordinate outside the target box, unknown action
  type, duplicate step ids, a remap to an element not in the menu, a lossy WebP screenshot).
* **Point-only steps** — a targeted action recorded as a point with no element
  (``mag unify`` restores it) cannot enter the som view: the build refuses it with one line
  that names ``mag unify`` and ``--unmappable-point-only``; with that option
  (``unmappable_point_only=True``) such a step is built with audit status ``unmappable``
  (reason ``point_not_restored``), no element id, and a target box that is never zero-size
  (the unify rule's reason, when it ran, is kept: ``point_outside_candidates`` or
  ``point_ambiguous``). An audit record ``unmappable`` on such a step is honoured the same way.

Labels: audit fields come from an audit file (:func:`mag_dataset.raw.read_audit`; by default
``RAW/audit.jsonl`` when it exists). Without a record a step is ``unaudited``, not
disputed, and stale only if its raw step says so. A ``remapped`` record replaces the gold
element id (the recorded one is kept in ``original_element_id``) and the target box becomes
the remapped candidate's box, in both views; the gold coordinate is kept when it lies in
the new box, else it becomes the box centre. Splits are task-level and come from
``RAW/corpus.json`` (seed stored in every row as ``split_seed``); ``unseen_template`` marks
steps whose intent template never occurs in train.

References:
    WebMRE (arXiv 2609.27353) §3: corpus unification, three-judge label audit, the SoM and
    coordinate views sharing tasks, splits, screenshots and guides.
    MAG (arXiv 2607.10079): the step format (screenshot, intent, previous guides → guide
    and grounded action).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import random
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import datasets

from mag_dataset.actions import ACTION_SPACE, View
from mag_dataset.features import view_features
from mag_dataset.live.recorder import params_key, site_family
from mag_dataset.raw import (
    AUDIT_FILE,
    CORPUS_FILE,
    CORPUS_FORMAT,
    RawDataError,
    READ_VERSIONS,
    RawEpisode,
    RawStep,
    capture_geometry,
    image_format,
    iter_episode_dirs,
    read_audit,
    read_episode,
    step_id,
)
from mag_dataset.schema import Action, AuditRecord, AuditStatus, Split, box_center, point_in_box

#: Bump when the content of built rows changes for the same raw input (invalidates caches).
BUILD_VERSION = 4  # 2: the verified_by column; 3: capture geometry, SoM rendered from v2 raw, point-only rule;
# 4: site_family column, rendered SoM stored as WebP, eval.yaml
BUILD_INFO_FILE = "build_info.json"
CHECKSUM_FILE = "checksums.sha256"
CARD_FILE = "README.md"
BUILD_FORMAT = "mag-webmre-build"
#: Split seed and test share used when a raw corpus has no ``corpus.json``.
DEFAULT_SPLIT_SEED = 0
DEFAULT_TEST_FRACTION = 0.3
MAX_SHARD_SIZE = "256MB"
#: Steps whose screenshots the SoM renderer works on at once (bounds memory; order is kept).
RENDER_CHUNK = 64


class BuildError(ValueError):
    """The raw corpus as a whole is inconsistent (corpus.json, audit file, output folder)."""


@dataclass(frozen=True)
class CorpusSplits:
    """Task-level split assignment (from ``corpus.json`` or the documented default)."""

    seed: int
    splits: dict[str, Split]
    held_out_templates: tuple[str, ...] = ()
    source: str = CORPUS_FILE


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
            "verified_by": _verified_by(st),
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
        data = {key: _read_image(self.episode_dir / getattr(self.raw, key), self.episode.episode_id, self.raw, key) for key in keys}
        if view is View.COORD:
            return {"bytes": data["screenshot"], "path": None}
        if "som_screenshot" in data:
            return {"bytes": data["som_screenshot"], "path": None}
        from mag_dataset.live.observe import render_som

        try:
            return {"bytes": render_som(data["screenshot"], self.raw.candidates, "webp"), "path": None}
        except OSError as e:  # a header that reads but pixels that do not decode
            raise RawDataError(self.episode.episode_id, self.raw.step_index, "screenshot",
                               f"{self.raw.screenshot!r} does not decode: {e}") from None


@dataclass
class Corpus:
    """A validated raw corpus, ready to be generated into both views."""

    raw_dir: Path
    splits: CorpusSplits
    steps: list[PreparedStep]
    audit_path: Path | None
    fingerprint: str

    def steps_in(self, split: Split | str) -> list[PreparedStep]:
        split = Split(split)
        return [s for s in self.steps if s.split is split]

    @property
    def splits_present(self) -> list[Split]:
        """Splits that hold at least one step, train first."""
        present = {s.split for s in self.steps}
        return [s for s in Split if s in present]


def _read_image(path: Path, episode: str, step: RawStep, key: str) -> bytes:
    """The bytes of a raw image file: a PNG or a lossless WebP of the step's size."""
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

    Hidden files and folders (temp folders of an interrupted recording) are skipped.
    """
    root = Path(raw_dir)
    h = hashlib.sha256(f"mag-build-v{BUILD_VERSION}\n".encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        h.update(f"{rel}\n{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    if audit_path is not None and Path(audit_path).resolve() != (root / AUDIT_FILE).resolve():
        h.update(b"audit\n" + hashlib.sha256(Path(audit_path).read_bytes()).digest())
    return h.hexdigest()


def read_splits(raw_dir: Path, episodes: list[RawEpisode]) -> CorpusSplits:
    """Read ``corpus.json``; without one, split tasks with the documented default.

    Episodes that store their template parameters (``metadata["params"]``) and share
    template and parameters must be in one split (checked).

    The default shuffles the sorted task ids with ``random.Random(DEFAULT_SPLIT_SEED)`` and
    puts the first ``round(DEFAULT_TEST_FRACTION * n)`` (at least one) into test. Episodes
    whose ``metadata["task_key"]`` is the same (repeats of one task, set by
    ``mag import-browsergym``) are one unit of that shuffle, so they land in one split.

    Raises:
        BuildError: a malformed manifest, a task without a split, or a held-out template
            that occurs in train.
    """
    task_ids = sorted({e.task_id for e in episodes})
    path = raw_dir / CORPUS_FILE
    if not path.is_file():
        group = {e.task_id: str(e.metadata.get("task_key") or e.task_id) for e in episodes}
        rng = random.Random(DEFAULT_SPLIT_SEED)
        order = sorted(set(group.values()))  # the task ids themselves when no episode has a task key
        rng.shuffle(order)
        n_test = max(1, round(DEFAULT_TEST_FRACTION * len(order))) if order else 0
        test = set(order[:n_test])
        return CorpusSplits(
            seed=DEFAULT_SPLIT_SEED,
            splits={t: Split.TEST if group[t] in test else Split.TRAIN for t in task_ids},
            source="default",
        )
    try:
        d = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BuildError(f"{path}: not valid UTF-8 JSON: {e}") from None
    if not isinstance(d, dict) or d.get("format") != CORPUS_FORMAT:
        raise BuildError(f"{path}: field 'format' must be {CORPUS_FORMAT!r}")
    if d.get("format_version") not in READ_VERSIONS:
        raise BuildError(f"{path}: unsupported format_version {d.get('format_version')!r}")
    seed = d.get("split_seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise BuildError(f"{path}: field 'split_seed' must be an integer, got {seed!r}")
    raw_splits = d.get("splits")
    if not isinstance(raw_splits, dict):
        raise BuildError(f"{path}: field 'splits' must map task ids to 'train' or 'test'")
    splits: dict[str, Split] = {}
    for task, value in raw_splits.items():
        try:
            splits[task] = Split(value)
        except ValueError:
            raise BuildError(f"{path}: task {task!r} has split {value!r}, expected 'train' or 'test'") from None
    held = d.get("held_out_templates") or []
    if not isinstance(held, list) or not all(isinstance(t, str) for t in held):
        raise BuildError(f"{path}: field 'held_out_templates' must be a list of strings")
    pairs: dict[str, tuple[Split, str]] = {}
    for ep in episodes:
        if ep.task_id not in splits:
            raise BuildError(f"{path}: task {ep.task_id!r} (episode {ep.episode_id!r}) has no split")
        if splits[ep.task_id] is Split.TRAIN and ep.intent_template_id in held:
            raise BuildError(
                f"{path}: template {ep.intent_template_id!r} is held out but task {ep.task_id!r} is in train"
            )
        key = params_key(ep.intent_template_id, ep.metadata.get("params"))
        if key is not None:
            other = pairs.setdefault(key, (splits[ep.task_id], ep.task_id))
            if other[0] is not splits[ep.task_id]:
                raise BuildError(
                    f"{path}: tasks {other[1]!r} ({other[0].value}) and {ep.task_id!r} ({splits[ep.task_id].value}) have "
                    f"the same template and parameters; a (template, parameters) pair must stay in one split"
                )
    return CorpusSplits(seed=seed, splits={t: splits[t] for t in task_ids}, held_out_templates=tuple(held))


def _verified_by(step: RawStep) -> str | None:
    """The annotator who verified the step's guide (``mag annotate`` sets ``metadata["verified_by"]``)."""
    who = step.metadata.get("verified_by")
    return who.strip() if isinstance(who, str) and who.strip() else None


def _raw_coordinate_restored(step: RawStep) -> bool:
    # Unification (mag unify) may record the flag as a RawStep field or in its metadata.
    return bool(getattr(step, "coordinate_restored", False) or step.metadata.get("coordinate_restored", False))


#: Reason recorded for a point-only step built with ``unmappable_point_only`` that
#: ``mag unify`` never looked at.
POINT_NOT_RESTORED = "point_not_restored"


def _zero_size(box: Any) -> bool:
    return box is not None and (box[2] <= box[0] or box[3] <= box[1])


def _resolve_labels(
    ep: RawEpisode, st: RawStep, rec: AuditRecord | None, unmappable_point_only: bool = False
) -> tuple[Action, Action, Any, AuditRecord, str | None]:
    """Apply an audit record to a raw step: (som action, coord action, target box, audit, original id).

    A targeted action with no element id (a point-only step ``mag unify`` has not restored)
    is refused, unless the audit marks it ``unmappable`` or ``unmappable_point_only`` is set:
    then it is built ``unmappable`` with no element id and no target box.
    """
    action, bbox = st.action, st.target_bbox
    restored = _raw_coordinate_restored(st)
    if rec is None:
        audit = AuditRecord(stale=st.stale, coordinate_restored=restored)
        original = None
    else:
        audit = AuditRecord(
            status=rec.status,
            disputed=rec.disputed,
            stale=rec.stale or st.stale,
            coordinate_restored=rec.coordinate_restored or restored,
            original_element_id=rec.original_element_id,
            element_id=rec.element_id,
            reason=rec.reason,
        )
        original = rec.original_element_id
    point_only = ACTION_SPACE[action.type].targeted and action.element_id is None
    if point_only and audit.status is not AuditStatus.REMAPPED:
        if audit.status is not AuditStatus.UNMAPPABLE and not unmappable_point_only:
            raise RawDataError(
                ep.episode_id, st.step_index, "action.element_id",
                f"a point-only {action.type.value} (no element id) cannot enter the som view: run `mag unify` on the raw "
                f"corpus to restore its element, or build with --unmappable-point-only to mark it unmappable",
            )
        reason = audit.reason or str(st.metadata.get("unmappable_reason") or POINT_NOT_RESTORED)
        audit = dataclasses.replace(audit, status=AuditStatus.UNMAPPABLE, disputed=False, reason=reason)
        # no element and no trustworthy box: the scorer leaves the step out of element metrics
        return action, action, None, audit, original
    if _zero_size(bbox):
        raise RawDataError(ep.episode_id, st.step_index, "target_bbox", f"zero-size box {list(bbox)}")
    if rec is not None and rec.status is AuditStatus.REMAPPED:
        if not ACTION_SPACE[action.type].targeted:
            raise RawDataError(ep.episode_id, st.step_index, "audit.status", f"remapped, but a {action.type.value} action has no target")
        target = next((c for c in st.candidates if c.id == rec.element_id), None)
        if target is None:
            raise RawDataError(
                ep.episode_id, st.step_index, "audit.element_id", f"remapped to {rec.element_id!r}, which is not in the candidate menu"
            )
        original = rec.original_element_id or action.element_id
        bbox = target.bbox
        point = action.coordinate if action.coordinate is not None and point_in_box(action.coordinate, bbox) else box_center(bbox)
        action = Action(**{**action.to_dict(), "element_id": target.id, "coordinate": list(point)})
    coord_action = action
    if ACTION_SPACE[action.type].targeted:
        point = action.coordinate if action.coordinate is not None else box_center(bbox)
        coord_action = Action(**{**action.to_dict(), "element_id": None, "coordinate": list(point)})
    return action, coord_action, bbox, audit, original


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
    from tqdm.auto import tqdm

    raw_dir = Path(raw_dir)
    folders = iter_episode_dirs(raw_dir)
    if not folders:
        raise BuildError(f"{raw_dir}: no episode folders found")
    episodes: list[tuple[Path, RawEpisode]] = []
    for folder in tqdm(folders, desc="reading raw episodes", unit="ep", disable=not progress):
        ep = read_episode(folder)
        if ep.success or include_failed:
            episodes.append((folder, ep))
    if not episodes:
        raise BuildError(f"{raw_dir}: all {len(folders)} episodes are marked unsuccessful (include them with include_failed / --include-failed)")
    owner: dict[str, str] = {}
    for _, ep in episodes:
        for st in ep.steps:
            sid = step_id(ep.task_id, st.step_index)
            if sid in owner:
                raise RawDataError(ep.episode_id, st.step_index, "step_id", f"duplicate step id {sid!r}, also in episode {owner[sid]!r}")
            owner[sid] = ep.episode_id
    if audit_path is None and (raw_dir / AUDIT_FILE).is_file():
        audit_path = raw_dir / AUDIT_FILE
    audit: dict[str, AuditRecord] = {}
    if audit_path is not None:
        if not Path(audit_path).is_file():
            raise FileNotFoundError(f"audit file not found: {audit_path}")
        try:
            audit = read_audit(audit_path)
        except ValueError as e:
            raise BuildError(str(e)) from None
        unknown = sorted(set(audit) - set(owner))
        if unknown:
            raise BuildError(f"{audit_path}: audit records for {len(unknown)} unknown step ids, e.g. {unknown[0]!r}")
    splits = read_splits(raw_dir, [ep for _, ep in episodes])
    train_templates = {ep.intent_template_id for _, ep in episodes if splits.splits[ep.task_id] is Split.TRAIN}
    steps: list[PreparedStep] = []
    for folder, ep in sorted(episodes, key=lambda x: (x[1].task_id, x[1].episode_id)):
        guides: list[str] = []
        for st in ep.steps:
            som_action, coord_action, bbox, rec, original = _resolve_labels(
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
    if not steps:
        # e.g. only failed live-eval episodes without steps: the folder would not load
        raise BuildError(f"{raw_dir}: the {len(episodes)} episodes hold no steps; nothing to build")
    return Corpus(
        raw_dir=raw_dir,
        splits=splits,
        steps=steps,
        audit_path=Path(audit_path) if audit_path is not None else None,
        fingerprint=raw_fingerprint(raw_dir, audit_path),
    )


@dataclass
class WebMREConfig(datasets.BuilderConfig):
    """Config of :class:`WebMREBuilder`: the view (config name) and where the raw corpus is.

    Attributes:
        raw_dir: the raw corpus folder.
        audit_path: optional audit file (default ``raw_dir/audit.jsonl`` when present).
        include_failed: also build unsuccessful episodes (see :func:`prepare_corpus`).
    """

    raw_dir: str | None = None
    audit_path: str | None = None
    include_failed: bool = False
    unmappable_point_only: bool = False


class WebMREBuilder(datasets.GeneratorBasedBuilder):
    """Builds one view (``som`` or ``coord``) of WebMRE from raw episodes.

    Use :func:`build_dataset` for the Hub-ready folder. A prepared :class:`Corpus` may be
    passed as ``corpus=`` so both views share one validation pass.
    """

    BUILDER_CONFIG_CLASS = WebMREConfig
    BUILDER_CONFIGS = [
        WebMREConfig(name=View.SOM.value, description="Set-of-Mark view: labelled screenshot, candidate menu, element ids."),
        WebMREConfig(name=View.COORD.value, description="Coordinate view: raw screenshot, actions grounded by pixel coordinates."),
    ]
    DEFAULT_CONFIG_NAME = View.SOM.value

    def __init__(self, *args: Any, corpus: Corpus | None = None, **kwargs: Any):
        self._corpus = corpus
        kwargs.setdefault("dataset_name", "webmre")
        super().__init__(*args, **kwargs)

    @property
    def view(self) -> View:
        return View(self.config.name)

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            if self.config.raw_dir is None:
                raise BuildError("WebMREBuilder needs raw_dir=... or corpus=...")
            self._corpus = prepare_corpus(self.config.raw_dir, self.config.audit_path, include_failed=self.config.include_failed,
                                          unmappable_point_only=self.config.unmappable_point_only)
        return self._corpus

    def _info(self) -> datasets.DatasetInfo:
        from mag_dataset.card import CITATION, DESCRIPTION

        return datasets.DatasetInfo(
            description=DESCRIPTION,
            features=view_features(self.config.name),
            citation=CITATION,
            license="apache-2.0",
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=s.value, gen_kwargs={"split": s.value}) for s in self.corpus.splits_present]

    def _generate_examples(self, split: str) -> Iterator[tuple[str, dict[str, Any]]]:
        seed = self.corpus.splits.seed
        steps = self.corpus.steps_in(split)
        for start in range(0, len(steps), RENDER_CHUNK):
            chunk = steps[start:start + RENDER_CHUNK]
            for st, shot in zip(chunk, _screenshots(chunk, self.view)):
                yield st.step_id, {"screenshot": shot, **st.row(self.view), "split_seed": seed}


def _screenshots(steps: list[PreparedStep], view: View) -> list[dict[str, Any]]:
    """The screenshots of ``steps`` in order; SoM rendering (decode, draw, encode: Pillow
    releases the GIL) runs on a thread pool, one thread per CPU."""
    if view is View.COORD or len(steps) < 2 or all(st.raw.som_screenshot for st in steps):
        return [st.screenshot(view) for st in steps]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(len(steps), os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda st: st.screenshot(view), steps))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_build(path: Path) -> bool:
    return (path / BUILD_INFO_FILE).is_file()


def _check_target(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise BuildError(f"output {out_dir} exists and is not a folder")
        if any(out_dir.iterdir()) and not _is_build(out_dir):
            raise BuildError(f"output folder {out_dir} is not empty and holds no earlier build; choose another --out")


def _write_view(builder: WebMREBuilder, work: Path, out: Path, view: View) -> dict[str, dict[str, Any]]:
    """Run the HF builder for one view into ``work`` and move its Parquet shards to ``out/<view>/``."""
    prep = work / view.value
    try:
        builder.download_and_prepare(
            output_dir=str(prep), file_format="parquet", max_shard_size=MAX_SHARD_SIZE, download_mode="force_redownload"
        )
    except datasets.exceptions.DatasetGenerationError as e:
        # datasets wraps errors raised while generating rows; surface ours unwrapped.
        if isinstance(e.__cause__, (RawDataError, BuildError)):
            raise e.__cause__ from None
        raise
    target = out / view.value
    target.mkdir(parents=True)
    result: dict[str, dict[str, Any]] = {}
    for split, info in builder.info.splits.items():
        pattern = re.compile(rf"-{re.escape(split)}(-\d{{5}}-of-\d{{5}})?\.parquet$")
        shards = sorted(p for p in prep.iterdir() if pattern.search(p.name))
        if not shards:
            raise BuildError(f"the builder wrote no Parquet shard for {view.value}/{split}")
        files = []
        for i, shard in enumerate(shards):
            name = f"{split}-{i:05d}-of-{len(shards):05d}.parquet"
            os.replace(shard, target / name)
            files.append(f"{view.value}/{name}")
        result[split] = {"num_examples": info.num_examples, "num_bytes": info.num_bytes, "files": files}
    return result


def _swap_into_place(tmp: Path, out_dir: Path, overwrite: bool) -> Path:
    def keep_existing() -> bool:
        # a finished build there (e.g. one a concurrent process renamed first) is kept
        return not overwrite and out_dir.is_dir() and _is_build(out_dir)

    if keep_existing():
        shutil.rmtree(tmp)
        return out_dir
    if out_dir.is_dir() and not any(out_dir.iterdir()):
        out_dir.rmdir()
    if not out_dir.exists():
        try:
            tmp.rename(out_dir)
        except OSError:
            if not keep_existing():
                raise
            shutil.rmtree(tmp)
        return out_dir
    old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
    out_dir.rename(old)
    tmp.rename(out_dir)
    shutil.rmtree(old, ignore_errors=True)
    return out_dir


def build_dataset(
    raw_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    audit_path: str | os.PathLike | None = None,
    progress: bool = True,
    *,
    overwrite: bool = True,
    include_failed: bool = False,
    unmappable_point_only: bool = False,
    readme: str | os.PathLike | None = None,
) -> Path:
    """Build both views of a raw corpus into a Hub-ready dataset folder, atomically.

    Args:
        raw_dir: raw corpus folder (format v1).
        out_dir: the dataset folder to write. An earlier build there is replaced; a
            non-empty folder that is not a build is refused.
        audit_path: optional audit file; default ``raw_dir/audit.jsonl`` when present.
        progress: show progress bars (tqdm).
        overwrite: replace an existing build at ``out_dir``; if False, an existing build
            (e.g. one finished concurrently by another process) is kept.
        include_failed: also build episodes marked unsuccessful (see :func:`prepare_corpus`).
        unmappable_point_only: build unrestored point-only steps as ``unmappable`` instead
            of refusing them (see :func:`prepare_corpus`).
        readme: a README whose generated statistics block (between
            :data:`mag_dataset.card.README_BEGIN` and ``README_END``) is replaced with this
            build's per-family table, atomically, after the build succeeded. Checked first.

    Returns:
        ``out_dir`` as an absolute path.

    Raises:
        RawDataError: inconsistent raw data, naming the episode, step and field.
        BuildError: corpus-level inconsistencies or an unusable output folder.
    """
    from mag_dataset import __version__
    from mag_dataset.card import family_statistics, medians, readme_block, render_card, replace_readme_block, split_statistics
    from mag_dataset.hub_eval import write_eval_yaml

    out_dir = Path(out_dir).absolute()
    raw_abs = Path(raw_dir).resolve()
    if out_dir.resolve() == raw_abs or raw_abs in out_dir.resolve().parents:
        # the built folder would be read as an episode folder by the next build
        raise BuildError(f"output {out_dir} is inside the raw corpus {raw_abs}; choose a folder outside it")
    _check_target(out_dir)
    if readme is not None:
        try:
            replace_readme_block(Path(readme).read_text("utf-8"), "")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise BuildError(f"--readme {readme}: {e}") from None
    corpus = prepare_corpus(raw_dir, audit_path, progress=progress, include_failed=include_failed,
                            unmappable_point_only=unmappable_point_only)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the final folder gets normal permissions
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    if not progress:
        datasets.utils.logging.disable_progress_bar()
    try:
        work = tmp / ".work"
        views: dict[str, dict[str, dict[str, Any]]] = {}
        for view in View:
            builder = WebMREBuilder(config_name=view.value, cache_dir=str(work / "cache"), corpus=corpus)
            views[view.value] = _write_view(builder, work, tmp, view)
        shutil.rmtree(work)
        stats = {
            view.value: {s.value: split_statistics(st.row(view) for st in corpus.steps_in(s)) for s in corpus.splits_present}
            for view in View
        }
        info = {
            "format": BUILD_FORMAT,
            "build_version": BUILD_VERSION,
            "package_version": __version__,
            "raw_fingerprint": corpus.fingerprint,
            "split_seed": corpus.splits.seed,
            "split_source": corpus.splits.source,
            "held_out_templates": list(corpus.splits.held_out_templates),
            "audited": corpus.audit_path is not None,
            "unmappable_point_only": unmappable_point_only,
            "views": views,
        }
        families = family_statistics(st.row(View.SOM) for st in corpus.steps)
        info["family_statistics"] = families
        (tmp / BUILD_INFO_FILE).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", "utf-8")
        med = {s.value: medians(st.row(View.SOM) for st in corpus.steps_in(s)) for s in corpus.splits_present}
        (tmp / CARD_FILE).write_text(render_card(info, stats, med, families), "utf-8")
        write_eval_yaml(tmp)  # the Hub benchmark registration, tasks checked against the card's configs
        files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        (tmp / CHECKSUM_FILE).write_text("".join(f"{_sha256(tmp / f)}  {f}\n" for f in files), "utf-8")
        done = _swap_into_place(tmp, out_dir, overwrite)
        if readme is not None:
            from mag_dataset.fileio import atomic_write

            text = Path(readme).read_text("utf-8")
            atomic_write(Path(readme), replace_readme_block(text, readme_block(families, info)))
        return done
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if was_enabled and not progress:
            datasets.utils.logging.enable_progress_bar()


def verify_checksums(folder: str | os.PathLike) -> list[str]:
    """Check a built folder against its checksum manifest.

    Returns:
        The checked files, relative to ``folder``.

    Raises:
        BuildError: naming the first missing, changed or unlisted file.
    """
    folder = Path(folder)
    manifest = folder / CHECKSUM_FILE
    if not manifest.is_file():
        raise BuildError(f"{folder}: no {CHECKSUM_FILE}; is this a built dataset folder?")
    listed: dict[str, str] = {}
    for line in manifest.read_text("utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    for name, digest in listed.items():
        path = folder / name
        if not path.is_file():
            raise BuildError(f"{folder}: {name} is listed in {CHECKSUM_FILE} but missing")
        if _sha256(path) != digest:
            raise BuildError(f"{folder}: {name} does not match its sha256 in {CHECKSUM_FILE}")
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    extra = sorted(present - set(listed) - {CHECKSUM_FILE})
    extra = [e for e in extra if not any(part.startswith(".") for part in e.split("/"))]
    if extra:
        raise BuildError(f"{folder}: {extra[0]} is not listed in {CHECKSUM_FILE}")
    return sorted(listed)
