"""``mag view``: browse a live-evaluation run folder's episodes and steps in a local page.

A read-only ``http.server`` on 127.0.0.1 (standard library only) serving one page
(:data:`mag_dataset.harness.live_eval.viewer_page.PAGE`) and three routes:

* ``/api/run`` — the run's summary (from ``report.json`` when there is one) and one entry per
  episode folder: status, raw reward, steps, why it failed (:func:`run_index`);
* ``/api/episode?id=ID`` — one episode's attempts: screenshot and Set-of-Mark screenshot, the
  model's raw output, the parsed action, the guide, the BrowserGym action, every error, the
  target's box (screenshot pixels) and the check's verdict (:func:`episode_detail`);
* ``/files/PATH`` — a file of the run folder (the screenshots); nothing outside it is served
  (:func:`safe_path`: ``..``, absolute paths and links leading out are refused with 404).

A raw episode folder without an attempt log (``mag record``'s expert episodes) is shown
from its recorded steps. Compacted folders (``mag compact``'s difference images) are not
decoded: their screenshots are missing from the page.
"""

from __future__ import annotations

import json
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mag_dataset.harness.live_eval.report import why_line

#: Content types of the files the page loads.
_TYPES = {".png": "image/png", ".webp": "image/webp", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
          ".json": "application/json", ".md": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8"}


class ViewerError(ValueError):
    """The folder cannot be viewed (not a folder, no ``episodes/``)."""


def check_run_dir(run_dir: Path) -> Path:
    """The run folder, resolved; raises :class:`ViewerError` saying what is wrong with it."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise ViewerError(f"{run_dir} does not exist")
    if not run_dir.is_dir():
        raise ViewerError(f"{run_dir} is not a folder")
    if not (run_dir / "episodes").is_dir():
        raise ViewerError(f"{run_dir} has no episodes/ folder: give a mag live-eval run folder (its --out)")
    return run_dir.resolve()


def safe_path(root: Path, relative: str) -> Path | None:
    """The file ``relative`` (a URL path, percent-encoded) names under ``root``, or None when it
    would lie outside ``root`` (``..``, an absolute path, a link leading out) or is no file."""
    text = urllib.parse.unquote(relative)
    if "\x00" in text or "\\" in text or text.startswith("/"):
        return None
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    root = Path(root).resolve()
    path = root.joinpath(*parts).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def _episode_dirs(run_dir: Path) -> dict[str, Path]:
    return {d.name: d for d in sorted((run_dir / "episodes").iterdir()) if (d / "episode.json").is_file()}


def _result(ep: dict[str, Any]) -> dict[str, Any]:
    """The live-eval result of an episode, or one made from a raw episode's own fields."""
    live = (ep.get("metadata") or {}).get("live_eval")
    if isinstance(live, dict):
        return live
    ok = bool(ep.get("success"))
    return {"episode_id": ep.get("episode_id"), "task": ep.get("task_id"), "seed": ep.get("seed"),
            "status": "success" if ok else "failure", "success": ok, "raw_reward": ep.get("reward"),
            "steps": len(ep.get("steps") or []), "ended_by": "-", "format_failures": 0, "invalid_actions": 0}


def run_index(run_dir: Path) -> dict[str, Any]:
    """The run's summary and one entry per episode, in the report's order (else by folder name)."""
    report = _read_json(run_dir / "report.json")
    episodes = []
    for name, folder in _episode_dirs(run_dir).items():
        ep = _read_json(folder / "episode.json")
        if not isinstance(ep, dict):
            continue
        r = _result(ep)
        status = r.get("status") or ("success" if r.get("success") else "failure")
        episodes.append({"id": name, "task": r.get("task"), "seed": r.get("seed"), "status": status,
                         "reward": r.get("raw_reward"), "steps": r.get("steps"), "intent": ep.get("intent"),
                         "why": why_line({**r, "status": status, "episode_id": name}) if r.get("ended_by") else ""})
    if isinstance(report, dict) and isinstance(report.get("episodes"), list):
        order = {e.get("episode_id"): i for i, e in enumerate(report["episodes"])}
        episodes.sort(key=lambda e: (order.get(e["id"], len(order)), e["id"]))
    summary = None
    if isinstance(report, dict) and isinstance(report.get("overall"), dict):
        summary = {k: report.get(k) for k in ("view", "contract", "max_steps", "episodes_per_task")}
        summary["agent"] = (report.get("agent") or {}).get("label")
        summary["overall"] = report["overall"]
    return {"run": run_dir.name, "summary": summary, "episodes": episodes}


def _file_url(episode_id: str, name: str | None) -> str | None:
    if not name:
        return None
    return "/files/episodes/" + urllib.parse.quote(episode_id) + "/" + urllib.parse.quote(name)


def episode_detail(run_dir: Path, episode_id: str) -> dict[str, Any] | None:
    """One episode for the page: its header, verdict and attempts; None for an unknown id."""
    folder = _episode_dirs(run_dir).get(episode_id)
    ep = _read_json(folder / "episode.json") if folder is not None else None
    if not isinstance(ep, dict):
        return None
    r = _result(ep)
    steps = ep.get("steps") or []
    trajectory = (ep.get("metadata") or {}).get("trajectory")
    attempts = []
    if isinstance(trajectory, list):
        for t in trajectory:
            recorded = t.get("recorded_step")
            step = steps[recorded] if isinstance(recorded, int) and 0 <= recorded < len(steps) else {}
            attempts.append({**t, "target_bbox": t.get("target_bbox") or step.get("target_bbox"),
                             "screenshot_url": _file_url(episode_id, t.get("screenshot")),
                             "som_url": _file_url(episode_id, t.get("som_screenshot"))})
    else:  # a recorded episode: its steps
        for i, s in enumerate(steps):
            attempts.append({"attempt": i, "format_ok": True, "action": s.get("action"), "guide": s.get("guide"),
                             "target_bbox": s.get("target_bbox"), "url": s.get("url"), "output": None,
                             "screenshot_url": _file_url(episode_id, s.get("screenshot")),
                             "som_url": _file_url(episode_id, s.get("som_screenshot")), "recorded_step": i})
    status = r.get("status") or ("success" if r.get("success") else "failure")
    final = folder / "final.png"
    return {"id": episode_id, "intent": ep.get("intent"), "task": r.get("task"), "seed": r.get("seed"),
            "status": status, "reward": r.get("raw_reward"), "ended_by": r.get("ended_by"),
            "why": why_line({**r, "status": status, "episode_id": episode_id}) if r.get("ended_by") else "",
            "check": r.get("check"), "error": r.get("error"),
            "counts": {k: r.get(k) for k in ("steps", "format_failures", "invalid_actions", "requests", "retries",
                                             "timeouts", "seconds")},
            "attempts": attempts, "final_url": _file_url(episode_id, "final.png") if final.is_file() else None}


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "mag-view"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the page asks for many images
        pass

    def do_HEAD(self) -> None:
        self.do_GET(head=True)

    def do_GET(self, head: bool = False) -> None:
        url = urllib.parse.urlsplit(self.path)
        run_dir = self.server.run_dir
        if url.path in ("/", "/index.html"):
            from mag_dataset.harness.live_eval.viewer_page import PAGE

            return self._send(PAGE.encode("utf-8"), "text/html; charset=utf-8", head)
        if url.path == "/api/run":
            return self._json(run_index(run_dir), head)
        if url.path == "/api/episode":
            episode_id = urllib.parse.parse_qs(url.query).get("id", [""])[0]
            detail = episode_detail(run_dir, episode_id)
            if detail is None:
                return self._error(HTTPStatus.NOT_FOUND, f"no episode {episode_id!r}")
            return self._json(detail, head)
        if url.path.startswith("/files/"):
            path = safe_path(run_dir, url.path[len("/files/"):])
            if path is None:
                return self._error(HTTPStatus.NOT_FOUND, "no such file in the run folder")
            return self._send(path.read_bytes(), _TYPES.get(path.suffix.lower(), "application/octet-stream"), head)
        return self._error(HTTPStatus.NOT_FOUND, "not found")

    def _json(self, obj: Any, head: bool) -> None:
        self._send(json.dumps(obj).encode("utf-8"), "application/json", head)

    def _error(self, status: HTTPStatus, message: str) -> None:
        body = message.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send(self, body: bytes, content_type: str, head: bool) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if not head:
            self.wfile.write(body)


class ViewerServer(ThreadingHTTPServer):
    """The viewer's server, bound to 127.0.0.1 only.

    Args:
        run_dir: the run folder (checked with :func:`check_run_dir`).
        port: the port (0: any free one; :attr:`url` says which).
    """

    daemon_threads = True

    def __init__(self, run_dir: Path, port: int = 0):
        self.run_dir = check_run_dir(run_dir)
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"
