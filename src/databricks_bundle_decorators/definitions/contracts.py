"""The contracts a task's options meet (:class:`IoManager`, :class:`Check`, :class:`UserCheck`)
and the contexts an IoManager is given, checked when ``@task(...)`` is written."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from ..backfill.scope import KeyScope

ROWS_METRIC = "__rows"
"""The metric holding a slice's row count in :meth:`Check.failure`'s ``values``."""
Severity = Literal["error", "warn"]
"""``error`` fails the slice (nothing is written), ``warn`` records it and writes."""
OnFail = Literal["fail", "quarantine"]
"""For a row-level check: ``fail`` judges the slice by its failing rows, ``quarantine``
moves them to ``<table>__quarantine`` and writes the rest."""
ROWS_LOWER_BOUND_METRIC = "__rows_lower_bound"
"""Set (to 1) when a slice's row count is only a lower bound: no exact measure then."""


class IoManager(ABC):
    """Stores a task's output and loads it for downstream tasks.

    ``handle_output`` must replace exactly the partitions of ``context.scope``;
    ``load_input`` reads the keys the downstream run reads (lookback included) or all
    partitions. When ``evaluates_checks`` is true the IoManager judges the task's checks
    (``context.checks``) before its write commits; otherwise the runtime judges them on
    the output before calling ``handle_output``.
    """

    evaluates_checks: ClassVar[bool] = False

    @abstractmethod
    def handle_output(self, context: OutputContext, obj: Any) -> None:
        """Write ``obj`` for the keys in ``context.scope``."""

    @abstractmethod
    def load_input(self, context: InputContext) -> Any:
        """Read the upstream output for the keys in ``context.scope``."""

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables (``catalog.schema.table``) this IoManager writes; ``()`` for none."""
        return ()


class Check(ABC):
    """A condition each slice of a task's output must meet before it is written.

    A check contributes row counters, optional aggregates, and a verdict per slice from
    those values; the runtime counts every check of a task in one pass.
    """

    needs_grouping: ClassVar[bool] = False
    """Whether the counters compare rows with each other (a window over the slice)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """How messages name the check, e.g. ``min_row_count(100)``."""

    def counters(self, prefix: str, slice_column: str | None) -> dict[str, Any]:
        """Boolean ``Column``s by metric name, each counted per slice (null is false).

        ``failure`` must pass a slice whose counters are all 0 whatever its row count
        allows. ``slice_column`` is the partition column (``None``: one slice).
        """
        return {}

    def metrics(self, prefix: str) -> dict[str, Any]:
        """Other aggregate ``Column``s per slice, for checks that need more than counts."""
        return {}

    @property
    def row_floor(self) -> int | None:
        """The fewest rows a slice with all counters 0 needs to pass, when that is all
        the verdict depends on; ``None`` when the check needs the exact row count."""
        return None

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        """Why the slice fails (``values``: the metrics and :data:`ROWS_METRIC`), or ``None``."""
        return None

    def frame_failure(self, frame: Any) -> str | None:
        """Why the whole output fails, for checks that need the frame itself."""
        return None

    def measurement(self, values: Mapping[str, Any], prefix: str) -> tuple[float | None, str]:
        """The measure and its limit on a slice, e.g. ``(250.0, ">= 100")``; ``(None, "")``
        when the check measures no number."""
        return None, ""

    def failing_rows(self) -> Any | None:
        """For a row-level check, a boolean ``Column`` true on failing rows; else ``None``.
        Only a row-level check can take ``on_fail="quarantine"``."""
        return None

    @property
    def baseline_spec(self) -> Any | None:
        """For a check comparing a slice with its committed neighbours, what it needs
        (a ``runtime.checks.baselines.BaselineSpec``); else ``None``."""
        return None


@runtime_checkable
class UserCheck(Protocol):
    """A check of your own: a name, the row conditions it counts per slice, and a verdict.

    dbxdec counts every condition per key in the same pass as the shipped checks, before
    the write commits. A ``severity`` attribute (``"error"`` or ``"warn"``) is read when
    present.

    Example:
        >>> class NoNegativeAmounts:
        ...     name = "no_negative_amounts"
        ...     def conditions(self):
        ...         return {"negative": "amount < 0"}  # SQL, or a pyspark Column
        ...     def verdict(self, counts, rows):
        ...         n = counts["negative"]
        ...         return f"{n} of {rows} rows have a negative amount" if n else None
        >>> as_check(NoNegativeAmounts()).name
        'no_negative_amounts'
    """

    @property
    def name(self) -> str:
        """How messages and check results name the check."""

    def conditions(self) -> Mapping[str, Any]:
        """Boolean conditions by label (Spark SQL or a ``Column``), counted per slice."""

    def verdict(self, counts: Mapping[str, int], rows: int) -> str | None:
        """Why the slice fails, from its ``counts`` by label and ``rows``; ``None`` passes."""


@dataclass(frozen=True, slots=True)
class CountedCheck(Check):
    """A :class:`UserCheck` as the check engine sees it (made by :func:`as_check`)."""

    user: UserCheck

    def __post_init__(self) -> None:
        check_options(self, getattr(self.user, "severity", "error"), "fail")

    @property
    def name(self) -> str:
        return str(self.user.name)

    @property
    def severity(self) -> Severity:
        return "warn" if getattr(self.user, "severity", "error") == "warn" else "error"

    def counters(self, prefix: str, slice_column: str | None) -> dict[str, Any]:
        from pyspark.sql import functions as F  # only where a check is evaluated

        return {
            f"{prefix}{label}": F.expr(condition) if isinstance(condition, str) else condition
            for label, condition in self.user.conditions().items()
        }

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        counts = {
            label: int(values.get(f"{prefix}{label}") or 0) for label in self.user.conditions()
        }
        return self.user.verdict(counts, int(values.get(ROWS_METRIC) or 0))


def as_check(check: object) -> Check:
    """A :class:`Check` as it is, a :class:`UserCheck` wrapped in :class:`CountedCheck`.

    Raises:
        TypeError: neither.
    """
    if isinstance(check, Check):
        return check
    if isinstance(check, UserCheck):
        return CountedCheck(check)
    raise TypeError(
        f"checks must be Check objects such as MinRowCount(1), got {type(check).__name__}"
    )


def severity_of(check: Check) -> Severity:
    """The check's ``severity`` (``error`` for checks that declare none)."""
    return "warn" if getattr(check, "severity", "error") == "warn" else "error"


def quarantines(check: Check) -> bool:
    """Whether failing rows of ``check`` go to the quarantine table."""
    return getattr(check, "on_fail", "fail") == "quarantine"


def check_options(check: Check, severity: object, on_fail: object) -> None:
    """Refuse a ``severity`` or ``on_fail`` that ``check`` cannot take.

    Raises:
        ValueError: an unknown value, or quarantine on a check that is not row-level.
    """
    if severity not in ("error", "warn"):
        raise ValueError(
            f"check {check.name}: severity must be 'error' or 'warn', got {severity!r}"
        )
    if on_fail not in ("fail", "quarantine"):
        raise ValueError(
            f"check {check.name}: on_fail must be 'fail' or 'quarantine', got {on_fail!r}"
        )
    if on_fail == "quarantine" and type(check).failing_rows is Check.failing_rows:
        raise ValueError(
            f"check {check.name}: on_fail='quarantine' needs a row-level check (Expect); "
            f"{type(check).__name__} judges a whole slice, not single rows"
        )


class LazySession:
    """A ``SparkSession`` made on first use, once: a task without Spark starts no JVM.

    Example:
        >>> from databricks_bundle_decorators.runtime.session.spark import local_spark_session
        >>> session = LazySession(local_spark_session)  # no JVM yet
        >>> session.started
        False
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._session: Any = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        """Whether the session has been made."""
        return self._session is not None

    def get(self) -> Any:
        """The session, made by the factory on the first call."""
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = self._factory()
        return self._session


@dataclass(frozen=True, slots=True)
class RunEnvironment:
    """Where a task runs.

    Attributes:
        session: The ``SparkSession``, a :class:`LazySession`, or ``None``; read :attr:`spark`.
        warehouse: Local folder that holds tables when not on Databricks.
        databricks: Whether tables are Unity Catalog Delta tables.
        run_id: The job run's id (task values and Delta commits carry it); may be empty.
        staging: In a full refresh's stage run, its backfill id (tables go to staging).
        task_run_id: The task run's own id (one per attempt), naming its check report.
        backfill_id: The ``dbxdec backfill`` id, carried in Delta ``userMetadata``.
    """

    session: Any
    warehouse: Path
    databricks: bool = False
    run_id: str = ""
    staging: str = ""
    task_run_id: str = ""
    backfill_id: str = ""

    @property
    def spark(self) -> Any:
        """The ``SparkSession``; a lazy one is made now if it was not yet."""
        session = self.session
        return session.get() if isinstance(session, LazySession) else session


@dataclass(frozen=True, slots=True)
class OutputContext:
    """A write: the task that produced the output and the keys the run writes.

    Attributes:
        job_name: The job being run.
        task_key: The task whose output is written.
        scope: The keys the run writes (``ResolvedKeys.written``), with their windows.
        environment: Spark session and storage location.
        checks: The task's per-slice checks (see :class:`IoManager`).
        force_rewrite: Rewrite keys an append-once output already holds.
    """

    job_name: str
    task_key: str
    scope: KeyScope
    environment: RunEnvironment
    checks: tuple[Check, ...] = ()
    force_rewrite: bool = False


@dataclass(frozen=True, slots=True)
class InputContext:
    """A read: the downstream task, its parameter, and the keys it reads.

    Attributes:
        job_name: The job being run.
        task_key: The task that reads (downstream).
        upstream_task_key: The task whose output is read.
        param: The downstream function's parameter receiving the value.
        scope: The keys read: the run's keys with lookback, or all partitions.
        environment: Spark session and storage location.
    """

    job_name: str
    task_key: str
    upstream_task_key: str
    param: str
    scope: KeyScope
    environment: RunEnvironment
