"""What an IoManager is told about the read or write it performs."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .scope import KeyScope

if TYPE_CHECKING:
    from ...definitions.contracts import Check

DATABRICKS_RUNTIME_ENV = "DATABRICKS_RUNTIME_VERSION"


def on_databricks() -> bool:
    """Whether this process runs on a Databricks cluster (its runtime sets the variable)."""
    return bool(os.environ.get(DATABRICKS_RUNTIME_ENV))


class LazySession:
    """A ``SparkSession`` made on first use, once: a task that reads and writes nothing
    through Spark (no IoManager on it or its inputs, no source, no ``read_table``)
    never starts a JVM.

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
        session: The ``SparkSession``, a :class:`LazySession` that makes it on first
            use, or ``None`` (no Spark). Read it as :attr:`spark`.
        warehouse: Local folder that holds tables when not on Databricks.
        databricks: Whether tables are Unity Catalog Delta tables.
        run_id: Identifies the job run: task values of one run live together, and
            Delta commits carry it so a retried attempt of the run never commits twice.
            Unique per run; empty when unknown (then commits carry no id).
        staging: In a stage run of a full refresh, its backfill id: the Spark tables
            the job writes are written to and read from their staging tables (see
            :mod:`...backfill.refresh`); empty otherwise.
        task_run_id: On Databricks, the task run's own id (one per attempt); it names
            the attempt in the task's check report. Empty when unknown.
        backfill_id: In a run of ``dbxdec backfill``, the backfill's id (job parameter
            ``backfill_id``): Delta commits carry it in ``userMetadata``. Empty otherwise.
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
        checks: The task's per-slice checks; an IoManager whose ``evaluates_checks`` is
            true evaluates them before its write commits.
        force_rewrite: The run was asked to rewrite keys an append-once output already
            holds (``backfill_force_rewrite``; see :mod:`..io.append_once`).
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


_ENVIRONMENT: ContextVar[RunEnvironment | None] = ContextVar("dbxdec_environment", default=None)


def current_environment() -> RunEnvironment | None:
    """The environment of the task running in this context, if any."""
    return _ENVIRONMENT.get()


@contextlib.contextmanager
def use_environment(environment: RunEnvironment) -> Iterator[None]:
    """Make ``environment`` the current one while a task runs."""
    token = _ENVIRONMENT.set(environment)
    try:
        yield
    finally:
        _ENVIRONMENT.reset(token)
