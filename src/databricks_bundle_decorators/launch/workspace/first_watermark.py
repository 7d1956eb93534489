"""Statements on a SQL warehouse from the launcher: a table's history (the undo of a
``--downstream`` backfill), and the first watermark of a table-triggered job, which
``dbxdec deploy`` (no cluster) records by reading each source's latest version and
inserting the state table's first ``advance`` row (run ``deploy``), only when the job
has none yet.

Sources: Statement Execution API (https://docs.databricks.com/api/workspace/statementexecution;
``JSON_ARRAY`` values as strings); parameter markers hold values, not names
(https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-names-identifier-clause),
so table names are validated and backtick-quoted; ``CREATE TABLE IF NOT EXISTS ... USING
DELTA`` (https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-table-using).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ...definitions import JobDefinition
from ...definitions.triggers import TableUpdate
from ...errors import DbxdecError
from ...runtime.storage.delta_history import Commit
from ...runtime.storage.formats import TableRef
from ...runtime.storage.table_name import TableName
from ...runtime.triggers.trigger_state import DEPLOY_RUN, STATE_COLUMNS, deploy_advance_value
from .workspace import first_line, statement_rows, workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

_MISSING = "TABLE_OR_VIEW_NOT_FOUND"
_COLUMNS = ("version", "operation", "userMetadata", "timestamp")
NO_WAREHOUSE_LINE = (
    "job {job!r}: no SQL warehouse to record its sources' versions through (pass "
    "--warehouse-id W or set DATABRICKS_WAREHOUSE_ID), so its first triggered run needs "
    "--from-version N"
)


class WatermarkUnreadable(DbxdecError):
    """A statement of the first watermark failed on the warehouse."""

    exit_code = 1


def triggered_jobs(jobs: Iterable[JobDefinition]) -> list[tuple[JobDefinition, TableUpdate]]:
    """The jobs a ``TableUpdate`` triggers, with their triggers."""
    return [(j, j.trigger) for j in jobs if isinstance(j.trigger, TableUpdate)]


def record_first_watermarks(
    client: WorkspaceClient | None,
    warehouse_id: str | None,
    jobs: Iterable[JobDefinition],
    *,
    poll_interval: float = 1.0,
) -> list[str]:
    """Record each table-triggered job's first watermark, unless it has one; one line per
    job.

    Raises:
        WatermarkUnreadable: a statement failed on the warehouse (one line).
    """
    lines: list[str] = []
    for job, trigger in triggered_jobs(jobs):
        if client is None or not warehouse_id:
            lines.append(NO_WAREHOUSE_LINE.format(job=job.name))
            continue
        run = Statements(client, warehouse_id, poll_interval)
        state = TableName.parse(trigger.state_table).quoted
        run.rows(f"CREATE TABLE IF NOT EXISTS {state} ({STATE_COLUMNS}) USING DELTA")
        known = f"SELECT 1 FROM {state} WHERE job = :job AND kind = 'advance'"
        if run.rows(f"{known} LIMIT 1", {"job": job.name}):
            lines.append(f"job {job.name!r}: its watermark is already recorded; kept")
            continue
        versions = {s.name: run.latest_version(s.name) for s in trigger.sources}
        # NOT EXISTS: a deploy beside this one may have recorded it meanwhile.
        run.rows(
            f"INSERT INTO {state} SELECT :job, :run, 'advance', '', :value "
            f"WHERE NOT EXISTS ({known})",
            {"job": job.name, "run": DEPLOY_RUN, "value": deploy_advance_value(versions)},
        )
        listed = ", ".join(f"{name} at version {v}" for name, v in sorted(versions.items()))
        lines.append(f"job {job.name!r}: first watermark {listed} (in {trigger.state_table})")
    return lines


class Statements:
    """Statements on one warehouse, each waited for and read whole."""

    def __init__(
        self,
        client: WorkspaceClient,
        warehouse_id: str,
        poll_interval: float,
        purpose: str = "recording the first watermark",
    ):
        self.client, self.warehouse_id, self.poll_interval = client, warehouse_id, poll_interval
        self.purpose = purpose  # what a failed statement's line says was being done

    def latest_version(self, table: str) -> int:
        rows = self.rows(f"DESCRIBE HISTORY {TableName.parse(table).quoted} LIMIT 1")
        if not rows or rows[0][0] is None:
            raise WatermarkUnreadable(f"DESCRIBE HISTORY {table} answered no version")
        return int(rows[0][0])

    def rows(
        self, statement: str, parameters: Mapping[str, str] | None = None
    ) -> list[list[str | None]]:
        """The rows of ``statement`` (raises as :meth:`named_rows`)."""
        return self.named_rows(statement, parameters)[1]

    def named_rows(
        self, statement: str, parameters: Mapping[str, str] | None = None
    ) -> tuple[list[str], list[list[str | None]]]:
        """The result's column names (the manifest's schema) and its rows.

        Raises:
            WatermarkUnreadable: the statement failed (its one line).
        """
        from databricks.sdk.errors.base import DatabricksError
        from databricks.sdk.service.sql import StatementParameterListItem as Param

        params = [Param(name=k, value=v) for k, v in (parameters or {}).items()]
        try:
            with workspace_errors(self.client.config.host):
                return statement_rows(
                    self.client,
                    self.warehouse_id,
                    statement,
                    params,
                    poll_interval=self.poll_interval,
                    purpose=self.purpose,
                    failed=WatermarkUnreadable,
                )
        except DatabricksError as exc:  # not about reaching the workspace (those are
            # DbxdecError lines by now): the warehouse refused, e.g. it does not exist
            raise WatermarkUnreadable(
                f"{self.purpose} on SQL warehouse {self.warehouse_id} failed: {first_line(exc)}"
            ) from None


def deploy_watermark_lines(
    jobs: Iterable[JobDefinition], *, warehouse_id: str | None, profile: str | None
) -> list[str]:
    """What ``dbxdec deploy`` says after the bundle is deployed: the first watermark of
    each table-triggered job, recorded through ``warehouse_id`` (default:
    ``DATABRICKS_WAREHOUSE_ID``; without one, that ``--from-version`` will be needed)."""
    triggered = [job for job, _ in triggered_jobs(jobs)]
    if not triggered:
        return []
    warehouse = warehouse_id or os.environ.get("DATABRICKS_WAREHOUSE_ID")
    if not warehouse:
        return record_first_watermarks(None, None, triggered)
    from .workspace import connect

    client = connect(profile=profile)
    return record_first_watermarks(client, warehouse, triggered)


class HistoryUnreadable(DbxdecError):
    """A table's history could not be read through the warehouse (exit 1)."""

    exit_code = 1


def read_history(statements: Statements, table: TableRef) -> tuple[Commit, ...]:
    """``table``'s commits, oldest first, read with ``DESCRIBE HISTORY`` by column name
    (https://docs.databricks.com/aws/en/delta/history); empty when the table does not
    exist (``TABLE_OR_VIEW_NOT_FOUND``,
    https://docs.databricks.com/aws/en/error-messages/table-or-view-not-found-error-class).

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
    """``2024-06-01 12:00:00Z`` from a JSON_ARRAY timestamp, for messages."""
    return f"{value[:19].replace('T', ' ')}Z" if value and len(value) >= 19 else ""
