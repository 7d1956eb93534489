"""The commits undo made, recorded in the backfill's ledger database.

``RESTORE`` and ``DELETE`` take no writer options, and the session setting that would
label their commits is not one serverless compute lets a job set (see
:mod:`..runtime.session.serverless_rules`). So undo reads the version its commit made back from
``DESCRIBE HISTORY`` (on Databricks the undo run reports it in a
:func:`~..backfill.wire.report_line` ``undo`` line) and the launcher records
``(table, version)`` here, in an ``undone`` table of the ledger's SQLite database; a later
undo counts a ``RESTORE``/``DELETE`` at a recorded version as its own.

A detached backfill's ledger is its journal in the workspace (:mod:`..ledger.journal`):
its undo's ``(table, version)`` records are workspace files beside the segments,
``undone-<table hash>-<version>.json`` (``{"format", "table", "version"}``; each created
once, never replaced: a record sent twice is one), which the journal's reader ignores
by name, so an undo from any machine sees what an earlier one made.

The backfill's own commits are found by its id: every slice's parameters carry it
(``backfill_id``, :func:`carry_backfill_id`), so each of its runs writes it into its
commits' ``userMetadata``. The ledger records those parameters, so it also says whether
its runs carried the id (:func:`carries_backfill_id`): a ledger written before that
parameter, or a backfill of a job deployed without it, did not, and its undo falls back
to the ids of its runs.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from contextlib import closing
from dataclasses import replace
from typing import TYPE_CHECKING

from ...backfill.wire import BACKFILL_ID_PARAM
from ...errors import LocalStateProblem
from ..ledger.journal_read import FORMAT
from ..ledger.journal_store import JournalStore
from ..ledger.ledger import Ledger
from ..ledger.ledger_store import why
from ..ledger.place import reading
from ..workspace.workspace import declares_job_parameter

if TYPE_CHECKING:
    from ..guard.connection import ConnectedJob

_UNDONE = re.compile(r"undone-[0-9a-f]{16}-\d+\.json")
_CREATE = "CREATE TABLE IF NOT EXISTS undone (tbl TEXT NOT NULL, version INTEGER NOT NULL)"


def _journal(ledger: Ledger) -> JournalStore | None:
    store = ledger.bound_store
    return store if isinstance(store, JournalStore) else None


def _undone_name(table: str, version: int) -> str:
    digest = hashlib.sha256(table.encode()).hexdigest()[:16]
    return f"undone-{digest}-{int(version)}.json"


def read_undone(ledger: Ledger) -> frozenset[tuple[str, int]]:
    """``(table, version)`` of every commit an undo of this backfill made.

    Raises:
        LocalStateProblem: the ledger database cannot be read.
        WorkspaceUnreachable, WorkspaceRejected: (a journal) the workspace did not
            answer or refused.
    """
    journal = _journal(ledger)
    if journal is not None:
        return _read_journal_undone(journal)
    if not ledger.path.is_file():
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
        WorkspaceUnreachable, WorkspaceRejected: (a journal) the workspace did not
            answer or refused.
    """
    journal = _journal(ledger)
    if journal is not None:
        _record_journal_undone(journal, table, version)
        return
    path = ledger.path
    try:
        with closing(sqlite3.connect(path, timeout=30.0)) as conn, conn:
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(_CREATE)
            conn.execute("INSERT INTO undone VALUES (?, ?)", (table, int(version)))
    except sqlite3.Error as exc:
        raise LocalStateProblem(f"cannot save backfill ledger {path}: {why(exc)}") from None


def _read_journal_undone(journal: JournalStore) -> frozenset[tuple[str, int]]:
    place, folder = journal.place, journal.folder
    found: set[tuple[str, int]] = set()
    with reading(place, f"the undo records of backfill {journal.backfill_id}"):
        for name in place.names():
            if _UNDONE.fullmatch(name) is None:
                continue
            content = place.read(name)
            try:
                data = json.loads(content or "")
                found.add((str(data["table"]), int(data["version"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise LocalStateProblem(
                    f"the undo record {folder}/{name} is damaged ({exc}): delete it and "
                    "undo again with --force if a table needs it"
                ) from None
    return frozenset(found)


def _record_journal_undone(journal: JournalStore, table: str, version: int) -> None:
    body = {"format": FORMAT, "table": table, "version": int(version)}
    name = _undone_name(table, version)
    with reading(journal.place, f"the undo record {journal.folder}/{name}"):
        journal.place.create(name, json.dumps(body))  # False: recorded before, or a lost reply


def carry_backfill_id(ledger: Ledger, found: ConnectedJob | None = None) -> list[str]:
    """Give every slice of a new ledger the job parameter ``backfill_id`` (its id); kept by
    ``--resume`` and by a re-batch, which reuse the slices' recorded parameters.

    On Databricks (``found``: the deployed job), only when the deployed
    job declares that parameter: the Jobs API reference does not say what ``run-now``
    does with a job parameter the job does not declare
    (https://docs.databricks.com/api/workspace/jobs/runnow), so none is sent. Returns
    the warning then (one line), else nothing.

    Raises:
        UsageError: the deployed job cannot be read.
    """
    if found is not None and not declares_job_parameter(
        found.client, found.remote.job_id, BACKFILL_ID_PARAM
    ):
        return [
            f"job {found.remote.name!r} (id {found.remote.job_id}) was deployed without the "
            f"{BACKFILL_ID_PARAM} parameter (by an older dbxdec): its runs are not sent the "
            "backfill's id, so its undo names every run; deploy it again (dbxdec deploy)"
        ]
    for record in ledger.slices:
        ledger.update(
            replace(record, parameters={**record.parameters, BACKFILL_ID_PARAM: ledger.id})
        )
    return []


def carries_backfill_id(ledger: Ledger) -> bool:
    """Whether every run of the backfill was sent its id (:func:`carry_backfill_id`), so
    that its commits can be found by it."""
    return bool(ledger.slices) and all(
        r.parameters.get(BACKFILL_ID_PARAM) == ledger.id for r in ledger.slices
    )
