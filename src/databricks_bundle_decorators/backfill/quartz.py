"""Quartz cron schedules, the syntax of Databricks job schedules.

Why not croniter, the usual cron library? croniter 7.0 numbers weekdays the
Unix way, so it reads ``0 0 0 ? * 2`` as Tuesdays where Quartz means Mondays
(1=SUN..7=SAT); it rejects Quartz's ``L-n``, ``LW``, ``nL`` and a lone ``L`` in
day-of-week; it does not enforce Quartz's "exactly one day field is ``?``"; and with a
year field (``0 0 0 1 1 ? 2030``) it fails to find the next date. Translating
expressions for it would risk silently shifted weekdays, so the fields are matched
here directly: :mod:`._quartz_fields` parses each field into allowed values plus a
per-month day rule and searches the wall-clock calendar (jumping over non-matching
years, months and days); this module maps wall times to instants in the time zone."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ._quartz_fields import QuartzFields, parse_quartz

_parse_cached = lru_cache(maxsize=1024)(parse_quartz)
"""``parse_quartz`` for expressions seen before: a project's jobs mostly share a few
schedules, and its fields are immutable (an invalid expression raises each time)."""

__all__ = ["QuartzSchedule"]

_UTC = timezone.utc
_SECOND = timedelta(seconds=1)
_MICROSECOND = timedelta(microseconds=1)
# Longest offset jump to look back for (Pacific/Apia skipped a whole day in 2011).
_GAP_LOOKBACK = timedelta(hours=25)
# Every fire is at a local wall time in 1970..2199; these instants bound all of them.
_EARLIEST = datetime(1969, 12, 30, tzinfo=_UTC)
_LATEST = datetime(2200, 1, 2, tzinfo=_UTC)


class _Gap(NamedTuple):
    """A spring-forward gap: skipped walls ``[start, end)``, ``before`` = old offset."""

    start: datetime
    end: datetime
    before: timedelta


def _naive(instant: datetime, offset: timedelta) -> datetime:
    """The wall time of a UTC ``instant`` under a fixed ``offset``."""
    return (instant + offset).replace(tzinfo=None)


def _floor_second(wall: datetime) -> datetime:
    return wall.replace(microsecond=0)


@dataclass(frozen=True, slots=True, init=False)
class QuartzSchedule:
    """An immutable Quartz cron schedule in an IANA time zone.

    Fields are ``sec min hour day-of-month month day-of-week [year]``; day-of-week is
    numbered 1=SUN .. 7=SAT (names SUN-SAT and JAN-DEC are case-insensitive), and
    exactly one of day-of-month / day-of-week must be ``?``. Supported: ``*``, ``?``,
    lists, ranges (wrapping, e.g. ``FRI-MON``), steps, day-of-month ``L``, ``L-n``,
    ``nW``, ``LW``/``L-nW``, day-of-week ``nL``, ``n#k`` and ``L`` (= SAT), years
    1970-2199. ``nW``/``L-n`` name no day in months too short for them.

    DST policy ("compatible", as Quartz's lenient ``java.util.Calendar``, RFC 9557
    and ``whenever``'s ``disambiguation="compatible"``): fire times are wall-clock
    times in ``timezone``. A wall time skipped by a spring-forward gap fires at the
    instant it maps to when shifted forward by the gap length (02:30 on the Berlin
    spring-forward day fires at 03:30 CEST); a wall time repeated by a fall-back
    fires once, at its first (earlier) occurrence. Fires that coincide collapse into
    one instant, so ``next_fire``/``previous_fire`` never repeat or skip an instant.
    Compare returned datetimes as instants (``.astimezone(timezone.utc)``): Python's
    ``==`` across zones is False for a repeated wall time (PEP 495).

    Example:
        >>> from datetime import datetime, timezone
        >>> weekdays = QuartzSchedule("0 0 6 ? * MON-FRI", "Europe/Berlin")
        >>> weekdays.next_fire(datetime(2024, 3, 29, 12, tzinfo=timezone.utc)).isoformat()
        '2024-04-01T06:00:00+02:00'
    """

    expression: str
    timezone: str
    _fields: QuartzFields = field(repr=False, compare=False)
    _tz: ZoneInfo = field(repr=False, compare=False)

    def __init__(self, expression: str, timezone: str = "UTC") -> None:
        """Parse ``expression`` for ``timezone``.

        Raises:
            ValueError: the expression is invalid (the message names the field at
                fault) or the time zone is unknown.
        """
        normalised = " ".join(expression.split())
        fields = _parse_cached(normalised)
        try:
            tz = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise ValueError(f"unknown timezone {timezone!r}") from None
        object.__setattr__(self, "expression", normalised)
        object.__setattr__(self, "timezone", timezone)
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_tz", tz)

    # ------------------------------------------------------------------ public API

    def next_fire(self, after: datetime) -> datetime | None:
        """The first fire strictly after ``after``, in the schedule's time zone.

        Returns ``None`` when there is none (e.g. the year field is exhausted).

        Raises:
            ValueError: ``after`` is naive.
        """
        t = _utc(after, "after")
        if t >= _LATEST:
            return None
        t = max(t, _EARLIEST)
        best: datetime | None = None
        # Walls in a gap that just ended map forward past ``t`` although their wall
        # time lies before ``t``'s wall time.
        gap = self._recent_gap(t)
        if gap is not None:
            wall = self._first_after(_naive(t, gap.before))
            if wall is not None and wall < gap.end:
                best = self._instant(wall)
        local = t.astimezone(self._tz)
        overlap_end = self._overlap_end(t, local)
        if overlap_end is not None:  # t is in the repeated hour's second pass
            wall = self._fields.first_at_or_after(overlap_end)
        else:
            wall = self._first_after(local.replace(tzinfo=None))
        if wall is not None:
            best = _min(best, self._instant(wall))
            if self._gap_length(wall) > timedelta(0):
                # Existing walls just after the gap may map earlier than this one.
                later = self._fields.first_at_or_after(self._gap_containing(wall).end)
                if later is not None:
                    best = _min(best, self._instant(later))
        return None if best is None else best.astimezone(self._tz)

    def previous_fire(self, before: datetime) -> datetime | None:
        """The last fire strictly before ``before``, in the schedule's time zone.

        Returns ``None`` when there is none (e.g. before the first allowed year).

        Raises:
            ValueError: ``before`` is naive.
        """
        t = _utc(before, "before")
        if t <= _EARLIEST:
            return None
        t = min(t, _LATEST)
        local = t.astimezone(self._tz)
        overlap_end = self._overlap_end(t, local)
        wall = self._last_before(local.replace(tzinfo=None) if overlap_end is None else overlap_end)
        while wall is not None:
            if self._gap_length(wall) <= timedelta(0):  # an existing wall: maps below t
                best = self._instant(wall)
                # Walls in a gap that ended just before ``best`` map after it.
                gap = self._recent_gap(best)
                if gap is not None:
                    skipped = self._last_before(min(gap.end, _naive(t, gap.before)))
                    if skipped is not None and skipped >= gap.start:
                        best = max(best, self._instant(skipped))
                return best.astimezone(self._tz)
            gap = self._gap_containing(wall)
            limit = _naive(t, gap.before)  # gap walls below this map before t
            if wall < limit:
                return self._instant(wall).astimezone(self._tz)
            wall = self._last_before(limit)
        return None

    def matches(self, at: datetime) -> bool:
        """Whether the schedule fires exactly at the instant ``at``.

        Raises:
            ValueError: ``at`` is naive.
        """
        t = _utc(at, "at")
        fire = self.next_fire(t - _MICROSECOND)
        # compare in UTC: PEP 495 makes inter-zone == False at repeated wall times
        return fire is not None and fire.astimezone(_UTC) == t

    # ------------------------------------------------------------------ internals

    def _first_after(self, wall: datetime) -> datetime | None:
        return self._fields.first_at_or_after(_floor_second(wall) + _SECOND)

    def _last_before(self, wall: datetime) -> datetime | None:
        floor = _floor_second(wall)
        return self._fields.last_at_or_before(floor if floor < wall else floor - _SECOND)

    def _offset(self, instant: datetime) -> timedelta:
        offset = instant.astimezone(self._tz).utcoffset()
        assert offset is not None
        return offset

    def _instant(self, wall: datetime) -> datetime:
        """The "compatible" instant of a naive wall time (PEP 495 ``fold=0``)."""
        return wall.replace(tzinfo=self._tz, fold=0).astimezone(_UTC)

    def _gap_length(self, wall: datetime) -> timedelta:
        """> 0: ``wall`` is skipped by a gap this long; < 0: it is repeated; else 0."""
        later = wall.replace(tzinfo=self._tz, fold=1).utcoffset()
        earlier = wall.replace(tzinfo=self._tz, fold=0).utcoffset()
        assert later is not None and earlier is not None
        return later - earlier

    def _transition(self, low: datetime, high: datetime) -> datetime:
        """The first whole second in ``(low, high]`` whose offset differs from ``low``'s."""
        lo, hi = math.floor(low.timestamp()), math.ceil(high.timestamp())
        old = self._offset(datetime.fromtimestamp(lo, _UTC))
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._offset(datetime.fromtimestamp(mid, _UTC)) == old:
                lo = mid
            else:
                hi = mid
        return datetime.fromtimestamp(hi, _UTC)

    def _gap_containing(self, wall: datetime) -> _Gap:
        before = wall.replace(tzinfo=self._tz, fold=0).utcoffset()
        assert before is not None
        length = self._gap_length(wall)
        instant = self._instant(wall)  # in [transition, transition + length)
        start = self._transition(instant - length, instant)
        return _Gap(_naive(start, before), _naive(start, before + length), before)

    def _recent_gap(self, t: datetime) -> _Gap | None:
        """A gap whose transition is at or before ``t`` but ends after ``t``."""
        now, then = self._offset(t), self._offset(t - _GAP_LOOKBACK)
        if now <= then:
            return None
        start = self._transition(t - _GAP_LOOKBACK, t)
        before = self._offset(start - _SECOND)
        if start + (now - before) <= t:
            return None
        return _Gap(_naive(start, before), _naive(start, now), before)

    def _overlap_end(self, t: datetime, local: datetime) -> datetime | None:
        """If ``t`` is the second pass of a repeated wall time, where repetition ends."""
        first = local.replace(fold=0).utcoffset()
        second = local.utcoffset()
        assert first is not None and second is not None
        if local.fold == 0 or first <= second:
            return None
        start = self._transition(t - (first - second), t)
        return _naive(start, first)


def _utc(value: datetime, name: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive datetime {value!r}")
    return value.astimezone(_UTC)


def _min(current: datetime | None, candidate: datetime) -> datetime:
    return candidate if current is None else min(current, candidate)
