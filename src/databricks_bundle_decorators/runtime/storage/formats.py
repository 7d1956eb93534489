"""Table formats: they only read and write (predicates, windows, checks and naming
belong to the IoManager).

A write has two phases, so nothing is visible before the output is validated:
:meth:`TableFormat.stage` materialises the output where readers cannot see it, then
:meth:`StagedWrite.commit` replaces the run's partitions or :meth:`StagedWrite.discard`
drops it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .layout import TableLayout


@dataclass(frozen=True, slots=True)
class TableRef:
    """Where a table lives: its name, its quoted name and, locally, its folder (``path``
    ``None``: the session's catalog resolves the name)."""

    name: str
    qualified: str
    path: Path | None = None


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """What a commit replaces.

    Attributes:
        partition_column: The key column; ``None`` replaces the whole table.
        replace_where: Predicate selecting exactly the written keys (``None``: the
            partitions present in the output).
        cleared_keys: Written keys with no rows in the output; their old rows go away.
        transaction: Delta's ``(txnAppId, txnVersion)``: a commit already recorded under
            it is skipped.
        append: Add the staged rows and replace nothing (Delta only).
        metadata: The commit's ``userMetadata`` (``None``: the transaction's app id).
    """

    partition_column: str | None
    replace_where: str | None
    cleared_keys: tuple[str, ...] = ()
    transaction: tuple[str, int] | None = None
    layout: TableLayout = field(default_factory=TableLayout)
    append: bool = False
    static_column: str | None = None
    metadata: str | None = None

    @property
    def partition_by(self) -> tuple[str, ...]:
        """The static dimension's column (two-dimensional tables), then the key column."""
        return tuple(c for c in (self.static_column, self.partition_column) if c is not None)


class StagedWrite(ABC):
    """An output materialised but not yet visible in the table."""

    @property
    @abstractmethod
    def frame(self) -> Any:
        """The rows that a commit makes visible (for validation and checks)."""

    def present_keys(self, partition_column: str) -> frozenset[str] | None:
        """The partition values with staged rows, if known without reading them."""
        return None

    @abstractmethod
    def commit(self, request: WriteRequest) -> None:
        """Replace the requested partitions with the staged rows."""

    @abstractmethod
    def discard(self) -> None:
        """Release the staged rows (after a commit, or instead of one). Idempotent."""


class TableFormat(ABC):
    """Reads and writes one kind of table."""

    writes_on_stage: ClassVar[bool] = False
    """Whether :meth:`stage` computes the frame, filling an observation attached to it."""

    @abstractmethod
    def read(
        self, spark: Any, table: TableRef, *, partition_column: str | None, keys: Sequence[str]
    ) -> Any | None:
        """The table as a lazy ``DataFrame`` (``None``: it does not exist); ``keys``, when
        not empty, is a pruning hint (the caller still filters)."""

    @abstractmethod
    def stage(self, frame: Any, table: TableRef, *, partition_column: str | None) -> StagedWrite:
        """Materialise ``frame`` for a later commit."""


def schema_difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """How two Spark schemas (``StructType.jsonValue()``) differ in column names and
    types, e.g. ``added x; retyped y``; ``None`` when they agree (nullability aside)."""

    def columns(schema: dict[str, Any]) -> dict[str, str]:
        return {f["name"]: json.dumps(f["type"], sort_keys=True) for f in schema.get("fields", [])}

    before, after = columns(old), columns(new)
    if before == after:
        return None
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(c for c in set(before) & set(after) if before[c] != after[c])
    parts = [
        f"{label} {', '.join(cols)}"
        for label, cols in (("added", added), ("removed", removed), ("retyped", changed))
        if cols
    ]
    return "; ".join(parts)
