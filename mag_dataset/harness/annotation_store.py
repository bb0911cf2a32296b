"""The SQLite store of human decisions: guide verifications and audit adjudications.

Holds the database (``RAW/annotations.sqlite`` by default; one row per step, so the app
can be closed and resumed at any time), its schema and its migrations, and which database
a command reads (:func:`stored_adjudications`) or should be told about
(:func:`other_decision_dbs`). Nothing here reads or writes a raw corpus:
:mod:`mag_dataset.harness.annotate` writes decisions back into episodes and into the
audit file.

Schema versions (``PRAGMA user_version``)
    A database is brought to :data:`SCHEMA_VERSION` when it is opened, by the steps of
    :data:`MIGRATIONS` it lacks, all in one transaction (a failed step changes nothing;
    the rule is :mod:`mag_dataset.sqlite_migrations`'):

    1. the ``decisions``, ``originals`` and ``adjudications`` tables (a database made
       before versioning is at version 0 and already has them);
    2. ``decisions.draft_source`` (where an accepted draft came from; rows decided before
       it were LLM drafts, so they read ``llm``).

    A database of a newer version than this code knows is refused, never altered.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.harness.audit_rules import Adjudications
from mag_dataset.schema import AuditStatus, GuideSource
from mag_dataset.sqlite_migrations import Migration, apply_migrations, schema_version

DEFAULT_DB = "annotations.sqlite"
VERIFICATION_DECISIONS = ("accept", "edit", "reject")


@dataclass(frozen=True)
class Decision:
    """A verification decision on one step (``decision`` is one of :data:`VERIFICATION_DECISIONS`)."""

    step_id: str
    decision: str
    guide: str
    draft: str
    annotator: str
    decided_at: str
    draft_source: str = "llm"


@dataclass(frozen=True)
class Adjudication:
    """A human resolution of a disputed audit step."""

    step_id: str
    status: AuditStatus
    element_id: str | None
    annotator: str
    note: str
    decided_at: str


_TABLES = """
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


def _create_tables(db: sqlite3.Connection) -> None:
    for statement in _TABLES.split(";"):
        if statement.strip():
            db.execute(statement)


def _add_draft_source(db: sqlite3.Connection) -> None:
    # a database of the unversioned code may have the column already (it was added without a migration)
    if "draft_source" not in {row[1] for row in db.execute("PRAGMA table_info(decisions)")}:
        db.execute("ALTER TABLE decisions ADD COLUMN draft_source TEXT NOT NULL DEFAULT 'llm'")


#: The schema's history, oldest first (:mod:`mag_dataset.sqlite_migrations`).
MIGRATIONS: tuple[Migration, ...] = (
    Migration("the decisions, originals and adjudications tables", _create_tables),
    Migration("decisions.draft_source (rows decided before it were LLM drafts: 'llm')", _add_draft_source),
)

#: The schema version this code reads and writes.
SCHEMA_VERSION = len(MIGRATIONS)

#: Column lists of the statements (never ``*``: a migrated table may hold its columns in another order).
_DECISION_COLUMNS = "step_id, decision, guide, draft, annotator, decided_at, draft_source"
_ADJUDICATION_COLUMNS = "step_id, status, element_id, annotator, note, decided_at"


def migrate(db: sqlite3.Connection, path: Path | str = "database") -> int:
    """Bring ``db`` to :data:`SCHEMA_VERSION`, in one transaction; returns the version it had.

    Raises:
        ValueError: the database was written by a newer version of this code (it is left as it is).
    """
    old = schema_version(db)
    if old == SCHEMA_VERSION:  # an up-to-date database is only read: no write lock on every open
        return old
    db.execute("BEGIN IMMEDIATE")  # DDL included (sqlite3 opens no transaction for it by itself)
    try:
        old = apply_migrations(db, MIGRATIONS, lambda v: ValueError(
            f"{path}: annotation database of schema version {v}, newer than this mag_dataset reads "
            f"({SCHEMA_VERSION}); upgrade mag_dataset"))
    except BaseException:
        db.rollback()
        raise
    db.commit()
    return old


def _annotator(name: str) -> str:
    """The annotator's name, stripped; a decision without one is refused."""
    if not name or not name.strip():
        raise ValueError("an annotator name is required")
    return name.strip()


def _now() -> str:
    """The decision time, UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class AnnotationStore:
    """The SQLite store of verification decisions and adjudications (thread-safe).

    Args:
        path: the database file (created with its tables when missing).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
        except sqlite3.DatabaseError as e:
            raise ValueError(f"{self.path}: not an annotation database ({e})") from None
        try:
            migrate(self._db, self.path)
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise ValueError(f"{self.path}: not an annotation database ({e})") from None
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "AnnotationStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return list(self._db.execute(sql, args))

    def decide(self, sid: str, decision: str, guide: str, draft: str, annotator: str, original: tuple[str, str],
               draft_source: str = "llm") -> Decision:
        """Record (or replace) the decision on one step.

        Args:
            sid: the step id.
            decision: ``accept``, ``edit`` or ``reject``.
            guide: the resulting guide text (the draft, the edit, or the original).
            draft: the draft shown.
            annotator: who decided (required).
            original: the step's ``(guide, guide_source)`` before any decision; stored once.
            draft_source: where the draft came from: ``llm`` (a drafted guide) or the step's
                own source when it had no draft (accepting a template keeps it ``template``).
        """
        draft_source = GuideSource(draft_source).value
        if decision not in VERIFICATION_DECISIONS:
            raise ValueError(f"decision must be one of {VERIFICATION_DECISIONS}, got {decision!r}")
        annotator = _annotator(annotator)
        guide = " ".join(guide.split())
        if decision == "edit" and not guide:
            raise ValueError("an edited guide cannot be empty")
        now = _now()
        with self._lock, self._db:
            self._db.execute("INSERT OR IGNORE INTO originals (step_id, guide, guide_source) VALUES (?, ?, ?)",
                             (sid, original[0], original[1]))
            self._db.execute(
                f"INSERT OR REPLACE INTO decisions ({_DECISION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (sid, decision, guide, draft, annotator, now, draft_source),
            )
        return Decision(sid, decision, guide, draft, annotator, now, draft_source)

    def decisions(self) -> dict[str, Decision]:
        return {r[0]: Decision(*r) for r in self._rows(f"SELECT {_DECISION_COLUMNS} FROM decisions ORDER BY step_id")}

    def originals(self) -> dict[str, tuple[str, str]]:
        return {r[0]: (r[1], r[2]) for r in self._rows("SELECT step_id, guide, guide_source FROM originals")}

    def adjudicate(self, sid: str, status: AuditStatus | str, element_id: str | None, annotator: str, note: str = "") -> Adjudication:
        """Record (or replace) the human resolution of a disputed step."""
        status = AuditStatus(status)
        if status not in (AuditStatus.CONFIRMED, AuditStatus.REMAPPED, AuditStatus.UNMAPPABLE):
            raise ValueError(f"an adjudication resolves to confirmed, remapped or unmappable, got {status.value}")
        if status is AuditStatus.REMAPPED and not element_id:
            raise ValueError("a remap needs the element id")
        annotator = _annotator(annotator)
        element_id = element_id if status is AuditStatus.REMAPPED else None
        now = _now()
        with self._lock, self._db:
            self._db.execute(
                f"INSERT OR REPLACE INTO adjudications ({_ADJUDICATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (sid, status.value, element_id, annotator, note, now),
            )
        return Adjudication(sid, status, element_id, annotator, note, now)

    def adjudications(self) -> dict[str, Adjudication]:
        return {
            r[0]: Adjudication(r[0], AuditStatus(r[1]), r[2], r[3], r[4], r[5])
            for r in self._rows(f"SELECT {_ADJUDICATION_COLUMNS} FROM adjudications ORDER BY step_id")
        }


def decision_counts(db: str | os.PathLike, step_ids: set[str]) -> int:
    """How many verification decisions and adjudications ``db`` holds for ``step_ids``.

    Opens the file read-only and creates nothing; a file that is not an annotation
    database counts 0.
    """
    try:
        con = sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        n = 0
        for table in ("decisions", "adjudications"):
            try:
                n += sum(r[0] in step_ids for r in con.execute(f"SELECT step_id FROM {table}"))  # noqa: S608 (fixed names)
            except sqlite3.Error:
                pass
        return n
    finally:
        con.close()


# -- the databases next to a corpus --------------------------------------------------------


def stored_adjudications(raw_dir: str | os.PathLike, db_path: str | os.PathLike | None = None) -> Adjudications:
    """Adjudications of the annotation database ``db_path`` (default ``raw_dir/annotations.sqlite``).

    Raises:
        ValueError: an explicit ``db_path`` that does not exist.
    """
    db = Path(db_path) if db_path is not None else Path(raw_dir) / DEFAULT_DB
    if not db.is_file():
        if db_path is not None:
            raise ValueError(f"annotation database not found: {db}")
        return {}
    with AnnotationStore(db) as store:
        return {sid: (a.status, a.element_id, a.annotator) for sid, a in store.adjudications().items()}


def other_decision_dbs(raw_dir: str | os.PathLike, db_path: str | os.PathLike | None, step_ids: set[str],
                       *folders: Path) -> list[str]:
    """Warnings for SQLite files beside the corpus (or in ``folders``), other than the database
    in use, that hold decisions for ``step_ids``: decisions a command would otherwise ignore."""
    raw_dir = Path(raw_dir)
    used = (Path(db_path) if db_path is not None else raw_dir / DEFAULT_DB).resolve()
    out = []
    seen = set()
    for folder in (raw_dir, *folders):
        for db in sorted(Path(folder).glob("*.sqlite")):
            if db.resolve() in seen or db.resolve() == used:
                continue
            seen.add(db.resolve())
            n = decision_counts(db, step_ids)
            if n:
                out.append(f"{db} holds {n} decisions for these steps but is not the database in use "
                           f"({used}); pass --db {db} to use it")
    return out


__all__ = [
    "DEFAULT_DB", "MIGRATIONS", "SCHEMA_VERSION", "VERIFICATION_DECISIONS", "Adjudication", "AnnotationStore",
    "Decision", "decision_counts", "migrate", "other_decision_dbs", "stored_adjudications",
]
