"""Quarantine: rows failing a row-level check with ``on_fail="quarantine"`` go to
``<table>__quarantine`` (the output's columns plus ``dbxdec_failed_checks``) instead of
failing the slice.

It is written after the main table committed, in a commit of its own that carries the
main commit's ``txnAppId`` and ``userMetadata`` (a retry whose main commit Delta skips
still commits a quarantine the earlier attempt missed; undo finds it as the backfill's
own), replacing the run's keys. Presence and catch-up look at the main table only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...definitions.contracts import ROWS_METRIC, Check, quarantines
from ...errors import UsageError
from ..core.errors import TaskRunError
from ..storage.delta import DeltaFormat, delta_table_exists
from ..storage.formats import TableRef, WriteRequest
from ..storage.table_name import TableName
from .checking import QUARANTINED_METRIC
from .metering import KeyedTable, Measured, table_slice_key

if TYPE_CHECKING:
    from ...definitions.contracts import OutputContext, RunEnvironment

QUARANTINE_SUFFIX = "__quarantine"
FAILED_CHECKS_COLUMN = "dbxdec_failed_checks"
_FLAG = "__dbxdec_quarantine"


def quarantine_name(table: TableName) -> TableName:
    """``cat.sch.orders`` -> ``cat.sch.orders__quarantine``."""
    return TableName(table.catalog, table.schema, f"{table.table}{QUARANTINE_SUFFIX}")


def quarantine_ref(table: TableName, environment: RunEnvironment) -> TableRef:
    """The quarantine table of ``table`` in the run's environment."""
    return quarantine_name(table).ref(environment)


def quarantining(checks: Sequence[Check]) -> list[tuple[int, Check]]:
    """The checks (with their index) whose failing rows are quarantined."""
    return [(index, check) for index, check in enumerate(checks) if quarantines(check)]


@dataclass(slots=True)
class Quarantine:
    """One write's split: the rows kept for the table and the rows quarantined."""

    manager: KeyedTable
    context: OutputContext
    kept: Any
    moved: Any
    _flagged: Any
    _persisted: bool

    @classmethod
    def split(cls, manager: KeyedTable, context: OutputContext, frame: Any) -> Quarantine | None:
        """Split ``frame`` by the quarantining checks (``None`` when there are none).

        Raises:
            UsageError: the table is not Delta.
            TaskRunError: the output already has a ``dbxdec_failed_checks`` column.
        """
        chosen = quarantining(tuple(context.checks))
        if not chosen:
            return None
        if not isinstance(manager.table_format(context.environment), DeltaFormat):
            raise UsageError(  # refused before anything is written
                f"task {context.task_key!r}: on_fail='quarantine' needs a Delta table; "
                f"{manager.table} is parquet"
            )
        if FAILED_CHECKS_COLUMN in frame.columns:
            raise TaskRunError(
                f"task {context.task_key!r}: the output has a column {FAILED_CHECKS_COLUMN!r}, "
                "which the quarantine table adds; rename it"
            )
        from pyspark.sql import functions as F

        names = [F.when(_failing(check), F.lit(check.name)) for _, check in chosen]
        flagged = frame.withColumn(_FLAG, F.concat_ws(", ", *names))
        persisted = False
        try:  # the two halves come from one evaluation, even with nondeterministic columns
            flagged = flagged.persist()
            persisted = True
        except Exception:  # serverless compute has no cache; the frame is recomputed
            pass
        kept = flagged.where(F.col(_FLAG) == "").drop(_FLAG)
        moved = flagged.where(F.col(_FLAG) != "").withColumnRenamed(_FLAG, FAILED_CHECKS_COLUMN)
        return cls(manager, context, kept, moved, flagged, persisted)

    def counted(self, measured: Measured) -> Measured:
        """``measured`` with each quarantining check's moved rows per key, counted in one
        grouped pass over the moved rows."""
        from pyspark.sql import functions as F

        manager = self.manager
        chosen = quarantining(tuple(self.context.checks))
        sums = [
            F.sum(F.when(_failing(check), 1).otherwise(0)).alias(f"c{index}")
            for index, check in chosen
        ]
        if manager.partition_column is None:
            rows = self.moved.agg(*sums).collect()
            per_key: dict[str | None, Any] = {None: rows[0]} if rows else {}
        else:
            key = table_slice_key(manager, self.context.scope)
            grouped = self.moved.groupBy(key.alias("__key")).agg(*sums).collect()
            per_key = {r["__key"]: r for r in grouped}
        out: Measured = {k: dict(v) for k, v in measured.items()}
        for key, row in per_key.items():
            values = out.setdefault(key, {ROWS_METRIC: 0})
            for index, _ in chosen:
                values[f"c{index}_{QUARANTINED_METRIC}"] = int(row[f"c{index}"] or 0)
        return out

    def commit(self) -> None:
        """Replace the run's keys in the quarantine table with the moved rows (nothing
        when the table does not exist and no row was moved).

        Raises:
            TaskRunError: Delta refused the write.
        """
        manager, context = self.manager, self.context
        environment = context.environment
        ref = quarantine_ref(manager.table, environment)
        if not delta_table_exists(environment.spark, ref) and self.moved.isEmpty():
            return
        request = WriteRequest(
            manager.partition_column,
            manager.replace_predicate(context.scope),
            (),
            manager.transaction(context),
            static_column=manager.static_column,
            metadata=manager.metadata(context),
        )
        staged = DeltaFormat().stage(self.moved, ref, partition_column=request.partition_column)
        try:
            staged.commit(request)
        finally:
            staged.discard()

    def discard(self) -> None:
        if self._persisted:
            self._persisted = False
            self._flagged.unpersist()


def _failing(check: Check) -> Any:
    condition = check.failing_rows()
    assert condition is not None  # only row-level checks quarantine (check_options)
    return condition
