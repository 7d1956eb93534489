"""The diff gate's measurement on Databricks: a run of the deployed job with a
:class:`~...backfill.wire.MeasureOrder` whose tasks print a report per table, read from
the tasks' output (and :func:`wait_for_run`, for any order run).
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
from .databricks_backend import run_status
from .task_output import task_reports

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import Run

    from .backends import RunStatus

MEASURE_TIMEOUT_SECONDS = 3600.0
"""How long a measurement run may take, a cluster's start included, before it is cancelled."""


class MeasurementFailed(Exception):
    """The measurement run did not tell how the canary changed its keys: the canary stops."""


class RemoteKeyChanges:
    """Measures a canary run's keys with a run of the deployed job (cancelled after
    ``timeout`` seconds of ``clock``).
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
                timeout, or a table's report is missing.
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
        deadline = self.clock() + self.timeout
        digest = hashlib.sha256(f"{order.backfill_id}:{order.run_id}".encode()).hexdigest()
        waiter = self.client.jobs.run_now(
            self.job_id,
            job_parameters={ORDER_PARAM: encode_order(order)},
            # at most 64 characters: https://docs.databricks.com/api/workspace/jobs/runnow
            idempotency_token=f"dbxdec-measure-{digest[:40]}",
        )
        run_id = int(waiter.run_id)

        def late(status: RunStatus) -> Exception:
            return MeasurementFailed(
                f"the measurement run {run_id} did not end within {self.timeout:g} s; "
                "it was cancelled"
            )

        _, status = wait_for_run(
            self.client, run_id, self.poll_interval, (deadline, late), self.clock
        )
        return run_id, status

    def _reports(self, run_id: int) -> list[MeasureReport]:
        failed = (MeasurementFailed, "measurement")
        return task_reports(self.client, run_id, MeasureReport.from_lines, failed)


def wait_for_run(
    client: WorkspaceClient,
    run_id: int,
    poll_interval: float,
    late: tuple[float, Callable[[RunStatus], Exception]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Run, RunStatus]:
    """Run ``run_id`` and its status once it has ended. ``late``: a deadline on ``clock``
    and the error raised, once the run is cancelled, when it has not ended by then."""
    while True:
        run = client.jobs.get_run(run_id)
        status = run_status(run)
        if status.is_terminal:
            return run, status
        if late is not None and clock() >= late[0]:
            client.jobs.cancel_run(run_id)
            raise late[1](status)
        time.sleep(poll_interval)
