"""The window guard of a keyed write: rows of the output outside the run's keys or
windows are counted in the same pass as the checks' metrics, and refuse the write.

Split out of :mod:`.spark_table`, whose IoManager calls it with its columns.
"""

from __future__ import annotations

from typing import Any

from ...backfill.scope import KeyScope
from ...definitions.contracts import ROWS_METRIC, OutputContext
from ..checks.metering import Measured
from ..core.errors import OutputRejected
from ..storage.table_name import TableName

OUTSIDE_TIME = "__outside_windows"
"""The metric counting rows whose time column is outside the written windows (or null)."""


def outside_counter(
    window_predicate: str | None, partition_column: str | None, scope: KeyScope
) -> dict[str, Any]:
    """The metering counter of rows outside ``window_predicate`` (none when the write is
    not keyed, not bounded or has no time column)."""
    if window_predicate is None or partition_column is None or not scope.bounded:
        return {}
    from pyspark.sql import functions as F

    return {OUTSIDE_TIME: ~F.coalesce(F.expr(window_predicate), F.lit(False))}


def reject_outside(
    context: OutputContext,
    measured: Measured,
    partition_column: str | None,
    time_column: str | None,
    table: TableName,
) -> None:
    """Refuse the write when rows carry keys outside the run's or times outside its windows.

    Raises:
        OutputRejected: naming up to five stray keys and the count of late rows; nothing
            was written.
    """
    scope = context.scope
    if partition_column is None or not scope.bounded:
        return
    allowed = set(scope.keys)
    stray = {k: int(v[ROWS_METRIC]) for k, v in measured.items() if k not in allowed}
    late = sum(int(v.get(OUTSIDE_TIME) or 0) for k, v in measured.items() if k in allowed)
    total = sum(stray.values()) + late
    if not total:
        return
    details = []
    if stray:
        listed = sorted(stray.items(), key=lambda kv: str(kv[0]))
        shown = ", ".join(f"{k if k is not None else 'null'} ({n})" for k, n in listed[:5])
        more = f" and {len(listed) - 5} more" if len(listed) > 5 else ""
        details.append(f"{partition_column} values {shown}{more}")
    if late:
        details.append(f"{late} with {time_column} outside the window")
    raise OutputRejected(
        f"task {context.task_key!r}: {total} rows of the output are outside the run's "
        f"{scope.describe()} ({'; '.join(details)}); nothing was written to {table}"
    )
