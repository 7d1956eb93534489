"""Aggregates a table declares for the diff gate, besides its row count.

``SparkTableIoManager(..., gate=[Sum("amount"), CountDistinct("customer_id")])``: with
``dbxdec backfill --canary N --diff-gate PCT``, each aggregate of each canary key is
computed before the backfill and after the canary run (Delta time travel), and a canary
whose aggregate moved by more than ``PCT`` stops the backfill, naming it
(``sum(amount) 100.0 -> 40.0 (-60%, versions 3 -> 4)``).

Example:
    >>> [a.name for a in gate_aggregates([Sum("amount"), CountDistinct("customer_id")])]
    ['sum(amount)', 'count_distinct(customer_id)']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.predicates import check_column, quote_identifier


class GateAggregate:
    """One number per key that the diff gate compares before and after a canary run:
    an aggregate of ``column`` over a key's rows."""

    column: str
    _label: ClassVar[str]
    _function: ClassVar[str]

    def __post_init__(self) -> None:
        check_column(self.column, what=f"{type(self).__name__} column")

    @property
    def name(self) -> str:
        """How messages name it, e.g. ``sum(amount)``."""
        return f"{self._label}({self.column})"

    def column_expression(self) -> Any:
        """The aggregate ``Column`` over a key's rows (the column quoted)."""
        from pyspark.sql import functions as F

        return getattr(F, self._function)(F.col(quote_identifier(self.column)))

    def value(self, raw: Any) -> float | None:
        """The aggregate's value as the gate compares it (``None``: null)."""
        return None if raw is None else float(raw)


@dataclass(frozen=True, slots=True)
class Sum(GateAggregate):
    """The sum of a numeric ``column`` over a key's rows (null when every value is null)."""

    column: str
    _label: ClassVar[str] = "sum"
    _function: ClassVar[str] = "sum"


@dataclass(frozen=True, slots=True)
class Mean(GateAggregate):
    """The mean of a numeric ``column`` over a key's rows, nulls left out."""

    column: str
    _label: ClassVar[str] = "mean"
    _function: ClassVar[str] = "avg"


@dataclass(frozen=True, slots=True)
class CountDistinct(GateAggregate):
    """The number of distinct non-null values of ``column`` among a key's rows (exact)."""

    column: str
    _label: ClassVar[str] = "count_distinct"
    _function: ClassVar[str] = "count_distinct"

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
