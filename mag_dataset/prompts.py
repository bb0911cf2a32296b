"""Locked prompts for the four output contracts in the two grounding views.

Every condition gets the same inputs: the screenshot, the task intent, the guides of the
previous steps and, in the Set-of-Mark view, the candidate menu. Only the required output
keys, their order and the grounding key vary (WebMRE, arXiv 2609.27353, "Protocol": four
output contracts on the same inputs with locked prompts; MAG, arXiv 2607.10079, defines the
two grounding schemes). The action list in the prompt is rendered from
:data:`mag_dataset.actions.ACTION_SPACE`, the same table the parser and scorer read, so the
three cannot drift apart.

The message builders are used alike for training (with ``with_target=True`` the gold answer
is appended as the assistant turn) and for inference. Messages follow the transformers
multimodal chat format: ``content`` is a list of parts, and the screenshot is a
``{"type": "image"}`` part that the caller fills (e.g. ``{"type": "image", "image": pil}``).
"""

from __future__ import annotations

import json
from typing import Any

from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, GROUNDING_KEY, Contract, View
from mag_dataset.coords import PIXELS, CoordSpace, parse_coord_space
from mag_dataset.schema import Action, Box, Candidate, Step, box_center, point_in_box

#: Bumped whenever the wording of any template changes (snapshot tests pin the text).
PROMPT_VERSION = "1"

_VIEW_INTRO: dict[View, str] = {
    View.SOM: (
        "The screenshot is annotated with Set-of-Mark labels: every interactive element has a "
        "numbered box, and the candidate menu lists each label with the element's role and text."
    ),
    View.COORD: (
        "The screenshot is the page as a user sees it. Point at an element by giving a pixel "
        "coordinate [x, y] inside it, measured from the top-left corner of the screenshot."
    ),
}

_GROUNDING_HELP: dict[View, str] = {
    View.SOM: '"element": the label of the target element in the candidate menu, as a string (e.g. "12")',
    View.COORD: '"coordinate": [x, y], a point inside the target element, in screenshot pixels',
}

_KEY_HELP: dict[str, str] = {
    "action": '"action": the next action, an object with "type" and the arguments of that type',
    "guide": '"guide": one short sentence telling a user what to do next on this page',
}

_CONTRACT_TASK: dict[Contract, str] = {
    Contract.A: "Predict the next action.",
    Contract.G: "Write the guide for the next step.",
    Contract.J: "Predict the next action, then write the guide for it.",
    Contract.JG: "Write the guide for the next step, then predict the action it describes.",
}


def _space_words(space: CoordSpace) -> tuple[str, str]:
    """(how a point is measured, the unit phrase of the grounding help) for a non-pixel space."""
    if space.kind == "norm1000":
        return (
            "on a 0-1000 grid over the screenshot: x runs from 0 at the left edge to 1000 at the right "
            "edge, y from 0 at the top to 1000 at the bottom, whatever the screenshot's size",
            "on the 0-1000 grid",
        )
    if space.kind == "norm1":
        return (
            "as fractions of the screenshot's width and height: x runs from 0 at the left edge to 1 at the "
            "right edge, y from 0 at the top to 1 at the bottom",
            "as fractions between 0 and 1",
        )
    return (
        f"in pixels of the screenshot resized to {space.width} x {space.height}, measured from its "
        "top-left corner",
        f"in pixels of the {space.width} x {space.height} resized screenshot",
    )


def _coord_intro(space: CoordSpace) -> str:
    if space is PIXELS or space.kind == "pixels":
        return _VIEW_INTRO[View.COORD]
    how, _ = _space_words(space)
    return f"The screenshot is the page as a user sees it. Point at an element by giving a coordinate [x, y] inside it, {how}."


def _coord_help(space: CoordSpace) -> str:
    if space.kind == "pixels":
        return _GROUNDING_HELP[View.COORD]
    return f'"coordinate": [x, y], a point inside the target element, {_space_words(space)[1]}'


def _example_point(space: CoordSpace) -> list[int | float]:
    if space.kind == "norm1000":
        return [500, 294]
    if space.kind == "norm1":
        return [0.5, 0.294]
    if space.kind == "resized":
        return [space.width // 2, round(space.height * 0.294)]  # type: ignore[operator]
    return [640, 212]


def _as_view(view: View | str) -> View:
    return View(view)


def _as_contract(contract: Contract | str) -> Contract:
    return Contract(contract)


def action_list(view: View | str) -> str:
    """The action list shown in the prompt, one line per action type, from ACTION_SPACE.

    Args:
        view: grounding view; decides the grounding key of targeted actions.

    Returns:
        Lines like ``- click {"type": "click", "element": ...}: Click an element.``.
    """
    view = _as_view(view)
    gkey = GROUNDING_KEY[view]
    lines = []
    for spec in ACTION_SPACE.values():
        parts = [f'"type": "{spec.type.value}"']
        if spec.targeted:
            parts.append(f'"{gkey}": ' + ('"<label>"' if view is View.SOM else "[x, y]"))
        for arg in spec.args:
            shown = f'"{arg.name}": "<{arg.description}>"'
            parts.append(shown if arg.required else shown + " (optional)")
        lines.append(f"- {spec.type.value}: {{{', '.join(parts)}}} — {spec.description}")
    return "\n".join(lines)


def output_example(view: View | str, contract: Contract | str, *, coord_space: CoordSpace | str | None = None) -> str:
    """A schematic example of the required output (keys in their required order)."""
    view, contract = _as_view(view), _as_contract(contract)
    space = parse_coord_space(coord_space)
    example_action = (
        {"type": "click", "element": "12"}
        if view is View.SOM
        else {"type": "click", "coordinate": _example_point(space)}
    )
    values = {"action": example_action, "guide": "Click 'Search' to run the search."}
    return json.dumps({k: values[k] for k in CONTRACT_KEYS[contract]}, ensure_ascii=False)


def system_prompt(view: View | str, contract: Contract | str, *, coord_space: CoordSpace | str | None = None) -> str:
    """The locked system prompt of one (view, contract) condition.

    Args:
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        coord_space: coord view: the space the model answers in (:mod:`mag_dataset.coords`;
            default screenshot pixels, whose prompt is the locked one).

    Returns:
        The system prompt text.
    """
    view, contract = _as_view(view), _as_contract(contract)
    space = parse_coord_space(coord_space)
    keys = CONTRACT_KEYS[contract]
    key_list = (
        f'exactly the key "{keys[0]}"'
        if len(keys) == 1
        else "exactly the keys " + " then ".join(f'"{k}"' for k in keys) + ", in this order,"
    )
    lines = [
        "You are a web guide agent. You see one step of a web task: a screenshot of the page, "
        "the task intent, and the guides already given for the previous steps.",
        _coord_intro(space) if view is View.COORD else _VIEW_INTRO[view],
        "",
        f"Task: {_CONTRACT_TASK[contract]}",
        "",
        "Available actions:",
        action_list(view),
        "",
        "Targeted actions give " + (_coord_help(space) if view is View.COORD else _GROUNDING_HELP[view]) + ".",
        "",
        "Output format:",
        f"Answer with one JSON object with {key_list} and nothing else:",
    ]
    lines += [f"- {_KEY_HELP[k]}" for k in keys]
    lines += [
        "Do not add other keys, comments or text before or after the object.",
        f"Example: {output_example(view, contract, coord_space=space)}",
    ]
    return "\n".join(lines)


def _menu_line(c: Candidate) -> str:
    text = " ".join(c.text.split())
    return f'[{c.id}] {c.role} "{text}"' if text else f"[{c.id}] {c.role}"


def user_text(step: Step, view: View | str) -> str:
    """The text part of the user turn: intent, previous guides and (som) the candidate menu."""
    view = _as_view(view)
    lines = [f"Task intent: {step.intent}", "", "Guides of the previous steps:"]
    if step.previous_guides:
        lines += [f"{i}. {g}" for i, g in enumerate(step.previous_guides, start=1)]
    else:
        lines.append("(none: this is the first step)")
    if view is View.SOM:
        lines += ["", "Candidate elements:"]
        lines += [_menu_line(c) for c in step.candidates] or ["(none)"]
    return "\n".join(lines)


def build_messages(
    step: Step,
    view: View | str,
    contract: Contract | str,
    *,
    with_target: bool = False,
    coord_space: CoordSpace | str | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for one step, in the transformers multimodal format.

    Args:
        step: the benchmark step (its image is not read; the caller fills the image part).
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        with_target: append the gold answer (:func:`render_target`) as the assistant turn,
            for supervised training.
        coord_space: coord view: the space the model answers in (prompt wording and the
            target's point); default screenshot pixels.

    Returns:
        ``[system, user]`` (plus ``assistant`` with ``with_target``); the user content is
        ``[{"type": "image"}, {"type": "text", "text": ...}]``.
    """
    view, contract = _as_view(view), _as_contract(contract)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": [{"type": "text", "text": system_prompt(view, contract, coord_space=coord_space)}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": user_text(step, view)}]},
    ]
    if with_target:
        messages.append(
            {"role": "assistant", "content": [
                {"type": "text", "text": render_target(step, view, contract, coord_space=coord_space)}
            ]}
        )
    return messages


def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else round(float(v), 1)


def _coordinate(point: tuple[float, float], box: Box | None) -> list[int | float]:
    """Render a point compactly (integers, or one decimal), keeping it inside ``box``."""
    short = (_num(point[0]), _num(point[1]))
    if box is not None and not point_in_box((float(short[0]), float(short[1])), box):
        return [float(point[0]), float(point[1])]
    return [short[0], short[1]]


def _coordinate_in(
    point: tuple[float, float], box: Box | None, space: CoordSpace, size: tuple[int, int]
) -> list[int | float]:
    """Render a pixel point in ``space``: compact (4 decimals) when it still converts back
    inside ``box``, else at full precision."""
    w, h = size
    full = space.from_pixels(point, w, h)
    short = (round(full[0], 4), round(full[1], 4))
    if box is not None and not point_in_box(space.to_pixels(short, w, h), box):
        short = full
    return [_num(v) if float(v).is_integer() else v for v in short]


def action_object(
    action: Action,
    view: View | str,
    target_bbox: Box | None = None,
    *,
    coord_space: CoordSpace | str | None = None,
    image_size: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """An :class:`Action` as the JSON object a model must write in ``view``.

    Keys: ``type``, the grounding key (targeted actions), then the arguments in
    ACTION_SPACE order; an optional argument is omitted when it is None. In the coord view
    the point is the gold coordinate, or the centre of ``target_bbox`` when the action has
    only an element id. With ``coord_space`` (and the screenshot's ``image_size``) the
    point is written in that space.

    Raises:
        ValueError: a targeted action lacks the grounding of ``view``.
    """
    view = _as_view(view)
    space = parse_coord_space(coord_space)
    if space.kind != "pixels" and image_size is None:
        raise ValueError("a coordinate space other than pixels needs the screenshot's image_size")
    spec = ACTION_SPACE[action.type]
    obj: dict[str, Any] = {"type": action.type.value}
    if spec.targeted:
        if view is View.SOM:
            if action.element_id is None:
                raise ValueError(f"{action.type.value} action has no element_id for the som view")
            obj["element"] = action.element_id
        else:
            point = action.coordinate
            if point is None and target_bbox is not None:
                point = box_center(target_bbox)
            if point is None:
                raise ValueError(f"{action.type.value} action has no coordinate for the coord view")
            obj["coordinate"] = (
                _coordinate(point, target_bbox)
                if space.kind == "pixels"
                else _coordinate_in(point, target_bbox, space, image_size)  # type: ignore[arg-type]
            )
    for arg in spec.args:
        v = getattr(action, arg.name)
        if v is not None:
            obj[arg.name] = v
    return obj


def render_output(action: dict[str, Any] | None, guide: str | None, contract: Contract | str) -> str:
    """Serialise an answer in a contract: one JSON object with the contract's keys in order.

    Args:
        action: the action object (see :func:`action_object`); required when the contract
            has an ``action`` key.
        guide: the guide sentence; required when the contract has a ``guide`` key.
        contract: the output contract.
    """
    contract = _as_contract(contract)
    values = {"action": action, "guide": guide}
    out = {}
    for k in CONTRACT_KEYS[contract]:
        if values[k] is None:
            raise ValueError(f"contract {contract.value} needs {k!r}")
        out[k] = values[k]
    return json.dumps(out, ensure_ascii=False)


def render_target(
    step: Step, view: View | str, contract: Contract | str, *, coord_space: CoordSpace | str | None = None
) -> str:
    """The gold answer of a step in a contract: what a perfect model writes.

    Args:
        step: the benchmark step.
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.
        coord_space: coord view: write the point in this space (default screenshot pixels).

    Returns:
        One JSON object, e.g. ``{"action": {"type": "click", "element": "12"}, "guide": "..."}``.
    """
    contract = _as_contract(contract)
    needs_action = "action" in CONTRACT_KEYS[contract]
    action = (
        action_object(step.action, view, step.target_bbox, coord_space=coord_space,
                      image_size=(step.image_width, step.image_height))
        if needs_action
        else None
    )
    return render_output(action, step.guide, contract)


__all__ = [
    "PROMPT_VERSION",
    "action_list",
    "action_object",
    "build_messages",
    "output_example",
    "render_output",
    "render_target",
    "system_prompt",
    "user_text",
]
