"""How a run changed its keys in the tables it wrote (``dbxdec backfill --diff-gate``):
per key, row counts and each table's declared aggregates (``gate=``) at the version
before the backfill's first commit and at the run's commit (any repair of the run on
Databricks), by Delta time travel (https://docs.databricks.com/aws/en/delta/history).
A key without rows before is compared by row count only; a table the run did not commit
to is left out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...backfill.wire.orders import ROWS_MEASURE
from ...backfill.wire.orders import KeyChange as KeyChange
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError
from ..checks.gate_aggregates import GateAggregate
from ..checks.metering import Metering
from ..core.predicates import keys_predicate
from ..storage.delta import DeltaFormat
from ..storage.delta_history import Commit, read_commits
from ..storage.formats import TableRef
from ..storage.table_name import split_metadata
from .outputs import TableOutput, table_outputs


def change_versions(
    commits: Sequence[Commit], run_id: str, backfill_id: str
) -> tuple[int | None, int] | None:
    """``(before, after)`` versions for a run's keys (see the module docs); ``None``
    when the run did not commit; ``before`` is ``None`` when the table did not exist.

    Example:
        >>> history = [Commit(0, "WRITE", "dbxdec:j:t:1"),
        ...            Commit(1, "WRITE", "dbxdec:j:t:2:backfill=b"),
        ...            Commit(2, "WRITE", "dbxdec:j:t:3:backfill=b")]
        >>> change_versions(history, "3", "b"), change_versions(history, "9", "b")
        ((0, 2), None)
    """
    repair = re.compile(rf"{re.escape(run_id)}(-[0-9]+)?")  # a repair of the run on Databricks
    own, ours = [], []
    for commit in commits:
        if not commit.metadata:
            continue
        identity, backfill = split_metadata(commit.metadata)
        if repair.fullmatch(identity.rpartition(":")[2]):
            own.append(commit.version)
        if backfill_id and backfill == backfill_id:
            ours.append(commit.version)
    if not own:
        return None
    first = min([*ours, *own])
    return (first - 1 if first > 0 else None), own[-1]


def _measures(
    spark: Any,
    ref: TableRef,
    version: int,
    key_column: Any,
    where: str | None,
    aggregates: Sequence[GateAggregate],
) -> dict[str, dict[str, float | None]]:
    """Per key with rows at ``version``: its row count and each aggregate, by name."""
    from pyspark.sql import functions as F

    if ref.path is not None:
        frame = spark.read.format("delta").option("versionAsOf", version).load(str(ref.path))
    else:
        frame = spark.read.option("versionAsOf", version).table(ref.qualified)
    if where is not None:
        frame = frame.where(where)
    columns = [F.count(F.lit(1)).alias("rows")]
    columns += [a.column_expression().alias(f"a{i}") for i, a in enumerate(aggregates)]
    missing = [a.name for a in aggregates if a.column not in frame.columns]
    if missing:
        raise UsageError(
            f"table {ref.name} (version {version}) has no column for gate aggregate "
            f"{', '.join(missing)}; its columns: {', '.join(frame.columns)}"
        )
    rows = frame.groupBy(key_column.alias("__dbxdec_key")).agg(*columns).collect()
    found: dict[str, dict[str, float | None]] = {}
    for row in rows:
        if row[0] is None:
            continue
        values: dict[str, float | None] = {ROWS_MEASURE: int(row[1])}
        for i, aggregate in enumerate(aggregates):
            values[aggregate.name] = aggregate.value(row[2 + i])
        found[str(row[0])] = values
    return found


def gated_tables(
    job: JobDefinition, environment: RunEnvironment, tasks: Collection[str] | None = None
) -> dict[str, TableOutput]:
    """The partitioned Delta tables the job (or ``tasks``) writes, by name."""
    found, _ = table_outputs(
        job,
        environment,
        tasks,
        other="is not a Spark table",
        unusable=lambda manager: (
            None
            if manager.partition_column is not None
            and isinstance(manager.table_format(environment), DeltaFormat)
            else "is not a partitioned Delta table"
        ),
    )
    return found


def measured_tables(
    job: JobDefinition,
    environment: RunEnvironment,
    keys: Collection[str],
    *,
    run_id: str,
    backfill_id: str,
    tasks: Collection[str] | None = None,
) -> list[tuple[TableOutput, list[KeyChange] | None]]:
    """Each partitioned Delta table the job (or ``tasks``) writes, with how run
    ``run_id`` changed ``keys`` in it (``None``: the run did not commit there)."""
    found = gated_tables(job, environment, tasks)
    spark = environment.spark if found else None
    return [
        (output, _table_changes(spark, output, keys, run_id, backfill_id))
        for output in found.values()
    ]


def _table_changes(
    spark: Any, output: TableOutput, keys: Collection[str], run_id: str, backfill_id: str
) -> list[KeyChange] | None:
    manager = output.manager
    assert manager.partition_column is not None
    versions = change_versions(read_commits(spark, output.ref), run_id, backfill_id)
    if versions is None:
        return None
    before_version, after_version = versions
    two = manager.static_column is not None and any(MULTI_SEPARATOR in k for k in keys)
    metering = Metering((), manager.partition_column, {}, manager.static_column if two else None)
    where = None if two else keys_predicate(manager.partition_column, sorted(keys))

    def measures(version: int | None) -> dict[str, dict[str, float | None]]:
        if version is None:
            return {}
        return _measures(spark, output.ref, version, metering.slice_key(), where, manager.gate)

    after, before = measures(after_version), measures(before_version)
    changes: list[KeyChange] = []
    for key in sorted(keys):
        was, now = before.get(key), after.get(key, {})
        rows_before = None if was is None else was[ROWS_MEASURE]
        changes.append(
            KeyChange(output.ref.name, key, rows_before, now.get(ROWS_MEASURE, 0), *versions)
        )
        if was is not None:  # absent before: the row count reports the key
            changes += [
                KeyChange(output.ref.name, key, was[a.name], now.get(a.name), *versions, a.name)
                for a in manager.gate
            ]
    return changes


def key_changes(
    job: JobDefinition,
    environment: RunEnvironment,
    keys: Collection[str],
    *,
    run_id: str,
    backfill_id: str,
) -> list[KeyChange]:
    """How run ``run_id`` changed ``keys`` in each partitioned Delta table the job writes:
    per table and key, the row count, then each declared aggregate."""
    measured = measured_tables(job, environment, keys, run_id=run_id, backfill_id=backfill_id)
    return [change for _, changes in measured for change in changes or []]
