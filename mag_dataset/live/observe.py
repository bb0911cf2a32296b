"""Turn a BrowserGym observation into what a benchmark step records.

Usage::

    from mag_dataset.live.observe import observe
    ob = observe(obs)                  # obs from env.reset()/env.step()
    ob.image                           # the cropped screenshot (PIL, RGB)
    ob.png, ob.som_png                 # raw / Set-of-Mark PNG bytes, encoded when first read
    ob.candidates                      # list[Candidate]: id = BrowserGym bid, bbox in screenshot px
    ob.width, ob.height                # image size in screenshot px
    ob.conv.to_page((x, y))            # screenshot px -> page CSS px (exact, incl. crop)
    ob.elements["14"]                  # DOM/AX facts of every marked element, for experts

Coordinates. BrowserGym captures MiniWoB++ screenshots at ``_bgym_scale_factor`` (1.5) device
pixels per CSS pixel and reports element boxes in those pixels. We crop the screenshot to the
task's area (MiniWoB's ``#area`` below the emptied goal bar, plus any candidate outside it) to keep images small, so a
point in our screenshot maps to the page as ``page = (shot + crop_origin) / scale``
(:class:`Conversion`). The conversion is stored with every recorded step.

Candidate menu. Merged from three sources so that no clickable thing is missed: the DOM
snapshot (tags, attributes, own text, click listeners via CDP's ``isClickable``), the
accessibility tree (role, accessible name), and BrowserGym's extra element properties (box,
visibility, clickable, BrowserGym's own set-of-marks choice). An element is a candidate when it
is visible inside the image and is clickable, has an interactive role or tag, is marked by
BrowserGym's set-of-marks, or directly holds visible text (spans with delegated click handlers).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

from mag_dataset.schema import Candidate
from mag_dataset.som import draw_som, encode_png

#: Roles that make an element a candidate on their own.
INTERACTIVE_ROLES = frozenset({
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
    "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "treeitem", "spinbutton", "slider",
    "switch", "MenuListPopup", "menu", "img", "image",
})
INTERACTIVE_TAGS = frozenset({"a", "button", "input", "select", "textarea", "option", "label", "summary", "img"})
#: On real pages (the sites), only these tags and roles (or an element the browser reports as
#: clickable that is not a mere container) are candidates: a, button, input, select,
#: textarea and the ARIA widget roles, as WebArena's Set-of-Mark menus.
PAGE_INTERACTIVE_TAGS = frozenset({"a", "button", "input", "select", "textarea", "summary"})
PAGE_INTERACTIVE_ROLES = frozenset({
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
    "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "treeitem", "spinbutton", "slider", "switch",
})
#: On real pages, elements that directly hold visible text a guide can point to ("in the
#: 'Shipping' column", "under the 'Open tickets' heading") are candidates too, as in the
#: element pools of Mind2Web-style corpora (WebMRE's median menu is 55 elements), and so are
#: images with alternative text. A text run inside a link or button stays part of it.
#: Wrapper elements that never become candidates (they cover the whole task area).
_SKIP_TAGS = frozenset({"html", "body", "head", "script", "style", "br", "svg", "path", "g"})
_MIN_VISIBILITY = 0.5
_MIN_SIDE = 2.0  # screenshot px


@dataclass(frozen=True)
class Conversion:
    """Exact map between our (cropped) screenshot pixels and page CSS pixels.

    Attributes:
        scale: screenshot pixels per CSS pixel (BrowserGym's ``_bgym_scale_factor``).
        crop: ``(x0, y0, x1, y1)`` of our image inside BrowserGym's full screenshot, in
            full-screenshot pixels (integers).
    """

    scale: float
    crop: tuple[int, int, int, int]

    def to_page(self, point: tuple[float, float]) -> tuple[float, float]:
        """Screenshot px -> page CSS px."""
        return ((point[0] + self.crop[0]) / self.scale, (point[1] + self.crop[1]) / self.scale)

    def to_screenshot(self, point: tuple[float, float]) -> tuple[float, float]:
        """Page CSS px -> screenshot px."""
        return (point[0] * self.scale - self.crop[0], point[1] * self.scale - self.crop[1])

    def to_browsergym(self, point: tuple[float, float]) -> tuple[float, float]:
        """Screenshot px -> the pixels BrowserGym's ``mouse_*`` actions take.

        BrowserGym's coordinate actions divide by ``_bgym_scale_factor`` themselves, so they
        expect full-screenshot pixels: page px times the scale.
        """
        px, py = self.to_page(point)
        return (px * self.scale, py * self.scale)

    def to_dict(self) -> dict[str, Any]:
        return {"scale_factor": self.scale, "crop": list(self.crop)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Conversion":
        return cls(scale=float(d["scale_factor"]), crop=tuple(int(v) for v in d["crop"]))  # type: ignore[arg-type]


@dataclass
class Element:
    """Facts about one BrowserGym-marked element (bid), merged from DOM, AX tree and properties.

    ``bbox`` is in full-screenshot pixels (before the crop); ``text`` is its rendered text
    content, ``all_text`` its whole DOM text (hidden parts included, for experts),
    ``own_text`` only its direct text children, ``field_label`` the text of the ``<label for=...>``
    naming a form field, else of a ``<label>`` sibling just before it (MiniWoB labels are not
    linked with ``for=``).
    """

    bid: str
    tag: str
    attrs: dict[str, str]
    parent: str | None
    text: str
    own_text: str
    role: str
    name: str
    bbox: tuple[float, float, float, float] | None
    visibility: float
    clickable: bool
    som: bool
    value: str | None = None
    checked: bool | None = None
    all_text: str = ""
    field_label: str = ""
    children: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """Best human-readable name: accessible name, text, placeholder, field label, icon class."""
        # a <select>'s text is all its options and its value is state: name it by its label only
        text = "" if self.tag == "select" else self.text
        for v in (self.name if self.tag != "select" else "", text, self.attrs.get("placeholder"),
                  self.attrs.get("aria-label"), self.attrs.get("title"), self.field_label):
            if v and v.strip():
                return " ".join(v.split())
        if self.tag in ("input", "textarea", "select"):
            return ""
        if self.tag in ("span", "i", "div", "img") and self.attrs.get("class"):
            # icon glyphs (MiniWoB's trash/star/reply spans) are named by their class
            return self.attrs["class"].split()[0].replace("-", " ").replace("_", " ")
        if self.attrs.get("id"):
            return self.attrs["id"].replace("-", " ").replace("_", " ")
        return ""


@dataclass
class Observation:
    """A processed observation. See the module docstring.

    ``image`` is the cropped screenshot (PIL, RGB); its PNG bytes (``png``) and its Set-of-Mark
    PNG (``som_png``) are encoded when first read, so a caller that needs one (a live agent of
    one view, the evidence replay) does not pay for the other.
    """

    image: Any
    width: int
    height: int
    candidates: list[Candidate]
    conv: Conversion
    goal: str
    url: str
    elements: dict[str, Element]
    focused: str | None = None
    title: str | None = None

    @functools.cached_property
    def png(self) -> bytes:
        return encode_png(self.image)

    @functools.cached_property
    def som_png(self) -> bytes:
        return encode_png(draw_som(self.image, self.candidates))

    def candidate(self, bid: str) -> Candidate | None:
        return next((c for c in self.candidates if c.id == bid), None)

    def screen_box(self, bid: str) -> tuple[float, float, float, float] | None:
        """Box of an element in our screenshot px, clipped to the image (None if not visible)."""
        el = self.elements.get(bid)
        if el is None or el.bbox is None:
            return None
        return _clip(_shift(el.bbox, self.conv.crop), self.width, self.height)


def _norm(s: str | None) -> str:
    return " ".join((s or "").split())


def _shift(box: tuple[float, float, float, float], crop: tuple[int, int, int, int]) -> tuple[float, float, float, float]:
    return (box[0] - crop[0], box[1] - crop[1], box[2] - crop[0], box[3] - crop[1])


def _clip(box: tuple[float, float, float, float], w: int, h: int) -> tuple[float, float, float, float] | None:
    x0, y0, x1, y1 = max(0.0, box[0]), max(0.0, box[1]), min(float(w), box[2]), min(float(h), box[3])
    if x1 - x0 < _MIN_SIDE or y1 - y0 < _MIN_SIDE:
        return None
    return (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))


class _Document:
    """One document of a DOMSnapshot, indexed for the walk over its elements."""

    def __init__(self, doc: dict[str, Any], strings: list[str]):
        nodes = doc["nodes"]
        self.strings = strings
        self.parents: list[int] = nodes["parentIndex"]
        self.types: list[int] = nodes["nodeType"]
        self.names: list[int] = nodes["nodeName"]
        n = len(self.parents)
        self.values: list[int] = nodes.get("nodeValue", [-1] * n)
        s = self.s
        self.attrs = [dict(zip([s(a) for a in al[0::2]], [s(a) for a in al[1::2]])) for al in nodes["attributes"]]
        self.input_value = dict(zip(nodes.get("inputValue", {}).get("index", []), nodes.get("inputValue", {}).get("value", [])))
        # textareas report their current text in textValue, not inputValue
        self.input_value.update(zip(nodes.get("textValue", {}).get("index", []), nodes.get("textValue", {}).get("value", [])))
        self.checked = set(nodes.get("inputChecked", {}).get("index", []))
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(self.parents):
            if p >= 0:
                self.children[p].append(i)
        self.rendered = set(doc.get("layout", {}).get("nodeIndex", []))
        self.bid_of = [self.attrs[i].get("bid") for i in range(n)]
        self._memo: dict[tuple[int, bool], str] = {}

    def s(self, i: int) -> str:
        return self.strings[i] if i >= 0 else ""

    def full_text(self, i: int, only_rendered: bool) -> str:
        """The text under node ``i`` (only rendered nodes, or all), scripts and styles left out."""
        key = (i, only_rendered)
        if key in self._memo:
            return self._memo[key]
        if only_rendered and i not in self.rendered:
            out = ""
        elif self.types[i] == 3:
            out = self.s(self.values[i])
        elif self.s(self.names[i]).lower() in ("script", "style", "head"):
            out = ""
        else:
            out = " ".join(t for t in (self.full_text(c, only_rendered) for c in self.children[i]) if t.strip())
        self._memo[key] = out
        return out

    def element(self, i: int, ax: dict[str, Any], pr: dict[str, Any]) -> Element:
        """The element of node ``i`` (which has a bid), with its AX node and extra properties."""
        s, bid = self.s, self.bid_of[i]
        p = self.parents[i]
        while p >= 0 and not self.bid_of[p]:
            p = self.parents[p]
        box = pr.get("bbox")
        own = " ".join(s(self.values[c]) for c in self.children[i] if self.types[c] == 3)
        val = self.input_value.get(i)
        return Element(
            bid=bid,
            tag=s(self.names[i]).lower(),
            attrs={k: v for k, v in self.attrs[i].items() if not k.startswith("browsergym")},
            parent=self.bid_of[p] if p >= 0 else None,
            text=_norm(self.full_text(i, True)),
            all_text=_norm(self.full_text(i, False)),
            own_text=_norm(own),
            role=str((ax.get("role") or {}).get("value") or ""),
            name=_norm(str((ax.get("name") or {}).get("value") or "")),
            bbox=(box[0], box[1], box[0] + box[2], box[1] + box[3]) if box else None,
            visibility=float(pr.get("visibility") or 0.0),
            clickable=bool(pr.get("clickable")),
            som=bool(pr.get("set_of_marks")),
            value=s(val) if isinstance(val, int) else None,
            checked=(i in self.checked) if s(self.names[i]).lower() == "input" else None,
        )


def parse_elements(obs: dict[str, Any]) -> dict[str, Element]:
    """Merge the DOM snapshot, the AX tree and the extra properties per BrowserGym bid."""
    dom = obs["dom_object"]
    props = obs.get("extra_element_properties") or {}
    ax_by_bid: dict[str, dict[str, Any]] = {}
    for node in (obs.get("axtree_object") or {}).get("nodes", []):
        bid = node.get("browsergym_id")
        if bid is not None and bid not in ax_by_bid:
            ax_by_bid[str(bid)] = node
    elements: dict[str, Element] = {}
    for raw_doc in dom["documents"]:
        doc = _Document(raw_doc, dom["strings"])
        for i, bid in enumerate(doc.bid_of):
            if doc.types[i] == 1 and bid:
                elements[bid] = doc.element(i, ax_by_bid.get(bid, {}), props.get(bid, {}))
    for el in elements.values():
        if el.parent in elements:
            elements[el.parent].children.append(el.bid)
    _label_fields(elements)
    return elements


def _label_fields(elements: dict[str, Element]) -> None:
    """Give form fields their ``field_label``. A ``<label for=ID>`` labels the field with that
    id wherever the label sits (Magento's and WorkArena's forms put it in another cell than
    the field); an unnamed field otherwise gets :func:`_field_label`."""
    label_for = {el.attrs["for"]: el.text for el in elements.values() if el.tag == "label" and el.attrs.get("for") and el.text}
    for el in elements.values():
        if el.tag in ("input", "textarea", "select") and el.attrs.get("id") in label_for:
            el.field_label = label_for[el.attrs["id"]]
        elif el.tag in ("input", "textarea", "select") and not el.name and el.parent in elements:
            el.field_label = _field_label(elements, el)


def _field_label(elements: dict[str, Element], el: Element) -> str:
    """Text of the ``<label>`` just before a field, else of a short heading just before its
    container (MiniWoB's "Departure Date" above the date picker)."""
    siblings = elements[el.parent].children  # type: ignore[index]
    before = siblings[: siblings.index(el.bid)]
    label = next((elements[b] for b in reversed(before) if elements[b].tag == "label"
                  and elements[b].attrs.get("for") in (None, "", el.attrs.get("id"))), None)  # not another field's
    if label is not None:
        return label.text
    parent = elements[el.parent]  # type: ignore[index]
    if parent.parent in elements and len(parent.children) == 1:
        uncles = elements[parent.parent].children  # type: ignore[index]
        prev = uncles[: uncles.index(parent.bid)]
        if prev and 0 < len(elements[prev[-1]].text) <= 40 and not elements[prev[-1]].children:
            return elements[prev[-1]].text
    return ""


def _is_candidate(el: Element, interactive_only: bool = False) -> bool:
    if el.tag in _SKIP_TAGS or el.visibility < _MIN_VISIBILITY or el.bbox is None:
        return False
    if el.attrs.get("id") in ("wrap", "area", "query"):
        return False
    if interactive_only:  # real pages: what a user can act on, and the text they can be told to look at
        return (el.tag in PAGE_INTERACTIVE_TAGS or el.role in PAGE_INTERACTIVE_ROLES
                or (el.clickable and el.tag not in ("div", "span", "td", "tr", "li", "ul", "form", "table", "tbody"))
                or bool(el.own_text.strip())
                or (el.tag == "img" and bool((el.attrs.get("alt") or "").strip())))
    return (
        el.clickable
        or el.som
        or el.role in INTERACTIVE_ROLES
        or el.tag in INTERACTIVE_TAGS
        or bool(el.own_text.strip())
    )


def _role(el: Element) -> str:
    if el.role and el.role not in ("generic", "none", "StaticText", "paragraph"):
        return el.role
    return el.tag


def _task_area(elements: dict[str, Element], full_w: int, full_h: int, cands: list[Element]) -> tuple[int, int, int, int]:
    # MiniWoB's #area (the task below the goal bar, which BrowserGym empties), else #wrap
    wrap = next((e for e in elements.values() if e.attrs.get("id") == "area" and e.bbox and e.visibility > 0), None)
    wrap = wrap or next((e for e in elements.values() if e.attrs.get("id") == "wrap" and e.bbox), None)
    if wrap is None:
        return (0, 0, full_w, full_h)
    # grown to hold every candidate, e.g. autocomplete menus appended to <body>
    return grow_task_area(wrap.bbox, [el.bbox for el in cands], full_w, full_h)  # type: ignore[arg-type]


def grow_task_area(
    area: tuple[float, float, float, float], boxes: list[tuple[float, float, float, float] | None], full_w: int, full_h: int
) -> tuple[int, int, int, int]:
    """The crop of a MiniWoB++ screenshot: the task ``area`` grown to hold every non-empty box
    that shows on the page, in whole pixels and inside the ``full_w`` x ``full_h`` screenshot
    (the one rule of the recorder's :func:`observe` and the BrowserGym importer)."""
    x0, y0, x1, y1 = area
    for b in boxes:
        if b and b[2] > b[0] and b[3] > b[1] and b[0] < full_w and b[1] < full_h and b[2] > 0 and b[3] > 0:
            x0, y0, x1, y1 = min(x0, b[0]), min(y0, b[1]), max(x1, b[2]), max(y1, b[3])
    return (max(0, math.floor(x0)), max(0, math.floor(y0)), min(full_w, math.ceil(x1)), min(full_h, math.ceil(y1)))


#: BrowserGym's MiniWoB++ screenshot scale (``page._bgym_scale_factor`` set by the task).
MINIWOB_SCALE = 1.5


#: Attributes of an element that name what it is (not its state), kept in its fingerprint; the
#: judges of the label audit (:mod:`mag_dataset.harness.page_judges`) read the same list.
FINGERPRINT_ATTRS = ("id", "name", "href", "type", "placeholder", "aria-label", "aria-labelledby",
                     "aria-describedby", "aria-controls", "title", "for", "value")
#: ``value`` names a button-like input; on a text field it is state, left out.
_VALUE_NAMES = ("submit", "button", "reset", "radio", "checkbox", "image")


def structural_path(elements: dict[str, Element], bid: str) -> str:
    """``html[0]/body[0]/form[1]/button[0]``: tags from the root, each with its index among the
    parent's children of the same tag (BrowserGym marks every element, so bids chain to the root)."""
    parts = []
    el = elements.get(bid)
    while el is not None:
        parent = elements.get(el.parent) if el.parent else None
        same = [b for b in parent.children if elements[b].tag == el.tag] if parent is not None else [el.bid]
        parts.append(f"{el.tag}[{same.index(el.bid) if el.bid in same else 0}]")
        el = parent
    return "/".join(reversed(parts))


#: Attributes of a fingerprint that identify an element: the recorder's list, read once.
IDENTITY_ATTRS = FINGERPRINT_ATTRS
#: Weight of each fingerprint part in :func:`fingerprint_similarity`.
FINGERPRINT_WEIGHTS = {"tag": 1.0, "role": 1.0, "name": 2.0, "path": 1.0, "attr": 1.0}
#: Least similarity for a shown element to be the recorded target: the label audit's ``dom``
#: judge (:mod:`mag_dataset.harness.page_judges`) and recapture (:mod:`mag_dataset.harness.recapture`)
#: read the same element by it.
DOM_MIN_SIMILARITY = 0.6


@dataclass(frozen=True)
class Fingerprint:
    """An element's identity in its page (what the recorder stores per candidate and target).

    Attributes:
        tag: lower-case tag name.
        role: ARIA role (from the accessibility tree).
        name: accessible name.
        attrs: the :data:`IDENTITY_ATTRS` the element has, as sorted ``(name, value)`` pairs.
        path: structural path from the root, ``tag[i]/tag[j]/...`` (``i``: index among the
            parent's children of the same tag).
    """

    tag: str
    role: str = ""
    name: str = ""
    attrs: tuple[tuple[str, str], ...] = ()
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "role": self.role, "name": self.name, "attrs": dict(self.attrs), "path": self.path}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Fingerprint":
        attrs = d.get("attrs") or {}
        return cls(tag=str(d.get("tag") or ""), role=str(d.get("role") or ""), name=str(d.get("name") or ""),
                   attrs=tuple(sorted((str(k), str(v)) for k, v in attrs.items() if k in IDENTITY_ATTRS)),
                   path=str(d.get("path") or ""))


def fingerprint_similarity(a: Fingerprint, b: Fingerprint) -> float:
    """How much of ``a``'s identity ``b`` shares, in [0, 1] (weights: :data:`FINGERPRINT_WEIGHTS`).

    Each part ``a`` has counts: tag, role, name and path when not empty, and each identity
    attribute. A different tag is never the same element (0).
    """
    if a.tag != b.tag:
        return 0.0
    w = FINGERPRINT_WEIGHTS
    total = got = w["tag"]
    for part in ("role", "name", "path"):
        mine = getattr(a, part)
        if mine:
            total += w[part]
            got += w[part] if getattr(b, part) == mine else 0.0
    theirs = dict(b.attrs)
    for k, v in a.attrs:
        total += w["attr"]
        got += w["attr"] if theirs.get(k) == v else 0.0
    return got / total


def fingerprint(elements: dict[str, Element], bid: str) -> dict[str, Any] | None:
    """The element's identity in its page, as the recorder stores it (None: no such element).

    ``{"tag", "role", "name", "attrs", "path"}``: tag, ARIA role, accessible name (its label as
    the menu shows it), the :data:`FINGERPRINT_ATTRS` it has and :func:`structural_path`.
    """
    el = elements.get(bid)
    if el is None:
        return None
    attrs = {k: el.attrs[k] for k in FINGERPRINT_ATTRS if el.attrs.get(k)}
    if "value" in attrs and not (el.tag == "button" or (el.tag == "input" and el.attrs.get("type") in _VALUE_NAMES)):
        del attrs["value"]
    return {"tag": el.tag, "role": _role(el), "name": el.label[:200], "attrs": attrs,
            "path": structural_path(elements, bid)}


def dom_evidence(ob: "Observation", target: str | None) -> dict[str, Any]:
    """What a step stores for the ``dom`` and ``name`` judges: every candidate's fingerprint,
    and the acted element's fingerprint and box (screenshot px) at action time."""
    out: dict[str, Any] = {"candidates": {c.id: fingerprint(ob.elements, c.id) for c in ob.candidates}}
    if target is not None and target in ob.elements:
        out["target"] = fingerprint(ob.elements, target)
        box = ob.screen_box(target)
        out["target_box"] = [round(v, 2) for v in box] if box is not None else None
    return out


def page_scale(env: Any) -> float:
    """Screenshot pixels per CSS pixel of a BrowserGym env's active page."""
    page = getattr(getattr(env, "unwrapped", env), "page", None)
    return float(getattr(page, "_bgym_scale_factor", 1.0)) if page is not None else MINIWOB_SCALE


def observe(obs: dict[str, Any], crop: bool = True, scale: float = MINIWOB_SCALE,
            interactive_only: bool = False) -> Observation:
    """Process a BrowserGym observation (see the module docstring).

    Args:
        obs: an observation returned by ``env.reset`` / ``env.step``.
        crop: crop the screenshot to the task area (MiniWoB's ``#area``, else ``#wrap``, grown
            to hold every candidate); False keeps it whole.
        scale: screenshot px per CSS px; pass ``page_scale(env)`` for non-MiniWoB pages.
        interactive_only: candidates are interactive elements only (real pages, the sites);
            False also marks elements that directly hold text (MiniWoB's delegated handlers).

    Returns:
        The :class:`Observation`.
    """
    from PIL import Image

    shot = obs["screenshot"]
    full_h, full_w = int(shot.shape[0]), int(shot.shape[1])
    elements = parse_elements(obs)
    visible = [e for e in elements.values() if _is_candidate(e, interactive_only)]
    area = _task_area(elements, full_w, full_h, visible) if crop else (0, 0, full_w, full_h)
    image = Image.fromarray(shot).crop(area)
    width, height = image.size
    conv = Conversion(scale=float(scale), crop=area)
    boxes: dict[str, tuple[float, float, float, float]] = {}
    for el in visible:
        box = _clip(_shift(el.bbox, area), width, height)  # type: ignore[arg-type]
        if box is not None:
            boxes[el.bid] = box
    candidates = [
        Candidate(id=el.bid, role=_role(el), text=el.label[:200], bbox=boxes[el.bid])
        for el in sorted(visible, key=lambda e: _bid_key(e.bid))
        if el.bid in boxes and not _redundant(elements, el, boxes)
    ]
    return Observation(
        image=image,
        width=width,
        height=height,
        candidates=candidates,
        conv=conv,
        goal=str(obs.get("goal") or ""),
        url=str(obs.get("url") or ""),
        elements=elements,
        focused=str(obs.get("focused_element_bid") or "") or None,
        title=page_title(obs),
    )


def page_title(obs: dict[str, Any]) -> str | None:
    """The active page's title in a BrowserGym observation, or None when it does not say."""
    titles, index = obs.get("open_pages_titles"), obs.get("active_page_index")
    try:
        return str(titles[int(index[0] if hasattr(index, "__len__") else index)])
    except (TypeError, IndexError, ValueError, KeyError):
        return None


def observe_page(obs: dict[str, Any]) -> Observation:
    """Observe a real page (the sites): the whole viewport at device scale 1; candidates are the
    interactive elements and the elements that directly hold visible text."""
    return observe(obs, crop=False, scale=1.0, interactive_only=True)


#: A non-interactive candidate whose box is this similar (IoU) to a descendant candidate's is
#: dropped (a table cell around its link, a list item around its text div).
DUPLICATE_IOU = 0.6


def _iou(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _interactive(el: Element) -> bool:
    return el.tag in INTERACTIVE_TAGS or el.role in INTERACTIVE_ROLES


def _redundant(elements: dict[str, Element], el: Element, boxes: dict[str, tuple[float, float, float, float]]) -> bool:
    """One mark per thing on screen: drop passive parts of an interactive ancestor (the icon
    span inside a link) and passive wrappers around a same-sized candidate."""
    if _interactive(el):
        return False
    p = el.parent
    while p is not None and p in elements:
        if p in boxes and _interactive(elements[p]) and not el.clickable:
            return True
        p = elements[p].parent
    todo = list(el.children)
    while todo:
        b = todo.pop()
        if b in boxes and _iou(boxes[b], boxes[el.bid]) >= DUPLICATE_IOU:
            return True
        todo.extend(elements[b].children)
    return False


def _bid_key(bid: str) -> tuple[int, str]:
    return (int(bid), "") if bid.isdigit() else (1 << 30, bid)
