"""Which keys are stale, and why: ``dbxdec stale``'s judgment over the provenance index.

A written key is stale when
* its commit carried no provenance (another writer, a full refresh's swap): nothing vouches
  for it;
* the task that wrote it has other code now (its fingerprint differs, or it is gone);
* a table it read has committed row changes since the version the read was pinned to,
  in the windows the key reads (its own and its lookback's). A change is placed by the
  partition values of the column the read filters on; for a table dbxdec writes, by its
  key partitions (a partition holds its key's rows); else by the least and greatest value
  of that column in the commit's files, when every file states them (a ``remove`` action
  often does not); else it counts for every key; or
* a key it reads of a table dbxdec writes is itself stale (so a change reaches every
  dependant, in every job, before anything is recomputed).

Tables are judged writers first, in the table graph's order across jobs and the task
order within one, so a dependant sees its upstream's verdicts. Local tables only: their
history is read from their log files (no JVM), through the index.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from ...backfill.base import BackfillDef
from ...backfill.wire.provenance import Provenance
from ...bundle.table_graph import build_table_graph, table_key
from ...definitions import JobDefinition
from ...definitions.fingerprint import task_fingerprint
from ...runtime.io.spark_table import TableName
from ..ledger.place import Place
from .index import WHOLE_TABLE, Change, TableIndex, read_index

Interval = tuple[float, float]
"""Seconds since the epoch, ``[start, end)``."""
_EVERYWHERE: Interval = (float("-inf"), float("inf"))


@dataclass(frozen=True, slots=True)
class Writer:
    """A task that writes a table, and the column its keys are in."""

    job: JobDefinition
    task: str
    table: str
    column: str | None


@dataclass(frozen=True, slots=True)
class StaleKey:
    """A key of a table that its current code and inputs would not write as it is."""

    job: str
    task: str
    table: str
    key: str
    reasons: tuple[str, ...]
    provenance: Provenance | None

    def to_json(self) -> dict[str, Any]:
        record = self.provenance.to_json() if self.provenance is not None else None
        if record is not None:
            record.pop("keys", None)  # the commit's other keys: not this key's business
        return {
            "job": self.job,
            "task": self.task,
            "table": self.table,
            "key": self.key,
            "reasons": list(self.reasons),
            "provenance": record,
        }


@dataclass
class StaleReport:
    """What ``stale`` found: the stale keys (writers first), and how many keys it judged."""

    keys: list[StaleKey] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    judged_in: dict[str, int] = field(default_factory=dict)
    """Keys judged per table."""

    @property
    def judged(self) -> int:
        """How many keys were judged (in the tables kept)."""
        return sum(self.judged_in.get(table_key(t), 0) for t in self.tables)

    def of(self, table: str) -> list[StaleKey]:
        return [k for k in self.keys if table_key(k.table) == table_key(table)]


def writers_in_order(jobs: Sequence[JobDefinition]) -> list[Writer]:
    """Every task writing a table, upstream jobs first (the table graph's order), each
    job's tasks in dependency order."""
    graph = build_table_graph(jobs)
    by_name = {job.name: job for job in jobs}
    incoming = {name: {e.upstream for e in graph.edges if e.downstream == name} for name in by_name}
    order: list[str] = []
    ready = [name for name in graph.jobs if not incoming[name]]
    while ready:
        name = ready.pop(0)
        order.append(name)
        for other in graph.jobs:
            if name in incoming[other]:
                incoming[other].discard(name)
                if not incoming[other] and other not in order and other not in ready:
                    ready.append(other)
    order += [name for name in graph.jobs if name not in order]  # refused by `graph` anyway
    writers: list[Writer] = []
    for name in order:
        job = by_name[name]
        for task in job.graph.topological_order():
            manager = job.graph[task].definition.io_manager
            for table in getattr(manager, "tables", ()) if manager is not None else ():
                column = getattr(manager, "partition_column", None)
                writers.append(Writer(job, task, str(table), column))
    return writers


class StaleJudge:
    """Judges every written key of a project's local tables (see the module docs)."""

    def __init__(self, jobs: Sequence[JobDefinition], warehouse: Path, place: Place) -> None:
        self.jobs = {job.name: job for job in jobs}
        self.writers = writers_in_order(jobs)
        self.warehouse = warehouse
        self.place = place
        self._indexes: dict[str, TableIndex | None] = {}
        self._code: dict[tuple[str, str], str] = {}
        self._stale: dict[str, list[tuple[Interval, str]]] = {}
        self._written_by = {table_key(w.table): w for w in self.writers}
        self._places: dict[tuple[str, int, str | None, str], list[Interval | None] | None] = {}

    def index(self, table: str) -> TableIndex | None:
        """The table's index, read once (``None``: no local table of that name)."""
        name = table_key(table)
        if name not in self._indexes:
            folder = TableName.parse(name).local_path(self.warehouse)
            exists = folder.is_dir()
            self._indexes[name] = read_index(self.place, name, folder) if exists else None
        return self._indexes[name]

    def code(self, job: str, task: str) -> str | None:
        """The task's current fingerprint (``None``: no such task now)."""
        if (job, task) not in self._code:
            definition = self.jobs.get(job)
            node = definition.graph.nodes.get(task) if definition is not None else None
            self._code[(job, task)] = "" if node is None else task_fingerprint(node.definition.fn)
        return self._code[(job, task)] or None

    def judge(self) -> StaleReport:
        report = StaleReport()
        for writer in self.writers:
            index = self.index(writer.table)
            report.tables.append(writer.table)
            stale: list[tuple[Interval, str]] = []
            written = list(index.written()) if index is not None else []
            name = table_key(writer.table)
            report.judged_in[name] = report.judged_in.get(name, 0) + len(written)
            for key, record in written:
                reasons = self._reasons(writer, index, key, record) if index else []
                if reasons:
                    report.keys.append(
                        StaleKey(
                            writer.job.name, writer.task, writer.table, key, tuple(reasons), record
                        )
                    )
                    stale.append((_key_interval(writer.job.backfill, key), key))
            stale.sort()
            self._stale[table_key(writer.table)] = stale
        return report

    def _reasons(
        self, writer: Writer, index: TableIndex, key: str, record: Provenance | None
    ) -> list[str]:
        if record is None:
            version, operation = index.foreign.get(key, (index.version, "?"))
            return [f"written by a commit without provenance (version {version}, {operation})"]
        reasons: list[str] = []
        current = self.code(record.job, record.task)
        if current is None:
            reasons.append(f"task {record.task!r} of job {record.job!r} no longer exists")
        elif current != record.code:
            reasons.append(
                f"code of task {record.task!r} changed (written by {record.code}, now {current})"
            )
        reader = self.jobs.get(record.job)
        spans: list[Interval] | None = None
        for table, version in sorted(record.reads.items()):
            later = []
            read = self.index(table)
            if read is not None:
                later = read.changes_after(version)
            upstream = self._stale.get(table_key(table), [])
            if not later and not upstream:
                continue
            if spans is None:
                spans = _read_spans(reader.backfill if reader else None, key)
            column, tz = _read_column(reader, table, self._written_by.get(table_key(table)))
            hits = [c for c in later if self._touches(table, c, column, tz, spans)]
            if hits:
                versions = ", ".join(str(c.version) for c in hits)
                operations = ", ".join(sorted({c.operation for c in hits}))
                reasons.append(
                    f"{table} changed in the windows this key reads since version {version} "
                    f"(version {versions}: {operations})"
                )
            upstream_keys = _overlapping(upstream, spans)
            if upstream_keys:
                shown = ", ".join(upstream_keys[:3]) + (" ..." if len(upstream_keys) > 3 else "")
                reasons.append(f"reads {table} key {shown}, which is stale")
        return reasons

    def _touches(
        self, table: str, change: Change, column: str | None, tz: str, spans: Sequence[Interval]
    ) -> bool:
        """Whether ``change`` of ``table`` may have changed rows in ``spans``."""
        cache_key = (table_key(table), change.version, column, tz)
        if cache_key not in self._places:
            writer = self._written_by.get(table_key(table))
            places = _places(change, column, tz, None)
            if places is None and writer is not None and writer.column in change.values:
                # a table dbxdec writes: each partition holds one key's rows, in its window
                places = _places(change, writer.column, tz, writer.job.backfill)
            self._places[cache_key] = places
        places = self._places[cache_key]
        return places is None or any(p is None or _overlap(p, s) for p in places for s in spans)


def find_stale(
    jobs: Sequence[JobDefinition], warehouse: Path, place: Place, *, only: Iterable[str] = ()
) -> StaleReport:
    """The stale keys of every local table the jobs write; with ``only`` (job names or
    table names), the report keeps those jobs' and tables' keys (every upstream is still
    judged: a key is stale through them)."""
    judge = StaleJudge(jobs, warehouse, place)
    report = judge.judge()
    wanted = {table_key(name) for name in only}
    if wanted:

        def kept(job: str, table: str) -> bool:
            return job.lower() in wanted or table_key(table) in wanted

        report.keys = [k for k in report.keys if kept(k.job, k.table)]
        report.tables = [w.table for w in judge.writers if kept(w.job.name, w.table)]
    return report


# -- time arithmetic: windows as epoch seconds ------------------------------------------


def _key_interval(backfill: BackfillDef | None, key: str) -> Interval:
    if key == WHOLE_TABLE or backfill is None or not backfill.is_time_based:
        return _EVERYWHERE
    try:
        window = backfill.window(key)
    except Exception:  # not a key of the backfill (any more): it may be anywhere
        return _EVERYWHERE
    if window is None:
        return _EVERYWHERE
    return (window.start_utc().timestamp(), window.end_utc().timestamp())


def _read_spans(backfill: BackfillDef | None, key: str) -> list[Interval]:
    """The windows a run of ``key`` reads: its own and its lookback's."""
    if key == WHOLE_TABLE or backfill is None or not backfill.is_time_based:
        return [_EVERYWHERE]
    lookback = int(getattr(backfill, "lookback", 0) or 0)
    try:
        before = backfill.previous_keys(key, lookback) if lookback else []  # type: ignore[attr-defined]
    except Exception:  # not a key of the backfill (any more)
        return [_EVERYWHERE]
    return [_key_interval(backfill, k) for k in [*before, key]]


def _read_column(
    reader: JobDefinition | None, table: str, writer: Writer | None
) -> tuple[str | None, str]:
    """The column a reader's windows filter ``table`` on (a source's ``event_time``, else
    the writer's key column) and the reader's time zone."""
    tz = str(getattr(reader.backfill, "tz", "UTC") if reader and reader.backfill else "UTC")
    if reader is not None:
        for declared in reader.sources:
            if table_key(declared.name) == table_key(table):
                return declared.event_time, tz
    return (writer.column if writer is not None else None), tz


def _value_interval(value: str, tz: str, backfill: BackfillDef | None) -> Interval | None:
    """Where one partition value or statistic lies in time: a key of the writer's backfill,
    a date (a day of the reader's time zone), or an instant."""
    if backfill is not None and backfill.is_time_based:
        interval = _key_interval(backfill, value)
        if interval != _EVERYWHERE:
            return interval
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime.combine(day, time(0), ZoneInfo(tz))
            return (start.timestamp(), (start + timedelta(days=1)).timestamp())
        at = datetime.fromisoformat(text.replace(" ", "T", 1).replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return (at.timestamp(), at.timestamp() + 1e-6)


def _places(
    change: Change, column: str | None, tz: str, backfill: BackfillDef | None
) -> list[Interval | None] | None:
    """Where ``change`` fell in time on ``column`` (``None``: it does not say; an item
    ``None``: that value could not be placed)."""
    if column is not None and column in change.values:
        return [_value_interval(v, tz, backfill) for v in change.values[column]]
    if column is not None and column in change.ranges and backfill is None:
        low, high = change.ranges[column]
        first, last = _value_interval(low, tz, None), _value_interval(high, tz, None)
        return [None if first is None or last is None else (first[0], last[1])]
    return None


def _overlap(a: Interval, b: Interval) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _overlapping(stale: Sequence[tuple[Interval, str]], spans: Sequence[Interval]) -> list[str]:
    """The stale keys (sorted by window) whose windows meet ``spans``."""
    if not stale:
        return []
    if stale[0][0][0] == float("-inf"):  # a whole table (or an unplaced key): every span
        return sorted({item[1] for item in stale if item[0][0] == float("-inf")})
    found: list[str] = []
    starts = [item[0][0] for item in stale]
    for span in spans:
        # windows do not overlap each other, so those meeting a span sit together,
        # from the last that starts before it (whole-table ones start at -inf)
        at = max(bisect.bisect_left(starts, span[0]) - 1, 0)
        while at < len(stale) and stale[at][0][0] < span[1]:
            if _overlap(stale[at][0], span):
                found.append(stale[at][1])
            at += 1
    return sorted(set(found))


def summary(report: StaleReport) -> Mapping[str, int]:
    """Stale keys per table."""
    counts: dict[str, int] = {}
    for key in report.keys:
        counts[key.table] = counts.get(key.table, 0) + 1
    return counts
