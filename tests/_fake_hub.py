"""A local stand-in for the parts of the Hugging Face Hub HTTP API that ``mag publish`` uses.

No Hub is reachable from the test machines, so ``huggingface_hub``'s real client is pointed
at this server (``HF_ENDPOINT=http://127.0.0.1:<port>``). It implements what
``create_repo``, ``upload_folder`` and ``upload_file`` send, as huggingface_hub 2.x sends
it: ``POST /api/repos/create``, ``POST /api/validate-yaml`` (the README front matter),
``GET /api/<type>s/<id>/tree/<rev>`` (the listing behind
``delete_patterns``), ``POST /api/<type>s/<id>/preupload/<rev>`` (every file answered
"regular", so no LFS/Xet transfer) and ``POST /api/<type>s/<id>/commit/<rev>`` (the NDJSON
commit: a header, ``file`` lines with base64 content, ``deletedFile`` lines). Repos are
kept in memory as path -> bytes; every request is recorded. Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import unquote, urlparse


@dataclass
class FakeRepo:
    repo_type: str
    repo_id: str
    create_body: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[dict[str, Any]] = field(default_factory=list)


class FakeHub:
    """The server; use as a context manager. ``reject`` (path_in_repo -> message) makes a
    commit that adds that path fail with HTTP 400, as the Hub's push-time validation does."""

    def __init__(self, token: str, reject: dict[str, str] | None = None) -> None:
        self.token = token
        self.reject = reject or {}
        self.repos: dict[tuple[str, str], FakeRepo] = {}
        self.requests: list[tuple[str, str]] = []
        self.authorized: list[bool] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ routes

    def _create(self, body: dict[str, Any]) -> tuple[int, Any]:
        repo_type = body.get("type") or "model"
        repo_id = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
        key = (repo_type, repo_id)
        if key in self.repos:
            return 409, {"error": "You already created this repo", "url": f"{self.endpoint}/{repo_id}"}
        self.repos[key] = FakeRepo(repo_type, repo_id, body)
        return 200, {"url": f"{self.endpoint}/{'' if repo_type == 'model' else repo_type + 's/'}{repo_id}"}

    def _tree(self, repo: FakeRepo) -> tuple[int, Any]:
        return 200, [{"type": "file", "path": p, "size": len(b), "oid": "0" * 40} for p, b in sorted(repo.files.items())]

    def _preupload(self, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in body["files"]]}

    def _commit(self, repo: FakeRepo, raw: bytes) -> tuple[int, Any]:
        lines = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        header = next(x["value"] for x in lines if x["key"] == "header")
        added, deleted = {}, []
        for x in lines:
            if x["key"] == "file":
                v = x["value"]
                assert v["encoding"] == "base64"
                added[v["path"]] = base64.b64decode(v["content"])
            elif x["key"] == "deletedFile":
                deleted.append(x["value"]["path"])
            elif x["key"] != "header":
                return 400, {"error": f"unsupported commit line {x['key']}"}
        for path, message in self.reject.items():
            if path in added:
                return 400, {"error": message}
        for path in deleted:
            repo.files.pop(path, None)
        repo.files.update(added)
        oid = f"{len(repo.commits) + 1:040x}"
        repo.commits.append({"summary": header.get("summary"), "added": sorted(added), "deleted": sorted(deleted)})
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        return 200, {"commitUrl": f"{self.endpoint}/{prefix}{repo.repo_id}/commit/{oid}", "commitOid": oid, "pullRequestUrl": None}

    def _route(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if method == "POST" and parts == ["api", "validate-yaml"]:  # the README front matter, checked before a commit
            return 200, {"errors": [], "warnings": []}
        if method == "POST" and parts == ["api", "repos", "create"]:
            return self._create(json.loads(raw))
        if len(parts) >= 6 and parts[0] == "api" and parts[1] in ("models", "datasets", "spaces"):
            repo = self.repos.get((parts[1][:-1], f"{parts[2]}/{parts[3]}"))
            if repo is None:
                return 404, {"error": "Repository not found"}
            if method == "GET" and parts[4] == "tree":
                return self._tree(repo)
            if method == "POST" and parts[4] == "preupload":
                return self._preupload(json.loads(raw))
            if method == "POST" and parts[4] == "commit":
                return self._commit(repo, raw)
        return 404, {"error": f"the fake Hub has no route {method} {path}"}

    def _handler(self) -> Callable[..., BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = urlparse(self.path).path
                hub.requests.append((method, path))
                if method == "GET" and path == "/api/agent-harnesses":  # huggingface_hub's client detection, no token
                    status, body = 200, {"standardEnvVars": [], "harnesses": {}}
                else:
                    ok = self.headers.get("Authorization") == f"Bearer {hub.token}"
                    hub.authorized.append(ok)
                    status, body = (401, {"error": "Invalid credentials"}) if not ok else hub._route(method, path, raw)
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status >= 400:
                    self.send_header("X-Error-Message", body.get("error", ""))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
