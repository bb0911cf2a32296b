"""The hidden gold a board scores against: :class:`Gold`, both views' steps of one split,
loaded from a built folder, a Hub dataset repo or the bundled sample corpus. Holds no
scoring and no storage; it never leaves the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mag_dataset.actions import View
from mag_dataset.schema import Step
from mag_dataset.scoring.gold import GoldSteps


@dataclass
class Gold:
    """The hidden gold: the scored split's steps of each view. Never leaves the server.

    Attributes:
        source: where it came from (folder, repo id, or a label for in-memory gold).
        split: the split.
        steps: view -> steps, in dataset order.
        public: the gold is the public bundled sample (anyone can score against it), not
            a hidden split; the main page says which.
    """

    source: str
    split: str
    steps: dict[View, list[Step]]
    public: bool = False
    _ids: dict[View, list[str]] = field(default_factory=dict, repr=False)
    _info: dict[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.steps = {View(v): list(s) for v, s in self.steps.items()}
        for view, steps in self.steps.items():
            if not steps:
                raise ValueError(f"gold {self.source} has no {view.value} {self.split} steps")
            self._ids[view] = [s.step_id for s in steps]
        for view in self.steps:  # a coord gold without som steps is refused here, not scored without menus
            self.for_view(view)

    def views(self) -> list[View]:
        return [v for v in View if v in self.steps]

    def step_ids(self, view: View) -> list[str]:
        return self._ids[View(view)]

    def for_view(self, view: View | str) -> GoldSteps:
        """What the scorer takes for ``view``: its steps and, in the coord view, the som
        menus (guide-action consistency reads which element a point hits)."""
        return GoldSteps.from_views(view, self.steps)  # built on each call: it follows the steps as they are now

    def describe(self) -> dict[str, Any]:
        """What the main page says about the gold: kind, split, sizes and fingerprints."""
        if self._info is None:
            from mag_dataset.scoring import dataset_fingerprint

            self._info = {
                "kind": "public sample" if self.public else "hidden",
                "source": self.source if not self.public else "bundled sample corpus",
                "split": self.split,
                "views": {
                    v.value: {"steps": len(st), "tasks": len({s.task_id for s in st}),
                              "fingerprint": dataset_fingerprint(st)}
                    for v, st in self.steps.items()
                },
            }
        return self._info

    @classmethod
    def load(cls, source: str | Path | None = None, split: str = "test", token: str | None = None) -> "Gold":
        """Load both views' ``split`` from a built folder, a Hub repo id, or the bundled corpus.

        Args:
            source: a built dataset folder or a Hub dataset repo id; ``None`` builds (once,
                cached) and uses the bundled sample corpus.
            split: the split to score against.
            token: Hub token for a private gold dataset.
        """
        from mag_dataset import dataset

        if source is None:
            folder: str | Path = dataset.bundled_dataset()
            label = f"bundled sample corpus ({folder})"
        elif dataset.is_local(source):  # a path (existing or written like one), not a repo id
            if not Path(source).expanduser().is_dir():
                raise FileNotFoundError(f"gold dataset folder not found: {source}")
            folder, label = Path(source).expanduser(), str(source)
        else:
            from huggingface_hub import snapshot_download

            folder = snapshot_download(repo_id=str(source), repo_type="dataset", token=token)
            label = str(source)
        steps = {view: dataset.load_steps(folder, view.value, split) for view in View}
        return cls(source=label, split=split, steps=steps, public=source is None)


__all__ = ["Gold"]
