"""Run one task: the single code path shared by ``dbxdec-run`` and the local runner.

:func:`task_request` reads one task run's wire parameters into a
:class:`~..programs.run_kinds.TaskRunRequest`, its kind and key source chosen once;
:func:`run_task` hands it to that kind's program (:data:`PROGRAMS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from types import MappingProxyType

from ...backfill import ResolvedKeys, RunContext, resolve_keys
from ...backfill.wire import (
    BACKFILL_PARAM_DEFAULTS,
    BACKFILL_RUN_TIME_PARAM,
    FOR_EACH_INPUT_PARAM,
    MeasureOrder,
    PresenceOrder,
    TaskOrder,
    UndoOrder,
    parse_run_time,
)
from ...definitions import JobDefinition, TaskNode, TaskValueStore
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError, did_you_mean
from ..programs.full_refresh import swap_outputs
from ..programs.measure import report_measures
from ..programs.presence import report_presence
from ..programs.run_kinds import RunKind, RunKindName, RunProgram, decode_run_kind, order_program
from ..programs.run_kinds import TaskRunRequest as TaskRunRequest
from ..programs.task_run import run_task_program
from ..programs.undo import undo_outputs
from ..triggers.triggered import with_key_source

PROGRAMS: Mapping[RunKindName, RunProgram] = MappingProxyType(
    {
        "task": run_task_program,
        "stage": run_task_program,  # a task run whose tables are the staging tables
        "swap": order_program(swap_outputs, TaskOrder),
        "undo": order_program(undo_outputs, UndoOrder),
        "presence": order_program(report_presence, PresenceOrder),
        "measure": order_program(report_measures, MeasureOrder),
    }
)
"""Each run kind's program (a new kind plugs in here)."""


def job_parameters(job: JobDefinition, given: Mapping[str, str]) -> dict[str, str]:
    """The run's job parameters: the job's defaults overlaid with ``given``.

    Raises:
        UsageError: ``given`` names a parameter the job does not have.
    """
    defaults = dict(job.params)
    if job.backfill is not None:
        defaults.update(BACKFILL_PARAM_DEFAULTS)
    for name in given:
        if name not in defaults:
            known = ", ".join(sorted(defaults)) or "none"
            raise UsageError(
                f"job {job.name!r} has no parameter {name!r}.{did_you_mean(name, defaults)} "
                f"Parameters: {known}"
            )
    return {**defaults, **{name: str(value) for name, value in given.items()}}


def run_keys(job: JobDefinition, params: Mapping[str, str]) -> ResolvedKeys | None:
    """The keys a run of ``job`` with ``params`` processes (``None``: keyless).

    Raises:
        UsageError: a bad or underivable key, or an undecodable kind.
    """
    return None if job.backfill is None else _keys(job, params, decode_run_kind(job, params))


def _keys(job: JobDefinition, params: Mapping[str, str], kind: RunKind) -> ResolvedKeys | None:
    if job.backfill is None or not kind.processes_keys:
        return None
    try:
        now = run_time(job, params)
        return resolve_keys(RunContext(job.name, None, params, job.backfill, job.schedule, now))
    except (ValueError, RuntimeError) as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None


def task_request(
    job: JobDefinition,
    task_key: str,
    given: Mapping[str, str],
    environment: RunEnvironment,
    *,
    for_each_element: str | None = None,
) -> TaskRunRequest:
    """The request of one task run from its wire parameters: every refusal comes before
    anything runs; a triggered run's keys are read (or resolved) after them.

    Raises:
        UsageError: unknown task or parameter, a for-each element for a task that is not
            a for-each task, a malformed order, or a bad key.
        TaskRunError: a triggered run's keys cannot be resolved.
    """
    node = find_task(job, task_key)
    if for_each_element is not None and node.definition.for_each is None:
        raise UsageError(
            f"--{FOR_EACH_INPUT_PARAM} is only for for-each tasks; {task_key!r} is not one"
        )
    params = job_parameters(job, given)
    kind = decode_run_kind(job, params)
    keys = _keys(job, params, kind)
    request = TaskRunRequest(job, task_key, params, keys, None, for_each_element, kind)
    return with_key_source(request, environment)


def resolved_request(request: TaskRunRequest, environment: RunEnvironment) -> TaskRunRequest:
    """``request`` with its kind and key source (as :func:`task_request` sets them).

    Raises:
        UsageError: unknown task, or the run's kind cannot be decoded.
        TaskRunError: a triggered run's keys cannot be resolved.
    """
    if request.kind is None:
        find_task(request.job, request.task_key)
        request = replace(request, kind=decode_run_kind(request.job, request.params))
    return request if request.source is not None else with_key_source(request, environment)


def run_time(job: JobDefinition, params: Mapping[str, str]) -> datetime | None:
    """The run's logical time from ``backfill_run_time`` (``None`` when empty).

    Raises:
        ValueError: the value is not a time.
    """
    zone = getattr(job.backfill, "tz", None)
    return parse_run_time(
        params.get(BACKFILL_RUN_TIME_PARAM, ""), tz=zone if isinstance(zone, str) else "UTC"
    )


def find_task(job: JobDefinition, task_key: str) -> TaskNode:
    """The node of ``task_key`` in the job's graph (traces the job once).

    Raises:
        UsageError: no such task; the message lists the job's tasks.
    """
    graph = job.graph
    if task_key not in graph.nodes:
        known = list(graph.nodes)
        raise UsageError(
            f"job {job.name!r} has no task {task_key!r}.{did_you_mean(task_key, known)} "
            f"Tasks: {', '.join(known)}"
        )
    return graph[task_key]


def run_task(
    request: TaskRunRequest, *, environment: RunEnvironment, task_values: TaskValueStore
) -> None:
    """Run the request's task as its kind's program (:data:`PROGRAMS`); once it has
    committed, its key source records it.

    Raises:
        TaskRunError: the task failed (see :func:`~..programs.task_run.run_task_program`),
            or a triggered run's keys cannot be resolved.
        UsageError: unknown task, or the run's kind cannot be decoded.
    """
    request = resolved_request(request, environment)
    kind, source = request.kind, request.source
    assert kind is not None and source is not None  # resolved_request sets both
    if not source.idle:
        PROGRAMS[kind.name](request, kind, environment=environment, task_values=task_values)
    if source.committed is not None:
        source.committed()
