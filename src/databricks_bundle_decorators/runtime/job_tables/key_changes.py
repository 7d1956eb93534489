"""How a run changed its keys in the tables it wrote: row counts per key before and
after, by Delta time travel (the measurement behind ``dbxdec backfill --diff-gate``).

For each partitioned Delta output table of the job, the run's commit is found in the
table's history by the run identity its ``userMetadata`` carries (see
:mod:`..storage.table_name`). The "before" version is the one before the backfill's first
commit to the table (for a backfill's first run, the version before the run's own
commit; a later rerun of a canary is still compared with the table as it was before
the backfill); the "after" version is the run's commit. Both are read with Delta's
``versionAsOf`` (time travel: https://docs.databricks.com/aws/en/delta/history), rows
counted per key with one grouped read each. A key the table had no row for before has
``before=None``. A table the run did not commit to is left out.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...definitions import JobDefinition
from ..checks.metering import Metering
from ..core.context import RunEnvironment
from ..core.predicates import keys_predicate
from ..storage.delta import DeltaFormat
from ..storage.delta_history import Commit, read_commits
from ..storage.formats import TableRef
from ..storage.table_name import split_metadata
from .outputs import table_outputs


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One key of one table: rows before the backfill wrote it and after the run did.

    Attributes:
        table: The table.
        key: The key (``STATIC:TIME`` for a two-dimensional table).
        before: Rows at ``before_version`` (``None``: the key had none, or the table
            did not exist).
        after: Rows at ``after_version``, the run's commit.
    """

    table: str
    key: str
    before: int | None
    after: int
    before_version: int | None
    after_version: int

    @property
    def moved(self) -> float | None:
        """The relative change (``-0.5``: halved); ``None`` when the key had no rows before."""
        if not self.before:
            return None
        return (self.after - self.before) / self.before

    def describe(self) -> str:
        """``main.s.t key 2024-01-05: 100 -> 50 rows (-50%, versions 3 -> 5)``."""
        if self.before is None:
            where = (
                "the table did not exist"
                if self.before_version is None
                else f"version {self.before_version}"
            )
            return f"{self.table} key {self.key}: no rows before ({where}), {self.after} now"
        moved = self.moved
        pct = "" if moved is None else f" ({moved:+.0%}"
        return (
            f"{self.table} key {self.key}: {self.before} -> {self.after} rows{pct}, "
            f"versions {self.before_version} -> {self.after_version})"
        )


def _run_of(metadata: str | None) -> tuple[str, str] | None:
    """``(run id, backfill id)`` of a dbxdec commit's ``userMetadata``."""
    if not metadata:
        return None
    identity, backfill_id = split_metadata(metadata)
    return identity.rpartition(":")[2], backfill_id


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
    own = [c.version for c, found in runs if found is not None and found[0] == run_id]
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


def _counts(
    spark: Any, ref: TableRef, version: int, key_column: Any, where: str | None
) -> dict[str, int]:
    if ref.path is not None:
        frame = spark.read.format("delta").option("versionAsOf", version).load(str(ref.path))
    else:
        frame = spark.read.option("versionAsOf", version).table(ref.qualified)
    if where is not None:
        frame = frame.where(where)
    rows = frame.select(key_column.alias("key")).groupBy("key").count().collect()
    return {str(r[0]): int(r[1]) for r in rows if r[0] is not None}


def key_changes(
    job: JobDefinition,
    environment: RunEnvironment,
    keys: Collection[str],
    *,
    run_id: str,
    backfill_id: str,
) -> list[KeyChange]:
    """How run ``run_id`` changed ``keys`` in each partitioned Delta table the job writes."""
    found, _ = table_outputs(
        job,
        environment,
        None,
        other="is not a Spark table",
        unusable=lambda manager: (
            None
            if manager.partition_column is not None
            and isinstance(manager.table_format(environment), DeltaFormat)
            else "is not a partitioned Delta table"
        ),
    )
    changes: list[KeyChange] = []
    spark = environment.spark if found else None
    for output in found.values():
        manager = output.manager
        assert manager.partition_column is not None
        versions = change_versions(read_commits(spark, output.ref), run_id, backfill_id)
        if versions is None:
            continue
        before_version, after_version = versions
        two = manager.static_column is not None and any(MULTI_SEPARATOR in k for k in keys)
        metering = Metering(
            (), manager.partition_column, {}, manager.static_column if two else None
        )
        where = None if two else keys_predicate(manager.partition_column, sorted(keys))
        after = _counts(spark, output.ref, after_version, metering.slice_key(), where)
        before = (
            {}
            if before_version is None
            else _counts(spark, output.ref, before_version, metering.slice_key(), where)
        )
        for key in sorted(keys):
            changes.append(
                KeyChange(
                    output.ref.name,
                    key,
                    before.get(key),
                    after.get(key, 0),
                    before_version,
                    after_version,
                )
            )
    return changes
