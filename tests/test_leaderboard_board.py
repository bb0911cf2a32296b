"""The leaderboard store (mag_dataset.board) on hand-built gold: real scorer, real SQLite.

Every bad-file case asserts its own message and that nothing was stored; the good path
asserts the stored report is byte for byte what the library scorer writes.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import re
import sqlite3
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mag_dataset.actions import Contract, View
from mag_dataset.board import Board, BoardConfig, Gold, SubmissionRejected
from mag_dataset.board.columns import summary_from_report
from mag_dataset.board.fields import clean_link
from mag_dataset.board.mirror import restore_from_folder
from mag_dataset.board.upload import decode_upload
from mag_dataset.predictions import read_predictions
from mag_dataset.prompts import render_target
from mag_dataset.schema import Action, Candidate, Step
from mag_dataset.scoring import score_predictions

MENU = (
    Candidate("3", "textbox", "Username", (10.0, 40.0, 150.0, 60.0)),
    Candidate("5", "combobox", "Country", (10.0, 100.0, 150.0, 120.0)),
    Candidate("7", "button", "Submit", (20.0, 130.0, 80.0, 150.0)),
)


def _step(i: int, view: View) -> Step:
    task, idx = divmod(i, 3)
    kind = idx % 3
    if kind == 0:
        action, box, guide = Action("type", element_id="3", coordinate=(80.0, 50.0), text=f"user{task}"), MENU[0].bbox, f"Type 'user{task}' into the Username field."
    elif kind == 1:
        action, box, guide = Action("select", element_id="5", coordinate=(80.0, 110.0), value="France"), MENU[1].bbox, "Choose 'France' in the Country drop-down."
    else:
        action, box, guide = Action("click", element_id="7", coordinate=(50.0, 140.0)), MENU[2].bbox, "Click the 'Submit' button to log in."
    return Step(
        step_id=f"task-{task}:{idx}", task_id=f"task-{task}", site=("login" if task % 2 else "signup"),
        intent=f"Log in as user{task} from France", intent_template_id="login", step_index=idx, num_steps=3,
        image_width=160, image_height=210, previous_guides=(), guide=guide, guide_source="template",
        action=action, target_bbox=box, stale=(task == 1), unseen_template=(task == 2), split="test",
        candidates=MENU if view is View.SOM else (),
    )


N_STEPS = 12


def gold(n: int = N_STEPS) -> Gold:
    """``n`` hand-built steps, three per task."""
    return Gold("hand-built", "test", {v: [_step(i, v) for i in range(n)] for v in View})


def jsonl(view: View = View.SOM, contract: Contract = Contract.J, tag: str = "", seeds=(0,), perfect_every=2,
          n: int = N_STEPS) -> bytes:
    """A valid predictions file of :func:`gold` (``n`` steps): gold answers on every other step, a miss elsewhere."""
    lines = []
    for seed in seeds:
        for i in range(n):
            step = _step(i, view)
            out = render_target(step, view, contract) if i % perfect_every == 0 else f"not json {tag}"
            lines.append(json.dumps({"step_id": step.step_id, "output": out, "seed": seed}))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture()
def board(tmp_path: Path) -> Board:
    return Board(BoardConfig(data_dir=tmp_path / "board", daily_cap=100, max_lines=50, max_bytes=16384), gold=gold())


def stored_files(b: Board) -> list[Path]:
    return [p for p in b.config.files_dir.rglob("*") if p.is_file()] if b.config.files_dir.exists() else []


def submit(b: Board, data: bytes, filename: str = "preds.jsonl", **kw):
    args = dict(model_name="m", view="som", contract="J")
    args.update(kw)
    return b.submit(data=data, filename=filename, **args)


# ----------------------------------------------------------------------------- good path


def test_good_file_is_scored_by_the_library_and_stored_content_addressed(board: Board) -> None:
    data = jsonl()
    sub = submit(board, data, model_name="heuristic", organisation="lab", link="https://example.org/m")
    expected = score_predictions(read_predictions(data, [s.step_id for s in gold().steps[View.SOM]]),
                                 gold().steps[View.SOM], "som", "J")
    assert sub.report_json == expected.to_json()  # byte for byte what `mag score` writes
    assert sub.summary == summary_from_report(expected.to_dict())
    assert sub.summary["saa"] == expected.value("saa") and 0 < sub.summary["saa"] < 1
    assert sub.summary["usefulness"] is None  # no verdicts: not applicable, not 0
    assert sub.gold_fingerprint == expected.provenance["dataset_fingerprint"]
    assert sub.scorer_version == expected.provenance["scorer_version"]
    sha = hashlib.sha256(data).hexdigest()
    assert sub.file_sha256 == sha
    files = stored_files(board)
    assert files == [board.config.files_dir / sha[:2] / f"{sha}.jsonl"]
    assert files[0].read_bytes() == data
    assert board.count() == 1 and [s.id for s in board.submissions("som", "J")] == [sub.id]
    assert board.submissions("coord") == []


def test_gzip_and_parquet_uploads_score_like_the_jsonl_and_count_as_the_same_content(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = jsonl(contract=Contract.A)
    rows = [json.loads(line) for line in data.splitlines()]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    files = {"preds.jsonl": data, "preds.jsonl.gz": gzip.compress(data), "preds.PARQUET": buf.getvalue()}
    subs = []
    for i, (name, payload) in enumerate(files.items()):  # each on its own board: the same report
        b = Board(BoardConfig(data_dir=tmp_path / f"b{i}", daily_cap=100, max_lines=50, max_bytes=16384), gold=gold())
        subs.append(submit(b, payload, name, contract="A"))
    assert len({s.report_json for s in subs}) == 1 and len({s.content_sha256 for s in subs}) == 1
    assert {s.file_ext for s in subs} == {".jsonl", ".jsonl.gz", ".parquet"}
    # on one board the other two formats are the same predictions: refused as duplicates
    b = Board(BoardConfig(data_dir=tmp_path / "b0", daily_cap=100, max_lines=50, max_bytes=16384), gold=gold())
    for name in ("preds.jsonl.gz", "preds.PARQUET"):
        with pytest.raises(SubmissionRejected, match=r"the same predictions .* \(submission #1\)"):
            submit(b, files[name], name, contract="A", model_name="again")
    assert b.count() == 1 and len(stored_files(b)) == 1


def test_several_seeds_are_counted(board: Board) -> None:
    sub = submit(board, jsonl(seeds=(0, 1, 2)))
    assert sub.seeds == 3
    assert sub.report["saa"]["std"] is not None


# ----------------------------------------------------------------------------- bad files

def _lines(*objs) -> bytes:
    return ("\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs) + "\n").encode()


IDS = [f"task-{i // 3}:{i % 3}" for i in range(N_STEPS)]
GOOD = [{"step_id": s, "output": "{}"} for s in IDS]

BAD_FILES = {
    "empty": (b"", "preds.jsonl", "the file is empty"),
    "whitespace only": (b"\n \n", "preds.jsonl", "only whitespace"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "preds.jsonl", "looks binary"),
    "not utf-8": (b'{"step_id": "task-0:0", "output": "caf\xe9"}\n', "preds.jsonl", "not UTF-8"),
    "wrong extension": (_lines(*GOOD), "preds.csv", "wrong file extension '.csv'"),
    "json extension": (_lines(*GOOD), "preds.json", "wrong file extension '.json'"),
    "not json": (b"step_id,output\ntask-0:0,hello\n", "preds.jsonl", "line 1: not a JSON object"),
    "json array line": (_lines(["task-0:0", "x"]), "preds.jsonl", "line 1: not a JSON object (got a JSON list)"),
    "missing ids": (_lines(*GOOD[:-2]), "preds.jsonl", "2 step id(s) have no prediction"),
    "duplicate ids": (_lines(*GOOD[:3], GOOD[1], *GOOD[3:]), "preds.jsonl", "line 4: duplicate step_id 'task-0:1'"),
    "unknown ids": (_lines(*GOOD, {"step_id": "nope:0", "output": "{}"}), "preds.jsonl", "line 13: unknown step_id 'nope:0'"),
    "spoofed field": (_lines({"step_id": "task-0:0", "output": "{}", "saa": 1.0}), "preds.jsonl", "unknown field 'saa'"),
    "too many lines": (_lines(*GOOD * 5), "preds.jsonl", "too many lines: 60 non-empty lines, the limit is 50"),
    "over size cap": (b"{" + b" " * 20000 + b"}\n", "preds.jsonl", "over the upload cap of 16,384 bytes"),
    "bad gzip": (b"definitely not gzip", "preds.jsonl.gz", "not valid gzip data"),
    "gzip bomb": (gzip.compress(b" " * 100_000), "preds.jsonl.gz", "decompresses to over the cap of 16,384 bytes"),
    "truncated gzip": (gzip.compress(_lines(*GOOD))[:-12], "preds.jsonl.gz", "truncated"),
    "bad parquet": (b"PAR1 this is not parquet", "preds.parquet", "not a readable Parquet file"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_each_bad_file_gets_its_message_and_stores_nothing(board: Board, case: str) -> None:
    data, name, message = BAD_FILES[case]
    with pytest.raises(SubmissionRejected) as e:
        submit(board, data, name)
    assert message in str(e.value)
    assert board.count() == 0
    assert stored_files(board) == []


def test_bad_file_table_covers_every_case_of_the_issue() -> None:
    # empty, binary, not UTF-8, wrong extension, not JSON, missing/duplicate/unknown ids, too many lines
    assert len(BAD_FILES) == 18
    for needed in ("empty", "binary", "not utf-8", "wrong extension", "not json", "missing ids",
                   "duplicate ids", "unknown ids", "too many lines"):
        assert needed in BAD_FILES


def test_parquet_without_required_columns_is_refused(board: Board) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"step_id": IDS, "prediction": ["{}"] * len(IDS)}), buf)
    with pytest.raises(SubmissionRejected, match=r"lacks the column\(s\) \['output'\]"):
        submit(board, buf.getvalue(), "p.parquet")
    assert board.count() == 0 and stored_files(board) == []


@pytest.mark.parametrize("seed_type", ["timestamp[s]", "string", "double"])
def test_parquet_seed_column_of_another_type_is_refused(board: Board, seed_type: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    seeds = pa.array([1] * len(IDS), pa.int64()).cast(pa.type_for_alias(seed_type)) if seed_type != "string" \
        else pa.array(["1"] * len(IDS))
    buf = io.BytesIO()
    pq.write_table(pa.table({"step_id": IDS, "output": ["{}"] * len(IDS), "seed": seeds}), buf)
    with pytest.raises(SubmissionRejected, match=r"the Parquet column 'seed' must be integers, got "):
        submit(board, buf.getvalue(), "p.parquet")
    assert board.count() == 0 and stored_files(board) == []


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("model_name", "   ", "model name is required"),
        ("model_name", "x" * 121, "model name is 121 characters long"),
        ("view", "pixels", "view must be one of som, coord"),
        ("contract", "AJ", "contract must be one of A, G, J, JG"),
        ("link", "javascript:alert(1)", "link must be an http:// or https:// URL"),
        ("link", "https://x.org/\"><script>", "link must be a plain URL"),
        ("provenance_tag", "trust me", "provenance tag must be one of"),
        ("model_name", 5, "model name must be text, got int"),  # an API caller's JSON, not a string
        ("organisation", ["x"], "organisation must be text, got list"),
        ("link", 5, "link must be text, got int"),
        ("provenance_tag", 5, "provenance tag must be one of"),
    ],
)
def test_bad_fields_are_refused(board: Board, field: str, value: str, message: str) -> None:
    with pytest.raises(SubmissionRejected, match=message.replace("(", r"\(")):
        submit(board, jsonl(), **{field: value})
    assert board.count() == 0 and stored_files(board) == []


def test_html_in_names_is_stored_verbatim_as_text(board: Board) -> None:
    name = '<img src=x onerror="window.__xss=1">'
    sub = submit(board, jsonl(), model_name=name, organisation="<script>window.__xss=2</script>")
    assert board.get(sub.id).model_name == name
    assert clean_link("HTTPS://example.org/a?b=1") == "HTTPS://example.org/a?b=1"


# ----------------------------------------------------------------------------- abuse limits


def test_identical_file_is_not_scored_twice_for_the_same_view_and_contract(board: Board) -> None:
    data = jsonl()
    first = submit(board, data)
    with pytest.raises(SubmissionRejected, match=rf"already scored .* \(submission #{first.id}\)"):
        submit(board, data, model_name="again")
    # the same predictions with a trailing blank line, CRLF line ends and another line order
    lines = data.decode().splitlines()
    shuffled = ("\r\n".join(lines[::-1]) + "\r\n\r\n").encode()
    with pytest.raises(SubmissionRejected, match=rf"the same predictions .* \(submission #{first.id}\)"):
        submit(board, shuffled, model_name="again")
    # a contract-J file declared as JG parses under J only: rejected with the better contract named
    with pytest.raises(SubmissionRejected, match=r"parse better under view som, contract J \(6 of 12 .*declared "
                                                  r"view som, contract JG \(0 of 12\)"):
        submit(board, data, contract="JG")
    assert board.count() == 1 and len(stored_files(board)) == 1


def test_daily_cap_per_submitter_with_admins_exempt(tmp_path: Path) -> None:
    now = [datetime(2026, 11, 29, 23, 0, tzinfo=timezone.utc)]
    b = Board(BoardConfig(data_dir=tmp_path, daily_cap=2, admins=frozenset({"boss"})), gold=gold(), clock=lambda: now[0])
    submit(b, jsonl(tag="1"), submitter="alice")
    submit(b, jsonl(tag="2"), submitter="alice")
    with pytest.raises(SubmissionRejected, match="daily limit reached: 'alice' already has 2 submission"):
        submit(b, jsonl(tag="3"), submitter="alice")
    submit(b, jsonl(tag="3"), submitter="bob")  # another submitter is not affected
    for i in range(3):
        submit(b, jsonl(tag=f"boss{i}"), submitter="boss")
    now[0] += timedelta(hours=2)  # a new UTC day
    submit(b, jsonl(tag="4"), submitter="alice")
    assert b.count() == 7
    # without a submitter, the typed organisation (else the model name) is who is counted
    submit(b, jsonl(tag="5"), organisation="org")
    submit(b, jsonl(tag="6"), organisation="org", model_name="other")
    with pytest.raises(SubmissionRejected, match="'org'"):
        submit(b, jsonl(tag="7"), organisation="org")


def test_concurrent_submissions_are_all_stored(tmp_path: Path) -> None:
    b = Board(BoardConfig(data_dir=tmp_path, daily_cap=1000), gold=gold())
    errors: list[BaseException] = []

    def go(i: int) -> None:
        try:
            submit(b, jsonl(tag=str(i), contract=Contract.A), contract="A", model_name=f"m{i}")
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert b.count() == 40
    assert sorted(s.model_name for s in b.submissions()) == sorted(f"m{i}" for i in range(40))
    with sqlite3.connect(b.config.db_path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# ----------------------------------------------------------------------------- ranking, persistence, rescoring


def test_ranking_by_saa_within_a_contract_ties_share_a_rank(tmp_path: Path) -> None:
    # 30 steps in 10 tasks: the rank's test (task sign-flip) can reach p = 2 / 2**10 when every task
    # favours one side (with the 4 tasks of the small gold its smallest p is 1/8: nothing is significant)
    board = Board(BoardConfig(data_dir=tmp_path / "board", daily_cap=100, max_lines=50), gold=gold(30))
    good = submit(board, jsonl(perfect_every=1, contract=Contract.A, n=30), contract="A", model_name="perfect")
    half = submit(board, jsonl(perfect_every=2, contract=Contract.A, tag="x", n=30), contract="A", model_name="half")
    half2 = submit(board, jsonl(perfect_every=2, contract=Contract.A, tag="y", n=30), contract="A", model_name="half2")
    g = submit(board, jsonl(contract=Contract.G, n=30), contract="G", model_name="guides")
    ranked = board.ranked("som")
    assert [(r, s.id) for r, s in ranked] == [(1, good.id), (2, half.id), (2, half2.id), (1, g.id)]
    assert good.summary["saa"] == 1.0
    assert [s.id for _, s in board.ranked("som", "G")] == [g.id]


def test_rows_persist_across_board_instances_and_rescore_is_byte_identical(tmp_path: Path) -> None:
    cfg = BoardConfig(data_dir=tmp_path / "b", daily_cap=100)
    b1 = Board(cfg, gold=gold())
    ids = [submit(b1, jsonl(view=v, contract=c), view=v.value, contract=c.value).id
           for v in View for c in Contract]
    b2 = Board(cfg, gold=gold())  # a restart
    assert [s.id for s in b2.submissions()] == ids
    results = b2.rescore_all()
    assert len(results) == 8 and all(r.identical for r in results), [r.detail for r in results]
    # a tampered report is caught (the check can fail), and --update repairs it
    with sqlite3.connect(cfg.db_path) as con:
        con.execute("UPDATE submissions SET report_json = replace(report_json, '\"saa\"', '\"saa\" ') WHERE id=?", (ids[0],))
    bad = b2.rescore_all()
    assert [r.id for r in bad if not r.identical] == [ids[0]]
    b2.rescore_all(update=True)
    assert all(r.identical for r in b2.rescore_all())


def test_snapshot_is_a_consistent_copy(board: Board, tmp_path: Path) -> None:
    submit(board, jsonl())
    snap = board.snapshot(tmp_path / "snap" / "board.sqlite")
    with sqlite3.connect(snap) as con:
        assert con.execute("SELECT COUNT(*) FROM submissions").fetchone()[0] == 1


def test_config_from_env() -> None:
    cfg = BoardConfig.from_env({
        "MAG_BOARD_DIR": "/tmp/x", "MAG_BOARD_MAX_MB": "3", "MAG_BOARD_DAILY_CAP": "7",
        "MAG_BOARD_ADMINS": "a, b", "MAG_BOARD_GOLD": "org/gold", "HF_TOKEN": "t", "MAG_BOARD_MAX_LINES": "9",
    })
    assert cfg.db_path == Path("/tmp/x/board.sqlite") and cfg.max_bytes == 3 * 1024 * 1024
    assert cfg.daily_cap == 7 and cfg.admins == {"a", "b"} and cfg.gold == "org/gold"
    assert cfg.gold_token == "t" and cfg.max_lines == 9 and cfg.sync_repo is None
    with pytest.raises(ValueError, match="MAG_BOARD_DAILY_CAP must be an integer"):
        BoardConfig.from_env({"MAG_BOARD_DAILY_CAP": "many"})


def test_decode_upload_passes_good_text_through() -> None:
    data = _lines(*GOOD)
    assert decode_upload(data, "p.jsonl", max_bytes=10_000, max_lines=100) == data
    assert decode_upload(gzip.compress(data), "P.JSONL.GZ", max_bytes=10_000, max_lines=100) == data


def test_usefulness_column_from_cached_verdicts(tmp_path: Path) -> None:
    from mag_dataset.verdicts import UsefulnessVerdict, read_usefulness_verdicts, write_verdicts

    steps = gold().steps[View.SOM]
    # three judges rate the gold guide of every step; the majority finds the first half useful
    verdicts = [UsefulnessVerdict(s.step_id, s.guide, j, useful=(i < 6) or j == "judge-a")
                for i, s in enumerate(steps) for j in ("judge-a", "judge-b", "judge-c")]
    path = write_verdicts(tmp_path / "verdicts.jsonl", verdicts)
    b = Board(BoardConfig(data_dir=tmp_path / "b", verdicts=path), gold=gold())
    data = jsonl(contract=Contract.G, perfect_every=1)
    sub = submit(b, data, contract="G")
    expected = score_predictions(read_predictions(data, IDS), steps, "som", "G", verdicts=read_usefulness_verdicts(path))
    assert sub.report_json == expected.to_json()
    assert sub.summary["usefulness"] == 0.5
    assert all(r.identical for r in b.rescore_all())


def test_hub_sync_failure_offline_keeps_the_submission(tmp_path: Path, caplog) -> None:
    import logging

    cfg = BoardConfig(data_dir=tmp_path / "b", sync_repo="someone/board-mirror", sync_token="hf_fake")
    with caplog.at_level(logging.WARNING, logger="mag_dataset.board"):
        b = Board(cfg, gold=gold())  # no local database: tries to restore, fails offline, starts empty
        sub = b.submit(data=jsonl(), filename="p.jsonl", model_name="m", view="som", contract="J")
        # the restore failed, so syncing would overwrite the mirror with fewer rows: refused
        with pytest.raises(RuntimeError, match="Hub sync is off for this run: the start-up restore from"):
            b.sync_to_hub()
    assert b.count() == 1 and b.get(sub.id) is not None
    assert any("could not restore the board from someone/board-mirror" in r.message for r in caplog.records)


def test_cli_rescore_without_a_database_is_a_user_error(tmp_path: Path, capsys) -> None:
    from mag_dataset.cli import main

    assert main(["leaderboard", "rescore", "--board-dir", str(tmp_path / "none")]) == 2
    assert "no leaderboard database at" in capsys.readouterr().err


def test_rescore_against_changed_gold_says_so(tmp_path: Path) -> None:
    cfg = BoardConfig(data_dir=tmp_path / "b")
    sub = submit(Board(cfg, gold=gold()), jsonl())
    g = gold()
    g.steps[View.SOM][0] = dataclasses.replace(g.steps[View.SOM][0], guide="Another guide.")
    (r,) = Board(cfg, gold=g).rescore_all()
    assert r.id == sub.id and not r.identical and "the gold changed since it was scored" in r.detail


def test_sync_payload_restores_a_board_that_rescores_identically(tmp_path: Path) -> None:
    import shutil

    a = Board(BoardConfig(data_dir=tmp_path / "a"), gold=gold())
    subs = [submit(a, jsonl(tag=str(i)), model_name=f"m{i}") for i in range(3)]
    assert len({s.file_sha256 for s in subs}) == 3
    mirror = tmp_path / "mirror"  # what the Hub repo holds after the sync commit

    def push() -> list[str]:
        payload = a.sync_payload(tmp_path / "snap")
        for path_in_repo, local in payload:
            (mirror / path_in_repo).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local, mirror / path_in_repo)
        a.mark_synced(max(s.id for s in a.submissions()))
        return [p for p, _ in payload]

    pushed = push()
    assert pushed[0] == "board.sqlite" and len(pushed) == 1 + 3
    later = submit(a, jsonl(tag="later"), model_name="later")
    assert push() == ["board.sqlite", a.file_path(later.file_sha256, ".jsonl").relative_to(a.config.data_dir).as_posix()]

    b_cfg = BoardConfig(data_dir=tmp_path / "b")  # a fresh Space: empty disk
    assert restore_from_folder(b_cfg, mirror)
    b = Board(b_cfg, gold=gold())
    assert [s.report_json for s in b.submissions()] == [s.report_json for s in a.submissions()]
    assert b.count() == 4 and all(r.identical for r in b.rescore_all())
    assert not restore_from_folder(BoardConfig(data_dir=tmp_path / "c"), tmp_path / "nothing")


def test_rescore_reports_a_stored_file_it_cannot_score_instead_of_crashing(tmp_path: Path, monkeypatch, capsys) -> None:
    from mag_dataset.cli import main

    cfg = BoardConfig(data_dir=tmp_path / "b")
    b = Board(cfg, gold=gold())
    altered, missing, fine = (submit(b, jsonl(tag=t), model_name=t) for t in ("altered", "missing", "fine"))
    b.file_path(altered.file_sha256, altered.file_ext).write_bytes(b"tampered\n")
    b.file_path(missing.file_sha256, missing.file_ext).unlink()
    results = {r.id: r for r in b.rescore_all()}
    assert results[fine.id].identical and not results[fine.id].failed
    assert results[altered.id].failed and "does not match its SHA-256" in results[altered.id].detail
    assert results[missing.id].failed and "cannot re-score" in results[missing.id].detail
    # gold that lacks the stored file's step ids: a failure named, not a traceback
    g = gold()
    g.steps[View.SOM] = g.steps[View.SOM][1:]
    g._ids[View.SOM] = g._ids[View.SOM][1:]
    (r,) = [r for r in Board(cfg, gold=g).rescore_all() if r.id == fine.id]
    assert r.failed and "unknown step_id" in r.detail

    monkeypatch.setattr(Gold, "load", classmethod(lambda cls, *a, **k: gold()))
    assert main(["leaderboard", "rescore", "--board-dir", str(cfg.data_dir)]) == 1
    out = capsys.readouterr().out
    assert f"#{fine.id}: identical" in out and f"#{altered.id}: FAILED (cannot re-score: " in out
    assert "1/3 stored reports reproduced byte for byte" in out and "2 stored submission(s) could not be re-scored" in out
    assert main(["leaderboard", "rescore", "--board-dir", str(cfg.data_dir), "--update"]) == 1  # nothing to update them with


def test_gold_folder_that_does_not_exist_is_named(tmp_path: Path) -> None:
    from mag_dataset.board import Gold

    with pytest.raises(FileNotFoundError, match="gold dataset folder not found: .*nowhere"):
        Gold.load(str(tmp_path / "nowhere"))


# ----------------------------------------------------------------------------- hostile uploads (issue 17)


def test_scoring_over_the_time_limit_is_rejected_and_the_board_still_scores(tmp_path: Path) -> None:
    slow = Board(BoardConfig(data_dir=tmp_path / "slow", score_seconds=0.05), gold=gold())
    with pytest.raises(SubmissionRejected, match=r"took longer than the limit of 0.05 s per submission"):
        submit(slow, jsonl())
    assert slow.count() == 0 and stored_files(slow) == []
    fine = Board(BoardConfig(data_dir=tmp_path / "slow"), gold=gold())  # same data, the default limit
    assert submit(fine, jsonl()).id == 1


def test_seed_cap_is_a_board_setting(tmp_path: Path) -> None:
    b = Board(BoardConfig(data_dir=tmp_path / "b", max_seeds=2), gold=gold())
    with pytest.raises(SubmissionRejected, match=rf"line {2 * N_STEPS + 1}: seed 2 would be seed number 3: "
                                                 r"a file may hold at most 2 seeds"):
        submit(b, jsonl(seeds=(0, 1, 2)))
    assert submit(b, jsonl(seeds=(0, 1))).seeds == 2
    assert BoardConfig.from_env({"MAG_BOARD_MAX_SEEDS": "3", "MAG_BOARD_SCORE_SECONDS": "9",
                                 "MAG_BOARD_WORKER_MB": "512", "MAG_BOARD_WORKERS": "4"}).max_seeds == 3


@pytest.mark.parametrize("case", ["dictionary bomb", "nested list", "duplicate column", "invalid UTF-8", "two gzip members"])
def test_decode_upload_refuses_each_hostile_file_from_its_metadata(case: str) -> None:
    from mag_dataset.testing import hostile

    data, name, message = {
        "dictionary bomb": (hostile.dictionary_bomb(IDS[0], 40, value_bytes=1000), "p.parquet", "strings decode to at least 40,320 bytes (a value repeated on many rows counts on each), over the cap of 16,384 bytes"),
        "nested list": (hostile.nested_list_bomb(IDS[0], 1_000), "p.parquet", "'seed' must be integers, got list<element: int8>"),
        "duplicate column": (hostile.duplicate_column(IDS), "p.parquet", "the column 'output' 2 times"),
        "invalid UTF-8": (hostile.invalid_utf8(IDS, row=2), "p.parquet", "row 2: the Parquet column 'output' holds invalid UTF-8"),
        "two gzip members": (hostile.two_gzip_members(jsonl(), b"{}\n"), "p.jsonl.gz", "a second gzip member"),
    }[case]
    with pytest.raises(SubmissionRejected, match=re.escape(message)):
        decode_upload(data, name, max_bytes=16384, max_lines=50)


@pytest.mark.parametrize("field", ["model_name", "organisation", "submitter", "link"])
@pytest.mark.parametrize("char,message", [("\ud800", "a lone surrogate U+D800"), ("\u202e", "bidirectional control character U+202E"),
                                          ("\u2066", "bidirectional control character U+2066")])
def test_text_fields_refuse_lone_surrogates_and_bidi_controls(board: Board, field: str, char: str, message: str) -> None:
    value = f"https://example.org/a{char}b" if field == "link" else f"a{char}b"
    with pytest.raises(SubmissionRejected, match=re.escape(message)):
        submit(board, jsonl(), **{field: value})
    assert board.count() == 0


@pytest.mark.parametrize("field", ["model_name", "organisation", "submitter"])
@pytest.mark.parametrize("value,message", [
    ("gpt-4\u043e", "mixes Latin letters with the Cyrillic letter 'о' (U+043E) in 'gpt-4о'"),
    ("gpt\u200b-4o", "the invisible character U+200B (ZERO WIDTH SPACE, character 4)"),
    ("\ufeff\u00adgpt-4o", "the invisible character U+FEFF"),
    ("\u3164", "the invisible character U+1160 (HANGUL JUNGSEONG FILLER"),  # U+3164 is U+1160 in NFKC
    ("Z\u0301\u0301\u0301", "stacks more than 2 combining marks on one character ('Z')"),
    ("\u00e9\u0301\u0301", "stacks more than 2 combining marks on one character ('e')"),  # é counts its own mark
])
def test_names_that_would_pass_for_another_or_for_none_are_refused(board: Board, field: str, value: str, message: str) -> None:
    """Look-alike names (a Cyrillic "о"), invisible ones (zero-width space, BOM + soft hyphen,
    the Hangul filler) and stacked combining marks, each accepted before and shown as a
    duplicate of a real row, a blank name, or marks over the neighbouring rows."""
    with pytest.raises(SubmissionRejected, match=re.escape(message)):
        submit(board, jsonl(), **{field: value})
    assert board.count() == 0


def test_names_are_stored_in_nfkc_form_and_real_scripts_pass(board: Board) -> None:
    sub = submit(board, jsonl(), model_name="ＧＰＴ－４ｏ ﬁne-tuned", organisation="Trường Đại học Bách khoa")
    assert (sub.model_name, sub.organisation) == ("GPT-4o fine-tuned", "Trường Đại học Bách khoa")
    other = submit(board, jsonl(tag="2"), model_name="Ελληνικό μοντέλο 7B")  # Greek words beside Latin ones
    assert other.model_name == "Ελληνικό μοντέλο 7B"
