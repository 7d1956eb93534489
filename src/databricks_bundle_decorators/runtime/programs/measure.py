"""The diff gate's measure run (``dbxdec_order`` set): how the canary run named in the
order changed its keys in the tables each task writes
(:func:`~..job_tables.key_changes.measured_tables`, the code a local backfill runs too),
one :class:`~...backfill.wire.MeasureReport` line per table for the launcher."""

from __future__ import annotations

from ...backfill.wire import MeasureOrder, MeasureReport
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ..job_tables.key_changes import measured_tables
from .run_kinds import order_keys


def report_measures(
    job: JobDefinition, task_key: str, order: MeasureOrder, environment: RunEnvironment
) -> list[MeasureReport]:
    """A measure run's task: print a report line, and a summary line, per table
    ``task_key`` writes.

    Raises:
        UsageError: the order's keys are not the job's keys, or a declared aggregate's
            column is not in the table.
    """
    keys = order_keys(job, order)
    label = f"measure of run {order.run_id} {order.keys.label}"
    reports = []
    measured = measured_tables(
        job, environment, keys, run_id=order.run_id, backfill_id=order.backfill_id, tasks={task_key}
    )
    for output, changes in measured:
        report = MeasureReport(output.ref.name, task_key, changes is not None, tuple(changes or ()))
        reports.append(report)
        print(report.to_line(), flush=True)
        what = f"{len(report.changes)} measures" if report.committed else "no commit of the run"
        print(f"{label}: {report.table}: {what}", flush=True)
    if not reports:
        print(f"{label}: task {task_key!r} writes no partitioned Delta table", flush=True)
    return reports
