"""References created while a job body is traced: task outputs and task values."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")


def reference_identifier(name: str) -> str:
    """``name`` as an identifier inside a ``{{...}}`` dynamic value reference.

    Identifiers beyond letters, digits and ``_`` (a task key with ``-``) must be escaped
    in backticks: "What is a dynamic value reference?",
    https://docs.databricks.com/aws/en/jobs/dynamic-value-references ("Escape keys with
    special characters by surrounding the identifier with backticks").

    Example:
        >>> reference_identifier("clean"), reference_identifier("a-b")
        ('clean', '`a-b`')
    """
    return name if _PLAIN_IDENTIFIER.fullmatch(name) else f"`{name}`"


@dataclass(frozen=True, slots=True)
class TaskProxy:
    """The output of a task call inside a job body; passed to another task's call it makes a
    data edge (the downstream task receives the output filtered to the run's keys).
    """

    task_key: str
    job_name: str

    def __bool__(self) -> bool:  # a proxy is a reference, never a value to branch on
        raise TypeError(
            f"the output of task {self.task_key!r} is not known while the job body is "
            "traced; pass it to another task instead of using it as a value"
        )


@dataclass(frozen=True, slots=True)
class AllPartitions:
    """A task output read across all partitions instead of the run's keys."""

    proxy: TaskProxy


@dataclass(frozen=True, slots=True)
class TaskValueRef:
    """A task value another task sets, e.g. for ``for_each_task`` inputs; renders as
    ``{{tasks.<task_key>.values.<key>}}``, identifiers in backticks when needed.
    """

    task_key: str
    key: str

    def render(self) -> str:
        task_key, key = reference_identifier(self.task_key), reference_identifier(self.key)
        return f"{{{{tasks.{task_key}.values.{key}}}}}"


def all_partitions(proxy: TaskProxy) -> AllPartitions:
    """Mark an edge so the downstream task reads every partition of ``proxy``.

    Example:
        >>> from databricks_bundle_decorators import DailyBackfill, Registry, job, task
        >>> from databricks_bundle_decorators.io_managers import SparkTableIoManager
        >>> io = SparkTableIoManager("main.sales.raw", partition_column="event_date")
        >>> @job(backfill=DailyBackfill(start_date="2024-01-01"), registry=Registry())
        ... def pipeline():
        ...     @task(io_manager=io)
        ...     def extract(): ...
        ...     @task
        ...     def aggregate(data): ...
        ...     aggregate(all_partitions(extract()))
        >>> pipeline.graph["aggregate"].inputs
        (InputEdge(param='data', upstream='extract', all_partitions=True),)

    Raises:
        TypeError: ``proxy`` is not the output of a task call inside a job body.
    """
    if not isinstance(proxy, TaskProxy):
        raise TypeError(
            "all_partitions() expects the output of a task call inside a @job body, "
            f"got {type(proxy).__name__}"
        )
    return AllPartitions(proxy)
