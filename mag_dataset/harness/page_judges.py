"""Three page-grounded judges of the label audit that need no model: ``dom``, ``name`` and ``pixel``.

WebMRE (arXiv 2609.27353, §3) audits a flagged step with three independent judges and merges
their votes (:func:`mag_dataset.harness.audit_rules.merge_verdicts`: all confirm →
``confirmed``; a majority remaps to the same element → ``remapped``; a majority finds nothing →
``unmappable``; anything else → ``disputed``). These three judges are witnesses of *where the
gold target is on the screenshot the step shows* (its action-time screenshot, or the
recaptured one), each from its own evidence:

``dom``
    The target's identity from the DOM fingerprint the recorder stored when the action was
    taken (:class:`Fingerprint`: tag, role, accessible name, ``id``/``name``/``href``/``aria-*``
    attributes, structural path), looked up among the shown page's elements. A point-only
    step (no fingerprint) asks for the element under the point on the shown page.
``name``
    Role + accessible name only, among the shown page's elements, the nearest to the target's
    original position. Several equally good matches is an answer too: ``ambiguous``. A target
    with no accessible name (an unlabelled text box, a bare list) is matched by its role among
    the shown elements that have no name either, nearest first. Role and name are compared as
    the fingerprints hold them on both sides (version 2; version 1 voted ``unmappable`` for an
    unnamed target, and compared the target's accessible name with the menu's text, which for a
    drop-down is its chosen option: both disputed steps where nothing had moved).
``pixel``
    The target's action-time crop located in the shown screenshot by normalised
    cross-correlation (OpenCV's ``matchTemplate``, ``TM_CCOEFF_NORMED``); below
    :data:`PIXEL_MIN_SCORE` it is "not found". The score map is rounded to three decimals
    before anything is read from it (version 3): OpenCV's float32 sums differ in the fifth
    decimal between CPUs, and the best score, its ties and the logged evidence must not.

Each judge ends with a box on the shown screenshot, which is mapped to the step's candidate
menu (:func:`map_to_menu`): the recorded element → ``confirm``; another candidate →
``remap``; nothing found or no candidate there → ``unmappable``; a tie → no vote
(``ambiguous``). Every vote carries its evidence (matched ids, scores, distances) for the
verdict log. Everything here is a pure function of its inputs: no I/O, no clock, no
randomness, so an audit rerun is byte-identical (on another CPU too: see ``pixel``). The inputs are built from a raw step by
:mod:`mag_dataset.harness.page_audit`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mag_dataset.live.observe import (  # the element identity the recorder stores, and how alike two are
    DOM_MIN_SIMILARITY,
    Fingerprint,
    fingerprint_similarity,
)
from mag_dataset.schema import Box

#: Version of the rule-based judges, logged with every verdict and named in the dataset card.
PAGE_JUDGES_VERSION = 3
#: The judges, in panel order.
PAGE_JUDGES = ("dom", "name", "pixel")

#: Least normalised cross-correlation for the ``pixel`` judge to call a location the target.
PIXEL_MIN_SCORE = 0.90
#: Locations scoring within this of the best are equally good (ties are broken by distance).
PIXEL_TIE = 0.01
#: Two matches whose distances to the original position differ by less than this (pixels)
#: are equally near: the judge answers ``ambiguous``.
DISTANCE_TIE = 2.0
#: Least intersection-over-union for a located box to be a menu candidate's box.
MENU_MIN_IOU = 0.5
#: A crop flatter than this (grey-level standard deviation) is grown by :data:`CROP_CONTEXT` pixels
#: on each side: a blank text box matches everywhere, its frame and label do not.
FLAT_CROP_STD = 4.0
CROP_CONTEXT = 12
#: Smallest crop side the ``pixel`` judge matches (pixels).
MIN_CROP_SIDE = 4


@dataclass(frozen=True)
class PageElement:
    """One element of the page a step shows, with its box on the shown screenshot."""

    id: str
    role: str
    name: str
    bbox: Box
    fingerprint: Fingerprint | None = None


@dataclass(frozen=True)
class StepEvidence:
    """What the judges know of one step.

    Attributes:
        recorded_id: the label under audit (the step's gold element id), or None.
        menu: the step's candidate menu ``(id, box)`` on the shown screenshot.
        shown: the elements of the shown page (for an action-time screenshot, the menu itself).
        shown_image: the shown screenshot, RGB ``uint8`` array ``(h, w, 3)``.
        target: the acted element's fingerprint at action time, or None (point-only step).
        target_box: the acted element's box on the action-time screenshot, or None.
        point: the action's point on the action-time screenshot, or None.
        action_image: the action-time screenshot (the crop's source), RGB ``uint8``.
        same_page: the shown page is the action-time page (ids are the menu's ids).
        action_elements: the action-time page's elements (the menu with names and
            fingerprints); for an action-time screenshot the same as ``shown``.
    """

    recorded_id: str | None
    menu: tuple[tuple[str, Box], ...]
    shown: tuple[PageElement, ...]
    shown_image: np.ndarray | None
    target: Fingerprint | None = None
    target_box: Box | None = None
    point: tuple[float, float] | None = None
    action_image: np.ndarray | None = None
    same_page: bool = True
    action_elements: tuple[PageElement, ...] = ()

    def __post_init__(self) -> None:
        if self.same_page and not self.action_elements:
            object.__setattr__(self, "action_elements", self.shown)


@dataclass(frozen=True)
class PageVote:
    """One judge's answer: ``confirm``, ``remap`` (to ``element``), ``unmappable`` or ``ambiguous``."""

    judge: str
    verdict: str
    element: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- geometry
def _center(box: Box) -> tuple[float, float]:
    return ((box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0)


def _distance(a: Box, b: Box) -> float:
    (ax, ay), (bx, by) = _center(a), _center(b)
    return math.hypot(ax - bx, ay - by)


def _area(box: Box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def iou(a: Box, b: Box) -> float:
    """Intersection over union of two boxes ``(x0, y0, x1, y1)``."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = _area(a) + _area(b) - inter
    return inter / union if union > 0 else 0.0


def _contains(box: Box, point: tuple[float, float]) -> bool:
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def map_to_menu(box: Box, menu: Sequence[tuple[str, Box]]) -> tuple[str | None, float]:
    """The menu candidate whose box is ``box`` (best IoU, at least :data:`MENU_MIN_IOU`).

    Returns:
        ``(candidate id or None, its IoU)``; ties go to the smaller box, then the lower id.
    """
    scored = sorted(((iou(box, b), -_area(b), cid) for cid, b in menu), reverse=True)
    if not scored or scored[0][0] < MENU_MIN_IOU:
        return None, round(scored[0][0], 4) if scored else 0.0
    return scored[0][2], round(scored[0][0], 4)


def element_under(point: tuple[float, float], elements: Sequence[PageElement]) -> PageElement | None:
    """The smallest element whose box holds ``point`` (ties: lower id)."""
    under = [e for e in elements if _contains(e.bbox, point)]
    return min(under, key=lambda e: (_area(e.bbox), e.id)) if under else None


# ---------------------------------------------------------------- the vote from a located box
def _vote(judge: str, ev: StepEvidence, found: PageElement | None, box: Box | None,
          evidence: dict[str, Any]) -> PageVote:
    """Turn a located element (or box) on the shown page into a vote on the recorded label."""
    if found is not None and ev.same_page:
        element: str | None = found.id if any(cid == found.id for cid, _ in ev.menu) else None
        evidence["menu_match"] = "same page"
    else:
        target_box = found.bbox if found is not None else box
        if target_box is None:
            return PageVote(judge, "unmappable", None, evidence)
        element, overlap = map_to_menu(target_box, ev.menu)
        evidence["menu_iou"] = overlap
    if element is None:
        evidence["why"] = evidence.get("why", "the located target is no candidate of the menu")
        return PageVote(judge, "unmappable", None, evidence)
    if element == ev.recorded_id:
        return PageVote(judge, "confirm", element, evidence)
    return PageVote(judge, "remap", element, evidence)


def _nearest(matches: list[tuple[float, PageElement]], origin: Box | None) -> tuple[PageElement | None, dict[str, Any]]:
    """The single best match, nearest to ``origin`` among the best-scored; None when tied."""
    best = max(score for score, _ in matches)
    top = [e for score, e in matches if score >= best - 1e-9]
    if origin is not None:
        ranked = sorted(top, key=lambda e: (_distance(e.bbox, origin), e.id))
        dists = [round(_distance(e.bbox, origin), 1) for e in ranked]
    else:
        ranked, dists = sorted(top, key=lambda e: e.id), []
    info: dict[str, Any] = {"matches": [e.id for e in ranked[:5]], "score": round(best, 4)}
    if dists:
        info["distances"] = dists[:5]
    if len(ranked) > 1 and (origin is None or abs(dists[1] - dists[0]) < DISTANCE_TIE):
        return None, info
    return ranked[0], info


# ---------------------------------------------------------------- the three judges
def judge_dom(ev: StepEvidence) -> PageVote:
    """The ``dom`` judge: the target's fingerprint (or the element under the point) on the shown page."""
    if ev.target is None:
        if ev.point is None:
            return PageVote("dom", "unmappable", None, {"why": "no fingerprint and no point recorded"})
        under = element_under(ev.point, ev.shown)
        evidence = {"by": "point", "under": under.id if under else None}
        if under is None:
            evidence["why"] = "nothing under the point on the shown page"
        return _vote("dom", ev, under, None, evidence)
    scored = [(fingerprint_similarity(ev.target, e.fingerprint), e) for e in ev.shown if e.fingerprint is not None]
    scored = [(s, e) for s, e in scored if s >= DOM_MIN_SIMILARITY]
    if not scored:
        return PageVote("dom", "unmappable", None, {"by": "fingerprint", "why": "no shown element has the fingerprint"})
    found, info = _nearest(scored, ev.target_box)
    info["by"] = "fingerprint"
    if found is None:
        return PageVote("dom", "ambiguous", None, info)
    return _vote("dom", ev, found, None, info)


def _target_role_name(ev: StepEvidence) -> tuple[str, str] | None:
    if ev.target is not None and (ev.target.role or ev.target.name):
        return ev.target.role, ev.target.name
    if ev.point is not None:  # a point-only step: the action-time element under the point names it
        under = element_under(ev.point, ev.action_elements)
        if under is not None:
            return under.role, under.name
    return None


def _role_name(e: PageElement) -> tuple[str, str]:
    """An element's role and accessible name as its fingerprint has them (the target's come from
    its fingerprint too), else as the menu shows them: a drop-down's menu text is its chosen
    option, its accessible name is its label."""
    if e.fingerprint is not None and (e.fingerprint.role or e.fingerprint.name):
        return e.fingerprint.role, e.fingerprint.name
    return e.role, e.name


def judge_name(ev: StepEvidence) -> PageVote:
    """The ``name`` judge: role + accessible name among the shown page's elements, nearest first."""
    key = _target_role_name(ev)
    if key is None or not (key[0].strip() or key[1].strip()):
        return PageVote("name", "unmappable", None, {"why": "the target has neither a role nor an accessible name"})
    role, name = key
    norm = " ".join(name.split()).casefold()
    same = [(1.0, e) for e in ev.shown if _role_name(e)[0] == role and " ".join(_role_name(e)[1].split()).casefold() == norm]
    evidence: dict[str, Any] = {"role": role, "name": name[:80]}
    if not norm:
        evidence["by"] = "role, among the elements without a name"
    if not same:
        evidence["why"] = "no shown element has this role and name" if norm else "no shown element of this role is unnamed"
        return PageVote("name", "unmappable", None, evidence)
    origin = ev.target_box or ((ev.point[0], ev.point[1], ev.point[0], ev.point[1]) if ev.point else None)
    found, info = _nearest(same, origin)
    evidence.update(info)
    if found is None:
        return PageVote("name", "ambiguous", None, evidence)
    return _vote("name", ev, found, None, evidence)


def _gray(image: np.ndarray) -> np.ndarray:
    if image.ndim == 2:
        return image.astype(np.float32)
    return (image[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32))


def _crop_box(box: Box, image: np.ndarray, grow: int = 0) -> tuple[int, int, int, int]:
    h, w = image.shape[:2]
    x0 = max(0, int(math.floor(box[0])) - grow)
    y0 = max(0, int(math.floor(box[1])) - grow)
    x1 = min(w, int(math.ceil(box[2])) + grow)
    y1 = min(h, int(math.ceil(box[3])) + grow)
    return x0, y0, x1, y1


def locate_crop(action_image: np.ndarray, box: Box, shown_image: np.ndarray) -> tuple[Box | None, dict[str, Any]]:
    """Where the crop ``box`` of ``action_image`` is in ``shown_image`` (NCC), or None.

    Returns:
        ``(box on the shown screenshot or None, evidence)``: the evidence holds the best score,
        how many locations tie with it and whether the crop was grown for context.
    """
    import cv2

    src, dst = _gray(action_image), _gray(shown_image)
    x0, y0, x1, y1 = _crop_box(box, src)
    if x1 - x0 < MIN_CROP_SIDE or y1 - y0 < MIN_CROP_SIDE:
        return None, {"why": "the target's box is too small to crop"}
    grown = 0
    if float(src[y0:y1, x0:x1].std()) < FLAT_CROP_STD:
        grown = CROP_CONTEXT
        x0, y0, x1, y1 = _crop_box(box, src, grow=grown)
    templ = src[y0:y1, x0:x1]
    if templ.shape[0] > dst.shape[0] or templ.shape[1] > dst.shape[1]:
        return None, {"why": "the crop is larger than the shown screenshot"}
    scores = cv2.matchTemplate(dst, templ, cv2.TM_CCOEFF_NORMED)
    scores = np.round(np.nan_to_num(scores, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float64), 3)
    best = float(scores.max())
    evidence: dict[str, Any] = {"score": best, "grown": grown}
    if best < PIXEL_MIN_SCORE:
        evidence["why"] = f"best match {best:.3f} < {PIXEL_MIN_SCORE}"
        return None, evidence
    # every separate location tying with the best (non-maximum suppression by the crop's size)
    th, tw = templ.shape
    ys, xs = np.nonzero(scores >= best - PIXEL_TIE)
    order = np.argsort(-scores[ys, xs], kind="stable")
    peaks: list[tuple[int, int]] = []
    for i in order:
        y, x = int(ys[i]), int(xs[i])
        if all(abs(y - py) >= th / 2 or abs(x - px) >= tw / 2 for py, px in peaks):
            peaks.append((y, x))
        if len(peaks) > 20:
            break
    origin = (x0, y0)
    peaks.sort(key=lambda p: (math.hypot(p[1] - origin[0], p[0] - origin[1]), p))
    dists = [round(math.hypot(p[1] - origin[0], p[0] - origin[1]), 1) for p in peaks]
    evidence["locations"] = len(peaks)
    evidence["distances"] = dists[:5]
    if len(peaks) > 1 and abs(dists[1] - dists[0]) < DISTANCE_TIE:
        evidence["why"] = "ambiguous"
        return None, evidence
    y, x = peaks[0]
    # the target's own box inside the (possibly grown) crop, moved to the match
    dx, dy = x - x0, y - y0
    found = (box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy)
    evidence["moved"] = [dx, dy]
    return found, evidence


def judge_pixel(ev: StepEvidence) -> PageVote:
    """The ``pixel`` judge: the action-time crop of the target located in the shown screenshot."""
    box = ev.target_box
    if box is None and ev.point is not None:  # a point-only step: the action-time element under the point
        under = element_under(ev.point, ev.action_elements)
        box = under.bbox if under is not None else None
    if box is None or ev.action_image is None or ev.shown_image is None:
        return PageVote("pixel", "unmappable", None, {"why": "no action-time box or screenshot to crop"})
    found, evidence = locate_crop(ev.action_image, box, ev.shown_image)
    if found is None:
        verdict = "ambiguous" if evidence.get("why") == "ambiguous" else "unmappable"
        return PageVote("pixel", verdict, None, evidence)
    evidence["box"] = [round(v, 1) for v in found]
    return _vote("pixel", ev, None, found, evidence)


#: name -> judge, the panel of ``mag audit --judges dom,name,pixel``.
JUDGES = {"dom": judge_dom, "name": judge_name, "pixel": judge_pixel}


def run_page_judges(ev: StepEvidence, names: Sequence[str] = PAGE_JUDGES) -> list[PageVote]:
    """The votes of the named judges on one step, in the order given."""
    return [JUDGES[n](ev) for n in names]
