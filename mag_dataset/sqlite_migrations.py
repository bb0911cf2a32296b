"""Schema migrations of the package's SQLite databases, by ``PRAGMA user_version``.

Holds the one rule by which a database is brought to the schema its code reads: the
version is ``PRAGMA user_version``; a schema's history is a tuple of :class:`Migration`,
step ``i`` taking a database from version ``i`` to ``i + 1``; :func:`apply_migrations`
runs the steps a database lacks inside the caller's write transaction (so two processes
opening the same old database migrate it once, and a failed step changes nothing), and a
database newer than the code is refused, never altered. It holds no schema: each store
declares its own (:mod:`mag_dataset.harness.annotation_store`, the leaderboard's storage).

Databases written before their store had migrations are at version 0 whatever shape they
have, so a store's first steps only create or add what is missing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Migration:
    """One step of a schema: ``apply`` takes a database from the step's index to the next version.

    Attributes:
        what: what the step adds or changes, in a few words.
        apply: runs the step's statements on a connection inside a transaction.
    """

    what: str
    apply: Callable[[sqlite3.Connection], None]


def schema_version(con: sqlite3.Connection) -> int:
    """The database's schema version (``PRAGMA user_version``; 0 for a new or unversioned database)."""
    return int(con.execute("PRAGMA user_version").fetchone()[0])


def apply_migrations(con: sqlite3.Connection, migrations: Sequence[Migration],
                     newer: Callable[[int], Exception]) -> int:
    """Run the steps of ``migrations`` that the database lacks and set its version.

    Call it inside a write transaction (``BEGIN IMMEDIATE``): the version read here is then
    the one the steps apply to.

    Args:
        con: the connection, in a write transaction.
        migrations: the schema's history, oldest first (the current version is its length).
        newer: the exception to raise for a database of a higher version, given that version.

    Returns:
        The version the database had before.

    Raises:
        Exception: ``newer(version)`` for a database newer than ``migrations``; nothing is changed.
    """
    before = schema_version(con)
    if before > len(migrations):
        raise newer(before)
    for step in migrations[before:]:
        step.apply(con)
    if before < len(migrations):
        con.execute(f"PRAGMA user_version = {len(migrations):d}")
    return before


__all__ = ["Migration", "apply_migrations", "schema_version"]
