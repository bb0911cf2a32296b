"""Board storage migrations (``PRAGMA user_version``) on real SQLite files written by earlier
board code: the committed data folder ``tests/golden/board_schema1`` (written by the
pre-package board of 0b1e889, see its README) and a database of the very first schema,
before ``content_sha256`` and ``step_values_json`` existed (that folder with the two
columns dropped again).

Each old database must open, keep its rows byte for byte, rank and re-score them, and take
a new submission.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mag_dataset.board import Board, BoardConfig, SubmissionRejected
from mag_dataset.board.storage import MIGRATIONS, SCHEMA_VERSION
from test_leaderboard_board import gold, jsonl

FIXTURE = Path(__file__).parent / "golden" / "board_schema1"

CLOCK = lambda: datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)  # noqa: E731


def _rows(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT * FROM submissions ORDER BY id").fetchall()
    finally:
        con.close()


def _pragma(db: Path, what: str) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute(f"PRAGMA {what}").fetchone()[0])
    finally:
        con.close()


def _meta(db: Path) -> dict[str, str]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()


def _board(data_dir: Path) -> Board:
    return Board(BoardConfig(data_dir=data_dir, daily_cap=100, max_lines=50, max_bytes=16384), gold=gold(), clock=CLOCK)


def test_the_fixture_is_what_the_pre_package_code_wrote(tmp_path: Path) -> None:
    db = FIXTURE / "board.sqlite"
    assert _pragma(db, "user_version") == 0 and _meta(db) == {"schema_version": "1", "last_synced_id": "1"}
    rows = _rows(db)
    assert [(r[0], r[3], r[7], r[8]) for r in rows] == [(1, "half right", "som", "J"), (2, "guides", "som", "G")]
    files = sorted(p.name for p in (FIXTURE / "files").rglob("*.jsonl"))
    assert len(files) == 2 and all(p.split(".")[0] in {r[10] for r in rows} for p in files)


def test_a_schema_1_board_opens_migrates_keeps_its_rows_and_takes_a_submission(tmp_path: Path) -> None:
    data_dir = tmp_path / "board"
    shutil.copytree(FIXTURE, data_dir)
    db = data_dir / "board.sqlite"
    before = _rows(db)
    board = _board(data_dir)
    assert _pragma(db, "user_version") == SCHEMA_VERSION == len(MIGRATIONS)
    assert _meta(db) == {"last_synced_id": "1"}  # the unread schema_version row is gone; the sync mark stays
    assert _rows(db) == before  # every stored column byte for byte
    old = board.submissions()
    assert [s.model_name for s in old] == ["half right", "guides"] and old[0].summary["saa"] == 0.5
    ranked = [(r.rank, r.submission.id, r.metric) for r in board.ranking("som")]
    assert ranked == [(1, 2, "bleu1"), (1, 1, "saa")]
    for r in board.rescore_all():  # the stored files still score; byte-identical unless the scorer moved on
        assert not r.failed and (r.identical or r.stored_version != r.current_version), r
    with pytest.raises(SubmissionRejected, match=r"the same predictions .* \(submission #1\)"):
        board.submit(data=jsonl() + b"\n", filename="again.jsonl", model_name="again", view="som", contract="J")
    new = board.submit(data=jsonl(tag="new"), filename="new.jsonl", model_name="new", view="som", contract="J")
    assert new.id == 3 and board.count() == 3 and new.created_at == "2026-12-01T09:00:00Z"
    assert _rows(db)[:2] == before
    # the sync mark survived the migration: #1's file is in the mirror, #2's and #3's are due
    payload = [p for p, _ in board.sync_payload(tmp_path / "snap")]
    assert payload == ["board.sqlite", *(f"files/{s.file_sha256[:2]}/{s.file_sha256}.jsonl" for s in (old[1], new))]


def test_a_database_of_the_first_schema_gains_the_later_columns(tmp_path: Path) -> None:
    """Boards of 28caae9 had neither ``content_sha256`` nor ``step_values_json``: the
    migration adds them, the duplicate check fills the content hash from the stored file,
    and the rank re-scores the per-step values once."""
    data_dir = tmp_path / "board"
    shutil.copytree(FIXTURE, data_dir)
    db = data_dir / "board.sqlite"
    with sqlite3.connect(db) as con:  # the fixture's own DDL, as the first board code created it
        con.execute("ALTER TABLE submissions DROP COLUMN content_sha256")
        con.execute("ALTER TABLE submissions DROP COLUMN step_values_json")
    legacy = _rows(db)
    assert len(legacy[0]) == 18 and _pragma(db, "user_version") == 0
    board = _board(data_dir)
    columns = [r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(submissions)")]
    assert columns[-2:] == ["content_sha256", "step_values_json"] and len(columns) == 20
    assert [r[:18] for r in _rows(db)] == legacy
    with pytest.raises(SubmissionRejected, match=r"the same predictions .* \(submission #1\)"):
        board.submit(data=jsonl() + b"\n", filename="again.jsonl", model_name="again", view="som", contract="J")
    assert all(r[18] and len(r[18]) == 64 for r in _rows(db))  # content hashes filled from the files
    assert board.step_values(board.get(1)) == [1.0, 0.0] * 6
    new = board.submit(data=jsonl(tag="new"), filename="new.jsonl", model_name="new", view="som", contract="J")
    assert new.id == 3 and _pragma(db, "user_version") == SCHEMA_VERSION


def test_migrations_run_once_and_a_fresh_database_starts_at_the_current_version(tmp_path: Path) -> None:
    board = _board(tmp_path / "b")
    db = board.config.db_path
    assert _pragma(db, "user_version") == SCHEMA_VERSION and _meta(db) == {}
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con = sqlite3.connect(db)
    con.execute("INSERT INTO meta VALUES ('schema_version', 'kept')")
    con.commit()
    con.close()
    assert board.store.migrate() == SCHEMA_VERSION  # already current: no step runs again
    assert _meta(db) == {"schema_version": "kept"}


def test_a_database_from_newer_code_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "b" / "board.sqlite"
    _board(tmp_path / "b")
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(RuntimeError, match=f"board schema version {SCHEMA_VERSION + 1}, newer than this code's"):
        _board(tmp_path / "b")


def test_two_boards_opening_one_old_database_at_once_migrate_it_once(tmp_path: Path) -> None:
    data_dir = tmp_path / "board"
    shutil.copytree(FIXTURE, data_dir)
    errors: list[BaseException] = []

    def open_board() -> None:
        try:
            _board(data_dir)
        except BaseException as e:  # noqa: BLE001 - reported by the assert below
            errors.append(e)

    threads = [threading.Thread(target=open_board) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    db = data_dir / "board.sqlite"
    assert _pragma(db, "user_version") == SCHEMA_VERSION and len(_rows(db)) == 2
