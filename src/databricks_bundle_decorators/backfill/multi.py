"""Two-dimensional backfill keys ``STATIC:TIME`` (e.g. ``eu:2024-01-01``), ordered by static value,
then time; ``:`` is in no static or time key format, so every key splits one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from .base import BackfillDef, TimeWindow
from .static import StaticBackfill
from .time_backfill import TimeBackfill

SEPARATOR = ":"
KIND_PREFIX = "static x "
"""Starts the ``kind`` of every two-dimensional definition (``static x daily``)."""


class MultiKey(NamedTuple):
    """A key of a :class:`MultiBackfill`, split into its two parts."""

    static: str
    time: str

    @property
    def text(self) -> str:
        """The key's one text form, ``STATIC:TIME``."""
        return f"{self.static}{SEPARATOR}{self.time}"


def split_key(key: str, *, what: str = "backfill_key") -> MultiKey:
    """Split ``STATIC:TIME`` into its parts (shape only: no bounds are checked).

    Example:
        >>> split_key("eu:2024-01-01")
        MultiKey(static='eu', time='2024-01-01')
    """
    if not isinstance(key, str) or key.count(SEPARATOR) != 1:
        raise ValueError(
            f"{what} {key!r} is not a two-part key: expected STATIC{SEPARATOR}TIME, "
            f"e.g. eu{SEPARATOR}2024-01-01"
        )
    static, time = key.split(SEPARATOR)
    return MultiKey(static, time)


@dataclass(frozen=True)
class MultiBackfill(BackfillDef):
    """Keys that are a static value times a time period (e.g. region x day).

    Args:
        static: The static dimension (its declared keys, in order).
        time: The time dimension; its ``lookback``, ``data_lag`` and
            ``collect_schedule_gaps`` apply within each static value.

    ``keys(start, end)`` takes two time keys (every static value over that range) or two
    full keys (the keys between them). A scheduled run processes the current time key of
    every static value.

    Example:
        >>> from databricks_bundle_decorators.backfill import DailyBackfill, StaticBackfill
        >>> regions = MultiBackfill(StaticBackfill(["eu", "us"]), DailyBackfill("2024-01-01"))
        >>> regions.keys("2024-01-01", "2024-01-02")
        ['eu:2024-01-01', 'eu:2024-01-02', 'us:2024-01-01', 'us:2024-01-02']
        >>> regions.window("us:2024-01-02").start
        Instant("2024-01-02 00:00:00Z")
    """

    static: StaticBackfill
    time: TimeBackfill

    def __post_init__(self) -> None:
        if not isinstance(self.static, StaticBackfill):
            raise ValueError(
                "MultiBackfill(static=...) takes a StaticBackfill, "
                f"got {type(self.static).__name__}"
            )
        if not isinstance(self.time, TimeBackfill):
            raise ValueError(
                "MultiBackfill(time=...) takes a DailyBackfill, HourlyBackfill, WeeklyBackfill "
                f"or MonthlyBackfill, got {type(self.time).__name__}"
            )

    # -- BackfillDef -----------------------------------------------------------------

    @property
    def kind(self) -> str:
        return f"{KIND_PREFIX}{self.time.kind}"

    @property
    def key_format(self) -> str:
        return f"STATIC{SEPARATOR}{self.time.key_format}, e.g. eu{SEPARATOR}2024-01-01"

    @property
    def is_time_based(self) -> bool:
        return True

    @property
    def tz(self) -> str:
        """The time dimension's zone: the job's schedule, run times and ``DATE`` columns
        read in it, as for a one-dimensional job."""
        return self.time.tz

    def keys(
        self, start: str | None = None, end: str | None = None, *, now: datetime | None = None
    ) -> list[str]:
        """Keys from ``start`` to ``end`` inclusive: time keys bound every static value,
        full keys bound the definition's order (static value first, then time)."""
        full = [bound for bound in (start, end) if bound is not None and SEPARATOR in bound]
        if not full:
            times = self.time.keys(start, end, now=now)
            return [f"{s}{SEPARATOR}{t}" for s in self.static.declared_keys for t in times]
        if len(full) != len([b for b in (start, end) if b is not None]):
            raise ValueError(
                f"give both bounds as time keys ({self.time.key_format}) or both as "
                f"full keys ({self.key_format}), got {start!r} and {end!r}"
            )
        first = split_key(start, what="start") if start is not None else None
        last = split_key(end, what="end") if end is not None else None
        statics = self.static.keys(first.static if first else None, last.static if last else None)
        found: list[str] = []
        for static in statics:
            lo = first.time if first is not None and static == first.static else None
            hi = last.time if last is not None and static == last.static else None
            found.extend(f"{static}{SEPARATOR}{t}" for t in self.time.keys(lo, hi, now=now))
        return found

    def current_keys(self, *, now: datetime | None = None) -> list[str]:
        """The current time key (``data_lag`` applied) of every static value."""
        current = self.time.current_key(now=now)
        return [f"{s}{SEPARATOR}{current}" for s in self.static.declared_keys]

    def validate_key(self, key: str, *, what: str = "backfill_key") -> None:
        parts = split_key(key, what=what)
        self.static.validate_key(parts.static, what=f"{what} {key!r}: static part")
        self.time.validate_key(parts.time, what=f"{what} {key!r}: time part")

    def sort_keys(self, keys: list[str]) -> list[str]:
        positions = {s: i for i, s in enumerate(self.static.declared_keys)}
        unique = {split_key(k) for k in keys}
        ordered = sorted(
            unique,
            key=lambda k: (
                positions.get(k.static, len(positions)),
                self.time.cadence.parse(k.time),
            ),
        )
        return [k.text for k in ordered]

    def window(self, key: str) -> TimeWindow:
        """The window of the key's time part."""
        return self.time.window(split_key(key).time)

    # -- per-dimension arithmetic ------------------------------------------------------

    def previous_keys(self, key: str, count: int) -> list[str]:
        """Up to ``count`` keys before ``key`` in the same static value, in order."""
        parts = split_key(key)
        return [f"{parts.static}{SEPARATOR}{t}" for t in self.time.previous_keys(parts.time, count)]

    def by_static(self, keys: list[str] | tuple[str, ...]) -> dict[str, list[str]]:
        """The time parts of ``keys``, grouped by static value (in first-seen order).

        Example:
            >>> from databricks_bundle_decorators.backfill import DailyBackfill, StaticBackfill
            >>> m = MultiBackfill(StaticBackfill(["eu", "us"]), DailyBackfill("2024-01-01"))
            >>> m.by_static(["eu:2024-01-01", "us:2024-01-01", "eu:2024-01-02"])
            {'eu': ['2024-01-01', '2024-01-02'], 'us': ['2024-01-01']}
        """
        groups: dict[str, list[str]] = {}
        for key in keys:
            parts = split_key(key)
            groups.setdefault(parts.static, []).append(parts.time)
        return groups
