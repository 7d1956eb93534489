"""Which backfill keys have data, read from the job's output tables, not run history.

A key is present when every partitioned output table has a row for it (inside its
window, for a table with a ``time_column``); each table is one aggregate query
(:func:`~..job_tables.outputs.table_presence`). On Databricks a presence run's tasks
print one :class:`~...backfill.wire.PresenceReport` line per table for the launcher.
Outputs without a partition per key are left out, with a note.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ...backfill.scope import KeyScope
from ...backfill.wire import PresenceOrder, PresenceReport
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError
from ..job_tables.outputs import TableOutput, table_outputs, table_presence
from .run_kinds import order_keys


@dataclass(frozen=True, slots=True)
class JobPresence:
    """The rows per key of each partitioned output table (``reports``, keys with rows
    only) and the outputs left out (``notes``)."""

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
) -> tuple[dict[str, TableOutput], list[str]]:
    """The partitioned tables the job's tasks (or only ``tasks``) write, by name; and a
    note for each output that has no partition per key."""
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


def report_presence(
    job: JobDefinition, task_key: str, order: PresenceOrder, environment: RunEnvironment
) -> JobPresence:
    """A presence run's task: print a report line, and a summary line, per table
    ``task_key`` writes.

    Raises:
        UsageError: the order's keys are not the job's keys.
    """
    keys = order_keys(job, order)
    presence = read_presence(job, keys, environment, tasks={task_key})
    label = f"presence {order.keys.label}"
    for report in presence.reports:
        print(report.to_line(), flush=True)
        state = "" if report.exists else " (the table does not exist)"
        have = f"{len(report.rows)} of {len(keys)} keys have rows{state}"
        print(f"{label}: {report.table}: {have}", flush=True)
    for note in presence.notes:
        print(f"{label}: note: {note}", flush=True)
    if not presence.reports and not presence.notes:
        print(f"{label}: task {task_key!r} writes no table", flush=True)
    return presence
