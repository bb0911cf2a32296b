"""A Playwright trace archive converted into a raw episode, and a batch of them into a corpus.

:func:`convert_trace` turns each page action among the trace's calls into a step (see
:mod:`mag_dataset.harness.trace_import` for which calls and how): the screenshot is the last
screencast frame before the call, the candidates come from the call's DOM snapshot laid out
again (:mod:`.snapshots`), the action from the call's method and parameters, and the step is
built by :func:`mag_dataset.live.page_step.step_from_page`. :func:`import_traces` converts a batch
into a raw corpus with the bookkeeping both importers share
(:mod:`mag_dataset.harness.import_common`). Reading the archive is :mod:`.archive`'s.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlparse

from mag_dataset.template_guides import template_guide
from mag_dataset.harness.import_common import (
    MULTI_OPTION_SEPARATOR,
    BatchReport,
    check_converted,
    episode_id_from,
    is_finite_number,
    open_image,
    scroll_direction,
)
from mag_dataset.harness.trace_import.archive import Call, Trace, TraceImportError, _size, read_trace
from mag_dataset.harness.trace_import.snapshots import SnapshotRenderer
from mag_dataset.raw import RawEpisode, RawStep
from mag_dataset.live.page_step import PageCapture, step_from_page
from mag_dataset.schema import Action, Candidate, box_center, point_in_box

#: Frame/Page methods that act on the page; every other call (waits, evaluations, queries) is skipped.
TARGETED = {"click": "click", "dblclick": "click", "tap": "click", "check": "click", "uncheck": "click",
            "hover": "hover", "fill": "type", "type": "type", "selectOption": "select", "press": "press"}
POINTER = {"mouseClick": "click", "mouseDblclick": "click"}
#: Page actions with no benchmark equivalent (keyboard.type has no element: the snapshot does
#: not record focus); a trace using one is refused, with its name, rather than losing a step.
UNSUPPORTED = ("setInputFiles", "dragAndDrop", "mouseDown", "mouseUp", "keyboardDown", "keyboardUp", "dispatchEvent",
               "keyboardType", "keyboardInsertText")
#: Page actions without a target element or point.
PAGE_METHODS = ("keyboardPress", "mouseWheel", "goBack", "goForward")

Box = tuple[float, float, float, float]


def _option_value(options: Any) -> str:
    values = []
    for o in options if isinstance(options, list) else [options]:
        if isinstance(o, dict):
            v = next((o[k] for k in ("valueOrLabel", "label", "value") if isinstance(o.get(k), str)), None)
            v = v if v is not None else (str(o["index"]) if is_finite_number(o.get("index")) else None)
        else:
            v = o if isinstance(o, str) else None
        if v is None:
            raise TraceImportError(f"selectOption with options {str(options)[:100]} names no option text")
        values.append(v)
    return MULTI_OPTION_SEPARATOR.join(values)


def _frame_before(trace: Trace, call: Call) -> tuple[str, int, int] | None:
    frames = trace.frames.get(call.page_id) or [f for fs in trace.frames.values() for f in fs]
    before = [f for f in frames if f[0] <= call.start]
    if not before:
        return None
    _, sha1, w, h = before[-1]
    return sha1, w, h


@dataclass
class TraceTask:
    """What the trace does not say: the task."""

    intent: str
    site: str = ""
    intent_template_id: str = ""
    task_id: str = ""
    seed: int | None = None


@dataclass(frozen=True)
class _Screen:
    """A step's screenshot size and its pixels per CSS pixel of the recorded viewport."""

    width: int
    height: int
    sx: float
    sy: float

    def box(self, css: Box) -> Box | None:
        """A CSS box in screenshot pixels, clipped to the screenshot; None when under a pixel."""
        x0, y0 = max(0.0, css[0] * self.sx), max(0.0, css[1] * self.sy)
        x1, y1 = min(float(self.width), css[2] * self.sx), min(float(self.height), css[3] * self.sy)
        return (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2)) if x1 - x0 >= 1 and y1 - y0 >= 1 else None


def convert_trace(path: Path, task: TraceTask, browser: Any) -> tuple[RawEpisode, dict[str, bytes]]:
    """Convert one trace archive into a raw episode and its images.

    Args:
        path: the ``trace.zip``.
        task: the intent and ids of the task the trace performs.
        browser: a Playwright Chromium browser (lays the snapshots out).

    Raises:
        TraceImportError: the archive cannot be converted (why).
    """
    trace = read_trace(path)
    renderer = SnapshotRenderer(trace, browser)
    steps: list[RawStep] = []
    images: dict[str, bytes] = {}
    first_url = ""
    for call in trace.calls:
        if call.error or call.cls not in ("Frame", "Page"):
            continue
        m = call.method
        if m in UNSUPPORTED:
            raise TraceImportError(f"{call.api_name or m} ({call.call_id}) has no equivalent in the benchmark action space")
        snap = call.snapshots.get("input") or call.snapshots.get("before")
        if m == "goto":
            if not steps and not first_url:
                first_url = str(call.params.get("url") or "")
                continue  # opens the start page: not a step
        elif m not in TARGETED and m not in POINTER and m not in PAGE_METHODS:
            continue
        step = _convert_call(trace, renderer, call, snap, len(steps), images)
        if step is None:
            continue
        steps.append(step)
        first_url = first_url or str(snap.get("frameUrl") or "")  # type: ignore[union-attr]
    if not steps:
        raise TraceImportError("the trace holds no page action")
    task_id = task.task_id or episode_id_from(path.stem)
    ep = RawEpisode(
        episode_id=task_id, task_id=task_id, site=task.site or (urlparse(first_url).hostname or "unknown"),
        intent=task.intent, intent_template_id=task.intent_template_id or task_id, steps=tuple(steps),
        source="playwright-trace", seed=task.seed, reward=1.0, success=True,
        metadata={"trace": path.name, "start_url": first_url, "task_key": task_id},
    )
    check_converted(ep, TraceImportError)
    return ep, images


def _convert_call(trace: Trace, renderer: SnapshotRenderer, call: Call, snap: dict[str, Any] | None, k: int,
                  images: dict[str, bytes]) -> RawStep | None:
    """Page action ``call`` as raw step ``k`` (its screenshot goes into ``images``); None when
    it does nothing (a wheel call without a delta)."""
    from mag_dataset.som import encode_png

    frame = _frame_before(trace, call)
    if frame is None or snap is None:
        raise TraceImportError(f"{call.api_name or call.method} ({call.call_id}) has no screenshot or DOM snapshot "
                               "before it; record with tracing.start(screenshots=True, snapshots=True)")
    viewport = _size(snap.get("viewport")) or trace.viewport
    if viewport is None:
        raise TraceImportError("the trace records no viewport size")
    shot = open_image(io.BytesIO(trace.resource(frame[0])), f"resources/{frame[0]}", TraceImportError)
    fw, fh = shot.size
    screen = _Screen(fw, fh, fw / viewport[0], fh / viewport[1])
    ob = renderer.observe(snap, viewport)
    cands = [Candidate(c.id, c.role, c.text, b) for c in ob.candidates if (b := screen.box(c.bbox)) is not None]
    mapped = _call_action(call, ob, cands, screen)
    if mapped is None:
        return None
    action, target = mapped
    box = target.bbox if target is not None else (
        (action.coordinate[0], action.coordinate[1], action.coordinate[0], action.coordinate[1]) if action.coordinate else None)
    return step_from_page(
        PageCapture(encode_png(shot), fw, fh, tuple(cands)), images, step_index=k, action=action, target_bbox=box,
        guide=template_guide(action, target), url=str(snap.get("frameUrl") or ""), som=False, viewport=viewport,
        device_pixel_ratio=round(screen.sx, 6),
        metadata={"playwright_call": call.api_name, "playwright_params": _short_params(call.params),
                  "trace_call": call.call_id, "conversion": {"scale_factor": round(screen.sx, 6), "crop": [0, 0, fw, fh]},
                  "viewport": list(viewport)},
    )


def _call_action(call: Call, ob: Any, cands: list[Candidate], screen: _Screen) -> tuple[Action, Candidate | None] | None:
    """The benchmark action of a page action and its target (None: none); None when it does nothing."""
    m = call.method
    if m in TARGETED:
        return _targeted_action(call, ob, cands, screen)
    if m in POINTER:
        x, y = call.params.get("x"), call.params.get("y")
        if not (is_finite_number(x) and is_finite_number(y)):
            raise TraceImportError(f"{call.api_name} ({call.call_id}) has no point")
        px, py = round(float(x) * screen.sx, 2), round(float(y) * screen.sy, 2)
        if not (0 <= px <= screen.width and 0 <= py <= screen.height):
            raise TraceImportError(f"{call.api_name} ({call.call_id}) points outside the screenshot")
        return Action(type="click", coordinate=(px, py)), None  # coordinate-only: `mag unify` restores it
    if m == "keyboardPress":
        return Action(type="press", key=str(call.params.get("key", ""))), None
    if m == "mouseWheel":
        direction = scroll_direction(float(call.params.get("deltaX") or 0), float(call.params.get("deltaY") or 0))
        return (Action(type="scroll", direction=direction), None) if direction else None
    if m == "goto":
        return Action(type="goto", url=str(call.params.get("url") or "")), None
    return Action(type="go_back" if m == "goBack" else "go_forward"), None


def _targeted_action(call: Call, ob: Any, cands: list[Candidate], screen: _Screen) -> tuple[Action, Candidate | None]:
    """A :data:`TARGETED` call: its element is the one the snapshot marks ``__playwright_target__``
    (added to ``cands`` when the menu lacks it); the point is the recorded pointer when inside
    the element's box, else the box's centre."""
    bid = next((b for b, el in ob.elements.items() if el.attrs.get("__playwright_target__") == call.call_id), None)
    if bid is None:
        raise TraceImportError(f"{call.api_name} ({call.call_id}): the snapshot marks no target element")
    target = next((c for c in cands if c.id == bid), None)
    if target is None:
        css = ob.screen_box(bid)
        box = screen.box(css) if css is not None else None
        if box is None:
            raise TraceImportError(f"{call.api_name} ({call.call_id}) acts on an element that is not on the screenshot")
        el = ob.elements[bid]
        target = Candidate(bid, el.role or el.tag, el.label[:200], box)
        cands.append(target)
    pt = (round(call.point[0] * screen.sx, 2), round(call.point[1] * screen.sy, 2)) if call.point else None
    if pt is None or not point_in_box(pt, target.bbox):
        cx, cy = box_center(target.bbox)
        pt = (round(cx, 2), round(cy, 2))
    kind = TARGETED[call.method]
    if kind == "press":  # press(selector, key): the key, on the focused element
        return Action(type="press", key=str(call.params.get("key", ""))), None
    extra: dict[str, Any] = {}
    if kind == "type":
        extra["text"] = str(call.params.get("value", call.params.get("text", "")))
    elif kind == "select":
        extra["value"] = _option_value(call.params.get("options"))
    return Action(type=kind, element_id=bid, coordinate=pt, **extra), target


def _short_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k in ("selector", "url", "key", "value", "text", "options", "x", "y",
                                                      "deltaX", "deltaY") and len(json.dumps(v, default=str)) < 500}


@dataclass
class TraceImportReport(BatchReport):
    """What :func:`import_traces` did (a :class:`~mag_dataset.harness.import_common.BatchReport`
    whose sources are trace archives)."""

    def summary(self) -> str:
        lines = [f"{self.found} traces: imported {len(self.imported)} episodes ({self.steps} steps), skipped {len(self.skipped)}"]
        lines += [f"  skipped {n}: {r}" for n, r in self.skipped]
        return "\n".join(lines)


def find_traces(paths: Iterable[str | Path]) -> list[Path]:
    """Trace archives: each path a ``.zip`` or a folder searched recursively for them."""
    found: set[Path] = set()
    for p in map(Path, paths):
        if p.is_file():
            found.add(p)
        elif p.is_dir():
            found.update(q for q in p.rglob("*.zip") if q.is_file())
        else:
            raise FileNotFoundError(f"trace archive not found: {p}")
    return sorted(found)


def import_traces(paths: Iterable[str | Path], out_dir: str | Path, tasks: Callable[[Path], TraceTask | None], *,
                  overwrite: bool = False, progress: Callable[[str], None] | None = None) -> TraceImportReport:
    """Import every trace archive under ``paths`` into the raw corpus ``out_dir``.

    Args:
        paths: ``.zip`` files or folders of them.
        out_dir: the raw corpus (created when missing).
        tasks: the task of a trace archive (None: skipped, "no task given").
        overwrite: replace episodes that exist.
        progress: called with one line per archive.

    Returns:
        A :class:`TraceImportReport`; a trace that cannot be converted is skipped with its reason.
    """
    from mag_dataset.live.env import chromium_executable

    out = Path(out_dir)
    traces = find_traces(paths)
    report = TraceImportReport(found=len(traces))
    if not traces:
        return report
    with _browser(chromium_executable()) as browser:
        for path in traces:
            task = tasks(path)
            try:
                if task is None:
                    raise TraceImportError("no task given for it (--intent, an entry in --tasks, or a --webarena-configs file)")
                ep, images = convert_trace(path, task, browser)
            except TraceImportError as e:
                report.skip(path.name, str(e), progress)
                continue
            if not report.skip_existing(out, ep, path.name, overwrite):
                report.write(out, ep, images, path.name, progress)
    return report


class _browser:
    """Chromium through BrowserGym's process-wide Playwright (its snapshot reader is used
    anyway, and a second sync Playwright in one process fails)."""

    def __init__(self, executable: str):
        self.executable = executable

    def __enter__(self) -> Any:
        import browsergym.core

        self.browser = browsergym.core._get_global_playwright().chromium.launch(executable_path=self.executable)
        return self.browser

    def __exit__(self, *exc: Any) -> None:
        self.browser.close()
