"""The partition health grid of ``dbxdec status``: one cell per key, in a calendar, each
state with a glyph besides its colour (``■ ✗ ⊘ ○ · ? □``); a cell's details are its key's
latest run in the local ledgers (:class:`KeyDetail`).

``stale`` (``□``) is shown only where the keys' provenance was read (local tables:
:attr:`PartitionGrid.provenance`); it replaces ``succeeded`` alone: a key that failed, was
cancelled or is running keeps that state, the more urgent one (its stale reasons are
still in its provenance)."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...backfill.multi import KIND_PREFIX as MULTI_KIND_PREFIX
from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...errors import counted
from ..ledger.ledger import Attempt, Ledger
from ..plan.history import KeyHistory, attempt_key_state
from ..plan.states import KeyState
from ..provenance.job_keys import JobProvenance

STATES: tuple[KeyState, ...] = (
    KeyState.SUCCEEDED,
    KeyState.FAILED,
    KeyState.RUNNING,
    KeyState.MISSING,
    KeyState.UNKNOWN,
    KeyState.CANCELLED,  # last, as unknown was added: the index of each older state stays
)
"""The states every grid shows, from runs (its legend's, in order)."""
KEY_STATES: tuple[KeyState, ...] = (*STATES, KeyState.STALE)
"""Every state a grid's key takes: :data:`STATES`, then ``stale`` (shown only where the
keys' provenance was read)."""
_STYLE: dict[KeyState, str] = {
    KeyState.SUCCEEDED: "green",
    KeyState.FAILED: "bold red",
    KeyState.CANCELLED: "magenta",
    KeyState.RUNNING: "yellow",
    KeyState.MISSING: "grey50",
    KeyState.UNKNOWN: "blue",
    KeyState.STALE: "dark_orange",
}
GLYPH: dict[KeyState, str] = {  # also the app's pages' (app/reading.py, app/job_health.py)
    KeyState.SUCCEEDED: "■",
    KeyState.FAILED: "✗",
    KeyState.CANCELLED: "⊘",
    KeyState.RUNNING: "○",
    KeyState.MISSING: "·",
    KeyState.UNKNOWN: "?",
    KeyState.STALE: "□",
}
HTML_COLOUR: dict[KeyState, str] = {
    KeyState.SUCCEEDED: "#2da44e",
    KeyState.FAILED: "#cf222e",
    KeyState.CANCELLED: "#6e7781",
    KeyState.RUNNING: "#d4a72c",
    KeyState.MISSING: "#d0d7de",
    KeyState.UNKNOWN: "#b6e3ff",
    KeyState.STALE: "#fb8f44",
}
_STATIC_ROW = 10


@dataclass(frozen=True, slots=True)
class GridRow:
    """A row label and its cells; ``None`` is a calendar slot without a key."""

    label: str
    cells: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class PartitionGrid:
    """Keys, their states and a calendar layout; ``provenance``: the keys' provenance and
    stale verdicts, when they were read (then ``stale`` is one of the states shown)."""

    job: str
    kind: str
    columns: tuple[str, ...]
    rows: tuple[GridRow, ...]
    states: Mapping[str, KeyState]
    details: Mapping[str, KeyDetail] = field(default_factory=dict)
    provenance: JobProvenance | None = None

    def counts(self) -> Counter[KeyState]:
        return Counter(self.states.values())

    @property
    def shown_states(self) -> tuple[KeyState, ...]:
        """The states the legend lists: ``stale`` only when a key is shown stale (so a
        grid with nothing stale reads as before provenance was judged)."""
        return KEY_STATES if KeyState.STALE in self.states.values() else STATES

    def stale_reasons(self, key: str) -> tuple[str, ...]:
        """Why ``key`` is stale (empty: it is not, or it was not judged)."""
        return self.provenance.reasons(key) if self.provenance is not None else ()


def build_grid(
    job: str,
    kind: str,
    keys: Sequence[str],
    history: KeyHistory,
    details: Mapping[str, KeyDetail] | None = None,
) -> PartitionGrid:
    """Lay ``keys`` out for a backfill of ``kind`` (daily, hourly, weekly, monthly, static);
    ``details`` of a key are kept only when they describe its state (not an older run).
    """
    states: dict[str, KeyState] = {key: history.get(key, KeyState.MISSING) for key in keys}
    if kind in _CALENDARS:
        columns, rows = _calendar(keys, *_CALENDARS[kind])
    elif kind.startswith(MULTI_KIND_PREFIX):
        columns, rows = _per_static(keys)
    else:
        columns = tuple(str(i + 1) for i in range(min(_STATIC_ROW, len(keys))))
        rows = tuple(
            GridRow(f"#{i + 1}", tuple(keys[i : i + _STATIC_ROW]))
            for i in range(0, len(keys), _STATIC_ROW)
        )
    as_key_state: dict[str, KeyState] = {}  # a few attempt states for 87,000 keys
    kept = {}
    for key, detail in (details or {}).items():
        state = as_key_state.get(detail.state)
        if state is None:
            state = as_key_state[detail.state] = attempt_key_state(detail.state)
        if states.get(key) == state:
            kept[key] = detail
    return PartitionGrid(job, kind, columns, rows, states, kept)


def _per_static(keys: Sequence[str]) -> tuple[tuple[str, ...], tuple[GridRow, ...]]:
    """One row per static value of ``STATIC:TIME`` keys, one column per time key."""
    times: dict[str, int] = {}
    rows: dict[str, dict[str, str]] = {}
    for key in keys:
        static, _, time = key.partition(MULTI_SEPARATOR)
        times.setdefault(time, len(times))
        rows.setdefault(static, {})[time] = key
    ordered = sorted(times, key=times.__getitem__)
    return tuple(ordered), tuple(
        GridRow(static, tuple(cells.get(t) for t in ordered)) for static, cells in rows.items()
    )


_CALENDARS: dict[str, tuple[slice, slice, int, int]] = {
    # kind: (the row label's part of a key, the column's, columns, the first column's number)
    "daily": (slice(0, 7), slice(8, 10), 31, 1),
    "hourly": (slice(0, 10), slice(11, 13), 24, 0),
    "monthly": (slice(0, 4), slice(5, 7), 12, 1),
    "weekly": (slice(0, 4), slice(6, 8), 53, 1),
}


def _calendar(
    keys: Sequence[str], row: slice, column: slice, width: int, first: int
) -> tuple[tuple[str, ...], tuple[GridRow, ...]]:
    rows: dict[str, list[str | None]] = {}
    for key in keys:
        rows.setdefault(key[row], [None] * width)[int(key[column]) - first] = key
    columns = tuple(str(first + i) for i in range(width))
    return columns, tuple(GridRow(label, tuple(cells)) for label, cells in rows.items())


def glyph_table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[tuple[str, list[Text]]],
    *,
    wide: int,
    width: int | None = None,
) -> RenderableType:
    """Rows of glyph cells as rich tables, every fifth column labelled; the label column is
    at least ``wide`` minus the cells' width. Wider than ``width`` characters, the columns
    wrap: a table per run of columns that fits (a multiple of five, so the labels keep
    their places), the rows repeated under each; no label or number is ever cut.
    """
    rows = list(rows)
    label = max((len(name) + 1 for name, _ in rows), default=1)
    per_table = len(columns)
    if width is not None and label + 2 * len(columns) > width:
        per_table = max(5, (width - label) // 2 // 5 * 5)
        wide = 0  # the title is on a line of its own anyway
    tables = []
    for first in range(0, max(len(columns), 1), max(per_table, 1)):
        shown = columns[first : first + per_table]
        table = Table(title=None if first else title, box=None, padding=(0, 0), pad_edge=False)
        table.add_column(
            "", style="bold", no_wrap=True, min_width=max(label, wide - 2 * len(shown))
        )
        for number, column in enumerate(shown, start=first):
            table.add_column(
                column if number % 5 == 0 else "", justify="left", no_wrap=True, min_width=2
            )
        for name, cells in rows:
            table.add_row(f"{name} ", *cells[first : first + per_table])
        tables.append(table)
    return tables[0] if len(tables) == 1 else Group(*tables)


def grid_table(grid: PartitionGrid, width: int | None = None) -> RenderableType:
    """The grid as rich tables (colours per state) and its legend, in ``width`` characters
    (``None``: as wide as the grid needs)."""
    title = f"{grid.job}: {counted(len(grid.states), f'{grid.kind} key')}"
    static = grid.kind == "static"
    multi = grid.kind.startswith(MULTI_KIND_PREFIX)
    # a time key is wider than its cell: its last field
    columns = ["" if static else c[-2:] if multi else c for c in grid.columns]

    def cell(key: str | None) -> Text:
        if key is None:
            return Text(" ")
        state = grid.states[key]
        return Text(f"{GLYPH[state]} {key}  " if static else f"{GLYPH[state]} ", _STYLE[state])

    rows = ((row.label, [cell(key) for key in row.cells]) for row in grid.rows)
    # a narrow grid widens its label column so its title stays on one line
    wide = min(len(title), width or len(title))
    table = glyph_table(title, columns, rows, wide=wide, width=width)
    return Group(table, *(Text(line) for line in legend_lines(grid, width)))


def legend_lines(grid: PartitionGrid, width: int | None = None) -> list[str]:
    """:func:`legend` in lines of at most ``width`` characters, broken between states
    (never inside ``⊘ cancelled 3``)."""
    items = legend(grid).split("  ")
    lines: list[str] = []
    for item in items:
        if lines and (width is None or len(lines[-1]) + 2 + len(item) <= width):
            lines[-1] += f"  {item}"
        else:
            lines.append(item)
    return lines


def legend(grid: PartitionGrid) -> str:
    """What each glyph means, with the count of keys in each state.

    >>> legend(build_grid("j", "static", ["a", "b"], {"a": "failed"}))
    '■ succeeded 0  ✗ failed 1  ○ running 0  · missing 1  ? unknown 0  ⊘ cancelled 0'
    """
    counts = grid.counts()
    return "  ".join(f"{GLYPH[s]} {s} {counts.get(s, 0)}" for s in grid.shown_states)


@dataclass(frozen=True, slots=True)
class PageOrigin:
    """When (timezone-aware) and from where (``source``) a status page was made, and the
    backfills (newest first) whose runs it details.
    """

    made_at: datetime
    source: str
    backfills: tuple[str, ...] = ()


# Each state also has a pattern, so the page reads the same in greyscale or when printed.
_HTML_PATTERN: dict[KeyState, str] = {
    KeyState.SUCCEEDED: "",
    KeyState.FAILED: "background-image: repeating-linear-gradient(45deg, transparent 0 3px, "
    "rgba(255,255,255,.45) 3px 5px);",
    KeyState.CANCELLED: "background-image: linear-gradient(transparent 6px, "
    "rgba(255,255,255,.7) 6px 8px, transparent 8px);",
    KeyState.RUNNING: "background-image: radial-gradient(rgba(0,0,0,.35) 1px, transparent 1.5px); "
    "background-size: 4px 4px;",
    KeyState.MISSING: "outline: 1px dashed #8c959f; outline-offset: -1px;",
    KeyState.UNKNOWN: "outline: 1px dotted #0969da; outline-offset: -1px;",
    KeyState.STALE: "background-image: repeating-linear-gradient(-45deg, transparent 0 3px, "
    "rgba(0,0,0,.2) 3px 4px);",
}
_HTML_STYLE = (
    "body { font-family: sans-serif; } table { border-collapse: separate; border-spacing: 2px; } "
    "td { width: 14px; height: 14px; font-size: 10px; text-align: center; } "
    "td a { color: inherit; text-decoration: none; } "
    "th { font-size: 11px; font-weight: normal; text-align: right; } "
    "table.failures td { width: auto; height: auto; font-size: 12px; text-align: left; "
    "padding: 2px 6px; } p.origin { color: #57606a; font-size: 12px; }"
)


def _cell_title(
    key: str, state: KeyState, detail: KeyDetail | None, reasons: Sequence[str] = ()
) -> str:
    title = f"{key}: {state}"
    if detail is not None and detail.run_id:
        title += f", run {detail.run_id}"
    if detail is not None and detail.checks_off:
        title += " (checks off)"
    if detail is not None and detail.error:
        title += f": {detail.error}"
    if reasons:
        title += f"; stale: {'; '.join(reasons)}"
    return title


def _html_cell(grid: PartitionGrid, key: str | None) -> str:
    esc = html.escape
    if key is None:
        return '<td class="none"></td>'
    state = grid.states[key]
    detail = grid.details.get(key)
    glyph = esc(GLYPH[state])
    text = f"{glyph} {esc(key)}" if grid.kind == "static" else glyph
    if detail is not None and detail.url:
        text = f'<a href="{esc(detail.url)}">{text}</a>'
    reasons = grid.stale_reasons(key) if state is KeyState.STALE else ()
    title = esc(_cell_title(key, state, detail, reasons))
    return f'<td class="{state}" title="{title}">{text}</td>'


NO_DETAILS = (
    "no details: no backfill ledger of this project records this run (a schedule, the Jobs "
    "UI or another machine started it)"
)


def _run_of(grid: PartitionGrid, key: str) -> tuple[str, str, str | None]:
    """The run id, error and run page the page names for ``key``'s latest run."""
    detail = grid.details.get(key)
    if detail is None:
        return "unknown", NO_DETAILS, None
    return detail.run_id or "no run", detail.error or "no error message", detail.url


def runs_table_html(grid: PartitionGrid, state: KeyState, *, folded: bool = False) -> str:
    """The keys in ``state`` (failed or cancelled), one row per run (a ranged run's keys share
    it); ``""`` when none. ``folded``: the heading also counts the rows.
    """
    esc = html.escape
    positions = {key: i for i, key in enumerate(grid.states)}
    groups: list[list[str]] = []
    for key in (k for k, s in grid.states.items() if s == state):
        last = groups[-1] if groups else None
        if (
            last
            and positions[last[-1]] + 1 == positions[key]
            and _run_of(grid, last[-1]) == _run_of(grid, key)
        ):
            last.append(key)
        else:
            groups.append([key])
    if not groups:
        return ""
    rows: list[str] = []
    for group in groups:
        run_id, error, url = _run_of(grid, group[0])
        run = esc(run_id)
        if url:
            run = f'<a href="{esc(url)}">run {run}</a>'
        label = group[0] if len(group) == 1 else f"{group[0]}..{group[-1]} ({len(group)} keys)"
        rows.append(f"<tr><td>{esc(label)}</td><td>{run}</td><td>{esc(error)}</td></tr>")
    count = sum(len(group) for group in groups)
    ranges = f", in {counted(len(rows), 'range')}" if folded else ""
    return (
        f"<h2>{state.capitalize()} keys ({count}{ranges})</h2><table class='failures'>"
        f"<tr><th>keys</th><th>run</th><th>error</th></tr>{''.join(rows)}</table>"
    )


STALE_SHOWN = 500
"""The most stale keys a status page lists with their reasons (it counts them all)."""


def stale_table_html(grid: PartitionGrid) -> str:
    """The keys shown ``stale``, each with its reasons (at most :data:`STALE_SHOWN`);
    ``""`` when none."""
    esc = html.escape
    keys = [key for key, state in grid.states.items() if state is KeyState.STALE]
    if not keys:
        return ""
    rows = "".join(
        f"<tr><td>{esc(key)}</td><td>{esc('; '.join(grid.stale_reasons(key)))}</td></tr>"
        for key in keys[:STALE_SHOWN]
    )
    more = f"<p>The first {STALE_SHOWN} shown.</p>" if len(keys) > STALE_SHOWN else ""
    return (
        f"<h2>Stale keys ({len(keys)})</h2><table class='failures'>"
        f"<tr><th>key</th><th>why</th></tr>{rows}</table>{more}"
    )


def html_page(
    grid: PartitionGrid,
    origin: PageOrigin | None,
    head: str,
    body: Iterable[str],
    *,
    style: str,
    note: str = "",
    after: str = "",
) -> str:
    """A status page: title, origin, legend, ``note``, the table of ``head`` and ``body`` rows,
    then ``after``; ``style`` adds to the page's style.
    """
    esc = html.escape
    counts = grid.counts()
    legend_html = " ".join(
        f'<span class="{s}">&nbsp;{esc(GLYPH[s])}&nbsp;</span> {s} {counts.get(s, 0)}'
        for s in grid.shown_states
    )
    title = esc(f"{grid.job}: partition status ({counted(len(grid.states), f'{grid.kind} key')})")
    made = ""
    if origin is not None:
        made = f"Made {origin.made_at.isoformat(timespec='seconds')} from {origin.source}"
        if origin.backfills:
            made += "; run details from backfill " + ", ".join(origin.backfills)
        made = f"<p class='origin'>{esc(made)}</p>"
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>{_HTML_STYLE} {style}</style></head><body>"
        f"<h1>{title}</h1>{made}<p>{legend_html}</p>{note}"
        f"<table><tr><th></th>{head}</tr>{''.join(body)}</table>{after}</body></html>\n"
    )


def grid_html(
    grid: PartitionGrid, origin: PageOrigin | None = None, *, extra_html: str = ""
) -> str:
    """The grid as a standalone HTML page (no scripts): cells with glyph, pattern and colour, a
    failed key linking to its run; tables of the failed, cancelled and stale keys below, then
    ``extra_html`` (a backfill's timeline).
    """
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in grid.columns)
    body = (
        f"<tr><th>{esc(row.label)}</th>{''.join(_html_cell(grid, key) for key in row.cells)}</tr>"
        for row in grid.rows
    )
    styles = " ".join(
        f"td.{s}, span.{s} {{ background-color: {c}; {_HTML_PATTERN[s]} }}"
        for s, c in HTML_COLOUR.items()
    )
    runs = runs_table_html(grid, KeyState.FAILED) + runs_table_html(grid, KeyState.CANCELLED)
    runs += stale_table_html(grid)
    return html_page(grid, origin, head, body, style=styles, after=runs + extra_html)


@dataclass(frozen=True, slots=True)
class KeyDetail:
    """The latest recorded run of a key (``state``: its attempt's end; ``checks_off``: run with
    ``--no-checks``).
    """

    state: str
    run_id: str | None = None
    url: str | None = None
    error: str = ""
    backfill_id: str = ""
    checks_off: bool = False


def run_page_url(host: str | None, job_id: int | None, run_id: str | None) -> str | None:
    """The Databricks run page of ``run_id``, when host, job and run are known.

    >>> run_page_url("https://adb-1.azuredatabricks.net/", 1001, "95")
    'https://adb-1.azuredatabricks.net/jobs/1001/runs/95'
    >>> run_page_url(None, 1001, "95") is None
    True
    """
    if not host or job_id is None or not run_id:
        return None
    return f"{host.rstrip('/')}/jobs/{job_id}/runs/{run_id}"


def latest_attempts(ledgers: Iterable[Ledger]) -> dict[str, tuple[Ledger, Attempt]]:
    """The latest submitted attempt of every key in ``ledgers``, with its ledger."""
    started_at: dict[str, float] = {}
    latest: dict[str, tuple[Ledger, Attempt]] = {}
    for ledger in ledgers:
        for record in ledger.slices:
            for attempt in record.attempts:
                if attempt.state == "rejected":
                    continue
                started = attempt.submitted_at or ledger.created_at
                found = (ledger, attempt)  # one per attempt: a ranged run's keys share it
                for key in record.keys:
                    if started_at.get(key, started) <= started:
                        started_at[key] = started
                        latest[key] = found
    return latest


def ledger_details(ledgers: Iterable[Ledger]) -> dict[str, KeyDetail]:
    """The latest attempt of every key in ``ledgers`` (:func:`latest_attempts`)."""
    details: dict[str, KeyDetail] = {}
    made: dict[int, KeyDetail] = {}  # one per attempt: a ranged run's keys share it
    for key, (ledger, attempt) in latest_attempts(ledgers).items():
        detail = made.get(id(attempt))
        if detail is None:
            backend, url = ledger.backend, attempt.url
            if url is None and backend.kind == "databricks":
                url = run_page_url(backend.host, backend.job_id, attempt.run_id)
            checks_off = not ledger.options.checks
            detail = made[id(attempt)] = KeyDetail(
                attempt.state, attempt.run_id, url, attempt.error, ledger.id, checks_off
            )
        details[key] = detail
    return details


def unchecked_keys(details: Mapping[str, KeyDetail], keys: Iterable[str]) -> list[str]:
    """The ``keys`` (in their order) whose latest recorded run skipped its checks."""
    return [key for key in keys if key in details and details[key].checks_off]
