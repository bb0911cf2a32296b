"""One saved BrowserGym observation as the importer sees it: screenshot, Set-of-Mark image, menu.

:func:`process_observation` turns an observation into a :class:`_View`: with the DOM
snapshot through :func:`mag_dataset.live.observe.observe` (as the site recorder reads a live
page); without it (BrowserGym's default ``obs_preprocessor`` drops it) from BrowserGym's
element properties for the boxes and the accessibility tree (object or ``axtree_txt``) for
the names, cropped to MiniWoB++'s task area. It maps no action
(:mod:`~mag_dataset.harness.browsergym_import.actions`) and trusts its input: observations pass
:func:`~mag_dataset.harness.browsergym_import.limits.check_observation` first.
"""

from __future__ import annotations

import ast
import io
import re
from dataclasses import dataclass, field
from typing import Any

from mag_dataset.live.observe import MINIWOB_SCALE, grow_task_area
from mag_dataset.schema import Candidate


@dataclass
class _View:
    """What one step's observation gives the importer."""

    png: bytes
    som_png: bytes
    width: int
    height: int
    candidates: list[Candidate]
    crop: tuple[int, int, int, int]
    scale: float
    url: str
    focused: str | None
    boxes: dict[str, tuple[float, float, float, float]]  # every visible bid, screenshot px
    names: dict[str, tuple[str, str]]  # bid -> (role, text)
    missing: str = ""  # why no element can be located (observation keys the preprocessor dropped)
    checked: dict[str, bool] = field(default_factory=dict)  # bid -> checked, for checkboxes and radios



#: One line of BrowserGym's ``flatten_axtree_to_str``: ``[bid] role 'name'`` (repr-quoted name).
_AXTREE_LINE = re.compile(r"^\s*\[(?P<bid>[^\]\s]{1,40})\] (?P<role>[A-Za-z]{1,40})(?: (?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?")


def _axtree_txt_names(text: str) -> dict[str, tuple[str, str]]:
    """``bid -> (role, name)`` from ``axtree_txt``, the text AX tree that BrowserGym's default
    ``obs_preprocessor`` keeps when it drops ``axtree_object``."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        m = _AXTREE_LINE.match(line)
        if m is None or m["bid"] in out:
            continue
        name = ""
        if m["name"]:
            try:
                name = str(ast.literal_eval(m["name"]))
            except (ValueError, SyntaxError):
                name = m["name"][1:-1]
        out[m["bid"]] = (m["role"], " ".join(name.split())[:200])
    return out


_CHECKED = re.compile(r"^\s*\[(?P<bid>[^\]\s]{1,40})\] (?:checkbox|radio|switch|menuitemcheckbox|menuitemradio) .*?checked='(?P<v>true|false)'")


def _axtree_checked(obs: dict[str, Any]) -> dict[str, bool]:
    """``bid -> checked`` of the check boxes and radios in the AX tree (object or ``axtree_txt``)."""
    out: dict[str, bool] = {}
    nodes = (obs.get("axtree_object") or {}).get("nodes") or []
    for node in nodes:
        bid = node.get("browsergym_id")
        for prop in node.get("properties") or []:
            if bid is not None and isinstance(prop, dict) and prop.get("name") == "checked":
                value = (prop.get("value") or {}).get("value") if isinstance(prop.get("value"), dict) else None
                if value in ("true", "false", True, False):
                    out[str(bid)] = value in ("true", True)
    if not nodes and isinstance(obs.get("axtree_txt"), str):
        for line in obs["axtree_txt"].splitlines():
            m = _CHECKED.match(line)
            if m:
                out.setdefault(m["bid"], m["v"] == "true")
    return out


def _axtree_names(obs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    if not (obs.get("axtree_object") or {}).get("nodes") and isinstance(obs.get("axtree_txt"), str):
        return _axtree_txt_names(obs["axtree_txt"])
    out: dict[str, tuple[str, str]] = {}
    for node in (obs.get("axtree_object") or {}).get("nodes", []):
        bid = node.get("browsergym_id")
        if bid is None or str(bid) in out:
            continue
        role = str((node.get("role") or {}).get("value") or "")
        name = " ".join(str((node.get("name") or {}).get("value") or "").split())
        out[str(bid)] = (role, name[:200])
    return out


def _bid_key(bid: str) -> tuple[int, str]:
    return (int(bid), "") if bid.isdigit() else (1 << 30, bid)


def process_observation(obs: dict[str, Any], task_name: str) -> _View:
    """Screenshot, Set-of-Mark screenshot and candidate menu of one saved observation."""
    import numpy as np
    from PIL import Image

    from mag_dataset.live.observe import observe
    from mag_dataset.som import draw_som, encode_png

    miniwob = task_name.startswith("miniwob")
    scale = MINIWOB_SCALE if miniwob else 1.0
    names = _axtree_names(obs)
    if obs.get("dom_object"):
        ob = observe(obs, crop=miniwob, scale=scale)
        boxes = {bid: b for bid in ob.elements if (b := ob.screen_box(bid)) is not None}
        return _View(ob.png, ob.som_png, ob.width, ob.height, list(ob.candidates), ob.conv.crop, scale,
                     ob.url, ob.focused, boxes, names,
                     checked={b: el.checked for b, el in ob.elements.items() if el.checked is not None})
    # no DOM snapshot (BrowserGym's default obs_preprocessor drops it): element properties for
    # the boxes, the AX tree (object or axtree_txt) for the names
    image = Image.fromarray(np.asarray(obs["screenshot"], dtype=np.uint8)).convert("RGB")
    full_w, full_h = image.size
    props = obs.get("extra_element_properties") or {}
    full: dict[str, tuple[float, float, float, float]] = {}
    marked: list[str] = []
    for bid, pr in sorted(props.items(), key=lambda kv: _bid_key(str(kv[0]))):
        bb = (pr or {}).get("bbox")
        if not bb or float(pr.get("visibility") or 0) < 0.5:
            continue
        full[str(bid)] = (float(bb[0]), float(bb[1]), float(bb[0] + bb[2]), float(bb[1] + bb[3]))
        if pr.get("set_of_marks"):
            marked.append(str(bid))
    crop = _task_area_from_text(obs, props, full, marked, full_w, full_h) if miniwob else (0, 0, full_w, full_h)
    image = image.crop(crop)
    w, h = image.size
    boxes: dict[str, tuple[float, float, float, float]] = {}
    cands = []
    for bid, (bx0, by0, bx1, by1) in full.items():
        x0, y0 = max(0.0, bx0 - crop[0]), max(0.0, by0 - crop[1])
        x1, y1 = min(float(w), bx1 - crop[0]), min(float(h), by1 - crop[1])
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        box = (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))
        boxes[bid] = box
        if bid in marked:
            role, name = names.get(bid, ("", ""))
            cands.append(Candidate(id=bid, role=role or "generic", text=name, bbox=box))
    return _View(encode_png(image), encode_png(draw_som(image, cands)), w, h, cands, crop, scale,
                 str(obs.get("url") or ""), str(obs.get("focused_element_bid") or "") or None, boxes, names,
                 missing=_missing_keys(obs), checked=_axtree_checked(obs))


#: Observation keys the importer reads; BrowserGym's demo agent's obs_preprocessor keeps none
#: of the first four.
OBSERVATION_KEYS = ("extra_element_properties", "url", "goal", "focused_element_bid")


def _missing_keys(obs: dict[str, Any]) -> str:
    """Why elements cannot be located in an observation without the DOM snapshot ("" when they can)."""
    if obs.get("extra_element_properties"):
        return ""
    absent = [k for k in OBSERVATION_KEYS if obs.get(k) is None]
    if not obs.get("axtree_object") and not obs.get("axtree_txt"):
        absent.append("axtree_object/axtree_txt")
    return (f"missing observation keys {', '.join(absent)} (and dom_object): no element boxes. "
            "BrowserGym's demo-agent obs_preprocessor drops them; record with a preprocessor that keeps "
            "extra_element_properties, url, goal and focused_element_bid (BrowserGym's default does)")


_AREA_TAG = re.compile(r"<[a-z]+ bid=\"(?P<bid>[^\"]{1,40})\"[^>]*? id=\"(?P<id>wrap|area)\"")


def _task_area_from_text(obs: dict[str, Any], props: dict[str, Any], boxes: dict[str, tuple[float, float, float, float]],
                         marked: list[str], full_w: int, full_h: int) -> tuple[int, int, int, int]:
    """MiniWoB's task area without the DOM snapshot: the bids of ``#area`` / ``#wrap`` from
    ``dom_txt`` or ``pruned_html`` (BrowserGym's default preprocessor keeps both), grown to hold
    every marked element, as :func:`mag_dataset.live.observe.observe` crops with the DOM."""
    found: dict[str, str] = {}
    for key in ("dom_txt", "pruned_html"):
        for m in _AREA_TAG.finditer(obs.get(key) or ""):
            found.setdefault(m["id"], m["bid"])
    box = None
    for name in ("area", "wrap"):
        bid = found.get(name)
        pr = props.get(bid) if bid is not None else None
        bb = (pr or {}).get("bbox")
        if bb and float(pr.get("visibility") or 0) > 0:
            box = (float(bb[0]), float(bb[1]), float(bb[0] + bb[2]), float(bb[1] + bb[3]))
            break
    if box is None:
        return (0, 0, full_w, full_h)
    return grow_task_area(box, [boxes[bid] for bid in marked], full_w, full_h)


def _redraw_som(view: _View) -> bytes:
    from PIL import Image

    from mag_dataset.som import draw_som, encode_png

    with Image.open(io.BytesIO(view.png)) as img:
        return encode_png(draw_som(img.convert("RGB"), view.candidates))
