"""``@task`` and ``@for_each_task``: decorators that capture, never execute."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, Protocol, overload

from ..errors import DefinitionError
from .contracts import Check, IoManager, as_check
from .refs import TaskProxy, TaskValueRef
from .sources import SourceLocation

FOR_EACH_INPUT_PARAM = "inputs"
_TASK_KEY = re.compile(r"[A-Za-z0-9_\-]{1,100}")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How Databricks retries a failed task run.

    Args:
        max_retries: Retries after the first attempt (``-1``: retry forever).
        min_retry_interval_millis: Minimum wait between attempts.
        retry_on_timeout: Also retry when the task times out.
    """

    max_retries: int
    min_retry_interval_millis: int = 0
    retry_on_timeout: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise ValueError(f"max_retries must be an integer, got {self.max_retries!r}")
        if self.max_retries < -1:
            raise ValueError(f"max_retries must be >= -1, got {self.max_retries}")
        if self.min_retry_interval_millis < 0:
            raise ValueError("min_retry_interval_millis must be >= 0")


@dataclass(frozen=True, slots=True)
class ForEachSpec:
    """The iteration of a for-each task: a JSON list, a task value, or a ``{{...}}`` reference."""

    inputs: list[Any] | TaskValueRef | str
    concurrency: int | None = None

    @property
    def inputs_task(self) -> str | None:
        """The task whose value feeds the iteration, if any."""
        return self.inputs.task_key if isinstance(self.inputs, TaskValueRef) else None


@dataclass(frozen=True)
class TaskDefinition:
    """A captured task: the function plus how it runs. ``fn`` stays callable for unit tests.

    Called inside a ``@job`` body it records a task and returns a :class:`TaskProxy`;
    called anywhere else it is an error (call ``.fn`` instead).

    Raises:
        DefinitionError: ``io_manager`` is not an :class:`IoManager` or a check is not a
            :class:`Check` (naming the job, the task and its file:line).
    """

    fn: Callable[..., Any]
    key: str
    io_manager: IoManager | None = None
    checks: tuple[Check, ...] = ()
    retries: RetryPolicy | None = None
    depends_on: tuple[Any, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    for_each: ForEachSpec | None = None
    source: SourceLocation = field(default_factory=lambda: SourceLocation("<unknown>", 0))

    def __post_init__(self) -> None:
        if self.io_manager is not None and not isinstance(self.io_manager, IoManager):
            raise self.error(
                "io_manager must be an IoManager such as SparkTableIoManager(...), got "
                f"{type(self.io_manager).__name__}"
            )
        if not isinstance(self.checks, tuple):
            raise self.error(f"checks must be a list of checks, got {type(self.checks).__name__}")
        for check in self.checks:
            if not isinstance(check, Check):
                raise self.error(
                    "checks must be Check objects such as MinRowCount(1), got "
                    f"{type(check).__name__}"
                )

    def __call__(self, *args: Any, **kwargs: Any) -> TaskProxy:
        trace = CURRENT_TRACE.get()
        if trace is None:
            raise self.error(
                "called outside a @job body; tasks are called inside a job body to build "
                f"its graph (in a unit test, call {self.fn.__name__}.fn(...) instead)"
            )
        return trace.record_call(self, args, kwargs)

    @property
    def name(self) -> str:
        return self.key

    def error(self, message: str, job: str | None = None) -> DefinitionError:
        """A :class:`DefinitionError` naming ``job``, this task and where it is defined."""
        return DefinitionError(message, job=job, task=self.key, location=str(self.source))


class _Trace(Protocol):  # tracing.JobTrace
    def record_call(
        self, definition: TaskDefinition, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> TaskProxy: ...


CURRENT_TRACE: ContextVar[_Trace | None] = ContextVar("dbxdec_job_trace", default=None)
"""The job body being traced, which task calls are handed to."""


class _TaskOptions(NamedTuple):  # a tuple: made once per task, cheaper than a dataclass
    """What ``@task(...)``/``@for_each_task(...)`` were given, before the function."""

    name: str | None
    io_manager: Any
    checks: Sequence[Any] | None
    retries: int | RetryPolicy | None
    depends_on: Sequence[Any] | Any
    settings: Mapping[str, Any]

    def make(self, fn: Callable[..., Any], for_each: ForEachSpec | None = None) -> TaskDefinition:
        """Capture ``fn`` as a task with these options."""
        if not callable(fn):
            raise TypeError(f"@task decorates a function, got {type(fn).__name__}")
        source = SourceLocation.of(fn)
        key = self.name or fn.__name__

        def fail(message: str) -> DefinitionError:  # the trace adds the job's name
            return DefinitionError(message, task=str(key), location=str(source))

        if not isinstance(key, str) or _TASK_KEY.fullmatch(key) is None:
            raise fail("task keys are 1-100 characters from A-Z a-z 0-9 _ -")
        if for_each is not None and FOR_EACH_INPUT_PARAM not in inspect.signature(fn).parameters:
            raise fail(
                "a for-each task takes the iteration element as a parameter named "
                f"{FOR_EACH_INPUT_PARAM!r}"
            )
        if "all_partitions" in self.settings:
            raise fail(
                "all_partitions is not a @task setting in dbxdec: mark the input in the job "
                "body instead, e.g. aggregate(all_partitions(extract())) with "
                "'from databricks_bundle_decorators import all_partitions' (one call per "
                "upstream input that reads every partition)"
            )
        checks = self.checks
        if checks is not None and (
            isinstance(checks, (str, bytes)) or not isinstance(checks, Sequence)
        ):
            raise fail(f"checks must be a list of checks, got {type(checks).__name__}")
        try:  # user checks (contracts.UserCheck) wrapped
            engine_checks = tuple(as_check(check) for check in checks or ())
        except TypeError as exc:
            raise fail(str(exc)) from None
        retries = self.retries
        if retries is not None and not isinstance(retries, RetryPolicy):
            try:
                retries = RetryPolicy(max_retries=retries)
            except ValueError as exc:
                raise fail(str(exc)) from None
        depends_on = self.depends_on
        if isinstance(depends_on, (str, bytes)) or not isinstance(
            depends_on, (Sequence, type(None))
        ):
            depends_on = [depends_on]
        return TaskDefinition(
            fn=fn,
            key=key,
            io_manager=self.io_manager,
            checks=engine_checks,
            retries=retries,
            depends_on=tuple(depends_on or ()),
            settings=dict(self.settings),
            for_each=for_each,
            source=source,
        )


@overload
def task(fn: Callable[..., Any], /) -> TaskDefinition: ...
@overload
def task(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    io_manager: Any = None,
    checks: Sequence[Any] | None = None,
    retries: int | RetryPolicy | None = None,
    depends_on: Sequence[Any] | Any = None,
    **settings: Any,
) -> Callable[[Callable[..., Any]], TaskDefinition]: ...
def task(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    io_manager: Any = None,
    checks: Sequence[Any] | None = None,
    retries: int | RetryPolicy | None = None,
    depends_on: Sequence[Any] | Any = None,
    **settings: Any,
) -> TaskDefinition | Callable[[Callable[..., Any]], TaskDefinition]:
    """Declare a task. Use bare (``@task``) or with options.

    Args:
        name: Task key (default: the function name).
        io_manager: Stores the task's return value and loads it for downstream tasks.
        checks: Per-slice checks run on the output before it is written.
        retries: Retries on Databricks: a count or a :class:`RetryPolicy`.
        depends_on: Control-only upstream tasks (no data flows).
        **settings: Any other Databricks task setting (``timeout_seconds``, ...).

    Example:
        >>> from databricks_bundle_decorators import Registry
        >>> from databricks_bundle_decorators.io_managers import SparkTableIoManager
        >>> registry = Registry()
        >>> @registry.job
        ... def pipeline():
        ...     @task(io_manager=SparkTableIoManager("main.shop.orders"))
        ...     def extract(): ...
        ...     @task
        ...     def load(rows): ...
        ...     load(extract())
        >>> pipeline.graph["load"].inputs
        (InputEdge(param='rows', upstream='extract', all_partitions=False),)
    """

    options = _TaskOptions(name, io_manager, checks, retries, depends_on, settings)
    return options.make(fn) if fn is not None else options.make


def for_each_task(
    *,
    inputs: list[Any] | TaskValueRef | str,
    concurrency: int | None = None,
    name: str | None = None,
    io_manager: Any = None,
    checks: Sequence[Any] | None = None,
    retries: int | RetryPolicy | None = None,
    depends_on: Sequence[Any] | Any = None,
    **settings: Any,
) -> Callable[[Callable[..., Any]], TaskDefinition]:
    """Declare a task that Databricks runs once per element of ``inputs``, which its function
    receives as its ``inputs`` parameter (other parameters are wired as with ``@task``).

    Args:
        inputs: A JSON-serialisable list, ``task_value(task, key)``, or a ``{{...}}``
            dynamic value reference.
        concurrency: Iterations run at the same time.
    """
    if isinstance(inputs, list):
        try:
            json.dumps(inputs)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"for_each_task inputs must be JSON-serialisable: {exc}") from None
    elif not isinstance(inputs, (TaskValueRef, str)):
        raise ValueError(
            "for_each_task inputs must be a list, task_value(task, key) or a '{{...}}' reference"
        )
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise ValueError(
            f"for_each_task concurrency must be a whole number >= 1, got {concurrency!r}"
        )
    options = _TaskOptions(name, io_manager, checks, retries, depends_on, settings)
    return partial(options.make, for_each=ForEachSpec(inputs, concurrency))


def task_key_of(ref: object) -> str | None:
    """The key of a task, a task output or a task key; ``None`` for anything else."""
    if isinstance(ref, TaskProxy):  # the usual case
        return ref.task_key
    if isinstance(ref, TaskDefinition):
        return ref.key
    return ref if isinstance(ref, str) else None


def task_value(source: TaskDefinition | TaskProxy | str, key: str) -> TaskValueRef:
    """Reference the task value ``key`` that task ``source`` sets."""
    task_key = task_key_of(source)
    if task_key is None:
        raise TypeError(f"task_value() expects a task, got {type(source).__name__}")
    return TaskValueRef(task_key, key)
