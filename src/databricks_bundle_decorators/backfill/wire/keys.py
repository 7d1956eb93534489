"""Key ranges and the run's logical time, as job parameters encode them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .params import (
    BACKFILL_EXACT_PARAM,
    BACKFILL_KEY_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    BACKFILL_START_KEY_PARAM,
    NAIVE_RUN_TIME_ZONE,
)


@dataclass(frozen=True, slots=True)
class KeyRange:
    """The keys one run writes: ``first`` to ``last``, **inclusive at both ends**.

    A single-key run has ``first == last``. Encoded in job parameters as
    ``backfill_key=last`` plus, for more than one key, ``backfill_start_key=first``.

    Example:
        >>> KeyRange("2024-01-01", "2024-01-07").label
        '2024-01-01..2024-01-07'
        >>> KeyRange.single("2024-01-03").to_params()
        {'backfill_key': '2024-01-03', 'backfill_start_key': '', 'backfill_exact': 'false'}
    """

    first: str
    last: str

    @classmethod
    def single(cls, key: str) -> KeyRange:
        return cls(key, key)

    @classmethod
    def of(cls, keys: Sequence[str]) -> KeyRange:
        """The range from the first to the last of ``keys`` (non-empty, in order)."""
        if not keys:
            raise ValueError("a key range needs at least one key")
        return cls(keys[0], keys[-1])

    @property
    def label(self) -> str:
        """``2024-01-03`` or ``2024-01-01..2024-01-07``, for messages and ledgers."""
        return self.first if self.first == self.last else f"{self.first}..{self.last}"

    def to_params(self, *, exact: bool = False) -> dict[str, str]:
        """The job parameters of a run over this range."""
        return {
            BACKFILL_KEY_PARAM: self.last,
            BACKFILL_START_KEY_PARAM: "" if self.first == self.last else self.first,
            BACKFILL_EXACT_PARAM: "true" if exact else "false",
        }

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> KeyRange | None:
        """The range a run's parameters name; ``None`` when ``backfill_key`` is empty."""
        last = params.get(BACKFILL_KEY_PARAM, "")
        if not last:
            return None
        return cls(params.get(BACKFILL_START_KEY_PARAM, "") or last, last)


def keys_label(keys: Sequence[str]) -> str:
    """``KeyRange.of(keys).label``, or ``"final sync"`` for a run with no key."""
    return KeyRange.of(keys).label if keys else "final sync"


# -- the run's logical time -------------------------------------------------------------

_EPOCH_MS = re.compile(r"-?\d{1,16}", re.ASCII)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_ISO_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?", re.ASCII
)


def parse_run_time(value: str, *, tz: str = "UTC") -> datetime | None:
    """The run's logical time from ``backfill_run_time``; ``None`` when empty.

    Accepted forms: epoch milliseconds (``{{job.trigger.time.timestamp_ms}}``); an ISO
    datetime with an offset or ``Z`` (that instant); an ISO datetime without an offset
    (read in :data:`NAIVE_RUN_TIME_ZONE`); an ISO date (the start of that day in ``tz``,
    the backfill definition's zone: ``{{backfill.iso_date}}``).

    Example:
        >>> parse_run_time("1704067200000")
        datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)

    Raises:
        ValueError: anything else, an unrendered ``{{...}}`` included; the message names
            the parameter.
    """
    text = value.strip()
    if not text:
        return None
    try:
        if _EPOCH_MS.fullmatch(text):
            return datetime.fromtimestamp(int(text) / 1000, tz=timezone.utc)
        if _ISO_DATE.fullmatch(text):
            return datetime.combine(date.fromisoformat(text), time(0), tzinfo=ZoneInfo(tz))
        if _ISO_DATETIME.fullmatch(text):
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=ZoneInfo(NAIVE_RUN_TIME_ZONE))
            return parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError, OSError, ZoneInfoNotFoundError):
        pass
    hint = " (a Databricks reference that was not rendered)" if "{{" in text else ""
    raise ValueError(
        f"job parameter {BACKFILL_RUN_TIME_PARAM}={value!r}{hint} is not a time: expected "
        "epoch milliseconds, an ISO datetime (with offset or Z; without one it is "
        f"{NAIVE_RUN_TIME_ZONE}) or an ISO date"
    )


def run_time_param(at: datetime) -> str:
    """``backfill_run_time`` for an aware ``datetime``: epoch milliseconds."""
    if at.tzinfo is None:
        raise ValueError(f"run time {at.isoformat()} must be timezone-aware")
    return str(round(at.timestamp() * 1000))
