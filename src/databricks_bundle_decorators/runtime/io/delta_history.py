"""A Delta table's history and restoring it: ``DESCRIBE HISTORY`` and ``RESTORE``, by
catalog name on Databricks and by folder locally, in the same SQL."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import TaskRunError
from ..predicates import quote_identifier
from .delta import delta_table_exists
from .formats import TableRef

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


@dataclass(frozen=True, slots=True)
class Commit:
    """One version in a table's history (``at``: the commit time, UTC, for messages)."""

    version: int
    operation: str
    metadata: str | None = None
    at: str = ""

    def describe(self) -> str:
        """``version 6 (WRITE at 2024-06-01 12:00:00Z by 'dbxdec:other:t:9')``."""
        at = f" at {self.at}" if self.at else ""
        by = f" by {self.metadata!r}" if self.metadata else " without userMetadata"
        return f"version {self.version} ({self.operation}{at}{by})"


def sql_target(table: TableRef) -> str:
    """The table in SQL: ``delta.`/path``` locally, the quoted catalog name otherwise."""
    if table.path is not None:
        return f"delta.{quote_identifier(str(table.path))}"
    return table.qualified


def read_commits(spark: Any, table: TableRef) -> tuple[Commit, ...]:
    """The table's history, oldest first (empty when the table does not exist)."""
    if not delta_table_exists(spark, table):
        return ()
    from pyspark.sql import functions as F

    rows = (
        spark.sql(f"DESCRIBE HISTORY {sql_target(table)}")
        .select(
            "version",
            "operation",
            "userMetadata",
            F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss'Z'").alias("at"),
        )
        .collect()
    )
    commits = (Commit(int(r[0]), str(r[1]), r[2], str(r[3] or "")) for r in rows)
    return tuple(sorted(commits, key=lambda c: c.version))


def restore_version(
    spark: Any, table: TableRef, version: int | None, *, user_metadata: str
) -> None:
    """Restore ``table`` to ``version`` (``RESTORE TABLE``), or with ``None`` delete every
    row (``DELETE FROM``: there is no earlier version); the commit carries
    ``user_metadata``.

    Raises:
        TaskRunError: Delta refused (e.g. the version's files were vacuumed).
    """
    target = sql_target(table)
    if version is None:
        statement = f"DELETE FROM {target}"
    else:
        statement = f"RESTORE TABLE {target} TO VERSION AS OF {int(version)}"
    from pyspark.errors import PySparkException

    try:
        with _user_metadata(spark, user_metadata):
            spark.sql(statement).collect()
    except PySparkException as exc:  # Spark's own errors (converted from the JVM)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        what = "empty" if version is None else f"restore to version {version}"
        raise TaskRunError(f"Delta refused to {what} table {table.name}: {first}") from None


@contextlib.contextmanager
def _user_metadata(spark: Any, value: str) -> Iterator[None]:
    """Commits made inside carry ``value`` as ``userMetadata`` (a session setting, since
    ``RESTORE`` and ``DELETE`` take no write options)."""
    previous = spark.conf.get(USER_METADATA_CONF, None)
    spark.conf.set(USER_METADATA_CONF, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(USER_METADATA_CONF)
        else:
            spark.conf.set(USER_METADATA_CONF, previous)
