"""The runs of a full refresh (``backfill_full_refresh``, see :mod:`..backfill.refresh`).

- A **stage** run is an ordinary run whose :class:`~.context.RunEnvironment` names the
  backfill (:func:`staged_environment`): every table the job writes through
  :class:`~.io.spark_table.SparkTableIoManager` is written to its staging table, and a
  task reading another task's output of the same job reads that task's staging table
  (the job's tables are being rebuilt together; their old content is not an input).
  Tables the job does not write (sources, other jobs' tables) are read as they are.
- The **swap** run (keyless, after every slice succeeded) does, per task, for each table
  it writes (a table written by several tasks is swapped by the first of them):
  read the staging table, judge the task's checks on every key of it (and refuse an
  empty one), then replace the table with it in **one** Delta commit (an overwrite with
  ``overwriteSchema``: a reader sees the old version or the new one), then drop the
  staging table. The commit carries the run's identity like every dbxdec write, so
  ``dbxdec backfill undo`` restores the table from before the refresh.

A swap run retried after its commit but before the drop commits the same rows again
(same content) and drops; a swap whose staging table is gone fails without a change.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from typing import Any

from ..backfill.refresh import FullRefreshOrder
from ..definitions import JobDefinition
from ..definitions.contracts import ROWS_METRIC
from .checking import TaskChecks
from .context import RunEnvironment
from .errors import OutputRejected, TaskRunError
from .io.delta import delta_table_exists, read_delta
from .io.delta_history import sql_target
from .io.formats import TableRef
from .io.spark_table import SparkTableIoManager, commit_identity
from .outputs import TableOutput, table_outputs


def staged_environment(
    environment: RunEnvironment, order: FullRefreshOrder | None
) -> RunEnvironment:
    """``environment`` for a run with ``order``: stage runs read and write staging tables."""
    if order is None or order.phase != "stage":
        return environment
    return replace(environment, staging=order.backfill_id)


def refreshed_tables(
    job: JobDefinition, environment: RunEnvironment, task_key: str
) -> tuple[list[TableOutput], list[str]]:
    """The tables ``task_key`` swaps (those it is the first writer of) and notes on its
    outputs a full refresh cannot stage (another IoManager, or parquet)."""
    found, notes = table_outputs(
        job,
        environment,
        None,
        other="is written directly, not staged (only SparkTableIoManager Delta tables are)",
        unusable=lambda manager: (
            None
            if manager.format != "parquet" or environment.databricks
            else "is parquet: not staged"
        ),
    )
    mine = [table for table in found.values() if table.tasks[0] == task_key]
    return mine, [note for note in notes if note.startswith(f"task {task_key!r}")]


def swap_outputs(
    job: JobDefinition, task_key: str, order: FullRefreshOrder, environment: RunEnvironment
) -> list[str]:
    """The task of a swap run: check each staging table it owns, replace the table with
    it in one commit, drop it; one printed line per table (for the run's logs).

    Raises:
        TaskRunError: a staging table is missing or empty, a check failed (the table
            is left as it was), or Delta refused the commit.
    """
    tables, notes = refreshed_tables(job, environment, task_key)
    staging_env = replace(environment, staging=order.backfill_id)
    lines = [f"note: {note}" for note in notes]
    for table in tables:
        staging = table.manager.table_ref(staging_env)
        rows = swap_table(job, task_key, table, staging, environment)
        lines.append(f"swapped {table.ref.name}: {rows} rows from {staging.name}")
    if not tables:
        lines.append(f"task {task_key!r} swaps no table")
    for line in lines:
        print(f"full refresh {order.backfill_id}: {line}", flush=True)
    return lines


def swap_table(
    job: JobDefinition,
    task_key: str,
    table: TableOutput,
    staging: TableRef,
    environment: RunEnvironment,
) -> int:
    """Check ``staging`` whole, replace ``table`` with it in one commit, drop it; the
    number of rows swapped in.

    Raises:
        TaskRunError: as :func:`swap_outputs`.
    """
    spark = environment.spark
    manager = table.manager
    checks_of = tuple(job.graph[task_key].definition.checks)
    if not delta_table_exists(spark, staging):
        raise TaskRunError(
            f"task {task_key!r}: staging table {staging.name} does not exist (the refresh's "
            f"slices wrote nothing, or it was swapped already); {table.ref.name} was not changed"
        )
    frame = read_delta(spark, staging)
    checks = TaskChecks(task_key, checks_of)
    measured = checks.metering(manager.partition_column).measure(frame)
    rows = sum(int(values[ROWS_METRIC] or 0) for values in measured.values())
    if not rows:
        raise OutputRejected(
            f"task {task_key!r}: staging table {staging.name} has no rows; a full refresh "
            f"does not empty {table.ref.name}, which was not changed"
        )
    keys = list(measured) if manager.partition_column is not None else [None]
    checks.judge(
        measured, keys=keys, frame=lambda: frame, label="full refresh", target=table.ref.name
    )
    run_id = environment.run_id
    _replace(
        frame, manager, table.ref, commit_identity(job.name, task_key, run_id) if run_id else None
    )
    drop_staging(spark, staging)
    return rows


def _replace(
    frame: Any, manager: SparkTableIoManager, target: TableRef, identity: str | None
) -> None:
    spark = frame.sparkSession
    if not delta_table_exists(spark, target) and manager.layout.declared:
        ddl = frame.schema.toDDL()
        spark.sql(manager.layout.create_sql(sql_target(target), ddl, manager.partition_column))
    writer = (
        frame.write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .option("partitionOverwriteMode", "static")  # the whole table, whatever the session says
    )
    if identity is not None:  # undo finds the swap like any dbxdec write; a retried
        writer = (  # attempt of the same run does not commit twice
            writer.option("userMetadata", identity)
            .option("txnAppId", identity)
            .option("txnVersion", "0")
        )
    if manager.partition_column is not None and not manager.layout.cluster_by:
        writer = writer.partitionBy(manager.partition_column)
    try:
        if target.path is not None:
            writer.save(str(target.path))
        else:
            writer.saveAsTable(target.qualified)
    except Exception as exc:
        if type(exc).__name__ not in ("AnalysisException", "IllegalArgumentException"):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TaskRunError(f"Delta refused the swap into {target.name}: {first}") from None


def drop_staging(spark: Any, staging: TableRef) -> None:
    """Drop a staging table: ``DROP TABLE`` by name, or locally its folder (renamed aside
    first, so a half-deleted folder is never taken for a staging table)."""
    if staging.path is None:
        spark.sql(f"DROP TABLE IF EXISTS {staging.qualified}").collect()
        return
    if not staging.path.exists():
        return
    aside = staging.path.with_name(f"{staging.path.name}.dropped")
    shutil.rmtree(aside, ignore_errors=True)
    staging.path.rename(aside)
    shutil.rmtree(aside, ignore_errors=True)
