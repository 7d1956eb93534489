"""``@job``: a captured job whose body is traced lazily, once, and its job cluster."""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import Any

from ..backfill.base import BackfillDef
from ..backfill.context import BACKFILL_PARAMS
from ..backfill.deadline import Deadline, KeyDeadlines
from ..backfill.multi import MultiBackfill
from ..backfill.quartz import QuartzSchedule
from ..backfill.time_backfill import CatchUp
from ..backfill.wire.params import JOB_ID_PARAM, JOB_ID_VALUE
from ..errors import DefinitionError
from .graph import TaskGraph
from .sources import Source, SourceLocation, check_sources
from .tracing import tracing
from .triggers import TABLE_NAME, FileArrival, TableUpdate, Trigger, trigger_of

_JOB_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,99}")
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,99}")
RESERVED_PARAM_PREFIX = "dbxdec_"
_CLUSTER_KEY = re.compile(r"[A-Za-z0-9_\-]{1,100}")


@dataclass(frozen=True, slots=True)
class JobCluster:
    """An ephemeral cluster created for a job run and shared by its tasks.

    ``spec`` holds Databricks ``new_cluster`` fields (``spark_version``,
    ``node_type_id``, ``num_workers``, ``autoscale``, ...), passed through unchanged.
    """

    name: str
    spec: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or _CLUSTER_KEY.fullmatch(self.name) is None:
            raise ValueError(
                f"job cluster name {self.name!r} is invalid: expected 1-100 characters "
                "from A-Z a-z 0-9 _ -"
            )
        object.__setattr__(self, "spec", MappingProxyType(dict(self.spec)))


def job_cluster(name: str, **spec: Any) -> JobCluster:
    """Declare a job cluster to pass to ``@job(cluster=...)``.

    Example:
        >>> small = job_cluster("small", spark_version="16.4.x-scala2.12",
        ...                     node_type_id="Standard_E8ds_v4", num_workers=1)
    """
    return JobCluster(name, spec)


@dataclass(eq=False, repr=False)
class JobDefinition:
    """A job as declared: settings captured at decoration, tasks traced on first use.

    Attributes:
        name: The job name (the resource key in the bundle).
        fn: The undecorated job body.
        params: User job parameters and their defaults.
        backfill: The backfill definition, if any.
        cluster: The job cluster shared by the tasks; ``None`` runs serverless.
        schedule: The Quartz schedule, if any.
        settings: Other Databricks job settings, passed through.
        source: Where the job is defined.
        sources: The source tables the tasks read.
        check_results: The check results table; ``None``: results go to the ledger only.
        deadlines: When each key is due; ``None``: no deadline.
    """

    fn: Callable[[], Any]
    _: KW_ONLY
    name: str
    params: dict[str, str]
    backfill: BackfillDef | None
    cluster: JobCluster | None
    schedule: QuartzSchedule | None
    settings: dict[str, Any]
    source: SourceLocation
    sources: tuple[Source, ...] = ()
    check_results: str | None = None
    deadlines: KeyDeadlines | None = None
    trigger: Trigger | None = None
    _graph: TaskGraph | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __repr__(self) -> str:
        return f"<JobDefinition {self.name!r} at {self.source}>"

    @property
    def is_traced(self) -> bool:
        """Whether the body has been traced already."""
        return self._graph is not None

    @property
    def graph(self) -> TaskGraph:
        """The task graph, tracing the body on first access (once, thread-safe).

        Raises:
            DefinitionError: the body is wrong (cycle, duplicate key, bad argument...).
        """
        if self._graph is None:
            with self._lock:
                if self._graph is None:
                    self._graph = self._trace()
        return self._graph

    def _check_dimensions(self, graph: TaskGraph) -> None:
        """A keyed output table matches the job's dimensions (a static x time job's names
        its static column), refused at definition time, naming the task's line.

        Raises:
            DefinitionError: an output table cannot hold the job's keys.
        """
        multi = isinstance(self.backfill, MultiBackfill)
        for node in graph:
            problem = _dimension_problem(self.name, multi, node.definition.io_manager)
            if problem is not None:
                raise node.definition.error(problem, self.name)

    def _trace(self) -> TaskGraph:
        with tracing(self.name) as trace:
            try:
                self.fn()
            except DefinitionError as exc:
                if exc.job is None or exc.location is None:
                    exc.job = exc.job or self.name
                    exc.location = exc.location or str(SourceLocation.raised_at(exc) or self.source)
                    exc.args = (exc.render(),)
                raise
            except Exception as exc:  # e.g. a backfill definition refused inside the body
                raise DefinitionError(
                    f"the job body raised {type(exc).__name__}: {exc}",
                    job=self.name,
                    location=str(SourceLocation.raised_at(exc) or self.source),
                ) from exc
        graph = trace.graph()
        if not len(graph):
            raise DefinitionError(
                "the job body calls no task", job=self.name, location=str(self.source)
            )
        self._check_dimensions(graph)
        return graph


def _dimension_problem(job: str, multi: bool, manager: Any) -> str | None:
    """Why ``manager`` (an IoManager writing a keyed table: ``partition_column`` and
    ``static_column``, as SparkTableIoManager has) cannot store job ``job``'s keys, if so."""
    if getattr(manager, "partition_column", None) is None or not hasattr(manager, "static_column"):
        return None  # not a keyed table: nothing to split by dimension
    table = ", ".join(manager.tables) or "its table"
    if multi and manager.static_column is None:
        return (
            f"table {table} holds job {job!r}'s static x time keys but names no column for "
            "the static value: add static_column='<the column holding it>' to its "
            "SparkTableIoManager"
        )
    if not multi and manager.static_column is not None:
        return (
            f"table {table} has static_column={manager.static_column!r}, but job {job!r} "
            "has no static dimension: static_column belongs to backfill=MultiBackfill(...)"
        )
    return None


def _check_params(
    params: Mapping[str, object] | None, fail: Callable[[str], DefinitionError]
) -> dict[str, str]:
    checked: dict[str, str] = {}
    for name, value in (params or {}).items():
        if not isinstance(name, str) or _PARAM_NAME.fullmatch(name) is None:
            raise fail(
                f"job parameter name {name!r} is invalid: expected a letter or _ then "
                "letters, digits, _ . -"
            )
        if name in BACKFILL_PARAMS or name.startswith(RESERVED_PARAM_PREFIX):
            raise fail(
                f"job parameter {name!r} is reserved by dbxdec "
                f"({', '.join(BACKFILL_PARAMS)} and names starting with {RESERVED_PARAM_PREFIX!r})"
            )
        if isinstance(value, bool):
            checked[name] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            checked[name] = str(value)
        else:
            raise fail(
                f"job parameter {name!r} has a {type(value).__name__} default; "
                "job parameters are strings (or numbers/booleans, stored as strings)"
            )
    return checked


def make_job(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    params: Mapping[str, object] | None = None,
    backfill: BackfillDef | None = None,
    cluster: JobCluster | None = None,
    schedule: str | QuartzSchedule | None = None,
    sources: Sequence[Source] | None = None,
    check_results: object = None,
    deadline: object = None,
    triggered_by: object = None,
    settings: Mapping[str, Any],
) -> JobDefinition:
    """Capture ``fn`` as a job (nothing is executed)."""
    if not callable(fn):
        raise TypeError(f"@job decorates a function, got {type(fn).__name__}")
    source = SourceLocation.of(fn)
    where = str(source)
    job_name = name or fn.__name__
    settings = dict(settings)
    trigger = trigger_of(triggered_by, settings, backfill, job_name or "?", where)
    if not isinstance(job_name, str) or _JOB_NAME.fullmatch(job_name) is None:
        raise DefinitionError(
            f"job name {job_name!r} is invalid: expected a letter or _ then up to 99 of "
            "A-Z a-z 0-9 _ -",
            location=where,
        )

    def fail(message: str) -> DefinitionError:
        return DefinitionError(message, job=job_name, location=where)

    required = [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if required:
        raise fail(
            f"a job body takes no arguments (got {', '.join(required)}); use params=... "
            "for job parameters"
        )
    if backfill is not None and not isinstance(backfill, BackfillDef):
        raise fail(
            f"backfill must be a BackfillDef such as DailyBackfill(...), got "
            f"{type(backfill).__name__}"
        )
    if cluster is not None and not isinstance(cluster, JobCluster):
        raise fail(f"cluster must come from job_cluster(...), got {type(cluster).__name__}")
    if isinstance(schedule, str):
        try:
            schedule = QuartzSchedule(schedule, timezone=getattr(backfill, "tz", "UTC"))
        except ValueError as exc:
            raise fail(str(exc)) from None
    elif schedule is not None and not isinstance(schedule, QuartzSchedule):
        raise fail("schedule must be a Quartz cron string or QuartzSchedule(...)")
    checked_params = _check_params(params, fail)
    if isinstance(trigger, TableUpdate | FileArrival):  # names under the dbxdec_ prefix
        checked_params.update(trigger.parameters())
    catch_up = getattr(backfill, "catch_up", None)
    if isinstance(catch_up, CatchUp) and catch_up.since == "last_success":
        checked_params[JOB_ID_PARAM] = JOB_ID_VALUE  # its tasks read the job's run history
    checked_sources = check_sources(sources, job_name, where)
    for declared in checked_sources:
        if declared.static_column is not None and not isinstance(backfill, MultiBackfill):
            raise fail(
                f"source {declared.name} has static_column={declared.static_column!r}, but "
                "the job has no static dimension: static_column belongs to jobs with "
                "backfill=MultiBackfill(...)"
            )
    results_table = check_results_table(check_results, job_name, where)
    deadlines = None
    if deadline is not None:  # on the job's keys, in the schedule's zone (else the backfill's)
        if not isinstance(deadline, Deadline):
            raise fail(
                "deadline must be Deadline('HH:MM') or Deadline(after=timedelta(...)), got "
                f"{type(deadline).__name__}"
            )
        try:
            deadlines = deadline.for_keys(backfill, schedule.timezone if schedule else None)
        except ValueError as exc:
            raise fail(str(exc)) from None
    return JobDefinition(
        fn,
        name=job_name,
        params=checked_params,
        backfill=backfill,
        cluster=cluster,
        schedule=schedule,
        settings=settings,
        source=source,
        sources=checked_sources,
        check_results=results_table,
        deadlines=deadlines,
        trigger=trigger,
    )


def check_results_table(value: object, job: str | None, where: str | None) -> str | None:
    """A check results table name as given (``catalog.schema.table``), or ``None``.

    Raises:
        DefinitionError: not a three-part name.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str) or TABLE_NAME.fullmatch(value) is None:
        raise DefinitionError(
            f"check_results={value!r} must be a table name catalog.schema.table "
            "(e.g. 'main.ops.check_results')",
            job=job,
            location=where,
        )
    return value
