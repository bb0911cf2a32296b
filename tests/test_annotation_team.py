"""Human verification by a team (issue 31, the data layer): every response kept, stale views
refused, assignments, agreement on the overlap, export, migration, provenance in the build.

Real SQLite files, real processes racing on one database, the real ``mag`` CLI, and a real
``mag build`` read back through ``datasets``. The browser side is in tests/test_annotation.py.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path

import harness_fixtures as hf
import pytest

from mag_dataset.cli import main
from mag_dataset.harness.annotation_session import Session
from mag_dataset.harness.annotation_store import AnnotationStore, StaleView
from mag_dataset.annotation_rules import SCHEMA_VERSION, agreement, cohen_kappa, krippendorff_alpha
from mag_dataset.raw import iter_episode_dirs, read_episode, step_id

S = "login.seed-0:1"


def write_drafts(raw: Path) -> list[str]:
    """An LLM draft for every step of the corpus; returns the step ids in corpus order."""
    ids, lines = [], []
    for folder in iter_episode_dirs(raw):
        ep = read_episode(folder)
        for st in ep.steps:
            sid = step_id(ep.task_id, st.step_index)
            ids.append(sid)
            lines.append(json.dumps({"step_id": sid, "draft": f"LLM draft of {sid}.", "model": "m", "prompt_version": 1}))
    (raw / "guide_drafts.jsonl").write_text("\n".join(lines) + "\n")
    return ids


# -- every response kept -------------------------------------------------------------------


def test_two_annotators_on_the_same_step_both_kept_the_step_goes_to_adjudication(tmp_path):
    with AnnotationStore(tmp_path / "a.sqlite") as st:
        seen = st.step_version(S)  # both open the undecided step
        assert seen == 0 and st.resolution(S).status == "undecided"
        st.record_response(S, "alice", "verify", "accept", guide="LLM draft.", draft="LLM draft.", seen_version=seen)
        # bob's tab still shows the step undecided: his edit is refused, naming alice's decision
        with pytest.raises(StaleView) as e:
            st.record_response(S, "bob", "verify", "edit", guide="Type pw.", draft="LLM draft.", seen_version=seen)
        assert (e.value.seen_version, e.value.current_version) == (0, 1)
        assert [r.annotator for r in e.value.changes] == ["alice"]
        assert "changed since you opened it: alice accepted at 20" in str(e.value)
        assert len(st.responses(S)) == 1  # nothing written
        # on the fresh view he still edits: both answers are kept, the step is disputed
        st.record_response(S, "bob", "verify", "edit", guide="Type  pw.", draft="LLM draft.", seen_version=1,
                           note="the draft names the wrong field")
        rows = st.responses(S)
        assert [(r.annotator, r.decision, r.round, r.based_on) for r in rows] == [
            ("alice", "accept", 1, 0), ("bob", "edit", 1, 1)]
        assert rows[1].guide == "Type pw." and rows[1].note == "the draft names the wrong field"
        assert rows[0].decided_at.endswith("Z") and len(rows[0].decided_at) == len("2026-12-04T03:00:00.000Z")
        res = st.resolution(S)
        assert res.status == "needs_adjudication" and res.decision is None and not res.verified_by
        assert S not in st.decisions() and st.needs_adjudication() == [S]
        # carol, who did not take part, adjudicates: round 2, the outcome is hers; nothing of alice's or bob's is lost
        st.record_response(S, "carol", "verify", "edit", guide="Type pw into the Password field.", seen_version=2)
        res = st.resolution(S)
        assert (res.status, res.round, res.decision, res.verified_by, res.guide) == (
            "adjudicated", 2, "edit", ("carol",), "Type pw into the Password field.")
        assert [r.annotator for r in st.responses(S)] == ["alice", "bob", "carol"]
        assert st.decisions()[S].annotator == "carol" and st.needs_adjudication() == []


def test_agreement_decides_and_a_participant_revises_only_their_own_answer(tmp_path):
    with AnnotationStore(tmp_path / "a.sqlite") as st:
        st.record_response(S, "alice", "verify", "edit", guide="Type  pw now.", seen_version=0)
        st.record_response(S, "bob", "verify", "edit", guide="Type pw now.", seen_version=1)  # same after whitespace
        res = st.resolution(S)
        assert (res.status, res.verified_by) == ("decided", ("alice", "bob"))
        assert st.decisions()[S].annotator == "alice, bob"
        st.record_response(S, "bob", "verify", "reject", seen_version=2)  # bob changes his mind: round 1 still
        assert st.resolution(S).status == "needs_adjudication"
        st.record_response(S, "bob", "verify", "edit", guide="Type pw now.", seen_version=3)  # and back
        assert (st.resolution(S).status, st.resolution(S).round) == ("decided", 1)
        assert len(st.responses(S)) == 4  # every answer kept
        # an "edit" that leaves the draft as it was (as Label Studio may send it) agrees with an accept
        t = "login.seed-0:2"
        st.record_response(t, "alice", "verify", "accept", guide="The draft.", draft="The draft.", seen_version=0)
        st.record_response(t, "bob", "verify", "edit", guide=" The  draft. ", draft="The draft.", seen_version=1)
        assert (st.resolution(t).status, st.resolution(t).decision) == ("decided", "accept")
        # adjudications of the audit label: bob's remap does not replace alice's "confirmed" and her note
        st.record_response(S, "alice", "adjudicate", "confirmed", note="the box is right", seen_version=4)
        st.record_response(S, "bob", "adjudicate", "remapped", element_id="3", seen_version=5)
        assert st.resolution(S, "adjudicate").status == "needs_adjudication" and S not in st.adjudications()
        assert [r.note for r in st.responses(S, kind="adjudicate")] == ["the box is right", ""]
        st.record_response(S, "dan", "adjudicate", "remapped", element_id="3", seen_version=6)
        a = st.adjudications()[S]
        assert (a.status.value, a.element_id, a.annotator) == ("remapped", "3", "dan")
        assert st.resolution(S).status == "decided"  # the verification is resolved apart from the label


def test_bad_responses_are_refused(tmp_path):
    with AnnotationStore(tmp_path / "a.sqlite") as st:
        for kwargs, match in [
            (dict(kind="verify", decision="confirmed"), "verify decision must be one of"),
            (dict(kind="judge", decision="accept"), "kind must be one of"),
            (dict(kind="verify", decision="edit", guide="  "), "edited guide cannot be empty"),
            (dict(kind="adjudicate", decision="remapped"), "remap needs the element id"),
            (dict(kind="verify", decision="accept", source="email"), "source must be one of"),
            (dict(kind="verify", decision="accept", annotator="a, b"), "cannot hold a comma"),
            (dict(kind="verify", decision="accept", annotator=" "), "annotator name is required"),
            (dict(kind="verify", decision="accept", seen_version=-1), "seen_version must be"),
        ]:
            args = {"annotator": "alice", "seen_version": 0, **kwargs}
            with pytest.raises(ValueError, match=match):
                st.record_response(S, args.pop("annotator"), args.pop("kind"), args.pop("decision"), **args)
        assert st.responses() == []


def _race(db: str, who: str, start, results) -> None:
    with AnnotationStore(db) as st:
        start.wait()
        try:
            st.record_response(S, who, "verify", "edit", guide=f"{who}'s guide.", seen_version=0, source="cli")
            results.put((who, "kept"))
        except StaleView as e:
            results.put((who, f"stale: {e.changes[0].annotator}"))


def test_two_processes_on_one_database_one_answer_per_version(tmp_path):
    """Four processes (as four servers on one file) answer the same view at once: one is kept,
    three are refused naming it; the version check and the insert are one transaction."""
    db = str(tmp_path / "a.sqlite")
    AnnotationStore(db).close()  # created and migrated once, before the race
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(db, f"p{k}", start, results)) for k in range(4)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    kept = [w for w, r in got.items() if r == "kept"]
    assert len(kept) == 1, got
    assert all(r == f"stale: {kept[0]}" for w, r in got.items() if w != kept[0]), got
    with AnnotationStore(db) as st:
        assert [r.annotator for r in st.responses()] == kept


def test_a_version_2_database_made_by_the_old_code_migrates_with_nothing_lost(tmp_path):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    db = raw / "annotations.sqlite"
    con = sqlite3.connect(db)
    con.executescript(_V2_DUMP)
    con.execute("PRAGMA user_version = 2")
    con.close()
    with AnnotationStore(db) as st:
        rows = st.responses()
        assert [(r.step_id, r.annotator, r.kind, r.decision, r.round, r.source, r.based_on, r.note) for r in rows] == [
            ("login.seed-0:0", "alice", "verify", "accept", 1, "app", 0, ""),
            ("login.seed-0:1", "bob", "verify", "edit", 1, "app", 0, ""),
            ("login.seed-0:2", "alice", "verify", "reject", 1, "app", 0, ""),
            ("login.seed-0:3", "carol", "adjudicate", "unmappable", 1, "app", 0, "no such button"),
        ]
        assert rows[1].guide == "Type the password pw." and rows[1].draft == "LLM draft 1."
        assert {s: (d.decision, d.annotator) for s, d in st.decisions().items()} == {
            "login.seed-0:0": ("accept", "alice"), "login.seed-0:1": ("edit", "bob"), "login.seed-0:2": ("reject", "alice")}
        assert st.adjudications()["login.seed-0:3"].note == "carol: no such button"  # a note names its writer
        assert len(st.originals()) == 3
        assert st.step_version("login.seed-0:1") == 1  # a decision on it now needs a view of version 1
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    assert {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {
        "responses", "originals", "assignments"}
    con.close()


#: ``sqlite3 .dump`` of a version-2 database made by the code of 26835b0 (AnnotationStore.decide
#: and .adjudicate; the ALTER TABLE column is how its migration 2 added draft_source).
_V2_DUMP = """
CREATE TABLE adjudications (
    step_id TEXT PRIMARY KEY,
    status TEXT NOT NULL CHECK (status IN ('confirmed', 'remapped', 'unmappable')),
    element_id TEXT,
    annotator TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    decided_at TEXT NOT NULL
);
INSERT INTO "adjudications" VALUES('login.seed-0:3','unmappable',NULL,'carol','no such button','2026-12-04T03:31:37Z');
CREATE TABLE decisions (
    step_id TEXT PRIMARY KEY,
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'edit', 'reject')),
    guide TEXT NOT NULL,
    draft TEXT NOT NULL,
    annotator TEXT NOT NULL,
    decided_at TEXT NOT NULL
, draft_source TEXT NOT NULL DEFAULT 'llm');
INSERT INTO "decisions" VALUES('login.seed-0:0','accept','LLM draft 0.','LLM draft 0.','alice','2026-12-04T03:31:37Z','llm');
INSERT INTO "decisions" VALUES('login.seed-0:1','edit','Type the password pw.','LLM draft 1.','bob','2026-12-04T03:31:37Z','llm');
INSERT INTO "decisions" VALUES('login.seed-0:2','reject','Click the ''Remember me'' checkbox.','LLM draft 2.','alice','2026-12-04T03:31:37Z','llm');
CREATE TABLE originals (
    step_id TEXT PRIMARY KEY,
    guide TEXT NOT NULL,
    guide_source TEXT NOT NULL
);
INSERT INTO "originals" VALUES('login.seed-0:0','Type ''ann'' into the Username field.','template');
INSERT INTO "originals" VALUES('login.seed-0:1','Type ''pw'' into the Password field.','template');
INSERT INTO "originals" VALUES('login.seed-0:2','Click the ''Remember me'' checkbox.','template');
"""


# -- assignments ---------------------------------------------------------------------------


def test_assignment_split_and_overlap_are_deterministic_and_checked(tmp_path):
    ids = [f"t:{k}" for k in range(20)]
    names = ["alice", "bob", "carol"]
    with AnnotationStore(tmp_path / "a.sqlite") as a, AnnotationStore(tmp_path / "b.sqlite") as b, \
            AnnotationStore(tmp_path / "c.sqlite") as c:
        plan = a.assign(ids, names, overlap=0.25, seed=0)
        assert plan == b.assign(ids, names, overlap=0.25, seed=0)  # same seed, same split
        assert plan != c.assign(ids, names, overlap=0.25, seed=1)
        assert list(plan) == ids and a.assignments() == plan
        shared = [who for who in plan.values() if len(who) == 2]
        assert len(shared) == 5 and all(len(set(w)) == 2 for w in shared)  # round(0.25 * 20)
        assert {tuple(sorted(w)) for w in shared} == {("alice", "bob"), ("bob", "carol"), ("alice", "carol")}
        load = {n: sum(n in w for w in plan.values()) for n in names}
        assert sum(load.values()) == 25 and max(load.values()) - min(load.values()) <= 1
        for bad, match in [(dict(overlap=1.5), "between 0 and 1"), (dict(overlap=-0.1), "between 0 and 1"),
                           (dict(annotators=[]), "at least one annotator"), (dict(annotators=["x", "x"]), "named twice"),
                           (dict(annotators=["solo"]), "at least two annotators")]:
            args = {"annotators": names, "overlap": 0.25, **bad}
            with pytest.raises(ValueError, match=match):
                c.assign(["u:1", "u:2"], args["annotators"], args["overlap"], seed=0)
        with pytest.raises(ValueError, match="20 of these steps are assigned already"):
            a.assign(ids, names, overlap=0.5, seed=3)
        again = a.assign(ids, ["dan"], overlap=0, seed=3, force=True)
        assert set(again.values()) == {("dan",)} and a.assignments() == again
        # the queue is what is left of one's own; progress counts the steps to verify, not all steps
        first = a.queue("dan")[0]
        a.record_response(first, "dan", "verify", "accept", seen_version=0)
        assert len(a.queue("dan")) == 19 and first not in a.queue("dan")
        assert a.progress(ids) == {"": (1, 20), "dan": (1, 20)}


def test_session_opens_on_the_annotators_queue_and_counts_drafted_steps(tmp_path):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 2)  # 8 steps
    lines = [json.dumps({"step_id": f"login.seed-1:{k}", "draft": f"Draft {k}.", "model": "m"}) for k in range(4)]
    (raw / "guide_drafts.jsonl").write_text("\n".join(lines) + "\n")
    s = Session(raw)
    try:
        assert s.to_verify() == [f"login.seed-1:{k}" for k in range(4)]
        assert s.progress() == "0 of 4 verified"
        s.assign(["alice", "bob"], overlap=0.5, seed=0)
        queue = s.queue("bob")
        assert queue and all(s.refs[i].step_id.startswith("login.seed-1:") for i in queue)
        assert s.first_undecided("bob") == queue[0]
        v = s.view(queue[0])
        s.decide(queue[0], "accept", "", "bob", seen_version=v["version"])
        assert s.progress("bob") == f"1 of {len(queue)} verified" and s.progress() == "1 of 4 verified"
        with pytest.raises(StaleView, match="bob accepted"):
            s.decide(queue[0], "reject", "", "alice", seen_version=v["version"])
        with pytest.raises(ValueError, match="no disagreement to adjudicate"):
            s.resolve_dispute(queue[0], "reject", "", "alice", seen_version=1)
        s.decide(queue[0], "reject", "", "alice", seen_version=1)
        assert s.view(queue[0])["resolution"] == "needs_adjudication"
        s.resolve_dispute(queue[0], "reject", "", "bob", seen_version=2, note="alice is right")  # bob adjudicates
        res = s.store.resolution(s.refs[queue[0]].step_id)
        assert (res.status, res.round, res.verified_by, res.notes) == ("adjudicated", 2, ("bob",), ("bob: alice is right",))
        assert s.index(" login.seed-1:2 ") == 6
        with pytest.raises(ValueError, match="no step 'nope'"):
            s.index("nope")
    finally:
        s.close()


# -- agreement -----------------------------------------------------------------------------

#: Ten steps both verified: a = accept, r = reject, e = an edit to the same guide.
_ALICE = "aaaaaarree"
_BOB = "aaaararaee"


def test_cohen_kappa_and_krippendorff_alpha_by_hand():
    labels = {"a": "accept", "r": "reject", "e": "edit: Type pw."}
    a, b = [labels[x] for x in _ALICE], [labels[x] for x in _BOB]
    # by hand: 8 of 10 agree (p_o = 0.8); each gave accept 6, reject 2, edit 2 -> p_e = (36 + 4 + 4) / 100
    po, pe = Fraction(8, 10), Fraction(6 * 6 + 2 * 2 + 2 * 2, 100)
    k = cohen_kappa(a, b)
    assert k.value == pytest.approx(float((po - pe) / (1 - pe))) == pytest.approx(9 / 14)
    assert (k.n, k.counts["agree"], k.counts["a:accept"], k.counts["b:edit"]) == (10, 8, 6, 2)
    # alpha (nominal) by hand: 20 values (accept 12, reject 4, edit 4); the two disagreeing units
    # put 4 off-diagonal coincidences; alpha = 1 - (n - 1) * 4 / sum_{c != k} n_c n_k = 1 - 19 * 4 / 224
    assert krippendorff_alpha([a, b]).value == pytest.approx(1 - 19 * 4 / (2 * (12 * 4 + 12 * 4 + 4 * 4))) \
        == pytest.approx(37 / 56)
    # the krippendorff package's documented nominal example (three coders, missing values): 0.691
    n = None
    docs = [[n, n, n, n, n, 3, 4, 1, 2, 1, 1, 3, 3, n, 3], [1, n, 2, 1, 3, 3, 4, 3, n, n, n, n, n, n, n],
            [n, n, 2, 1, 3, 4, 4, n, 2, 1, 1, 3, 3, n, 4]]
    assert round(krippendorff_alpha([[None if x is None else str(x) for x in row] for row in docs]).value, 3) == 0.691
    # undefined figures say why
    assert "2 are needed" in cohen_kappa(["accept"], ["reject"]).reason
    assert "chance agreement is 1" in cohen_kappa(["accept"] * 3, ["accept"] * 3).reason
    assert cohen_kappa(["accept"] * 3, ["accept"] * 3).value is None
    assert "same label" in krippendorff_alpha([["accept"] * 3, ["accept"] * 3]).reason


def _seed_overlap(raw: Path) -> list[str]:
    """alice and bob answer the same 10 drafted steps (``_ALICE``, ``_BOB``); carol 2 of them."""
    ids = write_drafts(raw)
    with AnnotationStore(raw / "annotations.sqlite") as st:
        for k, sid in enumerate(ids[:10]):
            for who, code in (("alice", _ALICE[k]), ("bob", _BOB[k])):
                d = {"a": "accept", "r": "reject", "e": "edit"}[code]
                st.record_response(sid, who, "verify", d, guide="Type pw." if d == "edit" else f"LLM draft of {sid}.",
                                   seen_version=st.step_version(sid))
        for sid in ids[:2]:
            st.record_response(sid, "carol", "verify", "accept", guide=f"LLM draft of {sid}.", seen_version=2)
    return ids


def test_agreement_report_on_a_seeded_overlap(tmp_path, capsys):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 3)  # 12 steps, on the site "login"
    ids = _seed_overlap(raw)
    with AnnotationStore(raw / "annotations.sqlite") as st:
        agr = agreement(st.responses(), lambda sid: "login")
    assert agr.items == 10 and agr.annotators == ("alice", "bob", "carol")
    assert agr.pairs[("alice", "bob")]["kappa"].value == pytest.approx(9 / 14)
    assert agr.pairs[("alice", "bob")]["alpha"].value == pytest.approx(37 / 56)
    assert agr.pairs[("alice", "carol")]["kappa"].n == 2  # both accepted both: kappa undefined
    assert agr.pairs[("alice", "carol")]["kappa"].value is None
    assert agr.sites["login"].n == 10
    assert main(["annotate", "--raw", str(raw), "--report"]) == 0
    out = capsys.readouterr().out
    assert f"8 of {len(ids)} steps to verify decided (undecided 2, decided 8, needs_adjudication 2, adjudicated 0)" in out
    assert "alice: 10 of 12 verified" in out
    assert "alice × bob: Cohen's kappa 0.643, alpha 0.661, n=10, agree 8; alice accept=6, alice edit=2, alice reject=2" in out
    assert "alice × carol: Cohen's kappa n/a (both gave one and the same label to every item" in out
    assert "site login: alpha" in out


# -- CLI: assign, export -------------------------------------------------------------------


def test_cli_assign_report_and_export(tmp_path, capsys):
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 3)
    write_drafts(raw)
    assert main(["annotate", "--raw", str(raw), "--assign", "alice,bob", "--overlap", "0.25", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "assigned 12 steps to verify among 2 annotators (seed 0); 3 of them to two annotators" in out
    assert "alice: 8 steps, 3 shared" in out or "alice: 7 steps, 3 shared" in out
    assert main(["annotate", "--raw", str(raw), "--assign", "alice,bob"]) == 2
    err = capsys.readouterr().err
    assert "12 of these steps are assigned already" in err and "Traceback" not in err and len(err.splitlines()) == 1
    for args, msg in [(["--assign", "alice", "--overlap", "0.3", "--force"], "an overlap needs at least two annotators"),
                      (["--assign", "a,b", "--overlap", "7", "--force"], "between 0 and 1"),
                      (["--overlap", "0.3"], "--overlap and --force go with --assign"),
                      (["--report", "--export", str(tmp_path / "x.jsonl")], "one of --assign, --report and --export"),
                      (["--export", str(tmp_path / "x.json")], "name the file *.jsonl")]:
        assert main(["annotate", "--raw", str(raw), *args]) == 2, args
        err = capsys.readouterr().err
        assert msg in err and len(err.splitlines()) == 1, (args, err)
    with AnnotationStore(raw / "annotations.sqlite") as st:
        st.record_response("login.seed-0:0", "alice", "verify", "accept", guide="LLM draft of login.seed-0:0.",
                           seen_version=0)
        st.record_response("login.seed-0:0", "bob", "verify", "reject", seen_version=1, note="wrong field",
                           source="label-studio")
    out_file = tmp_path / "out" / "responses.jsonl"
    assert main(["annotate", "--raw", str(raw), "--export", str(out_file)]) == 0
    assert "wrote 2 responses to" in capsys.readouterr().out
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [(r["annotator"], r["decision"], r["source"], r["based_on"], r["site"]) for r in rows] == [
        ("alice", "accept", "app", 0, "login"), ("bob", "reject", "label-studio", 1, "login")]
    assert rows[1]["note"] == "wrong field" and set(rows[0]) >= {"id", "step_id", "round", "kind", "decided_at", "guide"}
    # a file that cannot be written: one line, and no file left half-written
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "r.jsonl").mkdir()  # a folder where the file should go
    assert main(["annotate", "--raw", str(raw), "--export", str(tmp_path / "ro" / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and len(err.splitlines()) == 1


# -- provenance in the built dataset -------------------------------------------------------


@pytest.mark.slow
def test_a_rejected_draft_is_visible_as_rejected_in_the_build(synthetic_corpus, tmp_path):
    import datasets

    from mag_dataset.builder import build_dataset

    raw = tmp_path / "raw"
    shutil.copytree(synthetic_corpus[0], raw)
    ids = write_drafts(raw)
    s = Session(raw)
    try:
        i0, i1, i2 = (s.index(sid) for sid in ids[:3])
        original, original2 = s.original(i0)[0], s.original(i2)[0]
        s.decide(i0, "reject", "", "alice", seen_version=0, note="the draft names the wrong button")
        s.decide(i1, "accept", "", "alice", seen_version=0)
        s.decide(i1, "accept", "", "bob", seen_version=1)
        s.decide(i2, "accept", "", "alice", seen_version=0)
        s.decide(i2, "edit", "Something else entirely.", "bob", seen_version=1)
    finally:
        s.close()
    out = build_dataset(raw, tmp_path / "built", progress=False)
    rows = {}
    for split in ("train", "test"):
        try:
            ds = datasets.load_dataset(str(out), "som", split=split)
        except ValueError:
            continue
        for r in ds.remove_columns("screenshot").to_list():
            rows[r["step_id"]] = r
    r0, r1, r2 = (rows[sid] for sid in ids[:3])
    assert (r0["guide"], r0["guide_decision"], r0["verified_by"]) == (original, "rejected", "alice")
    assert r0["verification_notes"] == "alice: the draft names the wrong button" and r0["decided_at"].endswith("Z")
    assert r0["guide"] != f"LLM draft of {ids[0]}."
    assert (r1["guide"], r1["guide_source"], r1["guide_decision"], r1["verified_by"]) == (
        f"LLM draft of {ids[1]}.", "llm", "accepted", "alice, bob")
    assert (r2["guide_decision"], r2["verified_by"], r2["guide"]) == ("disputed", None, original2)
    assert sum(r["guide_decision"] is None for r in rows.values()) == len(rows) - 3
    info = json.loads((out / "build_info.json").read_text())
    ann = info["annotation"]
    assert ann["responses"] == 5 and ann["annotators"] == ["alice", "bob"]
    assert ann["decisions"] == {"accepted": 1, "edited": 0, "rejected": 1, "disputed": 1}
    assert ann["agreement"]["items"] == 2 and ann["agreement"]["pairs"][0]["kappa"]["n"] == 2
    card = (out / "README.md").read_text()
    assert "Human verification (`mag annotate`): 5 responses by 2 annotators" in card
    assert "accepted 1, edited 0, rejected 1, disputed 1" in card
    assert "| `guide_decision` | string |" in card


def test_adjudicators_who_disagree_put_the_audit_label_back_to_disputed(tmp_path):
    from mag_dataset.raw import read_audit, write_audit
    from mag_dataset.schema import AuditRecord

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    write_audit(raw / "audit.jsonl", {S: AuditRecord(status="disputed", disputed=True)})
    s = Session(raw)
    try:
        s.adjudicate(S, "confirmed", None, "alice", "the box is right", seen_version=0)
        assert read_audit(raw / "audit.jsonl")[S].adjudicated_by == "alice"
        with pytest.raises(StaleView, match="alice confirmed"):
            s.adjudicate(S, "unmappable", None, "bob", seen_version=0)
        s.adjudicate(S, "unmappable", None, "bob", seen_version=1)
        rec = read_audit(raw / "audit.jsonl")[S]
        assert (rec.status.value, rec.disputed, rec.adjudicated_by) == ("disputed", True, None)
        assert [r.note for r in s.store.responses(S)] == ["the box is right", ""]  # alice's note kept
        s.adjudicate(S, "unmappable", None, "carol", seen_version=2)  # outside the split round: decides it
        rec = read_audit(raw / "audit.jsonl")[S]
        assert (rec.status.value, rec.adjudicated_by) == ("unmappable", "carol")
        assert s.store.resolution(S, "adjudicate").round == 2
    finally:
        s.close()
