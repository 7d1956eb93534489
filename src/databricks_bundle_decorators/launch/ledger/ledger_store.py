"""Where a backfill ledger lives on disk: an SQLite database, one row per slice.

``<project root>/.dbxdec/backfills/<id>.sqlite`` holds two tables: ``ledger`` (one row,
the header: id, job, state, times, backend, options, undone versions, as JSON) and
``slices`` (one row per slice: keys, parameters and attempts, as JSON). A save replaces
the header row and the rows of the slices that changed since the last save, in one
transaction -- so recording one state change costs the same at 1,000 slices as at 100,000
(the JSON file it replaces was rewritten whole on every change: 15 MB per save at 87,662
slices).

Why SQLite in WAL mode rather than an append-only journal with compaction: it is both,
already written and tested. The write-ahead log *is* the append-only journal (a commit
appends the changed pages, each frame checksummed, so a torn tail is ignored on
recovery), and checkpoints are the compaction, run by SQLite when the log reaches 1,000
pages. Readers -- ``dbxdec backfills``, ``dbxdec status``, the status page -- read a
consistent snapshot while the launcher writes, without blocking it, through the standard
library; a hand-written journal would need its own framing, recovery, compaction and
reader locking, each a place for a durability bug.

Durability: ``synchronous=FULL``. In WAL mode ``NORMAL`` is safe against a killed process
(the log is in the operating system's cache) but a power loss or kernel crash can roll
back the last commits -- and the launcher's promise is that an attempt is on disk
*before* its run is submitted, so a resume re-sends the same idempotency token instead of
forgetting the run. ``FULL`` syncs the log on every commit: one fsync per save, as the
JSON ledger had (it had two, the file and the folder). Checkpoints also sync the
database file; they are amortised over 1,000 pages of log.

The database is created in one transaction (schema and first contents together), so a
launcher killed while creating it leaves either a whole ledger or one with no tables,
which reads as damaged.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

SCHEMA_VERSION = 1
_SCHEMA = (
    "CREATE TABLE ledger (one INTEGER PRIMARY KEY CHECK (one = 1), header TEXT NOT NULL)",
    "CREATE TABLE slices (idx INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)


class SliceStore(Protocol):
    """Where a ledger's saves go: :class:`LedgerStore` (this database) or a journal in the
    workspace (:class:`.journal.JournalStore`)."""

    @property
    def path(self) -> Path:
        """Where the ledger lives, as ``Ledger.path`` shows it."""

    def write(
        self, header: dict[str, Any], changed: Iterable[tuple[int, dict[str, Any]]], count: int
    ) -> None:
        """Keep ``header``, the ``changed`` slices and the slice ``count``, whole or not at all."""

    def close(self) -> None:
        """Release what the store holds open."""


def ledger_dir(root: Path) -> Path:
    """Where the ledgers of a project live."""
    return root / ".dbxdec" / "backfills"


class NotALedger(ValueError):
    """The database holds no ledger (created by a launcher killed before its first
    commit, or not a dbxdec database at all)."""


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


class LedgerStore:
    """The writer of one ledger database; keeps its connection open between saves.

    Not for concurrent writers: one launcher owns a backfill (the claim sees to that).
    Saves from more than one thread are serialised.
    """

    def __init__(self, path: Path) -> None:
        self.path = path.with_suffix(".sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))  # as mkstemp would
            conn = _connect(self.path)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
            except sqlite3.Error:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def write(
        self, header: dict[str, Any], changed: Iterable[tuple[int, dict[str, Any]]], count: int
    ) -> None:
        """Commit ``header`` and the ``changed`` slices (index, JSON object); rows at or
        past ``count`` are deleted (a re-batched tail that shrank).

        Raises:
            OSError: the folder cannot be created.
            sqlite3.Error: the database cannot be written (a full disk, a read-only file
                system); nothing of this save is kept.
        """
        with self._lock:
            conn = self._open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                if not _has_ledger(conn):
                    for statement in _SCHEMA:
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR REPLACE INTO ledger (one, header) VALUES (1, ?)",
                    (json.dumps(_with_undone_kept(conn, header)),),
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO slices (idx, body) VALUES (?, ?)",
                    ((i, json.dumps(body)) for i, body in changed if i < count),
                )
                conn.execute("DELETE FROM slices WHERE idx >= ?", (count,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the connection (SQLite checkpoints the log when the last one closes)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _with_undone_kept(conn: sqlite3.Connection, header: dict[str, Any]) -> dict[str, Any]:
    """``header`` with the undone versions already in the database added: ``undo`` records
    them through its own ``Ledger`` of the file, and a launcher of the same backfill that
    saves later, from a header read before, must not drop them (they only ever grow)."""
    # only the undone array is read (SQLite's JSON functions, built in since 3.38): the
    # common save, with none recorded, parses nothing
    row = conn.execute("SELECT json_extract(header, '$.undone') FROM ledger WHERE one = 1")
    found = row.fetchone()
    if found is None or found[0] is None:
        return header
    stored = json.loads(found[0])
    pairs = {(str(t), int(v)) for t, v in [*stored, *header.get("undone", [])]}
    return {**header, "undone": [list(pair) for pair in sorted(pairs)]}


def why(exc: sqlite3.Error) -> str:
    """What went wrong, in a few words: ``disk I/O error (SQLITE_IOERR_WRITE)``."""
    name = getattr(exc, "sqlite_errorname", "")
    text = " ".join(str(exc).split())[:200] or type(exc).__name__
    return f"{text} ({name})" if name else text


def _has_ledger(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger'")
    return row.fetchone() is not None


def backfill_ids(folder: Path) -> set[str]:
    """The ids of the ledgers in ``folder``."""
    return {p.stem for p in folder.glob("*.sqlite")}


def read_store(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the slices (in index order) of the ledger database ``path``, as
    one consistent snapshot, even while a launcher writes it.

    Raises:
        FileNotFoundError: there is no such file (none is created).
        NotALedger: the database holds no ledger.
        sqlite3.Error: the file is not a database or cannot be read.
        ValueError: a row is not valid JSON.
    """
    if not path.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    conn = _connect(path)
    try:
        conn.execute("BEGIN")  # one read transaction: the header and slices agree
        if not _has_ledger(conn):
            raise NotALedger("the database holds no ledger")
        row = conn.execute("SELECT header FROM ledger WHERE one = 1").fetchone()
        if row is None:
            raise NotALedger("the database holds no ledger header")
        bodies = conn.execute("SELECT body FROM slices ORDER BY idx").fetchall()
        conn.execute("COMMIT")
    finally:
        conn.close()
    header: dict[str, Any] = json.loads(row[0])
    return header, [json.loads(body) for (body,) in bodies]
