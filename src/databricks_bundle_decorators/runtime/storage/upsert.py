"""Upserts by key: the run's rows win on ``upsert_on``, the key's other rows are kept.

``SparkTableIoManager(..., write="upsert", upsert_on=["order_id"])`` writes, for each
key of the run, the output's rows and the rows the table already holds for that key
whose ``upsert_on`` values the output does not have. It is built as one ordinary
write, so that it keeps everything a replacing write has:

1. The table's current version ``V`` is read once (``DESCRIBE HISTORY ... LIMIT 1``).
2. The rows of the run's keys at version ``V`` (time travel, ``versionAsOf``) are
   anti-joined with the output on ``upsert_on`` (null-safe: a null matches a null) and
   united with the output.
3. That frame is written as every replacing output is (:mod:`.delta`): one
   ``replaceWhere`` commit over exactly the run's keys, with the run's ``txnAppId``/
   ``txnVersion`` and ``userMetadata``, after the window check and the task's checks,
   which judge the key's rows as the commit leaves them.

Reading version ``V`` rather than "the latest" pins what the write replaces its keys
with: the frame computes the same rows however often it is evaluated (serverless
compute refuses ``persist()``, so the checks and the write may each evaluate it), and
the version's files stay readable while the write replaces them (a commit only marks
files removed; ``VACUUM`` deletes them after the retention period). The write's own
transaction still conflicts with a commit to the run's keys made after it started
(the ``replaceWhere`` reads those partitions); a commit to the same keys between ``V``
and the write would be overwritten, which is why two runs of one key never run at once
(a backfill claims its keys before its first run).

"Update, insert and delete the rows the run did not produce" leaves exactly the run's
rows: that is ``write="replace"``, the default.

Example:
    Key ``2024-03-02`` holds orders 1 and 2; a run outputs orders 2 (changed) and 3.
    The key then holds order 1 (kept), 2 (the run's) and 3 (inserted); every other
    key's rows are untouched, and running the key again changes no row.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

from ..core.errors import OutputRejected, TaskRunError
from ..core.predicates import check_column
from .delta import delta_table_exists
from .delta_history import sql_target
from .formats import TableRef, schema_difference

WRITE_CHOICES: tuple[str, ...] = ("replace", "append_once", "upsert")
_SHOWN = 5
_KEY_ALIAS = "__dbxdec_upsert_{}"


def check_upsert(
    write: object, upsert_on: object, *, partition_column: str | None, format: str
) -> tuple[str, ...]:
    """The ``upsert_on`` columns of a ``SparkTableIoManager``, checked at definition.

    Returns ``()`` when ``write`` is not ``"upsert"`` (and ``upsert_on`` not given).

    Raises:
        ValueError: ``write`` is none of :data:`WRITE_CHOICES`; ``upsert_on`` given
            with another ``write``; ``write="upsert"`` without ``upsert_on``, with an
            empty or repeated column list, a column name that is not plain, without a
            ``partition_column``, or on parquet.
    """
    if write not in WRITE_CHOICES:
        raise ValueError(f"write must be 'replace', 'append_once' or 'upsert', got {write!r}")
    if write != "upsert":
        if upsert_on is not None:
            raise ValueError(
                f"upsert_on is for write='upsert' (write is {write!r}): add write='upsert' "
                "or drop upsert_on"
            )
        return ()
    if isinstance(upsert_on, str) or not isinstance(upsert_on, Sequence) or not upsert_on:
        raise ValueError(
            "write='upsert' needs upsert_on, a non-empty list of the columns that identify "
            f"a row (e.g. upsert_on=['order_id']), got {upsert_on!r}"
        )
    columns = tuple(check_column(c, what="upsert_on column") for c in upsert_on)
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise ValueError(f"upsert_on names {', '.join(repeated)} more than once")
    if partition_column is None:
        raise ValueError(
            "write='upsert' keeps the rows of the run's keys: it needs a partition_column"
        )
    if format == "parquet":
        raise ValueError(
            "write='upsert' needs Delta (it reads the table's version it replaces): "
            "drop format='parquet'"
        )
    return columns


def upserted(
    frame: Any,
    *,
    table: TableRef,
    replaced: str | None,
    upsert_on: Sequence[str],
    task_key: str,
) -> Any:
    """The frame an upsert writes over the run's keys: ``frame`` plus the rows of the
    table at its current version that ``replaced`` selects and whose ``upsert_on``
    values ``frame`` does not hold (just ``frame`` when the table does not exist yet).

    Args:
        frame: The task's output.
        table: The table written.
        replaced: The write's ``replaceWhere`` (the run's keys).
        upsert_on: The columns that identify a row.
        task_key: The task, for messages.

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
    current = _read_version(spark, table, _latest_version(spark, table)).where(replaced)
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
    """Refuse an output whose ``upsert_on`` values repeat: which of its rows should win
    would be the order of evaluation's choice, and a re-run could choose another."""
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


def _latest_version(spark: Any, table: TableRef) -> int:
    """The table's newest version: the first row of ``DESCRIBE HISTORY``, which lists
    operations newest first (https://docs.databricks.com/aws/en/delta/history)."""
    return int(spark.sql(f"DESCRIBE HISTORY {sql_target(table)} LIMIT 1").first()["version"])


def _read_version(spark: Any, table: TableRef, version: int) -> Any:
    """The table at ``version``: the ``versionAsOf`` reader option ("Query an older
    snapshot of a table (time travel)", https://docs.databricks.com/aws/en/delta/history),
    by folder locally and by catalog name on Databricks."""
    reader = spark.read.option("versionAsOf", int(version))
    if table.path is not None:
        return reader.format("delta").load(str(table.path))
    return reader.table(table.qualified)
