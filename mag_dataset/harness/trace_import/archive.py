"""A Playwright trace archive read into its API calls, screencast frames and DOM snapshots.

:func:`read_trace` parses ``trace.trace`` / ``trace.network`` of an archive (formats 3 and 4,
one ``action`` event per call, are read as Playwright's ``traceModernizer`` reads them) into
a :class:`Trace`: its :class:`Call` list, frames per page, frame snapshots, resources and
viewport; resources are read on demand. Archives are untrusted: the caps below bound
members, sizes and calls. It lays nothing out (:mod:`.snapshots`) and maps no action
(:mod:`.convert`).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from mag_dataset.harness.import_common import is_finite_number

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
            # a later load served from the memory cache records no body: the one that has it is kept
            if isinstance(req.get("url"), str) and str(req.get("method", "GET")).upper() == "GET" and isinstance(
                    resp, dict) and (_body(resp) or not _body(resources.get(req["url"]) or {})):
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
            elif kind == "screencast-frame" and isinstance(ev.get("sha1"), str) and is_finite_number(ev.get("timestamp")):
                w, h = ev.get("width"), ev.get("height")
                frames.setdefault(str(ev.get("pageId") or ""), []).append(
                    (float(ev["timestamp"]), ev["sha1"], int(w) if is_finite_number(w) else 0, int(h) if is_finite_number(h) else 0))
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
                          params, float(start) if is_finite_number(start) else 0.0, str(ev.get("pageId") or ""))
        order.append(cid)
    call = calls.get(cid)
    if call is None:
        return
    for phase, key in (("before", "beforeSnapshot"), ("input", "inputSnapshot")):
        if isinstance(ev.get(key), str):
            names_of[(cid, phase)] = ev[key]
    pt = ev.get("point")
    if kind == "input" and isinstance(pt, dict) and is_finite_number(pt.get("x")) and is_finite_number(pt.get("y")):
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


def _body(resp: dict[str, Any]) -> str | None:
    """The resource name of a recorded response's body, or None."""
    content = resp.get("content")
    return content.get("_sha1") if isinstance(content, dict) and isinstance(content.get("_sha1"), str) else None


def _size(vp: Any) -> tuple[int, int] | None:
    if isinstance(vp, dict) and is_finite_number(vp.get("width")) and is_finite_number(vp.get("height")) and vp["width"] > 0 and vp["height"] > 0:
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

