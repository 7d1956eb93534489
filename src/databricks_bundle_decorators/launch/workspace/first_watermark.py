"""The first watermark of a table-triggered job, recorded when the job is first deployed.

A ``TableUpdate`` job's first triggered run processes its sources' versions after the
ones recorded at its first deploy. ``dbxdec deploy`` has no cluster, so it reads each
source's latest version and writes the state table's first ``advance`` row (run
``deploy``, :func:`..runtime.triggers.trigger_state.deploy_advance_value`) through a SQL
warehouse with the Statement Execution API. A job parameter default could not hold it:
changing one needs a redeploy. Only the job's first deploy writes the row (a statement
that inserts it only when the job has no ``advance`` row yet); later deploys leave the
processed versions alone.

Sources:

* Statement Execution API: https://docs.databricks.com/api/workspace/statementexecution
  and databricks-sdk's ``StatementExecutionAPI`` docstrings (``wait_timeout`` 5-50 s,
  ``PENDING``/``RUNNING`` answers polled with ``get_statement``, a failed statement is a
  200 answer with state ``FAILED``, ``JSON_ARRAY`` values as strings).
* ``DESCRIBE HISTORY t LIMIT 1``, the last commit, its ``version`` first:
  https://docs.databricks.com/aws/en/delta/history ("Retrieve Delta table history",
  "History schema").
* Parameter markers hold values; a name needs the ``IDENTIFIER`` clause
  (https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-names-identifier-clause),
  so table names here are validated and backtick-quoted instead
  (:class:`..runtime.storage.table_name.TableName`), and every value is a named marker.
* ``CREATE TABLE IF NOT EXISTS ... USING DELTA``:
  https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-table-using
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ...definitions import JobDefinition
from ...definitions.triggers import TableUpdate
from ...errors import DbxdecError
from ...runtime.storage.table_name import TableName
from ...runtime.triggers.trigger_state import DEPLOY_RUN, STATE_COLUMNS, deploy_advance_value
from .workspace import first_line, workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.sql import StatementResponse

__all__ = ["NO_WAREHOUSE_LINE", "Statements", "WatermarkUnreadable", "record_first_watermarks"]

_WAITING = ("PENDING", "RUNNING")
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
    """Record each table-triggered job's first watermark, unless it has one; return one
    line per job (what was recorded, that it was kept, or that no warehouse was given).

    Raises:
        WatermarkUnreadable: a statement failed on the warehouse (one line).
    """
    lines: list[str] = []
    for job, trigger in triggered_jobs(jobs):
        if client is None or not warehouse_id:
            lines.append(NO_WAREHOUSE_LINE.format(job=job.name))
            continue
        run = _Statements(client, warehouse_id, poll_interval)
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


class _Statements:
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
        """The rows of ``statement``, every value a string or ``None``.

        Raises:
            WatermarkUnreadable: the statement failed (its one line).
        """
        return self.named_rows(statement, parameters)[1]

    def named_rows(
        self, statement: str, parameters: Mapping[str, str] | None = None
    ) -> tuple[list[str], list[list[str | None]]]:
        """The result's column names (the manifest's schema) and its rows.

        Raises:
            WatermarkUnreadable: the statement failed (its one line).
        """
        from databricks.sdk.service.sql import StatementParameterListItem as Param

        api = self.client.statement_execution
        params = [Param(name=k, value=v) for k, v in (parameters or {}).items()]
        from databricks.sdk.errors.base import DatabricksError

        try:
            with workspace_errors(self.client.config.host):
                answer = api.execute_statement(
                    statement, self.warehouse_id, parameters=params, wait_timeout="30s"
                )
                while _state(answer) in _WAITING:
                    time.sleep(self.poll_interval)  # the reference's way: poll get_statement
                    answer = api.get_statement(str(answer.statement_id))
                if _state(answer) != "SUCCEEDED":
                    error = answer.status.error if answer.status is not None else None
                    why = error.message if error is not None and error.message else _state(answer)
                    raise WatermarkUnreadable(
                        f"{self.purpose} on SQL warehouse {self.warehouse_id} failed: {why}"
                    )
                schema = answer.manifest.schema if answer.manifest is not None else None
                names = [str(c.name) for c in (schema.columns if schema else None) or []]
                rows: list[list[str | None]] = []
                chunk = answer.result
                while chunk is not None:
                    rows.extend(list(r) for r in chunk.data_array or [])
                    if chunk.next_chunk_index is None:
                        break
                    chunk = api.get_statement_result_chunk_n(
                        str(answer.statement_id), chunk.next_chunk_index
                    )
        except DatabricksError as exc:  # not about reaching the workspace (those are
            # DbxdecError lines by now): the warehouse refused, e.g. it does not exist
            raise WatermarkUnreadable(
                f"{self.purpose} on SQL warehouse {self.warehouse_id} failed: {first_line(exc)}"
            ) from None
        return names, rows


Statements = _Statements
"""Statements on one warehouse (the trigger catch-up reads and writes through it too)."""


def _state(answer: StatementResponse) -> str:
    status = answer.status
    return status.state.value if status is not None and status.state is not None else "UNKNOWN"


def deploy_watermark_lines(
    jobs: Iterable[JobDefinition], *, warehouse_id: str | None, profile: str | None
) -> list[str]:
    """What ``dbxdec deploy`` says after the bundle is deployed: the first watermark of
    each table-triggered job, recorded through ``warehouse_id`` (default:
    ``DATABRICKS_WAREHOUSE_ID``).

    Without a warehouse, one line per job says its first triggered run needs
    ``--from-version`` (the deploy itself has succeeded).
    """
    triggered = [job for job, _ in triggered_jobs(jobs)]
    if not triggered:
        return []
    warehouse = warehouse_id or os.environ.get("DATABRICKS_WAREHOUSE_ID")
    if not warehouse:
        return record_first_watermarks(None, None, triggered)
    from .workspace import connect

    client = connect(profile=profile)
    return record_first_watermarks(client, warehouse, triggered)
