"""Cadences: one key format and calendar arithmetic on period starts (wall-clock
``PlainDateTime``s); instants and DST live in :mod:`.time_backfill`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from datetime import date
from typing import ClassVar

from whenever import Date, IsoWeekDate, PlainDateTime, Weekday


class Cadence(ABC):
    """Key format and wall-clock calendar arithmetic of one partition size."""

    name: ClassVar[str]
    key_format: ClassVar[str]
    example: ClassVar[str]
    _pattern: ClassVar[re.Pattern[str]]

    def parse(self, key: str, *, what: str = "key") -> PlainDateTime:
        """Parse ``key`` to the wall-clock start of its period.

        Raises:
            ValueError: the key is not in this cadence's format, naming the format.
        """
        if not isinstance(key, str):
            raise ValueError(
                f"{what} must be a string in {self.name} format {self.key_format}, "
                f"got {type(key).__name__}"
            )
        match = self._pattern.fullmatch(key)
        if match is None:
            raise ValueError(self._format_error(key, what))
        try:
            return self._from_match(match)
        except ValueError:
            raise ValueError(self._format_error(key, what)) from None

    def _format_error(self, key: str, what: str) -> str:
        return (
            f"{what} {key!r} is not a valid {self.name} key: expected {self.key_format} "
            f"(e.g. {self.example!r})"
        )

    @abstractmethod
    def _from_match(self, match: re.Match[str]) -> PlainDateTime: ...

    @abstractmethod
    def format(self, start: PlainDateTime) -> str:
        """The key of the period that starts at ``start``."""

    @abstractmethod
    def floor(self, at: PlainDateTime) -> PlainDateTime:
        """The start of the period that contains the wall-clock time ``at``."""

    @abstractmethod
    def shift(self, start: PlainDateTime, periods: int) -> PlainDateTime:
        """The start of the period ``periods`` periods after (or before) ``start``."""

    def format_range(self, first: PlainDateTime, last: PlainDateTime) -> list[str]:
        """Keys of every period from ``first`` to ``last`` inclusive (wall clock only)."""
        keys: list[str] = []
        start = first
        while start <= last:
            keys.append(self.format(start))
            start = self.shift(start, 1)
        return keys


def _midnight(d: Date) -> PlainDateTime:
    return PlainDateTime(d.year, d.month, d.day)


class DailyCadence(Cadence):
    name = "daily"
    key_format = "YYYY-MM-DD"
    example = "2024-01-31"
    _pattern = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)

    def _from_match(self, match: re.Match[str]) -> PlainDateTime:
        year, month, day = (int(g) for g in match.groups())
        return PlainDateTime(year, month, day)

    def format(self, start: PlainDateTime) -> str:
        return f"{start.year:04d}-{start.month:02d}-{start.day:02d}"

    def floor(self, at: PlainDateTime) -> PlainDateTime:
        return _midnight(at.date())

    def shift(self, start: PlainDateTime, periods: int) -> PlainDateTime:
        return _midnight(start.date().add(days=periods))

    def format_range(self, first: PlainDateTime, last: PlainDateTime) -> list[str]:
        # One whenever object per day would dominate; day ordinals step the calendar.
        return [
            date.fromordinal(day).isoformat() for day in range(_ordinal(first), _ordinal(last) + 1)
        ]


class WeeklyCadence(Cadence):
    """ISO weeks, Monday to Sunday; ISO years have 52 or 53 weeks."""

    name = "weekly"
    key_format = "YYYY-Www (ISO week)"
    example = "2024-W03"
    _pattern = re.compile(r"(\d{4})-W(\d{2})", re.ASCII)

    def _from_match(self, match: re.Match[str]) -> PlainDateTime:
        year, week = int(match.group(1)), int(match.group(2))
        # IsoWeekDate rejects week 53 in 52-week years and week 0.
        return _midnight(IsoWeekDate(year, week, Weekday.MONDAY).date())

    def format(self, start: PlainDateTime) -> str:
        iso = start.date().iso_week_date()
        return f"{iso.year:04d}-W{iso.week:02d}"

    def floor(self, at: PlainDateTime) -> PlainDateTime:
        d = at.date()
        return _midnight(d.subtract(days=d.day_of_week().value - 1))

    def shift(self, start: PlainDateTime, periods: int) -> PlainDateTime:
        return _midnight(start.date().add(weeks=periods))


class MonthlyCadence(Cadence):
    """Calendar months; keys are pinned to day 01."""

    name = "monthly"
    key_format = "YYYY-MM-01"
    example = "2024-01-01"
    _pattern = re.compile(r"(\d{4})-(\d{2})-01", re.ASCII)

    def _from_match(self, match: re.Match[str]) -> PlainDateTime:
        return PlainDateTime(int(match.group(1)), int(match.group(2)), 1)

    def format(self, start: PlainDateTime) -> str:
        return f"{start.year:04d}-{start.month:02d}-01"

    def floor(self, at: PlainDateTime) -> PlainDateTime:
        return PlainDateTime(at.year, at.month, 1)

    def shift(self, start: PlainDateTime, periods: int) -> PlainDateTime:
        months = start.year * 12 + (start.month - 1) + periods
        return PlainDateTime(months // 12, months % 12 + 1, 1)


class HourlyCadence(Cadence):
    """Wall-clock hours in the definition's time zone."""

    name = "hourly"
    key_format = "YYYY-MM-DDTHH"
    example = "2024-01-31T13"
    _pattern = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2})", re.ASCII)

    def _from_match(self, match: re.Match[str]) -> PlainDateTime:
        year, month, day, hour = (int(g) for g in match.groups())
        return PlainDateTime(year, month, day, hour)

    def format(self, start: PlainDateTime) -> str:
        return f"{start.year:04d}-{start.month:02d}-{start.day:02d}T{start.hour:02d}"

    def floor(self, at: PlainDateTime) -> PlainDateTime:
        return PlainDateTime(at.year, at.month, at.day, at.hour)

    def shift(self, start: PlainDateTime, periods: int) -> PlainDateTime:
        days, hour = divmod(start.hour + periods, 24)
        d = start.date().add(days=days)
        return PlainDateTime(d.year, d.month, d.day, hour)

    def format_range(self, first: PlainDateTime, last: PlainDateTime) -> list[str]:
        # Decades of hourly keys are common (87,672 in ten years), so no whenever object
        # is made per key, nor per day: the standard library's day ordinals step the
        # calendar, ``date.isoformat()`` is YYYY-MM-DD, and each key is one concatenation.
        first_day, last_day = _ordinal(first), _ordinal(last)
        if first_day == last_day:
            hours = {first_day: _HOUR_SUFFIXES[first.hour : last.hour + 1]}
        else:
            hours = {
                first_day: _HOUR_SUFFIXES[first.hour :],
                last_day: _HOUR_SUFFIXES[: last.hour + 1],
            }
        return [  # one list, no partial lists to copy (their peak memory)
            day + hour
            for ordinal in range(first_day, last_day + 1)
            for day in (date.fromordinal(ordinal).isoformat(),)
            for hour in hours.get(ordinal, _HOUR_SUFFIXES)
        ]


_HOUR_SUFFIXES = tuple(f"T{hour:02d}" for hour in range(24))


def _ordinal(at: PlainDateTime) -> int:
    return date(at.year, at.month, at.day).toordinal()


DAILY = DailyCadence()
WEEKLY = WeeklyCadence()
MONTHLY = MonthlyCadence()
HOURLY = HourlyCadence()
