"""Raw episode format (version 1): what recorders write and the builder reads.

Any source — the MiniWoB++ recorder, the BrowserGym/AgentLab importer, the maintainers'
WebArena trajectories — is converted to this format, and only this format is built into
the dataset. A raw corpus is a folder::

    RAW/
      corpus.json                 # optional corpus manifest (split seed and assignment)
      audit.jsonl                 # optional audit file, one AuditRecord per step_id
      <episode_id>/
        episode.json              # the episode, see RawEpisode
        step_000.png              # raw screenshot of step 0
        step_000_som.png          # the same screenshot with Set-of-Mark labels drawn
        ...

``episode.json``::

    {"format": "mag-raw-episode", "format_version": 1,
     "episode_id": "click-button.seed-3", "task_id": "click-button.seed-3",
     "site": "click-button", "intent": "Click on the \\"Submit\\" button.",
     "intent_template_id": "click-button", "source": "miniwob", "seed": 3,
     "reward": 1.0, "success": true, "metadata": {...},
     "steps": [{"step_index": 0, "url": "...", "screenshot": "step_000.png",
                "som_screenshot": "step_000_som.png", "image_width": 320,
                "image_height": 420, "candidates": [{"id": "12", "role": "button",
                "text": "Submit", "bbox": [x0, y0, x1, y1]}, ...],
                "action": {"type": "click", "element_id": "12", "coordinate": [x, y],
                           "text": null, ...},
                "target_bbox": [x0, y0, x1, y1] | null,
                "guide": "Click 'Submit' to send the form.", "guide_source": "template",
                "stale": false, "metadata": {...}}, ...]}

An episode with ``"success": false`` may have no steps: ``mag live-eval`` writes such an
episode when its agent never executed an action the format can hold (its full attempt log is
in ``metadata["trajectory"]``). Builders yield no rows for it.

Step ``metadata`` is free-form; the MiniWoB++ recorder (:mod:`mag_dataset.live.recorder`)
writes ``{"conversion": {"scale_factor": 1.5, "crop": [x0, y0, x1, y1]},
"browsergym_action": "mouse_move(67.97, 272.25)\\nnoop(100)\\nmouse_click(67.97, 272.25)"}``
(clicks hover first, see :mod:`mag_dataset.live.execute`): a screenshot point ``(x, y)`` is the
page CSS point ``((x + x0) / scale_factor, (y + y0) / scale_factor)`` (see
:class:`mag_dataset.live.observe.Conversion`).

Screenshot paths are relative to the episode folder. Coordinates and boxes are in
screenshot pixels. ``step_id`` is ``f"{task_id}:{step_index}"``.

``corpus.json``::

    {"format": "mag-raw-corpus", "format_version": 1, "split_seed": 0,
     "held_out_templates": ["..."], "splits": {"<task_id>": "train" | "test", ...}}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

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
FORMAT_VERSION = 1
EPISODE_FILE = "episode.json"
CORPUS_FILE = "corpus.json"
AUDIT_FILE = "audit.jsonl"


class RawDataError(ValueError):
    """Raw data is inconsistent. The message names the episode, step and field."""

    def __init__(self, episode: str, step: int | None, field_name: str, problem: str):
        self.episode, self.step, self.field, self.problem = episode, step, field_name, problem
        where = f"episode {episode!r}" + (f", step {step}" if step is not None else "")
        super().__init__(f"{where}, field {field_name!r}: {problem}")


def step_id(task_id: str, step_index: int) -> str:
    return f"{task_id}:{step_index}"


@dataclass(frozen=True)
class RawStep:
    """One recorded step. See the module docstring for the on-disk form."""

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

    def to_json(self) -> dict[str, Any]:
        return {
            "step_index": self.step_index,
            "url": self.url,
            "screenshot": self.screenshot,
            "som_screenshot": self.som_screenshot,
            "image_width": self.image_width,
            "image_height": self.image_height,
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
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / episode.episode_id
    tmp = root / f".{episode.episode_id}.tmp"
    if tmp.exists():
        _rmtree(tmp)
    tmp.mkdir()
    for name, data in sorted(images.items()):
        (tmp / name).write_bytes(data)
    (tmp / EPISODE_FILE).write_text(json.dumps(episode.to_json(), indent=1, ensure_ascii=False) + "\n", "utf-8")
    if final.exists():
        _rmtree(final)
    tmp.rename(final)
    return final


def rewrite_episode_json(folder: str | os.PathLike, episode: RawEpisode) -> Path:
    """Replace an existing episode's ``episode.json`` atomically (images untouched).

    Used by the harness (unification, guide write-back) to update labels in place.

    Returns:
        The path of ``episode.json``.
    """
    return atomic_write(Path(folder) / EPISODE_FILE, json.dumps(episode.to_json(), indent=1, ensure_ascii=False) + "\n")


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


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
    shots = {}
    for key in ("screenshot", "som_screenshot"):
        name = _req(d, key, episode, idx, str)
        if folder is not None and not (folder / name).is_file():
            raise RawDataError(episode, idx, key, f"missing image file {name!r}")
        shots[key] = name
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
    bbox = d.get("target_bbox")
    targeted = ACTION_SPACE[action.type].targeted
    if bbox is not None:
        try:
            bbox = as_box("target_bbox", bbox)
        except SchemaError as e:
            raise RawDataError(episode, idx, "target_bbox", str(e)) from None
        if not box_inside_image(bbox, w, h):
            raise RawDataError(episode, idx, "target_bbox", f"box {list(bbox)} outside the {w}x{h} image")
    point_only = targeted and action.element_id is None and action.coordinate is not None
    if targeted and bbox is None and not point_only:  # a point-only click awaits `mag unify` for its box
        raise RawDataError(episode, idx, "target_bbox", f"missing for a {action.type.value} action")
    if not targeted and bbox is not None:
        raise RawDataError(episode, idx, "target_bbox", f"given for {action.type.value}, which has no target")
    if targeted and action.coordinate is not None and bbox is not None and not point_in_box(action.coordinate, bbox):
        raise RawDataError(
            episode, idx, "action.coordinate", f"gold coordinate {list(action.coordinate)} outside target box {list(bbox)}"
        )
    if targeted and action.element_id is not None and candidates and action.element_id not in ids:
        raise RawDataError(episode, idx, "action.element_id", f"{action.element_id!r} is not in the candidate menu")
    guide = _req(d, "guide", episode, idx, str)
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
        guide_source=source,
        url=url,
        stale=stale,
        metadata=metadata,
    )


def read_episode(folder: str | os.PathLike) -> RawEpisode:
    """Read and validate one episode folder.

    Raises:
        RawDataError: naming the episode, step and field of the first inconsistency.
    """
    folder = Path(folder)
    name = folder.name
    path = folder / EPISODE_FILE
    if not path.is_file():
        raise RawDataError(name, None, EPISODE_FILE, "missing")
    try:
        d = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RawDataError(name, None, EPISODE_FILE, f"not valid UTF-8 JSON: {e}") from None
    if not isinstance(d, dict):
        raise RawDataError(name, None, EPISODE_FILE, "must hold a JSON object")
    if d.get("format") != FORMAT:
        raise RawDataError(name, None, "format", f"expected {FORMAT!r}, got {d.get('format')!r}")
    if d.get("format_version") != FORMAT_VERSION:
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


def iter_episode_dirs(root: str | os.PathLike) -> list[Path]:
    """Episode folders of a raw corpus, sorted by name (hidden temp folders skipped)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"raw corpus folder not found: {root}")
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


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
