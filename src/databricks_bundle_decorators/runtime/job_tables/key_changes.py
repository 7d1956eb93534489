"""How a run changed its keys in the tables it wrote: row counts per key before and
after, and the aggregates each table declares (``gate=``, see :mod:`..checks.gate_aggregates`),
by Delta time travel (the measurement behind ``dbxdec backfill --diff-gate``).

For each partitioned Delta output table of the job, the run's commit is found in the
table's history by the run identity its ``userMetadata`` carries (see
:mod:`..storage.table_name`). The "before" version is the one before the backfill's first
commit to the table (for a backfill's first run, the version before the run's own
commit; a later rerun of a canary is still compared with the table as it was before
the backfill); the "after" version is the run's commit. Both are read with Delta's
``versionAsOf`` (time travel: https://docs.databricks.com/aws/en/delta/history), rows
counted and aggregates computed per key with one grouped read each. A key the table had
no row for before has ``before=None`` (its aggregates are not compared: the row count
already reports the key). A table the run did not commit to is left out.

On Databricks a run's commits carry ``<job run id>-<repair count>``
(:data:`~...backfill.wire.RUN_ID_VALUE`) while the launcher knows the job run id: a
commit of any repair of the run is the run's.
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


def _run_of(metadata: str | None) -> tuple[str, str] | None:
    """``(run id, backfill id)`` of a dbxdec commit's ``userMetadata``."""
    if not metadata:
        return None
    identity, backfill_id = split_metadata(metadata)
    return identity.rpartition(":")[2], backfill_id


def _is_run(committed: str, run_id: str) -> bool:
    """Whether a commit's run id is ``run_id``'s, or a repair of it on Databricks."""
    return (
        committed == run_id or re.fullmatch(rf"{re.escape(run_id)}-[0-9]+", committed) is not None
    )


def change_versions(
    commits: Sequence[Commit], run_id: str, backfill_id: str
) -> tuple[int | None, int] | None:
    """``(before, after)`` versions for a run's keys (see the module docs); ``None``
    when the run did not commit. ``before`` is ``None`` when the table did not exist.

    Example:
        >>> history = [Commit(0, "WRITE", "dbxdec:j:t:1"),
        ...            Commit(1, "WRITE", "dbxdec:j:t:2:backfill=b"),
        ...            Commit(2, "WRITE", "dbxdec:j:t:3:backfill=b")]
        >>> change_versions(history, "3", "b"), change_versions(history, "9", "b")
        ((0, 2), None)
    """
    runs = [(c, _run_of(c.metadata)) for c in commits]
    own = [c.version for c, found in runs if found is not None and _is_run(found[0], run_id)]
    if not own:
        return None
    after = own[-1]
    ours = [
        c.version
        for c, found in runs
        if found is not None and backfill_id and found[1] == backfill_id
    ]
    first = min([*ours, *own])
    return (first - 1 if first > 0 else None), after


def _measures(
    spark: Any,
    ref: TableRef,
    version: int,
    key_column: Any,
    where: str | None,
    aggregates: Sequence[GateAggregate],
) -> dict[str, dict[str, float | None]]:
    """Per key that has rows at ``version``: its row count and each aggregate, by name."""
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
    """The partitioned Delta tables the job (or ``tasks``) writes, by name: the tables
    the diff gate measures."""
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
    gate = manager.gate
    after = _measures(spark, output.ref, after_version, metering.slice_key(), where, gate)
    before = (
        {}
        if before_version is None
        else _measures(spark, output.ref, before_version, metering.slice_key(), where, gate)
    )
    changes: list[KeyChange] = []
    for key in sorted(keys):
        was, now = before.get(key), after.get(key, {})
        rows_before = None if was is None else was[ROWS_MEASURE]
        rows_after = now.get(ROWS_MEASURE, 0)
        name = output.ref.name
        changes.append(KeyChange(name, key, rows_before, rows_after, before_version, after_version))
        if was is None:  # absent before: the row count reports the key
            continue
        for aggregate in gate:
            changes.append(
                KeyChange(
                    name,
                    key,
                    was[aggregate.name],
                    now.get(aggregate.name),
                    before_version,
                    after_version,
                    aggregate.name,
                )
            )
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
    per table and key, the row count, then each declared aggregate (see the module docs)."""
    measured = measured_tables(job, environment, keys, run_id=run_id, backfill_id=backfill_id)
    return [change for _, changes in measured for change in changes or []]
