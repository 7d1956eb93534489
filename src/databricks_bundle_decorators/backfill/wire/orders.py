"""Orders and reports that cross the wire as text: what an undo or presence run does,
and the lines its tasks print for the launcher."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from .keys import KeyRange
from .report import read_reports, report_line

# -- undo runs ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UndoOrder:
    """What an undo run restores: the tables backfill ``backfill_id`` wrote.

    The run finds the backfill's commits by its id, which every commit of its runs
    carries in ``userMetadata`` (see :class:`.order.TaskOrder`), so the order's
    length does not grow with the number of runs. ``run_ids`` is empty, except for a
    backfill whose ledger predates that id: then its commits are found by the ids of its
    runs, listed here (the order of older releases, which they still read).
    Sent in ``dbxdec_order`` (:mod:`.order`).
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
    """What a presence run looks at: the keys from ``first`` to ``last`` (inclusive).
    Sent in ``dbxdec_order`` (:mod:`.order`).
    """

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
        body = {"table": self.table, "task": self.task, "exists": self.exists}
        body["rows"] = dict(self.rows)
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
