"""The gold a scoring call takes whole: one view's steps of a split, with the som menus.

Why one object rather than a list of steps and a separate ``menus`` argument: the coord
view's rows carry no candidate menu, yet guide-action consistency (and the joint step
accuracy built on it) must know which element a predicted point hits, which only the som
row of the same step id says. While the menus travelled as an optional argument, every
caller re-joined them by hand, and one that forgot got a silent n/a: ``mag demo`` showed no
coord J/JG consistency while ``mag score`` computed it. A coord :class:`GoldSteps` cannot be
built without a menu for each of its steps, and the scorer refuses a bare step list where
the menus matter (the coord view under J and JG) with an error that says what to pass.

The dataset loader builds it (:func:`mag_dataset.dataset.load_gold`, or
:meth:`GoldSteps.from_views` from steps already loaded). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from mag_dataset.actions import Contract, View
from mag_dataset.schema import Candidate, Step

#: The contracts whose consistency check reads the element a coord point hits.
MENU_CONTRACTS: frozenset[Contract] = frozenset({Contract.J, Contract.JG})


@dataclass(frozen=True)
class GoldSteps:
    """The gold steps of one view and split, with the candidate menu of each step.

    Attributes:
        view: the view the steps belong to.
        steps: the gold steps, in dataset order (step ids unique).
        menus: coord view only: step id -> the som row's candidate menu, one per step
            (an empty menu is a real, empty menu). ``None`` in the som view, whose steps
            carry their own menu in ``candidates``.

    Raises:
        ValueError: duplicate step ids; menus given for the som view; a coord gold without
            menus, or lacking the menu of one of its steps.
    """

    view: View
    steps: tuple[Step, ...]
    menus: Mapping[str, tuple[Candidate, ...]] | None = None
    _by_id: Mapping[str, Step] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        view = View(self.view)
        steps = tuple(self.steps)
        by_id = {s.step_id: s for s in steps}
        if len(by_id) != len(steps):
            raise ValueError("the gold steps contain duplicate step ids")
        menus = None
        if view is View.SOM:
            if self.menus is not None:
                raise ValueError("som gold carries each step's menu in its candidates; pass no menus")
        else:
            if self.menus is None:
                raise ValueError(
                    "coord gold needs the som menu of each step (coord rows carry none): build it with "
                    "mag_dataset.dataset.load_gold or GoldSteps.from_views"
                )
            lacking = [sid for sid in by_id if sid not in self.menus]
            if lacking:
                shown = ", ".join(repr(s) for s in lacking[:5]) + (", ..." if len(lacking) > 5 else "")
                raise ValueError(f"{len(lacking)} coord gold step(s) have no som menu: {shown}")
            menus = {sid: tuple(self.menus[sid]) for sid in by_id}
        object.__setattr__(self, "view", view)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "menus", menus)
        object.__setattr__(self, "_by_id", by_id)  # plain dicts: the board pickles the gold to its scoring child

    @classmethod
    def from_views(cls, view: View | str, steps_by_view: Mapping[View | str, Sequence[Step]]) -> "GoldSteps":
        """The gold of ``view`` from both views' steps of one split (the two views share step ids).

        Args:
            view: the view to score.
            steps_by_view: view -> steps; the coord view needs the som steps too (their menus).

        Raises:
            ValueError: the view's steps, or (coord) the som steps, are not given; a coord step
                with no som step of the same id.
        """
        view = View(view)
        by_view = {View(v): s for v, s in steps_by_view.items()}
        if view not in by_view:
            raise ValueError(f"no {view.value} steps given")
        if view is View.SOM:
            return cls(view, tuple(by_view[view]))
        if View.SOM not in by_view:
            raise ValueError("coord gold needs the som steps of the same split too: their menus")
        return cls(view, tuple(by_view[view]), {s.step_id: s.candidates for s in by_view[View.SOM]})

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def step(self, step_id: str) -> Step:
        """The gold step of ``step_id`` (KeyError when the split has none)."""
        return self._by_id[step_id]

    def __contains__(self, step_id: object) -> bool:
        return step_id in self._by_id

    @property
    def step_ids(self) -> list[str]:
        """The step ids, in dataset order."""
        return [s.step_id for s in self.steps]

    def menu(self, step_id: str) -> tuple[Candidate, ...]:
        """The step's candidate menu: its own in the som view, the som row's in the coord view."""
        if self.menus is None:
            return self._by_id[step_id].candidates
        return self.menus[step_id]

    def subset(self, step_ids: Collection[str]) -> "GoldSteps":
        """The gold restricted to ``step_ids`` (dataset order kept; unknown ids ignored)."""
        steps = tuple(s for s in self.steps if s.step_id in step_ids)
        menus = None if self.menus is None else {s.step_id: self.menus[s.step_id] for s in steps}
        return GoldSteps(self.view, steps, menus)


def menus_needed(view: View | str, contract: Contract | str) -> bool:
    """Whether scoring ``view`` under ``contract`` reads the som menus apart from the steps
    (the coord view under J and JG: which element a point hits)."""
    return View(view) is View.COORD and Contract(contract) in MENU_CONTRACTS


__all__ = ["GoldSteps", "MENU_CONTRACTS", "menus_needed"]
