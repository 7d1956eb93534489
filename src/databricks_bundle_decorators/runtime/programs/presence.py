"""Which backfill keys have data: read from the job's output tables, not from run history.

A key is *present* when every partitioned output table of the job has at least one row
for it (inside the key's window, for a table with a ``time_column``); otherwise it is
missing, whether no run ever wrote it, a run wrote it with no rows (a write of zero rows
clears the key), or only some of the job's tables have it. A table that does not exist
yet has no key.

Each table is read with **one aggregate query**: the IoManager's own read predicate over
the keys (quoted literals for the keys, ``TIMESTAMP`` literals for the windows; see
:mod:`..core.predicates`), grouped by the partition column, rows counted. Locally that runs on
the embedded Spark; on Databricks a run of the job with ``dbxdec_order`` set runs it
on the job's compute, every task for the tables it writes, and prints a
:class:`~...backfill.wire.PresenceReport` line per table that the launcher reads back.

Outputs that have no partition per key (an unpartitioned snapshot table, another
IoManager) say nothing about keys: they are left out, with a note.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ...backfill.scope import KeyScope
from ...backfill.wire import PresenceOrder, PresenceReport
from ...definitions import JobDefinition, TaskValueStore
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError
from ..core.context import use_environment
from ..job_tables.key_rows import KeyedTable as KeyedTable
from ..job_tables.key_rows import table_presence as table_presence
from ..job_tables.outputs import table_outputs
from .run_kinds import RunKind, TaskRunRequest


@dataclass(frozen=True, slots=True)
class JobPresence:
    """The rows per key of each of a job's partitioned output tables.

    Attributes:
        reports: One per table (``rows`` holds only keys that have rows).
        notes: Outputs left out (no partition per key).
    """

    reports: tuple[PresenceReport, ...]
    notes: tuple[str, ...] = field(default=())

    def missing(self, keys: Sequence[str]) -> list[str]:
        """The ``keys`` (in their order) that lack rows in at least one table.

        Example:
            >>> a = PresenceReport("main.s.a", "t1", True, {"2024-01-01": 2, "2024-01-02": 1})
            >>> b = PresenceReport("main.s.b", "t2", True, {"2024-01-01": 5})
            >>> JobPresence((a, b)).missing(["2024-01-01", "2024-01-02", "2024-01-03"])
            ['2024-01-02', '2024-01-03']
        """
        return [k for k in keys if any(not report.rows.get(k) for report in self.reports)]


def keyed_tables(
    job: JobDefinition, environment: RunEnvironment, tasks: Collection[str] | None = None
) -> tuple[dict[str, KeyedTable], list[str]]:
    """The partitioned tables the job's tasks (or only ``tasks``) write through
    :class:`~..io.spark_table.SparkTableIoManager`, by name; and a note for each output
    that has no partition per key."""
    return table_outputs(
        job,
        environment,
        tasks,
        other="has no partitions to read; not checked",
        unusable=lambda manager: (
            "has no partition_column (one snapshot for all keys); not checked"
            if manager.partition_column is None
            else None
        ),
    )


def read_presence(
    job: JobDefinition,
    keys: Sequence[str],
    environment: RunEnvironment,
    tasks: Collection[str] | None = None,
) -> JobPresence:
    """The rows per key of ``keys`` in every partitioned output table of ``job`` (or of
    ``tasks``).

    Raises:
        UsageError: the job has no backfill definition.
    """
    if job.backfill is None:
        raise UsageError(f"job {job.name!r} has no backfill definition, so no keys to look for")
    found, notes = keyed_tables(job, environment, tasks)
    scope = KeyScope(job.backfill, tuple(keys))
    reports = tuple(table_presence(table, scope, environment) for table in found.values())
    return JobPresence(reports, tuple(notes))


def order_keys(job: JobDefinition, order: PresenceOrder) -> list[str]:
    """The keys a presence order names, from the job's backfill definition.

    Raises:
        UsageError: the job has no backfill, or the order's keys are not its keys.
    """
    if job.backfill is None:
        raise UsageError(f"job {job.name!r} has no backfill definition, so no keys to look for")
    try:
        return list(job.backfill.keys(order.keys.first, order.keys.last))
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: presence order: {exc}") from None


def report_presence(
    job: JobDefinition, task_key: str, order: PresenceOrder, environment: RunEnvironment
) -> JobPresence:
    """The task of a presence run (``dbxdec_order`` set): count the rows per key of
    the tables ``task_key`` writes and print one report line per table (the launcher
    reads them from the task's output), with a summary line for people reading the logs.

    Raises:
        UsageError: the order's keys are not the job's keys.
    """
    keys = order_keys(job, order)
    presence = read_presence(job, keys, environment, tasks={task_key})
    label = order.keys.label
    for report in presence.reports:
        print(report.to_line(), flush=True)
        state = "" if report.exists else " (the table does not exist)"
        print(
            f"presence {label}: {report.table}: {len(report.rows)} of {len(keys)} keys have "
            f"rows{state}",
            flush=True,
        )
    for note in presence.notes:
        print(f"presence {label}: note: {note}", flush=True)
    if not presence.reports and not presence.notes:
        print(f"presence {label}: task {task_key!r} writes no table", flush=True)
    return presence


def run_presence(
    request: TaskRunRequest,
    kind: RunKind,
    *,
    environment: RunEnvironment,
    task_values: TaskValueStore,
) -> None:
    """The :class:`~.run_kinds.RunProgram` of a presence run: :func:`report_presence` for the task.

    Raises:
        UsageError: the order's keys are not the job's keys.
    """
    with use_environment(environment):
        report_presence(request.job, request.task_key, kind.order_as(PresenceOrder), environment)
