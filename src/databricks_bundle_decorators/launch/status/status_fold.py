"""Folded status grids: one cell per day, week or month when one per key would not fit.

A folded cell counts its keys per state and shows its worst key's glyph (:data:`WORST_FIRST`).
Hourly keys fold into days, ISO weeks or months; daily keys into weeks or months; a
``static x TIME`` grid keeps a row per static value. Other kinds never fold.

Example:
    >>> from .status_grid import build_grid
    >>> keys = [f"2024-01-0{d}T{h:02d}" for d in (1, 2) for h in range(24)]
    >>> folded = fold_grid(build_grid("j", "hourly", keys, {keys[0]: "failed"}), "day")
    >>> [(c.label, c.worst, c.total) for c in folded.rows[0].cells if c is not None]
    [('2024-01-01', 'failed', 24), ('2024-01-02', 'missing', 24)]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Literal

from ...backfill.multi import KIND_PREFIX as MULTI_KIND_PREFIX
from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ..plan.states import KeyState
from .status_grid import STATES, PartitionGrid

FoldLevel = Literal["key", "day", "week", "month"]
WORST_FIRST: tuple[KeyState, ...] = (
    KeyState.FAILED,
    KeyState.CANCELLED,
    KeyState.MISSING,
    KeyState.UNKNOWN,
    KeyState.RUNNING,
    KeyState.SUCCEEDED,
)
"""The order in which a folded cell picks the state it shows."""


@dataclass(frozen=True, slots=True)
class FoldedCell:
    """A period of keys (``2024-01-05``, ``2024-W02``, ``2024-01``) and its keys per state."""

    label: str
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def worst(self) -> KeyState:
        """The state the cell shows: its worst key's (see :data:`WORST_FIRST`)."""
        return next(s for s in WORST_FIRST if self.counts[STATES.index(s)])

    def describe(self) -> str:
        """``2024-01-05: 20 succeeded, 4 failed`` (states without keys left out)."""
        parts = [f"{n} {s}" for s, n in zip(STATES, self.counts, strict=True) if n]
        return f"{self.label}: {', '.join(parts)}"


@dataclass(frozen=True, slots=True)
class FoldedRow:
    """A row label and its cells; ``None`` is a period without a key."""

    label: str
    cells: tuple[FoldedCell | None, ...]


@dataclass(frozen=True, slots=True)
class FoldedGrid:
    """A grid of periods: ``unit`` (``day``, ``week``, ``month``) is what a cell is."""

    unit: FoldLevel
    columns: tuple[str, ...]
    rows: tuple[FoldedRow, ...]

    def cells(self) -> Iterator[FoldedCell]:
        return (cell for row in self.rows for cell in row.cells if cell is not None)


_TIME_LEVELS: dict[str, tuple[FoldLevel, ...]] = {
    "hourly": ("day", "week", "month"),
    "daily": ("week", "month"),
}


def fold_levels(kind: str) -> tuple[FoldLevel, ...]:
    """The periods a grid of ``kind`` can fold into, finest first (none: it never folds)."""
    return _TIME_LEVELS.get(kind.removeprefix(MULTI_KIND_PREFIX), ())


def _day_counts(grid: PartitionGrid) -> dict[tuple[str, str], list[int]]:
    """Keys per state of each (static value or ``""``, ``YYYY-MM-DD``)."""
    index = {state: i for i, state in enumerate(STATES)}
    pairs: Counter[tuple[str, str, KeyState]]
    if grid.kind.startswith(MULTI_KIND_PREFIX):
        split = (key.partition(MULTI_SEPARATOR) for key in grid.states)
        pairs = Counter(
            (static, time[:10], state)
            for (static, _, time), state in zip(split, grid.states.values(), strict=True)
        )
    else:
        pairs = Counter(("", key[:10], state) for key, state in grid.states.items())
    days: dict[tuple[str, str], list[int]] = {}
    for (row, day, state), n in pairs.items():
        tally = days.get((row, day))
        if tally is None:
            tally = days[(row, day)] = [0] * len(STATES)
        tally[index[state]] += n
    return days


def _period(level: FoldLevel, day: str) -> tuple[str, str, int]:
    """``(period label, calendar row label, column number)`` of ``day`` at ``level``."""
    if level == "day":
        return day, day[:7], int(day[8:10])
    if level == "week":
        year, number, _ = date.fromisoformat(day).isocalendar()
        return f"{year}-W{number:02d}", str(year), number
    return day[:7], day[:4], int(day[5:7])


_CALENDAR_WIDTH: dict[FoldLevel, int] = {"day": 31, "week": 53, "month": 12}


def fold_grid(
    grid: PartitionGrid,
    level: FoldLevel,
    days: dict[tuple[str, str], list[int]] | None = None,
) -> FoldedGrid:
    """``grid``'s keys counted per period of ``level``, each key in exactly one cell; calendar
    rows for a time grid, a row per static value for ``static x TIME``. ``days``: the
    grid's keys per day, when already counted.
    """
    if level not in fold_levels(grid.kind):
        raise ValueError(f"a {grid.kind} grid does not fold into {level}s")
    multi = grid.kind.startswith(MULTI_KIND_PREFIX)
    counts: dict[tuple[str, str], list[int]] = {}
    places: dict[tuple[str, str], tuple[str, int]] = {}
    days = _day_counts(grid) if days is None else days
    column_of: dict[str, int] = {}
    if multi:  # periods in time order, whichever static value has them
        periods = sorted({_period(level, day)[0] for _, day in days})
        column_of = {label: i for i, label in enumerate(periods)}
    for (static, day), tally in days.items():
        label, row, number = _period(level, day)
        if multi:
            row, column = static, column_of[label]
        else:
            column = number - 1
        total = counts.get((row, label))
        if total is None:
            total = counts[(row, label)] = [0] * len(STATES)
            places[(row, label)] = (row, column)
        for i, n in enumerate(tally):
            total[i] += n
    width = len(column_of) if multi else _CALENDAR_WIDTH[level]
    rows: dict[str, list[FoldedCell | None]] = {}
    for slot, total in counts.items():
        row, column = places[slot]
        rows.setdefault(row, [None] * width)[column] = FoldedCell(slot[1], tuple(total))
    columns = tuple(column_of) if multi else tuple(str(i + 1) for i in range(width))
    return FoldedGrid(level, columns, tuple(FoldedRow(r, tuple(c)) for r, c in rows.items()))


def grid_fits(rows: int, columns: int, label: int, *, max_rows: int, width: int) -> bool:
    """Whether ``rows`` rows of ``columns`` two-character cells after a ``label``-wide label fit."""
    return rows <= max_rows and label + 1 + 2 * columns <= width


def choose_fold(
    grid: PartitionGrid, *, max_rows: int, width: int, always: bool = False
) -> FoldedGrid | None:
    """The finest folding of ``grid`` that fits ``max_rows`` rows of ``width`` characters
    (the coarsest when none fits); ``None`` when it fits unfolded (unless ``always``) or
    never folds.
    """
    label = max((len(row.label) for row in grid.rows), default=0)
    fits = grid_fits(len(grid.rows), len(grid.columns), label, max_rows=max_rows, width=width)
    if fits and not always:
        return None
    folded: FoldedGrid | None = None
    days = _day_counts(grid) if fold_levels(grid.kind) else {}
    for level in fold_levels(grid.kind):
        folded = fold_grid(grid, level, days)
        label = max((len(row.label) for row in folded.rows), default=0)
        if grid_fits(len(folded.rows), len(folded.columns), label, max_rows=max_rows, width=width):
            return folded
    return folded
