"""Run one task: the single code path shared by ``dbxdec-run`` and the local runner."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..backfill import (
    ResolvedKeys,
    RunContext,
    resolve_keys,
    run_context,
)
from ..backfill.context import parse_flag
from ..backfill.refresh import FullRefreshOrder
from ..backfill.wire import (
    BACKFILL_FORCE_REWRITE_PARAM,
    BACKFILL_FULL_REFRESH_PARAM,
    BACKFILL_ID_PARAM,
    BACKFILL_PARAM_DEFAULTS,
    BACKFILL_PRESENCE_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    BACKFILL_UNDO_PARAM,
    KeyRange,
    PresenceOrder,
    UndoOrder,
    parse_backfill_id,
    parse_run_time,
)
from ..definitions import (
    JobDefinition,
    TaskNode,
    TaskValueStore,
    use_source_reader,
    use_task_value_store,
)
from ..errors import DbxdecError, UsageError, did_you_mean
from .check_results import recording_check_results, run_checks
from .checking import TaskChecks
from .context import InputContext, OutputContext, RunEnvironment, use_environment
from .errors import TaskRunError
from .full_refresh import staged_environment, swap_outputs
from .presence import report_presence
from .scope import KeyScope
from .sources import read_source
from .task_errors import error_text
from .task_subset import require_upstream_partitions, selected_tasks
from .triggered import run_triggered
from .undo import undo_outputs


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
    and in an undo or presence run (see :func:`undo_order`, :func:`presence_order`),
    which processes no key.

    Raises:
        UsageError: a key is malformed, out of bounds, or cannot be derived.
    """
    if job.backfill is None or presence_order(job, params) is not None:
        return None
    if undo_order(job, params) is not None:
        return None
    refresh = full_refresh_order(job, params)
    if refresh is not None and refresh.phase == "swap":
        return None
    try:
        if now is None:
            now = run_time(job, params)
        context = RunContext(job.name, None, params, job.backfill, job.schedule, now)
        return resolve_keys(context)
    except (ValueError, RuntimeError) as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None


def undo_order(job: JobDefinition, params: Mapping[str, str]) -> UndoOrder | None:
    """The undo order of the run (``backfill_undo``); ``None`` in an ordinary run.

    Raises:
        UsageError: the parameter is set but is not an order.
    """
    try:
        return UndoOrder.from_param(params.get(BACKFILL_UNDO_PARAM, ""))
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None


def backfill_id(job: JobDefinition, params: Mapping[str, str]) -> str:
    """The id of the backfill the run is part of (``backfill_id``); ``""`` when none.

    Raises:
        UsageError: the parameter is set but is not a backfill id.
    """
    try:
        return parse_backfill_id(params.get(BACKFILL_ID_PARAM, ""))
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None


def presence_order(job: JobDefinition, params: Mapping[str, str]) -> PresenceOrder | None:
    """The presence order of the run (``backfill_presence``); ``None`` in an ordinary run.

    Raises:
        UsageError: the parameter is set but is not an order, or an undo order is set too.
    """
    try:
        order = PresenceOrder.from_param(params.get(BACKFILL_PRESENCE_PARAM, ""))
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None
    if order is not None and params.get(BACKFILL_UNDO_PARAM, "").strip():
        raise UsageError(
            f"job {job.name!r}: a run has {BACKFILL_UNDO_PARAM} or {BACKFILL_PRESENCE_PARAM} "
            "set, not both"
        )
    return order


def force_rewrite(job: JobDefinition, params: Mapping[str, str]) -> bool:
    """Whether append-once outputs rewrite keys they hold (``backfill_force_rewrite``).

    Raises:
        UsageError: the parameter is neither ``true`` nor ``false``.
    """
    try:
        return parse_flag(
            params.get(BACKFILL_FORCE_REWRITE_PARAM, "") or "false",
            name=BACKFILL_FORCE_REWRITE_PARAM,
        )
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None


def full_refresh_order(job: JobDefinition, params: Mapping[str, str]) -> FullRefreshOrder | None:
    """The full-refresh order of the run (``backfill_full_refresh``); ``None`` in an
    ordinary run.

    Raises:
        UsageError: the parameter is set but is not an order, or an undo or presence
            order is set too.
    """
    try:
        order = FullRefreshOrder.from_param(params.get(BACKFILL_FULL_REFRESH_PARAM, ""))
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None
    others = (BACKFILL_UNDO_PARAM, BACKFILL_PRESENCE_PARAM)
    if order is not None and any(params.get(name, "").strip() for name in others):
        raise UsageError(
            f"job {job.name!r}: a run has {BACKFILL_FULL_REFRESH_PARAM} set together with "
            f"{BACKFILL_UNDO_PARAM} or {BACKFILL_PRESENCE_PARAM}; set one of them"
        )
    return order


def run_time(job: JobDefinition, params: Mapping[str, str]) -> datetime | None:
    """The run's logical time from ``backfill_run_time`` (``None`` when empty).

    Raises:
        ValueError: the value is not a time (see :func:`~..backfill.wire.parse_run_time`).
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


def keys_label(keys: ResolvedKeys | None) -> str:
    """The written keys for messages: ``2024-01-03`` or ``2024-01-01..2024-01-30``."""
    return "(no backfill key)" if keys is None else KeyRange.of(keys.written).label


@dataclass(frozen=True, slots=True)
class TaskRunRequest:
    """One task of one job run.

    Attributes:
        job: The job definition.
        task_key: The task to run.
        params: Every job parameter of the run (see :func:`job_parameters`).
        keys: The run's resolved keys (see :func:`run_keys`), ``None`` without backfill.
        now: The clock for key resolution inside the task; ``None`` reads the wall clock.
        for_each_element: On Databricks, the one iteration element of a for-each task
            (Databricks runs the iterations); ``None`` runs every element in turn.
    """

    job: JobDefinition
    task_key: str
    params: Mapping[str, str]
    keys: ResolvedKeys | None
    now: datetime | None = None
    for_each_element: str | None = None


def run_task(
    request: TaskRunRequest, *, environment: RunEnvironment, task_values: TaskValueStore
) -> None:
    """Load the task's inputs, call it, check and write its output; in an undo run
    (``backfill_undo`` set), restore the tables the task writes instead (see
    :mod:`.undo`); in a presence run (``backfill_presence`` set), report which keys
    have rows in them (see :mod:`.presence`); in a full refresh
    (``backfill_full_refresh``), write staging tables or swap them in (see
    :mod:`.full_refresh`).

    Raises:
        TaskRunError: the function raised (chained), or the output was rejected, a check
            failed, or an input is missing; the message names the task and the keys.
        UsageError: unknown task.
    """
    job = request.job
    node = find_task(job, request.task_key)
    rerun = lambda inner: run_task(inner, environment=environment, task_values=task_values)  # noqa: E731
    if run_triggered(request, environment, rerun):  # keys from what changed: triggered.py
        return
    presence = presence_order(job, request.params)
    order = undo_order(job, request.params)
    refresh = full_refresh_order(job, request.params)
    if order is not None:
        with use_environment(environment):
            undo_outputs(job, node.key, order, environment)
        return
    if presence is not None:
        with use_environment(environment):
            report_presence(job, node.key, presence, environment)
        return
    if refresh is not None and refresh.phase == "swap":
        with use_environment(environment):
            swap_outputs(job, node.key, refresh, environment)
        return
    environment = staged_environment(environment, refresh)
    # the backfill's id goes into every commit's userMetadata: undo finds them by it
    environment = replace(environment, backfill_id=backfill_id(job, request.params))
    definition = node.definition
    context = RunContext(
        job.name,
        node.key,
        request.params,
        job.backfill,
        job.schedule,
        request.now,
        resolved=request.keys,
    )
    label = keys_label(request.keys)
    with (
        run_context(context),
        use_task_value_store(task_values),
        use_environment(environment),
        use_source_reader(read_source),
    ):
        selected = selected_tasks(job, request.params)
        if selected is not None:  # inputs from tasks this run does not run must be there
            scope = _scope(request, written=True)
            require_upstream_partitions(job, node, selected, scope, environment)
        inputs = _load_inputs(request, node, environment)
        try:
            if definition.for_each is not None and request.for_each_element is not None:
                definition.fn(inputs=request.for_each_element, **inputs)
                return
            if definition.for_each is not None:
                _run_for_each(request, node, inputs, task_values)
                return
            output = definition.fn(**inputs)
        except DbxdecError:
            raise
        except Exception as exc:
            raise TaskRunError(
                f"task {node.key!r} failed for key {label}: {type(exc).__name__}: {error_text(exc)}"
            ) from exc
        with recording_check_results(job, node.key, environment):
            _check_and_store(request, node, output, environment)


def _scope(request: TaskRunRequest, *, written: bool) -> KeyScope:
    keys = request.keys
    backfill = request.job.backfill
    if keys is None:
        return KeyScope(backfill)
    return KeyScope(backfill, keys.written if written else keys.keys)


def _load_inputs(
    request: TaskRunRequest, node: TaskNode, environment: RunEnvironment
) -> dict[str, Any]:
    job = request.job
    graph = job.graph
    inputs: dict[str, Any] = {}
    for edge in node.inputs:
        manager = graph[edge.upstream].definition.io_manager
        if manager is None:  # the traced graph refuses such an edge; a hand-built one
            raise UsageError(f"task {node.key!r}: task {edge.upstream!r} has no io_manager")
        scope = (
            KeyScope.everything(job.backfill)
            if edge.all_partitions
            else _scope(request, written=False)
        )
        context = InputContext(job.name, node.key, edge.upstream, edge.param, scope, environment)
        inputs[edge.param] = manager.load_input(context)
    return inputs


def _check_and_store(
    request: TaskRunRequest, node: TaskNode, output: Any, environment: RunEnvironment
) -> None:
    """Check the output, then write it: an IoManager that fuses the checks into its
    write (``evaluates_checks``) has :mod:`.checking` judge them before it commits."""
    definition = node.definition
    manager = definition.io_manager
    checks = TaskChecks(node.key, run_checks(request.job, request.params, definition.checks))
    if manager is None or not manager.evaluates_checks:
        checks.evaluate(output, label=None if request.keys is None else keys_label(request.keys))
    if manager is None:
        return
    if output is None:
        raise TaskRunError(
            f"task {node.key!r} returned None for key {keys_label(request.keys)}; a task with "
            "an io_manager returns the output to store"
        )
    scope = _scope(request, written=True)
    context = OutputContext(
        request.job.name,
        node.key,
        scope,
        environment,
        checks.checks,
        force_rewrite(request.job, request.params),
    )
    manager.handle_output(context, output)


def _run_for_each(
    request: TaskRunRequest, node: TaskNode, inputs: dict[str, Any], store: TaskValueStore
) -> None:
    from ..definitions import TaskValueRef

    spec = node.definition.for_each
    assert spec is not None
    if node.definition.io_manager is not None:
        raise UsageError(
            f"task {node.key!r}: a for-each task's iterations cannot share one io_manager "
            "output; write from the iterations or use a plain task"
        )
    elements: Any = spec.inputs
    if isinstance(elements, TaskValueRef):
        elements = store.get(elements.task_key, elements.key)
    elif isinstance(elements, str):
        raise UsageError(
            f"task {node.key!r}: for-each inputs {elements!r} are a Databricks reference; "
            "locally use a list or task_value(...)"
        )
    if not isinstance(elements, list):
        raise TaskRunError(
            f"task {node.key!r}: for-each inputs must be a JSON list, got {type(elements).__name__}"
        )
    for element in elements:
        node.definition.fn(inputs=element, **inputs)
