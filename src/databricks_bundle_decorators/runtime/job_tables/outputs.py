"""The tables a job writes through :class:`~..io.spark_table.SparkTableIoManager`.

Undo (which tables to restore) and catch-up by data (which tables to count) walk the
same outputs and differ only in which of them they can use; :func:`table_outputs` is that
walk once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ..io.spark_table import SparkTableIoManager
from ..storage.formats import TableRef


@dataclass(frozen=True, slots=True)
class TableOutput:
    """An output table of a job: its IoManager, where it is, the tasks that write it."""

    manager: SparkTableIoManager
    ref: TableRef
    tasks: tuple[str, ...]


def table_outputs(
    job: JobDefinition,
    environment: RunEnvironment,
    tasks: Collection[str] | None,
    *,
    other: str,
    unusable: Callable[[SparkTableIoManager], str | None],
) -> tuple[dict[str, TableOutput], list[str]]:
    """The tables the job's tasks (or only ``tasks``) write, by name, in task order;
    and a note for each output left out.

    Args:
        other: What is said of an output stored by another IoManager (e.g. ``"keeps no
            Delta history; not undone"``).
        unusable: Why a Spark table cannot be used (a note), or ``None`` to keep it.
    """
    found: dict[str, TableOutput] = {}
    notes: list[str] = []
    graph = job.graph
    for key in graph.topological_order():
        manager = graph[key].definition.io_manager
        if manager is None or (tasks is not None and key not in tasks):
            continue
        if not isinstance(manager, SparkTableIoManager):
            notes.append(f"task {key!r}: its io_manager {type(manager).__name__} {other}")
            continue
        reason = unusable(manager)
        if reason is not None:
            notes.append(f"task {key!r}: table {manager.table} {reason}")
            continue
        ref = manager.table_ref(environment)
        known = found.get(ref.name)
        found[ref.name] = TableOutput(manager, ref, (*known.tasks, key) if known else (key,))
    return found, notes
