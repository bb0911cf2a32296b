"""The action space: the single source of truth for prompts, parser, scorer and recorder.

Every action type is described once, in :data:`ACTION_SPACE`. The prompt builder renders
the action list from these specs, the output parser validates a model's action against
them, the scorer decides which argument to compare from them, and the live recorder and
executor map them onto BrowserGym calls. Nothing else in the package may list action
types or their arguments.

References:
    MAG (arXiv 2607.10079) and WebMRE (arXiv 2609.27353) use the WebArena action space
    (click, type, select, hover, scroll, press, goto, go_back, go_forward, new_tab,
    tab_focus, close_tab) plus a terminating ``finish`` that may carry an answer.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ActionType(str, enum.Enum):
    """The thirteen action types of the benchmark."""

    CLICK = "click"
    TYPE = "type"
    SELECT = "select"
    HOVER = "hover"
    SCROLL = "scroll"
    PRESS = "press"
    GOTO = "goto"
    GO_BACK = "go_back"
    GO_FORWARD = "go_forward"
    NEW_TAB = "new_tab"
    TAB_FOCUS = "tab_focus"
    CLOSE_TAB = "close_tab"
    FINISH = "finish"

    def __str__(self) -> str:  # so f-strings and json show "click", not "ActionType.CLICK"
        return self.value


class View(str, enum.Enum):
    """Grounding view: Set-of-Mark element ids, or raw pixel coordinates."""

    SOM = "som"
    COORD = "coord"

    def __str__(self) -> str:
        return self.value


class Contract(str, enum.Enum):
    """Output contract: which keys the model must write, in which order."""

    A = "A"
    G = "G"
    J = "J"
    JG = "JG"

    def __str__(self) -> str:
        return self.value


#: Required output keys per contract, in their required order.
CONTRACT_KEYS: dict[Contract, tuple[str, ...]] = {
    Contract.A: ("action",),
    Contract.G: ("guide",),
    Contract.J: ("action", "guide"),
    Contract.JG: ("guide", "action"),
}

#: Model-facing grounding key per view.
GROUNDING_KEY: dict[View, str] = {View.SOM: "element", View.COORD: "coordinate"}

SCROLL_DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")


@dataclass(frozen=True)
class ArgSpec:
    """One non-target argument of an action type.

    Attributes:
        name: key in the model's action object and field of :class:`mag_dataset.schema.Action`.
        description: one line shown in the prompt.
        required: whether a prediction must carry it.
        scored: whether the scorer's step-action accuracy compares it.
        choices: closed set of allowed values, if any.
    """

    name: str
    description: str
    required: bool = True
    scored: bool = True
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ActionSpec:
    """Definition of one action type.

    Attributes:
        type: the action type.
        description: one line shown in the prompt.
        targeted: whether the action acts on a page element (an element id in the som
            view, a point in the coord view).
        args: the other arguments, in the order they are shown.
    """

    type: ActionType
    description: str
    targeted: bool
    args: tuple[ArgSpec, ...] = ()

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args)

    def allowed_keys(self, view: View) -> frozenset[str]:
        """Keys an action object of this type may carry in ``view``."""
        keys = {"type", *self.arg_names}
        if self.targeted:
            keys.add(GROUNDING_KEY[view])
        return frozenset(keys)


ACTION_SPACE: dict[ActionType, ActionSpec] = {
    ActionType.CLICK: ActionSpec(ActionType.CLICK, "Click an element.", targeted=True),
    ActionType.TYPE: ActionSpec(
        ActionType.TYPE,
        "Type text into an input element (replacing its content).",
        targeted=True,
        args=(ArgSpec("text", "the text to type"),),
    ),
    ActionType.SELECT: ActionSpec(
        ActionType.SELECT,
        "Choose an option of a drop-down (select) element.",
        targeted=True,
        args=(ArgSpec("value", "the visible text of the option to choose"),),
    ),
    ActionType.HOVER: ActionSpec(ActionType.HOVER, "Move the mouse over an element.", targeted=True),
    ActionType.SCROLL: ActionSpec(
        ActionType.SCROLL,
        "Scroll the page.",
        targeted=False,
        args=(ArgSpec("direction", "one of up, down, left, right", choices=SCROLL_DIRECTIONS),),
    ),
    ActionType.PRESS: ActionSpec(
        ActionType.PRESS,
        "Press a key or key combination.",
        targeted=False,
        args=(ArgSpec("key", "the key, e.g. Enter or Control+a"),),
    ),
    ActionType.GOTO: ActionSpec(
        ActionType.GOTO, "Open a URL in the current tab.", targeted=False, args=(ArgSpec("url", "the URL"),)
    ),
    ActionType.GO_BACK: ActionSpec(ActionType.GO_BACK, "Go back to the previous page.", targeted=False),
    ActionType.GO_FORWARD: ActionSpec(ActionType.GO_FORWARD, "Go forward to the next page.", targeted=False),
    ActionType.NEW_TAB: ActionSpec(ActionType.NEW_TAB, "Open a new empty tab.", targeted=False),
    ActionType.TAB_FOCUS: ActionSpec(
        ActionType.TAB_FOCUS,
        "Switch to another tab.",
        targeted=False,
        args=(ArgSpec("value", "the index of the tab, counting from 0"),),
    ),
    ActionType.CLOSE_TAB: ActionSpec(ActionType.CLOSE_TAB, "Close the current tab.", targeted=False),
    ActionType.FINISH: ActionSpec(
        ActionType.FINISH,
        "Declare the task complete, optionally with an answer.",
        targeted=False,
        args=(ArgSpec("answer", "the answer, if the task asks for one", required=False, scored=False),),
    ),
}

#: Every argument field an :class:`~mag_dataset.schema.Action` can hold, besides type and grounding.
ARG_FIELDS: tuple[str, ...] = ("text", "value", "direction", "key", "url", "answer")

assert set(ACTION_SPACE) == set(ActionType), "every action type needs a spec"
assert all(a.name in ARG_FIELDS for s in ACTION_SPACE.values() for a in s.args)


def spec(action_type: ActionType | str) -> ActionSpec:
    """Return the spec of an action type given as enum or string.

    Raises:
        ValueError: for an unknown action type.
    """
    return ACTION_SPACE[ActionType(action_type)]
