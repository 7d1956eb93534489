"""What an undo, presence or measurement run is told (in ``dbxdec_order``) and the report lines
its tasks print for the launcher (a diff gate measures canary keys with a :class:`MeasureOrder`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from .params import KeyRange
from .report import read_reports, report_line

# -- undo runs ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UndoOrder:
    """What an undo run restores: the tables backfill ``backfill_id`` wrote.

    Its commits are found by the id in their ``userMetadata``; ``run_ids`` lists run ids only
    for a backfill whose ledger predates that id (the order older releases sent).
    """

    kind: ClassVar[Literal["undo"]] = "undo"
    backfill_id: str
    run_ids: tuple[str, ...] = ()
    force: bool = False
    undone: tuple[tuple[str, int], ...] = ()
    """``(table, version)`` of the commits earlier undos of the backfill made."""

    @property
    def by_backfill_id(self) -> bool:
        """Whether the backfill's commits are found by its id (not by run ids)."""
        return not self.run_ids


# -- presence runs ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PresenceOrder:
    """What a presence run looks at: the keys from ``keys.first`` to ``keys.last`` (inclusive)."""

    kind: ClassVar[Literal["presence"]] = "presence"
    keys: KeyRange


@dataclass(frozen=True, slots=True)
class PresenceReport:
    """One table as a task of a presence run found it: the rows of each key that has some.

    Attributes:
        table: The table's name (``catalog.schema.table``).
        task: The task that writes it.
        exists: Whether the table exists (``False``: every key is missing).
        rows: Rows per key, for the keys of the order that have rows.

    Example:
        >>> report = PresenceReport("main.s.t", "clean", True, {"2024-01-01": 2})
        >>> report.to_line()[:58]
        'dbxdec-report: {"exists": true, "kind": "presence", "rows"'
        >>> PresenceReport.from_lines("noise\\n" + report.to_line()) == [report]
        True
    """

    table: str
    task: str
    exists: bool
    rows: Mapping[str, int]

    def to_line(self) -> str:
        """The report as one output line."""
        body = {
            "table": self.table,
            "task": self.task,
            "exists": self.exists,
            "rows": dict(self.rows),
        }
        return report_line("presence", body)

    @classmethod
    def from_lines(cls, text: str) -> list[PresenceReport]:
        """Every report line in a task's output (other lines are ignored).

        Raises:
            ValueError: a line starts like a report but is not one.
        """
        reports = []
        for line, body in read_reports(text, "presence"):
            try:
                rows = body["rows"]
                report = cls(
                    str(body["table"]),
                    str(body["task"]),
                    bool(body["exists"]),
                    {str(k): int(v) for k, v in rows.items()},
                )
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"a malformed presence report line: {line[:120]!r}") from exc
            reports.append(report)
        return reports


# -- measurement runs ----------------------------------------------------------------------

ROWS_MEASURE = "rows"
"""The measure every gated table has: the key's row count."""


def _number(value: float | None) -> str:
    if value is None:
        return "null"
    return str(value) if isinstance(value, int) else repr(float(value))


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One measure of one key of one table: before the backfill wrote it and after the run did.

    Attributes:
        table: The table.
        key: The key (``STATIC:TIME`` for a two-dimensional table).
        before: The measure at ``before_version``; ``None`` for no rows, no table, or null.
        after: The measure at ``after_version``, the run's commit (``None``: null).
        before_version: ``None`` when the table did not exist before.
        after_version: The run's commit.
        measure: ``rows``, or a declared aggregate's name such as ``sum(amount)``.

    A key that stays at 0 or null has not moved; one that leaves it is outside the gate; a
    number that becomes null moved by -100%.

    Example:
        >>> KeyChange("t", "2024-01-05", 100.0, 40.0, 3, 4, "sum(amount)").describe()
        't key 2024-01-05: sum(amount) 100.0 -> 40.0 (-60%, versions 3 -> 4)'
    """

    table: str
    key: str
    before: float | None
    after: float | None
    before_version: int | None
    after_version: int
    measure: str = ROWS_MEASURE

    @property
    def moved(self) -> float | None:
        """The relative change (``-0.5``: halved); ``None`` when there is no baseline to
        compare with (absent key, a 0 or null baseline left) -- outside the gate."""
        if not self.before:  # None or 0
            same = self.after == self.before and self.measure != ROWS_MEASURE
            return 0.0 if same else None
        if self.after is None:
            return -1.0
        return (self.after - self.before) / abs(self.before)

    def describe(self) -> str:
        """``main.s.t key 2024-01-05: 100 -> 50 rows (-50%, versions 3 -> 5)``."""
        head = f"{self.table} key {self.key}:"
        before, after, moved = _number(self.before), _number(self.after), self.moved
        pct = "" if moved is None else f"{moved:+.0%}, "
        versions = f"({pct}versions {self.before_version} -> {self.after_version})"
        if self.measure != ROWS_MEASURE:
            return f"{head} {self.measure} {before} -> {after} {versions}"
        if self.before is None:
            was = self.before_version
            where = "the table did not exist" if was is None else f"version {was}"
            return f"{head} no rows before ({where}), {after} now"
        return f"{head} {before} -> {after} rows {versions}"

    def to_json(self) -> dict[str, Any]:
        """The change as JSON (see :class:`MeasureReport`)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "table"}

    @classmethod
    def from_json(cls, table: str, body: Any) -> KeyChange:
        """The change of ``table`` in ``body`` (see :meth:`to_json`).

        Raises:
            ValueError: not a change.
        """
        try:
            before, after = _measured(body["before"]), _measured(body["after"])
            was = body["before_version"]
            return cls(
                table,
                str(body["key"]),
                before,
                after,
                None if was is None else int(was),
                int(body["after_version"]),
                str(body["measure"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a key change: {exc}") from None


def _measured(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"a measure must be a finite number or null, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class MeasureOrder:
    """What run ``run_id`` of backfill ``backfill_id`` did to the keys ``keys`` (inclusive)."""

    kind: ClassVar[Literal["measure"]] = "measure"
    run_id: str
    backfill_id: str
    keys: KeyRange


@dataclass(frozen=True, slots=True)
class MeasureReport:
    """One table as a task of a measurement run found it.

    Attributes:
        table: The table's name.
        task: The task that writes it.
        committed: Whether the run committed to the table (``False``: ``changes`` is empty).
        changes: Every measure of every key of the order.

    Example:
        >>> change = KeyChange("main.s.t", "2024-01-01", 10, 5, 0, 1)
        >>> report = MeasureReport("main.s.t", "clean", True, (change,))
        >>> MeasureReport.from_lines("noise\\n" + report.to_line()) == [report]
        True
    """

    table: str
    task: str
    committed: bool
    changes: tuple[KeyChange, ...]

    def to_line(self) -> str:
        """The report as one output line."""
        body = {
            "table": self.table,
            "task": self.task,
            "committed": self.committed,
            "changes": [change.to_json() for change in self.changes],
        }
        return report_line("measure", body)

    @classmethod
    def from_lines(cls, text: str) -> list[MeasureReport]:
        """Every report line in a task's output (other lines are ignored).

        Raises:
            ValueError: a line starts like a report but is not one.
        """
        reports = []
        for line, body in read_reports(text, "measure"):
            try:
                table = str(body["table"])
                changes = tuple(KeyChange.from_json(table, c) for c in body["changes"])
                reports.append(cls(table, str(body["task"]), bool(body["committed"]), changes))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"a malformed measure report line: {line[:120]!r}") from exc
        return reports
