"""The program of an ordinary run and of a full refresh's stage run: load the task's
inputs through their IoManagers, call it, judge its checks and write its output (a stage
run writes and reads every table of the job as its staging table). Its reads are pinned
and recorded, and its output's commit carries them (``runtime/core/provenance.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...backfill import ResolvedKeys, RunContext, run_context
from ...backfill.scope import KeyScope
from ...backfill.wire import KeyRange, TaskOrder
from ...definitions import (
    TaskNode,
    TaskValueRef,
    TaskValueStore,
    use_source_reader,
    use_task_value_store,
)
from ...definitions.contracts import InputContext, OutputContext, RunEnvironment
from ...definitions.fingerprint import task_fingerprint
from ...errors import DbxdecError, UsageError
from ..checks.check_results import recording_check_results
from ..checks.checking import TaskChecks
from ..core.context import use_environment
from ..core.errors import TaskRunError
from ..core.provenance import ReadRecorder, recording_reads
from ..job_tables.sources import read_source
from ..session.task_errors import error_text
from .run_kinds import RunKind, TaskRunRequest
from .task_subset import require_upstream_partitions, selected_tasks


def keys_label(keys: ResolvedKeys | None) -> str:
    """The written keys for messages: ``2024-01-03`` or ``2024-01-01..2024-01-30``."""
    return "(no backfill key)" if keys is None else KeyRange.of(keys.written).label


def run_task_program(
    request: TaskRunRequest,
    kind: RunKind,
    *,
    environment: RunEnvironment,
    task_values: TaskValueStore,
) -> None:
    """Load the task's inputs, call it, check and write its output.

    Raises:
        TaskRunError: the function raised (chained), the output was rejected, a check
            failed, or an input is missing; the message names the task and the keys.
    """
    job = request.job
    node = job.graph[request.task_key]
    order = kind.order_as(TaskOrder)
    # the backfill's id goes into every commit's userMetadata: undo finds them by it
    environment = replace(environment, backfill_id=order.backfill_id)
    if kind.name == "stage":
        environment = replace(environment, staging=order.backfill_id)
    definition = node.definition
    context = RunContext(
        job.name, node.key, request.params, job.backfill, job.schedule, request.now, request.keys
    )
    with (
        run_context(context),
        use_task_value_store(task_values),
        use_environment(environment),
        use_source_reader(read_source),
        recording_reads(
            ReadRecorder(
                job.name,
                node.key,
                environment.run_id,
                task_fingerprint(definition.fn),
                order.backfill_id,
            )
        ),
    ):
        selected = selected_tasks(job, order.tasks)
        if selected is not None:  # inputs from tasks this run does not run must be there
            require_upstream_partitions(job, node, selected, _scope(request, True), environment)
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
            label = keys_label(request.keys)
            raise TaskRunError(
                f"task {node.key!r} failed for key {label}: {type(exc).__name__}: {error_text(exc)}"
            ) from exc
        with recording_check_results(job, node.key, environment):
            _check_and_store(request, order, node, output, environment)


def _scope(request: TaskRunRequest, written: bool) -> KeyScope:
    keys, backfill = request.keys, request.job.backfill
    if keys is None:
        return KeyScope(backfill)
    return KeyScope(backfill, keys.written if written else keys.keys)


def _load_inputs(
    request: TaskRunRequest, node: TaskNode, environment: RunEnvironment
) -> dict[str, Any]:
    job = request.job
    inputs: dict[str, Any] = {}
    for edge in node.inputs:
        manager = job.graph[edge.upstream].definition.io_manager
        if manager is None:  # the traced graph refuses such an edge; a hand-built one
            raise UsageError(f"task {node.key!r}: task {edge.upstream!r} has no io_manager")
        scope = KeyScope.everything(job.backfill) if edge.all_partitions else _scope(request, False)
        context = InputContext(job.name, node.key, edge.upstream, edge.param, scope, environment)
        inputs[edge.param] = manager.load_input(context)
    return inputs


def _check_and_store(
    request: TaskRunRequest,
    order: TaskOrder,
    node: TaskNode,
    output: Any,
    environment: RunEnvironment,
) -> None:
    """Check the output, then write it (an IoManager that ``evaluates_checks`` judges
    them itself before it commits)."""
    definition = node.definition
    manager = definition.io_manager
    checks = TaskChecks(node.key, tuple(definition.checks) if order.checks else ())
    if manager is None or not manager.evaluates_checks:
        checks.evaluate(output, label=None if request.keys is None else keys_label(request.keys))
    if manager is None:
        return
    if output is None:
        raise TaskRunError(
            f"task {node.key!r} returned None for key {keys_label(request.keys)}; a task with "
            "an io_manager returns the output to store"
        )
    scope = _scope(request, True)
    context = OutputContext(
        request.job.name, node.key, scope, environment, checks.checks, order.force_rewrite
    )
    manager.handle_output(context, output)


def _run_for_each(
    request: TaskRunRequest, node: TaskNode, inputs: dict[str, Any], store: TaskValueStore
) -> None:
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
