"""Table formats: they only read and write. Predicates, windows, checks and naming
belong to :class:`~..io.spark_table.SparkTableIoManager`.

A write has two phases so that nothing becomes visible before the output is validated:
:meth:`TableFormat.stage` materialises the output where readers cannot see it, the
IoManager measures it (from metrics observed while a format that writes on
:meth:`~TableFormat.stage` wrote it, or by reading :attr:`StagedWrite.frame`), then
:meth:`StagedWrite.commit` replaces the run's partitions or :meth:`StagedWrite.discard`
drops everything.
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
    """Where a table lives: its name, its quoted name and, locally, its folder.

    ``path`` is set for a table stored in a local folder (the local form of a catalog
    name); ``None`` means the name is resolved by the session's catalog (Databricks).
    """

    name: str
    qualified: str
    path: Path | None = None


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """What a commit replaces.

    Attributes:
        partition_column: The table's partition column; ``None`` replaces the whole table.
        replace_where: Predicate selecting exactly the written keys (``None``: the
            partitions present in the output, or the whole unpartitioned table).
        cleared_keys: Written keys with no rows in the output; their old rows go away.
        transaction: ``(application id, version)`` that makes the commit idempotent: a
            format that supports it skips a commit whose id it has recorded at that
            version already (Delta's ``txnAppId``/``txnVersion``). ``None``: no id.
        layout: Properties and clustering the table is created with and checked
            against (Delta only; see :mod:`.layout`).
        static_column: The static dimension's partition column of a two-dimensional
            table (``region`` of region x day), or ``None``.
        append: Add the staged rows and replace nothing (``replace_where`` and
            ``cleared_keys`` are ignored); Delta only (see :mod:`..io.append_once`).
        metadata: The commit's ``userMetadata`` (Delta); ``None``: the transaction's
            application id.
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
        """The table's partition columns: the static dimension's first (two-dimensional
        tables), then the key column."""
        return tuple(c for c in (self.static_column, self.partition_column) if c is not None)


class StagedWrite(ABC):
    """An output materialised but not yet visible in the table."""

    @property
    @abstractmethod
    def frame(self) -> Any:
        """The rows that a commit makes visible (for validation and checks)."""

    def present_keys(self, partition_column: str) -> frozenset[str] | None:
        """The partition values that have staged rows, when known without reading the
        rows; ``None`` otherwise."""
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
    """Whether :meth:`stage` computes the frame (writes it somewhere private): then an
    observation attached to the frame is filled when ``stage`` returns."""

    @abstractmethod
    def read(
        self, spark: Any, table: TableRef, *, partition_column: str | None, keys: Sequence[str]
    ) -> Any | None:
        """The table as a lazy ``DataFrame``; ``None`` when it does not exist.

        ``keys`` (non-empty) is a pruning hint: only those partitions are needed. The
        caller still filters with the exact predicate.
        """

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
