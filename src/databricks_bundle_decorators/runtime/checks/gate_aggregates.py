"""Aggregates a table declares for the diff gate, besides its row count.

``SparkTableIoManager(..., gate=[Sum("amount"), CountDistinct("customer_id")])``: with
``dbxdec backfill --canary N --diff-gate PCT``, each aggregate of each canary key is
computed on the table before the backfill and after the canary run (Delta time travel,
see :mod:`..job_tables.key_changes`), and a canary whose aggregate moved by more than ``PCT`` stops
the backfill, naming it (``sum(amount) 100.0 -> 40.0 (-60%, versions 3 -> 4)``).

Column names are checked when the IoManager is defined and backtick-quoted when read, so
a name never reaches Spark SQL raw.

Example:
    >>> [a.name for a in gate_aggregates([Sum("amount"), CountDistinct("customer_id")])]
    ['sum(amount)', 'count_distinct(customer_id)']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..core.predicates import check_column, quote_identifier


class GateAggregate(ABC):
    """One number per key that the diff gate compares before and after a canary run."""

    column: str

    @property
    @abstractmethod
    def name(self) -> str:
        """How messages name it, e.g. ``sum(amount)``."""

    @abstractmethod
    def column_expression(self) -> Any:
        """The aggregate ``Column`` over a key's rows (the column quoted)."""

    def value(self, raw: Any) -> float | None:
        """The aggregate's value as the gate compares it (``None``: null)."""
        return None if raw is None else float(raw)

    def _column(self) -> Any:
        from pyspark.sql import functions as F

        return F.col(quote_identifier(self.column))


@dataclass(frozen=True, slots=True)
class Sum(GateAggregate):
    """The sum of a numeric ``column`` over a key's rows (null when every value is null)."""

    column: str

    def __post_init__(self) -> None:
        check_column(self.column, what="Sum column")

    @property
    def name(self) -> str:
        return f"sum({self.column})"

    def column_expression(self) -> Any:
        from pyspark.sql import functions as F

        return F.sum(self._column())


@dataclass(frozen=True, slots=True)
class Mean(GateAggregate):
    """The mean of a numeric ``column`` over a key's rows, nulls left out."""

    column: str

    def __post_init__(self) -> None:
        check_column(self.column, what="Mean column")

    @property
    def name(self) -> str:
        return f"mean({self.column})"

    def column_expression(self) -> Any:
        from pyspark.sql import functions as F

        return F.avg(self._column())


@dataclass(frozen=True, slots=True)
class CountDistinct(GateAggregate):
    """The number of distinct non-null values of ``column`` among a key's rows (exact)."""

    column: str

    def __post_init__(self) -> None:
        check_column(self.column, what="CountDistinct column")

    @property
    def name(self) -> str:
        return f"count_distinct({self.column})"

    def column_expression(self) -> Any:
        from pyspark.sql import functions as F

        return F.count_distinct(self._column())

    def value(self, raw: Any) -> float | None:
        return None if raw is None else int(raw)


def gate_aggregates(declared: Iterable[object] | None) -> tuple[GateAggregate, ...]:
    """The ``gate=`` of an IoManager, checked: aggregates only, each once.

    Raises:
        ValueError: one line naming what is wrong and what to write instead.
    """
    if declared is None:
        return ()
    if isinstance(declared, (str, GateAggregate)) or not isinstance(declared, Iterable):
        raise ValueError(
            f"gate= takes a list of aggregates, e.g. gate=[Sum('amount')], got {declared!r}"
        )
    found: list[GateAggregate] = []
    for item in declared:
        if not isinstance(item, GateAggregate):
            raise ValueError(
                f"gate= takes aggregates (Sum, Mean, CountDistinct from "
                f"databricks_bundle_decorators.checks), got {item!r}"
            )
        if any(item.name == known.name for known in found):
            raise ValueError(f"gate= declares {item.name} twice")
        found.append(item)
    return tuple(found)
