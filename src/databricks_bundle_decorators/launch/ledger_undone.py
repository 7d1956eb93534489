"""The commits undo made, recorded in the backfill's ledger database.

``RESTORE`` and ``DELETE`` take no writer options, and the session setting that would
label their commits is not one serverless compute lets a job set (see
:mod:`..runtime.serverless_rules`). So undo reads the version its commit made back from
``DESCRIBE HISTORY`` (on Databricks the undo run reports it in a
:data:`~..backfill.wire.UNDO_REPORT_PREFIX` line) and the launcher records
``(table, version)`` here, in an ``undone`` table of the ledger's SQLite database; a later
undo counts a ``RESTORE``/``DELETE`` at a recorded version as its own.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from ..errors import LocalStateProblem
from .ledger import Ledger
from .ledger_store import why

_CREATE = "CREATE TABLE IF NOT EXISTS undone (tbl TEXT NOT NULL, version INTEGER NOT NULL)"


def _database(ledger: Ledger) -> Path:
    if ledger.path.suffix != ".sqlite":  # an older JSON ledger: migrated by its first save
        ledger.dirty = True
        ledger.save()
    return ledger.path


def read_undone(ledger: Ledger) -> frozenset[tuple[str, int]]:
    """``(table, version)`` of every commit an undo of this backfill made."""
    if ledger.path.suffix != ".sqlite" or not ledger.path.is_file():
        return frozenset()
    try:
        with closing(sqlite3.connect(ledger.path, timeout=30.0)) as conn:
            known = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'undone'"
            ).fetchone()
            rows = conn.execute("SELECT tbl, version FROM undone").fetchall() if known else []
    except sqlite3.Error as exc:
        raise LocalStateProblem(f"cannot read backfill ledger {ledger.path}: {why(exc)}") from None
    return frozenset((str(table), int(version)) for table, version in rows)


def record_undone(ledger: Ledger, table: str, version: int) -> None:
    """Record that an undo of this backfill made ``version`` of ``table`` (synced).

    Raises:
        LocalStateProblem: the ledger database cannot be written.
    """
    path = _database(ledger)
    try:
        with closing(sqlite3.connect(path, timeout=30.0)) as conn, conn:
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(_CREATE)
            conn.execute("INSERT INTO undone VALUES (?, ?)", (table, int(version)))
    except sqlite3.Error as exc:
        raise LocalStateProblem(f"cannot save backfill ledger {path}: {why(exc)}") from None
