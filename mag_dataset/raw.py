"""Raw episode format (version 2; version 1 is still read): what recorders write and the builder reads.

Any source — the MiniWoB++ recorder, the BrowserGym/AgentLab importer, the maintainers'
WebArena trajectories — is converted to this format, and only this format is built into
the dataset. A raw corpus is a folder::

    RAW/
      corpus.json                 # optional corpus manifest (split seed and assignment)
      audit.jsonl                 # optional audit file, one AuditRecord per step_id
      _shared_images/             # optional: screenshots several episodes show, stored once
        3f9a...c2.webp            #   named by the sha256 of their bytes (see "Shared screenshots")
      <episode_id>/
        episode.json              # the episode, see RawEpisode (episode.json.gz once compacted)
        step_000.webp             # raw screenshot of step 0 (lossless WebP, or PNG)
        step_000_som.png          # optional: the same screenshot with Set-of-Mark labels drawn
        evidence.json.gz          # optional: the steps' page evidence (see below)
        ...

Version 2 (compact storage, capture geometry) differs from version 1 in three ways; both are
read, and :func:`write_episode` writes version 2:

* ``screenshot`` may be a **lossless** WebP file (``VP8L``) as well as a PNG; lossy WebP is
  refused. ``mag compact`` converts a corpus' PNGs (:mod:`mag_dataset.compact`).
* ``som_screenshot`` may be absent, null or ``""``: the builder then renders the Set-of-Mark
  image from the raw screenshot and the candidate boxes and ids
  (:func:`mag_dataset.som.render_som`, deterministic: the same bytes on every build).
  :func:`som_image_bytes` gives any reader the recorded or rendered image.
* a step may carry its capture geometry: ``viewport_width`` / ``viewport_height`` (the CSS
  viewport of the browser, in CSS px) and ``device_pixel_ratio`` (screenshot pixels per CSS
  pixel). Steps without them get them from their metadata, see :func:`capture_geometry`.

A step may have **no screenshot** (``"screenshot": null``, ``som_screenshot`` null too): an
importer whose source kept none for it (``mag import-webarena``: no render screenshot and no
screencast frame) writes it so, with the size, candidates and action the step had. Readers
refuse to show it (:func:`screenshot_bytes` raises :data:`NO_SCREENSHOT`) and ``mag build``
refuses a corpus that holds one; ``mag recapture`` gives it its recaptured screenshot (the
step is then recaptured with no action-time screenshot, which ``mag unify`` flags stale).

``episode.json``::

    {"format": "mag-raw-episode", "format_version": 1,
     "episode_id": "click-button.seed-3", "task_id": "click-button.seed-3",
     "site": "click-button", "intent": "Click on the \\"Submit\\" button.",
     "intent_template_id": "click-button", "source": "miniwob", "seed": 3,
     "reward": 1.0, "success": true, "metadata": {...},
     "steps": [{"step_index": 0, "url": "...", "screenshot": "step_000.webp",
                "som_screenshot": "step_000_som.png" | null, "image_width": 320,
                "image_height": 420, "viewport_width": 320, "viewport_height": 420,
                "device_pixel_ratio": 1.0, "candidates": [{"id": "12", "role": "button",
                "text": "Submit", "bbox": [x0, y0, x1, y1]}, ...],
                "action": {"type": "click", "element_id": "12", "coordinate": [x, y],
                           "text": null, ...},
                "target_bbox": [x0, y0, x1, y1] | null,
                "guide": "Click 'Submit' to send the form.", "guide_source": "template",
                "stale": false, "metadata": {...}}, ...]}

An episode with ``"success": false`` may have no steps: ``mag live-eval`` writes such an
episode when its agent never executed an action the format can hold (its full attempt log is
in ``metadata["trajectory"]``). Builders yield no rows for it.

Step ``metadata`` is free-form; the MiniWoB++ recorder (:mod:`mag_dataset.harness.recorder`)
writes ``{"conversion": {"scale_factor": 1.5, "crop": [x0, y0, x1, y1]},
"browsergym_action": "mouse_move(67.97, 272.25)\\nnoop(100)\\nmouse_click(67.97, 272.25)"}``
(clicks hover first, see :mod:`mag_dataset.live.execute`): a screenshot point ``(x, y)`` is the
page CSS point ``((x + x0) / scale_factor, (y + y0) / scale_factor)`` (see
:class:`mag_dataset.live.observe.Conversion`).

**Page evidence.** The label audit's rule-based judges (:mod:`mag_dataset.harness.page_audit`)
read two step-metadata keys, :data:`EVIDENCE_KEYS`: ``dom`` (the DOM fingerprints of the
menu's elements and of the acted one, stored by the recorder) and ``shown_page`` (the
elements of the page a recaptured step shows). A site page has about a hundred candidates,
so they are most of an episode's JSON: they are kept out of ``episode.json`` and stored in
``evidence.json.gz`` beside it (gzip of ``{"format": "mag-page-evidence", "steps":
{"<step_index>": {"dom": ..., "shown_page": ...}}}``, deterministic bytes).
:func:`read_episode` puts them back into each step's ``metadata`` and every writer here
(:func:`write_episode`, :func:`rewrite_episode_json`, :func:`episode_files`) splits them out
again, so code reading or writing episodes through this module sees one ``metadata``. An
``episode.json`` that holds them inline (written before) is read as it is.

**Compressed episode files.** ``mag compact`` stores the episode's JSON gzip-compressed, as
``episode.json.gz`` (:data:`EPISODE_GZ_FILE`; the same text, deterministic bytes: no file
name and mtime 0 in the gzip header, so a rerun writes the same bytes). The indented text
compresses about sevenfold, and it was a sixth of the bundled sample's bytes. Recorders write
plain ``episode.json``, which people read; :func:`read_episode` reads either, and
:func:`rewrite_episode_json` writes an episode back in the form it found. A folder holding
both is refused (which one is current cannot be told).

Screenshot paths are relative to the episode folder: a plain file name in it, or
``../_shared_images/<name>`` (below). Coordinates and boxes are in screenshot pixels.

**Screenshots stored as differences.** Two screenshots of one episode often differ in a few
regions only (a field typed into, a recaptured page with a new counter), so ``mag compact``
may store one as ``<stem>~<base>``: a lossless WebP of its pixel difference, channel by
channel modulo 256, from the image file ``<base>`` of the same folder (which may itself be a
difference: ``step_003_recaptured~step_003~step_002.webp`` is a recaptured screenshot stored
against step 3's, itself stored against step 2's). Mostly zeros, such a file is a tenth of
the page's size or less. :func:`image_bytes` and :func:`screenshot_bytes` give every reader
the screenshot itself (the lossless WebP it was, byte for byte).

**Shared screenshots.** The episodes of one template often open on the same page, pixel for
pixel; ``mag compact`` stores such a screenshot once, in :data:`SHARED_IMAGES_DIR` at the
corpus root, named by the first 32 hex digits of its sha256, and the steps name it as
``../_shared_images/<name>`` (:func:`share_ref`). An episode folder copied out of its corpus
without that folder no longer reads (the error says so): :func:`copy_episodes` copies both. ``step_id`` is ``f"{task_id}:{step_index}"``.

``corpus.json``::

    {"format": "mag-raw-corpus", "format_version": 2, "split_seed": 0,
     "held_out_templates": ["..."], "splits": {"<task_id>": "train" | "test", ...}}

(written by :func:`mag_dataset.builder.splits.write_corpus_manifest`; versions 1 and 2 are read.)

**Corpus stages.** Several ``mag`` commands rewrite a corpus in place, and their order matters
(a recapture after the audit leaves verdicts on screenshots the corpus no longer shows).
``corpus.json`` records, under ``"stages"``, one entry per run of such a stage, oldest first::

    "stages": [{"stage": "unify", "mag_dataset": "0.1.0", "options": {"pixel_fraction": 0.02, ...},
                "changed": {"episodes": 12, "steps": 40, "files": ["audit.jsonl"]},
                "fingerprint": "<sha256>"}, ...]

``stage`` is the command (with the flag that selects its job: ``recapture --evidence``),
``options`` the settings that change its result, ``changed`` what differed afterwards
(episodes and steps added, removed or rewritten; corpus-root files) and ``fingerprint``
:func:`content_fingerprint` after it. :class:`StageRun` takes the snapshots and appends the
entry (:func:`append_stage`, atomic, under a lock, the rest of ``corpus.json`` untouched; a
corpus without ``corpus.json`` gets one holding the record only, and the builder then splits
by its default). Entries hold no wall-clock time, so the same stages on the same input write
the same bytes; the record is left out of every fingerprint (a corpus's fingerprint says
what it holds, not how it was made). A dry run appends nothing, nor does a run that writes
outside the corpus (``mag audit --out`` elsewhere); a run that changed nothing appends an entry
with zero counts (it still says that the stage ran, and in which order), except right after an
identical one, and except an import or an annotation-app session (which may only have looked).
The canonical order is :data:`STAGE_RULES`; a stage run after one that must
come after it prints one warning line naming both (:func:`stage_warning`). ``backfilled``
entries were written afterwards from how a corpus was made (``changed`` and ``fingerprint``
null when that state is gone). ``mag stages --raw RAW`` prints the record; ``mag build`` copies it
into ``build_info.json`` (``corpus_stages``). Corpora without ``stages`` read as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import io
import json
import math
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from mag_dataset.actions import ACTION_SPACE, ActionType
from mag_dataset.fileio import atomic_write, atomic_write_jsonl
from mag_dataset.schema import (
    Action,
    AuditRecord,
    Candidate,
    GuideSource,
    SchemaError,
    as_box,
    box_inside_image,
    point_in_box,
)

FORMAT = "mag-raw-episode"
CORPUS_FORMAT = "mag-raw-corpus"
FORMAT_VERSION = 2
#: Format versions :func:`read_episode` and the builder accept.
READ_VERSIONS: tuple[int, ...] = (1, 2)
EPISODE_FILE = "episode.json"
#: The compacted form of :data:`EPISODE_FILE`: its text, gzip-compressed (see "Compressed episode files").
EPISODE_GZ_FILE = "episode.json.gz"
#: The steps' page evidence beside ``episode.json`` (see "Page evidence" above).
EVIDENCE_FILE = "evidence.json.gz"
EVIDENCE_FORMAT = "mag-page-evidence"
#: Step-metadata keys stored in :data:`EVIDENCE_FILE` instead of ``episode.json``.
EVIDENCE_KEYS: tuple[str, ...] = ("dom", "shown_page")
#: Separates a difference's own stem from the file name of its base (``step_004~step_003.webp``).
DELTA_SEP = "~"
#: Most differences read through to reach a whole image file.
MAX_DELTA_DEPTH = 4
#: The corpus-root folder of screenshots several episodes show (see "Shared screenshots" above).
SHARED_IMAGES_DIR = "_shared_images"
CORPUS_FILE = "corpus.json"
AUDIT_FILE = "audit.jsonl"
#: The label audit's verdict log, next to the audit file (written by ``mag audit``).
VERDICTS_FILE = "audit_verdicts.jsonl"


class RawDataError(ValueError):
    """Raw data is inconsistent. The message names the episode, step and field."""

    def __init__(self, episode: str, step: int | None, field_name: str, problem: str):
        self.episode, self.step, self.field, self.problem = episode, step, field_name, problem
        where = f"episode {episode!r}" + (f", step {step}" if step is not None else "")
        super().__init__(f"{where}, field {field_name!r}: {problem}")


#: Capture-geometry fields of a step (format v2), see :func:`capture_geometry`.
GEOMETRY_FIELDS: tuple[str, ...] = ("viewport_width", "viewport_height", "device_pixel_ratio")
#: BrowserGym's MiniWoB++ tasks: a 332x214 CSS viewport captured at 1.5 screenshot px per CSS px
#: (``browsergym.miniwob.base``: ``viewport``, ``_bgym_scale_factor``).
MINIWOB_VIEWPORT: tuple[int, int] = (332, 214)
MINIWOB_DPR = 1.5


def step_id(task_id: str, step_index: int) -> str:
    return f"{task_id}:{step_index}"


@dataclass(frozen=True)
class RawStep:
    """One recorded step. See the module docstring for the on-disk form.

    ``som_screenshot`` is ``""`` when no Set-of-Mark image is stored (rendered at build time).
    ``viewport_width`` / ``viewport_height`` / ``device_pixel_ratio`` are None when the
    recording did not store them; :func:`capture_geometry` resolves them.
    """

    step_index: int
    screenshot: str
    som_screenshot: str
    image_width: int
    image_height: int
    candidates: tuple[Candidate, ...]
    action: Action
    target_bbox: tuple[float, float, float, float] | None
    guide: str
    guide_source: GuideSource = GuideSource.TEMPLATE
    url: str = ""
    stale: bool = False
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    viewport_width: int | None = None
    viewport_height: int | None = None
    device_pixel_ratio: float | None = None

    def to_json(self) -> dict[str, Any]:
        geometry = {
            k: getattr(self, k) for k in GEOMETRY_FIELDS if getattr(self, k) is not None
        }
        return {
            "step_index": self.step_index,
            "url": self.url,
            "screenshot": self.screenshot or None,
            "som_screenshot": self.som_screenshot or None,
            "image_width": self.image_width,
            "image_height": self.image_height,
            **geometry,
            "candidates": [c.to_dict() for c in self.candidates],
            "action": self.action.to_dict(),
            "target_bbox": list(self.target_bbox) if self.target_bbox is not None else None,
            "guide": self.guide,
            "guide_source": GuideSource(self.guide_source).value,
            "stale": self.stale,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class RawEpisode:
    """One recorded episode (a task instance solved end to end)."""

    episode_id: str
    task_id: str
    site: str
    intent: str
    intent_template_id: str
    steps: tuple[RawStep, ...]
    source: str = "miniwob"
    seed: int | None = None
    reward: float | None = None
    success: bool = True
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "episode_id": self.episode_id,
            "task_id": self.task_id,
            "site": self.site,
            "intent": self.intent,
            "intent_template_id": self.intent_template_id,
            "source": self.source,
            "seed": self.seed,
            "reward": self.reward,
            "success": self.success,
            "metadata": self.metadata,
            "steps": [s.to_json() for s in self.steps],
        }


def write_episode(root: str | os.PathLike, episode: RawEpisode, images: dict[str, bytes]) -> Path:
    """Write an episode folder atomically (temp folder, then rename).

    Args:
        root: the raw corpus folder.
        episode: the episode; its steps name their screenshot files.
        images: PNG bytes per file name referenced by the steps.

    Returns:
        The episode folder.

    Raises:
        ValueError: an episode id that is not a plain folder name (a ``/``, or a leading
            ``.``, which readers skip as a temp folder).
    """
    eid = episode.episode_id
    if not eid or eid.startswith(".") or "/" in eid or "\\" in eid:
        raise ValueError(f"episode_id {eid!r} must be a plain folder name (no '/', no leading '.')")
    return write_folder(root, eid, {**images, **episode_files(episode)})


def write_folder(root: str | os.PathLike, name: str, files: dict[str, bytes]) -> Path:
    """Write the folder ``root/name`` holding ``files`` atomically: a temp folder ``.name.tmp``
    (hidden from readers), then a rename over any previous folder of that name.

    Used for episode folders, by :func:`write_episode` and by the Ray drivers writing what a
    worker sent back.

    Raises:
        ValueError: a folder or file name that is not plain (a ``/``, or a leading ``.``).
    """
    if not name or name.startswith(".") or "/" in name or "\\" in name:
        raise ValueError(f"episode folder {name!r} must be a plain folder name (no '/', no leading '.')")
    for fname in files:
        if "/" in fname or "\\" in fname or fname.startswith("."):
            raise ValueError(f"unexpected file name {fname!r} in episode {name}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final, tmp = root / name, root / f".{name}.tmp"
    if tmp.exists():
        _rmtree(tmp)
    tmp.mkdir()
    for fname, data in sorted(files.items()):
        (tmp / fname).write_bytes(data)
    if final.exists():
        _rmtree(final)
    tmp.rename(final)
    return final


def rewrite_episode_json(folder: str | os.PathLike, episode: RawEpisode) -> Path:
    """Replace an existing episode's JSON atomically (images untouched), in the form the folder
    holds it: ``episode.json``, or ``episode.json.gz`` in a compacted corpus.

    Used by the harness (unification, guide write-back) to update labels in place.

    Returns:
        The path of the episode file written.

    Raises:
        RawDataError: the folder holds both forms.
    """
    folder = Path(folder)
    found = episode_path(folder)
    files = episode_files(episode, compressed=found is not None and found.name == EPISODE_GZ_FILE)
    if EVIDENCE_FILE in files:  # the evidence first: an episode.json never names steps whose evidence is older
        atomic_write(folder / EVIDENCE_FILE, files[EVIDENCE_FILE])
    else:
        (folder / EVIDENCE_FILE).unlink(missing_ok=True)
    name = EPISODE_GZ_FILE if EPISODE_GZ_FILE in files else EPISODE_FILE
    return atomic_write(folder / name, files[name])


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed with nothing in the header that varies (no file name, mtime 0):
    the same input gives the same bytes on every run."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def episode_path(folder: str | os.PathLike) -> Path | None:
    """The file holding an episode folder's JSON: ``episode.json`` or ``episode.json.gz``; None
    when there is neither.

    Raises:
        RawDataError: the folder holds both (which one is current cannot be told).
    """
    folder = Path(folder)
    plain, packed = folder / EPISODE_FILE, folder / EPISODE_GZ_FILE
    if plain.is_file() and packed.is_file():
        raise RawDataError(folder.name, None, EPISODE_FILE,
                           f"{folder} holds both {EPISODE_FILE} and {EPISODE_GZ_FILE}: keep one (the other is stale)")
    return plain if plain.is_file() else packed if packed.is_file() else None


def episode_files(episode: RawEpisode, *, compressed: bool = False) -> dict[str, bytes]:
    """The files that hold an episode (images aside): ``episode.json`` (``episode.json.gz`` when
    ``compressed``) and, when a step has page evidence (:data:`EVIDENCE_KEYS` in its metadata),
    :data:`EVIDENCE_FILE`."""
    evidence = {str(st.step_index): {k: st.metadata[k] for k in EVIDENCE_KEYS if k in st.metadata}
                for st in episode.steps}
    evidence = {k: v for k, v in evidence.items() if v}
    text = episode_text(episode).encode("utf-8")
    out = {EPISODE_GZ_FILE: gzip_bytes(text)} if compressed else {EPISODE_FILE: text}
    if evidence:
        doc = json.dumps({"format": EVIDENCE_FORMAT, "steps": evidence}, sort_keys=True, ensure_ascii=False,
                         separators=(",", ":"))
        out[EVIDENCE_FILE] = gzip_bytes(doc.encode("utf-8"))
    return out


def _read_evidence(folder: Path, episode_id: str, n_steps: int) -> dict[int, dict[str, Any]]:
    """Step index -> its page evidence, from :data:`EVIDENCE_FILE` ({} when there is none)."""
    path = folder / EVIDENCE_FILE
    if not path.is_file():
        return {}
    try:
        doc = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RawDataError(episode_id, None, EVIDENCE_FILE, f"not gzip-compressed UTF-8 JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != EVIDENCE_FORMAT or not isinstance(doc.get("steps"), dict):
        raise RawDataError(episode_id, None, EVIDENCE_FILE, f"expected {{'format': {EVIDENCE_FORMAT!r}, 'steps': {{...}}}}")
    out: dict[int, dict[str, Any]] = {}
    for key, value in doc["steps"].items():
        idx = int(key) if key.isdigit() else -1
        if not 0 <= idx < n_steps:
            raise RawDataError(episode_id, None, EVIDENCE_FILE, f"evidence for step {key!r}, which the episode does not have")
        if not isinstance(value, dict) or not set(value) <= set(EVIDENCE_KEYS):
            raise RawDataError(episode_id, idx, EVIDENCE_FILE, f"expected an object with keys among {list(EVIDENCE_KEYS)}")
        out[idx] = value
    return out


def _is_leaf(value: Any) -> bool:
    return not isinstance(value, (dict, list)) or (isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value))


def _dump(value: Any, level: int) -> str:
    pad, end = " " * (level + 1), " " * level
    if isinstance(value, dict) and value and not all(_is_leaf(v) for v in value.values()):
        inner = ",\n".join(f"{pad}{json.dumps(k, ensure_ascii=False)}: {_dump(v, level + 1)}" for k, v in value.items())
        return "{\n" + inner + "\n" + end + "}"
    if isinstance(value, list) and not _is_leaf(value):
        return "[\n" + ",\n".join(pad + _dump(v, level + 1) for v in value) + "\n" + end + "]"
    return json.dumps(value, ensure_ascii=False)


def episode_text(episode: RawEpisode) -> str:
    """The ``episode.json`` text of an episode: indented JSON in which every object or list
    holding only plain values (a candidate, an action, a box) sits on one line — readable
    and diffable, a third smaller than fully indented JSON (6.0 MB against 8.9 MB for 135
    recorded site episodes)."""
    doc = episode.to_json()
    for st in doc["steps"]:
        if any(k in st["metadata"] for k in EVIDENCE_KEYS):
            st["metadata"] = {k: v for k, v in st["metadata"].items() if k not in EVIDENCE_KEYS}
    return _dump(doc, 0) + "\n"


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def is_delta(name: str) -> bool:
    """Whether an image path names a difference from another file of its folder (``<stem>~<base>``)."""
    return not is_shared_image(name) and DELTA_SEP in name


def delta_base(name: str) -> str:
    """The file a difference ``<stem>~<base>`` is taken from: ``<base>``."""
    return name.split(DELTA_SEP, 1)[1]


def image_bytes(folder: str | os.PathLike, name: str) -> bytes:
    """The bytes of an image of an episode folder as an image file: the file itself, or, for a
    difference (:func:`is_delta`), the lossless WebP rebuilt from it and its base.

    Raises:
        OSError: a missing file (the difference's base included).
        ValueError: differences nested deeper than :data:`MAX_DELTA_DEPTH`.
    """
    folder = Path(folder)
    chain = [name]
    while is_delta(chain[-1]):
        if len(chain) > MAX_DELTA_DEPTH:
            raise ValueError(f"{folder.name}/{name}: differences nested deeper than {MAX_DELTA_DEPTH}")
        chain.append(delta_base(chain[-1]))
    data = (folder / chain[-1]).read_bytes()
    if len(chain) == 1:
        return data
    for diff in reversed(chain[:-1]):
        data = apply_delta(data, (folder / diff).read_bytes())
    return data


def _encode_webp(image: object) -> bytes:
    """Lossless WebP with ``mag compact``'s settings (:data:`mag_dataset.compact.WEBP_METHOD` 4, quality 100)."""
    buf = io.BytesIO()
    image.save(buf, format="WEBP", lossless=True, method=4, quality=100, exact=True)  # type: ignore[attr-defined]
    return buf.getvalue()


def make_delta(base: bytes, image: bytes) -> bytes | None:
    """A lossless WebP of ``image`` minus ``base`` (RGB, per channel, modulo 256), or None when
    the two differ in size or ``image`` has an alpha channel (kept as it is)."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(base)) as b, Image.open(io.BytesIO(image)) as im:
        if b.size != im.size or im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info:
            return None
        diff = np.asarray(im.convert("RGB")).astype(np.int16) - np.asarray(b.convert("RGB")).astype(np.int16)
    return _encode_webp(Image.fromarray((diff % 256).astype(np.uint8), "RGB"))


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """The screenshot a difference stands for: ``base`` plus ``delta`` (modulo 256), encoded as
    :func:`mag_dataset.compact.to_lossless_webp` encodes (so the bytes are those of the file it replaced; a
    difference is only stored when this gives them back)."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(base)) as b, Image.open(io.BytesIO(delta)) as d:
        pixels = (np.asarray(b.convert("RGB")).astype(np.uint16) + np.asarray(d.convert("RGB"))) % 256
    return _encode_webp(Image.fromarray(pixels.astype(np.uint8), "RGB"))


def image_key(folder: str | os.PathLike, name: str) -> str:
    """A content key of an image as stored, without rebuilding it: the sha256 of a whole file's
    bytes; for a difference, the sha256 of its base's key and its own bytes. Two equal keys are
    the same pixels; ``mag compact`` shares the images several episodes hold before it stores
    any as a difference, so equal screenshots of two episodes get equal keys."""
    import hashlib

    folder = Path(folder)
    digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    if not is_delta(name):
        return digest
    return hashlib.sha256(f"{image_key(folder, delta_base(name))}:{digest}".encode()).hexdigest()


#: What a step without a screenshot (``"screenshot": null``) needs.
NO_SCREENSHOT = "no screenshot (imported without one); `mag recapture --raw RAW_DIR --share 0` gives it one"


def screenshot_bytes(folder: str | os.PathLike, step: RawStep) -> bytes:
    """The bytes of a step's screenshot as an image file (:func:`image_bytes`).

    Raises:
        RawDataError: the step has no screenshot (:data:`NO_SCREENSHOT`).
    """
    if not step.screenshot:
        raise RawDataError(Path(folder).name, step.step_index, "screenshot", NO_SCREENSHOT)
    return image_bytes(folder, step.screenshot)


def share_ref(file_name: str) -> str:
    """How a step names a screenshot stored in :data:`SHARED_IMAGES_DIR` (relative to its episode folder)."""
    return f"../{SHARED_IMAGES_DIR}/{file_name}"


def is_shared_image(name: str) -> bool:
    """Whether a step's image path names a shared screenshot (:func:`share_ref`)."""
    return name.startswith(f"../{SHARED_IMAGES_DIR}/")


def _plain_file_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def check_image_name(name: str, episode: str, idx: int | None, key: str, folder: Path | None) -> None:
    """Raise :class:`RawDataError` unless ``name`` is a plain file name of the episode folder or a
    shared screenshot (``../_shared_images/<file>``), and, with ``folder``, the file exists."""
    shared = is_shared_image(name)
    if not _plain_file_name(name.removeprefix(f"../{SHARED_IMAGES_DIR}/") if shared else name):
        raise RawDataError(episode, idx, key, f"{name!r} must be a file name in the episode folder or "
                                              f"'../{SHARED_IMAGES_DIR}/<file>'")
    if is_delta(name) and folder is not None and not (folder / delta_base(name)).is_file():
        raise RawDataError(episode, idx, key, f"{name!r} is a difference from {delta_base(name)!r}, which is missing")
    if folder is None or (folder / name).is_file():
        return
    if shared:
        raise RawDataError(episode, idx, key, f"missing shared image {name!r}: an episode copied out of its corpus "
                                              f"needs the corpus's {SHARED_IMAGES_DIR} folder beside it "
                                              "(mag_dataset.raw.copy_episodes copies both)")
    raise RawDataError(episode, idx, key, f"missing image file {name!r}")


def episode_images(episode: RawEpisode) -> set[str]:
    """Every image path the steps name: screenshots, Set-of-Mark files and the action-time
    screenshots of recaptured steps (``metadata["action_time_screenshot"]``)."""
    names: set[str] = set()
    for st in episode.steps:
        names.update(n for n in (st.screenshot, st.som_screenshot, st.metadata.get("action_time_screenshot"))
                     if isinstance(n, str) and n)
    return names


def copy_episodes(src: str | os.PathLike, dst: str | os.PathLike, names: Iterable[str]) -> list[Path]:
    """Copy episode folders of the corpus ``src`` into the corpus folder ``dst``, with the shared
    screenshots they name (the other files of ``src``, such as ``corpus.json``, are not copied).

    Returns:
        The new episode folders.
    """
    import shutil

    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names:
        folder = src / name
        shutil.copytree(folder, dst / name)
        for ref in sorted(n for n in episode_images(read_episode(folder)) if is_shared_image(n)):
            target = dst / ref.removeprefix("../")
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                shutil.copy2(folder / ref, target)
        out.append(dst / name)
    return out


def _req(d: dict[str, Any], key: str, episode: str, step: int | None, kind: type | tuple[type, ...]) -> Any:
    if key not in d or d[key] is None:
        raise RawDataError(episode, step, key, "missing")
    v = d[key]
    if isinstance(v, bool) and kind is not bool:
        raise RawDataError(episode, step, key, f"expected {getattr(kind, '__name__', kind)}, got bool")
    if not isinstance(v, kind):
        raise RawDataError(episode, step, key, f"expected {getattr(kind, '__name__', kind)}, got {type(v).__name__}")
    return v


def parse_step(d: Any, episode: str, folder: Path | None) -> RawStep:
    """Validate one step of ``episode.json``; raise :class:`RawDataError` naming the field."""
    if not isinstance(d, dict):
        raise RawDataError(episode, None, "steps", "each step must be an object")
    idx = d.get("step_index")
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise RawDataError(episode, None, "step_index", f"missing or not an integer: {idx!r}")
    w = _req(d, "image_width", episode, idx, int)
    h = _req(d, "image_height", episode, idx, int)
    if w <= 0 or h <= 0:
        raise RawDataError(episode, idx, "image_width", f"image size must be positive, got {w}x{h}")
    shots = {"screenshot": d.get("screenshot") or "", "som_screenshot": d.get("som_screenshot") or ""}
    if "screenshot" not in d or not isinstance(shots["screenshot"], str):
        raise RawDataError(episode, idx, "screenshot", "missing" if "screenshot" not in d else
                           f"expected str or null, got {type(shots['screenshot']).__name__}")
    if not shots["screenshot"] and shots["som_screenshot"]:
        raise RawDataError(episode, idx, "som_screenshot", "given for a step without a screenshot")
    if not isinstance(shots["som_screenshot"], str):
        raise RawDataError(episode, idx, "som_screenshot", f"expected str or null, got {type(shots['som_screenshot']).__name__}")
    for key, name in shots.items():
        if name:
            check_image_name(name, episode, idx, key, folder)
    geometry = _parse_geometry(d, episode, idx)
    raw_action = _req(d, "action", episode, idx, dict)
    atype = raw_action.get("type")
    if not isinstance(atype, str) or atype not in {t.value for t in ActionType}:
        raise RawDataError(episode, idx, "action.type", f"unknown action type {atype!r}")
    try:
        action = Action.from_dict(raw_action)
    except SchemaError as e:
        raise RawDataError(episode, idx, "action", str(e)) from None
    try:
        candidates = tuple(Candidate.from_dict(c) for c in d.get("candidates") or [])
    except (SchemaError, KeyError, TypeError) as e:
        raise RawDataError(episode, idx, "candidates", str(e)) from None
    ids = [c.id for c in candidates]
    if len(set(ids)) != len(ids):
        raise RawDataError(episode, idx, "candidates", "duplicate candidate ids")
    bbox = _parse_target(d.get("target_bbox"), action, ids, (w, h), episode, idx)
    guide = _req(d, "guide", episode, idx, str)
    return RawStep(
        step_index=idx,
        screenshot=shots["screenshot"],
        som_screenshot=shots["som_screenshot"],
        image_width=w,
        image_height=h,
        candidates=candidates,
        action=action,
        target_bbox=bbox,
        guide=guide,
        **_parse_step_extras(d, episode, idx),
        **geometry,
    )


def _parse_geometry(d: dict[str, Any], episode: str, idx: int) -> dict[str, Any]:
    """The capture-geometry fields a step gives (format v2), checked positive and finite."""
    geometry: dict[str, Any] = {}
    for key in GEOMETRY_FIELDS:
        v = d.get(key)
        if v is None:
            continue
        kind = float if key == "device_pixel_ratio" else int
        if isinstance(v, bool) or not isinstance(v, (int, float) if kind is float else int) or not v > 0 or not math.isfinite(v):
            raise RawDataError(episode, idx, key, f"expected a positive {kind.__name__}, got {v!r}")
        geometry[key] = kind(v)
    return geometry


def _parse_target(bbox: Any, action: Action, ids: list[str], size: tuple[int, int], episode: str,
                  idx: int) -> tuple[float, float, float, float] | None:
    """The step's target box, checked against its action: inside the image, present exactly
    when the action is targeted (a point-only click awaits ``mag unify`` for its box), around
    the gold coordinate; the gold element id must be in the candidate menu."""
    w, h = size
    targeted = ACTION_SPACE[action.type].targeted
    if bbox is not None:
        try:
            bbox = as_box("target_bbox", bbox)
        except SchemaError as e:
            raise RawDataError(episode, idx, "target_bbox", str(e)) from None
        if not box_inside_image(bbox, w, h):
            raise RawDataError(episode, idx, "target_bbox", f"box {list(bbox)} outside the {w}x{h} image")
    point_only = targeted and action.element_id is None and action.coordinate is not None
    if targeted and bbox is None and not point_only:
        raise RawDataError(episode, idx, "target_bbox", f"missing for a {action.type.value} action")
    if not targeted and bbox is not None:
        raise RawDataError(episode, idx, "target_bbox", f"given for {action.type.value}, which has no target")
    if targeted and action.coordinate is not None and bbox is not None and not point_in_box(action.coordinate, bbox):
        raise RawDataError(
            episode, idx, "action.coordinate", f"gold coordinate {list(action.coordinate)} outside target box {list(bbox)}"
        )
    if targeted and action.element_id is not None and ids and action.element_id not in ids:
        raise RawDataError(episode, idx, "action.element_id", f"{action.element_id!r} is not in the candidate menu")
    return bbox


def _parse_step_extras(d: dict[str, Any], episode: str, idx: int) -> dict[str, Any]:
    """``url``, ``stale``, ``metadata`` and ``guide_source`` of a step, type-checked."""
    url = d.get("url") or ""
    if not isinstance(url, str):
        raise RawDataError(episode, idx, "url", f"expected str, got {type(url).__name__}")
    stale = d.get("stale", False)
    if not isinstance(stale, bool):
        raise RawDataError(episode, idx, "stale", f"expected bool, got {type(stale).__name__}")
    metadata = d.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RawDataError(episode, idx, "metadata", f"expected an object, got {type(metadata).__name__}")
    try:
        source = GuideSource(d.get("guide_source", "template"))
    except ValueError:
        raise RawDataError(episode, idx, "guide_source", f"unknown guide source {d.get('guide_source')!r}") from None
    return {"url": url, "stale": stale, "metadata": metadata, "guide_source": source}


def read_episode(folder: str | os.PathLike) -> RawEpisode:
    """Read and validate one episode folder (its ``episode.json`` or ``episode.json.gz``).

    Raises:
        RawDataError: naming the episode, step and field of the first inconsistency.
    """
    folder = Path(folder)
    name = folder.name
    path = episode_path(folder)
    if path is None:
        raise RawDataError(name, None, EPISODE_FILE, "missing")
    try:
        data = path.read_bytes()
        d = json.loads((gzip.decompress(data) if path.name == EPISODE_GZ_FILE else data).decode("utf-8"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as e:
        kind = "gzip-compressed UTF-8 JSON" if path.name == EPISODE_GZ_FILE else "UTF-8 JSON"
        raise RawDataError(name, None, path.name, f"not valid {kind}: {e}") from None
    if not isinstance(d, dict):
        raise RawDataError(name, None, path.name, "must hold a JSON object")
    if d.get("format") != FORMAT:
        raise RawDataError(name, None, "format", f"expected {FORMAT!r}, got {d.get('format')!r}")
    if d.get("format_version") not in READ_VERSIONS:
        raise RawDataError(name, None, "format_version", f"unsupported version {d.get('format_version')!r}")
    episode_id = _req(d, "episode_id", name, None, str)
    strs = {k: _req(d, k, episode_id, None, str) for k in ("task_id", "site", "intent", "intent_template_id")}
    raw_steps = _req(d, "steps", episode_id, None, list)
    if not raw_steps and d.get("success", True) is not False:
        # A failed live-eval episode whose agent never executed a representable action
        # (mag live-eval) is kept for inspection with no steps; gold episodes need steps.
        raise RawDataError(episode_id, None, "steps", "an episode needs at least one step")
    steps = tuple(parse_step(s, episode_id, folder) for s in raw_steps)
    seen: set[int] = set()
    metadata = d.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RawDataError(episode_id, None, "metadata", f"expected an object, got {type(metadata).__name__}")
    for s in steps:
        if s.step_index in seen:
            sid = step_id(strs["task_id"], s.step_index)
            raise RawDataError(episode_id, s.step_index, "step_index", f"duplicate step id {sid!r}")
        seen.add(s.step_index)
    for i, s in enumerate(steps):
        if s.step_index != i:
            raise RawDataError(episode_id, s.step_index, "step_index", f"expected {i} (steps must be numbered 0..n-1 in order)")
    evidence = _read_evidence(folder, episode_id, len(steps))
    if evidence:
        steps = tuple(dataclasses.replace(s, metadata={**s.metadata, **evidence[s.step_index]})
                      if s.step_index in evidence else s for s in steps)
    return RawEpisode(
        episode_id=episode_id,
        steps=steps,
        source=d.get("source") or "unknown",
        seed=d.get("seed"),
        reward=d.get("reward"),
        success=bool(d.get("success", True)),
        metadata=metadata,
        **strs,
    )


def capture_geometry(step: RawStep, source: str = "") -> tuple[int, int, float]:
    """The capture geometry of a step: ``(viewport_width, viewport_height, device_pixel_ratio)``.

    The CSS viewport is the browser's layout viewport in CSS px; the device-pixel ratio is
    screenshot pixels per CSS pixel, so an *uncropped* screenshot is ``viewport * dpr``
    pixels. Taken, in order, from:

    1. the step's own fields (format v2; the recorders write them from the env);
    2. ``metadata["viewport"]`` (``[w, h]``, written by the site recorder) for the viewport
       and ``metadata["conversion"]["scale_factor"]`` for the ratio (every recorder and
       importer stores that :class:`~mag_dataset.live.observe.Conversion`);
    3. defaults: a ``miniwob`` episode has BrowserGym's MiniWoB viewport and ratio
       (:data:`MINIWOB_VIEWPORT`, 332x214 CSS px, :data:`MINIWOB_DPR` 1.5; its screenshot
       is a crop of that capture); any other episode is taken as an uncropped capture at
       ratio 1.0, viewport ``image size / ratio``.

    Args:
        step: the raw step.
        source: its episode's ``source`` (``miniwob``, ``sites``, ``browsergym``...).

    Returns:
        ``(viewport_width, viewport_height, device_pixel_ratio)``.
    """
    meta = step.metadata if isinstance(step.metadata, dict) else {}
    conv = meta.get("conversion") if isinstance(meta.get("conversion"), dict) else {}
    dpr = step.device_pixel_ratio
    if dpr is None:
        scale = conv.get("scale_factor")
        fallback = MINIWOB_DPR if source == "miniwob" else 1.0
        dpr = float(scale) if isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale > 0 else fallback
    if step.viewport_width is not None and step.viewport_height is not None:
        return step.viewport_width, step.viewport_height, dpr
    vp = meta.get("viewport")
    if isinstance(vp, (list, tuple)) and len(vp) == 2 and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in vp):
        return int(vp[0]), int(vp[1]), dpr
    if source == "miniwob":
        return MINIWOB_VIEWPORT[0], MINIWOB_VIEWPORT[1], dpr
    return round(step.image_width / dpr), round(step.image_height / dpr), dpr


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def image_format(data: bytes) -> str | None:
    """``"png"``, ``"webp"`` (lossless), ``"webp-lossy"`` or None for the bytes of an image file.

    A WebP file is lossless when its image chunk is ``VP8L`` (simple format) or, in the
    extended format (``VP8X``), when no ``VP8 `` (lossy) chunk is present.
    """
    if data.startswith(PNG_MAGIC):
        return "png"
    if len(data) >= 16 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        pos, lossless = 12, False
        while pos + 8 <= len(data):
            tag = data[pos:pos + 4]
            size = int.from_bytes(data[pos + 4:pos + 8], "little")
            if tag == b"VP8 ":
                return "webp-lossy"
            lossless = lossless or tag == b"VP8L"
            pos += 8 + size + (size & 1)
        return "webp" if lossless else None
    return None


def som_image_path(folder: str | os.PathLike, step: RawStep) -> Path:
    """The file a step's Set-of-Mark image comes from: the recorded one, else the raw
    screenshot it is rendered from (format v2); what a preflight check should decode."""
    return Path(folder) / (step.som_screenshot or step.screenshot)


def som_image_bytes(folder: str | os.PathLike, step: RawStep) -> bytes:
    """The Set-of-Mark image of a raw step: the recorded file, or one rendered from the raw
    screenshot and the candidate menu (:func:`mag_dataset.som.render_som`) when the
    step stores none (format v2). For readers that show the labelled page (audit, drafting,
    annotation); the builder renders through the same function."""
    folder = Path(folder)
    if step.som_screenshot:
        return (folder / step.som_screenshot).read_bytes()
    from mag_dataset.som import render_som

    return render_som(screenshot_bytes(folder, step), step.candidates)


def iter_episode_dirs(root: str | os.PathLike) -> list[Path]:
    """Episode folders of a raw corpus, sorted by name (hidden temp folders and
    :data:`SHARED_IMAGES_DIR` skipped)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"raw corpus folder not found: {root}")
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != SHARED_IMAGES_DIR)


def read_corpus(root: str | os.PathLike) -> Iterator[RawEpisode]:
    """Read every episode of a raw corpus in name order, validating each."""
    for folder in iter_episode_dirs(root):
        yield read_episode(folder)


def read_audit(path: str | os.PathLike) -> dict[str, AuditRecord]:
    """Read an audit file: JSONL of ``{"step_id": ..., <AuditRecord fields>}``.

    Raises:
        ValueError: naming the line of a malformed or duplicate record.
    """
    out: dict[str, AuditRecord] = {}
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not valid UTF-8: {e}") from None
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            sid = d.pop("step_id")
            if not isinstance(sid, str):
                raise TypeError(f"step_id must be a string, got {sid!r}")
            rec = AuditRecord(**d)
        except (json.JSONDecodeError, KeyError, TypeError, SchemaError, AttributeError) as e:
            raise ValueError(f"{path}:{n}: bad audit record: {e}") from None
        if sid in out:
            raise ValueError(f"{path}:{n}: duplicate audit record for step {sid!r}")
        out[sid] = rec
    return out


def write_audit(path: str | os.PathLike, records: dict[str, AuditRecord]) -> None:
    """Write an audit file atomically, sorted by step id."""
    atomic_write_jsonl(path, ({"step_id": sid, **records[sid].to_dict()} for sid in sorted(records)), sort_keys=True)


# -- the corpus-stage record ---------------------------------------------------------------
#
# ``corpus.json`` holds, under ``stages``, one entry per run of a stage that rewrote the corpus
# (see "Corpus stages" in the module docstring). The entries are provenance *about* the
# content: :func:`corpus_file_digests` hashes ``corpus.json`` without them, so recording a
# stage changes neither :func:`content_fingerprint` nor the builder's raw fingerprint.

#: The key of the stage record in ``corpus.json``.
STAGES_KEY = "stages"


class StageRecordError(ValueError):
    """A malformed stage record in ``corpus.json``; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class StageRule:
    """Where a stage belongs: the stages it must come after (when they run at all) and what it rewrites."""

    after: tuple[str, ...]
    rewrites: str


_CREATE = ("record", "import-browsergym", "import-trace", "import-webarena", "make-corpus merge")
_RECAPTURE = ("recapture", "recapture --end-at-error-pages", "recapture --undo")

#: The canonical order of the stages that rewrite a raw corpus, written once: stage -> the stages
#: it must come after, and what it rewrites (the work of every stage that must come after it and
#: ran before it is then out of date: a recapture after the audit means the audit judged
#: screenshots that are no longer the corpus's). The table's order is the canonical order
#: (``scripts/make_corpus.py`` runs it). A stage is the ``mag`` command (with the flag that
#: selects what it does), or one of ``scripts/make_corpus.py``'s own steps (``make-corpus ...``).
STAGE_RULES: dict[str, StageRule] = {
    "record": StageRule((), "the episodes (a new corpus)"),
    "import-browsergym": StageRule((), "the episode set (imported episodes added)"),
    "import-trace": StageRule((), "the episode set (imported episodes added)"),
    "import-webarena": StageRule((), "the episode set (imported episodes added)"),
    "make-corpus merge": StageRule((), "the episode set (recordings merged)"),
    "recapture --evidence": StageRule(_CREATE, "the page evidence the audit's judges read"),
    "recapture": StageRule(_CREATE + ("recapture --evidence",), "the screenshots (replayed on a moved-on site)"),
    "recapture --end-at-error-pages": StageRule(_CREATE, "the screenshots (recaptures ended at error pages)"),
    "recapture --undo": StageRule(_CREATE, "the screenshots (action-time ones back)"),
    "unify": StageRule(_CREATE + _RECAPTURE, "the labels (restored points, stale flags)"),
    "draft-guides": StageRule(_CREATE + _RECAPTURE + ("unify",), "the guide drafts"),
    "annotate": StageRule(_CREATE + _RECAPTURE + ("unify", "draft-guides"), "the guides (people's decisions)"),
    "label-studio import": StageRule(_CREATE + _RECAPTURE + ("unify", "draft-guides"), "the guides (people's decisions)"),
    "audit": StageRule(_CREATE + _RECAPTURE + ("recapture --evidence", "unify", "annotate", "label-studio import"),
                       "the audit labels"),
    "lint-guides --regenerate": StageRule(_CREATE + _RECAPTURE + ("unify",), "the generated guides"),
    "compact": StageRule(_CREATE + _RECAPTURE, "how the screenshots and episode files are stored (losslessly)"),
    "make-corpus fit": StageRule(_CREATE + _RECAPTURE + ("compact",), "the episode set (fitted to the size cap)"),
    "make-corpus split": StageRule(_CREATE + ("make-corpus fit",), "the train/test split"),
}


@dataclass(frozen=True)
class StageEntry:
    """One run of a stage, as ``corpus.json`` records it.

    ``changed`` counts what the run changed (``episodes``, ``steps``: added, removed or
    rewritten; ``files``: the corpus-root files it changed, e.g. ``audit.jsonl``) and
    ``fingerprint`` is :func:`content_fingerprint` after it; both are None in a *backfilled*
    entry (written afterwards from how the corpus was made, when that state is gone).
    ``options`` are the settings that change the result. There is no wall-clock time: the
    list order is the order, and the same stages on the same input write the same bytes.
    """

    stage: str
    version: str
    options: dict[str, Any]
    changed: dict[str, Any] | None
    fingerprint: str | None
    backfilled: bool = False
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage, "mag_dataset": self.version, "options": self.options,
                               "changed": self.changed, "fingerprint": self.fingerprint}
        if self.backfilled:
            out["backfilled"] = True
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, d: Any, where: str) -> "StageEntry":
        """Parse one entry; :class:`StageRecordError` naming ``where`` and the field."""
        if not isinstance(d, dict):
            raise StageRecordError(f"{where}: expected an object, got {type(d).__name__}")
        unknown = sorted(set(d) - {"stage", "mag_dataset", "options", "changed", "fingerprint", "backfilled", "note"})
        if unknown:
            raise StageRecordError(f"{where}: unknown field {unknown[0]!r}")
        for key in ("stage", "mag_dataset"):
            if not isinstance(d.get(key), str) or not d[key]:
                raise StageRecordError(f"{where}: field {key!r} must be a non-empty string, got {d.get(key)!r}")
        backfilled = d.get("backfilled", False)
        if not isinstance(backfilled, bool):
            raise StageRecordError(f"{where}: field 'backfilled' must be true or false, got {backfilled!r}")
        if not isinstance(d.get("options"), dict):
            raise StageRecordError(f"{where}: field 'options' must be an object, got {d.get('options')!r}")
        changed, fp = d.get("changed"), d.get("fingerprint")
        if not (changed is None and backfilled) and not _valid_changed(changed):
            raise StageRecordError(f"{where}: field 'changed' must be {{'episodes': n, 'steps': n, 'files': [...]}}, "
                                   f"got {changed!r}")
        if not (fp is None and backfilled) and not (isinstance(fp, str) and len(fp) == 64
                                                   and all(c in "0123456789abcdef" for c in fp)):
            raise StageRecordError(f"{where}: field 'fingerprint' must be a sha256 hex digest, got {fp!r}")
        note = d.get("note", "")
        if not isinstance(note, str):
            raise StageRecordError(f"{where}: field 'note' must be a string, got {note!r}")
        return cls(d["stage"], d["mag_dataset"], d["options"], changed, fp, backfilled, note)


def _valid_changed(changed: Any) -> bool:
    if not isinstance(changed, dict) or set(changed) != {"episodes", "steps", "files"}:
        return False
    counts_ok = all(isinstance(changed[k], int) and not isinstance(changed[k], bool) and changed[k] >= 0
                    for k in ("episodes", "steps"))
    return counts_ok and isinstance(changed["files"], list) and all(isinstance(f, str) for f in changed["files"])


def _corpus_doc(path: Path) -> dict[str, Any] | None:
    """The JSON object of a ``corpus.json``; None when it is not one (the builder names the problem)."""
    try:
        d = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return d if isinstance(d, dict) else None


def read_stages(root: str | os.PathLike) -> list[StageEntry]:
    """The stage record of a raw corpus, oldest first: [] without ``corpus.json`` or without
    ``stages`` (corpora made before the record existed).

    Raises:
        StageRecordError: a ``stages`` that is not a list of well-formed entries, or a
            ``corpus.json`` that is not a JSON object (one line, naming the file and entry).
    """
    path = Path(root) / CORPUS_FILE
    if not path.is_file():
        return []
    d = _corpus_doc(path)
    if d is None:
        raise StageRecordError(f"{path}: not a JSON object")
    stages = d.get(STAGES_KEY, [])
    if not isinstance(stages, list):
        raise StageRecordError(f"{path}: field {STAGES_KEY!r} must be a list of stage entries, got {type(stages).__name__}")
    return [StageEntry.from_json(e, f"{path}: {STAGES_KEY}[{i}]") for i, e in enumerate(stages)]


def corpus_manifest_text(doc: dict[str, Any]) -> str:
    """How ``corpus.json`` is written: indented, key-sorted JSON with a final newline."""
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def write_corpus_doc(root: str | os.PathLike, doc: dict[str, Any]) -> Path:
    """Write ``corpus.json`` atomically, keeping the stage record already there (a ``stages`` in
    ``doc`` wins); used by the manifest writer (:func:`mag_dataset.builder.splits.write_corpus_manifest`)."""
    root = Path(root)
    path = root / CORPUS_FILE
    root.mkdir(parents=True, exist_ok=True)
    with _record_lock(root):
        old = _corpus_doc(path) if path.is_file() else None
        doc = dict(doc)
        if STAGES_KEY not in doc and old is not None and STAGES_KEY in old:
            read_stages(root)  # a malformed record is refused, not carried along
            doc[STAGES_KEY] = old[STAGES_KEY]
        return atomic_write(path, corpus_manifest_text(doc))


def append_stage(root: str | os.PathLike, entry: StageEntry) -> bool:
    """Append ``entry`` to the stage record of ``corpus.json``, atomically, the rest untouched.

    A corpus without ``corpus.json`` gets one holding the record only (the builder then
    splits by its documented default). A run that changed nothing right after an entry of the
    same stage with the same options and fingerprint (an idempotent rerun) is not appended.

    Returns:
        Whether the entry was appended.

    Raises:
        StageRecordError: the record already there is malformed (it is not rewritten).
        ValueError: a stage not in :data:`STAGE_RULES`.
    """
    if entry.stage not in STAGE_RULES:
        raise ValueError(f"unknown corpus stage {entry.stage!r}; the stages are {', '.join(STAGE_RULES)}")
    root = Path(root)
    with _record_lock(root):
        return _append_locked(root, root / CORPUS_FILE, entry)


#: Seconds a writer of ``corpus.json`` waits for another one.
STAGE_LOCK_TIMEOUT = 60.0


@contextlib.contextmanager
def _record_lock(root: Path) -> Iterator[None]:
    """Hold ``RAW/.corpus.json.lock`` around a read-modify-write of ``corpus.json``: hidden (no part
    of the content) and removed on release, so no corpus keeps a lock file."""
    import filelock

    lock = root / f".{CORPUS_FILE}.lock"
    try:
        with filelock.SoftFileLock(str(lock), timeout=STAGE_LOCK_TIMEOUT):
            yield
    except filelock.Timeout:
        raise StageRecordError(f"{lock} is held: another command is writing {root / CORPUS_FILE} (or a killed one "
                               "left the file behind: delete it)") from None


def _append_locked(root: Path, path: Path, entry: StageEntry) -> bool:
    """:func:`append_stage` under its lock."""
    stages = read_stages(root)
    last = stages[-1] if stages else None
    if (last is not None and entry.changed is not None and not any(entry.changed.values())
            and (last.stage, last.options, last.fingerprint) == (entry.stage, entry.options, entry.fingerprint)):
        return False
    doc = _corpus_doc(path) if path.is_file() else {"format": CORPUS_FORMAT, "format_version": FORMAT_VERSION}
    assert doc is not None  # read_stages refused anything else
    doc[STAGES_KEY] = [*doc.get(STAGES_KEY, []), entry.to_json()]
    atomic_write(path, corpus_manifest_text(doc))
    return True


def _rule(stage: str) -> StageRule:
    return STAGE_RULES.get(stage, StageRule((), ""))


def out_of_date(stages: list[StageEntry]) -> list[str]:
    """The stages whose last run is out of date: a stage they must come after ran after it (and
    they have not run again since), in the order they last ran."""
    last = {e.stage: i for i, e in enumerate(stages)}
    return [name for name, i in sorted(last.items(), key=lambda kv: kv[1])
            if any(e.stage in _rule(name).after for e in stages[i + 1:])]


def stage_warning(stages: list[StageEntry], stage: str) -> str | None:
    """One line when running ``stage`` now is out of the canonical order (:data:`STAGE_RULES`):
    a stage that must come after it has run, and its last run is not out of date already (a
    rerun that repairs an earlier inversion does not warn). None when in order, or for a
    stage the table does not know."""
    stale = set(out_of_date(stages))
    later = list(dict.fromkeys(e.stage for e in stages if stage in _rule(e.stage).after and e.stage not in stale))
    if not later or stage not in STAGE_RULES:
        return None
    names = " and ".join(later) if len(later) < 3 else ", ".join(later[:-1]) + " and " + later[-1]
    them = "it" if len(later) == 1 else "them"
    return (f"{stage} runs after {names}, which must come after it: {stage} rewrites "
            f"{STAGE_RULES[stage].rewrites} that {names} worked on; run {them} again after it")


def order_problems(stages: list[StageEntry]) -> list[str]:
    """Every run out of the canonical order in a record (:func:`stage_warning` of each entry
    against the ones before it), whether or not later runs repaired it (:func:`out_of_date`)."""
    return [w for i, e in enumerate(stages) if (w := stage_warning(stages[:i], e.stage)) is not None]


def _file_digest(path: Path, rel: str) -> str:
    """sha256 of a corpus file; of ``corpus.json`` without its stage record (canonical text), so
    that recording a stage changes no fingerprint."""
    if rel == CORPUS_FILE:
        doc = _corpus_doc(path)
        if doc is not None:
            doc.pop(STAGES_KEY, None)
            return hashlib.sha256(corpus_manifest_text(doc).encode("utf-8")).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def corpus_file_digests(root: str | os.PathLike) -> list[tuple[str, str]]:
    """``(relative path, sha256)`` of every file of a raw corpus, in path order; hidden files and
    folders (temp folders, locks) skipped and ``corpus.json`` hashed without its stage record
    (written by the canonical writer, its digest is that of its bytes before any stage was
    recorded), or skipped when it holds nothing else (a corpus whose only ``corpus.json`` is the
    record of its stages holds what it held without one)."""
    root = Path(root)
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        if rel == CORPUS_FILE and _record_only(path):
            continue
        out.append((rel, _file_digest(path, rel)))
    return out


def _record_only(path: Path) -> bool:
    """Whether a ``corpus.json`` holds the stage record and nothing else (no split)."""
    doc = _corpus_doc(path)
    return doc is not None and STAGES_KEY in doc and set(doc) <= {"format", "format_version", STAGES_KEY}


def content_fingerprint(root: str | os.PathLike, digests: list[tuple[str, str]] | None = None) -> str:
    """sha256 over every file of a raw corpus (names and :func:`corpus_file_digests`): what a
    stage entry records after it. The builder's raw fingerprint adds its version to the same."""
    h = hashlib.sha256()
    for rel, digest in (corpus_file_digests(root) if digests is None else digests):
        h.update(f"{rel}\n{digest}\n".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class CorpusSnapshot:
    """What a stage's counts are taken from: a digest per episode, per step and per corpus-root
    file, and the content fingerprint (:func:`corpus_snapshot`)."""

    episodes: dict[str, str]
    steps: dict[str, str]
    files: dict[str, str]
    fingerprint: str


def corpus_snapshot(root: str | os.PathLike) -> CorpusSnapshot:
    """Digests of a raw corpus's episodes, steps (JSON, page evidence, image bytes, audit record)
    and root files; an empty snapshot for a missing or empty folder. An episode that does not read
    counts as one changed unit (its files' digests), without steps."""
    root = Path(root)
    if not root.is_dir():
        return CorpusSnapshot({}, {}, {}, content_fingerprint(root, []))
    digests = corpus_file_digests(root)
    by_rel = dict(digests)
    audit: dict[str, str] = {}
    try:
        if (root / AUDIT_FILE).is_file():
            audit = {sid: json.dumps(r.to_dict(), sort_keys=True) for sid, r in read_audit(root / AUDIT_FILE).items()}
    except ValueError:
        pass  # a malformed audit file counts as a changed file only
    episodes: dict[str, str] = {}
    steps: dict[str, str] = {}
    for folder in iter_episode_dirs(root):
        try:
            ep = read_episode(folder)
        except (RawDataError, OSError):
            own = sorted((r, d) for r, d in digests if r.startswith(folder.name + "/"))
            episodes[folder.name] = hashlib.sha256(json.dumps(own).encode()).hexdigest()
            continue
        doc = ep.to_json()
        step_docs = doc.pop("steps")
        h = hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode())
        for st, sd in zip(ep.steps, step_docs):
            sid = step_id(ep.task_id, st.step_index)
            images = sorted(episode_images(dataclasses.replace(ep, steps=(st,))))
            files = [(n, by_rel.get(os.path.normpath(f"{folder.name}/{n}").replace(os.sep, "/"), "")) for n in images]
            sh = hashlib.sha256(json.dumps([sd, files, audit.get(sid)], sort_keys=True, default=str).encode()).hexdigest()
            steps[f"{folder.name}/{st.step_index}"] = sh
            h.update(sh.encode())
        episodes[folder.name] = h.hexdigest()
    files = {r: d for r, d in digests if "/" not in r}
    return CorpusSnapshot(episodes, steps, files, content_fingerprint(root, digests))


def snapshot_changes(before: CorpusSnapshot, after: CorpusSnapshot) -> dict[str, Any]:
    """``{"episodes": n, "steps": n, "files": [names]}``: what differs between two snapshots
    (added, removed or rewritten)."""
    def differ(a: dict[str, str], b: dict[str, str]) -> list[str]:
        return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))

    return {"episodes": len(differ(before.episodes, after.episodes)), "steps": len(differ(before.steps, after.steps)),
            "files": differ(before.files, after.files)}


def package_version() -> str:
    from mag_dataset import __version__

    return __version__


class StageRun:
    """One run of a stage on a raw corpus, for the commands that rewrite one.

    Created before the stage works: it reads the record (:attr:`warning`: the one line to
    print when the stage is out of order) and takes a :func:`corpus_snapshot`;
    :meth:`finish` takes another and appends the entry. A dry run does not call
    :meth:`finish` (it rewrote nothing, so nothing is recorded).

    Args:
        root: the raw corpus (it may not exist yet).
        stage: a stage of :data:`STAGE_RULES`.
        options: the settings that change the result (JSON values).

    Raises:
        StageRecordError: the record is malformed.
    """

    def __init__(self, root: str | os.PathLike, stage: str, options: dict[str, Any]):
        if stage not in STAGE_RULES:
            raise ValueError(f"unknown corpus stage {stage!r}")
        self.root, self.stage, self.options = Path(root), stage, dict(options)
        self.warning = stage_warning(read_stages(root), stage) if Path(root).is_dir() else None
        self.before = corpus_snapshot(root)

    def finish(self, root: str | os.PathLike | None = None, *, note: str = "",
               only_if_changed: bool = False) -> StageEntry | None:
        """Append this run's entry to ``root`` (default: the corpus it started on).

        Args:
            root: the corpus the stage's result is in, when it is not the one it started on
                (``scripts/make_corpus.py``'s fit writes a new folder).
            note: a short remark stored with the entry.
            only_if_changed: append nothing when the run changed nothing (the annotation
                app, which is also opened only to look).

        Returns:
            The entry appended, or None when none was.
        """
        root = Path(root) if root is not None else self.root
        after = corpus_snapshot(root)
        changed = snapshot_changes(self.before, after)
        if only_if_changed and not any(changed.values()):
            return None
        entry = StageEntry(self.stage, package_version(), self.options, changed, after.fingerprint, note=note)
        return entry if append_stage(root, entry) else None
