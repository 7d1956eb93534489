"""The diff gate's measurement on Databricks: a run of the deployed job that measures a
canary run's keys where the tables are.

The tables live in Unity Catalog, readable from the job's compute, so the launcher asks
the job itself: ``jobs/run-now`` with ``dbxdec_order`` set to a
:class:`~...backfill.wire.MeasureOrder` (the canary run, the backfill, the canary's key
range). Every task of that run measures the tables it writes with the runtime code a
local backfill runs in-process (:mod:`...runtime.job_tables.key_changes`) and prints a
:class:`~...backfill.wire.MeasureReport` line per table. The launcher waits for the run
(bounded), then reads each task's output with ``jobs/runs/get-output``, whose ``logs``
hold a wheel task's stdout -- the channel presence runs use (see
:mod:`..operations.presence`); never notebook task values, which a wheel task does not set.

The measurement run is a run of the job like any other: it takes one of the job's
``max_concurrent_runs`` slots (queued while the other canaries run when the job's queue
is on; without a queue Databricks skips it, and the canary is then stopped as not
measured). Its idempotency token is derived from the backfill and the canary run, so a
request sent again finds the same measurement run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.wire import ORDER_PARAM, KeyChange, KeyRange, MeasureOrder, encode_order
from ...backfill.wire import MeasureReport as MeasureReport
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...runtime.job_tables.key_changes import gated_tables
from .task_output import task_outputs

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from .backends import RunStatus

MEASURE_TIMEOUT_SECONDS = 3600.0
"""How long a measurement run may take, a cluster's start included, before it is cancelled."""


class MeasurementFailed(Exception):
    """The measurement run did not tell how the canary changed its keys; the canary is
    then stopped (the diff gate reports the first line)."""


class RemoteKeyChanges:
    """Measures a canary run's keys with a run of the deployed job (see the module docs).

    Args:
        client: The workspace client (the backend's bounded one).
        job_id: The deployed job.
        job: Its definition (which tasks write which tables).
        poll_interval: Seconds between looks at the measurement run.
        timeout: Seconds to wait for it; past it the run is cancelled.
        clock: Monotonic seconds for the timeout.
    """

    def __init__(
        self,
        client: WorkspaceClient,
        job_id: int,
        job: JobDefinition,
        *,
        poll_interval: float = 5.0,
        timeout: float = MEASURE_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.job_id = job_id
        self.job = job
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.clock = clock

    def __call__(self, run_id: str, keys: Collection[str], backfill_id: str) -> list[KeyChange]:
        """How canary run ``run_id`` changed ``keys``, per table and measure.

        Raises:
            MeasurementFailed: the run failed, was skipped or cancelled, outlasted the
                timeout, or a table's report is missing from its tasks' output.
        """
        backfill = self.job.backfill
        if backfill is None or not keys:
            return []
        ordered = backfill.sort_keys(list(keys))
        order = MeasureOrder(run_id, backfill_id, KeyRange(ordered[0], ordered[-1]))
        measure_id, status = self._run_and_wait(order)
        page = f" ({status.url})" if status.url else ""
        if status.state != "succeeded":
            raise MeasurementFailed(
                f"the measurement run {measure_id} {status.state}: "
                f"{status.message or 'no message'}{page}"
            )
        reports = {r.table: r for r in self._reports(measure_id)}
        tables = gated_tables(self.job, RunEnvironment(None, Path("."), True))
        unreported = [name for name in tables if name not in reports]
        if unreported:
            raise MeasurementFailed(
                f"the measurement run {measure_id} reported nothing for table "
                f"{', '.join(unreported)}; was the job deployed by this dbxdec? "
                f"(dbxdec deploy){page}"
            )
        wanted = set(keys)
        return [
            change for name in tables for change in reports[name].changes if change.key in wanted
        ]

    def _run_and_wait(self, order: MeasureOrder) -> tuple[int, RunStatus]:
        from .databricks_backend import run_status

        deadline = self.clock() + self.timeout
        digest = hashlib.sha256(f"{order.backfill_id}:{order.run_id}".encode()).hexdigest()
        waiter = self.client.jobs.run_now(
            self.job_id,
            job_parameters={ORDER_PARAM: encode_order(order)},
            # at most 64 characters: https://docs.databricks.com/api/workspace/jobs/runnow
            idempotency_token=f"dbxdec-measure-{digest[:40]}",
        )
        run_id = int(waiter.run_id)
        while True:
            status = run_status(self.client.jobs.get_run(run_id))
            if status.is_terminal:
                return run_id, status
            if self.clock() >= deadline:
                self.client.jobs.cancel_run(run_id)
                raise MeasurementFailed(
                    f"the measurement run {run_id} did not end within {self.timeout:g} s; "
                    "it was cancelled"
                )
            time.sleep(self.poll_interval)

    def _reports(self, run_id: int) -> list[MeasureReport]:
        run = self.client.jobs.get_run(run_id)
        reports: list[MeasureReport] = []
        for task in run.tasks or []:
            if task.run_id is None:
                continue
            try:
                for _, text in task_outputs(self.client, task):
                    reports += MeasureReport.from_lines(text)
            except ValueError as exc:
                raise MeasurementFailed(
                    f"task {task.task_key!r} of measurement run {run_id}: {exc}"
                ) from None
        return reports
