"""The dataset builder: raw episodes (format v2 or v1, :mod:`mag_dataset.raw`) → a Hub-ready folder.

:class:`WebMREBuilder` is a ``datasets.GeneratorBasedBuilder`` with the configs ``som`` and
``coord``; features, splits and examples are declared the HF way. ``datasets`` 5.x no
longer runs builder scripts from a Hub repository, so the builder is used
programmatically by :func:`build_dataset`, and what is published is its *output*::

    OUT/
      README.md            dataset card; its YAML ``configs:`` + ``dataset_info`` make
                           ``datasets.load_dataset(OUT, "som")`` work with no script
      build_info.json      provenance: raw fingerprint, split seed, counts, file list, and the
                           raw corpus's stage record (``corpus_stages``, from ``corpus.json``)
      checksums.sha256     sha256 of every other file (``sha256sum -c`` format)
      som/train-00000-of-00001.parquet   som/test-...
      coord/train-00000-of-00001.parquet coord/test-...

Guarantees:

* **Deterministic** — rows in (task_id, step_index) order, screenshots stored as the raw
  file's bytes (lossless WebP or PNG, no re-encoding); a step without a recorded Set-of-Mark
  image gets one rendered from the raw screenshot and its candidate boxes
  (:func:`mag_dataset.som.render_som`: pinned bitmap font, lossless WebP method 1,
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
steps whose intent template never occurs in train. A ``corpus.json`` that holds only the
stage record (no ``splits``) gets the default split. The stage record reaches
``build_info.json`` and one line of the card, never a row: :func:`raw_fingerprint` leaves it
out, so recording a stage changes neither the fingerprint nor a Parquet byte.

Modules of this package (``from mag_dataset.builder import X`` keeps working for every
public name):

* :mod:`~mag_dataset.builder.layout` — the built folder's file names, build format and
  version, :class:`BuildError`, the checksum manifest (:func:`verify_checksums`);
* :mod:`~mag_dataset.builder.splits` — the split rules: ``corpus.json`` written at record time,
  read and checked at build, or the default split;
* :mod:`~mag_dataset.builder.labels` — audit application and the point-only rule (pure);
* :mod:`~mag_dataset.builder.corpus` — :func:`prepare_corpus`: episodes read, validated and
  labelled into a :class:`Corpus` of :class:`PreparedStep` rows; :func:`raw_fingerprint`;
* :mod:`~mag_dataset.builder.hf_builder` — :class:`WebMREBuilder`, the ``datasets`` builder;
* :mod:`~mag_dataset.builder.write` — :func:`build_dataset`: the folder written atomically.

The card's text is :mod:`mag_dataset.card`; the raw format is :mod:`mag_dataset.raw`.

References:
    WebMRE (arXiv 2609.27353) §3: corpus unification, three-judge label audit, the SoM and
    coordinate views sharing tasks, splits, screenshots and guides.
    MAG (arXiv 2607.10079): the step format (screenshot, intent, previous guides → guide
    and grounded action).
"""

from __future__ import annotations

from mag_dataset.builder.layout import (
    BUILD_FORMAT,
    BUILD_INFO_FILE,
    BUILD_VERSION,
    CARD_FILE,
    CHECKSUM_FILE,
    MAX_SHARD_SIZE,
    BuildError,
    verify_checksums,
)
from mag_dataset.builder.splits import DEFAULT_SPLIT_SEED, TEST_FRACTION, CorpusSplits, read_splits
from mag_dataset.builder.labels import POINT_NOT_RESTORED, resolve_labels
from mag_dataset.builder.corpus import Corpus, PreparedStep, prepare_corpus, raw_fingerprint

# The two modules that import ``datasets`` (seconds, hundreds of MB) load on first use, so that
# ``mag_dataset.builder.splits`` and the other pure modules import light (the recorder writes splits).
_LAZY = {
    "RENDER_CHUNK": "mag_dataset.builder.hf_builder",
    "WebMREBuilder": "mag_dataset.builder.hf_builder",
    "WebMREConfig": "mag_dataset.builder.hf_builder",
    "build_dataset": "mag_dataset.builder.write",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

__all__ = [
    "BUILD_FORMAT",
    "BUILD_INFO_FILE",
    "BUILD_VERSION",
    "CARD_FILE",
    "CHECKSUM_FILE",
    "DEFAULT_SPLIT_SEED",
    "MAX_SHARD_SIZE",
    "POINT_NOT_RESTORED",
    "RENDER_CHUNK",
    "TEST_FRACTION",
    "BuildError",
    "Corpus",
    "CorpusSplits",
    "PreparedStep",
    "WebMREBuilder",
    "WebMREConfig",
    "build_dataset",
    "prepare_corpus",
    "raw_fingerprint",
    "read_splits",
    "resolve_labels",
    "verify_checksums",
]
