"""The runs of a full refresh (a stage or swap order, see :mod:`...backfill.refresh`).

- A **stage** run is an ordinary run whose :class:`~..core.context.RunEnvironment` names the
  backfill (its ``staging``; see :mod:`.task_run`): every table the job writes through
  :class:`~..io.spark_table.SparkTableIoManager` is written to its staging table, and a
  task reading another task's output of the same job reads that task's staging table
  (the job's tables are being rebuilt together; their old content is not an input).
  Tables the job does not write (sources, other jobs' tables) are read as they are.
- The **swap** run (keyless, after every slice succeeded): each task owns the tables it
  is the first writer of. The first task that owns any first verifies *every* staging
  table of the job (checks judged on each key of the whole table; an empty one is
  refused), so a failing check stops the swap before any table changed; each task then
  verifies its own again and replaces each of its tables with its staging table in
  **one** Delta commit (an overwrite with ``overwriteSchema``: a reader sees the old
  version or the new one), then drops the staging table.

Each swap commit's ``userMetadata`` is ``dbxdec:<job>:<task>:refresh=<backfill id>:<run
id>``: undo reads it as the run's commit (restoring the table from before the refresh),
and a retried swap run skips a table whose history already has its backfill's swap (and
drops the staging table left, if any). Tables are swapped one after the other: Delta has
no commit across tables.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from typing import Any

from ...backfill.wire import TaskOrder
from ...definitions import JobDefinition, TaskValueStore
from ...definitions.contracts import ROWS_METRIC, RunEnvironment
from ..checks.checking import TaskChecks
from ..core.context import use_environment
from ..core.errors import OutputRejected, TaskRunError
from ..io.spark_table import SparkTableIoManager, commit_identity
from ..job_tables.outputs import TableOutput, table_outputs
from ..storage.ddl import schema_ddl
from ..storage.delta import delta_table_exists, read_delta
from ..storage.delta_history import read_commits, sql_target
from ..storage.formats import TableRef
from .run_kinds import RunKind, TaskRunRequest


@dataclass(frozen=True, slots=True)
class Swap:
    """One table of a swap run: where it is staged, and the mark its swap commit carries."""

    table: TableOutput
    staging: TableRef
    mark: str

    @property
    def owner(self) -> str:
        """The task that swaps it (its first writer)."""
        return self.table.tasks[0]


def planned_swaps(
    job: JobDefinition, environment: RunEnvironment, backfill_id: str
) -> tuple[list[Swap], list[str]]:
    """Every table of the job a full refresh swaps, in task order, and notes on the
    outputs it cannot stage (another IoManager, or local parquet)."""
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
    """The task of a swap run (see the module docs); one printed line per table.

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
            lines.append(f"checked {swap.staging.name}: {rows} rows, its checks pass")
    for swap in mine:
        if swap not in pending:
            drop_staging(spark, swap.staging)
            lines.append(f"{swap.table.ref.name}: swapped already")
            continue
        rows = verify(job, swap, environment)
        identity = commit_identity(job.name, task_key, f"{swap.mark}:{environment.run_id}")
        replace_table(read_delta(spark, swap.staging), swap.table, identity)
        drop_staging(spark, swap.staging)
        lines.append(f"swapped {swap.table.ref.name}: {rows} rows from {swap.staging.name}")
    if not mine:
        lines.append(f"task {task_key!r} swaps no table")
    for line in lines:
        print(f"full refresh {order.backfill_id}: {line}", flush=True)
    return lines


def swapped_already(spark: Any, swap: Swap) -> bool:
    """Whether the table's history has this full refresh's swap commit."""
    needle = f":{swap.mark}:"
    return any(needle in (c.metadata or "") for c in read_commits(spark, swap.table.ref))


def verify(job: JobDefinition, swap: Swap, environment: RunEnvironment) -> int:
    """Judge the owner task's checks on every key of the whole staging table; its rows.

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


def run_swap(
    request: TaskRunRequest,
    kind: RunKind,
    *,
    environment: RunEnvironment,
    task_values: TaskValueStore,
) -> None:
    """The :class:`~.run_kinds.RunProgram` of a swap run: :func:`swap_outputs` for the task.

    Raises:
        TaskRunError: a staging table is missing or empty, a check failed, or Delta
            refused the commit.
    """
    with use_environment(environment):
        swap_outputs(request.job, request.task_key, kind.order_as(TaskOrder), environment)
