"""Hostile-input limits of the BrowserGym importer: the caps, and the checks of an untrusted observation.

Every experiment folder may be crafted. This module holds the numbers that bound what one
folder may cost (file, pickle, array, image and DOM sizes; the child process's memory and
time, :data:`IMPORT_LIMITS`) and the type-and-size checks an observation passes before
anything walks it (:func:`check_observation`, :func:`check_dom`, :func:`check_image_array`).
It reads no file and unpickles nothing: the restricted unpickler is
:mod:`~mag_dataset.harness.browsergym_import.unpickle`, the folder reader
:mod:`~mag_dataset.harness.browsergym_import.folders`.
"""

from __future__ import annotations

from typing import Any

from mag_dataset.harness.import_common import MAX_IMAGE_PIXELS, is_finite_number
from mag_dataset.isolation import Limits


class ImportErrorForEpisode(ValueError):
    """An experiment directory cannot be imported; the message says why."""


#: Caps applied while unpickling and validating (a BrowserGym step file is a few MB).
MAX_ARRAY_BYTES = 256 * 1024 * 1024
MAX_PICKLE_BYTES = 256 * 1024 * 1024
MAX_STEP_FILE_BYTES = 256 * 1024 * 1024
MAX_PIXELS = MAX_IMAGE_PIXELS
MAX_ACTION_CHARS = 100_000
MAX_DOM_NODES = 500_000
MAX_DOM_DEPTH = 1000  # the DOM reader (live.observe) recurses per level: see isolated_convert
MAX_DOM_CHARS = 64 * 1024 * 1024


#: Limits of the child process that converts one experiment folder (see :mod:`mag_dataset.isolation`).
IMPORT_LIMITS = Limits(memory_mb=2048, seconds=300.0)


def _a(value: Any) -> str:
    """``value``'s type with its article: "an int", "a list"."""
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _int_list(value: Any, what: str, lo: int, hi: int, length: int | None = None) -> list[int]:
    if not isinstance(value, list):
        raise ImportErrorForEpisode(f"{what} is {_a(value)}, not a list")
    if length is not None and len(value) != length:
        raise ImportErrorForEpisode(f"{what} has {len(value):,} entries for {length:,} nodes")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v < hi:
            raise ImportErrorForEpisode(f"{what}[{i}] is {str(v)[:40]!r}, not an index in [{lo}, {hi})")
    return value


def _dict(value: Any, what: str, optional: bool = True) -> dict[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise ImportErrorForEpisode(f"{what} is {_a(value)}, not an object")
    return value


def check_dom(dom: Any, where: str) -> None:
    """Check a DOMSnapshot before any walk: types, index ranges, sizes, one node per bid,
    and parent chains that end (no node its own ancestor) within :data:`MAX_DOM_DEPTH`.

    The walk is iterative and marks each node once, so a cycle is found, not followed.
    """
    dom = _dict(dom, f"{where}: dom_object", optional=False)
    strings, docs = dom.get("strings"), dom.get("documents")
    if not isinstance(strings, list) or not isinstance(docs, list):
        raise ImportErrorForEpisode(f"{where}: dom_object needs the lists 'strings' and 'documents'")
    chars = 0
    for i, t in enumerate(strings):
        if not isinstance(t, str):
            raise ImportErrorForEpisode(f"{where}: dom_object strings[{i}] is {_a(t)}, not a string")
        chars += len(t)
    if chars > MAX_DOM_CHARS:
        raise ImportErrorForEpisode(f"{where}: the DOM snapshot holds {chars:,} characters, over the cap of {MAX_DOM_CHARS:,}")
    n_str, total = len(strings), 0
    bids: dict[str, tuple[int, int]] = {}
    for d, doc in enumerate(docs):
        w = f"{where}: DOM document {d}"
        nodes = _dict(_dict(doc, w, optional=False).get("nodes"), f"{w} nodes", optional=False)
        parents = nodes.get("parentIndex")
        if not isinstance(parents, list):
            raise ImportErrorForEpisode(f"{w}: parentIndex is missing or not a list")
        m = len(parents)
        total += m
        if total > MAX_DOM_NODES:
            raise ImportErrorForEpisode(f"{where}: the DOM snapshot has over {MAX_DOM_NODES:,} nodes")
        _int_list(parents, f"{w} parentIndex", -1, m)
        types = _int_list(nodes.get("nodeType"), f"{w} nodeType", 0, 1 << 16, m)
        _int_list(nodes.get("nodeName"), f"{w} nodeName", -1, n_str, m)
        if "nodeValue" in nodes:
            _int_list(nodes["nodeValue"], f"{w} nodeValue", -1, n_str, m)
        attributes = nodes.get("attributes")
        if not isinstance(attributes, list) or len(attributes) != m:
            raise ImportErrorForEpisode(f"{w}: attributes is not a list of one entry per node")
        for i, al in enumerate(attributes):
            _int_list(al, f"{w} attributes[{i}]", -1, n_str)
            bid = ""
            for k in range(0, len(al) - 1, 2):  # as the DOM reader does: the last "bid" attribute wins
                if al[k] >= 0 and strings[al[k]] == "bid":
                    bid = strings[al[k + 1]] if al[k + 1] >= 0 else ""
            if bid and types[i] == 1:
                if bid in bids:  # two nodes with one bid make the element tree cyclic
                    raise ImportErrorForEpisode(
                        f"{where}: the DOM snapshot gives bid {bid[:40]!r} to two nodes "
                        f"(document {bids[bid][0]} node {bids[bid][1]} and document {d} node {i})")
                bids[bid] = (d, i)
        for key in ("inputValue", "textValue"):
            block = _dict(nodes.get(key), f"{w} {key}")
            index = _int_list(block.get("index", []), f"{w} {key}.index", 0, m)
            _int_list(block.get("value", []), f"{w} {key}.value", -1, n_str, len(index))
        _int_list(_dict(nodes.get("inputChecked"), f"{w} inputChecked").get("index", []), f"{w} inputChecked.index", 0, m)
        layout = _dict(doc.get("layout"), f"{w} layout")
        _int_list(layout.get("nodeIndex", []), f"{w} layout.nodeIndex", 0, m)
        depth = [-1] * m
        for i in range(m):
            path, on_path, j = [], set(), i
            while j >= 0 and depth[j] < 0:
                if j in on_path:
                    raise ImportErrorForEpisode(f"{w}: node {j} is its own ancestor (a parentIndex cycle)")
                on_path.add(j)
                path.append(j)
                j = parents[j]
            level = depth[j] if j >= 0 else -1
            for k in reversed(path):
                level += 1
                depth[k] = level
            if level > MAX_DOM_DEPTH:
                raise ImportErrorForEpisode(f"{w}: the DOM nests {level} levels deep, over the limit of {MAX_DOM_DEPTH}")


def check_image_array(arr: Any, what: str) -> None:
    """A screenshot array: uint8, H x W (x 1/3/4), at most :data:`MAX_PIXELS`, plainly laid out."""
    import numpy as np

    if not isinstance(arr, np.ndarray):
        raise ImportErrorForEpisode(f"{what} is {_a(arr)}, not an image array")
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (1, 3, 4)):
        raise ImportErrorForEpisode(f"{what} is a {arr.dtype} array of shape {arr.shape}, not an 8-bit image")
    h, w = int(arr.shape[0]), int(arr.shape[1])
    if h * w > MAX_PIXELS or h == 0 or w == 0:
        raise ImportErrorForEpisode(f"{what} is {w}x{h} pixels, outside 1 to the cap of {MAX_PIXELS:,} pixels")
    if 0 in arr.strides or not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise ImportErrorForEpisode(f"{what} is not a plainly laid out array (zero or crafted strides)")


def check_observation(obs: Any, n: int) -> None:
    """Types and sizes of one saved observation's fields, before anything walks them."""
    if not isinstance(obs, dict):
        raise ImportErrorForEpisode(f"step {n} has no observation")
    where = f"step {n}"
    expected = {"axtree_object": (dict, "an object"), "extra_element_properties": (dict, "an object"),
                "dom_object": (dict, "an object"), "goal_object": ((list, tuple), "a list of message parts"),
                "goal": (str, "a string"), "url": (str, "a string"), "focused_element_bid": ((str, int), "a string"),
                "axtree_txt": (str, "a string"), "dom_txt": (str, "a string"), "pruned_html": (str, "a string")}
    for key, (kinds, what) in expected.items():
        value = obs.get(key)
        if value is not None and not isinstance(value, kinds):
            raise ImportErrorForEpisode(f"{where}: {key} is {_a(value)}, not {what}")
        if isinstance(value, str) and len(value) > MAX_DOM_CHARS:
            raise ImportErrorForEpisode(f"{where}: {key} is {len(value):,} characters, over the cap of {MAX_DOM_CHARS:,}")
    ax = obs.get("axtree_object") or {}
    nodes = ax.get("nodes", [])
    if not isinstance(nodes, list) or len(nodes) > MAX_DOM_NODES:
        raise ImportErrorForEpisode(f"{where}: axtree_object nodes is not a list of at most {MAX_DOM_NODES:,} nodes")
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise ImportErrorForEpisode(f"{where}: axtree_object node {i} is {_a(node)}, not an object")
        bid = node.get("browsergym_id")
        if bid is not None and not isinstance(bid, (str, int)):
            raise ImportErrorForEpisode(f"{where}: axtree_object node {i} has a browsergym_id that is not a string")
        for key in ("role", "name"):
            if node.get(key) is not None and not isinstance(node[key], dict):
                raise ImportErrorForEpisode(f"{where}: axtree_object node {i} {key} is {_a(node[key])}, not an object")
            value = (node.get(key) or {}).get("value")
            if value is not None and not isinstance(value, (str, int, float)):  # str() of a shared-reference
                raise ImportErrorForEpisode(  # tree grows exponentially: never call it on one
                    f"{where}: axtree_object node {i} {key} value is {_a(value)}, not text")
    for bid, pr in (obs.get("extra_element_properties") or {}).items():
        if pr is None:
            continue
        if not isinstance(pr, dict):
            raise ImportErrorForEpisode(f"{where}: extra_element_properties[{str(bid)[:40]!r}] is not an object")
        bb = pr.get("bbox")
        if bb is not None and not (isinstance(bb, (list, tuple)) and len(bb) == 4 and all(is_finite_number(x) for x in bb)):
            raise ImportErrorForEpisode(f"{where}: the bbox of element {str(bid)[:40]!r} is not four finite numbers")
        if pr.get("visibility") is not None and not is_finite_number(pr["visibility"]):
            raise ImportErrorForEpisode(f"{where}: the visibility of element {str(bid)[:40]!r} is not a number")
    for i, part in enumerate(obs.get("goal_object") or ()):
        if isinstance(part, dict) and part.get("text") is not None and not isinstance(part["text"], str):
            raise ImportErrorForEpisode(f"{where}: goal_object part {i} has a text that is not a string")
    if obs.get("dom_object") is not None:
        check_dom(obs["dom_object"], where)
    if obs.get("screenshot") is not None:
        check_image_array(obs["screenshot"], f"{where}: the screenshot")

