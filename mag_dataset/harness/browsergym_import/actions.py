"""BrowserGym actions mapped onto the benchmark action space.

:func:`parse_action_calls` reads an action string (BrowserGym's Python calls, or AgentLab's
tool-call JSON) without running it; :func:`map_action` maps the one call of a step onto a
:class:`~mag_dataset.schema.Action` with its target on the step's
:class:`~mag_dataset.harness.browsergym_import.observation._View` (an element the menu lacks but the
page shows is added to it). An action with no equivalent raises
:class:`~mag_dataset.harness.browsergym_import.limits.ImportErrorForEpisode`: the importer skips the
whole episode rather than break its trajectory. It reads no observation itself.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from mag_dataset.harness.browsergym_import.limits import ImportErrorForEpisode
from mag_dataset.harness.browsergym_import.observation import _View
from mag_dataset.harness.import_common import MULTI_OPTION_SEPARATOR, scroll_direction
from mag_dataset.schema import Action, Candidate, box_center

#: What :func:`map_action` returns for a step: the action, its target and the target's box.
Mapped = tuple[Action, Candidate | None, tuple[float, float, float, float] | None]

#: BrowserGym functions that act on one element (the focused one for the keyboard's).
ELEMENT_FUNCTIONS = ("click", "dblclick", "focus", "check", "uncheck", "hover", "fill", "clear", "select_option",
                     "keyboard_type", "keyboard_insert_text")


def parse_action_calls(text: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """Parse a BrowserGym action string into ``(function, args, kwargs)`` calls.

    Raises:
        ImportErrorForEpisode: not a sequence of calls with literal arguments.
    """
    if text.lstrip().startswith(("{", "[")):
        return _tool_calls(text)
    try:
        tree = ast.parse(text.strip())
    except SyntaxError as e:
        raise ImportErrorForEpisode(f"action {text!r} is not valid Python: {e.msg}") from None
    calls = []
    for node in tree.body:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
            raise ImportErrorForEpisode(f"action {text!r} is not a sequence of function calls")
        try:
            args = [ast.literal_eval(a) for a in node.value.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords if k.arg}
        except ValueError:
            raise ImportErrorForEpisode(f"action {text!r} has non-literal arguments") from None
        calls.append((node.value.func.id, args, kwargs))
    return calls


def _tool_calls(text: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """AgentLab tool-call actions, stored as ``ToolCallAction.model_dump_json()``:
    ``{"id": ..., "function": {"name": "click", "arguments": {"bid": "12"}}}`` (arguments may
    be a JSON string, as OpenAI returns them), a bare ``{"name", "arguments"}``, or a list."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ImportErrorForEpisode(f"action {text[:200]!r} is neither a BrowserGym call nor tool-call JSON: {e}") from None
    calls = []
    for item in data if isinstance(data, list) else [data]:
        fn = item.get("function", item) if isinstance(item, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        arguments = fn.get("arguments", {}) if isinstance(fn, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except (json.JSONDecodeError, RecursionError):
                arguments = None
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,60}", name) or not isinstance(arguments, dict):
            raise ImportErrorForEpisode(f"tool-call action {text[:200]!r} has no function name and arguments object")
        calls.append((name, [], {str(k): v for k, v in arguments.items()}))
    return calls


def _arg(args: list[Any], kwargs: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def map_action(text: str, view: _View) -> Mapped | None:
    """Map a BrowserGym action string onto the benchmark action space.

    Returns:
        ``(action, target candidate, target box)``, or None for a ``noop`` (or an action
        that changes nothing: a zero scroll, a check of a box already checked).

    Raises:
        ImportErrorForEpisode: the action has no benchmark equivalent.
    """
    calls = [c for c in parse_action_calls(text) if c[0] != "noop"]
    if not calls:
        return None
    if len(calls) > 1:
        raise ImportErrorForEpisode(f"action {text!r} holds {len(calls)} actions in one step")
    fn, args, kw = calls[0]
    if fn in ELEMENT_FUNCTIONS:
        return _element_action(text, fn, args, kw, view)
    return _page_action(text, fn, args, kw, view)


def _target(view: _View, fn: str, bid: Any, atype: str, **extra: Any) -> Mapped:
    """The action on element ``bid`` at its box's centre; an element the menu lacks but the
    page shows joins the menu."""
    bid = str(bid)
    cand = next((c for c in view.candidates if c.id == bid), None)
    if cand is None:
        if view.missing:
            raise ImportErrorForEpisode(f"{view.missing}; {fn}({bid!r}) cannot be located")
        box = view.boxes.get(bid)
        if box is None:
            raise ImportErrorForEpisode(f"{fn}({bid!r}) acts on an element that is not visible on the screenshot")
        role, name = view.names.get(bid, ("", ""))
        cand = Candidate(id=bid, role=role or "generic", text=name, bbox=box)
        view.candidates.append(cand)
    cx, cy = box_center(cand.bbox)
    return Action(type=atype, element_id=bid, coordinate=(round(cx, 2), round(cy, 2)), **extra), cand, cand.bbox


def _element_action(text: str, fn: str, args: list[Any], kw: dict[str, Any], view: _View) -> Mapped | None:
    """An :data:`ELEMENT_FUNCTIONS` call."""
    if fn in ("keyboard_type", "keyboard_insert_text"):
        if not view.focused:
            raise ImportErrorForEpisode(f"action {text!r} types without a focused element")
        return _target(view, fn, view.focused, "type", text=str(_arg(args, kw, 0, "text", "")))
    bid = _arg(args, kw, 0, "bid")
    if fn in ("check", "uncheck") and view.checked.get(str(bid)) is (fn == "check"):
        return None  # the box is already in that state: Playwright's check() does nothing
    if fn == "hover":
        return _target(view, fn, bid, "hover")
    if fn == "fill":
        return _target(view, fn, bid, "type", text=str(_arg(args, kw, 1, "value", "")))
    if fn == "clear":
        return _target(view, fn, bid, "type", text="")
    if fn == "select_option":
        opts = _arg(args, kw, 1, "options")
        if isinstance(opts, (list, tuple)):
            if not opts:
                raise ImportErrorForEpisode(f"action {text!r} selects no option")
            # several options (a multiple <select>): one select action whose value lists them,
            # in the order given, joined by MULTI_OPTION_SEPARATOR
            opts = MULTI_OPTION_SEPARATOR.join(str(o) for o in opts)
        return _target(view, fn, bid, "select", value=str(opts))
    # click, dblclick; focus: what a user does to focus a field is click it; check/uncheck: click the box
    return _target(view, fn, bid, "click")


def _page_action(text: str, fn: str, args: list[Any], kw: dict[str, Any], view: _View) -> Mapped | None:
    """A call that acts on the page, the browser or a point rather than an element."""
    if fn in ("keyboard_press", "press"):
        key = _arg(args, kw, 0 if fn == "keyboard_press" else 1, "key" if fn == "keyboard_press" else "key_comb")
        return Action(type="press", key=str(key)), None, None
    if fn in ("scroll", "scroll_at"):
        dx, dy = (float(_arg(args, kw, 0, "delta_x", 0)), float(_arg(args, kw, 1, "delta_y", 0))) if fn == "scroll" else (
            float(_arg(args, kw, 2, "dx", 0)), float(_arg(args, kw, 3, "dy", 0)))
        direction = scroll_direction(dx, dy)
        return (Action(type="scroll", direction=direction), None, None) if direction else None
    if fn == "goto":
        return Action(type="goto", url=str(_arg(args, kw, 0, "url"))), None, None
    if fn in ("go_back", "go_forward", "new_tab"):
        return Action(type=fn), None, None
    if fn == "tab_focus":
        return Action(type="tab_focus", value=str(int(_arg(args, kw, 0, "index", 0)))), None, None
    if fn == "tab_close":
        return Action(type="close_tab"), None, None
    if fn in ("send_msg_to_user", "report_infeasible"):
        answer = _arg(args, kw, 0, "text" if fn == "send_msg_to_user" else "reason", "")
        return Action(type="finish", answer=str(answer) or None), None, None
    if fn in ("mouse_click", "mouse_dblclick", "mouse_move"):
        x, y = float(_arg(args, kw, 0, "x")), float(_arg(args, kw, 1, "y"))
        # BrowserGym's mouse actions take full-screenshot pixels; ours are cropped
        px, py = round(x - view.crop[0], 2), round(y - view.crop[1], 2)
        if not (0 <= px <= view.width and 0 <= py <= view.height):
            raise ImportErrorForEpisode(f"action {text!r} points outside the screenshot")
        atype = "hover" if fn == "mouse_move" else "click"
        return Action(type=atype, coordinate=(px, py)), None, (px, py, px, py)
    raise ImportErrorForEpisode(f"action {fn}() has no equivalent in the benchmark action space")
