"""The job pages' read model: a job's partition health over its whole definition, laid out
so that 87,662 hourly keys stay one screen, with drill-down; its overdue keys; its
upstream and downstream jobs.

Its own module, beside :mod:`.reading` (which reads backfills: ledgers and journals),
because it reads *jobs*: the key states ``dbxdec status JOB`` reads
(:func:`~..launch.status.status.job_status`, :func:`~..launch.status.status.partition_grid`),
folded as ``dbxdec status`` folds them (:func:`~..launch.status.status_view.fold_grid`),
the overdue keys of ``dbxdec status --overdue`` and the table graph of ``dbxdec graph``.
Plain records; no HTML here (the templates escape everything they render).

Levels of the page (``Focus``):

- the whole definition: hourly keys fold into a row per month and a cell per day showing
  its worst key (:data:`~..launch.status.status_view.WORST_FIRST`); daily keys are a row per
  month and a cell per key; weekly, monthly, static and ``static x TIME`` keys are the
  status grid's calendar, folded as ``dbxdec status`` folds it when it is wider than
  :data:`PAGE_WIDTH` characters or longer than
  :data:`~..launch.status.status_view.PAGE_MAX_ROWS` rows;
- ``?month=YYYY-MM``: an hourly job's days x hours, a daily job's keys of the month;
- ``?day=YYYY-MM-DD``: that day's keys, each with its state, run link and one-line error.

Over a project's local tables (no workspace), a key also shows its provenance (what its
last commit was computed by and from: :mod:`~..launch.provenance.job_keys`), and a
succeeded key that is stale shows ``stale``, its reasons in its cell's title and its line.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Literal

from whenever import Instant

from ..backfill import BackfillDef, MultiBackfill
from ..backfill.deadline import KeyDeadlines
from ..bundle.table_graph import TableGraph, build_table_graph
from ..definitions import JobDefinition, Registry
from ..errors import DbxdecError
from ..launch.ledger.ledger import list_ledgers
from ..launch.plan.request import Connection
from ..launch.plan.states import KeyState
from ..launch.provenance.job_keys import KeyRecord
from ..launch.status.overdue import OverdueKey, failed_checks, overdue_keys
from ..launch.status.status import job_status, partition_grid
from ..launch.status.status_grid import (
    GLYPH,
    HTML_COLOUR,
    KeyDetail,
    PageOrigin,
    PartitionGrid,
    build_grid,
)
from ..launch.status.status_view import (
    PAGE_MAX_ROWS,
    FoldedCell,
    FoldedGrid,
    choose_fold,
    fold_grid,
)
from .viewer import Viewer

Level = Literal["all", "month", "day"]
DRILLED_KINDS = ("hourly", "daily")
"""The kinds whose page drills down by month and day (their keys start ``YYYY-MM-DD``)."""
OVERDUE_SHOWN = 200
"""The most overdue keys the page lists (it counts them all)."""
FAILED_SHOWN = 500
"""The most failed and cancelled keys a job without drill-down lists under its grid."""
PAGE_WIDTH = 200
"""Characters a folded calendar of a weekly, monthly or static job may take (as the
status page's)."""
_MONTH = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_ERROR_CHARS = 300


class BadQuery(DbxdecError):
    """A query value of the wrong format (the page answers 400, one line)."""

    exit_code = 2


class NoSuchPart(DbxdecError):
    """A well-formed month or day without keys of the job (the page answers 404, one line)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class JobLine:
    """One line of the jobs page: a job with a backfill definition."""

    name: str
    kind: str
    range: str
    schedule: str


def job_lines(registry: Registry) -> list[JobLine]:
    """The project's jobs that have a backfill definition, by name."""
    lines = []
    for job in sorted((d for d in registry if d.backfill is not None), key=lambda d: d.name):
        assert job.backfill is not None
        schedule = "-"
        if job.schedule is not None:
            schedule = f"{job.schedule.expression} ({job.schedule.timezone})"
        lines.append(JobLine(job.name, job.backfill.kind, _range(job), schedule))
    return lines


def _range(job: JobDefinition) -> str:
    backfill = job.backfill
    if isinstance(backfill, MultiBackfill):
        return f"{', '.join(backfill.static.keys())} x {_range_of(backfill.time)}"
    return _range_of(backfill)


def _range_of(backfill: BackfillDef | None) -> str:
    start = getattr(backfill, "start_date", None)
    if start is None:  # static keys
        keys = backfill.keys() if backfill is not None else []
        shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        return f"{len(keys)} keys: {shown}"
    end = getattr(backfill, "end_date", None) or "now"
    return f"{start} .. {end} ({getattr(backfill, 'tz', 'UTC')})"


@dataclass(frozen=True, slots=True)
class Focus:
    """Which part of a job the page shows: all of it, a month (``YYYY-MM``) or a day
    (``YYYY-MM-DD``)."""

    month: str = ""
    day: str = ""

    @property
    def level(self) -> Level:
        return "day" if self.day else "month" if self.month else "all"

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> Focus:
        """The focus of a page's query string (``month=``, ``day=``).

        Raises:
            BadQuery: a value of the wrong format, or both given.
        """
        month, day = query.get("month"), query.get("day")
        if month is not None and day is not None:
            raise BadQuery("give month=YYYY-MM or day=YYYY-MM-DD, not both")
        if month is not None:
            if not _MONTH.fullmatch(month):
                raise BadQuery(f"month must be YYYY-MM (e.g. 2024-03), not {month[:20]!r}")
            return cls(month=month)
        if day is not None:
            try:
                if not _DAY.fullmatch(day):
                    raise ValueError(day)
                date.fromisoformat(day)
            except ValueError:
                raise BadQuery(
                    f"day must be YYYY-MM-DD (e.g. 2024-03-05), not {day[:20]!r}"
                ) from None
            return cls(day=day)
        return cls()


@dataclass(frozen=True, slots=True)
class Cell:
    """A cell of the page's grid: a key or a period of keys, shown by its (worst) state."""

    state: KeyState
    title: str
    href: str | None = None
    label: str = ""  # shown beside the glyph: a static key

    @property
    def glyph(self) -> str:
        return GLYPH[self.state]


@dataclass(frozen=True, slots=True)
class Row:
    """A row of the grid: its label, where the label leads, and its cells (``None``: a
    calendar slot without a key)."""

    label: str
    href: str | None
    cells: tuple[Cell | None, ...]


@dataclass(frozen=True, slots=True)
class KeyLine:
    """One key of a day (or month, for a daily job): its state and latest run; over local
    tables also why it is stale (``reasons``) and what wrote it, per table (``records``)."""

    key: str
    state: KeyState
    run_id: str
    url: str | None
    error: str
    reasons: tuple[str, ...] = ()
    records: tuple[KeyRecord, ...] = ()

    @property
    def glyph(self) -> str:
        return GLYPH[self.state]


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An upstream or downstream job: the table between and how keys map; ``linked``: the
    job has a page (a backfill definition)."""

    job: str
    table: str
    keys: str
    linked: bool


@dataclass
class JobHealth:
    """What the job page shows."""

    job: str
    kind: str
    range: str
    origin: PageOrigin
    focus: Focus
    total: int
    counts: list[tuple[KeyState, str, int]]  # a state, its glyph, its keys
    unit: str
    columns: tuple[str, ...] = ()
    rows: list[Row] = field(default_factory=list)
    keys: list[KeyLine] = field(default_factory=list)
    overdue: list[tuple[OverdueKey, str]] | None = None  # with when it was due
    overdue_total: int = 0
    deadline: str = ""
    upstream: list[Neighbour] = field(default_factory=list)
    downstream: list[Neighbour] = field(default_factory=list)
    graph_error: str = ""
    part_counts: list[tuple[KeyState, str, int]] = field(default_factory=list)  # month, day
    before: str = ""  # the query of the month or day before this one ("": none)
    after: str = ""

    @property
    def drills(self) -> bool:
        return self.kind in DRILLED_KINDS

    @property
    def parent(self) -> str | None:
        """The query of the level above (``""``: the whole job), ``None`` at the top."""
        if self.focus.day and self.kind == "hourly":
            return f"?month={self.focus.day[:7]}"
        return "" if self.focus.level != "all" else None


COLOURS: Mapping[KeyState, str] = HTML_COLOUR
"""The colour of each key state: the status page's."""


def job_health(
    job: JobDefinition,
    registry: Registry,
    *,
    root: Path,
    viewer: Viewer,
    connection: Connection | None,
    focus: Focus,
    now: datetime,
    warehouse: Path | None = None,
) -> JobHealth:
    """``job``'s page at ``focus``: key states from the workspace's run history and the local
    ledgers as the viewer sees them (``connection`` ``None``: the local ledgers alone, and
    with the project's local ``warehouse`` its keys' provenance and stale keys).

    Raises:
        BadQuery: a month or day for a job that does not drill down.
        NoSuchPart: the month or day holds no key of the job.
        UsageError, WorkspaceRejected: as ``dbxdec status JOB``.
    """
    backfill = job.backfill
    assert backfill is not None
    kind = backfill.kind
    if focus.level != "all" and kind not in DRILLED_KINDS:
        raise BadQuery(f"a {kind} job's page has no month or day: those are for hourly and daily")
    local = connection is None or viewer.client is None  # no workspace: the ledgers
    where = Connection(local=True) if local or connection is None else connection
    status = job_status(
        job,
        where,
        root=root,
        now=now,
        client=viewer.client,
        restore=False,
        warehouse=warehouse if local else None,
        jobs=list(registry),
    )
    grid, origin = partition_grid(job, status, start=None, end=None)
    counts = grid.counts()
    health = JobHealth(
        job.name,
        kind,
        _range(job),
        origin,
        focus,
        len(grid.states),
        [(s, GLYPH[s], counts.get(s, 0)) for s in grid.shown_states],
        "key",
    )
    if focus.level == "all":
        _whole(health, grid)
    elif focus.level == "month":
        _month(health, grid, focus.month)
    else:
        _day(health, grid, focus.day)
    if job.deadlines is not None:
        ledgers = list_ledgers(root, job.name, backend="local" if local else None)
        late = overdue_keys(job, status, now=now, checks=failed_checks(ledgers))
        tz = job.deadlines.tz
        health.overdue = [(key, due_text(key, tz)) for key in late[:OVERDUE_SHOWN]]
        health.overdue_total = len(late)
        health.deadline = _rule(job.deadlines)
    _neighbours(health, registry)
    return health


def _whole(health: JobHealth, grid: PartitionGrid) -> None:
    if grid.kind == "hourly":
        _folded(health, fold_grid(grid, "day"), drill=True)
    elif grid.kind == "daily":  # a row per month, a cell per key
        _per_key(health, grid, row_href=lambda month: f"?month={month}", cell_href=_day_query)
    else:  # a cell per key while that fits (as ``dbxdec status`` on a wide terminal)
        folded = choose_fold(grid, max_rows=PAGE_MAX_ROWS, width=PAGE_WIDTH)
        if folded is None:
            _per_key(health, grid)
        else:
            _folded(health, folded, drill=False)
    failed = (KeyState.FAILED, KeyState.CANCELLED, KeyState.STALE)
    if grid.kind not in DRILLED_KINDS:  # no drill-down: the failed keys are listed here
        shown = [key for key, state in grid.states.items() if state in failed][:FAILED_SHOWN]
        health.keys = [_key_line(grid, key) for key in shown]


def _folded(health: JobHealth, folded: FoldedGrid, *, drill: bool) -> None:
    health.unit = folded.unit
    health.columns = tuple(c[-2:] for c in folded.columns)

    def cell(found: FoldedCell | None) -> Cell | None:
        if found is None:
            return None
        href = f"?day={found.label}" if drill else None
        return Cell(found.worst, found.describe(), href)

    health.rows = [
        Row(row.label, f"?month={row.label}" if drill else None, tuple(map(cell, row.cells)))
        for row in folded.rows
    ]


def _per_key(
    health: JobHealth,
    grid: PartitionGrid,
    *,
    row_href: Callable[[str], str] | None = None,
    cell_href: Callable[[str], str] | None = None,
) -> None:
    """A cell per key; ``row_href``, ``cell_href``: where a row (by its label) and a cell
    (by its key) lead."""
    health.unit = "hour" if grid.kind == "hourly" else "key"
    health.columns = grid.columns
    details = grid.details

    def cell(key: str | None) -> Cell | None:
        if key is None:
            return None
        state = grid.states[key]
        href = cell_href(key) if cell_href else None
        label = key if grid.kind == "static" else ""
        reasons = grid.stale_reasons(key) if state == KeyState.STALE else ()
        return Cell(state, _title(key, state, details.get(key), reasons), href, label)

    health.rows = [
        Row(
            row.label,
            row_href(row.label) if row_href else None,
            tuple(cell(key) for key in row.cells),
        )
        for row in grid.rows
    ]


def _title(
    key: str, state: KeyState, detail: KeyDetail | None, reasons: tuple[str, ...] = ()
) -> str:
    title = f"{key}: {state}"
    if detail is not None and detail.run_id:
        title += f", run {detail.run_id}"
    if detail is not None and detail.error:
        title += f": {_one_line(detail.error)}"
    if reasons:
        title += f"; stale: {'; '.join(reasons)}"
    return title


def _part(health: JobHealth, grid: PartitionGrid, prefix: str, size: int) -> list[str]:
    """The keys starting with ``prefix`` (a month ``YYYY-MM-`` or a day), in order; sets
    the part's counts and the neighbouring parts (``size``: the characters of a part's
    label, 7 or 10)."""
    ordered = list(grid.states)
    positions = [i for i, key in enumerate(ordered) if key.startswith(prefix)]
    if not positions:
        return []
    first, last = positions[0], positions[-1]
    keys = ordered[first : last + 1]
    found = Counter(grid.states[key] for key in keys)
    health.part_counts = [(s, GLYPH[s], found.get(s, 0)) for s in grid.shown_states]
    name = "month" if size == 7 else "day"
    if first > 0:
        health.before = f"?{name}={ordered[first - 1][:size]}"
    if last + 1 < len(ordered):
        health.after = f"?{name}={ordered[last + 1][:size]}"
    return keys


def _month(health: JobHealth, grid: PartitionGrid, month: str) -> None:
    keys = _part(health, grid, month + "-", 7)
    if not keys:
        raise NoSuchPart(f"job {grid.job!r} has no keys in {month} (its keys: {health.range})")
    if grid.kind == "hourly":  # a row per day, a cell per hour
        days = build_grid(grid.job, "hourly", keys, grid.states)
        kept = {key: grid.details[key] for key in keys if key in grid.details}
        days = replace(days, details=kept, provenance=grid.provenance)  # as the job's grid
        _per_key(health, days, row_href=_day_query, cell_href=_day_query)
    else:
        health.keys = [_key_line(grid, key) for key in keys]


def _day_query(key: str) -> str:
    return f"?day={key[:10]}"


def _day(health: JobHealth, grid: PartitionGrid, day: str) -> None:
    keys = _part(health, grid, day + "T" if grid.kind == "hourly" else day, 10)
    if not keys:
        raise NoSuchPart(f"job {grid.job!r} has no keys on {day} (its keys: {health.range})")
    health.keys = [_key_line(grid, key) for key in keys]


def _key_line(grid: PartitionGrid, key: str) -> KeyLine:
    state = grid.states[key]
    records = grid.provenance.records.get(key, ()) if grid.provenance is not None else ()
    reasons = grid.stale_reasons(key)
    detail = grid.details.get(key)
    if detail is None:
        return KeyLine(key, state, "", None, "", reasons, records)
    error = _one_line(detail.error)
    return KeyLine(key, state, detail.run_id or "", detail.url, error, reasons, records)


def _one_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:_ERROR_CHARS] if lines else ""


def _neighbours(health: JobHealth, registry: Registry) -> None:
    """The jobs whose tables ``health.job`` reads, and those reading its tables (``dbxdec
    graph``'s edges); a definition error is shown in its place."""
    try:
        graph: TableGraph = build_table_graph(registry)
    except DbxdecError as exc:
        health.graph_error = exc.render().splitlines()[0]
        return
    pages = {d.name for d in registry if d.backfill is not None}
    health.upstream = [
        Neighbour(e.upstream, e.table, e.keys.describe(), e.upstream in pages)
        for e in graph.upstreams(health.job)
    ]
    health.downstream = [
        Neighbour(e.downstream, e.table, e.keys.describe(), e.downstream in pages)
        for e in graph.dependants(health.job)
    ]


def _rule(deadlines: KeyDeadlines) -> str:
    """``09:00 Europe/Amsterdam`` or ``2:00:00 after the window`` (as ``status --overdue``)."""
    deadline = deadlines.deadline
    if deadline.at is not None:
        return f"{deadline.at} {deadlines.tz}"
    return f"{deadline.after} after the window"


def due_text(key: OverdueKey, tz: str) -> str:
    """When ``key`` was due, in the deadline's zone ``tz``."""
    return Instant(key.due).to_tz(tz).to_stdlib().strftime("%Y-%m-%d %H:%M %Z")
