"""How the keys of a job that writes a table map to the keys of a job that reads it: key ``K``
with ``lookback`` N reads from the start of the N-th key before K to the end of K; static x time
jobs map per static value; an unfiltered read or a side without time keys maps every key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from whenever import Instant

from .base import BackfillDef
from .changed_keys import key_span
from .multi import SEPARATOR, MultiBackfill, split_key
from .time_backfill import TimeBackfill

UNPARTITIONED = ""
"""The one key of a job without a backfill definition: a run with no ``backfill_key``."""

WINDOW = "window"
"""Mapping kind: key windows overlap, with the reader's lookback."""
EVERY_KEY = "all"
"""Mapping kind: every key of the reader reads every key of the writer."""


@dataclass(frozen=True, slots=True)
class KeyEdge:
    """The key relation between a job that writes a table (``upstream``) and one that reads it
    (``downstream``), each a backfill definition or ``None``; ``windowed``: the read is
    filtered to the run's windows.
    """

    upstream: BackfillDef | None
    downstream: BackfillDef | None
    windowed: bool = True

    @property
    def mapping(self) -> str:
        """:data:`WINDOW` when both sides have time keys and the read is windowed, else
        :data:`EVERY_KEY`."""
        up, down = self.upstream, self.downstream
        timed = up is not None and up.is_time_based and down is not None and down.is_time_based
        return WINDOW if timed and self.windowed else EVERY_KEY

    @property
    def per_static_value(self) -> bool:
        """Whether keys map within each static value (both sides static x time)."""
        return (
            self.mapping == WINDOW
            and isinstance(self.upstream, MultiBackfill)
            and isinstance(self.downstream, MultiBackfill)
        )

    @property
    def lookback(self) -> int:
        """The reader's lookback in its own keys (0 for an every-key mapping)."""
        time = _time_of(self.downstream)
        return time.lookback if time is not None and self.mapping == WINDOW else 0

    def describe(self) -> str:
        """One line for people, e.g. ``daily -> monthly (window overlap, lookback 1)``."""
        up = _kind(self.upstream)
        down = _kind(self.downstream)
        if self.mapping == EVERY_KEY:
            why = "read not filtered by window" if not self.windowed else "no time keys"
            return f"{up} -> {down} (every key, {why})"
        static = ", per static value" if self.per_static_value else ""
        return f"{up} -> {down} (window overlap, lookback {self.lookback}{static})"


def downstream_keys(
    edge: KeyEdge, upstream_keys: Iterable[str], *, now: datetime | None = None
) -> list[str]:
    """The reader's keys that read any of ``upstream_keys``, in the reader's order (``now``
    bounds an open ``end_date`` when every key is meant).

    Raises:
        ValueError: a key is not a valid key of the writer.
    """
    given = list(upstream_keys)
    for key in given:
        _validate(edge.upstream, key, "upstream key")
    if not given:
        return []
    down = edge.downstream
    if edge.mapping == EVERY_KEY or down is None:
        return _all_keys(down, now)
    up = edge.upstream
    found: set[str] = set()
    for key in given:
        static, time = _parts(up, key)
        times = _time_downstream(_require_time(up), _require_time(down), time)
        found.update(_per_static(up, down, static, times))
    return down.sort_keys(list(found))


def upstream_keys(edge: KeyEdge, downstream_key: str, *, now: datetime | None = None) -> list[str]:
    """The writer's keys that the reader's ``downstream_key`` reads, in the writer's order.

    Raises:
        ValueError: ``downstream_key`` is not a valid key of the reader.
    """
    _validate(edge.downstream, downstream_key, "downstream key")
    up = edge.upstream
    if edge.mapping == EVERY_KEY or up is None:
        return _all_keys(up, now)
    static, time = _parts(edge.downstream, downstream_key)
    times = _time_upstream(_require_time(up), _require_time(edge.downstream), time)
    return up.sort_keys(_per_static(edge.downstream, up, static, times))


# -- the window mapping ----------------------------------------------------------------


def _per_static(
    source: BackfillDef | None, target: BackfillDef | None, static: str | None, times: list[str]
) -> list[str]:
    """``times`` as ``target``'s keys: per static value when both sides have static values."""
    if not isinstance(target, MultiBackfill):
        return times
    if isinstance(source, MultiBackfill):
        values = [static] if static in target.static.declared_keys else []
    else:
        values = list(target.static.declared_keys)
    return [f"{value}{SEPARATOR}{t}" for value in values for t in times]


def _read_span(reader: TimeBackfill, key: str) -> tuple[Instant, Instant]:
    """The half-open span of instants the reader's ``key`` reads, lookback included."""
    earlier = reader.previous_keys(key, reader.lookback) if reader.lookback else []
    first = earlier[0] if earlier else key
    return reader.window(first).start, reader.window(key).end


def _time_upstream(writer: TimeBackfill, reader: TimeBackfill, key: str) -> list[str]:
    lo, hi = _read_span(reader, key)
    # Windows tile the timeline, so the overlapping keys are the run from the key holding
    # ``lo`` to the key holding the last instant before ``hi``.
    last = writer.key_of(hi.subtract(nanoseconds=1))
    return key_span(writer, writer.key_of(lo), last)


def _time_downstream(writer: TimeBackfill, reader: TimeBackfill, key: str) -> list[str]:
    window = writer.window(key)
    first = reader.key_of(window.start)
    # A reader key reads back ``lookback`` keys, so the last one that can reach the
    # window lies that many keys after the key holding the window's last instant.
    last = reader.shift_key(reader.key_of(window.end.subtract(nanoseconds=1)), reader.lookback)
    found = []
    for candidate in key_span(reader, first, last):
        lo, hi = _read_span(reader, candidate)
        if lo < window.end and window.start < hi:
            found.append(candidate)
    return found


# -- helpers ---------------------------------------------------------------------------


def _time_of(definition: BackfillDef | None) -> TimeBackfill | None:
    if isinstance(definition, MultiBackfill):
        return definition.time
    return definition if isinstance(definition, TimeBackfill) else None


def _require_time(definition: BackfillDef | None) -> TimeBackfill:
    time = _time_of(definition)
    if time is None:  # pragma: no cover - the window mapping has time keys on both sides
        raise ValueError("the window mapping needs time keys on both sides")
    return time


def _parts(definition: BackfillDef | None, key: str) -> tuple[str | None, str]:
    if isinstance(definition, MultiBackfill):
        parts = split_key(key)
        return parts.static, parts.time
    return None, key


def _kind(definition: BackfillDef | None) -> str:
    return "unpartitioned" if definition is None else definition.kind


def _validate(definition: BackfillDef | None, key: str, what: str) -> None:
    if definition is None:
        if key != UNPARTITIONED:
            raise ValueError(
                f"{what} {key!r}: the job has no backfill definition; its one key is ''"
            )
        return
    definition.validate_key(key, what=what)


def _all_keys(definition: BackfillDef | None, now: datetime | None) -> list[str]:
    return [UNPARTITIONED] if definition is None else definition.keys(now=now)
