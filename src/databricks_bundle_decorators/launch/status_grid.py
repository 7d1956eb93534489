"""The partition health grid of ``dbxdec status``: one cell per key, in a calendar.

Daily keys are laid out one row per month (columns = day of month), hourly keys one
row per day (columns = hour), monthly keys one row per year, weekly keys one row per
year (columns = ISO week); static keys fill rows of ten in declared order.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from .history import KeyHistory, KeyState

STATES: tuple[KeyState, ...] = ("succeeded", "failed", "running", "missing")
_STYLE: dict[KeyState, str] = {
    "succeeded": "green",
    "failed": "bold red",
    "running": "yellow",
    "missing": "grey50",
}
_GLYPH: dict[KeyState, str] = {"succeeded": "■", "failed": "■", "running": "■", "missing": "·"}
_HTML_COLOUR: dict[KeyState, str] = {
    "succeeded": "#2da44e",
    "failed": "#cf222e",
    "running": "#d4a72c",
    "missing": "#d0d7de",
}
_STATIC_ROW = 10


@dataclass(frozen=True, slots=True)
class GridRow:
    """A row label and its cells; ``None`` is a calendar slot without a key."""

    label: str
    cells: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class PartitionGrid:
    """Keys, their states and a calendar layout."""

    job: str
    kind: str
    columns: tuple[str, ...]
    rows: tuple[GridRow, ...]
    states: Mapping[str, KeyState]

    def counts(self) -> Counter[KeyState]:
        return Counter(self.states.values())


def build_grid(job: str, kind: str, keys: Sequence[str], history: KeyHistory) -> PartitionGrid:
    """Lay ``keys`` out for a backfill of ``kind`` (daily, hourly, weekly, monthly, static)."""
    states: dict[str, KeyState] = {key: history.get(key, "missing") for key in keys}
    if kind == "daily":
        columns, rows = _calendar(keys, lambda k: k[:7], lambda k: int(k[8:10]), 31, 1)
    elif kind == "hourly":
        columns, rows = _calendar(keys, lambda k: k[:10], lambda k: int(k[11:13]), 24, 0)
    elif kind == "monthly":
        columns, rows = _calendar(keys, lambda k: k[:4], lambda k: int(k[5:7]), 12, 1)
    elif kind == "weekly":
        columns, rows = _calendar(keys, lambda k: k[:4], lambda k: int(k[6:8]), 53, 1)
    else:
        columns = tuple(str(i + 1) for i in range(min(_STATIC_ROW, len(keys))))
        rows = tuple(
            GridRow(f"#{i + 1}", tuple(keys[i : i + _STATIC_ROW]))
            for i in range(0, len(keys), _STATIC_ROW)
        )
    return PartitionGrid(job, kind, columns, rows, states)


def _calendar(
    keys: Sequence[str],
    row_of: Callable[[str], str],
    column_of: Callable[[str], int],
    width: int,
    first: int,
) -> tuple[tuple[str, ...], tuple[GridRow, ...]]:
    rows: dict[str, list[str | None]] = {}
    for key in keys:
        cells = rows.setdefault(row_of(key), [None] * width)
        cells[column_of(key) - first] = key
    columns = tuple(str(first + i) for i in range(width))
    return columns, tuple(GridRow(label, tuple(cells)) for label, cells in rows.items())


def grid_table(grid: PartitionGrid) -> Table:
    """The grid as a rich table (colours per state)."""
    table = Table(
        title=f"{grid.job}: {len(grid.states)} {grid.kind} keys",
        box=None,
        padding=(0, 0),
        pad_edge=False,
    )
    table.add_column("", style="bold", no_wrap=True)
    static = grid.kind not in ("daily", "hourly", "weekly", "monthly")
    for number, column in enumerate(grid.columns):
        shown = column if (number % 5 == 0 and not static) else ""
        table.add_column(shown, justify="left", no_wrap=True, min_width=2)
    for row in grid.rows:
        cells: list[Text] = []
        for key in row.cells:
            if key is None:
                cells.append(Text(" "))
                continue
            state = grid.states[key]
            label = f"{_GLYPH[state]} {key}  " if static else f"{_GLYPH[state]} "
            cells.append(Text(label, style=_STYLE[state]))
        table.add_row(f"{row.label} ", *cells)
    counts = grid.counts()
    table.caption = "  ".join(f"{_GLYPH[s]} {s} {counts.get(s, 0)}" for s in STATES)
    return table


def grid_html(grid: PartitionGrid) -> str:
    """A standalone HTML page with the same grid (no scripts, no external files)."""
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in grid.columns)
    body: list[str] = []
    for row in grid.rows:
        cells = []
        for key in row.cells:
            if key is None:
                cells.append('<td class="none"></td>')
            else:
                state = grid.states[key]
                text = esc(key) if grid.kind == "static" else ""
                cells.append(f'<td class="{state}" title="{esc(key)}: {state}">{text}</td>')
        body.append(f"<tr><th>{esc(row.label)}</th>{''.join(cells)}</tr>")
    counts = grid.counts()
    legend = " ".join(
        f'<span class="{s}">&nbsp;&nbsp;</span> {s} {counts.get(s, 0)}' for s in STATES
    )
    styles = " ".join(f"td.{s}, span.{s} {{ background: {c}; }}" for s, c in _HTML_COLOUR.items())
    title = esc(f"{grid.job}: partition status ({len(grid.states)} {grid.kind} keys)")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>"
        "body { font-family: sans-serif; } table { border-collapse: separate; "
        "border-spacing: 2px; } td { width: 14px; height: 14px; font-size: 10px; } "
        f"th {{ font-size: 11px; font-weight: normal; text-align: right; }} {styles}"
        f"</style></head><body><h1>{title}</h1><p>{legend}</p>"
        f"<table><tr><th></th>{head}</tr>{''.join(body)}</table></body></html>\n"
    )
