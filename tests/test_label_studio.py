"""The Label Studio bridge against a real Label Studio server (``label-studio`` from PyPI, SQLite,
127.0.0.1, offline): export the verification tasks, annotate them through its API as two users
(with ``label-studio-sdk``, in the server's own environment), import, and build.

The server is installed once per machine into its own virtual environment under the test home
(its pins conflict with this package's) and started afresh for the module; if it cannot be
installed or started, the tests fail with its log (never skip).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import harness_fixtures as hf
import httpx
import pytest
from filelock import FileLock

from mag_dataset.cli import main
from mag_dataset.harness.annotate import AnnotationStore
from mag_dataset.harness.label_studio import (
    API_KEY_ENV,
    SERVER_PACKAGE,
    Client,
    LabelStudioError,
    LocalServer,
    labeling_config,
    target_regions,
)
from mag_dataset.raw import read_episode, read_stages

pytestmark = [pytest.mark.slow]

#: The server's environment is kept here between runs (like the test sites' installs).
TEST_HOME = Path.home() / ".cache" / "mag_dataset" / "test-label-studio"
ALICE = "alice@mag.test"
BOB = "bob@mag.test"
DANA = "dana@mag.test"
ALICE_KEY = "mag-test-alice-key-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    t0 = time.monotonic()
    template = TEST_HOME / "data-template"
    installed = LocalServer(template, home=TEST_HOME).install()  # raises with the installer's last line
    with FileLock(str(TEST_HOME / "template.lock")):  # another test run making it at the same time waits
        _make_template(template)
    data = tmp_path_factory.mktemp("label-studio-data")
    shutil.copytree(template, data, dirs_exist_ok=True)
    srv = LocalServer(data, home=TEST_HOME)
    up = srv.start(ALICE, "alice-password-1", ALICE_KEY)  # raises with the server's log when it cannot
    print(f"\nLabel Studio: install {installed:.1f} s (0 = cached), start {up:.1f} s, "
          f"fixture {time.monotonic() - t0:.1f} s, at {srv.url}", file=sys.stderr)
    try:
        yield srv
    finally:
        srv.stop()


def _make_template(template: Path) -> None:
    """A migrated database with alice: a fresh one takes Label Studio 60-100 s of migrations on
    2 cores, a copy of this one starts in 4-10 s. Made once per machine (and per release)."""
    marker = template / "mag-template-of.txt"
    if marker.is_file() and marker.read_text() == SERVER_PACKAGE:
        return
    shutil.rmtree(template, ignore_errors=True)
    first = LocalServer(template, home=TEST_HOME)
    migrated = first.start(ALICE, "alice-password-1", ALICE_KEY)
    first.stop()
    (template / "server.log").unlink(missing_ok=True)
    marker.write_text(SERVER_PACKAGE)
    print(f"\nLabel Studio: first start on a new database {migrated:.1f} s", file=sys.stderr)


def _drafts(raw: Path, steps: dict[str, str]) -> None:
    (raw / "guide_drafts.jsonl").write_text("".join(
        json.dumps({"step_id": sid, "draft": d, "model": "m", "prompt_version": 1}) + "\n" for sid, d in steps.items()))


DRAFTS = {
    "login.seed-0:0": "Type ann into the Username box.",
    "login.seed-0:1": "Type pw in the password field.",
    "login.seed-0:2": "Tick the Remember me box.",
    "login.seed-0:3": "Press the Submit button.",
    "login.seed-1:0": "Enter ann as the user name.",
    "login.seed-1:1": "Fill in pw as the password.",
}

#: (annotator, step, decision, edited text, note, skipped): what the two people do in Label Studio.
PLAN = [
    (ALICE, "login.seed-0:0", "accept", None, "", False),
    (BOB, "login.seed-0:0", "accept", None, "", False),      # agreement on the overlap
    (ALICE, "login.seed-0:1", "edit", "Type 'pw' into the Password field.", "names the field", False),
    (ALICE, "login.seed-0:2", "reject", None, "wrong element", False),
    (ALICE, "login.seed-0:3", "accept", None, "", False),
    (BOB, "login.seed-0:3", "reject", None, "", False),      # disagreement: goes to adjudication
    (BOB, "login.seed-1:0", "accept", None, "", False),      # made on a step answered in the app since the export
    (ALICE, "login.seed-1:1", "accept", None, "", True),     # skipped in Label Studio: no response
]

ANNOTATE = r"""
import json, sys
from label_studio_sdk import LabelStudio
url, plan = sys.argv[1], json.loads(sys.stdin.read())
done = []
for key, task_id, decision, text, note, skipped in plan:
    ls = LabelStudio(base_url=url, api_key=key)
    result = [{"from_name": "decision", "to_name": "screenshot", "type": "choices", "value": {"choices": [decision]}}]
    if text:
        result.append({"from_name": "guide", "to_name": "screenshot", "type": "textarea", "value": {"text": [text]}})
    if note:
        result.append({"from_name": "note", "to_name": "screenshot", "type": "textarea", "value": {"text": [note]}})
    a = ls.annotations.create(id=task_id, result=[] if skipped else result, was_cancelled=skipped)
    done.append(a.id)
print(json.dumps(done))
"""


def _annotate(server: LocalServer, keys: dict[str, str], tasks: dict[str, int], todo=PLAN) -> list[int]:
    """Make ``todo``'s annotations through label-studio-sdk, each as its own user (its own API key)."""
    plan = [(keys[who], tasks[sid], d, text, note, skipped) for who, sid, d, text, note, skipped in todo]
    r = subprocess.run([str(server.venv / "bin" / "python"), "-c", ANNOTATE, server.url], input=json.dumps(plan),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _rows(out: Path) -> dict[str, dict]:
    import datasets

    files = sorted(str(p) for p in out.rglob("*.parquet") if "som" in p.parts)
    assert files, f"no som Parquet under {out}"
    rows = {}
    for f in files:
        for r in datasets.Dataset.from_parquet(f).select_columns(
                ["step_id", "guide", "guide_source", "verified_by", "guide_decision", "verification_notes"]).to_list():
            rows[r["step_id"]] = r
    return rows


def test_round_trip_export_annotate_import_build(server, tmp_path, monkeypatch, capsys):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 2)
    _drafts(raw, DRAFTS)
    monkeypatch.setenv(API_KEY_ENV, ALICE_KEY)

    # export: a project of the 6 drafted steps
    assert main(["label-studio", "export", "--raw", str(raw), "--url", server.url, "--title", "login guides"]) == 0
    out = capsys.readouterr().out
    assert "exported 6 verification task(s)" in out, out
    with Client(server.url, ALICE_KEY) as c:
        [project] = [p for p in c.projects() if p["title"] == "login guides"]
        pid = int(project["id"])
        exported = c.export_tasks(pid)
    assert len(exported) == 6 and project["label_config"] == labeling_config()
    tasks = {t["data"]["step_id"]: t["id"] for t in exported}
    assert set(tasks) == set(DRAFTS)
    first = next(t for t in exported if t["data"]["step_id"] == "login.seed-0:2")
    assert first["data"]["image"].startswith("data:image/png;base64,") and first["data"]["seen_version"] == 0
    assert first["data"]["draft"] == DRAFTS["login.seed-0:2"] and first["data"]["draft_source"] == "llm"
    # the gold target as a pre-annotated box in percent: the checkbox [4] at (12, 72)-(28, 88) of 160x120
    with Client(server.url, ALICE_KEY) as c:
        [pred] = c.request("GET", "/api/predictions/", params={"task": first["id"]}, what="list predictions")
    assert pred["model_version"] == "mag-draft"
    box = next(r for r in pred["result"] if r["from_name"] == "target")["value"]
    assert (box["x"], box["y"], box["width"], box["height"]) == (7.5, 60.0, 10.0, 13.3333)
    text = next(r for r in pred["result"] if r["from_name"] == "guide")["value"]["text"]
    assert text == [DRAFTS["login.seed-0:2"]]

    # a second person, with their own account and key
    with Client(server.url, ALICE_KEY) as c:
        c.request("POST", "/api/users/", json={"email": BOB, "username": "bob"}, what="create bob")
    keys = {ALICE: ALICE_KEY, BOB: server.user_token(BOB)}

    # someone answers login.seed-1:0 in mag annotate after the export
    with AnnotationStore(raw / "annotations.sqlite") as store:
        store.record_response("login.seed-1:0", "carol", "verify", "edit", guide="Type ann as the username.",
                              draft=DRAFTS["login.seed-1:0"], seen_version=0, source="app")

    ids = _annotate(server, keys, tasks)
    assert len(ids) == len(PLAN)

    # import: 6 responses, 1 refused as stale (carol answered first), 1 skipped
    assert main(["label-studio", "import", "--raw", str(raw), "--url", server.url, "--project", str(pid)]) == 0
    cap = capsys.readouterr()
    assert "recorded 6 response(s)" in cap.out and "0 already imported" in cap.out, cap.out
    assert "1 refused as stale" in cap.out and "1 not responses" in cap.out, cap.out
    assert "stale: login.seed-1:0: bob@mag.test's accept" in cap.err and "carol edited" in cap.err, cap.err
    assert "was skipped in Label Studio" in cap.err
    (entry,) = read_stages(raw)  # the import is a corpus stage: the decisions it wrote into the episodes
    assert entry.stage == "label-studio import" and entry.options == {"project": pid}
    assert entry.changed["steps"] > 0 and "annotations.sqlite" in entry.changed["files"]

    with AnnotationStore(raw / "annotations.sqlite") as store:
        got = [(r.step_id, r.annotator, r.decision, r.note) for r in store.responses(kind="verify") if r.source == "label-studio"]
        assert got == [(sid, who, d, note) for who, sid, d, _, note, skipped in PLAN
                       if not skipped and sid != "login.seed-1:0"]
        res = store.resolutions("verify")
        assert res["login.seed-0:0"].status == "decided" and set(res["login.seed-0:0"].verified_by) == {ALICE, BOB}
        assert res["login.seed-0:3"].status == "needs_adjudication"
        assert res["login.seed-1:0"].status == "decided" and res["login.seed-1:0"].verified_by == ("carol",)
        n_before = len(store.responses())
    st3 = read_episode(raw / "login.seed-0").steps[3]  # split: the guide it had, marked disputed
    assert (st3.guide, st3.metadata.get("guide_decision"), st3.metadata.get("verified_by")) == \
        ("Click the 'Submit' button.", "disputed", None)

    # importing again records nothing new
    assert main(["label-studio", "import", "--raw", str(raw), "--url", server.url, "--project", str(pid)]) == 0
    out = capsys.readouterr().out
    assert "recorded 0 response(s)" in out and "6 already imported" in out, out
    with AnnotationStore(raw / "annotations.sqlite") as store:
        assert len(store.responses()) == n_before

    # the disagreement goes to an adjudicator in Label Studio: a project of the split steps
    assert main(["label-studio", "export", "--raw", str(raw), "--url", server.url, "--title", "login disputes",
                 "--needs-adjudication"]) == 0
    assert "exported 1 verification task(s)" in capsys.readouterr().out
    with Client(server.url, ALICE_KEY) as c:
        [project2] = [p for p in c.projects() if p["title"] == "login disputes"]
        [split] = c.export_tasks(int(project2["id"]))
        c.request("POST", "/api/users/", json={"email": DANA, "username": "dana"}, what="create dana")
    assert split["data"]["step_id"] == "login.seed-0:3" and split["data"]["seen_version"] == 2
    assert split["data"]["answers"].startswith(f"Answers so far: {ALICE} accepted at ")
    assert f"; {BOB} rejected at " in split["data"]["answers"]
    keys[DANA] = server.user_token(DANA)
    _annotate(server, keys, {"login.seed-0:3": split["id"]},
              [(DANA, "login.seed-0:3", "edit", "Click the 'Submit' button to log in.", "", False)])
    assert main(["label-studio", "import", "--raw", str(raw), "--url", server.url, "--project", str(project2["id"])]) == 0
    assert "recorded 1 response(s)" in capsys.readouterr().out
    with AnnotationStore(raw / "annotations.sqlite") as store:
        res = store.resolution("login.seed-0:3")
        assert (res.status, res.decision, res.verified_by, res.round) == ("adjudicated", "edit", (DANA,), 2)

    # the imported responses are the team's like any other: agreement on the overlap, the export
    assert main(["annotate", "--raw", str(raw), "--report"]) == 0
    report = capsys.readouterr().out
    assert "5 of 6 steps to verify decided (undecided 1, decided 4, needs_adjudication 0, adjudicated 1)" in report, report
    assert f"{ALICE} × {BOB}: Cohen's kappa 0.000, alpha 0.000, n=2, agree 1" in report, report  # 0:0 agreed, 0:3 not
    assert main(["annotate", "--raw", str(raw), "--export", str(tmp_path / "responses.jsonl")]) == 0
    exported_responses = [json.loads(line) for line in (tmp_path / "responses.jsonl").read_text().splitlines()]
    assert sum(r["source"] == "label-studio" for r in exported_responses) == 7
    capsys.readouterr()

    # the episodes, then the built dataset, show the decisions
    ep = read_episode(raw / "login.seed-0")
    assert [st.metadata.get("verification") for st in ep.steps] == ["accept", "edit", "reject", "edit"]
    built = tmp_path / "built"
    assert main(["build", "--raw", str(raw), "--out", str(built), "--no-progress"]) == 0
    rows = _rows(built)
    assert rows["login.seed-0:0"]["guide"] == DRAFTS["login.seed-0:0"]
    assert rows["login.seed-0:0"]["guide_source"] == "llm"
    assert set(rows["login.seed-0:0"]["verified_by"].split(", ")) == {ALICE, BOB}
    assert (rows["login.seed-0:1"]["guide"], rows["login.seed-0:1"]["guide_source"], rows["login.seed-0:1"]["verified_by"]) \
        == ("Type 'pw' into the Password field.", "human", ALICE)
    # rejected: the step keeps its template guide, verified by alice
    assert (rows["login.seed-0:2"]["guide"], rows["login.seed-0:2"]["guide_source"], rows["login.seed-0:2"]["verified_by"]) \
        == ("Click the 'Remember me' checkbox.", "template", ALICE)
    # disputed, then adjudicated by dana
    assert (rows["login.seed-0:3"]["guide"], rows["login.seed-0:3"]["guide_source"], rows["login.seed-0:3"]["verified_by"]) \
        == ("Click the 'Submit' button to log in.", "human", DANA)
    assert rows["login.seed-1:0"]["verified_by"] == "carol" and rows["login.seed-1:1"]["verified_by"] is None
    assert {sid: (r["guide_decision"], r["verification_notes"]) for sid, r in rows.items()} == {
        "login.seed-0:0": ("accepted", None),
        "login.seed-0:1": ("edited", f"{ALICE}: names the field"),
        "login.seed-0:2": ("rejected", f"{ALICE}: wrong element"),  # a rejected draft stays visible as rejected
        "login.seed-0:3": ("edited", None),
        "login.seed-1:0": ("edited", None),
        "login.seed-1:1": (None, None),
        "login.seed-1:2": (None, None),
        "login.seed-1:3": (None, None),
    }


def test_a_point_only_step_is_a_keypoint():
    import dataclasses

    from mag_dataset.schema import Action

    st = hf.login_episode().steps[2]
    st = dataclasses.replace(st, action=Action(type="click", coordinate=(40, 60)), target_bbox=None)
    [r] = target_regions(st)
    assert r["type"] == "keypointlabels" and (r["value"]["x"], r["value"]["y"]) == (25.0, 50.0)


def test_errors_are_one_line(server, tmp_path, monkeypatch, capsys):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    _drafts(raw, {"login.seed-0:0": "Type ann."})

    def err(argv: list[str]) -> str:
        assert main(["label-studio", *argv]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        return lines[0]

    monkeypatch.setenv(API_KEY_ENV, "not-a-key")
    assert "refused the API key (401)" in err(["export", "--raw", str(raw), "--url", server.url])
    monkeypatch.setenv(API_KEY_ENV, ALICE_KEY)
    assert "has no project 999" in err(["import", "--raw", str(raw), "--url", server.url, "--project", "999"])
    dead = LocalServer(tmp_path / "unused", home=TEST_HOME).url
    assert "cannot reach Label Studio at" in err(["import", "--raw", str(raw), "--url", dead, "--project", "1"])
    monkeypatch.delenv(API_KEY_ENV)
    assert f"set {API_KEY_ENV}" in err(["import", "--raw", str(raw), "--url", server.url, "--project", "1"])
    assert "needs the project id" in err(["import", "--raw", str(raw), "--url", server.url])
    (raw / "guide_drafts.jsonl").unlink()
    monkeypatch.setenv(API_KEY_ENV, ALICE_KEY)
    assert "drafts file not found" in err(["export", "--raw", str(raw), "--url", server.url])


def test_a_personal_access_token_is_exchanged_and_renewed(server):
    with Client(server.url, ALICE_KEY) as c:  # a legacy token makes a personal access token (a JWT)
        pat = c.request("POST", "/api/token/", what="make a personal access token")["token"]
    with Client(server.url, pat) as c:
        assert c.whoami()["email"] == ALICE
        c._access = c._access[:-4] + "AAAA"  # as if it had expired (they last 5 minutes): renewed once
        assert c.whoami()["email"] == ALICE and not c._access.endswith("AAAA")
    forged = pat[:-4] + "AAAA"
    with Client(server.url, forged) as c, pytest.raises(LabelStudioError, match="refused the API key .401. while "
                                                              "trying to exchange the personal access token"):
        c.whoami()


def test_serve_runs_a_local_server_until_ctrl_c(server, tmp_path):
    import os
    import signal

    data = tmp_path / "served"
    shutil.copytree(TEST_HOME / "data-template", data)  # migrated, with alice: starts in seconds
    (data / "mag-login.json").write_text(json.dumps({"username": ALICE, "password": "alice-password-1",
                                                     "api_key": ALICE_KEY}))
    port = LocalServer(data, home=TEST_HOME).port
    env = {**os.environ, "MAG_LABEL_STUDIO_HOME": str(TEST_HOME)}
    p = subprocess.Popen([sys.executable, "-m", "mag_dataset.cli", "label-studio", "serve", "--data-dir", str(data),
                          "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        lines = []
        for line in p.stdout:
            lines.append(line)
            if "Ctrl-C stops it" in line:
                break
        text = "".join(lines)
        assert f"Label Studio at http://127.0.0.1:{port}" in text and f"LABEL_STUDIO_API_KEY={ALICE_KEY}" in text, \
            text + p.stderr.read()
        with Client(f"http://127.0.0.1:{port}", ALICE_KEY) as c:
            assert c.whoami()["email"] == ALICE
    finally:
        p.send_signal(signal.SIGINT)
        try:
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:  # kill mag and its Label Studio, not leave them listening
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
    assert rc == 130
    with pytest.raises(httpx.ConnectError):  # stopped with it
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)

    # a database serve did not make: one line, nothing started
    (data / "mag-login.json").unlink()
    r = subprocess.run([sys.executable, "-m", "mag_dataset.cli", "label-studio", "serve", "--data-dir", str(data),
                        "--port", str(port)], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "did not make" in r.stderr, r.stderr


def test_a_server_that_cannot_start_says_why(server, tmp_path):
    import socket

    data = tmp_path / "busy"
    shutil.copytree(TEST_HOME / "data-template", data)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        srv = LocalServer(data, home=TEST_HOME, port=taken.getsockname()[1])
        with pytest.raises(LabelStudioError) as e:
            srv.start(ALICE, "alice-password-1", ALICE_KEY, timeout=120)
    # Label Studio itself would move to the next port and serve there: refused and stopped instead
    assert str(e.value) == f"port {srv.port} on 127.0.0.1 is in use: pick another (--port N)"
    assert srv.process is None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{srv.port + 1}/health", timeout=5)

    # a server that exits while starting fails with its log
    (data / "label_studio.sqlite3").write_bytes(b"not a database")
    with pytest.raises(LabelStudioError) as e:
        LocalServer(data, home=TEST_HOME).start(ALICE, "alice-password-1", ALICE_KEY, timeout=120)
    assert "Label Studio exited with status" in str(e.value) and "its log" in str(e.value), str(e.value)
    assert "DatabaseError" in str(e.value) or "database" in str(e.value).lower(), str(e.value)
