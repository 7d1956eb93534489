"""Task value stores: ``dbutils.jobs.taskValues`` on Databricks, JSON files locally."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...atomic import write_atomically
from ...definitions.task_values import check_task_value
from ...errors import UsageError

_MISSING: Any = object()


class LocalTaskValueStore:
    """Task values of one run as JSON files, ``<folder>/<task key>.json``, each replaced
    atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _file(self, task_key: str) -> Path:
        if not task_key or "/" in task_key or task_key.startswith("."):
            raise UsageError(f"invalid task key {task_key!r} for a task value")
        return self.folder / f"{task_key}.json"

    def _load(self, task_key: str) -> dict[str, Any]:
        try:
            loaded = json.loads(self._file(task_key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def set(self, task_key: str, key: str, value: Any) -> None:
        """Store ``value`` (JSON, at most 48 KiB) under ``key`` for task ``task_key``."""
        check_task_value(key, value)
        values = self._load(task_key)
        values[key] = value
        write_atomically(self._file(task_key), json.dumps(values, allow_nan=False, sort_keys=True))

    def get(self, task_key: str, key: str, default: Any = _MISSING) -> Any:
        """The value task ``task_key`` set, or ``default``.

        Raises:
            KeyError: not set and no default; the message lists what the task set.
        """
        values = self._load(task_key)
        if key in values:
            return values[key]
        if default is not _MISSING:
            return default
        known = ", ".join(sorted(values)) or "none"
        raise KeyError(f"task {task_key!r} set no value {key!r} in this run (values: {known})")


class DbutilsTaskValueStore:
    """Task values through ``dbutils.jobs.taskValues``; ``dbutils`` may be a function
    returning it on first use (a task that sets no value needs no SparkSession)."""

    def __init__(self, dbutils: Any) -> None:
        self._dbutils = dbutils
        self._resolved: Any = None

    @property
    def _values(self) -> Any:
        if self._resolved is None:
            source = self._dbutils
            self._resolved = source() if callable(source) else source
        return self._resolved.jobs.taskValues

    def set(self, task_key: str, key: str, value: Any) -> None:
        """Set ``key`` for the running task (Databricks knows which task that is)."""
        check_task_value(key, value)
        self._values.set(key=key, value=value)

    def get(self, task_key: str, key: str, default: Any = _MISSING) -> Any:
        if default is _MISSING:
            return self._values.get(taskKey=task_key, key=key)
        return self._values.get(taskKey=task_key, key=key, default=default, debugValue=default)


def databricks_task_value_store(spark: Callable[[], Any]) -> DbutilsTaskValueStore:
    """The store of this Databricks cluster; ``spark`` is called when a value is first used."""

    def dbutils() -> Any:  # pragma: no cover - only on Databricks
        try:
            from pyspark.dbutils import DBUtils
        except ImportError:
            from databricks.sdk.runtime import dbutils

            return dbutils
        return DBUtils(spark())

    return DbutilsTaskValueStore(dbutils)
