"""``params`` (the job parameters), task values (small JSON values one task sets and a
downstream task reads; the runtime stores them), and which tasks use them: Databricks documents
``dbutils.jobs.taskValues`` for Python notebooks only
(https://docs.databricks.com/aws/en/jobs/task-values), so those tasks run as notebook tasks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import CodeType, FunctionType
from typing import Any, Protocol

from ..backfill.context import current_run_context
from .graph import TaskGraph
from .refs import TaskValueRef

MAX_TASK_VALUE_BYTES = 48 * 1024
"""Databricks limits a task value's JSON representation to 48 KiB."""

_MISSING: Any = object()


class JobParams(Mapping[str, str]):
    """A read-only view of the current run's job parameters.

    Outside a run it is empty. ``params["url"]`` inside a task reads the ``url``
    parameter of the job run (its default, or the value the run was started with).
    """

    def _current(self) -> Mapping[str, str]:
        context = current_run_context()
        return context.params if context is not None else {}

    def __getitem__(self, name: str) -> str:
        current = self._current()
        try:
            return current[name]
        except KeyError:
            known = ", ".join(sorted(current)) or "none (not inside a task run)"
            raise KeyError(f"job parameter {name!r} is not set; parameters: {known}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def __repr__(self) -> str:
        return f"JobParams({dict(self._current())!r})"


params = JobParams()


class TaskValueStore(Protocol):
    """Where task values live during a run."""

    def set(self, task_key: str, key: str, value: Any) -> None: ...

    def get(self, task_key: str, key: str, default: Any = _MISSING) -> Any: ...


_STORE: ContextVar[TaskValueStore | None] = ContextVar("dbxdec_task_values", default=None)


@contextmanager
def use_task_value_store(store: TaskValueStore) -> Iterator[TaskValueStore]:
    """Make ``store`` the task value store inside the ``with`` block."""
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


def _store() -> TaskValueStore:
    store = _STORE.get()
    if store is None:
        raise RuntimeError(
            "no task value store: task values are available inside a task run "
            "(dbxdec-run on Databricks, or the local runner)"
        )
    return store


def check_task_value(key: str, value: Any) -> str:
    """Return the JSON of ``value``, or raise ``ValueError`` naming what is wrong."""
    if not isinstance(key, str) or not key:
        raise ValueError("task value keys are non-empty strings")
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"task value {key!r} is not JSON-serialisable: {exc}") from None
    size = len(encoded.encode())
    if size > MAX_TASK_VALUE_BYTES:
        raise ValueError(
            f"task value {key!r} is {size} bytes as JSON; the limit is {MAX_TASK_VALUE_BYTES} "
            "bytes (store large data in a table through an IoManager)"
        )
    return encoded


def set_task_value(key: str, value: Any) -> None:
    """Publish ``value`` under ``key`` for downstream tasks of this run.

    Raises:
        ValueError: ``value`` is not JSON-serialisable or is over 48 KiB as JSON.
        RuntimeError: called outside a task run.
    """
    check_task_value(key, value)
    context = current_run_context()
    if context is None or context.task_key is None:
        raise RuntimeError("set_task_value() is only available inside a task run")
    _store().set(context.task_key, key, value)


def get_task_value(task_key: str, key: str, default: Any = _MISSING) -> Any:
    """Read the value ``key`` that upstream task ``task_key`` set in this run.

    Raises:
        KeyError: the value was not set and no ``default`` was given.
        RuntimeError: called outside a task run.
    """
    return _store().get(task_key, key, default)


TASK_VALUE_FUNCTIONS = frozenset({"set_task_value", "get_task_value"})
"""Names whose use in a task's code marks it as a task-value task."""

_VALUE_REFERENCE = re.compile(r"\{\{\s*tasks\.(`[^`]+`|[A-Za-z0-9_]+)\.values\.")


def task_value_tasks(graph: TaskGraph) -> frozenset[str]:
    """The keys of the tasks of ``graph`` that set or read task values: a task whose function
    (or one nested in it, or one of its module that it calls; not one in another module)
    names ``set_task_value``/``get_task_value``, one whose values another task reads
    (``task_value(task, key)``, ``{{tasks.<task>.values.<key>}}``), a for-each task fed by one.

    Example:
        >>> from databricks_bundle_decorators import Registry, set_task_value, task
        >>> registry = Registry()
        >>> @registry.job
        ... def pipeline():
        ...     @task
        ...     def discover():
        ...         set_task_value("regions", ["north"])
        ...     @task
        ...     def report(): ...
        ...     discover()
        ...     report()
        >>> sorted(task_value_tasks(pipeline.graph))
        ['discover']
    """
    found: set[str] = set()
    for key in graph.topological_order():
        definition = graph[key].definition
        if names_task_value_functions(definition.fn):
            found.add(key)
        for_each = definition.for_each
        source = _value_source(for_each.inputs) if for_each is not None else None
        if source is not None:
            found.add(key)
            found.add(source)
    return frozenset(found)


def names_task_value_functions(fn: Any, _seen: set[int] | None = None) -> bool:
    """Whether the code of ``fn`` names a task-value function: in its own code, a function
    nested in it, or a function of its own module that it calls (followed the same way).
    """
    code = getattr(fn, "__code__", None)
    if not isinstance(code, CodeType):
        return False
    seen = _seen if _seen is not None else set()
    seen.add(id(fn))
    names = {name for c in _code_objects(code) for name in c.co_names}
    if TASK_VALUE_FUNCTIONS & names:
        return True
    scope = getattr(fn, "__globals__", {})
    module = getattr(fn, "__module__", None)
    for name in sorted(names):
        helper = scope.get(name)
        if (
            isinstance(helper, FunctionType)
            and helper.__module__ == module
            and id(helper) not in seen
            and names_task_value_functions(helper, seen)
        ):
            return True
    return False


def _code_objects(code: CodeType) -> Iterator[CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from _code_objects(constant)


def _value_source(inputs: object) -> str | None:
    """The task whose value feeds a for-each ``inputs``, if it is a task value."""
    if isinstance(inputs, TaskValueRef):
        return inputs.task_key
    if isinstance(inputs, str):
        match = _VALUE_REFERENCE.search(inputs)
        if match is not None:
            return match.group(1).strip("`")
    return None
