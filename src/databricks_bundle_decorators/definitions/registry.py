"""The registry, an explicit object that collects job definitions, and ``@job``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from ..backfill.base import BackfillDef
from ..backfill.deadline import Deadline
from ..backfill.quartz import QuartzSchedule
from ..errors import DefinitionError, UsageError, did_you_mean
from .job import JobCluster, JobDefinition, make_job
from .sources import Source
from .triggers import Trigger


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem found in the definitions, with where it is."""

    message: str
    location: str | None = None
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class Registry:
    """Collects ``@job`` definitions. The decorators use :data:`default_registry`; codegen,
    runtime and launcher take a registry argument, so tests build their own.

    Example:
        >>> registry = Registry()
        >>> @registry.job
        ... def nightly():
        ...     ...
        >>> "nightly" in registry, registry.names
        (True, ['nightly'])
    """

    def __init__(self) -> None:
        self._jobs: dict[str, JobDefinition] = {}
        self._diagnostics: list[Diagnostic] = []

    def __contains__(self, name: object) -> bool:
        return name in self._jobs

    def __iter__(self) -> Iterator[JobDefinition]:
        return iter(sorted(self._jobs.values(), key=lambda j: j.name))

    def __len__(self) -> int:
        return len(self._jobs)

    def add(self, definition: JobDefinition) -> None:
        """Register a job; a second job with the same name becomes a diagnostic."""
        existing = self._jobs.get(definition.name)
        if existing is not None and existing.source != definition.source:
            self._diagnostics.append(
                Diagnostic(
                    f"job {definition.name!r}: duplicate job name, already defined at "
                    f"{existing.source}",
                    str(definition.source),
                )
            )
            return
        self._jobs[definition.name] = definition

    def get(self, name: str) -> JobDefinition:
        """The job called ``name``.

        Raises:
            UsageError: no such job; the message lists close names.
        """
        try:
            return self._jobs[name]
        except KeyError:
            known = sorted(self._jobs)
            listing = ", ".join(known[:20]) if known else "none"
            raise UsageError(
                f"unknown job {name!r}.{did_you_mean(name, known)} Known jobs: {listing}"
            ) from None

    @property
    def names(self) -> list[str]:
        return sorted(self._jobs)

    def record(self, diagnostic: Diagnostic) -> None:
        """Add a diagnostic found while loading (e.g. an import failure)."""
        self._diagnostics.append(diagnostic)

    def check(self) -> list[Diagnostic]:
        """Trace every job and return all problems found, not just the first."""
        found = list(self._diagnostics)
        for definition in self:
            try:
                _ = definition.graph
            except DefinitionError as exc:
                found.append(Diagnostic(exc.render()))
        return found

    def job(
        self, fn: Callable[..., Any] | None = None, /, **options: Any
    ) -> JobDefinition | Callable[[Callable[..., Any]], JobDefinition]:
        """``@job`` bound to this registry (see :func:`databricks_bundle_decorators.job`)."""
        decorate = job(registry=self, **options)
        return decorate(fn) if fn is not None else decorate


default_registry = Registry()
"""The registry the module-level ``@job`` decorator registers into."""


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

    def decorate(f: Callable[..., Any]) -> JobDefinition:
        definition = make_job(
            f,
            name=name,
            params=params,
            backfill=backfill,
            cluster=cluster,
            schedule=schedule,
            sources=sources,
            check_results=check_results,
            deadline=deadline,
            triggered_by=triggered_by,
            settings=settings,
        )
        (registry if registry is not None else default_registry).add(definition)
        return definition

    return decorate(fn) if fn is not None else decorate
