"""Run one task: the single code path shared by ``dbxdec-run`` and the local runner.

:func:`task_request` reads the wire parameters of one task run into a
:class:`~..programs.run_kinds.TaskRunRequest`, decoding the run's kind once
(:func:`~..programs.run_kinds.decode_run_kind`) and choosing where its keys come from once
(:func:`~..triggers.triggered.with_key_source`); :func:`run_task` hands the request to
that kind's program (:data:`PROGRAMS`).
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
    parse_run_time,
)
from ...definitions import JobDefinition, TaskNode, TaskValueStore
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError, did_you_mean
from ..programs.full_refresh import run_swap
from ..programs.measure import run_measure
from ..programs.presence import run_presence
from ..programs.run_kinds import RunKind, RunKindName, RunProgram, decode_run_kind
from ..programs.run_kinds import TaskRunRequest as TaskRunRequest
from ..programs.task_run import run_task_program
from ..programs.undo import run_undo
from ..triggers.triggered import with_key_source

PROGRAMS: Mapping[RunKindName, RunProgram] = MappingProxyType(
    {
        "task": run_task_program,
        "stage": run_task_program,  # a task run whose tables are the staging tables
        "swap": run_swap,
        "undo": run_undo,
        "presence": run_presence,
        "measure": run_measure,
    }
)
"""Each run kind's program (see :mod:`..programs.run_kinds`; a new kind plugs in here)."""


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


def run_keys(
    job: JobDefinition, params: Mapping[str, str], *, now: datetime | None = None
) -> ResolvedKeys | None:
    """The keys a run of ``job`` with ``params`` processes; ``None`` without a backfill,
    and in a run of a keyless kind (undo, presence, swap: see :mod:`..programs.run_kinds`).

    Raises:
        UsageError: a key is malformed, out of bounds, or cannot be derived, or the
            run's kind cannot be decoded.
    """
    if job.backfill is None:
        return None
    return _keys(job, params, decode_run_kind(job, params), now)


def _keys(
    job: JobDefinition, params: Mapping[str, str], kind: RunKind, now: datetime | None
) -> ResolvedKeys | None:
    if job.backfill is None or not kind.processes_keys:
        return None
    try:
        if now is None:
            now = run_time(job, params)
        context = RunContext(job.name, None, params, job.backfill, job.schedule, now)
        return resolve_keys(context)
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
    """The request of one task run from its wire parameters, read once: the task, the
    job parameters (:func:`job_parameters`), the run's kind and, for a kind that
    processes keys, the run's keys and where they come from. Every refusal comes before
    anything runs; a triggered run's keys are read (or resolved) after them.

    Raises:
        UsageError: unknown task or parameter, a for-each element for a task that is not
            a for-each task, a malformed order or more than one, or a bad key.
        TaskRunError: a triggered run's keys cannot be resolved.
    """
    node = find_task(job, task_key)
    if for_each_element is not None and node.definition.for_each is None:
        raise UsageError(
            f"--{FOR_EACH_INPUT_PARAM} is only for for-each tasks; {task_key!r} is not one"
        )
    params = job_parameters(job, given)
    kind = decode_run_kind(job, params)
    keys = _keys(job, params, kind, None)
    request = TaskRunRequest(job, task_key, params, keys, None, for_each_element, kind)
    return with_key_source(request, environment)


def resolved_request(request: TaskRunRequest, environment: RunEnvironment) -> TaskRunRequest:
    """``request`` with its kind and key source (a request made by hand has neither
    until here; one made by :func:`task_request` is returned as it is).

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
        ValueError: the value is not a time (see :func:`~...backfill.wire.parse_run_time`).
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
    """Run the request's task as its run's kind says: the kind decoded and the key
    source chosen once (by :func:`task_request`, else here), the request handed to the
    kind's program (:data:`PROGRAMS`); once it has committed, the key source records it.

    An ordinary run (and a full refresh's stage run) loads the task's inputs, calls it,
    checks and writes its output (:mod:`..programs.task_run`); an undo run restores the tables the
    task writes (:mod:`..programs.undo`); a presence run reports which keys have rows in them
    (:mod:`..programs.presence`); a measurement run reports how a canary run changed its keys
    (:mod:`..programs.measure`); a full refresh's swap run swaps the staging tables in
    (:mod:`..programs.full_refresh`).

    Raises:
        TaskRunError: the function raised (chained), or the output was rejected, a check
            failed, or an input is missing, or a triggered run's keys cannot be resolved;
            the message names the task and the keys.
        UsageError: unknown task, or the run's kind cannot be decoded.
    """
    request = resolved_request(request, environment)
    kind, source = request.kind, request.source
    assert kind is not None and source is not None  # resolved_request sets both
    if not source.idle:
        PROGRAMS[kind.name](request, kind, environment=environment, task_values=task_values)
    if source.committed is not None:
        source.committed()
