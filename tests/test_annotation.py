"""LLM-assisted guide drafting (stub endpoint), the decision store, write-back, adjudication,
and the Gradio verification app driven in a real headless Chromium."""

from __future__ import annotations

import json
import re
import socket

import harness_fixtures as hf
import pytest
from stub_openai import Malformed, Status, StubOpenAI

from mag_dataset.cli import main
from mag_dataset.harness.annotate import (
    DRAFT_SYSTEM_PROMPT,
    AnnotationStore,
    apply_decisions,
    clean_draft,
    draft_guides,
    read_drafts,
)
from mag_dataset.harness.annotate_app import Session
from mag_dataset.llm_client import ChatClient, LLMConfigError
from mag_dataset.raw import read_audit, read_episode, write_audit
from mag_dataset.schema import AuditRecord, AuditStatus, GuideSource


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("Type 'ann' into the Username box.", "Type 'ann' into the Username box."),
        ('  "Click Submit."  \n', "Click Submit."),
        ("Guide: Click   the\tSubmit button.", "Click the Submit button."),
        ("\n\nTick Remember me.\nBecause the task says so.", "Tick Remember me."),
        ("   \n ", None),
        ('""', None),
    ],
)
def test_clean_draft(answer, expected):
    assert clean_draft(answer) == expected


def drafter(body):
    text = body["messages"][1]["content"][1]["text"]
    action = re.search(r"^Action to take now: (.*)$", text, re.M).group(1)
    if "Remember me" in action:
        return "   "  # an empty answer: no draft
    return f"Draft for {action.split(' on element')[0]}."


def test_draft_guides_cached(tmp_path):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 2)
    with StubOpenAI(responder=drafter) as stub:
        client = ChatClient(stub.base_url, "drafter", api_key_env=None, cache_dir=tmp_path / "cache", backoff=0.01)
        rep = draft_guides(raw, client)
        assert (rep.steps, rep.drafted, rep.empty, rep.failed, rep.requests) == (8, 6, 2, 0, 8)
        drafts = read_drafts(raw / "guide_drafts.jsonl")
        assert len(drafts) == 6 and drafts["login.seed-0:0"].draft == 'Draft for type text="ann".'
        assert drafts["login.seed-0:3"].model == "drafter"
        body = stub.requests[0]
        assert body["messages"][0]["content"] == DRAFT_SYSTEM_PROMPT
        assert body["messages"][1]["content"][0]["type"] == "image_url"
        texts = [b["messages"][1]["content"][1]["text"] for b in stub.requests]
        step2 = next(t for t in texts if "Remember me" in t)
        assert "1. Type 'ann' into the Username field.\n2. Type 'pw' into the Password field." in step2
        # rerun: zero requests, same file
        before = (raw / "guide_drafts.jsonl").read_bytes()
        client2 = ChatClient(stub.base_url, "drafter", api_key_env=None, cache_dir=tmp_path / "cache")
        rep2 = draft_guides(raw, client2)
        assert rep2.requests == 0 and rep2.cache_hits == 8 and stub.count == 8
        assert (raw / "guide_drafts.jsonl").read_bytes() == before
    with StubOpenAI(responder=lambda b: Status(401, message="no such key")) as denied:
        with pytest.raises(LLMConfigError, match="no such key"):
            draft_guides(raw, ChatClient(denied.base_url, "m", api_key_env=None), out_path=tmp_path / "d.jsonl")
    assert not (tmp_path / "d.jsonl").exists()


def test_draft_guides_cli(tmp_path, capsys):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    with StubOpenAI(responder=drafter) as stub:
        args = ["draft-guides", "--raw", str(raw), "--base-url", stub.base_url, "--model", "m", "--api-key-env", "none",
                "--cache-dir", str(tmp_path / "c")]
        assert main(args) == 0
        assert "3 drafts for 4 steps (1 empty answers, 0 failed calls); requests sent 4" in capsys.readouterr().out
        assert stub.requests[0]["max_tokens"] == 64 and stub.requests[0]["temperature"] == 0
    assert main(["draft-guides", "--raw", str(raw), "--base-url", "localhost:8000", "--model", "m"]) == 2
    assert "is not an http(s) URL" in capsys.readouterr().err
    assert main(["draft-guides", "--raw", str(raw), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--sources", "bogus"]) == 2
    assert "--sources" in capsys.readouterr().err


@pytest.mark.parametrize("failure, shown, sent", [
    (Status(500, message="model crashed"), "HTTP 500: model crashed", 4),  # 1 + 3 retries
    (Malformed(), "not JSON", 1),  # a garbage body is not retried
])
def test_draft_guides_against_a_dead_endpoint_exits_non_zero_and_writes_no_file(tmp_path, capsys, failure, shown, sent):
    """The 'must show': an endpoint answering 500 (or garbage): exit non-zero, no drafts file."""
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 2)
    with StubOpenAI(responder=lambda b: failure) as dead:
        rc = main(["draft-guides", "--raw", str(raw), "--base-url", dead.base_url, "--model", "m", "--api-key-env", "none",
                   "--cache-dir", str(tmp_path / "c")])
        err = capsys.readouterr().err
        assert rc == 2 and dead.count == sent  # the first request alone, then nothing else
    assert "the drafting endpoint is down: its first request failed" in err and shown in err and "Traceback" not in err
    assert not (raw / "guide_drafts.jsonl").exists()


def test_draft_guides_stops_on_too_many_failures_or_no_drafts(tmp_path):
    from mag_dataset.harness.annotate import DraftingFailedError

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 2)
    calls = {"n": 0}

    def flaky(body):
        calls["n"] += 1
        return drafter(body) if calls["n"] <= 3 else Status(502, message="bad gateway")

    with StubOpenAI(responder=flaky) as stub:
        client = ChatClient(stub.base_url, "m", api_key_env=None, max_retries=0, cache_dir=tmp_path / "c")
        with pytest.raises(DraftingFailedError, match=r"drafting endpoint: 5 of 8 calls failed \(first: .*HTTP 502: bad gateway\)"):
            draft_guides(raw, client)
    with StubOpenAI(responder=lambda b: "  ") as empty:
        client = ChatClient(empty.base_url, "m", api_key_env=None, max_retries=0)
        with pytest.raises(DraftingFailedError, match="no usable draft for any of the 8 steps: 8 empty answers"):
            draft_guides(raw, client)
    assert not (raw / "guide_drafts.jsonl").exists()


def test_draft_guides_checks_endpoint_and_images_before_any_request(tmp_path, capsys, monkeypatch):
    import openai._base_client

    waits: list[float] = []  # no retries with backoff against a refused connection
    monkeypatch.setattr(openai._base_client.time, "sleep", waits.append)
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    assert main(["draft-guides", "--raw", str(raw), "--base-url", f"http://127.0.0.1:{closed}/v1", "--model", "m",
                 "--api-key-env", "none"]) == 2
    assert waits == []
    assert f"drafting endpoint: cannot reach http://127.0.0.1:{closed}/v1" in capsys.readouterr().err
    png = raw / "login.seed-0" / "step_002_som.png"
    png.write_bytes(png.read_bytes()[:150])
    with StubOpenAI(responder=drafter) as stub:
        assert main(["draft-guides", "--raw", str(raw), "--base-url", stub.base_url, "--model", "m", "--api-key-env", "none"]) == 2
        assert stub.count == 0
    assert "1 of 4 screenshots cannot be sent, e.g." in capsys.readouterr().err
    assert not (raw / "guide_drafts.jsonl").exists()


def write_drafts(raw, n_steps=4, episode="login.seed-0"):
    lines = [json.dumps({"step_id": f"{episode}:{k}", "draft": f"LLM draft {k}.", "model": "m", "prompt_version": 1})
             for k in range(n_steps)]
    (raw / "guide_drafts.jsonl").write_text("\n".join(lines) + "\n")


def test_decisions_write_back_and_survive_a_new_session(tmp_path):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    write_drafts(raw, n_steps=3)  # the last step has no LLM draft: its template guide is shown
    s = Session(raw)
    assert s.first_undecided() == 0
    assert s.view(3)["guide"] == "Click the 'Submit' button." and "the current guide (template)" in s.view(3)["guides"]
    s.decide(0, "edit", "LLM draft 0.", "ann")  # unchanged text counts as accept
    s.decide(1, "edit", "Type 'pw' in the Password box.", "bob")
    s.decide(2, "reject", "", "ann")
    s.decide(3, "accept", "", "ann")  # verifying a template guide keeps it a template guide
    ep = read_episode(raw / "login.seed-0")
    assert [(st.guide, st.guide_source) for st in ep.steps] == [
        ("LLM draft 0.", GuideSource.LLM),
        ("Type 'pw' in the Password box.", GuideSource.HUMAN),
        ("Click the 'Remember me' checkbox.", GuideSource.TEMPLATE),
        ("Click the 'Submit' button.", GuideSource.TEMPLATE),
    ]
    assert [st.metadata["verified_by"] for st in ep.steps] == ["ann", "bob", "ann", "ann"]
    assert [st.metadata["verification"] for st in ep.steps] == ["accept", "edit", "reject", "accept"]
    # change of mind: reject an accepted step -> the original template guide comes back
    s.decide(0, "reject", "", "ann")
    assert read_episode(raw / "login.seed-0").steps[0].guide == "Type 'ann' into the Username field."
    s.close()
    s2 = Session(raw)
    assert len(s2.store.decisions()) == 4 and s2.view(1)["guide"] == "Type 'pw' in the Password box."
    assert "edited by bob" in s2.view(1)["status"] and "4 decided" in s2.view(1)["status"]
    assert apply_decisions(raw, s2.store) == 0  # idempotent
    with pytest.raises(ValueError, match="annotator"):
        s2.decide(0, "accept", "", " ")
    s2.close()


def test_store_rejects_bad_input(tmp_path):
    with AnnotationStore(tmp_path / "a.sqlite") as st:
        with pytest.raises(ValueError, match="decision must be"):
            st.decide("x:0", "maybe", "g", "d", "ann", ("g", "template"))
        with pytest.raises(ValueError, match="cannot be empty"):
            st.decide("x:0", "edit", "  ", "d", "ann", ("g", "template"))
        with pytest.raises(ValueError, match="needs the element"):
            st.adjudicate("x:0", "remapped", None, "ann")
        with pytest.raises(ValueError, match="resolves to"):
            st.adjudicate("x:0", "disputed", None, "ann")
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ValueError, match="not an annotation database"):
        AnnotationStore(tmp_path / "junk.sqlite")


#: The annotation database as the code of 960d8f3 created it: no draft_source column, no
#: user_version (``git log -p mag_dataset/harness/annotate.py``).
_SCHEMA_BEFORE_DRAFT_SOURCE = """
CREATE TABLE IF NOT EXISTS decisions (
    step_id TEXT PRIMARY KEY,
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'edit', 'reject')),
    guide TEXT NOT NULL,
    draft TEXT NOT NULL,
    annotator TEXT NOT NULL,
    decided_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS originals (
    step_id TEXT PRIMARY KEY,
    guide TEXT NOT NULL,
    guide_source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS adjudications (
    step_id TEXT PRIMARY KEY,
    status TEXT NOT NULL CHECK (status IN ('confirmed', 'remapped', 'unmappable')),
    element_id TEXT,
    annotator TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    decided_at TEXT NOT NULL
);
"""


def test_a_database_of_the_previous_schema_opens_and_takes_a_new_decision(tmp_path):
    import sqlite3

    from mag_dataset.annotation_rules import SCHEMA_VERSION

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    db = raw / "annotations.sqlite"
    con = sqlite3.connect(db)
    con.executescript(_SCHEMA_BEFORE_DRAFT_SOURCE)
    con.execute("INSERT INTO decisions VALUES ('login.seed-0:0', 'accept', 'Old draft.', 'Old draft.', 'ann', "
                "'2026-11-01T00:00:00Z')")
    con.execute("INSERT INTO originals VALUES ('login.seed-0:0', 'Type ''ann'' into the Username field.', 'template')")
    con.execute("INSERT INTO adjudications VALUES ('login.seed-0:1', 'unmappable', NULL, 'bob', '', '2026-11-01T00:00:00Z')")
    con.commit()
    assert con.execute("PRAGMA user_version").fetchone()[0] == 0
    con.close()
    with AnnotationStore(db) as store:
        old = store.decisions()["login.seed-0:0"]
        assert (old.guide, old.annotator, old.draft_source) == ("Old draft.", "ann", "llm")  # drafts were LLM drafts then
        store.decide("login.seed-0:3", "accept", "Click the 'Submit' button.", "Click the 'Submit' button.", "cy",
                     ("Click the 'Submit' button.", "template"), draft_source="template")
        assert set(store.decisions()) == {"login.seed-0:0", "login.seed-0:3"}
        assert store.adjudications()["login.seed-0:1"].status is AuditStatus.UNMAPPABLE
        assert apply_decisions(raw, store) == 1
    steps = read_episode(raw / "login.seed-0").steps
    assert (steps[0].guide, steps[0].guide_source) == ("Old draft.", GuideSource.LLM)
    assert (steps[3].guide, steps[3].guide_source, steps[3].metadata["verified_by"]) == \
        ("Click the 'Submit' button.", GuideSource.TEMPLATE, "cy")
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    # the one-row-per-step tables became round-1 responses (tests/test_annotation_team.py: from version 2)
    assert [(r[0], r[1]) for r in con.execute("SELECT step_id, decision FROM responses ORDER BY id")] == [
        ("login.seed-0:0", "accept"), ("login.seed-0:1", "unmappable"), ("login.seed-0:3", "accept")]
    assert not con.execute("SELECT name FROM sqlite_master WHERE name = 'decisions'").fetchall()
    con.close()
    with AnnotationStore(db) as store:  # reopening an up-to-date database changes nothing
        assert len(store.decisions()) == 2


def test_a_database_of_the_unversioned_current_schema_and_of_a_newer_one(tmp_path):
    import sqlite3

    # made by the code between the draft_source column and the migrations: the column, version 0
    db = tmp_path / "a.sqlite"
    con = sqlite3.connect(db)
    con.executescript(_SCHEMA_BEFORE_DRAFT_SOURCE.replace(
        "decided_at TEXT NOT NULL\n);\nCREATE TABLE IF NOT EXISTS originals",
        "decided_at TEXT NOT NULL,\n    draft_source TEXT NOT NULL DEFAULT 'llm'\n);\nCREATE TABLE IF NOT EXISTS originals", 1))
    con.execute("INSERT INTO decisions VALUES ('x:0', 'edit', 'G.', 'D.', 'ann', '2026-11-30T00:00:00Z', 'template')")
    con.commit()
    con.close()
    with AnnotationStore(db) as store:
        assert store.decisions()["x:0"].draft_source == "template"
        store.decide("x:1", "reject", "O.", "D.", "ann", ("O.", "human"))
    # a database written by a newer mag_dataset is refused and left as it is
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 99")
    con.close()
    before = db.read_bytes()
    with pytest.raises(ValueError, match="schema version 99, newer than"):
        AnnotationStore(db)
    assert db.read_bytes() == before


def test_a_failed_migration_step_changes_nothing(tmp_path):
    import sqlite3

    from mag_dataset.sqlite_migrations import Migration, apply_migrations, schema_version

    def broken(con):
        con.execute("ALTER TABLE t ADD COLUMN b TEXT")
        raise sqlite3.OperationalError("disk on fire")

    steps = (Migration("t", lambda con: con.execute("CREATE TABLE t (a TEXT)")), Migration("t.b", broken))
    con = sqlite3.connect(tmp_path / "m.sqlite")
    con.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="disk on fire"):
        apply_migrations(con, steps, ValueError)
    con.rollback()
    assert schema_version(con) == 0 and not list(con.execute("SELECT name FROM sqlite_master"))
    con.execute("BEGIN IMMEDIATE")
    assert apply_migrations(con, steps[:1], ValueError) == 0
    con.commit()
    assert schema_version(con) == 1
    with pytest.raises(ValueError) as e:
        apply_migrations(con, (), lambda v: ValueError(f"version {v}"))
    assert str(e.value) == "version 1"
    con.close()


def test_adjudication_updates_audit_and_survives_a_rerun(tmp_path):
    from mag_dataset.harness.audit import JudgeConfig, run_audit

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    with StubOpenAI(responder=lambda b: '{"verdict": "confirm"}') as a, \
            StubOpenAI(responder=lambda b: '{"verdict": "unmappable"}') as b, \
            StubOpenAI(responder=lambda b: '{"verdict": "remap", "element": "3"}') as c:
        judges = [JudgeConfig(n, s.base_url, "m", api_key_env=None) for n, s in (("a", a), ("b", b), ("c", c))]
        run_audit(raw, judges, cache_dir=tmp_path / "cache")
        assert all(r.status is AuditStatus.DISPUTED for r in read_audit(raw / "audit.jsonl").values())
        s = Session(raw)
        assert s.disputed() == [f"login.seed-0:{k}" for k in range(4)]
        v = s.adjudication_view("login.seed-0:2")
        assert v["ids"] == ["1", "2", "3", "4", "5"] and "**a**: confirm" in v["info"] and "**c**: remap → [3]" in v["info"]
        s.adjudicate("login.seed-0:2", "remapped", "3", "ann")
        s.adjudicate("login.seed-0:3", "unmappable", None, "ann")
        with pytest.raises(ValueError, match="not in the candidate menu"):
            s.adjudicate("login.seed-0:1", "remapped", "77", "ann")
        s.close()
        recs = read_audit(raw / "audit.jsonl")
        assert recs["login.seed-0:2"].status is AuditStatus.REMAPPED and recs["login.seed-0:2"].element_id == "3"
        assert recs["login.seed-0:2"].original_element_id == "4"
        assert recs["login.seed-0:3"].status is AuditStatus.UNMAPPABLE
        # a rerun of the audit (all cached) keeps the human decisions
        rep = run_audit(raw, judges, cache_dir=tmp_path / "cache")
        assert rep.requests == 0 and rep.adjudicated == 2
    recs = read_audit(raw / "audit.jsonl")
    assert recs["login.seed-0:2"].status is AuditStatus.REMAPPED and recs["login.seed-0:0"].status is AuditStatus.DISPUTED


def disputing_judges():
    return [StubOpenAI(responder=lambda b: '{"verdict": "confirm"}'),
            StubOpenAI(responder=lambda b: '{"verdict": "unmappable"}'),
            StubOpenAI(responder=lambda b: '{"verdict": "remap", "element": "3"}')]


def test_adjudications_made_with_another_db_are_never_lost(tmp_path, capsys):
    from mag_dataset.harness.audit import JudgeConfig, run_audit

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    stubs = [s.start() for s in disputing_judges()]
    try:
        judges = [JudgeConfig(n, s.base_url, "m", api_key_env=None) for n, s in zip("abc", stubs)]
        run_audit(raw, judges, cache_dir=tmp_path / "cache")
        other = raw / "other.sqlite"
        s = Session(raw, db_path=other)  # mag annotate --db RAW/other.sqlite
        s.adjudicate("login.seed-0:2", "remapped", "3", "ann")
        s.close()
        assert not (raw / "annotations.sqlite").exists()
        # a rerun that reads the default database keeps the decision: it lives in the audit record
        rep = run_audit(raw, judges, cache_dir=tmp_path / "cache")
        assert rep.requests == 0 and rep.adjudicated == 1
        assert any("other.sqlite holds 1 decisions for these steps" in w for w in rep.warnings)
        rec = read_audit(raw / "audit.jsonl")["login.seed-0:2"]
        assert (rec.status, rec.element_id, rec.adjudicated_by) == (AuditStatus.REMAPPED, "3", "ann")
    finally:
        for st in stubs:
            st.stop()
    # the replay keeps it too, and warns about the database it was not given
    assert main(["audit", "--raw", str(raw), "--replay"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "pass --db" in err and "other.sqlite" in err
    assert read_audit(raw / "audit.jsonl")["login.seed-0:2"].status is AuditStatus.REMAPPED
    # with the audit file gone, the same --db as the app brings the decision back
    (raw / "audit.jsonl").unlink()
    assert main(["audit", "--raw", str(raw), "--replay", "--db", str(other)]) == 0
    assert "(1 by human adjudication)" in capsys.readouterr().out
    assert read_audit(raw / "audit.jsonl")["login.seed-0:2"].status is AuditStatus.REMAPPED
    assert main(["audit", "--raw", str(raw), "--replay", "--db", str(tmp_path / "nope.sqlite")]) == 2
    assert "annotation database not found" in capsys.readouterr().err


def test_a_guide_verified_after_the_audit_marks_exactly_the_affected_verdicts_stale(tmp_path, capsys):
    from mag_dataset.harness.audit import JudgeConfig, audit_staleness, run_audit

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 2)
    with StubOpenAI(responder=lambda b: '{"verdict": "confirm"}') as stub:
        judges = [JudgeConfig(n, stub.base_url, f"m{n}", api_key_env=None) for n in "abc"]
        assert run_audit(raw, judges, cache_dir=tmp_path / "cache").requests == 24
        assert audit_staleness(raw).stale == () and stub.count == 24
        s = Session(raw)
        s.decide(s.refs.index(s.by_id["login.seed-1:1"]), "edit", "Type pw as the password.", "ann")
        # the judge prompt of step 1 holds its guide, steps 2 and 3 hold it among the earlier guides
        st = audit_staleness(raw)
        assert st.stale == ("login.seed-1:1", "login.seed-1:2", "login.seed-1:3") and st.calls == 9
        view = s.view(s.refs.index(s.by_id["login.seed-1:2"]))
        assert "verdicts stale" in view["audit"] and "the next audit will make 9 calls" in view["audit"]
        assert "verdicts stale" not in s.view(0)["audit"]
        s.close()
        assert main(["audit", "--raw", str(raw), "--replay"]) == 0
        assert "3 steps have stale verdicts (a guide changed after the audit); the next audit will make 9 calls" in \
            capsys.readouterr().out
        rep = run_audit(raw, judges, cache_dir=tmp_path / "cache")
        assert rep.requests == 9 and stub.count == 33 and audit_staleness(raw).stale == ()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_thread(fn):
    """Run ``fn`` in a fresh thread: Playwright's sync API refuses a thread where another
    sync Playwright (e.g. BrowserGym's global one, left by an earlier test) is running."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.mark.browser
@pytest.mark.slow
def test_app_in_a_real_browser_accept_edit_restart(tmp_path, chromium):
    from playwright.sync_api import expect, sync_playwright

    from mag_dataset.harness.annotate_app import launch

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    write_drafts(raw)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    app, session = launch(raw, annotator="ann", port=port, block=False)

    def first_visit():
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, headless=True)
            page = browser.new_page()
            page.goto(url)
            status = page.locator("#mag-status")
            guide = page.locator("#mag-guide textarea")
            expect(status).to_contain_text("Step 1 / 4", timeout=30000)
            expect(guide).to_have_value("LLM draft 0.")
            expect(page.locator("#mag-context")).to_contain_text("Log in as ann with password pw (run 0).")
            expect(page.locator("#mag-image img.mag-som")).to_be_visible()
            # accept with the keyboard shortcut (focus outside any text box)
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("a")
            expect(status).to_contain_text("Step 2 / 4", timeout=15000)
            expect(guide).to_have_value("LLM draft 1.")
            # edit the draft and save it with Ctrl+Enter from the guide box
            guide.fill("Enter pw in the Password field.")
            guide.press("Control+Enter")
            expect(status).to_contain_text("Step 3 / 4", timeout=15000)
            expect(status).to_contain_text("2 decided")
            browser.close()

    try:
        in_thread(first_visit)
    finally:
        app.close()
        session.close()

    ep = read_episode(raw / "login.seed-0")
    assert [(s.guide, s.guide_source.value, s.metadata.get("verified_by")) for s in ep.steps[:3]] == [
        ("LLM draft 0.", "llm", "ann"), ("Enter pw in the Password field.", "human", "ann"),
        ("Click the 'Remember me' checkbox.", "template", None)]

    # restart the app: it resumes on the first undecided step and shows the earlier decisions
    app, session = launch(raw, annotator="ann", port=port, block=False)

    def second_visit():
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, headless=True)
            page = browser.new_page()
            page.goto(url)
            status = page.locator("#mag-status")
            guide = page.locator("#mag-guide textarea")
            expect(status).to_contain_text("Step 3 / 4", timeout=30000)
            expect(status).to_contain_text("2 decided · undecided")
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("p")
            expect(status).to_contain_text("Step 2 / 4 · login.seed-0:1 · 2 decided · edited by ann", timeout=15000)
            expect(guide).to_have_value("Enter pw in the Password field.")
            page.keyboard.press("Alt+p")
            expect(status).to_contain_text("Step 1 / 4 · login.seed-0:0 · 2 decided · accepted by ann", timeout=15000)
            expect(guide).to_have_value("LLM draft 0.")
            browser.close()

    try:
        in_thread(second_visit)
    finally:
        app.close()
        session.close()


def test_docs_show_the_prompts_verbatim():
    from pathlib import Path

    from mag_dataset.harness.audit_prompt import JUDGE_SYSTEM_PROMPT

    doc = (Path(__file__).resolve().parents[1] / "docs" / "harness.md").read_text("utf-8")
    for prompt in (DRAFT_SYSTEM_PROMPT, JUDGE_SYSTEM_PROMPT):
        assert f"```text\n{prompt}\n```" in doc
    assert doc.count("| `confirmed` |") == 1 and "| `disputed` (excluded from element-level scoring) |" in doc


def test_harness_modules_import_cheaply():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import mag_dataset.llm_client, mag_dataset.harness.audit, mag_dataset.harness.annotate\n"
        "import mag_dataset.harness.unify, mag_dataset.harness.browsergym_import, mag_dataset.harness.annotate_app\n"
        "import mag_dataset.commands.audit, mag_dataset.commands.unify, mag_dataset.commands.draft_guides\n"
        "import mag_dataset.commands.annotate, mag_dataset.commands.import_browsergym\n"
        "heavy = [m for m in ('torch', 'gradio', 'trl', 'playwright', 'datasets', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.browser
@pytest.mark.slow
def test_adjudication_in_a_real_browser(tmp_path, chromium):
    from playwright.sync_api import expect, sync_playwright

    from mag_dataset.harness.annotate_app import launch
    from mag_dataset.harness.audit import AuditVerdict as Verdict
    from mag_dataset.harness.audit_rules import Vote

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    write_audit(raw / "audit.jsonl", {
        "login.seed-0:1": AuditRecord(status="confirmed"),
        "login.seed-0:2": AuditRecord(status="disputed", disputed=True, stale=True),
    })
    log = [Verdict("gpt", Vote.CONFIRM), Verdict("qwen", Vote.REMAP, element_id="3", reason="the row is clickable"),
           Verdict("third", None, error="timeout")]
    (raw / "audit_verdicts.jsonl").write_text("".join(json.dumps(v.to_json("login.seed-0:2")) + "\n" for v in log))
    port = free_port()
    app, session = launch(raw, annotator="ann", port=port, block=False)

    def adjudicate():
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, headless=True)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            expect(page.locator("#mag-status")).to_contain_text("Step 1 / 4", timeout=30000)
            page.get_by_role("tab", name="Adjudicate").click()
            page.locator("#mag-adj-step input").click()
            page.get_by_role("option", name="login.seed-0:2").click()
            info = page.locator("#mag-adj-info")
            expect(info).to_contain_text("qwen: remap → [3] — the row is clickable", timeout=15000)
            expect(info).to_contain_text("third: no vote (timeout)")
            expect(info).to_contain_text("Not adjudicated yet.")
            page.locator("#mag-adj-outcome").get_by_label("remapped").check()
            page.locator("#mag-adj-element input").click()
            page.get_by_role("option", name="3", exact=True).click()
            page.locator("#mag-adj-resolve").click()
            expect(info).to_contain_text("Adjudicated: remapped → [3] by ann", timeout=15000)
            browser.close()

    try:
        in_thread(adjudicate)
    finally:
        app.close()
        session.close()
    recs = read_audit(raw / "audit.jsonl")
    rec = recs["login.seed-0:2"]
    assert (rec.status, rec.element_id, rec.original_element_id, rec.stale, rec.disputed) == (
        AuditStatus.REMAPPED, "3", "4", True, False)
    assert recs["login.seed-0:1"].status is AuditStatus.CONFIRMED


def test_annotate_cli_errors(tmp_path, capsys):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    assert main(["annotate", "--raw", str(tmp_path / "nope")]) == 2
    assert "raw corpus folder not found" in capsys.readouterr().err
    assert main(["annotate", "--raw", str(raw), "--drafts", str(tmp_path / "missing.jsonl")]) == 2
    assert "drafts file not found" in capsys.readouterr().err
    with AnnotationStore(raw / "other.sqlite") as other:  # decisions this app (default database) would not see
        other.adjudicate("login.seed-0:1", "unmappable", None, "ann")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["annotate", "--raw", str(raw), "--port", str(busy.getsockname()[1])]) == 2
    err = capsys.readouterr().err
    assert "cannot serve on 127.0.0.1" in err and "the port is in use; pick another port with --port N" in err
    assert "GRADIO_SERVER_PORT" not in err and "Traceback" not in err
    assert "warning:" in err and "other.sqlite holds 1 decisions for these steps" in err and "pass --db" in err


def disputed_corpus(raw):
    hf.make_corpus(raw, 1)
    write_audit(raw / "audit.jsonl", {
        "login.seed-0:1": AuditRecord(status="disputed", disputed=True),
        "login.seed-0:2": AuditRecord(status="disputed", disputed=True),
        "login.seed-0:3": AuditRecord(status="confirmed"),
    })


@pytest.mark.browser
@pytest.mark.slow
def test_app_in_a_real_browser_resets_per_step_state_and_warns_without_overlays(tmp_path, chromium, capfd):
    """A note typed on step A, then step B: B's note is empty. Input mistakes are warnings beside
    the buttons, never Gradio's error overlay, and the server logs no traceback."""
    from playwright.sync_api import expect, sync_playwright

    from mag_dataset.harness.annotate_app import launch

    raw = tmp_path / "raw"
    disputed_corpus(raw)
    audit = (raw / "audit.jsonl").read_bytes()
    (raw / "audit.jsonl").unlink()  # the audit runs while the app is open (below)
    write_drafts(raw)
    port = free_port()
    app, session = launch(raw, annotator="", port=port, block=False)  # no annotator name yet

    def visit():
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, headless=True)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            status, warning = page.locator("#mag-status"), page.locator("#mag-warning")
            overlays = page.get_by_test_id("toast-body")
            expect(status).to_contain_text("Step 1 / 4", timeout=30000)
            expect(page.locator("#mag-guides")).to_contain_text("Original (Reject restores it; template): Type 'ann'")
            page.locator("#mag-accept").click()
            expect(warning).to_contain_text("Enter your name in 'Annotator'", timeout=15000)
            expect(status).to_contain_text("Step 1 / 4 · login.seed-0:0 · 0 decided · undecided")
            page.locator("#mag-annotator textarea, #mag-annotator input").first.fill("ann")
            page.locator("#mag-guide textarea").fill("   ")
            page.locator("#mag-edit").click()
            expect(warning).to_contain_text("An edited guide cannot be empty.", timeout=15000)
            expect(overlays).to_have_count(0)
            page.locator("#mag-reject").click()  # the buttons still work: nothing covers them
            expect(status).to_contain_text("Step 2 / 4", timeout=15000)
            expect(warning).to_have_text("")  # the warning belonged to step 1
            page.locator("#mag-prev").click()
            guides = page.locator("#mag-guides")
            expect(guides).to_contain_text("Result (template, rejected): Type 'ann' into the Username field.", timeout=15000)
            expect(page.locator("#mag-guide textarea")).to_have_value("Type 'ann' into the Username field.")

            # Adjudicate: opening the tab rereads the audit, lists the disputed steps and selects the first open one
            (raw / "audit.jsonl").write_bytes(audit)
            page.get_by_role("tab", name="Adjudicate").click()
            info, adj_warning = page.locator("#mag-adj-info"), page.locator("#mag-adj-warning")
            expect(page.locator("#mag-adj-step input")).to_have_value("login.seed-0:1 · open", timeout=15000)
            expect(info).to_contain_text("Not adjudicated yet.")
            page.locator("#mag-adj-note input, #mag-adj-note textarea").first.fill("typed on step A")
            page.locator("#mag-adj-outcome").get_by_label("remapped").check()
            page.locator("#mag-adj-resolve").click()  # a remap without an element
            expect(adj_warning).to_contain_text("Pick the element to remap to.", timeout=15000)
            expect(overlays).to_have_count(0)
            # to step B: its note, resolution and element start empty
            page.locator("#mag-adj-step input").click()
            page.get_by_role("option", name="login.seed-0:2").click()
            expect(info).to_contain_text("Recorded action: click on element [4]", timeout=15000)
            note = page.locator("#mag-adj-note input, #mag-adj-note textarea").first
            expect(note).to_have_value("")
            expect(adj_warning).to_have_text("")
            expect(page.locator("#mag-adj-outcome input:checked")).to_have_count(0)
            page.locator("#mag-adj-outcome").get_by_label("unmappable").check()
            page.locator("#mag-adj-resolve").click()
            # the tab moves on to the next open step; the resolved one stays listed, marked resolved
            expect(adj_warning).to_contain_text("Resolved login.seed-0:2 as unmappable.", timeout=15000)
            expect(page.locator("#mag-adj-step input")).to_have_value("login.seed-0:1 · open")
            expect(info).to_contain_text("Recorded action: type text=\"pw\" on element [2]")
            page.locator("#mag-adj-step input").click()
            expect(page.get_by_role("option", name="login.seed-0:2 · resolved: unmappable")).to_have_count(1)
            page.get_by_role("option", name="login.seed-0:2 · resolved: unmappable").click()
            expect(info).to_contain_text("Adjudicated: unmappable by ann", timeout=15000)
            # a reload opens Verify on the first undecided step and Adjudicate on the first open one
            page.reload()
            expect(status).to_contain_text("Step 2 / 4 · login.seed-0:1 · 1 decided · undecided", timeout=30000)
            page.get_by_role("tab", name="Adjudicate").click()
            expect(page.locator("#mag-adj-step input")).to_have_value("login.seed-0:1 · open", timeout=15000)
            browser.close()

    try:
        in_thread(visit)
    finally:
        app.close()
        session.close()
    with AnnotationStore(raw / "annotations.sqlite") as store:
        adj = store.adjudications()
    assert list(adj) == ["login.seed-0:2"] and adj["login.seed-0:2"].note == ""
    assert read_audit(raw / "audit.jsonl")["login.seed-0:2"].adjudicated_by == "ann"
    assert "Traceback" not in capfd.readouterr().err


def test_verify_view_shows_guides_audit_state_and_the_point_of_a_point_only_step(tmp_path):
    import dataclasses

    from mag_dataset.schema import Action

    raw = tmp_path / "raw"
    ep = hf.login_episode()
    steps = list(ep.steps)
    steps[3] = dataclasses.replace(steps[3], action=Action(type="click", coordinate=(125, 105)), stale=True)
    hf.write(raw, dataclasses.replace(ep, steps=tuple(steps)))
    write_drafts(raw, n_steps=3)
    write_audit(raw / "audit.jsonl", {"login.seed-0:3": AuditRecord(status="unmappable", stale=True)})
    s = Session(raw)
    v = s.view(3)
    assert "Point-only step:** the recorded point (125, 105)" in v["context"]
    assert "**Audit:** unmappable · **screenshot stale:** yes" in v["audit"]
    assert "**Audit:** not audited · **screenshot stale:** no" in s.view(0)["audit"]
    img, plain = v["image"], s.view(2)["image"]
    assert img.getpixel((125, 105)) == (255, 0, 0) and plain.getpixel((20, 80)) != (255, 0, 0)
    s.decide(1, "reject", "", "ann")
    v = s.view(1)
    assert "**Draft** (LLM draft): LLM draft 1." in v["guides"]
    assert "**Original** (Reject restores it; template): Type 'pw' into the Password field." in v["guides"]
    assert "**Result** (template, rejected): Type 'pw' into the Password field." in v["guides"]
    assert v["guide"] == "Type 'pw' into the Password field."
    s.decide(1, "edit", v["guide"], "ann")  # saving the unchanged original is a reject, not a human edit
    assert s.store.decisions()["login.seed-0:1"].decision == "reject"
    with pytest.raises(ValueError, match="pick the element to remap to"):
        s.adjudicate("login.seed-0:3", "remapped", None, "ann")
    s.close()
