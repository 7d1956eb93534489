"""The per-slice checks dbxdec ships, on Spark DataFrames (the :class:`Check` contract is
declared with the definitions; :mod:`.checking` judges them).

Each check contributes row counters (boolean conditions counted per slice), all counted
in one pass with the window validation (:mod:`.metering`). A check holds per slice: a
ranged run of 30 keys checks each key, and a key with no rows is a slice with 0 rows.

Example:
    >>> from databricks_bundle_decorators import task
    >>> from databricks_bundle_decorators.io_managers import SparkTableIoManager
    >>> @task(
    ...     io_manager=SparkTableIoManager("main.sales.clean", partition_column="event_date"),
    ...     checks=[MinRowCount(100), MaxNullFraction("customer_id", 0.01), Unique("order_id"),
    ...             Expect("amount >= 0")],
    ... )
    ... def clean(raw): ...
    >>> [check.name for check in clean.checks]  # doctest: +NORMALIZE_WHITESPACE
    ['min_row_count(100)', 'max_null_fraction(customer_id, 0.01)', 'unique(order_id)',
     'expect(amount >= 0)']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...definitions.contracts import ROWS_LOWER_BOUND_METRIC, OnFail, Severity, check_options
from ...definitions.contracts import ROWS_METRIC as ROWS_METRIC
from ...definitions.contracts import Check as Check
from ...errors import counted
from ..core.predicates import check_column
from .baselines import BaselineSpec, baseline_in


def _rows(values: Mapping[str, Any]) -> int:
    return int(values.get(ROWS_METRIC) or 0)


@dataclass(frozen=True, slots=True)
class MinRowCount(Check):
    """Each slice has at least ``min_rows`` rows (a floor against silent empty loads)."""

    min_rows: int
    severity: Severity = field(default="error", kw_only=True)
    on_fail: OnFail = field(default="fail", kw_only=True)

    def __post_init__(self) -> None:
        check_options(self, self.severity, self.on_fail)
        if isinstance(self.min_rows, bool) or not isinstance(self.min_rows, int):
            raise ValueError(f"MinRowCount needs a whole number, got {self.min_rows!r}")
        if self.min_rows < 0:
            raise ValueError(f"MinRowCount must be >= 0, got {self.min_rows}")

    @property
    def name(self) -> str:
        return f"min_row_count({self.min_rows})"

    @property
    def row_floor(self) -> int | None:
        return self.min_rows

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        rows = _rows(values)
        return (
            f"{counted(rows, 'row')}, expected at least {self.min_rows}"
            if rows < self.min_rows
            else None
        )

    def measurement(self, values: Mapping[str, Any], prefix: str) -> tuple[float | None, str]:
        exact = not values.get(ROWS_LOWER_BOUND_METRIC)
        return (float(_rows(values)) if exact else None), f">= {self.min_rows}"


@dataclass(frozen=True, slots=True)
class MaxNullFraction(Check):
    """At most ``max_fraction`` (0..1) of a slice's rows have ``column`` null."""

    column: str
    max_fraction: float
    severity: Severity = field(default="error", kw_only=True)
    on_fail: OnFail = field(default="fail", kw_only=True)

    def __post_init__(self) -> None:
        check_column(self.column)
        if isinstance(self.max_fraction, bool) or not isinstance(self.max_fraction, (int, float)):
            raise ValueError(f"MaxNullFraction needs a number, got {self.max_fraction!r}")
        if not 0 <= self.max_fraction <= 1:
            raise ValueError(f"MaxNullFraction must be within 0..1, got {self.max_fraction}")
        check_options(self, self.severity, self.on_fail)

    @property
    def name(self) -> str:
        return f"max_null_fraction({self.column}, {self.max_fraction:g})"

    @property
    def row_floor(self) -> int | None:
        return 0

    def counters(self, prefix: str, slice_column: str | None) -> dict[str, Any]:
        from pyspark.sql import functions as F

        return {f"{prefix}nulls": F.col(self.column).isNull()}

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        rows = _rows(values)
        nulls = int(values.get(f"{prefix}nulls") or 0)
        if rows == 0 or nulls / rows <= self.max_fraction:
            return None
        return f"{nulls} of {rows} rows ({nulls / rows:.1%}) have {self.column} null"

    def measurement(self, values: Mapping[str, Any], prefix: str) -> tuple[float | None, str]:
        rows, nulls = _rows(values), int(values.get(f"{prefix}nulls") or 0)
        if rows and values.get(ROWS_LOWER_BOUND_METRIC) and nulls:
            return None, f"<= {self.max_fraction:g}"
        return (nulls / rows if rows else 0.0), f"<= {self.max_fraction:g}"


@dataclass(frozen=True, slots=True, init=False)
class Unique(Check):
    """No two rows of a slice share the same values of ``columns`` (nulls compare equal)."""

    columns: tuple[str, ...]
    severity: Severity
    on_fail: OnFail
    needs_grouping: ClassVar[bool] = True

    def __init__(
        self, *columns: str, severity: Severity = "error", on_fail: OnFail = "fail"
    ) -> None:
        if not columns:
            raise ValueError("Unique needs at least one column")
        for column in columns:
            check_column(column)
        object.__setattr__(self, "columns", tuple(columns))
        object.__setattr__(self, "severity", severity)
        object.__setattr__(self, "on_fail", on_fail)
        check_options(self, severity, on_fail)

    @property
    def name(self) -> str:
        return f"unique({', '.join(self.columns)})"

    @property
    def row_floor(self) -> int | None:
        return 0

    def counters(self, prefix: str, slice_column: str | None) -> dict[str, Any]:
        """Rows after the first of each group of equal ``columns`` within the slice: their
        count is the slice's rows minus its distinct values."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        group = [*([slice_column] if slice_column is not None else []), *self.columns]
        window = Window.partitionBy(*[F.col(c) for c in group]).orderBy(
            *[F.col(c) for c in self.columns]
        )
        return {f"{prefix}duplicates": F.row_number().over(window) > 1}

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        duplicates = int(values.get(f"{prefix}duplicates") or 0)
        if duplicates <= 0:
            return None
        return f"{duplicates} duplicate rows on ({', '.join(self.columns)})"

    def measurement(self, values: Mapping[str, Any], prefix: str) -> tuple[float | None, str]:
        return float(int(values.get(f"{prefix}duplicates") or 0)), "= 0"


@dataclass(frozen=True, slots=True)
class Expect(Check):
    """Every row satisfies ``condition``, a Spark SQL boolean expression or a ``Column``.

    A row where the condition is null counts as failing. ``max_failing`` tolerates a
    few bad rows per slice. It is the row-level check: with ``on_fail="quarantine"``
    the failing rows go to ``<table>__quarantine`` and the others are written (see
    :mod:`.quarantine`).
    """

    condition: Any
    label: str | None = None
    max_failing: int = 0
    severity: Severity = field(default="error", kw_only=True)
    on_fail: OnFail = field(default="fail", kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.condition, str) and type(self.condition).__name__ != "Column":
            raise ValueError(
                "Expect needs a SQL boolean expression string or a pyspark Column, got "
                f"{type(self.condition).__name__}"
            )
        if isinstance(self.max_failing, bool) or not isinstance(self.max_failing, int):
            raise ValueError(f"Expect max_failing must be a whole number, got {self.max_failing!r}")
        check_options(self, self.severity, self.on_fail)

    @property
    def name(self) -> str:
        text = self.label or (
            self.condition if isinstance(self.condition, str) else str(self.condition)
        )
        return f"expect({text})"

    @property
    def row_floor(self) -> int | None:
        return 0

    def counters(self, prefix: str, slice_column: str | None) -> dict[str, Any]:
        return {f"{prefix}failing": self.failing_rows()}

    def failing_rows(self) -> Any:
        from pyspark.sql import functions as F

        condition = F.expr(self.condition) if isinstance(self.condition, str) else self.condition
        return ~F.coalesce(condition, F.lit(False))

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        failing = int(values.get(f"{prefix}failing") or 0)
        if failing <= self.max_failing:
            return None
        return f"{failing} of {_rows(values)} rows do not satisfy it"

    def measurement(self, values: Mapping[str, Any], prefix: str) -> tuple[float | None, str]:
        return float(int(values.get(f"{prefix}failing") or 0)), f"<= {self.max_failing}"


@dataclass(frozen=True, slots=True)
class FrameCheck(Check):
    """A user function over the whole output frame: return ``True`` (or ``None``) to pass,
    ``False`` or a message to fail. It runs once per write, on every written key."""

    fn: Callable[[Any], bool | str | None]
    label: str | None = None
    severity: Severity = field(default="error", kw_only=True)
    on_fail: OnFail = field(default="fail", kw_only=True)

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise ValueError(f"FrameCheck needs a callable, got {type(self.fn).__name__}")
        check_options(self, self.severity, self.on_fail)

    @property
    def name(self) -> str:
        return f"frame_check({self.label or getattr(self.fn, '__name__', 'fn')})"

    @property
    def row_floor(self) -> int | None:
        return 0

    def frame_failure(self, frame: Any) -> str | None:
        verdict = self.fn(frame)
        if verdict is None or verdict is True:
            return None
        return verdict if isinstance(verdict, str) and verdict else "returned False"


@dataclass(frozen=True, slots=True)
class RowCountWithin(Check):
    """Each slice's row count is within ``pct`` percent of its baseline: a statistic of
    the row counts of its committed neighbours in the same table (see :mod:`.baselines`).

    ``baseline`` is ``<median|mean>_<prev|next|around>_<n>`` (default ``median_prev_7``).
    A slice with fewer committed neighbours than ``n`` passes, its result saying
    ``no baseline: ...``; a failure names the neighbours and their counts. It needs a
    :class:`~..io.spark_table.SparkTableIoManager` output with a ``partition_column``
    (elsewhere every slice has no baseline).

    Example:
        >>> RowCountWithin(20).name
        'row_count_within(20%, median_prev_7)'
    """

    pct: float
    baseline: str = "median_prev_7"
    severity: Severity = field(default="error", kw_only=True)
    on_fail: OnFail = field(default="fail", kw_only=True)

    def __post_init__(self) -> None:
        if isinstance(self.pct, bool) or not isinstance(self.pct, (int, float)) or self.pct < 0:
            raise ValueError(f"RowCountWithin needs a percentage >= 0, got {self.pct!r}")
        BaselineSpec.parse(self.baseline)
        check_options(self, self.severity, self.on_fail)

    @property
    def name(self) -> str:
        return f"row_count_within({self.pct:g}%, {self.baseline})"

    @property
    def baseline_spec(self) -> BaselineSpec:
        return BaselineSpec.parse(self.baseline)

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        baseline = baseline_in(values, self.baseline_spec)
        expected = None if baseline is None else baseline.value
        if baseline is None or expected is None:
            return None
        rows = _rows(values)
        if expected == 0:
            moved = 0.0 if rows == 0 else float("inf")
        else:
            moved = abs(rows - expected) / expected
        if moved * 100 <= self.pct:
            return None
        way = "above" if rows > expected else "below"
        off = "" if expected == 0 else f"{moved:.0%} "
        return (
            f"{rows} rows, {off}{way} the baseline {expected:g} ({baseline.describe()}); "
            f"allowed within {self.pct:g}%"
        )

    def measurement(self, values: Mapping[str, Any], prefix: str) -> tuple[float | None, str]:
        return float(_rows(values)), f"within {self.pct:g}% of {self.baseline}"

    def passing_note(self, values: Mapping[str, Any]) -> str:
        """``no baseline: ...`` when the slice had too few committed neighbours."""
        baseline = baseline_in(values, self.baseline_spec)
        if baseline is None:
            return f"no baseline: the output is not a partitioned table ({self.baseline})"
        return baseline.missing
