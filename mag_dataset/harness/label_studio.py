"""A bridge to Label Studio: verification tasks out as a project, its annotations back as responses.

``mag annotate`` suits a few people on one machine; a larger team may already run Label Studio
(https://labelstud.io), which has accounts, task assignment, review and its own agreement
reports. This module exports the steps that have a draft guide to verify as a Label Studio
project and imports that project's annotations back as responses in the annotation database
(:mod:`mag_dataset.harness.annotation_store`), from where they reach the episodes and ``mag
build`` like the app's decisions. ``mag label-studio export|import`` is the command
(:mod:`mag_dataset.commands.label_studio`).

The project
    :func:`labeling_config` is the labeling interface, top to bottom: the intent, the gold action
    in words, the step's answers so far, the draft guide in an editable text box (``TextArea``),
    the decision (``Choices``: accept, edit, reject; keys 1-3), an optional note, then the
    step's screenshot at its full size with zoom and pan (``Image``) with the gold target as a
    rectangle (``RectangleLabels``) or, for a step that has only a point, a keypoint
    (``KeyPointLabels``). The controls come first so they stay in view at 1366x900 (looked at
    in Chromium: under the screenshot they fell below the fold). Each task (:func:`step_task`)
    carries the step id, the intent, the gold action, the draft, where the draft came from and
    the step's version as exported; its prediction (a pre-annotation) draws the target and
    fills the text box with the draft, so an annotator only picks a decision, or edits the text
    and picks ``edit``. Box coordinates are Label Studio's: percent of the image's width and
    height. ``export --needs-adjudication`` makes a project of the steps whose annotators
    disagree instead, for an adjudicator.

Images
    Screenshots travel inside the tasks as ``data:`` URIs (the corpus's PNG or lossless WebP
    bytes, base64). Label Studio's other ways need either a URL the annotator's browser can
    reach (cloud storage, an image server) or the server's own file system (local-files
    storage: ``LOCAL_FILES_SERVING_ENABLED`` and a document root on the server's machine, set
    when it starts); a data URI needs neither, works offline and with a server on another
    machine, and keeps the image and its step in one record. The cost is size: the bundled
    sites' 1280x720 screenshots (lossless WebP) are 20-35 KB of base64 per task.

Import
    Every annotation of the project becomes one response (:meth:`AnnotationStore.record_response`
    with ``source="label-studio"`` and the annotator's Label Studio e-mail address as the
    annotator), carrying the step version the task was exported with. The annotators of one
    task answer independently, so they are each other's peers: the version expected is the
    exported one plus the responses already imported from that task. Anything else recorded on
    the step since (an answer in ``mag annotate``, another project) makes the response stale,
    and it is refused and listed, never applied over the other decision. Imported annotation ids
    are remembered in the database (table ``label_studio_imports``, kept by this module), so a
    second import records nothing new. A cancelled (skipped) annotation is no response;
    an annotation changed in Label Studio after it was imported is listed, not imported again.
    After an import the resolved decisions are written into the episodes
    (:func:`mag_dataset.harness.annotate.apply_decisions`).

A local server (:class:`LocalServer`, ``mag label-studio serve``)
    :data:`SERVER_PACKAGE` in a virtual environment of its own under :func:`server_home`,
    started on 127.0.0.1 with SQLite, its first user and API key from the environment, the
    settings of :data:`OFFLINE_ENV` (no call leaves the machine), and stopped by its process id.

The client (extra ``labelstudio``) speaks Label Studio's REST API (``/api/projects``, ``/api/projects/ID/import``,
``/api/projects/ID/export``, ``/api/users``) with ``httpx``, authenticated by an API key: a
personal access token (exchanged for short-lived access tokens) or a legacy token
(``Authorization: Token KEY``); the command reads it from ``LABEL_STUDIO_API_KEY``.
``label-studio-sdk`` is not used: its releases pin ``opencv-python-headless<4.13`` (numpy
below 2.3) or add ``opencv-python``, a second ``cv2`` beside the headless one the ``audit``
extra's pixel judge uses; the calls used here are a few documented endpoints. The tests'
annotators do use ``label-studio-sdk`` (from the server's own environment).
"""

from __future__ import annotations

import base64
import dataclasses
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable
from xml.sax.saxutils import quoteattr

from mag_dataset.actions import ACTION_SPACE
from mag_dataset.harness.annotate import DRAFTS_FILE, describe_action, read_drafts, target_of
from mag_dataset.harness.annotation_store import DEFAULT_DB
from mag_dataset.raw import (
    RawEpisode,
    RawStep,
    image_format,
    iter_episode_dirs,
    read_episode,
    screenshot_bytes,
    step_id,
)

#: ``source`` of the responses this module records.
SOURCE = "label-studio"
#: The environment variable the command reads the API key from.
API_KEY_ENV = "LABEL_STUDIO_API_KEY"
#: The decision choices, as shown in Label Studio and recorded.
CHOICES = ("accept", "edit", "reject")
#: Tasks sent per import request (a request holds the screenshots).
IMPORT_BATCH = 50
#: The pre-annotations' model version (the project pre-labels its tasks with it).
PREDICTION_VERSION = "mag-draft"
_MIME = {"png": "image/png", "webp": "image/webp"}


class LabelStudioError(Exception):
    """Label Studio could not be reached or refused a request: one line saying which and why."""


class _Expired(Exception):
    """A personal access token's access token expired (renewed once, then the call is retried)."""


# -- the labeling interface and the tasks --------------------------------------------------


def labeling_config() -> str:
    """The project's labeling interface (Label Studio's XML config)."""
    choices = "".join(f'<Choice value="{c}" hint={quoteattr(h)}/>' for c, h in zip(
        CHOICES, ("the draft is right as it is", "the text box holds my corrected guide", "the draft is wrong: keep the step's guide")))
    # The decision and the guide come first: under a full-width screenshot they fell below the
    # fold at 1366x900, and beside it (two columns) the screenshot shrank to ~440 px.
    return (
        '<View>'
        '<Header value="$intent" size="5"/>'
        '<Text name="action" value="$action"/>'
        '<Text name="answers" value="$answers"/>'
        '<TextArea name="guide" toName="screenshot" editable="true" maxSubmissions="1" rows="2" transcription="true"/>'
        '<Choices name="decision" toName="screenshot" choice="single-radio" required="true" showInline="true">'
        f'{choices}</Choices>'
        '<TextArea name="note" toName="screenshot" placeholder="note (optional)" maxSubmissions="1" rows="1"/>'
        '<Image name="screenshot" value="$image" zoom="true" zoomControl="true" rotateControl="false"/>'
        '<RectangleLabels name="target" toName="screenshot" strokeWidth="3" showInline="true">'
        '<Label value="target" background="#ff0000"/></RectangleLabels>'
        '<KeyPointLabels name="point" toName="screenshot" strokeWidth="3" showInline="true">'
        '<Label value="target point" background="#ff0000"/></KeyPointLabels>'
        '</View>'
    )


def _pct(v: float, size: int) -> float:
    return round(100.0 * min(max(v, 0.0), size) / size, 4)


def target_regions(step: RawStep) -> list[dict[str, Any]]:
    """The gold target as Label Studio results: a rectangle, or a keypoint for a point-only step."""
    w, h = step.image_width, step.image_height
    base = {"to_name": "screenshot", "original_width": w, "original_height": h, "image_rotation": 0}
    if ACTION_SPACE[step.action.type].targeted:
        box = step.target_bbox
        if box is None and (t := target_of(step)) is not None:
            box = t.bbox
        if box is not None:
            x0, y0, x1, y1 = box
            return [{**base, "id": "target", "from_name": "target", "type": "rectanglelabels",
                     "value": {"x": _pct(x0, w), "y": _pct(y0, h), "width": round(_pct(x1, w) - _pct(x0, w), 4),
                               "height": round(_pct(y1, h) - _pct(y0, h), 4), "rotation": 0,
                               "rectanglelabels": ["target"]}}]
        if step.action.coordinate is not None:
            x, y = step.action.coordinate
            return [{**base, "id": "point", "from_name": "point", "type": "keypointlabels",
                     "value": {"x": _pct(x, w), "y": _pct(y, h), "width": 0.8, "keypointlabels": ["target point"]}}]
    return []


def data_uri(folder: Path, step: RawStep) -> str:
    """The step's screenshot as a ``data:`` URI (its own bytes: PNG or lossless WebP)."""
    data = screenshot_bytes(folder, step)
    mime = _MIME.get(image_format(data) or "", "image/png")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def step_task(episode: RawEpisode, step: RawStep, folder: Path, draft: str, draft_source: str,
              seen_version: Any, answers: str = "") -> dict[str, Any]:
    """One Label Studio task (data and prediction) for verifying ``step``'s draft guide.

    ``answers`` are the step's responses so far, in words (an adjudicator sees whom they decide between).
    """
    sid = step_id(episode.task_id, step.step_index)
    result = [*target_regions(step),
              {"id": "guide", "from_name": "guide", "to_name": "screenshot", "type": "textarea", "value": {"text": [draft]}}]
    return {
        "data": {"image": data_uri(folder, step), "step_id": sid, "episode_id": episode.episode_id,
                 "site": episode.site, "intent": episode.intent, "action": describe_action(step),
                 "draft": draft, "draft_source": draft_source, "guide_before": step.guide,
                 "seen_version": seen_version, "answers": f"Answers so far: {answers or 'none'}"},
        "predictions": [{"model_version": PREDICTION_VERSION, "result": result}],
    }


@dataclass(frozen=True)
class Item:
    """A step to verify: its episode, folder, draft and where the draft came from."""

    step_id: str
    episode: RawEpisode
    step: RawStep
    folder: Path
    draft: str
    draft_source: str


def verification_items(raw_dir: str | os.PathLike, drafts_path: str | os.PathLike | None = None,
                       step_ids: Iterable[str] | None = None) -> list[Item]:
    """The steps with a draft guide to verify (the drafts file's steps), in corpus order.

    Raises:
        FileNotFoundError: the corpus or an explicit drafts file is missing.
        ValueError: the corpus has no drafts, or ``step_ids`` names steps it does not have.
    """
    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise FileNotFoundError(f"raw corpus folder not found: {raw_dir}")
    dp = Path(drafts_path) if drafts_path is not None else raw_dir / DRAFTS_FILE
    if not dp.is_file():
        raise FileNotFoundError(f"drafts file not found: {dp} (draft guides first: mag draft-guides --raw {raw_dir})")
    drafts = read_drafts(dp)
    wanted = set(step_ids) if step_ids is not None else None
    items = []
    for folder in iter_episode_dirs(raw_dir):
        ep = read_episode(folder)
        for st in ep.steps:
            sid = step_id(ep.task_id, st.step_index)
            if sid in drafts and (wanted is None or sid in wanted):
                items.append(Item(sid, ep, st, folder, drafts[sid].draft, "llm"))
    if wanted is not None and (missing := wanted - {i.step_id for i in items}):
        raise ValueError(f"{len(missing)} asked step(s) have no draft in {dp}: {', '.join(sorted(missing)[:5])}")
    if not items:
        raise ValueError(f"{dp} holds no drafts for the steps of {raw_dir}")
    return items


# -- the REST client ----------------------------------------------------------------------


class Client:
    """Label Studio's REST API, as much of it as the bridge uses.

    Args:
        url: the server, e.g. ``http://127.0.0.1:8080``.
        api_key: a personal access token (Account & Settings → Personal Access Token: a JWT,
            exchanged for a short-lived access token at ``/api/token/refresh/`` and again when
            that expires) or a legacy token (sent as ``Authorization: Token KEY``).
        timeout: seconds per request.
    """

    def __init__(self, url: str, api_key: str, timeout: float = 120.0):
        import httpx

        api_key = api_key.strip()
        if not api_key:
            raise LabelStudioError(f"no Label Studio API key: set {API_KEY_ENV} (Account & Settings → "
                                   f"Personal Access Token, or Legacy Token)")
        self.url = url.rstrip("/")
        self._key = api_key
        self._personal = api_key.startswith("eyJ") and api_key.count(".") == 2  # a JWT refresh token
        self._access: str | None = None
        self._http = httpx.Client(base_url=self.url, timeout=timeout, follow_redirects=False,
                                  headers={"Accept": "application/json"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _auth(self, renew: bool = False) -> dict[str, str]:
        if not self._personal:
            return {"Authorization": f"Token {self._key}"}
        if self._access is None or renew:
            got = self._send("POST", "/api/token/refresh/", {}, what="exchange the personal access token",
                             json={"refresh": self._key})
            self._access = str(got["access"])
        return {"Authorization": f"Bearer {self._access}"}

    def request(self, method: str, path: str, *, what: str, **kw: Any) -> Any:
        """One API call; any failure becomes a one-line :class:`LabelStudioError` naming ``what``."""
        try:
            return self._send(method, path, self._auth(), what=what, may_expire=self._personal, **kw)
        except _Expired:  # a personal token's access token lasts minutes: renew it once
            return self._send(method, path, self._auth(renew=True), what=what, **kw)

    def _send(self, method: str, path: str, auth: dict[str, str], *, what: str, may_expire: bool = False,
              **kw: Any) -> Any:
        import httpx

        try:
            r = self._http.request(method, path, headers=auth, **kw)
        except httpx.TransportError as e:
            raise LabelStudioError(f"cannot reach Label Studio at {self.url} ({type(e).__name__}: {e or 'no answer'}); "
                                   f"is the server running?") from None
        if r.status_code in (401, 403):
            if may_expire:  # Label Studio answers an expired access token as no credentials at all
                raise _Expired()
            kind = "personal access token" if self._personal else "legacy token (legacy tokens must be enabled for the organization)"
            raise LabelStudioError(f"Label Studio at {self.url} refused the API key ({r.status_code}) while trying to "
                                   f"{what}: check {API_KEY_ENV} (read as a {kind})")
        if r.status_code == 404:
            raise LabelStudioError(f"Label Studio at {self.url}: not found while trying to {what} ({path})")
        if r.status_code >= 400:
            raise LabelStudioError(f"Label Studio at {self.url} answered {r.status_code} while trying to {what}: "
                                   f"{' '.join(r.text.split())[:300]}")
        if r.status_code in (301, 302) or "json" not in r.headers.get("content-type", ""):
            raise LabelStudioError(f"{self.url} did not answer as Label Studio's API while trying to {what} "
                                   f"(status {r.status_code}, {r.headers.get('content-type', 'no content type')})")
        return r.json()

    def whoami(self) -> dict[str, Any]:
        return self.request("GET", "/api/current-user/whoami", what="check the API key")

    def projects(self) -> list[dict[str, Any]]:
        out, page = [], 1
        while True:
            got = self.request("GET", "/api/projects", params={"page": page, "page_size": 100}, what="list projects")
            rows = got["results"] if isinstance(got, dict) else got
            out.extend(rows)
            if not isinstance(got, dict) or not got.get("next"):
                return out
            page += 1

    def project(self, project_id: int) -> dict[str, Any]:
        try:
            return self.request("GET", f"/api/projects/{int(project_id)}", what=f"open project {project_id}")
        except LabelStudioError as e:
            if ": not found while" in str(e):
                raise LabelStudioError(f"Label Studio at {self.url} has no project {project_id} "
                                       f"(see the projects list at {self.url}/projects)") from None
            raise

    def create_project(self, title: str, label_config: str, description: str = "") -> dict[str, Any]:
        return self.request("POST", "/api/projects", what=f"create project {title!r}",
                            json={"title": title, "label_config": label_config, "description": description,
                                  "show_collab_predictions": True, "model_version": PREDICTION_VERSION})

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> int:
        got = self.request("POST", f"/api/projects/{project_id}/import", json=tasks,
                           params={"commit_to_project": "true", "return_task_ids": "true"},
                           what=f"import {len(tasks)} tasks into project {project_id}")
        return int(got.get("task_count", len(tasks)))

    def export_tasks(self, project_id: int) -> list[dict[str, Any]]:
        """Every task of the project with its annotations (Label Studio's JSON export)."""
        return self.request("GET", f"/api/projects/{project_id}/export",
                            params={"exportType": "JSON", "download_all_tasks": "true"},
                            what=f"export project {project_id}")

    def users(self) -> dict[int, str]:
        """User id -> e-mail address."""
        got = self.request("GET", "/api/users", what="list users")
        return {int(u["id"]): str(u.get("email") or u.get("username") or u["id"]) for u in got}


# -- export -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportReport:
    project_id: int
    title: str
    tasks: int
    url: str

    def summary(self) -> str:
        return (f"exported {self.tasks} verification task(s) to Label Studio project {self.project_id} "
                f"({self.title!r}): {self.url}/projects/{self.project_id}")


def export_project(raw_dir: str | os.PathLike, client: Client, title: str, *,
                   drafts_path: str | os.PathLike | None = None, db_path: str | os.PathLike | None = None,
                   step_ids: Iterable[str] | None = None, needs_adjudication: bool = False) -> ExportReport:
    """Create a Label Studio project ``title`` holding the corpus's verification tasks.

    With ``needs_adjudication``, only the steps whose annotators disagree, each showing the
    answers so far: whoever answers one in Label Studio and took no part in the disagreement
    adjudicates it (the store's round rule), and their response decides the step.

    Every task is built before the project is created, so a corpus that cannot be exported
    (a missing screenshot, no drafts) leaves no half-filled project behind.

    Raises:
        LabelStudioError: the server is unreachable, refuses the key, or a project ``title``
            exists already (import into it by id, or pick another title).
        FileNotFoundError / ValueError: the corpus, its drafts or its database.
    """
    raw_dir = Path(raw_dir)
    with _open_store(raw_dir, db_path) as store:
        if needs_adjudication:
            split = store.needs_adjudication("verify")
            if not split:
                raise ValueError(f"no step of {raw_dir} needs adjudication (no verification disagreement)")
            step_ids = split if step_ids is None else [s for s in step_ids if s in set(split)]
        items = verification_items(raw_dir, drafts_path, step_ids)
        tasks = [step_task(i.episode, i.step, i.folder, i.draft, i.draft_source, _version(store, i.step_id),
                           "; ".join(r.describe() for r in store.responses(i.step_id, kind="verify")))
                 for i in items]
    client.whoami()
    same = [p for p in client.projects() if p.get("title") == title]
    if same:
        raise LabelStudioError(f"Label Studio at {client.url} already has a project {title!r} (id {same[0]['id']}); "
                               f"import it (mag label-studio import --project {same[0]['id']}) or export under another --title")
    project = client.create_project(title, labeling_config(), description=f"mag_dataset verification of {raw_dir.name}")
    pid = int(project["id"])
    for k in range(0, len(tasks), IMPORT_BATCH):
        client.import_tasks(pid, tasks[k:k + IMPORT_BATCH])
    return ExportReport(pid, title, len(tasks), client.url)


# -- import -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Annotation:
    """One Label Studio annotation read as a verification response."""

    annotation_id: int
    step_id: str
    annotator: str
    decision: str
    guide: str
    draft: str
    draft_source: str
    note: str
    seen_version: Any
    updated_at: str


def _texts(result: list[dict[str, Any]], name: str) -> str | None:
    for r in result:
        if r.get("from_name") == name and r.get("type") == "textarea":
            return " ".join(" ".join(r.get("value", {}).get("text") or []).split())
    return None


def read_annotation(task: dict[str, Any], annotation: dict[str, Any], users: dict[int, str]) -> Annotation | str:
    """``annotation`` of ``task`` as a :class:`Annotation`, or why it is none (a one-line reason)."""
    data = task.get("data") or {}
    sid = data.get("step_id")
    aid = annotation.get("id")
    if not sid:
        return f"task {task.get('id')}: no step_id in its data (not a task of mag label-studio export)"
    if annotation.get("was_cancelled"):
        return f"{sid}: annotation {aid} was skipped in Label Studio"
    result = annotation.get("result") or []
    picked = [c for r in result if r.get("from_name") == "decision" for c in r.get("value", {}).get("choices", [])]
    if len(picked) != 1 or picked[0] not in CHOICES:
        return f"{sid}: annotation {aid} has no decision (one of {', '.join(CHOICES)})"
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        annotator = who.get("email") or users.get(int(who.get("id", -1)), "")
    else:
        annotator = users.get(int(who), "") if who is not None else ""
    if not annotator:
        return f"{sid}: annotation {aid} names no Label Studio user ({who!r})"
    draft = str(data.get("draft", ""))
    text = _texts(result, "guide")
    decision = picked[0]
    guide = {"accept": draft, "edit": text if text is not None else draft, "reject": ""}[decision]
    if decision == "edit" and not guide:
        return f"{sid}: annotation {aid} chose edit with an empty guide"
    return Annotation(int(aid), str(sid), str(annotator), decision, guide, draft, str(data.get("draft_source", "llm")),
                    _texts(result, "note") or "", data.get("seen_version"), str(annotation.get("updated_at", "")))


@dataclass
class ImportReport:
    recorded: int = 0
    already: int = 0
    stale: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    changed_after_import: list[str] = field(default_factory=list)
    episodes_rewritten: int = 0

    def summary(self) -> str:
        parts = [f"recorded {self.recorded} response(s) from Label Studio",
                 f"{self.already} already imported", f"{len(self.stale)} refused as stale",
                 f"{len(self.skipped)} not responses"]
        if self.changed_after_import:
            parts.append(f"{len(self.changed_after_import)} changed in Label Studio after their import (not re-imported)")
        return "; ".join(parts) + f"; {self.episodes_rewritten} episode(s) rewritten"

    def lines(self) -> list[str]:
        return ([f"stale: {s}" for s in self.stale] + [f"not a response: {s}" for s in self.skipped]
                + [f"changed after import: {s}" for s in self.changed_after_import])


_IMPORTS_TABLE = """CREATE TABLE IF NOT EXISTS label_studio_imports (
    server TEXT NOT NULL,
    project INTEGER NOT NULL,
    annotation INTEGER NOT NULL,
    step_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    PRIMARY KEY (server, project, annotation)
)"""


class _Imported:
    """Which Label Studio annotations were imported (this module's table in the annotation database).

    The table is the bridge's own: the store's schema and migrations do not know it, and
    ``CREATE TABLE IF NOT EXISTS`` makes it on first use.
    """

    def __init__(self, path: Path):
        self._db = sqlite3.connect(path, timeout=30)
        with self._db:
            self._db.execute(_IMPORTS_TABLE)

    def get(self, server: str, project: int) -> dict[int, str]:
        rows = self._db.execute("SELECT annotation, updated_at FROM label_studio_imports WHERE server = ? AND project = ?",
                                (server, project))
        return {int(a): u for a, u in rows}

    def add(self, server: str, project: int, r: Annotation) -> None:
        with self._db:
            self._db.execute("INSERT OR IGNORE INTO label_studio_imports (server, project, annotation, step_id, annotator, "
                             "updated_at, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (server, project, r.annotation_id, r.step_id, r.annotator, r.updated_at,
                              time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))

    def count(self, server: str, project: int, sid: str) -> int:
        """How many annotations of ``project`` on step ``sid`` were imported (the task's peers so far)."""
        return int(self._db.execute("SELECT COUNT(*) FROM label_studio_imports WHERE server = ? AND project = ? "
                                    "AND step_id = ?", (server, project, sid)).fetchone()[0])

    def close(self) -> None:
        self._db.close()


def import_project(raw_dir: str | os.PathLike, client: Client, project_id: int, *,
                   db_path: str | os.PathLike | None = None) -> ImportReport:
    """Record the annotations of Label Studio project ``project_id`` as responses (idempotent).

    Label Studio's annotators of one task answer independently (none sees another's
    annotation), so the annotations of a task are each other's peers, not changes one of them
    should have seen: an annotation is compared with the step's version at export plus the
    responses already imported from the same task. Anything else recorded on the step since
    the export (an answer in ``mag annotate``, another project) makes it stale.

    Raises:
        LabelStudioError: the server is unreachable, refuses the key, or has no such project.
        ValueError: a task names a step the corpus does not have.
    """
    from mag_dataset.harness.annotate import apply_decisions

    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise FileNotFoundError(f"raw corpus folder not found: {raw_dir}")
    client.project(project_id)
    tasks = client.export_tasks(project_id)
    users = client.users()
    steps = {step_id(ep.task_id, st.step_index): st for ep in map(read_episode, iter_episode_dirs(raw_dir))
             for st in ep.steps}
    for t in tasks:
        sid = (t.get("data") or {}).get("step_id")
        if sid and sid not in steps:
            raise ValueError(f"Label Studio project {project_id} has a task for step {sid!r}, which is not in "
                             f"{raw_dir}: was it exported from another corpus?")
    report = ImportReport()
    db = Path(db_path) if db_path is not None else raw_dir / DEFAULT_DB
    with _open_store(raw_dir, db_path) as store:
        imported = _Imported(db)
        try:
            done = imported.get(client.url, project_id)
            annotations = sorted(((t, a) for t in tasks for a in t.get("annotations") or []),
                                 key=lambda ta: (str(ta[1].get("created_at", "")), int(ta[1].get("id", 0))))
            for task, ann in annotations:
                aid = int(ann.get("id", 0))
                if aid in done:
                    report.already += 1
                    if str(ann.get("updated_at", "")) != done[aid]:
                        report.changed_after_import.append(f"{task['data'].get('step_id')}: annotation {aid}")
                    continue
                r = read_annotation(task, ann, users)
                if isinstance(r, str):
                    report.skipped.append(r)
                    continue
                st = steps[r.step_id]
                originals = store.originals()
                if r.step_id not in originals:
                    store.keep_original(r.step_id, st.guide, st.guide_source.value)
                    originals = store.originals()
                if r.decision == "reject":  # a rejected draft leaves the step its guide from before annotation
                    r = dataclasses.replace(r, guide=originals[r.step_id][0])
                seen = _seen_version(r.seen_version) + imported.count(client.url, project_id, r.step_id)
                why = _record(store, r, seen)
                if why is not None:
                    report.stale.append(f"{r.step_id}: {r.annotator}'s {r.decision} (annotation {aid}) {why}")
                    continue
                imported.add(client.url, project_id, r)
                report.recorded += 1
        finally:
            imported.close()
        if report.recorded:
            report.episodes_rewritten = apply_decisions(raw_dir, store)
    return report


def _seen_version(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"a task's seen_version must be a step version (an int >= 0), got {v!r}: "
                         f"was the project made by mag label-studio export?")
    return v


# -- the annotation store ------------------------------------------------------------------


def _open_store(raw_dir: Path, db_path: str | os.PathLike | None) -> Any:
    from mag_dataset.harness.annotation_store import AnnotationStore

    return AnnotationStore(Path(db_path) if db_path is not None else raw_dir / DEFAULT_DB)


def _version(store: Any, sid: str) -> int:
    """The step's version as the task is exported (what a response made on it has seen)."""
    return int(store.step_version(sid))


def _record(store: Any, r: Annotation, seen_version: int) -> str | None:
    """Record ``r``; returns None, or why it was refused (stale: what changed since the export)."""
    from mag_dataset.harness.annotation_store import StaleView

    try:
        store.record_response(r.step_id, r.annotator, "verify", r.decision, guide=r.guide, draft=r.draft,
                              draft_source=r.draft_source, note=r.note, seen_version=seen_version, source=SOURCE)
    except StaleView as e:
        return f"refused: {e}"
    return None


# -- a local server -------------------------------------------------------------------------

#: The Label Studio release a local server runs. It goes in a virtual environment of its own:
#: its pins (openai<2, among others) conflict with this package's (openai>=3).
SERVER_PACKAGE = "label-studio==1.23.2"
#: Settings that keep a local server from calling out: no version check, no analytics, no
#: error reporting, feature flags from its own defaults, no sign-up without an invitation
#: link; and every proxy variable pointing at a closed local port (9, discard), so what is left
#: (its web page asks the server for "tips", which it fetches from raw.githubusercontent.com:
#: seen with a recording proxy) fails at once instead of leaving the machine.
_NOWHERE = "http://127.0.0.1:9"
OFFLINE_ENV = {
    "LATEST_VERSION_CHECK": "false",
    "FEATURE_FLAGS_OFFLINE": "true",
    "COLLECT_ANALYTICS": "false",
    "SENTRY_DSN": "",
    "FRONTEND_SENTRY_DSN": "",
    "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
    **{k: _NOWHERE for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")},
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


def server_home() -> Path:
    """Where a local server's virtual environment lives: ``$MAG_LABEL_STUDIO_HOME`` or
    ``~/.cache/mag_dataset/label-studio``."""
    env = os.environ.get("MAG_LABEL_STUDIO_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mag_dataset" / "label-studio"


def _uv() -> str | None:
    import shutil
    import sys

    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("uv")


class LocalServer:
    """A Label Studio server on 127.0.0.1 (SQLite), in its own virtual environment, offline.

    Args:
        data_dir: the server's data (its SQLite database, uploads, the log ``server.log``).
        home: where the virtual environment is installed and kept (default :func:`server_home`).
        port: the port (default: a free one).
    """

    def __init__(self, data_dir: str | os.PathLike, home: str | os.PathLike | None = None, port: int | None = None):
        self.home = Path(home) if home is not None else server_home()
        self.venv = self.home / "venv"
        self.data_dir = Path(data_dir)
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.data_dir / "server.log"
        self.process: Any = None

    @property
    def installed(self) -> bool:
        marker = self.venv / "mag-installed.txt"
        return marker.is_file() and marker.read_text().strip() == SERVER_PACKAGE

    def install(self) -> float:
        """Install :data:`SERVER_PACKAGE` into the virtual environment unless it is there; returns seconds taken.

        Raises:
            LabelStudioError: the environment could not be made (the installer's last line).
        """
        from filelock import FileLock

        if self.installed:
            return 0.0
        self.home.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.home / "install.lock")):  # two commands installing at once: the second waits
            if self.installed:
                return 0.0
            return self._install()

    def _install(self) -> float:
        import shutil
        import subprocess
        import sys

        t0 = time.monotonic()
        shutil.rmtree(self.venv, ignore_errors=True)
        python = self.venv / "bin" / "python"
        uv = _uv()
        steps = [[sys.executable, "-m", "venv", str(self.venv)]]
        if uv:
            # no --compile-bytecode (37 of its 50 s): the first start writes the bytecode it imports
            steps.append([uv, "pip", "install", "--quiet", "--python", str(python), SERVER_PACKAGE])
        else:
            steps.append([str(python), "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check",
                          SERVER_PACKAGE])
        for argv in steps:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                last = [ln for ln in (r.stderr or r.stdout).splitlines() if ln.strip()][-1:] or ["no output"]
                raise LabelStudioError(f"could not install {SERVER_PACKAGE} into {self.venv}: {last[0][:300]}")
        (self.venv / "mag-installed.txt").write_text(SERVER_PACKAGE + "\n")
        return time.monotonic() - t0

    def _env(self, **extra: str) -> dict[str, str]:
        # PYTHONDONTWRITEBYTECODE dropped: the venv is installed without bytecode, which the
        # first start writes (else every start compiles Django and Label Studio again)
        env = {k: v for k, v in os.environ.items()
               if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")}
        env.update(OFFLINE_ENV)
        env["LABEL_STUDIO_BASE_DATA_DIR"] = str(self.data_dir)
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env.update(extra)
        return env

    def start(self, username: str, password: str, token: str, timeout: float = 600.0) -> float:
        """Start the server with its first user (an administrator) and that user's API token.

        Returns:
            Seconds until the server answered ``/health``.

        Raises:
            LabelStudioError: it exited or did not answer within ``timeout`` (with its log's last lines).
        """
        import subprocess
        import urllib.request

        if not self.installed:
            raise LabelStudioError(f"Label Studio is not installed in {self.venv}")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = self._env(LABEL_STUDIO_USERNAME=username, LABEL_STUDIO_PASSWORD=password, LABEL_STUDIO_USER_TOKEN=token)
        t0 = time.monotonic()
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(self.venv / "bin" / "label-studio"), "start", "--no-browser", "--internal-host", "127.0.0.1",
                 "--port", str(self.port), "--data-dir", str(self.data_dir), "--enable-legacy-api-token"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=self.data_dir,
                start_new_session=True)
        busy = f"Port {self.port} is in use"
        while time.monotonic() - t0 < timeout:
            if busy in self.log_tail(60):  # Label Studio would go on to the next free port, unasked
                self.stop()
                raise LabelStudioError(f"port {self.port} on 127.0.0.1 is in use: pick another (--port N)")
            if self.process.poll() is not None:
                raise LabelStudioError(f"Label Studio exited with status {self.process.returncode} while starting; "
                                       f"its log {self.log} ends:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as r:
                    if r.status == 200:
                        return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(1)
        self.stop()
        raise LabelStudioError(f"Label Studio did not answer at {self.url}/health within {timeout:.0f} s; "
                               f"its log {self.log} ends:\n{self.log_tail()}")

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def user_token(self, email: str) -> str:
        """The API token of user ``email`` (``label-studio user``: the server's own command, on its database)."""
        import ast
        import subprocess

        r = subprocess.run([str(self.venv / "bin" / "label-studio"), "user", "--username", email,
                            "--data-dir", str(self.data_dir)], capture_output=True, text=True, timeout=300,
                           env=self._env(), cwd=self.data_dir)
        for line in r.stdout.splitlines():
            if line.startswith("{") and "'token'" in line:
                return str(ast.literal_eval(line)["token"])
        raise LabelStudioError(f"no token for Label Studio user {email}: {(r.stdout + r.stderr).strip()[-300:]}")

    def stop(self) -> None:
        """Stop the server this object started (its process, by id; then its process group)."""
        import signal
        import subprocess

        p, self.process = self.process, None
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=20)
        try:
            os.killpg(p.pid, signal.SIGTERM)  # a worker it left behind (its group is its own: start_new_session)
        except (ProcessLookupError, PermissionError):
            pass


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


__all__ = [
    "API_KEY_ENV", "CHOICES", "OFFLINE_ENV", "SERVER_PACKAGE", "SOURCE", "Client", "LocalServer", "ExportReport", "ImportReport", "Item", "LabelStudioError",
    "Annotation", "export_project", "import_project", "labeling_config", "server_home", "read_annotation", "step_task",
    "target_regions", "verification_items",
]
