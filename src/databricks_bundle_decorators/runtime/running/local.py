"""The local runner: a job's DAG in-process on the embedded SparkSession."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from ...backfill import BACKFILL_EXACT_PARAM
from ...backfill.wire import (
    BACKFILL_RUN_TIME_PARAM,
    RUN_TIME_DEFAULT,
    KeyRange,
    TaskOrder,
    run_time_param,
    with_order,
)
from ...definitions import JobDefinition, Registry
from ...definitions.contracts import LazySession, RunEnvironment
from ...errors import DbxdecError, UsageError
from ..core.task_values import LocalTaskValueStore
from ..job_tables.sources import check_local_sources
from ..programs.run_kinds import decode_run_kind
from ..programs.task_subset import selected_tasks
from ..session.spark import local_spark_session, prepare_local_spark
from ..session.task_errors import user_frames
from .dispatch import (
    TaskRunRequest,
    find_task,
    job_parameters,
    resolved_request,
    run_keys,
    run_task,
    run_time,
)

TaskStatus = Literal["succeeded", "failed", "skipped"]
EventKind = Literal["started", "finished"]

_logger = logging.getLogger("databricks_bundle_decorators.runtime")


@dataclass(frozen=True, slots=True)
class TaskResult:
    """How one task of a run ended (``skipped``: an upstream task failed), its wall time
    and the one-line error of a failed or skipped task."""

    task_key: str
    status: TaskStatus
    seconds: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class JobRunResult:
    """The tasks of one local job run, in the order they ran; ``keys`` are the keys
    the run writes (lookback keys excluded)."""

    succeeded: bool
    tasks: list[TaskResult] = field(default_factory=list)
    run_id: str = ""
    keys: tuple[str, ...] = ()

    @property
    def failed(self) -> list[TaskResult]:
        return [t for t in self.tasks if t.status == "failed"]


@dataclass(frozen=True, slots=True)
class TaskEvent:
    """A task started or finished (``result`` set when finished)."""

    kind: EventKind
    task_key: str
    keys: tuple[str, ...]
    result: TaskResult | None = None


def new_run_id(now: datetime | None = None) -> str:
    """A sortable, unique local run id such as ``20240131T120000-1a2b3c4d``."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


def run_job_locally(
    registry: Registry,
    job_name: str,
    *,
    params: Mapping[str, str],
    tasks: Sequence[str] | None = None,
    warehouse: Path,
    on_event: Callable[[TaskEvent], None] | None = None,
    state_dir: Path | None = None,
    now: datetime | None = None,
    run_id: str | None = None,
) -> JobRunResult:
    """Run one job run (one slice, or a ranged run) in dependency order, in-process.

    Every task goes through :func:`~.dispatch.run_task`, as with ``dbxdec-run``, on one
    embedded SparkSession reused across runs. A failed task marks its downstream tasks
    ``skipped``; independent tasks still run.

    Args:
        params: Job parameters (``backfill_key``, ``backfill_start_key``, user params).
        tasks: Run only these tasks; their inputs are read from the tables earlier runs
            wrote. Default: every task.
        warehouse: Folder of the local tables.
        on_event: Called when a task starts and finishes.
        state_dir: Folder for ``task_values/<run id>/`` (default: the warehouse's parent).
        now: The run's logical time (default: when the run starts), pinned once as
            ``backfill_run_time`` unless ``params`` give one.
        run_id: The run's id, which its Delta commits carry (default: :func:`new_run_id`).

    Raises:
        UsageError: unknown job, task or parameter, or a bad key (nothing runs).
    """
    job = registry.get(job_name)
    full_params = job_parameters(job, pin_run_time(job, params, now))
    keys = run_keys(job, full_params)
    order = job.graph.topological_order()
    told = decode_run_kind(job, full_params).order if job.backfill is not None else None
    if not tasks and isinstance(told, TaskOrder):  # a backfill's run of some tasks
        chosen = selected_tasks(job, told.tasks)
        tasks = None if chosen is None else [key for key in order if key in chosen]
    for name in tasks or ():
        find_task(job, name)
    selected = [key for key in order if key in tasks] if tasks else order
    if tasks and isinstance(told, TaskOrder) and len(selected) < len(order):
        full_params = with_order(full_params, replace(told, tasks=tuple(selected)))
    check_local_sources(job, warehouse)  # before Spark starts
    prepare_local_spark()  # a session task code creates itself is a Delta one too
    run_id = run_id or new_run_id()
    store = LocalTaskValueStore((state_dir or warehouse.parent) / "task_values" / run_id)
    environment = RunEnvironment(LazySession(local_spark_session), warehouse, False, run_id)
    key_tuple = keys.written if keys is not None else ()
    graph = job.graph
    results: list[TaskResult] = []
    broken: dict[str, str] = {}
    stored: tuple[str, ...] | None = None  # the keys a triggered or catching-up run stored
    emit = on_event or (lambda event: None)
    for task_key in selected:
        blocked = next((u for u in graph[task_key].upstream if u in broken), None)
        if blocked is not None:
            broken[task_key] = blocked
            result = TaskResult(task_key, "skipped", 0.0, f"upstream task {blocked!r} failed")
        else:
            emit(TaskEvent("started", task_key, key_tuple))
            request = TaskRunRequest(job, task_key, full_params, keys, run_time(job, full_params))
            result, request = _run_one(request, environment, store)
            if request.source is not None and request.source.name in ("triggered", "catch_up"):
                stored = request.keys.written if request.keys is not None else ()
            if result.status == "failed":
                broken[task_key] = task_key
        results.append(result)
        emit(TaskEvent("finished", task_key, key_tuple, result))
    return JobRunResult(not broken, results, run_id, key_tuple if stored is None else stored)


def pin_run_time(
    job: JobDefinition, params: Mapping[str, str], now: datetime | None = None
) -> dict[str, str]:
    """``params`` with ``backfill_run_time`` set to the run's start (or ``now``) when they
    give none: the local trigger time, fixed once per run."""
    out = dict(params)
    given = out.get(BACKFILL_RUN_TIME_PARAM, "")
    if job.backfill is not None and given in ("", RUN_TIME_DEFAULT):
        out[BACKFILL_RUN_TIME_PARAM] = run_time_param(now or datetime.now(timezone.utc))
    return out


def _run_one(
    request: TaskRunRequest, environment: RunEnvironment, store: LocalTaskValueStore
) -> tuple[TaskResult, TaskRunRequest]:
    """Run one task; how it ended, and its request with its key source (as far as it got)."""
    started = time.perf_counter()
    error = None
    try:
        request = resolved_request(request, environment)
        run_task(request, environment=environment, task_values=store)
    except DbxdecError as exc:
        cause = exc.__cause__
        # where in the user's own code it arose, once per process for alike errors
        frames = user_frames(cause) if cause and _first_time(request.task_key, cause) else []
        if frames:
            _logger.error(
                "task %s failed in your code:\n%s", request.task_key, "".join(frames).rstrip()
            )
        error = exc.render()
    except Exception as exc:  # a bug outside user code still fails only this task
        _logger.exception("task %s failed", request.task_key)
        error = f"task {request.task_key!r}: {type(exc).__name__}: {exc}"
    status: TaskStatus = "succeeded" if error is None else "failed"
    return TaskResult(request.task_key, status, time.perf_counter() - started, error), request


_shown_lock = threading.Lock()
_shown: set[tuple[str, str, str]] = set()


def _first_time(task_key: str, error: BaseException) -> bool:
    """Whether this task's error has not had its traceback shown in this process yet
    (a backfill whose slices all fail alike shows it once; bounded)."""
    signature = (task_key, type(error).__name__, str(error))
    with _shown_lock:
        if signature in _shown:
            return False
        if len(_shown) >= 1000:
            _shown.clear()
        _shown.add(signature)
        return True


def slice_parameters(
    *,
    key: str | None = None,
    start: str | None = None,
    end: str | None = None,
    exact: bool = False,
    params: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Job parameters of one run from ``--key`` or ``--start/--end`` (one ranged run over
    the keys A..B) and ``--exact``; neither: the key is derived from the clock.

    Raises:
        UsageError: ``--key`` with ``--start``/``--end``, or only one of ``--start``/``--end``.
    """
    out = dict(params or {})
    if key is not None and (start is not None or end is not None):
        raise UsageError("use either --key K or --start A --end B, not both")
    if (start is None) != (end is None):
        missing = "--end" if end is None else "--start"
        raise UsageError(f"a ranged run needs both --start and --end (missing {missing})")
    if key is not None:
        out.update(KeyRange.single(key).to_params(exact=exact))
    elif start is not None and end is not None:
        out.update(KeyRange(start, end).to_params(exact=exact))
    elif exact:
        out[BACKFILL_EXACT_PARAM] = "true"
    return out
