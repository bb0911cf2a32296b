"""Map a benchmark :class:`~mag_dataset.schema.Action` onto a BrowserGym action string.

Usage::

    from mag_dataset.live.execute import to_browsergym_action
    ob = observe(obs)
    act = Action(type="click", coordinate=(120.0, 200.5))
    env.step(to_browsergym_action(act, View.COORD, ob.conv))   # mouse_click at the page point
    act = Action(type="type", element_id="15", text="Cheree")
    env.step(to_browsergym_action(act, View.SOM, ob.conv))     # fill('15', 'Cheree')

In the som view a targeted action runs on its element id, which is the BrowserGym bid. In
the coord view it runs at its coordinate: screenshot px are converted to page px with the
observation's :class:`~mag_dataset.live.observe.Conversion`, then handed to BrowserGym's
``mouse_*`` functions in the pixels they expect (they divide by ``_bgym_scale_factor``
themselves). ``type`` in the coord view clicks the point, selects all and types;
``select`` in the coord view clicks the drop-down, then picks the option by keyboard.
"""

from __future__ import annotations

from mag_dataset.actions import ActionType, View
from mag_dataset.live.observe import Conversion
from mag_dataset.schema import Action

#: Pause between moving onto a point and clicking it, in ms.
HOVER_WAIT_MS = 100

#: Wheel distance of one ``scroll`` action, in BrowserGym pixels.
SCROLL_STEP = 150.0


class ExecutionError(ValueError):
    """The action cannot be executed in this view (e.g. a coord-view click without a coordinate)."""


def _q(value: object) -> str:
    return repr(str(value))


def _xy(action: Action, conv: Conversion) -> tuple[float, float]:
    if action.coordinate is None:
        raise ExecutionError(f"{action.type.value} needs a coordinate in the coord view")
    x, y = conv.to_browsergym(action.coordinate)
    return round(x, 2), round(y, 2)


def to_browsergym_action(action: Action, view: View | str, conv: Conversion | None = None) -> str:
    """Return the BrowserGym high-level action string that performs ``action``.

    Args:
        action: the action (element ids are BrowserGym bids; coordinates in screenshot px).
        view: ``som`` acts on ``element_id``; ``coord`` acts on ``coordinate``.
        conv: the observation's screenshot->page conversion (needed for coordinates and scroll).

    Returns:
        One BrowserGym action call, e.g. ``"click('14')"`` or ``"mouse_click(180.0, 96.0)"``.

    Raises:
        ExecutionError: when the action lacks what the view needs.
    """
    view = View(view)
    t = action.type
    if t in (ActionType.CLICK, ActionType.TYPE, ActionType.SELECT, ActionType.HOVER):
        if view is View.SOM:
            if action.element_id is None:
                raise ExecutionError(f"{t.value} needs an element id in the som view")
            bid = _q(action.element_id)
            if t is ActionType.CLICK:
                return f"click({bid})"
            if t is ActionType.HOVER:
                return f"hover({bid})"
            if t is ActionType.TYPE:
                return f"fill({bid}, {_q(action.text)})"
            return f"select_option({bid}, {_q(action.value)})"
        if conv is None:
            raise ExecutionError("a coordinate action needs the observation's conversion")
        x, y = _xy(action, conv)
        if t is ActionType.CLICK:
            # hover first: MiniWoB icons swap their image on :hover, and a layout change between
            # mousedown and mouseup loses the click
            return f"mouse_move({x}, {y})\nnoop({HOVER_WAIT_MS})\nmouse_click({x}, {y})"
        if t is ActionType.HOVER:
            return f"mouse_move({x}, {y})"
        if t is ActionType.TYPE:
            # multiaction strings are not allowed by our action set, so one python body:
            return (f"mouse_click({x}, {y})\nkeyboard_press('ControlOrMeta+a')\n"
                    f"keyboard_type({_q(action.text)})")
        return f"mouse_click({x}, {y})\nkeyboard_type({_q(action.value)})\nkeyboard_press('Enter')"
    if t is ActionType.SCROLL:
        dy = {"up": -SCROLL_STEP, "down": SCROLL_STEP}.get(action.direction or "", 0.0)
        dx = {"left": -SCROLL_STEP, "right": SCROLL_STEP}.get(action.direction or "", 0.0)
        if conv is not None:  # wheel over the middle of the shown area (MiniWoB scrolls inner divs)
            cx = (conv.crop[0] + conv.crop[2]) / 2.0
            cy = (conv.crop[1] + conv.crop[3]) / 2.0
            return f"scroll_at({cx}, {cy}, {dx}, {dy})"
        return f"scroll({dx}, {dy})"
    if t is ActionType.PRESS:
        return f"keyboard_press({_q(action.key)})"
    if t is ActionType.GOTO:
        return f"goto({_q(action.url)})"
    if t is ActionType.GO_BACK:
        return "go_back()"
    if t is ActionType.GO_FORWARD:
        return "go_forward()"
    if t is ActionType.NEW_TAB:
        return "new_tab()"
    if t is ActionType.TAB_FOCUS:
        return f"tab_focus({int(action.value or 0)})"
    if t is ActionType.CLOSE_TAB:
        return "tab_close()"
    if t is ActionType.FINISH:
        return f"send_msg_to_user({_q(action.answer or 'done')})"
    raise ExecutionError(f"unsupported action type {t.value}")  # pragma: no cover
