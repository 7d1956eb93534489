"""``dbxdec status`` for grids of any size: as they are when they fit, else folded into a
cell per day, week or month showing its worst key (:data:`WORST_FIRST`); an HTML page of
more than :data:`PAGE_FULL_KEYS` keys folds likewise, a ``<details>`` per month or year."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from itertools import groupby
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.text import Text

from ...backfill.multi import KIND_PREFIX as MULTI_KIND_PREFIX
from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...errors import counted
from ..plan.states import KeyState
from .status_grid import (
    _HTML_PATTERN,
    _STYLE,
    GLYPH,
    HTML_COLOUR,
    KEY_STATES,
    PageOrigin,
    PartitionGrid,
    glyph_table,
    grid_html,
    grid_table,
    html_page,
    legend_lines,
    runs_table_html,
    stale_table_html,
)

PAGE_FULL_KEYS = 5000
"""An HTML page of at most this many keys has one cell per key (:func:`grid_html`)."""
PAGE_MAX_ROWS = 400
"""The most rows of cells the folded HTML grid has before it folds coarser."""
_PAGE_WIDTH = 200  # characters: an HTML page is as wide as a week grid needs


def status_table(grid: PartitionGrid, *, max_rows: int, width: int) -> RenderableType:
    """``grid`` fitted to ``max_rows`` rows of ``width`` characters: one cell per key, else
    folded with its legend and what a cell is.
    """
    folded = choose_fold(grid, max_rows=max_rows, width=width)
    if folded is None:
        return grid_table(grid, width)
    legend = (Text(line) for line in legend_lines(grid, width))
    return Group(folded_table(grid, folded, width), *legend, Text(fold_note(grid, folded)))


def fold_note(grid: PartitionGrid, folded: FoldedGrid) -> str:
    """What a folded cell is, in one line."""
    order = ", ".join(f"{GLYPH[s]} {s}" for s in WORST_FIRST if s in grid.shown_states)
    return (
        f"A cell is one {folded.unit} of {grid.kind} keys, shown as its worst key's state "
        f"({order}); {counted(len(grid.states), 'key')} in "
        f"{counted(sum(1 for _ in folded.cells()), 'cell')}."
    )


def folded_table(
    grid: PartitionGrid, folded: FoldedGrid, width: int | None = None
) -> RenderableType:
    """A folded grid as rich tables, one glyph per cell, in ``width`` characters."""
    title = (
        f"{grid.job}: {counted(len(grid.states), f'{grid.kind} key')}, one cell per {folded.unit}"
    )
    rows = ((row.label, [_folded_cell(cell) for cell in row.cells]) for row in folded.rows)
    columns = [column[-2:] for column in folded.columns]
    wide = min(len(title), width or len(title))  # the title on one line
    return glyph_table(title, columns, rows, wide=wide, width=width)


def _folded_cell(cell: FoldedCell | None) -> Text:
    return Text(" ") if cell is None else Text(f"{GLYPH[cell.worst]} ", _STYLE[cell.worst])


def status_page(
    grid: PartitionGrid, origin: PageOrigin | None = None, *, extra_html: str = ""
) -> str:
    """The HTML status page: :func:`grid_html` up to :data:`PAGE_FULL_KEYS` keys (or when the
    grid never folds), else folded.
    """
    folded = None
    if len(grid.states) > PAGE_FULL_KEYS:
        folded = choose_fold(grid, max_rows=PAGE_MAX_ROWS, width=_PAGE_WIDTH, always=True)
    if folded is None:
        return grid_html(grid, origin, extra_html=extra_html)
    return _folded_page(grid, folded, origin, extra_html)


_FOLDED_STYLE = (
    "details { margin: 2px 0; } summary { font-size: 12px; cursor: pointer; } "
    "pre { font-size: 12px; margin: 2px 0 8px 0; } pre i { font-style: normal; } "
)


def _folded_page(
    grid: PartitionGrid, folded: FoldedGrid, origin: PageOrigin | None, extra_html: str
) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c[-2:])}</th>" for c in folded.columns)
    body: list[str] = []
    for row in folded.rows:
        cells = "".join(
            '<td class="none"></td>'
            if cell is None
            else f'<td class="{cell.worst}" title="{esc(cell.describe())}">{GLYPH[cell.worst]}</td>'
            for cell in row.cells
        )
        body.append(f"<tr><th>{esc(row.label)}</th>{cells}</tr>")
    styles = " ".join(
        f"td.{s}, span.{s} {{ background-color: {c}; {_HTML_PATTERN[s]} }} "
        f"pre i.{_LETTER[s]} {{ color: {c}; }}"
        for s, c in HTML_COLOUR.items()
    )
    note = esc(fold_note(grid, folded)) + " Hover a cell for its counts per state."
    after = (
        "".join(_key_details(grid))
        + "".join(
            runs_table_html(grid, state, folded=True)
            for state in (KeyState.FAILED, KeyState.CANCELLED)
        )
        + stale_table_html(grid)
    )
    return html_page(
        grid, origin, head, body, style=f"{_FOLDED_STYLE} {styles}", note=f"<p>{note}</p>",
        after=after + extra_html,
    )  # fmt: skip


def _key_details(grid: PartitionGrid) -> Iterator[str]:
    """A ``<details>`` per month (hourly) or year (daily) opening to one glyph per key."""
    if grid.kind not in ("hourly", "daily"):
        return
    yield "<h2>Keys</h2>"
    esc = html.escape
    width = 7 if grid.kind == "hourly" else 4  # a row label's month or year: the section
    head = "".join((c if i % 3 == 0 else "").ljust(2) for i, c in enumerate(grid.columns))
    for section, rows in groupby(grid.rows, key=lambda r: r.label[:width]):
        lines: list[str] = []
        tally = dict.fromkeys(KEY_STATES, 0)
        for row in rows:
            parts = [esc(row.label[width + 1 :]), " "]
            states = (None if key is None else grid.states[key] for key in row.cells)
            for state, run in groupby(states):
                n = sum(1 for _ in run)
                if state is None:
                    parts.append("  " * n)
                    continue
                tally[state] += n
                parts.append(f"<i class={_LETTER[state]}>{(GLYPH[state] + ' ') * n}</i>")
            lines.append("".join(parts))
        shown = ", ".join(f"{n} {s}" for s, n in tally.items() if n)
        body = "\n".join(["   " + esc(head), *lines])  # a row label: a day or month, 2 wide
        yield f"<details><summary>{esc(section)}: {shown}</summary><pre>{body}</pre></details>"


_LETTER: dict[KeyState, str] = {
    KeyState.SUCCEEDED: "s",
    KeyState.FAILED: "f",
    KeyState.CANCELLED: "c",
    KeyState.RUNNING: "r",
    KeyState.MISSING: "m",
    KeyState.UNKNOWN: "u",
    KeyState.STALE: "t",
}
"""A state's class in the folded page's key lines (short: 87,000 keys; unique)."""

PIPE_MAX_ROWS = 60
"""The most rows of cells ``dbxdec status`` prints when its output is not a terminal."""


def terminal_table(grid: PartitionGrid, console: Console) -> RenderableType:
    """``grid`` folded to fit ``console`` (:data:`PIPE_MAX_ROWS` when it is not a terminal)."""
    rows = max(console.height - 6, 10) if console.is_terminal else PIPE_MAX_ROWS
    return status_table(grid, max_rows=rows, width=console.width)


FoldLevel = Literal["key", "day", "week", "month"]
WORST_FIRST: tuple[KeyState, ...] = (
    KeyState.FAILED,
    KeyState.CANCELLED,
    KeyState.STALE,  # wrong data is being read; a missing key is not read at all
    KeyState.MISSING,
    KeyState.UNKNOWN,
    KeyState.RUNNING,
    KeyState.SUCCEEDED,
)
"""The order in which a folded cell picks the state it shows."""


@dataclass(frozen=True, slots=True)
class FoldedCell:
    """A period of keys (``2024-01-05``, ``2024-W02``, ``2024-01``) and its keys per state
    (of :data:`~.status_grid.KEY_STATES`, in its order; a shorter tuple has none of the
    states after its end)."""

    label: str
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def worst(self) -> KeyState:
        """The state the cell shows: its worst key's (see :data:`WORST_FIRST`)."""
        return next(s for s in WORST_FIRST if self.count(s))

    def count(self, state: KeyState) -> int:
        """The cell's keys in ``state``."""
        at = KEY_STATES.index(state)
        return self.counts[at] if at < len(self.counts) else 0

    def describe(self) -> str:
        """``2024-01-05: 20 succeeded, 4 failed`` (states without keys left out)."""
        parts = [f"{n} {s}" for s, n in zip(KEY_STATES, self.counts, strict=False) if n]
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
    index = {state: i for i, state in enumerate(KEY_STATES)}
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
        days.setdefault((row, day), [0] * len(KEY_STATES))[index[state]] += n
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

    Example:
        >>> from .status_grid import build_grid
        >>> keys = [f"2024-01-0{d}T{h:02d}" for d in (1, 2) for h in range(24)]
        >>> folded = fold_grid(build_grid("j", "hourly", keys, {keys[0]: "failed"}), "day")
        >>> [(c.label, c.worst, c.total) for c in folded.rows[0].cells if c is not None]
        [('2024-01-01', 'failed', 24), ('2024-01-02', 'missing', 24)]
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
        total = counts.setdefault((row, label), [0] * len(KEY_STATES))
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
