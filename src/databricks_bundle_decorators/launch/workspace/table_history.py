"""A Unity Catalog table's history, read from the launcher through a SQL warehouse.

The undo of a ``--downstream`` backfill on Databricks checks every table of every job
before any undo run is launched (:mod:`..operations.undo`); the launcher has no
cluster, so it reads each history with the Statement Execution API
(:class:`.first_watermark.Statements`, sources cited there), and undo's own rules judge
it (:func:`...runtime.programs.undo.plan_table`).

* ``DESCRIBE HISTORY t``, its ``version``, ``timestamp``, ``operation`` and
  ``userMetadata`` columns ("History schema",
  https://docs.databricks.com/aws/en/delta/history): read by name from the result's
  ``manifest.schema.columns``, never by position.
* A table that does not exist answers the error class ``TABLE_OR_VIEW_NOT_FOUND``
  (https://docs.databricks.com/aws/en/error-messages/table-or-view-not-found-error-class):
  it has no history, as :func:`...runtime.storage.delta_history.read_commits` says of a
  missing table. Any other failure is one line, never read as "no commit".
"""

from __future__ import annotations

from ...errors import DbxdecError
from ...runtime.storage.delta_history import Commit
from ...runtime.storage.formats import TableRef
from .first_watermark import Statements, WatermarkUnreadable

__all__ = ["HistoryUnreadable", "read_history"]

_MISSING = "TABLE_OR_VIEW_NOT_FOUND"
_COLUMNS = ("version", "operation", "userMetadata", "timestamp")


class HistoryUnreadable(DbxdecError):
    """A table's history could not be read through the warehouse (one line; exit 1, as
    :class:`.first_watermark.WatermarkUnreadable`)."""

    exit_code = 1


def read_history(statements: Statements, table: TableRef) -> tuple[Commit, ...]:
    """``table``'s commits, oldest first (empty when the table does not exist).

    Raises:
        HistoryUnreadable: the statement failed for another reason, or its result
            lacks a documented column.
    """
    try:
        names, rows = statements.named_rows(f"DESCRIBE HISTORY {table.qualified}")
    except WatermarkUnreadable as err:
        if _MISSING in err.render():
            return ()
        raise HistoryUnreadable(
            f"the history of table {table.name} could not be read: {err.render()}; "
            "nothing was restored"
        ) from None
    missing = [c for c in _COLUMNS if c not in names]
    if missing:
        raise HistoryUnreadable(
            f"DESCRIBE HISTORY {table.name} answered no {', '.join(missing)} column; "
            "nothing was restored"
        )
    at = {c: names.index(c) for c in _COLUMNS}
    commits = [
        Commit(
            int(str(row[at["version"]])),
            str(row[at["operation"]] or ""),
            row[at["userMetadata"]],
            _second(row[at["timestamp"]]),
        )
        for row in rows
    ]
    return tuple(sorted(commits, key=lambda c: c.version))


def _second(value: str | None) -> str:
    """``2024-06-01 12:00:00Z`` from a JSON_ARRAY timestamp (ISO 8601, UTC), as
    :func:`...runtime.storage.delta_history.read_commits` words it; for messages only."""
    return f"{value[:19].replace('T', ' ')}Z" if value and len(value) >= 19 else ""
