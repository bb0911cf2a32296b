"""The output contract and its parser: the format gate of the scorer.

A model output passes the gate when it is exactly one JSON object in the contract's shape
(WebMRE, arXiv 2609.27353, "Protocol": OFCR is the share of outputs that pass):

- Surrounding whitespace is tolerated, and so is ONE enclosing Markdown fence (```` ``` ````
  or ```` ```json ````) around the object. Any other text before or after it fails.
- Contract A has exactly the key ``action``; G exactly ``guide``; J exactly ``action`` then
  ``guide``; JG exactly ``guide`` then ``action``. Order matters; a repeated key fails.
- ``guide`` is a non-empty string; no string may hold a lone surrogate (``"\ud800"``).
- ``action`` is an object with ``type`` (one of :data:`~mag_dataset.actions.ACTION_SPACE`)
  and exactly the arguments of that type: required ones must be present, optional ones may
  be, nothing else. Arguments are strings; ``scroll.direction`` is one of its choices.
- In the som view a targeted action names ``element``: a non-empty string, or an integer,
  which is compared as its decimal string. In the coord view it gives ``coordinate``:
  ``[x, y]``, two finite numbers (not booleans) with ``|v| <= MAX_COORDINATE``.
- Outputs longer than :data:`MAX_OUTPUT_CHARS` fail without being parsed; so do JSON
  constants ``NaN``/``Infinity`` and numbers that overflow.

:func:`parse_output` never raises: every failure is a :class:`Parsed` with ``ok=False`` and
a one-line ``reason``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, GROUNDING_KEY, ActionType, Contract, View
from mag_dataset.schema import Action, SchemaError

#: Longest output the gate parses (characters). A guide is one sentence; anything this long
#: is a runaway generation and fails the gate without being parsed.
MAX_OUTPUT_CHARS = 16_384

#: Largest absolute coordinate accepted (screenshot pixels); beyond it the output fails.
MAX_COORDINATE = 100_000.0

_FENCE = re.compile(r"\A```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.DOTALL)


@dataclass(frozen=True)
class Parsed:
    """Result of :func:`parse_output`.

    Attributes:
        ok: the output passed the format gate.
        reason: why it failed (None when ok).
        action: the predicted action (contracts with an ``action`` key), else None. In the
            som view it carries ``element_id``; in the coord view ``coordinate``.
        guide: the predicted guide, stripped of surrounding whitespace (contracts with a
            ``guide`` key), else None.
        kind: the failure's class in :data:`FORMAT_CLASSES` (None when ok).
    """

    ok: bool
    reason: str | None = None
    action: Action | None = None
    guide: str | None = None
    kind: str | None = None


#: Classes of format failure (the error taxonomy's ``format:<class>``): the output is not
#: JSON, has text around the object, has missing/unexpected/repeated keys, has the keys in
#: the wrong order, has a bad value or argument, names an unknown action type, is too long
#: to parse, or is missing altogether.
FORMAT_CLASSES: tuple[str, ...] = (
    "not_json",
    "extra_text",
    "wrong_keys",
    "key_order",
    "bad_argument",
    "unknown_action_type",
    "too_long",
    "missing",
)


class _GateError(Exception):
    def __init__(self, reason: str, kind: str = "bad_argument") -> None:
        super().__init__(reason)
        self.kind = kind


def _fail(reason: str, kind: str) -> Parsed:
    return Parsed(ok=False, reason=reason, kind=kind)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise _GateError(f"repeated key {k!r}", "wrong_keys")
        seen[k] = v
    return seen


def _bad_constant(name: str) -> Any:
    raise _GateError(f"JSON constant {name} is not allowed", "not_json")


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise _GateError(f"number {text[:40]} overflows", "not_json")
    return v


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_bad_constant, parse_float=_float)


def _unfence(text: str) -> str:
    if text.startswith("```"):
        m = _FENCE.match(text)
        if m is None:
            raise _GateError("unterminated or malformed code fence", "extra_text")
        if m.group(1) and m.group(1).lower() != "json":
            raise _GateError(f"code fence language must be json, got {m.group(1)[:20]!r}", "extra_text")
        inner = m.group(2)
        if "```" in inner:
            raise _GateError("more than one code fence", "extra_text")
        return inner.strip()
    return text


def _valid_unicode(s: str, name: str) -> str:
    # JSON escapes can encode lone surrogates ("\ud800"), which are not text: reject them
    # here so nothing downstream (hashing, writing reports) ever meets one
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise _GateError(f"{name} is not valid Unicode (lone surrogate)") from None
    return s


def _element(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _GateError(f"element must be a string or an integer, got {type(value).__name__}")
    s = _valid_unicode(str(value), "element")
    if not s.strip():
        raise _GateError("element is empty")
    return s


def _coordinate(value: Any) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise _GateError("coordinate must be a list [x, y] of two numbers")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _GateError(f"coordinate must hold numbers, got {type(v).__name__}")
        try:
            f = float(v)
        except OverflowError:
            raise _GateError("coordinate out of range") from None
        if not math.isfinite(f):
            raise _GateError("coordinate must be finite")
        if abs(f) > MAX_COORDINATE:
            raise _GateError("coordinate out of range")
        out.append(f)
    return out[0], out[1]


def _action(obj: Any, view: View) -> Action:
    if not isinstance(obj, dict):
        raise _GateError(f"action must be an object, got {_json_type(obj)}")
    t = obj.get("type")
    if not isinstance(t, str):
        raise _GateError("action.type is missing or not a string")
    try:
        atype = ActionType(t)
    except ValueError:
        raise _GateError(f"unknown action type {t[:40]!r}", "unknown_action_type") from None
    spec = ACTION_SPACE[atype]
    allowed = spec.allowed_keys(view)
    extra = [k for k in obj if k not in allowed]
    if extra:
        # the key is the model's text: escape lone surrogates so the reason stays writable
        name = extra[0][:40].encode("utf-8", "backslashreplace").decode("utf-8")
        raise _GateError(f"action.{name} is not an argument of {atype.value} in the {view.value} view")
    kwargs: dict[str, Any] = {"type": atype}
    if spec.targeted:
        gkey = GROUNDING_KEY[view]
        if gkey not in obj:
            raise _GateError(f"{atype.value} needs action.{gkey}")
        if view is View.SOM:
            kwargs["element_id"] = _element(obj[gkey])
        else:
            kwargs["coordinate"] = _coordinate(obj[gkey])
    for arg in spec.args:
        if arg.name not in obj:
            if arg.required:
                raise _GateError(f"{atype.value} needs action.{arg.name}")
            continue
        v = obj[arg.name]
        if not isinstance(v, str):
            raise _GateError(f"action.{arg.name} must be a string, got {_json_type(v)}")
        if arg.choices is not None and v not in arg.choices:
            raise _GateError(f"action.{arg.name} must be one of {', '.join(arg.choices)}")
        kwargs[arg.name] = _valid_unicode(v, f"action.{arg.name}")
    try:
        return Action(**kwargs)
    except SchemaError as e:  # defensive: the checks above mirror the schema
        raise _GateError(str(e)) from None


def _json_type(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number"
    )


def parse_output(text: Any, view: View | str, contract: Contract | str) -> Parsed:
    """Parse a raw model output under a contract and view; never raises.

    Args:
        text: the raw model output (anything that is not a ``str`` fails the gate).
        view: ``som`` or ``coord``.
        contract: ``A``, ``G``, ``J`` or ``JG``.

    Returns:
        ``Parsed(ok=True, action=..., guide=...)``, or ``Parsed(ok=False, reason=...)``.

    Raises:
        ValueError: only for an unknown ``view`` or ``contract`` (a caller's bug, not a
            model output).
    """
    view, contract = View(view), Contract(contract)
    try:
        return _parse(text, view, contract)
    except _GateError as e:
        return _fail(str(e), e.kind)
    except RecursionError:
        return _fail("JSON nested too deeply", "not_json")
    except Exception as e:  # the gate must never take the scorer down
        return _fail(f"unparseable output ({type(e).__name__})", "not_json")


def _parse(text: Any, view: View, contract: Contract) -> Parsed:
    if not isinstance(text, str):
        return _fail(f"output must be a string, got {type(text).__name__}", "not_json")
    if len(text) > MAX_OUTPUT_CHARS:
        return _fail(f"output longer than {MAX_OUTPUT_CHARS} characters", "too_long")
    body = _unfence(text.strip())
    if not body.startswith("{"):
        if not body:
            return _fail("empty output", "not_json")
        # prose before an object ("Sure! {...}") is extra text; no object at all is not JSON
        return _fail("output does not start with a JSON object", "extra_text" if "{" in body else "not_json")
    try:
        obj, end = _DECODER.raw_decode(body)
    except json.JSONDecodeError as e:
        return _fail(f"invalid JSON: {e.msg} at character {e.pos}", "not_json")
    except ValueError as e:  # e.g. an integer with too many digits
        return _fail(f"invalid JSON: {str(e)[:80]}", "not_json")
    if body[end:].strip():
        return _fail("text after the JSON object", "extra_text")
    if not isinstance(obj, dict):  # pragma: no cover - body starts with "{"
        return _fail("output is not a JSON object", "not_json")
    keys = tuple(obj)
    want = CONTRACT_KEYS[contract]
    if keys != want:
        missing = [k for k in want if k not in obj]
        extra = [k for k in keys if k not in want]
        if extra:
            return _fail(f"unexpected key {extra[0][:40]!r} for contract {contract.value}", "wrong_keys")
        if missing:
            return _fail(f"missing key {missing[0]!r} for contract {contract.value}", "wrong_keys")
        return _fail(f"keys must be in the order {', '.join(want)} for contract {contract.value}", "key_order")
    guide = None
    if "guide" in obj:
        g = obj["guide"]
        if not isinstance(g, str):
            return _fail(f"guide must be a string, got {_json_type(g)}", "bad_argument")
        guide = _valid_unicode(g, "guide").strip()
        if not guide:
            return _fail("guide is empty", "bad_argument")
    action = _action(obj["action"], view) if "action" in obj else None
    return Parsed(ok=True, action=action, guide=guide)


__all__ = ["FORMAT_CLASSES", "MAX_COORDINATE", "MAX_OUTPUT_CHARS", "Parsed", "parse_output"]
