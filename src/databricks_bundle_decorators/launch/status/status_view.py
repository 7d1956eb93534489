"""``dbxdec status`` for grids of any size: as they are when they fit, else folded.

An HTML page of more than :data:`PAGE_FULL_KEYS` keys shows a cell per day or coarser, a
``<details>`` per month or year opening to one glyph per key, and no scripts: ten years
of hourly keys stay under a megabyte.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from itertools import groupby

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...errors import counted
from ..plan.states import KeyState
from .status_fold import WORST_FIRST, FoldedCell, FoldedGrid, choose_fold
from .status_grid import (
    _GLYPH,
    _HTML_PATTERN,
    _STYLE,
    HTML_COLOUR,
    STATES,
    PageOrigin,
    PartitionGrid,
    glyph_table,
    grid_html,
    grid_table,
    html_page,
    legend,
    runs_table_html,
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
        return grid_table(grid)
    return Group(folded_table(grid, folded), Text(legend(grid)), Text(fold_note(grid, folded)))


def fold_note(grid: PartitionGrid, folded: FoldedGrid) -> str:
    """What a folded cell is, in one line."""
    order = ", ".join(f"{_GLYPH[s]} {s}" for s in WORST_FIRST)
    return (
        f"A cell is one {folded.unit} of {grid.kind} keys, shown as its worst key's state "
        f"({order}); {counted(len(grid.states), 'key')} in "
        f"{counted(sum(1 for _ in folded.cells()), 'cell')}."
    )


def folded_table(grid: PartitionGrid, folded: FoldedGrid) -> Table:
    """A folded grid as a rich table, one glyph per cell."""
    title = f"{grid.job}: {len(grid.states)} {grid.kind} keys, one cell per {folded.unit}"
    rows = ((row.label, [_folded_cell(cell) for cell in row.cells]) for row in folded.rows)
    columns = [column[-2:] for column in folded.columns]
    return glyph_table(title, columns, rows, wide=len(title))  # the title on one line


def _folded_cell(cell: FoldedCell | None) -> Text:
    return Text(" ") if cell is None else Text(f"{_GLYPH[cell.worst]} ", _STYLE[cell.worst])


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
            else f'<td class="{cell.worst}" title="{esc(cell.describe())}">'
            f"{_GLYPH[cell.worst]}</td>"
            for cell in row.cells
        )
        body.append(f"<tr><th>{esc(row.label)}</th>{cells}</tr>")
    styles = " ".join(
        f"td.{s}, span.{s} {{ background-color: {c}; {_HTML_PATTERN[s]} }} "
        f"pre i.{s[0]} {{ color: {c}; }}"
        for s, c in HTML_COLOUR.items()
    )
    note = esc(fold_note(grid, folded)) + " Hover a cell for its counts per state."
    after = "".join(_key_details(grid)) + "".join(
        runs_table_html(grid, state, folded=True) for state in (KeyState.FAILED, KeyState.CANCELLED)
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
        tally = dict.fromkeys(STATES, 0)
        for row in rows:
            parts = [esc(row.label[width + 1 :]), " "]
            states = (None if key is None else grid.states[key] for key in row.cells)
            for state, run in groupby(states):
                n = sum(1 for _ in run)
                if state is None:
                    parts.append("  " * n)
                    continue
                tally[state] += n
                parts.append(f"<i class={state[0]}>{(_GLYPH[state] + ' ') * n}</i>")
            lines.append("".join(parts))
        shown = ", ".join(f"{n} {s}" for s, n in tally.items() if n)
        body = "\n".join(["   " + esc(head), *lines])  # a row label: a day or month, 2 wide
        yield f"<details><summary>{esc(section)}: {shown}</summary><pre>{body}</pre></details>"


PIPE_MAX_ROWS = 60
"""The most rows of cells ``dbxdec status`` prints when its output is not a terminal."""


def terminal_table(grid: PartitionGrid, console: Console) -> RenderableType:
    """``grid`` folded to fit ``console`` (:data:`PIPE_MAX_ROWS` when it is not a terminal)."""
    rows = max(console.height - 6, 10) if console.is_terminal else PIPE_MAX_ROWS
    return status_table(grid, max_rows=rows, width=console.width)
