"""The local backend: slices run in-process on the embedded Spark, on a thread pool;
cancelling drops a run not started and cancels a running one's Spark jobs. A run's end
is told to the scheduler at once (:class:`.backends.EndsNotified`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from ...backfill.check_report import CheckResult
from ...definitions import Registry
from ...runtime.checks.checking import collecting_check_results
from ...runtime.job_tables.key_changes import KeyChange
from ...runtime.job_tables.sources import check_local_sources
from ...runtime.running.local import JobRunResult, new_run_id, run_job_locally
from ..plan.states import RunState
from .backends import RunStatus, SubmitRequest, Submitted
from .diff_gate import LocalKeyChanges


class LocalBackend:
    """Runs of the jobs of a registry on the local Spark: a request's job, else ``job_name``
    (``--downstream`` runs every job through one backend, capped together).
    """

    kind = "local"

    def __init__(
        self, registry: Registry, job_name: str, *, warehouse: Path, max_workers: int = 1
    ) -> None:
        check_local_sources(registry.get(job_name), warehouse)  # before Spark starts
        self.registry = registry
        self.job_name = job_name
        self.warehouse = warehouse
        self._pool = ThreadPoolExecutor(max(1, max_workers), thread_name_prefix="dbxdec-local")
        self._runs: dict[str, Future[JobRunResult]] = {}
        self._times: dict[str, tuple[float, float]] = {}  # run id: its own start and end
        self._checks: dict[str, tuple[CheckResult, ...]] = {}  # run id: its check results
        self._by_token: dict[str, str] = {}
        self._cancelled: set[str] = set()
        self._lock = threading.Lock()
        self._end_listeners: list[Callable[[str], None]] = []
        self._running: set[str] = set()
        self._grouped: dict[str, bool] = {}  # run id: its Spark jobs carry it as group

    def on_end(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(run_id)`` once a run ended or was dropped (then :meth:`poll` has it)."""
        self._end_listeners.append(callback)

    def submit(self, request: SubmitRequest) -> Submitted:
        with self._lock:
            existing = self._by_token.get(request.token)
            if existing is not None:
                return Submitted(existing)
            run_id = new_run_id()  # the id its Delta commits carry, recorded in the ledger
            self._by_token[request.token] = run_id
            job = request.job or self.job_name
            future = self._pool.submit(self._run, dict(request.parameters), run_id, job)
            self._runs[run_id] = future
        # Done callbacks run once the future is done (so poll() sees the end), in the
        # run's thread, or here at once if it already ended.
        future.add_done_callback(lambda _: self._ended(run_id))
        return Submitted(run_id)

    def _ended(self, run_id: str) -> None:
        for listener in list(self._end_listeners):
            listener(run_id)

    def _run(self, parameters: dict[str, str], run_id: str, job: str) -> JobRunResult:
        started = time.time()
        with self._lock:
            self._running.add(run_id)
        self._grouped[run_id] = _group_spark_jobs(run_id)
        with collecting_check_results() as found:  # judged in this thread, task by task
            try:
                return run_job_locally(
                    self.registry,
                    job,
                    params=parameters,
                    warehouse=self.warehouse,
                    run_id=run_id,
                )
            finally:
                self._times[run_id] = (started, time.time())
                self._checks[run_id] = tuple(found)
                with self._lock:
                    self._running.discard(run_id)

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        out: dict[str, RunStatus] = {}
        for run_id in run_ids:
            future = self._runs.get(run_id)
            if future is None:
                out[run_id] = RunStatus(
                    RunState.FAILED, "unknown local run (the launcher restarted)"
                )
            elif future.cancelled():
                out[run_id] = RunStatus(RunState.CANCELLED, "cancelled before it started")
            elif run_id in self._cancelled and future.done():
                out[run_id] = RunStatus(RunState.CANCELLED, "cancelled while running")
            elif future.done():
                started, ended = self._times.get(run_id, (None, None))
                checks = self._checks.get(run_id, ())
                status = _status(future)
                out[run_id] = replace(status, started_at=started, ended_at=ended, checks=checks)
        return out

    def cancel(self, run_id: str) -> None:
        future = self._runs.get(run_id)
        if future is None:
            return
        self._cancelled.add(run_id)
        if future.cancel():
            return
        with self._lock:
            alone = self._running <= self._cancelled  # no other run's jobs would be hit
        _cancel_spark_jobs(run_id if self._grouped.get(run_id) else None, every=alone)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def key_changes(self, run_id: str, keys: Collection[str], backfill_id: str) -> list[KeyChange]:
        """What run ``run_id`` did to ``keys``, measured in-process (see :mod:`.diff_gate`)."""
        measure = LocalKeyChanges(self.registry, self.job_name, self.warehouse)
        return measure(run_id, keys, backfill_id)


def _group_spark_jobs(run_id: str) -> bool:
    """Tag the Spark jobs this thread starts with ``run_id`` (False: no SparkContext yet)."""
    try:
        from pyspark import SparkContext
    except ImportError:  # a Spark-free job on a machine without PySpark
        return False
    context = SparkContext._active_spark_context
    if context is None:
        return False
    # Job groups are per Python thread (PySpark's pinned thread mode, the default since
    # 3.2); interruptOnCancel stops the tasks promptly:
    # https://spark.apache.org/docs/latest/api/python/reference/api/pyspark.SparkContext.setJobGroup.html
    context.setJobGroup(run_id, f"dbxdec local run {run_id}", interruptOnCancel=True)
    return True


def _cancel_spark_jobs(group: str | None, *, every: bool) -> None:
    """Cancel the Spark jobs of ``group``, or all when ``every`` (only cancelled runs run)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return
    if every:
        context.cancelAllJobs()
    elif group is not None:
        context.cancelJobGroup(group)


def _status(future: Future[JobRunResult]) -> RunStatus:
    error = future.exception()
    if error is not None:
        return RunStatus(RunState.FAILED, f"{type(error).__name__}: {error}")
    result = future.result()
    if result.succeeded:
        return RunStatus(RunState.SUCCEEDED)
    failed = result.failed
    message = "; ".join(f"{t.task_key}: {t.error}" for t in failed) or "the run failed"
    return RunStatus(RunState.FAILED, message)
