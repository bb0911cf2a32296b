"""Loading built WebMRE datasets: the bundled sample, local folders and Hub repositories.

The bundled sample corpus (recorded episodes, raw format, :mod:`mag_dataset.raw`) ships inside the
package; :func:`bundled_dataset` builds it once into a cache folder keyed by its
fingerprint, so every command and test reads the same Parquet files. Everything else
goes through ``datasets.load_dataset`` on a built folder or a Hub repo id, exactly as a
user of ``mag/webmre`` would.

``datasets`` is imported inside the functions that need it, so importing this module is
cheap.

References:
    WebMRE (arXiv 2609.27353): the som and coord views, the audited gold labels.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from mag_dataset.actions import View
from mag_dataset.cache import default_cache_dir
from mag_dataset.schema import Action, Candidate, SchemaError, Step

if TYPE_CHECKING:
    import datasets

    from mag_dataset.scoring.gold import GoldSteps

#: Step columns kept in a gold record (everything but the screenshot and split_seed).
_STEP_FIELDS: tuple[str, ...] = (
    "step_id",
    "task_id",
    "site",
    "intent",
    "intent_template_id",
    "step_index",
    "num_steps",
    "image_width",
    "image_height",
    "previous_guides",
    "guide",
    "guide_source",
    "action",
    "target_bbox",
    "audit_status",
    "disputed",
    "stale",
    "coordinate_restored",
    "original_element_id",
    "unseen_template",
    "split",
    "url",
    "candidates",
)


def bundled_raw_dir() -> Path:
    """The committed sample corpus (raw format, :mod:`mag_dataset.raw`): ``mag_dataset/data/raw/``."""
    return Path(__file__).resolve().parent / "data" / "raw"


def bundled_dataset(cache_dir: str | os.PathLike | None = None) -> Path:
    """Build the bundled sample corpus once and return its Hub-ready folder.

    The folder is ``<cache_dir>/webmre-sample-<fingerprint[:16]>``; the fingerprint covers
    every raw file and the builder version, so a changed corpus or builder gets a fresh
    folder. Concurrent callers are safe and build once: the build holds a lock file beside
    the folder, and a caller that waited for it finds the folder built.

    Args:
        cache_dir: where built folders live; default :func:`mag_dataset.cache.default_cache_dir`.

    Returns:
        The built folder, loadable with ``datasets.load_dataset(folder, "som")``.
    """
    from mag_dataset.builder import build_dataset, raw_fingerprint

    raw = bundled_raw_dir()
    if not raw.is_dir() or not any(p.is_dir() for p in raw.iterdir()):
        raise FileNotFoundError(f"the bundled raw corpus is missing or empty: {raw}")
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out = root / f"webmre-sample-{raw_fingerprint(raw)[:16]}"
    if _current_build(out):
        return out
    import filelock

    root.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(out) + ".lock"):  # a second caller waits instead of building it again
        if _current_build(out):
            return out
        return build_dataset(raw, out, progress=False, overwrite=out.exists())


def _current_build(out: Path) -> bool:
    """A cached build folder the current builder would write the same: its build info has every
    field added since its build version (:data:`~mag_dataset.builder.layout.LATE_BUILD_INFO_FIELDS`)."""
    from mag_dataset.builder.layout import BUILD_INFO_FILE, LATE_BUILD_INFO_FIELDS

    try:
        info = json.loads((out / BUILD_INFO_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and all(k in info for k in LATE_BUILD_INFO_FIELDS)


def is_local(source: str | os.PathLike) -> bool:
    """A path (existing, or written like one) rather than a Hub repo id ``owner/name``."""
    if isinstance(source, os.PathLike):
        return True
    s = str(source)
    return os.path.exists(os.path.expanduser(s)) or s.startswith((".", "/", "~")) or s.count("/") > 1 or "\\" in s


def load_view(source: str | os.PathLike, view: View | str, split: str) -> "datasets.Dataset":
    """Load one view and split of a built dataset with ``datasets.load_dataset``.

    Args:
        source: a built folder (local path) or a Hub dataset repo id such as ``mag/webmre``.
        view: ``som`` or ``coord`` (the config name).
        split: ``train`` or ``test``.

    Returns:
        The ``datasets.Dataset``; ``screenshot`` decodes to a PIL image.

    Raises:
        FileNotFoundError: a local folder that does not exist.
        ValueError: an unknown view or split.
    """
    import datasets

    view = View(view)
    if is_local(source):
        path = Path(source).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"dataset folder not found: {path}")
        source = str(path.resolve())
    return datasets.load_dataset(os.fspath(source), view.value, split=split)


def row_to_step(row: dict[str, Any]) -> Step:
    """Convert a dataset row (or gold record) to a :class:`~mag_dataset.schema.Step`.

    The screenshot and any extra column are ignored.

    Raises:
        SchemaError: a row that violates the schema, naming the field.
    """
    try:
        kwargs = {k: row[k] for k in _STEP_FIELDS if k in row}
        action = dict(kwargs.pop("action"))
        kwargs["action"] = Action.from_dict(action)
        kwargs["candidates"] = tuple(Candidate.from_dict(c) for c in kwargs.get("candidates") or ())
        kwargs["previous_guides"] = tuple(kwargs.get("previous_guides") or ())
        return Step(**kwargs)
    except KeyError as e:
        raise SchemaError(f"row {row.get('step_id')!r} lacks field {e.args[0]!r}") from None
    except TypeError as e:
        raise SchemaError(f"row {row.get('step_id')!r}: {e}") from None


def step_from_record(d: dict[str, Any]) -> Step:
    """Rebuild a Step from a gold record made by :func:`gold_records`."""
    return row_to_step(d)


def _step_record(step: Step) -> dict[str, Any]:
    """A Step as the JSON-able gold record a dataset row gives (enums as values, tuples as lists)."""
    rec: dict[str, Any] = {}
    for k in _STEP_FIELDS:
        v = getattr(step, k)
        if k == "action":
            v = v.to_dict()
        elif k == "candidates":
            v = [c.to_dict() for c in v]
        elif isinstance(v, tuple):
            v = list(v)
        elif isinstance(v, str):  # the enums are str subclasses
            v = str(v.value) if hasattr(v, "value") else v
        rec[k] = v
    return rec


def _without_images(ds: "datasets.Dataset") -> "datasets.Dataset":
    drop = [c for c in ("screenshot",) if c in ds.column_names]
    return ds.remove_columns(drop) if drop else ds


def gold_records(ds: "GoldSteps | datasets.Dataset | Iterable[dict[str, Any]]") -> list[dict[str, Any]]:
    """JSON-able gold records without images, one per row, in row order.

    These are what the ``evaluate`` module and the Inspect task take as references;
    :func:`step_from_record` turns one back into a Step and :func:`gold_from_records` all
    of them back into the gold. Given a :class:`GoldSteps` of the coord view, each record
    also carries its step's som menu (``menu``: candidate dicts), so the consistency check
    travels with the record; records of a bare coord dataset have none, and scoring them
    under J or JG is refused rather than reported as n/a.
    """
    from mag_dataset.scoring.gold import GoldSteps

    if isinstance(ds, GoldSteps):
        records = [_step_record(s) for s in ds.steps]
        if ds.menus is not None:
            for r in records:
                r["menu"] = [c.to_dict() for c in ds.menus[r["step_id"]]]
        return records
    rows = _without_images(ds).to_list() if hasattr(ds, "remove_columns") else ds
    return [{k: r[k] for k in _STEP_FIELDS if k in r} for r in rows]


def gold_from_records(view: View | str, records: Iterable[dict[str, Any]]) -> "GoldSteps":
    """The gold of ``view`` from its gold records (:func:`gold_records`).

    Raises:
        SchemaError: a record that violates the schema.
        ValueError: coord records without their ``menu`` (make them from
            :func:`load_gold`'s gold: ``gold_records(load_gold(...))``).
    """
    from mag_dataset.scoring.gold import GoldSteps

    view = View(view)
    records = list(records)
    steps = tuple(step_from_record(r) for r in records)
    if view is View.SOM:
        return GoldSteps(view, steps)
    lacking = sum(1 for r in records if r.get("menu") is None)
    if lacking:
        raise ValueError(
            f"{lacking} of {len(records)} coord gold record(s) carry no som menu ('menu'): make the records with "
            "mag_dataset.dataset.gold_records(load_gold(source, 'coord', split))"
        )
    menus = {s.step_id: tuple(Candidate.from_dict(c) for c in r["menu"]) for s, r in zip(steps, records)}
    return GoldSteps(view, steps, menus)


def load_gold(source: str | os.PathLike, view: View | str, split: str = "test") -> "GoldSteps":
    """The gold of one view and split: what every scoring call takes.

    In the coord view the som steps of the split are loaded too, for their menus (the
    coord rows carry none, and guide-action consistency needs them).

    Args:
        source: a built folder, a Hub repo id (see :func:`load_view`), or ``bundled`` for
            the bundled sample corpus.
        view: ``som`` or ``coord``.
        split: ``train`` or ``test``.

    Raises:
        FileNotFoundError: a local folder that does not exist.
        SchemaError: a row that violates the schema.
        ValueError: an unknown view or split; a coord step without a som row.
    """
    from mag_dataset.scoring.gold import GoldSteps

    view = View(view)
    if str(source) == "bundled":
        source = bundled_dataset()
    steps = {view: load_steps(source, view, split)}
    if view is View.COORD:
        steps[View.SOM] = load_steps(source, View.SOM, split)
    return GoldSteps.from_views(view, steps)


def load_steps(source: str | os.PathLike, view: View | str, split: str = "test") -> list[Step]:
    """Steps of one view and split, without images.

    Args:
        source: a built folder or a Hub repo id (see :func:`load_view`).
        view: ``som`` or ``coord``.
        split: ``train`` or ``test``.
    """
    ds = _without_images(load_view(source, view, split))
    return [row_to_step(r) for r in ds.to_list()]
