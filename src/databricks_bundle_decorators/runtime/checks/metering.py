"""Measuring an output for its checks and window validation, per slice, in few Spark jobs.

Every metric is a row counter (a boolean condition counted per slice, see
:meth:`Check.counters`) plus the row count, got either by :meth:`Metering.measure` (one
grouped aggregation over the staged output) or by :meth:`Metering.observe` (run-wide
totals observed in the write's own Spark job). Totals decide one slice, or several when
every counter is 0; then the staged partitions (every row floor at most 1) or a count of
rows per key give the row counts. Stray rows or a non-zero counter across several slices
fall back to :meth:`Metering.measure`. Both evaluate the same counter expressions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...definitions.contracts import ROWS_LOWER_BOUND_METRIC, ROWS_METRIC, Check
from ..core.predicates import quote_identifier
from ..storage.dimensions import is_two_dimensional

if TYPE_CHECKING:
    from ...backfill.scope import KeyScope
    from ...definitions.contracts import OutputContext, RunEnvironment
    from ..storage.formats import TableFormat, TableRef
    from ..storage.table_name import TableName

Measured = dict[str | None, dict[str, Any]]
"""Metrics per slice key (as a string; ``None``: unpartitioned output or a null key)."""

AT_LEAST_ONE = 1
"""The row count recorded for a key known to have rows when no check needs the exact
count (every floor is at most 1, so the verdicts are the same)."""
STRAY_METRIC = "__stray"
"""Observed rows whose slice is not one of the run's keys (a null slice included)."""
_HELPER = "__dbxdec_"
_SLICE = "__dbxdec_slice"
_SLICE_OUT = "__dbxdec_slice_key"


class KeyedTable(Protocol):
    """A Spark table partitioned by backfill key, as its IoManager
    (:class:`~..io.spark_table.SparkTableIoManager`) describes it to the checks."""

    @property
    def table(self) -> TableName: ...
    @property
    def partition_column(self) -> str | None: ...
    @property
    def static_column(self) -> str | None: ...
    def table_format(self, environment: RunEnvironment) -> TableFormat: ...
    def table_ref(self, environment: RunEnvironment) -> TableRef: ...
    def replace_predicate(self, scope: KeyScope) -> str | None: ...
    def transaction(self, context: OutputContext) -> tuple[str, int] | None: ...
    def metadata(self, context: OutputContext) -> str | None: ...


def table_slice_key(table: KeyedTable, scope: KeyScope) -> Any:
    """The slice of each row of ``table`` as a string column (``STATIC:TIME`` when
    ``scope``'s keys are two-dimensional)."""
    two = is_two_dimensional(str(table.table), table.static_column, scope)
    static = table.static_column if two else None
    return Metering((), table.partition_column, {}, static).slice_key()


@dataclass(frozen=True, slots=True)
class Metering:
    """The metrics of one write: row count, the checks' counters (prefixed
    ``c<index>_``) and ``extra`` counters, per ``slice_column`` (``None``: one slice), per
    ``STATIC:TIME`` pair with a ``static_column``."""

    checks: tuple[Check, ...]
    slice_column: str | None
    extra: Mapping[str, Any] = field(default_factory=dict)
    static_column: str | None = None

    def slice_key(self) -> Any:
        """The slice of each row as a string column (the partition value, or
        ``STATIC:TIME`` for a two-dimensional table)."""
        from pyspark.sql import functions as F

        assert self.slice_column is not None
        key = F.col(quote_identifier(self.slice_column)).cast("string")
        if self.static_column is None:
            return key
        static = F.col(quote_identifier(self.static_column)).cast("string")
        return F.concat_ws(MULTI_SEPARATOR, static, key)

    @property
    def presence_decides(self) -> bool:
        """Whether, with every counter 0, knowing which slices have rows decides every
        check (each check's row floor is known and at most 1)."""
        floors = [check.row_floor for check in self.checks]
        return all(floor is not None and floor <= 1 for floor in floors)

    @property
    def countable(self) -> bool:
        """Whether every metric is a row count (a check's own aggregates need
        :meth:`measure`)."""
        return not any(check.metrics(f"c{i}_") for i, check in enumerate(self.checks))

    def prepare(self, frame: Any) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
        """``frame`` with the counters that compare rows (windows) as helper columns, the
        aggregate of every metric over it, and the helper columns' names."""
        from pyspark.sql import functions as F

        inline: dict[str, Any] = {}
        windowed: dict[str, Any] = {}
        # a check groups by one slice column: a two-dimensional slice is a helper column
        two_dimensional = self.static_column is not None and any(
            check.needs_grouping for check in self.checks
        )
        slice_name = _SLICE if two_dimensional else self.slice_column
        for index, check in enumerate(self.checks):
            target = windowed if check.needs_grouping else inline
            target.update(check.counters(f"c{index}_", slice_name))
        inline.update(self.extra)
        helpers = {f"{_HELPER}{name}": column for name, column in windowed.items()}
        if two_dimensional:
            frame = frame.select("*", self.slice_key().alias(_SLICE))
        if helpers:
            frame = frame.select("*", *[column.alias(n) for n, column in helpers.items()])
        if two_dimensional:
            helpers[_SLICE] = None
        counters = {
            **inline,
            **{name: F.col(quote_identifier(f"{_HELPER}{name}")) for name in windowed},
        }
        aggregates: dict[str, Any] = {ROWS_METRIC: F.count(F.lit(1))}
        aggregates.update({name: F.count_if(column) for name, column in counters.items()})
        for index, check in enumerate(self.checks):
            aggregates.update(check.metrics(f"c{index}_"))
        return frame, aggregates, tuple(helpers)

    def measure(self, frame: Any) -> Measured:
        """Every metric per slice, in one grouped aggregation over ``frame``."""
        prepared, aggregates, _ = self.prepare(frame)
        columns = [expr.alias(name) for name, expr in aggregates.items()]
        if self.slice_column is None:
            rows = prepared.agg(*columns).collect()
            return {None: rows[0].asDict()} if rows else {}
        key = self.slice_key().alias(_SLICE_OUT)
        measured: Measured = {}
        for row in prepared.groupBy(key).agg(*columns).collect():
            values = row.asDict()
            measured[values.pop(_SLICE_OUT)] = values
        return measured

    def observe(self, frame: Any, keys: Sequence[str] | None) -> PendingMetrics | None:
        """``frame`` with the run-wide totals attached as an observation, to be written
        instead of it; ``None`` when not countable. Rows outside ``keys`` (the run's keys,
        ``None`` when unknown or unpartitioned) count as stray."""
        if not self.countable:
            return None
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        prepared, aggregates, helpers = self.prepare(frame)
        if self.slice_column is not None and keys is not None:
            key = self.slice_key()
            aggregates[STRAY_METRIC] = F.count_if(~F.coalesce(key.isin(list(keys)), F.lit(False)))
        observation = Observation(f"dbxdec-{uuid.uuid4().hex}")
        observed = prepared.observe(observation, *[c.alias(n) for n, c in aggregates.items()])
        if helpers:
            observed = observed.drop(*helpers)
        return PendingMetrics(self, observed, observation, None if keys is None else tuple(keys))

    def row_counts(self, frame: Any) -> Measured:
        """Rows per slice of ``frame``, reading only the slice column."""
        from pyspark.sql import functions as F

        assert self.slice_column is not None
        key = self.slice_key().alias(_SLICE_OUT)
        rows = frame.groupBy(key).agg(F.count(F.lit(1)).alias(ROWS_METRIC)).collect()
        return {row[_SLICE_OUT]: {ROWS_METRIC: int(row[ROWS_METRIC])} for row in rows}


@dataclass(frozen=True, slots=True)
class PendingMetrics:
    """Totals observed while ``frame`` (the output with ``observation`` attached) is
    written; ``keys``: the run's keys, when the output is partitioned by them."""

    metering: Metering
    frame: Any
    observation: Any
    keys: tuple[str, ...] | None

    def resolve(
        self,
        staged: Callable[[], Any],
        present: Callable[[], frozenset[str] | None] = lambda: None,
    ) -> Measured | None:
        """Per-slice metrics after the write, or ``None`` when the totals do not decide
        them (then measure the staged output). ``present`` returns the keys with staged
        rows (``None``: unknown), ``staged`` the written rows, to count rows per slice."""
        totals = dict(self.observation.get)
        stray = int(totals.pop(STRAY_METRIC, 0) or 0)
        rows = int(totals.get(ROWS_METRIC) or 0)
        slice_column = self.metering.slice_column
        if slice_column is None:
            return {None: totals}
        if stray:
            return None
        if self.keys is not None and len(self.keys) == 1:
            return {self.keys[0]: totals} if rows else {}
        if any(value for name, value in totals.items() if name != ROWS_METRIC):
            return None
        if not rows:
            return {}
        zeros = {name: 0 for name in totals if name != ROWS_METRIC}
        keys = present() if self.keys is not None and self.metering.presence_decides else None
        if keys is not None:
            at_least = {ROWS_METRIC: AT_LEAST_ONE, ROWS_LOWER_BOUND_METRIC: 1}
            return {key: {**at_least, **zeros} for key in keys}
        counted = self.metering.row_counts(staged())
        return {key: {**values, **zeros} for key, values in counted.items()}
