"""The registry: an explicit object that collects job definitions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    """Collects ``@job`` definitions.

    The decorators use :data:`default_registry`; code generation, the runtime and the
    launcher take a registry argument, so tests build their own instead of resetting
    global state.

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
        self,
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
        **settings: Any,
    ) -> JobDefinition | Callable[[Callable[..., Any]], JobDefinition]:
        """``@job`` bound to this registry (see :func:`databricks_bundle_decorators.job`)."""

        def decorate(f: Callable[..., Any]) -> JobDefinition:
            return make_job(
                f,
                registry=self,
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

        return decorate(fn) if fn is not None else decorate


default_registry = Registry()
"""The registry the module-level ``@job`` decorator registers into."""
