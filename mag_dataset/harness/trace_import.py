"""Import Playwright trace archives as raw episodes (``mag import-trace``).

A trace archive is what ``context.tracing.start(screenshots=True, snapshots=True)`` ...
``context.tracing.stop(path="trace.zip")`` writes, the format of the ``trace/*.zip`` files in
WebArena's published execution traces: ``trace.trace`` (JSON lines: one ``before`` / ``input``
/ ``after`` event per API call, ``frame-snapshot`` events holding the DOM before and at each
action, ``screencast-frame`` events naming JPEG frames), ``trace.network`` (the resources the
page loaded) and ``resources/`` (the frames and resource bodies by SHA-1). Trace formats 3
and 4 (Playwright before 1.4x, as in WebArena's 2023 traces) hold one ``action`` event per call
instead; they are read the way Playwright's own ``traceModernizer`` reads them.

What becomes a step
    Each page action among the trace's API calls: ``click`` / ``dblclick`` / ``tap`` /
    ``check`` / ``uncheck`` (click), ``fill`` / ``type`` (type), ``press`` and
    ``keyboard.press`` (press), ``selectOption`` (select; several options are joined by
    :data:`mag_dataset.harness.importer.MULTI_OPTION_SEPARATOR`, as the BrowserGym importer
    does), ``hover``, ``mouse.click`` / ``mouse.dblclick`` (a click at a point),
    ``mouse.wheel`` (scroll), ``goto`` (goto; the first one, which opens the start page, is
    not a step), ``goBack`` / ``goForward``. Calls that do not act (waits, evaluations,
    queries, screenshots) are skipped; a call that failed is skipped; an action with no
    equivalent (``setInputFiles``, ``dragAndDrop``...) refuses the trace with its name.

    The screenshot of a step is the last screencast frame of its page before the call
    started. Playwright's DOM snapshots hold no element boxes (only frames' and canvases'),
    so the candidates come from laying the step's snapshot out again in Chromium at the
    recorded viewport, with the recorded resources, form values and scroll positions (as
    Playwright's trace viewer renders it), and reading it as the site recorder reads a live
    page (:func:`mag_dataset.live.observe.observe_page`). The acted element is the one the
    snapshot marks ``__playwright_target__``; its box is the target box and the recorded
    pointer position (inside the box, else its centre) the gold coordinate. A pointer action
    with no element (``mouse.click``) becomes a coordinate-only step with the page's
    candidates, for ``mag unify`` to restore.

The trace holds no task text: the intent (and site, template, seed) come from ``--intent``,
from a JSON file mapping trace names to them (``--tasks``), or from WebArena's config files
(``--webarena-configs``).
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlparse

from mag_dataset.raw import RawDataError, RawEpisode, RawStep, parse_step, write_episode
from mag_dataset.schema import Action, Candidate

#: Caps on what one archive may hold (WebArena's traces are a few MB each).
MAX_ARCHIVE_MEMBERS = 100_000
MAX_MEMBER_BYTES = 256 * 1024 * 1024
MAX_TRACE_BYTES = 512 * 1024 * 1024
MAX_CALLS = 20_000


class TraceImportError(ValueError):
    """A trace archive cannot be imported; the message says why."""


@dataclass
class Call:
    """One API call of the trace (``before`` + ``input`` + ``after`` events)."""

    call_id: str
    api_name: str
    cls: str
    method: str
    params: dict[str, Any]
    start: float
    page_id: str = ""
    point: tuple[float, float] | None = None
    error: str = ""
    acted: bool = False  # its call log says the action was performed (even if it then timed out)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)  # "before"/"input" -> frame snapshot


@dataclass
class Trace:
    """A parsed trace archive."""

    calls: list[Call]
    frames: dict[str, list[tuple[float, str, int, int]]]  # page id -> (timestamp, resource, width, height)
    frame_snapshots: dict[str, list[dict[str, Any]]]  # frame id -> its snapshots in order
    resources: dict[str, dict[str, Any]]  # url -> response (content._sha1, mimeType, status)
    viewport: tuple[int, int] | None
    archive: zipfile.ZipFile

    def resource(self, name: str) -> bytes:
        member = f"resources/{name}"
        try:
            info = self.archive.getinfo(member)
        except KeyError:
            raise TraceImportError(f"the archive has no {member}") from None
        if info.file_size > MAX_MEMBER_BYTES:
            raise TraceImportError(f"{member} is {info.file_size:,} bytes, over the cap of {MAX_MEMBER_BYTES:,}")
        return self.archive.read(member)


def read_trace(path: Path) -> Trace:
    """Parse a trace archive (its event files; resources are read on demand).

    Raises:
        TraceImportError: not a Playwright trace archive, or one over the caps.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise TraceImportError(f"not a zip archive: {e}") from None
    infos = archive.infolist()
    if len(infos) > MAX_ARCHIVE_MEMBERS:
        raise TraceImportError(f"the archive has {len(infos):,} members, over the cap of {MAX_ARCHIVE_MEMBERS:,}")
    names = {i.filename: i for i in infos}
    traces = sorted(n for n in names if n.endswith(".trace") and "/" not in n)
    if not traces:
        raise TraceImportError("no trace.trace in the archive (not a Playwright trace)")
    calls: dict[str, Call] = {}
    order: list[str] = []
    frames: dict[str, list[tuple[float, str, int, int]]] = {}
    snaps: dict[str, list[dict[str, Any]]] = {}
    viewport = None
    by_name: dict[str, dict[str, Any]] = {}
    names_of: dict[tuple[str, str], str] = {}  # (call id, "before"/"input") -> snapshot name
    for name in traces + sorted(n for n in names if n.endswith(".network") and "/" not in n):
        if names[name].file_size > MAX_TRACE_BYTES:
            raise TraceImportError(f"{name} is {names[name].file_size:,} bytes, over the cap of {MAX_TRACE_BYTES:,}")
    resources: dict[str, dict[str, Any]] = {}
    for name in sorted(n for n in names if n.endswith(".network") and "/" not in n):
        for ev in _events(archive, name):
            snap = ev.get("snapshot") if ev.get("type") == "resource-snapshot" else None
            req, resp = (snap or {}).get("request") or {}, (snap or {}).get("response") or {}
            if isinstance(req.get("url"), str) and str(req.get("method", "GET")).upper() == "GET" and isinstance(resp, dict):
                resources[req["url"]] = resp
    for name in traces:
        for ev in _events(archive, name):
            kind = ev.get("type")
            if kind == "context-options":
                vp = (ev.get("options") or {}).get("viewport") or {}
                if _size(vp):
                    viewport = _size(vp)
            elif kind == "action":  # trace formats 3 and 4 (Playwright <= 1.3x): one event per call
                ev = _flat_action(ev)
                if ev is None:
                    continue
                for phase in ("before", "input", "after"):
                    sub = {**ev, "type": phase}
                    _add_event(sub, phase, calls, order, names_of)
            elif kind in ("before", "input", "after"):
                _add_event(ev, kind, calls, order, names_of)
            elif kind == "log" and ev.get("callId") in calls and _ACTED.search(str(ev.get("message") or "")):
                calls[ev["callId"]].acted = True
            elif kind == "screencast-frame" and isinstance(ev.get("sha1"), str) and _num(ev.get("timestamp")):
                w, h = ev.get("width"), ev.get("height")
                frames.setdefault(str(ev.get("pageId") or ""), []).append(
                    (float(ev["timestamp"]), ev["sha1"], int(w) if _num(w) else 0, int(h) if _num(h) else 0))
            elif kind == "frame-snapshot" and isinstance(ev.get("snapshot"), dict):
                snap = ev["snapshot"]
                snaps.setdefault(str(snap.get("frameId") or ""), []).append(snap)
                snap["_index"] = len(snaps[str(snap.get("frameId") or "")]) - 1
                if snap.get("isMainFrame", True) and isinstance(snap.get("snapshotName"), str):
                    by_name[snap["snapshotName"]] = snap
    for cid in order:
        if calls[cid].acted:  # it timed out waiting for the navigation it started, after acting
            calls[cid].error = ""
        for phase in ("before", "input"):
            snap = by_name.get(names_of.get((cid, phase)) or f"{phase}@{cid}")
            if snap is not None:
                calls[cid].snapshots[phase] = snap
    for page in frames.values():
        page.sort(key=lambda f: f[0])
    return Trace([calls[c] for c in order], frames, snaps, resources, viewport, archive)


def _flat_action(ev: dict[str, Any]) -> dict[str, Any] | None:
    """A format-3/4 ``action`` event as the fields of the later before/input/after events
    (what Playwright's ``traceModernizer`` does); None for internal calls."""
    md = ev.get("metadata")
    if not isinstance(md, dict):  # format 4: already flat
        return ev if isinstance(ev.get("callId"), str) else None
    if md.get("internal") or str(md.get("method") or "").startswith("tracing") or not isinstance(md.get("id"), str):
        return None
    shots = {s.get("title"): s.get("snapshotName") for s in md.get("snapshots") or [] if isinstance(s, dict)}
    error = md.get("error")
    return {"callId": md["id"], "startTime": md.get("startTime"), "apiName": md.get("apiName") or f"{md.get('type')}.{md.get('method')}",
            "class": md.get("type"), "method": md.get("method"), "params": md.get("params"), "pageId": md.get("pageId"),
            "point": md.get("point"), "error": error.get("error") if isinstance(error, dict) else error, "log": md.get("log"),
            "beforeSnapshot": shots.get("before"), "inputSnapshot": shots.get("input")}


def _add_event(ev: dict[str, Any], kind: str, calls: dict[str, Call], order: list[str],
               names_of: dict[tuple[str, str], str]) -> None:
    cid = ev.get("callId")
    if not isinstance(cid, str):
        return
    if kind == "before":
        if len(calls) >= MAX_CALLS:
            raise TraceImportError(f"the trace has over {MAX_CALLS:,} calls")
        params = ev.get("params") if isinstance(ev.get("params"), dict) else {}
        start = ev.get("startTime")
        calls[cid] = Call(cid, str(ev.get("apiName") or ""), str(ev.get("class") or ""), str(ev.get("method") or ""),
                          params, float(start) if _num(start) else 0.0, str(ev.get("pageId") or ""))
        order.append(cid)
    call = calls.get(cid)
    if call is None:
        return
    for phase, key in (("before", "beforeSnapshot"), ("input", "inputSnapshot")):
        if isinstance(ev.get(key), str):
            names_of[(cid, phase)] = ev[key]
    pt = ev.get("point")
    if kind == "input" and isinstance(pt, dict) and _num(pt.get("x")) and _num(pt.get("y")):
        call.point = (float(pt["x"]), float(pt["y"]))
    if kind == "after" and ev.get("error"):
        err = ev["error"]
        call.error = (str((err.get("error") or err).get("message") if isinstance(err, dict) else err) or "failed")[:300]
    logs = ev.get("log")
    # a call that timed out waiting for the navigation it started still acted (its call log,
    # "log" events or the format-3 metadata's list, says so): it is a step
    if isinstance(logs, list) and any(_ACTED.search(str(line)) for line in logs):
        call.acted = True


#: A call-log line saying the action itself was dispatched to the page (a click that starts a
#: slow navigation can time out after "performing click action", the page already leaving).
_ACTED = re.compile(r"\bperforming (click|dblclick|tap|hover) action|\b(click|fill|select option|check|uncheck|hover|tap|press|type) action done")


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def _size(vp: Any) -> tuple[int, int] | None:
    if isinstance(vp, dict) and _num(vp.get("width")) and _num(vp.get("height")) and vp["width"] > 0 and vp["height"] > 0:
        return int(vp["width"]), int(vp["height"])
    return None


def _events(archive: zipfile.ZipFile, name: str) -> Iterable[dict[str, Any]]:
    with archive.open(name) as f:
        for n, line in enumerate(io.TextIOWrapper(f, encoding="utf-8", errors="replace")):
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as e:
                raise TraceImportError(f"{name} line {n + 1} is not JSON: {e}") from None
            if isinstance(ev, dict):
                yield ev


# -- snapshots -----------------------------------------------------------------------------

_AUTO_CLOSING = frozenset({"AREA", "BASE", "BR", "COL", "COMMAND", "EMBED", "HR", "IMG", "INPUT", "KEYGEN", "LINK",
                           "MENUITEM", "META", "PARAM", "SOURCE", "TRACK", "WBR"})


def _escape(s: str, attr: bool) -> str:
    s = s.replace("&", "&amp;").replace("<", "&lt;")
    return s.replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#39;") if attr else s


def _nodes(snapshot: dict[str, Any]) -> list[Any]:
    """The snapshot's nodes in post-order: what a ``[[offset, index]]`` reference indexes."""
    if "_nodes" not in snapshot:
        out: list[Any] = []
        stack: list[tuple[Any, bool]] = [(snapshot.get("html"), False)]
        while stack:
            n, done = stack.pop()
            if isinstance(n, str):
                out.append(n)
            elif isinstance(n, list) and n and isinstance(n[0], str):
                if done:
                    out.append(n)
                else:
                    stack.append((n, True))
                    stack.extend((c, False) for c in reversed(n[2:]))
        snapshot["_nodes"] = out
    return snapshot["_nodes"]


def serialize_snapshot(snapshots: list[dict[str, Any]], index: int) -> str:
    """The HTML of frame snapshot ``index`` of one frame, references resolved (as Playwright's
    ``snapshotRenderer`` does)."""
    memo: dict[int, str] = {}

    def visit(n: Any, at: int, depth: int) -> str:
        if isinstance(n, str):
            return _escape(n, False)
        if not isinstance(n, list) or not n or depth > 2000:
            return ""
        if isinstance(n[0], list):  # [[offset, node index]]: a subtree of an earlier snapshot
            ref = n[0]
            if len(ref) == 2 and all(isinstance(v, int) for v in ref) and 0 <= at - ref[0] < at:
                nodes = _nodes(snapshots[at - ref[0]])
                if 0 <= ref[1] < len(nodes):
                    key = id(nodes[ref[1]])
                    if key not in memo:
                        memo[key] = visit(nodes[ref[1]], at - ref[0], depth + 1)
                    return memo[key]
            return ""
        if not isinstance(n[0], str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9:_-]*", n[0]):
            return ""
        attrs = n[1] if len(n) > 1 and isinstance(n[1], dict) else {}
        parts = ["<", n[0]]
        for k, v in attrs.items():
            # BrowserGym's marks (a run recorded through it): the reader marks the page anew
            if k == "bid" or str(k).startswith("browsergym_"):
                continue
            if re.fullmatch(r"[^\s\"'<>/=]+", str(k)):
                parts += [" ", str(k), '="', _escape(str(v), True), '"']
        parts.append(">")
        parts += [visit(c, at, depth + 1) for c in n[2:]]
        if n[0].upper() not in _AUTO_CLOSING:
            parts += ["</", n[0], ">"]
        return "".join(parts)

    snap = snapshots[index]
    html = visit(snap.get("html"), index, 0)
    doctype = snap.get("doctype")
    return (f"<!DOCTYPE {doctype}>" if isinstance(doctype, str) and re.fullmatch(r"[\w ]{1,40}", doctype) else "") + html


#: Restores what the snapshot stores as attributes (form values, checks, selections, scroll).
_RESTORE_STATE_JS = """() => {
  for (const e of document.querySelectorAll('[__playwright_value_]')) e.value = e.getAttribute('__playwright_value_');
  for (const e of document.querySelectorAll('[__playwright_checked_]')) e.checked = e.getAttribute('__playwright_checked_') === 'true';
  for (const e of document.querySelectorAll('[__playwright_selected_]')) e.selected = e.getAttribute('__playwright_selected_') === 'true';
  for (const e of document.querySelectorAll('[__playwright_scroll_left_], [__playwright_scroll_top_]')) {
    const top = +(e.getAttribute('__playwright_scroll_top_') || 0), left = +(e.getAttribute('__playwright_scroll_left_') || 0);
    if (e === document.body || e === document.documentElement) window.scrollTo(left, top);
    else { e.scrollTop = top; e.scrollLeft = left; }
  }
}"""


class SnapshotRenderer:
    """Lays DOM snapshots out in Chromium and reads them as the site recorder reads a page."""

    def __init__(self, trace: Trace, browser: Any):
        self.trace = trace
        self.browser = browser

    def observe(self, snap: dict[str, Any], viewport: tuple[int, int]) -> Any:
        """The :class:`mag_dataset.live.observe.Observation` of one frame snapshot (CSS px)."""
        import numpy as np
        from browsergym.core.observation import (
            _post_extract,
            _pre_extract,
            extract_dom_extra_properties,
            extract_dom_snapshot,
            extract_merged_axtree,
        )

        from mag_dataset.live.observe import observe_page

        frame_snaps = self.trace.frame_snapshots[str(snap.get("frameId") or "")]
        html = serialize_snapshot(frame_snaps, snap["_index"])
        overrides = {o.get("url"): o.get("sha1") for o in snap.get("resourceOverrides") or [] if isinstance(o, dict)}
        context = self.browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, device_scale_factor=1)
        try:
            context.route("**/*", lambda route: self._serve(route, overrides))
            page = context.new_page()
            page.set_content(html, wait_until="load", timeout=30_000)
            page.evaluate(_RESTORE_STATE_JS)
            _pre_extract(page, lenient=True)
            dom = extract_dom_snapshot(page)
            axtree = extract_merged_axtree(page)
            props = extract_dom_extra_properties(dom, scale_factor=1.0)
            _post_extract(page)
            obs = {"dom_object": dom, "axtree_object": axtree, "extra_element_properties": props,
                   "screenshot": np.zeros((viewport[1], viewport[0], 3), dtype=np.uint8),
                   "url": str(snap.get("frameUrl") or ""), "goal": ""}
            return observe_page(obs)
        finally:
            context.close()

    def _serve(self, route: Any, overrides: dict[str, Any]) -> None:
        url = route.request.url
        resp = self.trace.resources.get(url)
        sha1 = overrides.get(url) or (((resp or {}).get("content") or {}).get("_sha1") if resp else None)
        if route.request.method != "GET" or not isinstance(sha1, str):
            route.abort()
            return
        try:
            body = self.trace.resource(sha1)
        except TraceImportError:
            route.abort()
            return
        mime = (((resp or {}).get("content") or {}).get("mimeType")) or "application/octet-stream"
        route.fulfill(status=200, body=body, content_type=str(mime))


# -- actions -------------------------------------------------------------------------------

#: Frame/Page methods that act on the page; every other call (waits, evaluations, queries) is skipped.
TARGETED = {"click": "click", "dblclick": "click", "tap": "click", "check": "click", "uncheck": "click",
            "hover": "hover", "fill": "type", "type": "type", "selectOption": "select", "press": "press"}
POINTER = {"mouseClick": "click", "mouseDblclick": "click"}
#: Page actions with no benchmark equivalent (keyboard.type has no element: the snapshot does
#: not record focus); a trace using one is refused, with its name, rather than losing a step.
UNSUPPORTED = ("setInputFiles", "dragAndDrop", "mouseDown", "mouseUp", "keyboardDown", "keyboardUp", "dispatchEvent",
               "keyboardType", "keyboardInsertText")


def _option_value(options: Any) -> str:
    from mag_dataset.harness.importer import MULTI_OPTION_SEPARATOR

    values = []
    for o in options if isinstance(options, list) else [options]:
        if isinstance(o, dict):
            v = next((o[k] for k in ("valueOrLabel", "label", "value") if isinstance(o.get(k), str)), None)
            v = v if v is not None else (str(o["index"]) if _num(o.get("index")) else None)
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


def convert_trace(path: Path, task: TraceTask, browser: Any) -> tuple[RawEpisode, dict[str, bytes]]:
    """Convert one trace archive into a raw episode and its images.

    Args:
        path: the ``trace.zip``.
        task: the intent and ids of the task the trace performs.
        browser: a Playwright Chromium browser (lays the snapshots out).

    Raises:
        TraceImportError: the archive cannot be converted (why).
    """
    from PIL import Image

    from mag_dataset.guides import template_guide
    from mag_dataset.live.observe import encode_png

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
        elif m not in TARGETED and m not in POINTER and m not in ("keyboardPress", "mouseWheel", "goBack", "goForward"):
            continue
        frame = _frame_before(trace, call)
        if frame is None or snap is None:
            raise TraceImportError(f"{call.api_name or m} ({call.call_id}) has no screenshot or DOM snapshot before it; "
                                   "record with tracing.start(screenshots=True, snapshots=True)")
        viewport = _size(snap.get("viewport")) or trace.viewport
        if viewport is None:
            raise TraceImportError("the trace records no viewport size")
        with Image.open(io.BytesIO(trace.resource(frame[0]))) as im:
            shot = im.convert("RGB")
        fw, fh = shot.size
        sx, sy = fw / viewport[0], fh / viewport[1]
        ob = renderer.observe(snap, viewport)

        def scaled(box: tuple[float, float, float, float]) -> tuple[float, float, float, float] | None:
            x0, y0 = max(0.0, box[0] * sx), max(0.0, box[1] * sy)
            x1, y1 = min(float(fw), box[2] * sx), min(float(fh), box[3] * sy)
            return (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2)) if x1 - x0 >= 1 and y1 - y0 >= 1 else None

        cands = [Candidate(c.id, c.role, c.text, b) for c in ob.candidates if (b := scaled(c.bbox)) is not None]
        target = None
        action: Action
        if m in TARGETED:
            bid = next((b for b, el in ob.elements.items() if el.attrs.get("__playwright_target__") == call.call_id), None)
            if bid is None:
                raise TraceImportError(f"{call.api_name} ({call.call_id}): the snapshot marks no target element")
            target = next((c for c in cands if c.id == bid), None)
            if target is None:
                css = ob.screen_box(bid)
                box = scaled(css) if css is not None else None
                if box is None:
                    raise TraceImportError(f"{call.api_name} ({call.call_id}) acts on an element that is not on the screenshot")
                el = ob.elements[bid]
                target = Candidate(bid, el.role or el.tag, el.label[:200], box)
                cands.append(target)
            x0, y0, x1, y1 = target.bbox
            pt = (round(call.point[0] * sx, 2), round(call.point[1] * sy, 2)) if call.point else None
            if pt is None or not (x0 <= pt[0] <= x1 and y0 <= pt[1] <= y1):
                pt = (round((x0 + x1) / 2, 2), round((y0 + y1) / 2, 2))
            kind = TARGETED[m]
            extra: dict[str, Any] = {}
            if kind == "type":
                extra["text"] = str(call.params.get("value", call.params.get("text", "")))
            elif kind == "select":
                extra["value"] = _option_value(call.params.get("options"))
            if kind == "press":  # press(selector, key): the key, on the focused element
                action = Action(type="press", key=str(call.params.get("key", "")))
                target = None
            else:
                action = Action(type=kind, element_id=bid, coordinate=pt, **extra)
        elif m in POINTER:
            x, y = call.params.get("x"), call.params.get("y")
            if not (_num(x) and _num(y)):
                raise TraceImportError(f"{call.api_name} ({call.call_id}) has no point")
            px, py = round(float(x) * sx, 2), round(float(y) * sy, 2)
            if not (0 <= px <= fw and 0 <= py <= fh):
                raise TraceImportError(f"{call.api_name} ({call.call_id}) points outside the screenshot")
            action = Action(type="click", coordinate=(px, py))  # coordinate-only: `mag unify` restores it
        elif m == "keyboardPress":
            action = Action(type="press", key=str(call.params.get("key", "")))
        elif m == "mouseWheel":
            dx, dy = float(call.params.get("deltaX") or 0), float(call.params.get("deltaY") or 0)
            if dx == 0 and dy == 0:
                continue
            direction = ("down" if dy > 0 else "up") if abs(dy) >= abs(dx) else ("right" if dx > 0 else "left")
            action = Action(type="scroll", direction=direction)
        elif m == "goto":
            action = Action(type="goto", url=str(call.params.get("url") or ""))
        else:
            action = Action(type="go_back" if m == "goBack" else "go_forward")
        k = len(steps)
        name = f"step_{k:03d}.png"
        images[name] = encode_png(shot)
        box = target.bbox if target is not None else (
            (action.coordinate[0], action.coordinate[1], action.coordinate[0], action.coordinate[1]) if action.coordinate else None)
        steps.append(RawStep(
            step_index=k, screenshot=name, som_screenshot="", image_width=fw, image_height=fh,
            candidates=tuple(cands), action=action, target_bbox=box, guide=template_guide(action, target),
            url=str(snap.get("frameUrl") or ""), viewport_width=viewport[0], viewport_height=viewport[1],
            device_pixel_ratio=round(sx, 6),
            metadata={"playwright_call": call.api_name, "playwright_params": _short_params(call.params),
                      "trace_call": call.call_id, "conversion": {"scale_factor": round(sx, 6), "crop": [0, 0, fw, fh]},
                      "viewport": list(viewport)},
        ))
        first_url = first_url or str(snap.get("frameUrl") or "")
    if not steps:
        raise TraceImportError("the trace holds no page action")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", path.stem)
    task_id = task.task_id or stem
    site = task.site or (urlparse(first_url).hostname or "unknown")
    ep = RawEpisode(
        episode_id=task_id, task_id=task_id, site=site, intent=task.intent,
        intent_template_id=task.intent_template_id or task_id, steps=tuple(steps), source="playwright-trace",
        seed=task.seed, reward=1.0, success=True,
        metadata={"trace": path.name, "start_url": first_url, "task_key": task_id},
    )
    try:
        for st in ep.steps:
            parse_step(st.to_json(), ep.episode_id, None)
    except RawDataError as e:
        raise TraceImportError(f"the converted episode is not valid raw data: {e}") from None
    return ep, images


def _short_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k in ("selector", "url", "key", "value", "text", "options", "x", "y",
                                                      "deltaX", "deltaY") and len(json.dumps(v, default=str)) < 500}


@dataclass
class TraceImportReport:
    """What :func:`import_traces` did."""

    found: int = 0
    imported: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    steps: int = 0

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
                report.skipped.append((path.name, str(e)))
                if progress:
                    progress(f"skipped {path.name}: {e}")
                continue
            if (out / ep.episode_id).exists() and not overwrite:
                report.skipped.append((path.name, f"already imported: {ep.episode_id} exists in {out}"))
                continue
            write_episode(out, ep, images)
            report.imported.append(ep.episode_id)
            report.steps += len(ep.steps)
            if progress:
                progress(f"imported {path.name} -> {ep.episode_id} ({len(ep.steps)} steps)")
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
