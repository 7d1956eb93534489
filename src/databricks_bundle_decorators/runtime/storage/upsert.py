"""Upserts by key (``write="upsert", upsert_on=[...]``): the run's rows win on
``upsert_on``, the key's other rows are kept.

The upsert is one ordinary replacing write (:mod:`.delta`: one ``replaceWhere`` commit
over the run's keys, with the run's transaction id, after the window check and the
checks): the output united with the rows of the run's keys at the table's current
version ``V`` (time travel) whose ``upsert_on`` values (null-safe) the output lacks.
Pinning ``V`` makes the frame compute the same rows however often it is evaluated
(serverless refuses ``persist()``); a commit to the same keys between ``V`` and the
write would be overwritten, which is why a backfill claims its keys before its runs.

Example:
    Key ``2024-03-02`` holds orders 1 and 2; a run outputs orders 2 (changed) and 3.
    The key then holds order 1 (kept), 2 (the run's) and 3 (inserted).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

from ..core.errors import OutputRejected, TaskRunError
from .delta import delta_table_exists, read_delta
from .delta_history import table_version
from .formats import TableRef, schema_difference

_SHOWN = 5
_KEY_ALIAS = "__dbxdec_upsert_{}"


def upserted(
    frame: Any,
    *,
    table: TableRef,
    replaced: str | None,
    upsert_on: Sequence[str],
    task_key: str,
) -> Any:
    """The frame an upsert writes over the run's keys: ``frame`` plus the rows of the
    table at its current version that ``replaced`` (the write's ``replaceWhere``)
    selects and whose ``upsert_on`` values ``frame`` does not hold (just ``frame`` when
    the table does not exist yet).

    Raises:
        TaskRunError: the run has no keys, the output lacks an ``upsert_on`` column, or
            its schema differs from the table's; nothing was written.
        OutputRejected: ``upsert_on`` values occur more than once in the output;
            nothing was written.
    """
    if replaced is None:
        raise TaskRunError(
            f"task {task_key!r}: table {table.name} is written by upsert and this run has no "
            "backfill key (a final sync or a job without backfill); nothing was written"
        )
    missing = [c for c in upsert_on if c not in frame.columns]
    if missing:
        raise TaskRunError(
            f"task {task_key!r}: the output has no upsert_on column {', '.join(missing)} for "
            f"table {table.name} (columns: {', '.join(frame.columns)}); nothing was written"
        )
    _refuse_duplicates(frame, upsert_on, task_key, table.name)
    spark = frame.sparkSession
    if not delta_table_exists(spark, table):
        return frame  # the first write creates the table, as a replacing write does
    current = read_delta(spark, table, table_version(spark, table)).where(replaced)
    difference = schema_difference(current.schema.jsonValue(), frame.schema.jsonValue())
    if difference is not None:
        raise TaskRunError(
            f"the output schema differs from table {table.name} ({difference}); nothing was written"
        )
    from pyspark.sql import functions as F

    keys = frame.select(*(F.col(c).alias(_KEY_ALIAS.format(i)) for i, c in enumerate(upsert_on)))
    matches = reduce(
        lambda a, b: a & b,
        (F.col(c).eqNullSafe(F.col(_KEY_ALIAS.format(i))) for i, c in enumerate(upsert_on)),
    )
    kept = current.join(keys, on=matches, how="left_anti")
    return frame.unionByName(kept)


def _refuse_duplicates(frame: Any, upsert_on: Sequence[str], task_key: str, table: str) -> None:
    """Refuse an output whose ``upsert_on`` values repeat (which row wins would be the
    order of evaluation's choice)."""
    from pyspark.sql import functions as F

    repeated = (
        frame.groupBy(*upsert_on)
        .agg(F.count(F.lit(1)).alias("__rows"))
        .where(F.col("__rows") > 1)
        .orderBy(*upsert_on)
        .limit(_SHOWN + 1)
        .collect()
    )
    if not repeated:
        return
    shown = ", ".join(
        ", ".join(f"{c}={row[c]!r}" for c in upsert_on) + f" ({row['__rows']} rows)"
        for row in repeated[:_SHOWN]
    )
    more = " and more" if len(repeated) > _SHOWN else ""
    raise OutputRejected(
        f"task {task_key!r}: the output repeats upsert_on values of table {table} "
        f"({shown}{more}); each must occur once; nothing was written"
    )
