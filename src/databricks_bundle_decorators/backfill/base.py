"""The backfill definition contract shared by time-partitioned and static keys."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from .windows import TimeWindow


class BackfillDef(ABC):
    """Base class for backfill definitions.

    A backfill definition declares the universe of valid ``backfill_key`` values of a
    job. ``dbxdec backfill`` enumerates them with :meth:`keys`; a run resolves its own
    keys with :func:`~databricks_bundle_decorators.backfill.get_backfill_keys`.
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
            now: The clock that bounds an open ``end_date`` (a run passes its own
                logical time); ``None`` reads the wall clock. Static keys ignore it.

        Raises:
            ValueError: a bound is malformed, outside the definition, or ``start`` is
                after ``end``.
        """

    def current_key(self, *, now: datetime | None = None) -> str | None:
        """The key for the current point in time; ``None`` when there is no default.

        Used when a job with a backfill definition is triggered without a
        ``backfill_key`` (a cron schedule or a file-arrival trigger).
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
