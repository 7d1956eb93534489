"""What a task reads of its run: ``params`` (the job parameters) and task values (small
JSON values one task sets and a downstream task reads; the runtime stores them)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from ..backfill.context import current_run_context

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
