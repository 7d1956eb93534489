"""The module-level ``@job`` decorator."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

from ..backfill.base import BackfillDef
from ..backfill.deadline import Deadline
from ..backfill.quartz import QuartzSchedule
from .job import JobCluster, JobDefinition
from .registry import Registry, default_registry
from .sources import Source
from .triggers import Trigger


@overload
def job(fn: Callable[..., Any], /) -> JobDefinition: ...
@overload
def job(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    params: Mapping[str, object] | None = None,
    backfill: BackfillDef | None = None,
    cluster: JobCluster | None = None,
    schedule: str | QuartzSchedule | None = None,
    sources: Sequence[Source] | None = None,
    check_results: str | None = None,
    deadline: Deadline | None = None,
    triggered_by: Trigger | None = None,
    registry: Registry | None = None,
    **settings: Any,
) -> Callable[[Callable[..., Any]], JobDefinition]: ...
def job(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    params: Mapping[str, object] | None = None,
    backfill: BackfillDef | None = None,
    cluster: JobCluster | None = None,
    schedule: str | QuartzSchedule | None = None,
    sources: Sequence[Source] | None = None,
    check_results: str | None = None,
    deadline: Deadline | None = None,
    triggered_by: Trigger | None = None,
    registry: Registry | None = None,
    **settings: Any,
) -> JobDefinition | Callable[[Callable[..., Any]], JobDefinition]:
    """Declare a job. Tasks are defined and called inside the body; calls build the graph.

    The body is not run at import: it is traced on first use, once.

    Args:
        name: Job name (default: the function name).
        params: Job parameters with their default values.
        backfill: Backfill definition; adds the ``backfill_*`` job parameters.
        cluster: A :func:`job_cluster` for all tasks; ``None`` runs on serverless.
        schedule: Quartz cron (in the backfill's ``tz``, else UTC) or a :class:`QuartzSchedule`.
        sources: The :func:`source` tables the tasks read (``SOURCE.read()``).
        check_results: Delta table (``catalog.schema.table``) for check results; default:
            the project's ``[tool.dbxdec] check_results``.
        deadline: When each key is due: a :class:`~databricks_bundle_decorators.backfill.Deadline`.
        triggered_by: ``TableUpdate(...)`` or ``FileArrival(...)``.
        registry: Register into this registry instead of the default one.
        **settings: Other Databricks job settings (``max_concurrent_runs``, ``tags``,
            ``queue``, a raw ``trigger={...}``, ...), passed through.

    Example:
        >>> from databricks_bundle_decorators import DailyBackfill, Registry, task
        >>> from databricks_bundle_decorators.io_managers import SparkTableIoManager
        >>> io = SparkTableIoManager("main.sales.raw", partition_column="event_date")
        >>> @job(params={"env": "dev"}, backfill=DailyBackfill("2024-01-01"),
        ...      schedule="0 0 6 * * ?", registry=Registry())
        ... def sales():
        ...     @task(io_manager=io)
        ...     def extract(): ...
        ...     @task
        ...     def report(data): ...
        ...     report(extract())
        >>> sales.graph.topological_order(), sales.graph["report"].upstream
        (['extract', 'report'], ('extract',))
    """

    target = registry if registry is not None else default_registry
    decorated: JobDefinition | Callable[[Callable[..., Any]], JobDefinition] = target.job(
        fn,
        name=name,
        params=params,
        backfill=backfill,
        cluster=cluster,
        schedule=schedule,
        sources=sources,
        check_results=check_results,
        deadline=deadline,
        triggered_by=triggered_by,
        **settings,
    )
    return decorated
