"""The diff gate's measurement run on Databricks (``dbxdec_order`` set): every task
reports how the canary run named in the order changed the order's keys in the tables it
writes, one :class:`~...backfill.wire.MeasureReport` line per table, which the launcher
reads back from the task's output (see ``launch/backends/measure_run.py``).

The measure itself is :mod:`..job_tables.key_changes`' (the same code a local backfill runs
in-process): row counts and the tables' declared aggregates, at the version before the
backfill and at the canary run's commit, by Delta time travel.
"""

from __future__ import annotations

from ...backfill.wire import MeasureOrder, MeasureReport
from ...definitions import JobDefinition, TaskValueStore
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError
from ..core.context import use_environment
from ..job_tables.key_changes import measured_tables
from .run_kinds import RunKind, TaskRunRequest


def order_keys(job: JobDefinition, order: MeasureOrder) -> list[str]:
    """The keys a measure order names, from the job's backfill definition.

    Raises:
        UsageError: the job has no backfill, or the order's keys are not its keys.
    """
    if job.backfill is None:
        raise UsageError(f"job {job.name!r} has no backfill definition, so no keys to measure")
    try:
        return list(job.backfill.keys(order.keys.first, order.keys.last))
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: measure order: {exc}") from None


def report_measures(
    job: JobDefinition, task_key: str, order: MeasureOrder, environment: RunEnvironment
) -> list[MeasureReport]:
    """Measure the tables ``task_key`` writes and print one report line per table (with
    a summary line for people reading the logs)."""
    keys = order_keys(job, order)
    label = f"measure of run {order.run_id} {order.keys.label}"
    reports = []
    for output, changes in measured_tables(
        job,
        environment,
        keys,
        run_id=order.run_id,
        backfill_id=order.backfill_id,
        tasks={task_key},
    ):
        report = MeasureReport(output.ref.name, task_key, changes is not None, tuple(changes or ()))
        reports.append(report)
        print(report.to_line(), flush=True)
        what = f"{len(report.changes)} measures" if report.committed else "no commit of the run"
        print(f"{label}: {report.table}: {what}", flush=True)
    if not reports:
        print(f"{label}: task {task_key!r} writes no partitioned Delta table", flush=True)
    return reports


def run_measure(
    request: TaskRunRequest,
    kind: RunKind,
    *,
    environment: RunEnvironment,
    task_values: TaskValueStore,
) -> None:
    """The :class:`~.run_kinds.RunProgram` of a measurement run: :func:`report_measures`.

    Raises:
        UsageError: the order's keys are not the job's keys, or a declared aggregate's
            column is not in the table.
    """
    with use_environment(environment):
        report_measures(request.job, request.task_key, kind.order_as(MeasureOrder), environment)
