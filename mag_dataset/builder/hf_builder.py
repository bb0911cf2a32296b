"""The ``datasets`` builder of one view: :class:`WebMREBuilder` (configs ``som`` and ``coord``).

Holds the HF declaration (features, splits, examples) over a prepared
:class:`~mag_dataset.builder.corpus.Corpus`, and the screenshot rendering of a chunk of rows
on a thread pool. It does not validate raw data (:mod:`mag_dataset.builder.corpus`) or lay
out the published folder (:mod:`mag_dataset.builder.write`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator

import datasets

from mag_dataset.actions import View
from mag_dataset.builder.corpus import Corpus, PreparedStep, prepare_corpus
from mag_dataset.builder.layout import BuildError
from mag_dataset.features import view_features
from mag_dataset.raw import is_delta

#: Steps whose screenshots the SoM renderer works on at once (bounds memory; order is kept).
RENDER_CHUNK = 64


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
    """The screenshots of ``steps`` in order; SoM rendering and screenshots rebuilt from
    differences (decode, draw, encode: Pillow releases the GIL) run on a thread pool, one
    thread per CPU."""
    work = [st for st in steps if is_delta(st.raw.screenshot) or (view is View.SOM and not st.raw.som_screenshot)]
    if len(work) < 2:
        return [st.screenshot(view) for st in steps]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(len(steps), os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda st: st.screenshot(view), steps))
