"""Per-slice checks on a task's output, evaluated before the write commits.

Each check contributes row counters: boolean conditions whose metric, per slice, is the
number of rows where they hold (``Unique`` counts the rows that repeat an earlier row of
the slice). All checks of a task and the output's window validation are counted
together (see :mod:`.metering`), so a check costs no pass of its own over the data. A
check holds per slice: a ranged run of 30 keys checks each of the 30 keys, and a key
with no rows counts as a slice with 0 rows.

Example:
    >>> @task(
    ...     io_manager=SparkTableIoManager("main.sales.clean", partition_column="event_date"),
    ...     checks=[MinRowCount(100), MaxNullFraction("customer_id", 0.01), Unique("order_id"),
    ...             Expect("amount >= 0")],
    ... )
    ... def clean(raw): ...
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .predicates import check_column

ROWS_METRIC = "__rows"


class Check(ABC):
    """A condition each slice of a task's output must meet before it is written."""

    needs_grouping: ClassVar[bool] = False
    """Whether the counters compare rows with each other (a window over the slice and
    some columns): they are computed as helper columns first, which shuffles by those
    columns unless the output is already partitioned by them."""

    @property
    @abstractmethod
    def name(self) -> str:
        """How messages name the check, e.g. ``min_row_count(100)``."""

    def counters(self, prefix: str, slice_column: str | None) -> dict[str, Any]:
        """Boolean ``Column``s by unique metric name; a metric's value for a slice is the
        number of the slice's rows where its condition is true (null counts as false).

        ``failure`` must pass a slice whose counters are all 0 whatever its row count
        allows, so a zero total over a run proves every key of the run (see
        :mod:`.metering`). ``slice_column`` is the partition column (``None``: one slice).
        """
        return {}

    def metrics(self, prefix: str) -> dict[str, Any]:
        """Other aggregate ``Column``s per slice, for checks that need more than counts
        (they are computed in a grouped pass over the staged output)."""
        return {}

    @property
    def row_floor(self) -> int | None:
        """The fewest rows a slice whose counters are all 0 needs to pass, when that is
        all the verdict depends on; ``None`` when the check needs the exact row count.
        With floors of at most 1, knowing which keys have rows decides every key."""
        return None

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        """Why the slice fails (``values`` holds the metrics and ``__rows``), or ``None``."""
        return None

    def frame_failure(self, frame: Any) -> str | None:
        """Why the whole output fails, for checks that need the frame itself."""
        return None


def _rows(values: Mapping[str, Any]) -> int:
    return int(values.get(ROWS_METRIC) or 0)


@dataclass(frozen=True, slots=True)
class MinRowCount(Check):
    """Each slice has at least ``min_rows`` rows (a floor against silent empty loads)."""

    min_rows: int

    def __post_init__(self) -> None:
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
        return f"{rows} rows, expected at least {self.min_rows}" if rows < self.min_rows else None


@dataclass(frozen=True, slots=True)
class MaxNullFraction(Check):
    """At most ``max_fraction`` (0..1) of a slice's rows have ``column`` null."""

    column: str
    max_fraction: float

    def __post_init__(self) -> None:
        check_column(self.column)
        if isinstance(self.max_fraction, bool) or not isinstance(self.max_fraction, (int, float)):
            raise ValueError(f"MaxNullFraction needs a number, got {self.max_fraction!r}")
        if not 0 <= self.max_fraction <= 1:
            raise ValueError(f"MaxNullFraction must be within 0..1, got {self.max_fraction}")

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


@dataclass(frozen=True, slots=True, init=False)
class Unique(Check):
    """No two rows of a slice share the same values of ``columns`` (nulls compare equal)."""

    columns: tuple[str, ...]
    needs_grouping: ClassVar[bool] = True

    def __init__(self, *columns: str) -> None:
        if not columns:
            raise ValueError("Unique needs at least one column")
        for column in columns:
            check_column(column)
        object.__setattr__(self, "columns", tuple(columns))

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


@dataclass(frozen=True, slots=True)
class Expect(Check):
    """Every row satisfies ``condition``, a Spark SQL boolean expression or a ``Column``.

    A row where the condition is null counts as failing. ``max_failing`` tolerates a
    few bad rows per slice.
    """

    condition: Any
    label: str | None = None
    max_failing: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.condition, str) and type(self.condition).__name__ != "Column":
            raise ValueError(
                "Expect needs a SQL boolean expression string or a pyspark Column, got "
                f"{type(self.condition).__name__}"
            )
        if isinstance(self.max_failing, bool) or not isinstance(self.max_failing, int):
            raise ValueError(f"Expect max_failing must be a whole number, got {self.max_failing!r}")

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
        from pyspark.sql import functions as F

        condition = F.expr(self.condition) if isinstance(self.condition, str) else self.condition
        return {f"{prefix}failing": ~F.coalesce(condition, F.lit(False))}

    def failure(self, values: Mapping[str, Any], prefix: str) -> str | None:
        failing = int(values.get(f"{prefix}failing") or 0)
        if failing <= self.max_failing:
            return None
        return f"{failing} of {_rows(values)} rows do not satisfy it"


@dataclass(frozen=True, slots=True)
class FrameCheck(Check):
    """A user function over the whole output frame: return ``True`` (or ``None``) to pass,
    ``False`` or a message to fail. It runs once per write, on every written key."""

    fn: Callable[[Any], bool | str | None]
    label: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise ValueError(f"FrameCheck needs a callable, got {type(self.fn).__name__}")

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


def check_list(checks: Sequence[object], *, where: str) -> tuple[Check, ...]:
    """The checks of a task, or ``ValueError`` naming the one that is not a check."""
    for check in checks:
        if not isinstance(check, Check):
            raise ValueError(
                f"{where}: checks must be Check objects such as MinRowCount(1), got "
                f"{type(check).__name__}"
            )
    return tuple(checks)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class SliceFailure:
    """A check that failed for one key (``key`` is ``None`` for unpartitioned output)."""

    check: str
    key: str | None
    detail: str

    def render(self) -> str:
        where = f" for key {self.key}" if self.key is not None else ""
        return f"check {self.check} failed{where}: {self.detail}"


def slice_failures(
    measured: Mapping[str | None, Mapping[str, Any]],
    checks: Sequence[Check],
    *,
    keys: Sequence[str | None],
) -> list[SliceFailure]:
    """Failures of every check for every key in ``keys`` (a key with no rows has 0 rows)."""
    failures: list[SliceFailure] = []
    for key in keys:
        values = measured.get(key, {ROWS_METRIC: 0})
        for index, check in enumerate(checks):
            detail = check.failure(values, f"c{index}_")
            if detail is not None:
                failures.append(SliceFailure(check.name, key, detail))
    return failures
