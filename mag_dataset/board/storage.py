"""SQLite storage of the board: the schema and its migrations, and every statement the
board runs. One row per accepted submission; holds no scoring, no file bytes (those live
content-addressed under ``files/``, see :meth:`mag_dataset.board.Board.file_path`) and no
Hub code.

Migrations: :data:`MIGRATIONS` is this schema's history, applied by the package's one
migration rule (:mod:`mag_dataset.sqlite_migrations`: ``PRAGMA user_version``, the missing
steps inside one ``BEGIN IMMEDIATE`` transaction, a newer database refused). Databases
written before the board had migrations are at version 0 whatever shape they have (with or
without the columns added later, with a ``meta.schema_version`` row that nothing read), so
the first steps only create or add what is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterator

from mag_dataset.board.records import Submission
from mag_dataset.sqlite_migrations import Migration, apply_migrations, schema_version

#: The first schema (board code up to 0b1e889 created it and, at start-up, added the
#: columns of migration 2); migration 1 creates it where it is missing.
_SCHEMA_1 = (
    """CREATE TABLE IF NOT EXISTS submissions (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at       TEXT    NOT NULL,
    submitter        TEXT    NOT NULL,
    model_name       TEXT    NOT NULL,
    organisation     TEXT    NOT NULL DEFAULT '',
    link             TEXT    NOT NULL DEFAULT '',
    provenance_tag   TEXT    NOT NULL,
    view             TEXT    NOT NULL,
    contract         TEXT    NOT NULL,
    split            TEXT    NOT NULL,
    file_sha256      TEXT    NOT NULL,
    file_ext         TEXT    NOT NULL,
    file_size        INTEGER NOT NULL,
    seeds            INTEGER NOT NULL,
    scorer_version   TEXT    NOT NULL,
    gold_fingerprint TEXT    NOT NULL,
    summary_json     TEXT    NOT NULL,
    report_json      TEXT    NOT NULL,
    UNIQUE (file_sha256, view, contract)
)""",
    "CREATE INDEX IF NOT EXISTS submissions_by_submitter ON submissions (submitter, created_at)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

#: Columns of migration 2: (name, SQL type); ``NULL`` in older rows, filled lazily from the stored file.
_COLUMNS_2: tuple[tuple[str, str], ...] = (("content_sha256", "TEXT"), ("step_values_json", "TEXT"))


def _create_tables(con: sqlite3.Connection) -> None:
    for statement in _SCHEMA_1:
        con.execute(statement)


def _add_content_and_step_values(con: sqlite3.Connection) -> None:
    have = {r[1] for r in con.execute("PRAGMA table_info(submissions)")}
    for name, sql_type in _COLUMNS_2:
        if name not in have:
            con.execute(f"ALTER TABLE submissions ADD COLUMN {name} {sql_type}")


def _drop_meta_schema_version(con: sqlite3.Connection) -> None:
    con.execute("DELETE FROM meta WHERE key='schema_version'")


#: The schema's history, oldest first; the current version is ``len(MIGRATIONS)``.
MIGRATIONS: tuple[Migration, ...] = (
    Migration("the submissions table, its submitter index and the meta table", _create_tables),
    Migration("content_sha256 and step_values_json columns", _add_content_and_step_values),
    Migration("PRAGMA user_version replaces the unread meta.schema_version row", _drop_meta_schema_version),
)

#: The schema version this code writes and reads.
SCHEMA_VERSION = len(MIGRATIONS)

_COLUMNS = (
    "id, created_at, submitter, model_name, organisation, link, provenance_tag, view, contract, split, "
    "file_sha256, file_ext, file_size, seeds, scorer_version, gold_fingerprint, summary_json, report_json, "
    "content_sha256"
)

#: Columns a rescore may rewrite (:meth:`Store.update_report`).
_REPORT_COLUMNS = ("report_json", "summary_json", "scorer_version", "gold_fingerprint")


def _row_to_submission(row: tuple) -> Submission:
    values = list(row)
    values[16] = json.loads(values[16])
    return Submission(*values)


class Store:
    """The board's SQLite database (WAL mode): short connections, writes under one process
    lock and a ``BEGIN IMMEDIATE`` transaction, so concurrent writers never lose a row.

    Args:
        db_path: the database file (created, and migrated, by :meth:`migrate`).
    """

    def __init__(self, db_path: Path) -> None:
        self.db_path = Path(db_path)
        self._write_lock = threading.Lock()

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A short-lived autocommit connection that waits up to 60 s for a lock."""
        con = sqlite3.connect(self.db_path, timeout=60, isolation_level=None)
        try:
            con.execute("PRAGMA busy_timeout=60000")
            con.execute("PRAGMA synchronous=NORMAL")
            yield con
        finally:
            con.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` under the process lock), committed when
        the block ends, rolled back when it raises."""
        with self._write_lock, self.connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    # ---- schema

    def migrate(self) -> int:
        """Bring the database to :data:`SCHEMA_VERSION` (see the module docstring).

        Returns:
            The version the database had before.

        Raises:
            RuntimeError: the database was written by a newer version of this code.
        """
        with self.connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
        with self.transaction() as con:
            before = apply_migrations(con, MIGRATIONS, lambda v: RuntimeError(
                f"{self.db_path} has board schema version {v}, newer than this code's {SCHEMA_VERSION}: "
                "upgrade mag_dataset to open it"))
        return int(before)

    def version(self) -> int:
        """The database's schema version (``PRAGMA user_version``)."""
        with self.connect() as con:
            return schema_version(con)

    # ---- submissions

    def insert(self, con: sqlite3.Connection, row: dict[str, Any]) -> int:
        """Insert one submission row (column -> value) inside ``con``'s transaction; its id."""
        cur = con.execute(f"INSERT INTO submissions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                          tuple(row.values()))
        return int(cur.lastrowid)

    def get(self, submission_id: int) -> Submission | None:
        with self.connect() as con:
            row = con.execute(f"SELECT {_COLUMNS} FROM submissions WHERE id=?", (int(submission_id),)).fetchone()
        return _row_to_submission(row) if row else None

    def submissions(self, view: str | None = None, contract: str | None = None) -> list[Submission]:
        """Stored submissions, oldest first, optionally filtered by view and contract values."""
        sql, args = f"SELECT {_COLUMNS} FROM submissions WHERE 1=1", []
        if view:
            sql += " AND view=?"
            args.append(view)
        if contract:
            sql += " AND contract=?"
            args.append(contract)
        with self.connect() as con:
            rows = con.execute(sql + " ORDER BY id", args).fetchall()
        return [_row_to_submission(r) for r in rows]

    def count(self) -> int:
        with self.connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM submissions").fetchone()[0])

    @staticmethod
    def same(con: sqlite3.Connection, column: str, value: str, view: str, contract: str) -> int | None:
        """The id of a stored submission of this view and contract with ``column`` = ``value``."""
        assert column in ("file_sha256", "content_sha256")
        row = con.execute(f"SELECT id FROM submissions WHERE {column}=? AND view=? AND contract=?",
                          (value, view, contract)).fetchone()
        return int(row[0]) if row else None

    @staticmethod
    def count_on_day(con: sqlite3.Connection, submitter: str, day: str) -> int:
        """Submissions of ``submitter`` stored on the UTC day ``YYYY-MM-DD``."""
        (n,) = con.execute(
            "SELECT COUNT(*) FROM submissions WHERE submitter=? AND substr(created_at, 1, 10)=?", (submitter, day)
        ).fetchone()
        return int(n)

    def update_report(self, submission_id: int, columns: dict[str, str]) -> None:
        """Store a re-scored report's columns; the kept per-step values are dropped (recomputed on use)."""
        values = [columns[c] for c in _REPORT_COLUMNS]
        with self.transaction() as con:
            con.execute(f"UPDATE submissions SET {', '.join(f'{c}=?' for c in _REPORT_COLUMNS)}, "
                        "step_values_json=NULL WHERE id=?", (*values, int(submission_id)))

    def step_values(self, submission_id: int) -> list[float | None] | None:
        """The kept per-step values of a submission's ranking metric, or ``None``."""
        with self.connect() as con:
            row = con.execute("SELECT step_values_json FROM submissions WHERE id=?", (int(submission_id),)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def set_step_values(self, submission_id: int, values: list[float | None]) -> None:
        with self.transaction() as con:
            con.execute("UPDATE submissions SET step_values_json=? WHERE id=?", (json.dumps(values), int(submission_id)))

    @staticmethod
    def without_content(con: sqlite3.Connection) -> list[int]:
        """Ids of rows stored before ``content_sha256`` existed."""
        return [int(r[0]) for r in con.execute("SELECT id FROM submissions WHERE content_sha256 IS NULL")]

    @staticmethod
    def set_content(con: sqlite3.Connection, submission_id: int, content: str) -> None:
        con.execute("UPDATE submissions SET content_sha256=? WHERE id=?", (content, int(submission_id)))

    # ---- meta and copies

    def meta(self, key: str) -> str | None:
        with self.connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def snapshot(self, dest: Path) -> Path:
        """A consistent copy of the database (SQLite online backup)."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.unlink(missing_ok=True)
        with self.connect() as con:
            target = sqlite3.connect(tmp)
            try:
                con.backup(target)
            finally:
                target.close()
        os.replace(tmp, dest)
        return dest


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Store"]
