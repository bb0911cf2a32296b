"""Playwright DOM snapshots laid out again in Chromium and read as the site recorder reads a page.

Playwright's snapshots hold no element boxes: :func:`serialize_snapshot` rebuilds a frame
snapshot's HTML (references to earlier snapshots resolved, as Playwright's
``snapshotRenderer`` does) and :class:`SnapshotRenderer` loads it at the recorded viewport
with the recorded resources, form values and scroll positions, then observes it with
:func:`mag_dataset.live.observe.observe_page`. It maps no action (:mod:`.convert`).
"""

from __future__ import annotations

import re
from typing import Any

from mag_dataset.harness.trace_import.archive import Trace, TraceImportError

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
        # the snapshot is laid out in an about:blank document: the site's fonts are cross-origin
        # requests there, which Chromium drops without this header (a fallback font: other widths)
        route.fulfill(status=200, body=body, content_type=str(mime), headers={"Access-Control-Allow-Origin": "*"})

