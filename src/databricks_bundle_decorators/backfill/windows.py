"""Half-open time windows over instants."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from whenever import Instant


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open interval of instants: closed at ``start``, open at ``end``.

    The windows of consecutive backfill keys tile the timeline: the ``end`` of one
    window is the ``start`` of the next, with no gap and no overlap.

    Example:
        >>> from databricks_bundle_decorators.backfill import DailyBackfill
        >>> DailyBackfill("2024-01-01", "2024-01-31", tz="Europe/Berlin").window("2024-01-02")
        TimeWindow(start=Instant("2024-01-01 23:00:00Z"), end=Instant("2024-01-02 23:00:00Z"))
    """

    start: Instant
    end: Instant

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError(f"a time window must end after it starts: [{self.start}, {self.end})")

    def contains(self, at: Instant | datetime) -> bool:
        """Whether ``at`` lies in ``[start, end)``."""
        instant = at if isinstance(at, Instant) else Instant(at)
        return self.start <= instant < self.end

    @property
    def duration_seconds(self) -> float:
        """Length of the window in real (elapsed) seconds."""
        return (self.end - self.start).total("seconds")

    def start_utc(self) -> datetime:
        """The start as an aware UTC ``datetime``."""
        return self.start.to_stdlib().astimezone(timezone.utc)

    def end_utc(self) -> datetime:
        """The end as an aware UTC ``datetime``."""
        return self.end.to_stdlib().astimezone(timezone.utc)
