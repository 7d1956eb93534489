"""The rows per key of one partitioned table: one aggregate query (see :mod:`..programs.presence`).

Below both the presence run (:mod:`..programs.presence`) and the check that a task's upstream
partitions are there (:mod:`..programs.task_subset`), so that neither run kind's module needs the
other's.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...backfill.scope import KeyScope
from ...backfill.wire import PresenceReport
from ...definitions.contracts import RunEnvironment
from .outputs import TableOutput

_ROWS = "rows"


KeyedTable = TableOutput
"""A partitioned output table of a job: its IoManager, where it is, who writes it."""


def _key_text(value: Any) -> str:
    """A partition value as a key: a ``DATE`` column holds daily keys as dates."""
    return value.isoformat() if isinstance(value, date) else str(value)


def table_presence(
    table: KeyedTable, scope: KeyScope, environment: RunEnvironment
) -> PresenceReport:
    """The rows of each of ``scope``'s keys in one table: one ``GROUP BY`` over the
    partition column (both columns of a two-dimensional table), filtered by the
    IoManager's read predicate (the keys and, with a
    ``time_column``, their windows)."""
    manager = table.manager
    column = manager.partition_column
    assert column is not None  # keyed_tables keeps partitioned tables only
    spark = environment.spark
    frame = manager.table_format(environment).read(
        spark, table.ref, partition_column=column, keys=scope.keys
    )
    task = ",".join(table.tasks)
    if frame is None or not scope.keys:
        return PresenceReport(table.ref.name, task, frame is not None, {})
    predicate = manager.read_predicate(scope)
    if predicate is not None:
        frame = frame.where(predicate)
    columns = manager.partition_columns  # (static value, time key) of a two-dimensional table
    counted = frame.groupBy(*columns).count().withColumnRenamed("count", _ROWS).collect()
    wanted = set(scope.keys)
    rows = {
        MULTI_SEPARATOR.join(_key_text(row[c]) for c in columns): int(row[_ROWS])
        for row in counted
        if all(row[c] is not None for c in columns)
    }
    return PresenceReport(
        table.ref.name, task, True, {k: n for k, n in sorted(rows.items()) if k in wanted}
    )
