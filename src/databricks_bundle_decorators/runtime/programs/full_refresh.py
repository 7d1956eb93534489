"""The swap run of a full refresh (see :mod:`...backfill.refresh`).

A **stage** run is an ordinary run writing every table of the job to its staging table
(:mod:`.task_run`). The **swap** run (keyless, after every slice succeeded): each task
swaps the tables it is the first writer of. The first task that owns a pending swap
verifies *every* staging table first (checks judged on each key; an empty one is
refused), so a failing check stops the swap before any table changed; each table is
then replaced by its staging table in one Delta commit whose ``userMetadata`` is
``dbxdec:<job>:<task>:refresh=<backfill id>:<run id>`` (undo finds it; a retried swap
skips a table that has it), and the staging table is dropped.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from typing import Any

from ...backfill.wire import TaskOrder
from ...definitions import JobDefinition
from ...definitions.contracts import ROWS_METRIC, RunEnvironment
from ...errors import counted
from ..checks.checking import TaskChecks
from ..core.errors import OutputRejected, TaskRunError
from ..io.spark_table import SparkTableIoManager, commit_identity
from ..job_tables.outputs import TableOutput, table_outputs
from ..storage.ddl import schema_ddl
from ..storage.delta import delta_table_exists, read_delta
from ..storage.delta_history import read_commits, sql_target
from ..storage.formats import TableRef


@dataclass(frozen=True, slots=True)
class Swap:
    """One table of a swap run: where it is staged, and the mark its swap commit carries;
    its owner (first writer) swaps it."""

    table: TableOutput
    staging: TableRef
    mark: str

    @property
    def owner(self) -> str:
        return self.table.tasks[0]


def planned_swaps(
    job: JobDefinition, environment: RunEnvironment, backfill_id: str
) -> tuple[list[Swap], list[str]]:
    """Every table a full refresh of the job swaps, in task order; notes on the outputs
    it cannot stage."""
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
    staging_env = replace(environment, staging=backfill_id)
    mark = f"refresh={backfill_id}"
    swaps = [Swap(t, t.manager.table_ref(staging_env), mark) for t in found.values()]
    return swaps, notes


def swap_outputs(
    job: JobDefinition, task_key: str, order: TaskOrder, environment: RunEnvironment
) -> list[str]:
    """A swap run's task (see the module docs); one printed line per table.

    Raises:
        TaskRunError: a staging table is missing or empty, a check failed (no table of
            this task changed), or Delta refused the commit.
    """
    swaps, notes = planned_swaps(job, environment, order.backfill_id)
    spark = environment.spark if swaps else None
    mine = [s for s in swaps if s.owner == task_key]
    pending = [s for s in swaps if not swapped_already(spark, s)]
    first_owner = pending[0].owner if pending else None
    lines = [f"note: {n}" for n in notes if n.startswith(f"task {task_key!r}")]
    for swap in pending if task_key == first_owner else []:  # every check before any swap
        if swap.owner != task_key:
            rows = verify(job, swap, environment)
            lines.append(f"checked {swap.staging.name}: {counted(rows, 'row')}, its checks pass")
    for swap in mine:
        if swap not in pending:
            drop_staging(spark, swap.staging)
            lines.append(f"{swap.table.ref.name}: swapped already")
            continue
        rows = verify(job, swap, environment)
        identity = commit_identity(job.name, task_key, f"{swap.mark}:{environment.run_id}")
        replace_table(read_delta(spark, swap.staging), swap.table, identity)
        drop_staging(spark, swap.staging)
        lines.append(
            f"swapped {swap.table.ref.name}: {counted(rows, 'row')} from {swap.staging.name}"
        )
    if not mine:
        lines.append(f"task {task_key!r} swaps no table")
    for line in lines:
        print(f"full refresh {order.backfill_id}: {line}", flush=True)
    return lines


def swapped_already(spark: Any, swap: Swap) -> bool:
    needle = f":{swap.mark}:"
    return any(needle in (c.metadata or "") for c in read_commits(spark, swap.table.ref))


def verify(job: JobDefinition, swap: Swap, environment: RunEnvironment) -> int:
    """Judge the owner's checks on every key of the staging table; its row count.

    Raises:
        TaskRunError: the staging table is missing or empty, or a check failed.
    """
    task_key, target = swap.owner, swap.table.ref.name
    spark, manager = environment.spark, swap.table.manager
    if not delta_table_exists(spark, swap.staging):
        raise TaskRunError(
            f"task {task_key!r}: staging table {swap.staging.name} does not exist (the "
            f"refresh's slices wrote nothing to it); {target} was not changed"
        )
    frame = read_delta(spark, swap.staging)
    checks = TaskChecks(task_key, tuple(job.graph[task_key].definition.checks))
    measured = checks.metering(manager.partition_column).measure(frame)
    rows = sum(int(values[ROWS_METRIC] or 0) for values in measured.values())
    if not rows:
        raise OutputRejected(
            f"task {task_key!r}: staging table {swap.staging.name} has no rows; a full "
            f"refresh does not empty {target}, which was not changed"
        )
    keys = list(measured) if manager.partition_column is not None else [None]
    checks.judge(measured, keys=keys, frame=lambda: frame, label="full refresh", target=target)
    return rows


def replace_table(frame: Any, table: TableOutput, identity: str) -> None:
    """Replace ``table`` with ``frame`` in one Delta commit carrying ``identity``.

    Raises:
        TaskRunError: Delta refused the commit.
    """
    manager: SparkTableIoManager = table.manager
    target = table.ref
    spark = frame.sparkSession
    if not delta_table_exists(spark, target) and manager.layout.declared:
        ddl = schema_ddl(frame.schema.jsonValue())
        spark.sql(manager.layout.create_sql(sql_target(target), ddl, manager.partition_column))
    writer = (
        frame.write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .option("partitionOverwriteMode", "static")  # the whole table, whatever the session says
        .option("userMetadata", identity)  # undo finds the swap like any dbxdec write
        .option("txnAppId", identity)  # a retried attempt of the run does not commit twice
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
    """Drop a staging table (locally its folder, renamed aside first, so a half-deleted
    folder is never taken for a staging table)."""
    if staging.path is None:
        spark.sql(f"DROP TABLE IF EXISTS {staging.qualified}").collect()
        return
    if not staging.path.exists():
        return
    aside = staging.path.with_name(f"{staging.path.name}.dropped")
    shutil.rmtree(aside, ignore_errors=True)
    staging.path.rename(aside)
    shutil.rmtree(aside, ignore_errors=True)
