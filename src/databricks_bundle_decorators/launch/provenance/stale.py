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
from typing import Any, Generic, TypeVar
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
T = TypeVar("T")


_ReadCheck = tuple[str, int, "Placed[Change] | None", "StaleKeys | None"]
"""A read to place each key against: table, version read, its later changes, its stale
keys."""


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
        record = self.provenance.key_json() if self.provenance is not None else None
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
        self._stale: dict[str, StaleKeys] = {}
        self._written_by = {table_key(w.table): w for w in self.writers}
        self._records: dict[int, tuple[Provenance, str, list[_ReadCheck]]] = {}
        self._changes: dict[tuple[str, int, str | None, str], Placed[Change] | None] = {}

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
            stale: list[str] = []
            written = list(index.written()) if index is not None else []
            name = table_key(writer.table)
            report.judged_in[name] = report.judged_in.get(name, 0) + len(written)
            shared: tuple[Provenance | None, tuple[str, list[_ReadCheck]]] = (None, ("", []))
            for key, record in written:
                if record is not None and shared[0] is not record:
                    shared = (record, self._per_record(record))  # a commit's keys come together
                code_reason, checks = shared[1]
                reasons: Sequence[str]
                if record is not None and not checks:  # what the record's keys share decides
                    reasons = (code_reason,) if code_reason else ()
                else:
                    reasons = self._reasons(writer, index, key, record) if index else []
                if reasons:
                    report.keys.append(
                        StaleKey(
                            writer.job.name, writer.task, writer.table, key, tuple(reasons), record
                        )
                    )
                    stale.append(key)
            self._stale[table_key(writer.table)] = StaleKeys.of(writer.job.backfill, stale)
        return report

    def _reasons(
        self, writer: Writer, index: TableIndex, key: str, record: Provenance | None
    ) -> list[str]:
        if record is None:
            version, operation = index.foreign.get(key, (index.version, "?"))
            return [f"written by a commit without provenance (version {version}, {operation})"]
        code_reason, checks = self._per_record(record)
        reasons = [code_reason] if code_reason else []
        if not checks:
            return reasons
        reader = self.jobs.get(record.job)
        spans = _read_spans(reader.backfill if reader else None, key)
        for table, version, changed, upstream in checks:
            hits = {c.version: c for c in changed.meeting(spans)} if changed else {}
            if hits:
                versions = ", ".join(str(v) for v in sorted(hits))
                operations = ", ".join(sorted({c.operation for c in hits.values()}))
                reasons.append(
                    f"{table} changed in the windows this key reads since version {version} "
                    f"(version {versions}: {operations})"
                )
            upstream_keys = upstream.meeting(spans) if upstream else []
            if upstream_keys:
                shown = ", ".join(upstream_keys[:3]) + (" ..." if len(upstream_keys) > 3 else "")
                reasons.append(f"reads {table} key {shown}, which is stale")
        return reasons

    def _per_record(self, record: Provenance) -> tuple[str, list[_ReadCheck]]:
        """What a record's keys share (a commit writes many keys): its code reason, and
        the reads that have later changes or stale keys to place against each key."""
        known = self._records.get(id(record))
        if known is not None and known[0] is record:
            return known[1], known[2]
        code_reason = ""
        current = self.code(record.job, record.task)
        if current is None:
            code_reason = f"task {record.task!r} of job {record.job!r} no longer exists"
        elif current != record.code:
            code_reason = (
                f"code of task {record.task!r} changed (written by {record.code}, now {current})"
            )
        reader = self.jobs.get(record.job)
        checks: list[_ReadCheck] = []
        for table, version in sorted(record.reads.items()):
            column, tz = _read_column(reader, table, self._written_by.get(table_key(table)))
            changed = self._changed(table, version, column, tz)
            upstream = self._stale.get(table_key(table))
            if changed or upstream:
                checks.append((table, version, changed, upstream or None))
        self._records[id(record)] = (record, code_reason, checks)
        return code_reason, checks

    def _changed(
        self, table: str, version: int, column: str | None, tz: str
    ) -> Placed[Change] | None:
        """Where the commits of ``table`` after ``version`` fell, read on ``column``
        (``None``: none changed rows), computed once per read version."""
        cache_key = (table_key(table), version, column, tz)
        if cache_key not in self._changes:
            read = self.index(table)
            later = read.changes_after(version) if read is not None else []
            writer = self._written_by.get(table_key(table))
            placed: list[tuple[Interval | None, Change]] = []
            for change in later:
                places = _places(change, column, tz, None)
                if places is None and writer is not None and writer.column in change.values:
                    # a table dbxdec writes: each partition holds one key's rows, in its window
                    places = _places(change, writer.column, tz, writer.job.backfill)
                placed.extend((p, change) for p in places or [None])
            self._changes[cache_key] = Placed.of(placed) if placed else None
        return self._changes[cache_key]


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


@dataclass(frozen=True, slots=True)
class Placed(Generic[T]):
    """Items placed in time, for "which meet these spans" in logarithmic time: sorted by
    start, with the longest interval's length bounding how far back one may begin; items
    placed nowhere in particular (``None``, or all of time) meet every span."""

    starts: list[float]
    items: list[tuple[Interval, T]]
    longest: float
    everywhere: list[T]

    @classmethod
    def of(cls, pairs: Iterable[tuple[Interval | None, T]]) -> Placed[T]:
        placed: list[tuple[Interval, T]] = []
        everywhere: list[T] = []
        for interval, item in pairs:
            if interval is None or interval[0] == float("-inf") or interval[1] == float("inf"):
                everywhere.append(item)
            else:
                placed.append((interval, item))
        placed.sort(key=lambda pair: pair[0])
        longest = max((i[1] - i[0] for i, _ in placed), default=0.0)
        return cls([i[0] for i, _ in placed], placed, longest, everywhere)

    def __bool__(self) -> bool:
        return bool(self.items or self.everywhere)

    def meeting(self, spans: Sequence[Interval]) -> list[T]:
        """The items whose intervals overlap any of ``spans`` (with repeats)."""
        found = list(self.everywhere)
        for start, end in spans:
            first = bisect.bisect_left(self.starts, start - self.longest)
            last = bisect.bisect_left(self.starts, end)
            found.extend(item for (_, stop), item in self.items[first:last] if stop > start)
        return found


@dataclass(frozen=True, slots=True)
class StaleKeys:
    """A table's stale keys, for "which does a reader's window read": a time backfill's
    keys sorted as text (its keys are fixed-width ISO 8601, so text order is time
    order), found by the keys holding each span's ends; any other key meets every span."""

    backfill: BackfillDef | None
    keys: list[str]
    anywhere: bool
    """Whether a key may be anywhere in time (the whole table, static keys)."""

    @classmethod
    def of(cls, backfill: BackfillDef | None, keys: Iterable[str]) -> StaleKeys:
        ordered = sorted(keys)
        timed = backfill is not None and backfill.is_time_based
        return cls(backfill, ordered, not timed or WHOLE_TABLE in ordered)

    def __bool__(self) -> bool:
        return bool(self.keys)

    def meeting(self, spans: Sequence[Interval]) -> list[str]:
        """The stale keys whose windows overlap any of ``spans``, sorted, once each."""
        backfill = self.backfill
        if self.anywhere or backfill is None:
            return list(self.keys)
        found: set[str] = set()
        for start, end in spans:
            if start == float("-inf") or end == float("inf"):
                return list(self.keys)
            first = backfill.key_of(datetime.fromtimestamp(start, timezone.utc))  # type: ignore[attr-defined]
            last = backfill.key_of(datetime.fromtimestamp(end, timezone.utc) - _TICK)  # type: ignore[attr-defined]
            low = bisect.bisect_left(self.keys, first)
            high = bisect.bisect_right(self.keys, last)
            found.update(self.keys[low:high])
        return sorted(found)


_TICK = timedelta(microseconds=1)


def summary(report: StaleReport) -> Mapping[str, int]:
    """Stale keys per table."""
    counts: dict[str, int] = {}
    for key in report.keys:
        counts[key.table] = counts.get(key.table, 0) + 1
    return counts
