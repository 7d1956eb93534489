"""The backfill definition contract and the half-open time windows of its keys."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timezone

from whenever import Instant


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open interval of instants ``[start, end)``; consecutive keys' windows tile the
    timeline with no gap and no overlap.

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


class BackfillDef(ABC):
    """Base class for backfill definitions: the universe of valid ``backfill_key`` values of a
    job, enumerated by :meth:`keys` (a run resolves its own with ``get_backfill_keys``).
    """

    @property
    @abstractmethod
    def kind(self) -> str:
        """A short name of the partitioning: ``daily``, ``weekly``, ``monthly``, ``hourly``
        or ``static``."""

    @property
    @abstractmethod
    def key_format(self) -> str:
        """The expected key format, for messages (e.g. ``YYYY-MM-DD``)."""

    @abstractmethod
    def keys(
        self, start: str | None = None, end: str | None = None, *, now: datetime | None = None
    ) -> list[str]:
        """Enumerate concrete backfill keys, in order.

        Args:
            start: Override the start bound (inclusive). Same format as the keys.
            end: Override the end bound (inclusive). Same format as the keys.
            now: The clock bounding an open ``end_date`` (a run passes its logical time);
                ``None`` reads the wall clock. Static keys ignore it.

        Raises:
            ValueError: a bound is malformed, outside the definition, or after the other.
        """

    def current_key(self, *, now: datetime | None = None) -> str | None:
        """The key for now, used when a job runs without a ``backfill_key`` (a schedule or a
        trigger); ``None`` when there is no default.
        """
        return None

    def current_keys(self, *, now: datetime | None = None) -> list[str]:
        """Every key a run without a ``backfill_key`` processes: ``[current_key()]``, or
        one per static value of a two-dimensional definition; empty when none."""
        current = self.current_key(now=now)
        return [] if current is None else [current]

    @abstractmethod
    def validate_key(self, key: str, *, what: str = "backfill_key") -> None:
        """Raise ``ValueError`` unless ``key`` is well-formed and within the bounds."""

    @abstractmethod
    def sort_keys(self, keys: list[str]) -> list[str]:
        """``keys`` without duplicates, in this definition's order."""

    def window(self, key: str) -> TimeWindow | None:
        """The half-open instant window of a time key; ``None`` for static keys."""
        return None

    @property
    def is_time_based(self) -> bool:
        """Whether keys are time partitions with windows."""
        return False
