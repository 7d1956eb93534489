"""Runs of some of a job's tasks (``dbxdec backfill --tasks/--skip-tasks``): a task whose
upstream tasks are not run reads their tables as earlier runs wrote them, and fails
before it runs when one lacks rows for a key it writes.
"""

from __future__ import annotations

from collections.abc import Collection

from ...backfill.scope import KeyScope
from ...backfill.wire import ORDER_PARAM
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...definitions.graph import TaskNode
from ...errors import UsageError, did_you_mean
from ..core.errors import InputMissing
from ..io.spark_table import SparkTableIoManager
from ..job_tables.outputs import TableOutput, table_presence

SEPARATOR = ","


def encode_tasks(tasks: Collection[str]) -> str:
    """The text a backfill records for a run of ``tasks`` (``""``: every task)."""
    return SEPARATOR.join(tasks)


def decode_tasks(raw: str) -> list[str]:
    """The task names in :func:`encode_tasks`' text (``[]``: every task).

    Example:
        >>> decode_tasks(" clean,load ")
        ['clean', 'load']
    """
    return [name.strip() for name in raw.split(SEPARATOR) if name.strip()]


def selected_tasks(job: JobDefinition, names: Collection[str]) -> frozenset[str] | None:
    """The tasks the run runs (its order's ``tasks``); ``None`` when every task runs.

    Raises:
        UsageError: a name is not a task of the job.
    """
    if not names:
        return None
    return frozenset(check_tasks(job, names, what=ORDER_PARAM))


def check_tasks(job: JobDefinition, names: Collection[str], *, what: str) -> list[str]:
    """``names`` if every one is a task of ``job``.

    Raises:
        UsageError: one is not, naming the closest task and listing them all.
    """
    known = list(job.graph.topological_order())
    for name in names:
        if name not in known:
            raise UsageError(
                f"{what}: job {job.name!r} has no task {name!r}.{did_you_mean(name, known)} "
                f"Tasks: {', '.join(known)}"
            )
    return list(names)


def task_selection(job: JobDefinition, tasks: Collection[str], skip: Collection[str]) -> str:
    """The tasks ``--tasks``/``--skip-tasks`` select, as :func:`encode_tasks` (``""``: every task),
    in the job's dependency order.

    Raises:
        UsageError: both are given, a name is not a task, or no task is left.
    """
    if tasks and skip:
        raise UsageError("--tasks and --skip-tasks select the same thing: give one of them")
    if not tasks and not skip:
        return ""
    given = check_tasks(job, tasks or skip, what="--tasks" if tasks else "--skip-tasks")
    order = job.graph.topological_order()
    chosen = [key for key in order if (key in given) == bool(tasks)]
    if not chosen:
        raise UsageError(f"--skip-tasks leaves no task of job {job.name!r} to run")
    return "" if len(chosen) == len(order) else encode_tasks(chosen)


def require_upstream_partitions(
    job: JobDefinition,
    node: TaskNode,
    selected: frozenset[str],
    scope: KeyScope,
    environment: RunEnvironment,
) -> None:
    """Fail before ``node`` runs when a table it reads from a task this run does not run
    lacks rows for one of ``scope``'s keys.

    Raises:
        InputMissing: the table, its task, and the keys without rows.
    """
    if not scope.bounded or not scope.keys:
        return
    graph = job.graph
    for edge in node.inputs:
        if edge.upstream in selected or edge.all_partitions:
            continue
        manager = graph[edge.upstream].definition.io_manager
        if not isinstance(manager, SparkTableIoManager) or manager.partition_column is None:
            continue
        table = TableOutput(manager, manager.table_ref(environment), (edge.upstream,))
        report = table_presence(table, scope, environment)
        missing = [key for key in scope.keys if not report.rows.get(key)]
        if not missing:
            continue
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        shown = ", ".join(missing[:5]) + more
        state = "has no rows for" if report.exists else "does not exist, so it lacks"
        raise InputMissing(
            f"task {node.key!r} reads table {table.ref.name} (written by task "
            f"{edge.upstream!r}, which this run does not run), and the table {state} "
            f"partition {shown}; nothing was run: backfill {edge.upstream!r} for these "
            "keys first, or include it in --tasks"
        )
