"""The tables a job writes through :class:`~..io.spark_table.SparkTableIoManager`: one
walk (:func:`table_outputs`) for undo, presence, the diff gate and a full refresh, the
quarantine tables beside them, and the rows per key of one table."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import date

from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...backfill.scope import KeyScope
from ...backfill.wire import PresenceReport
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ..checks.quarantine import quarantine_ref, quarantining
from ..io.spark_table import SparkTableIoManager
from ..storage.formats import TableRef


@dataclass(frozen=True, slots=True)
class TableOutput:
    """An output table of a job: its IoManager, where it is, the tasks that write it."""

    manager: SparkTableIoManager
    ref: TableRef
    tasks: tuple[str, ...]


def table_outputs(
    job: JobDefinition,
    environment: RunEnvironment,
    tasks: Collection[str] | None,
    *,
    other: str,
    unusable: Callable[[SparkTableIoManager], str | None],
) -> tuple[dict[str, TableOutput], list[str]]:
    """The tables the job's tasks (or only ``tasks``) write, by name, in task order;
    and a note for each output left out.

    Args:
        other: What is said of an output stored by another IoManager (e.g. ``"keeps no
            Delta history; not undone"``).
        unusable: Why a Spark table cannot be used (a note), or ``None`` to keep it.
    """
    found: dict[str, TableOutput] = {}
    notes: list[str] = []
    graph = job.graph
    for key in graph.topological_order():
        manager = graph[key].definition.io_manager
        if manager is None or (tasks is not None and key not in tasks):
            continue
        if not isinstance(manager, SparkTableIoManager):
            notes.append(f"task {key!r}: its io_manager {type(manager).__name__} {other}")
            continue
        reason = unusable(manager)
        if reason is not None:
            notes.append(f"task {key!r}: table {manager.table} {reason}")
            continue
        ref = manager.table_ref(environment)
        known = found.get(ref.name)
        found[ref.name] = TableOutput(manager, ref, (*known.tasks, key) if known else (key,))
    return found, notes


def with_quarantine_tables(
    job: JobDefinition, environment: RunEnvironment, found: dict[str, TableOutput]
) -> dict[str, TableOutput]:
    """``found`` with the quarantine table of each output written by a task with a
    quarantining check (undo restores it with its table)."""
    out = dict(found)
    for output in found.values():
        if any(quarantining(tuple(job.graph[t].definition.checks)) for t in output.tasks):
            ref = quarantine_ref(output.manager.table, environment)
            out.setdefault(ref.name, TableOutput(output.manager, ref, output.tasks))
    return out


def table_presence(
    table: TableOutput, scope: KeyScope, environment: RunEnvironment
) -> PresenceReport:
    """The rows of each of ``scope``'s keys in one partitioned table: one ``GROUP BY``
    over its partition column(s), filtered by the IoManager's read predicate."""
    manager = table.manager
    column = manager.partition_column
    assert column is not None  # only partitioned tables are asked
    frame = manager.table_format(environment).read(
        environment.spark, table.ref, partition_column=column, keys=scope.keys
    )
    task = ",".join(table.tasks)
    if frame is None or not scope.keys:
        return PresenceReport(table.ref.name, task, frame is not None, {})
    predicate = manager.read_predicate(scope)
    if predicate is not None:
        frame = frame.where(predicate)
    columns = manager.partition_columns  # (static value, time key) of a two-dimensional table
    counted = frame.groupBy(*columns).count().withColumnRenamed("count", "rows").collect()
    rows = {
        # a DATE column holds daily keys as dates
        MULTI_SEPARATOR.join(
            row[c].isoformat() if isinstance(row[c], date) else str(row[c]) for c in columns
        ): int(row["rows"])
        for row in counted
        if all(row[c] is not None for c in columns)
    }
    wanted = set(scope.keys)
    return PresenceReport(
        table.ref.name, task, True, {k: n for k, n in sorted(rows.items()) if k in wanted}
    )
