"""Quartz cron schedules, the syntax of Databricks job schedules. Matched here, not by croniter,
which numbers weekdays the Unix way and rejects ``L-n``, ``LW``, ``nL`` and a year field.
"""

from __future__ import annotations

import calendar
import math
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import NamedTuple, TypeAlias
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MIN_YEAR = 1970
MAX_YEAR = 2199

_Values: TypeAlias = tuple[int, ...]
_MONTHS = {n.upper(): i for i, n in enumerate(calendar.month_abbr) if n}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
_ITEM = re.compile(r"(?P<start>\*|[0-9A-Z]+)(?:-(?P<end>[0-9A-Z]+))?(?:/(?P<step>[0-9]+))?")
_DOM_LAST = re.compile(r"L(?:-(?P<offset>[0-9]+))?(?P<w>W)?")
_DOM_NEAREST = re.compile(r"(?P<day>[0-9]+)W")
_DOW_LAST = re.compile(r"(?P<dow>[0-9]+|[A-Z]{3})L")
_DOW_NTH = re.compile(r"(?P<dow>[0-9]+|[A-Z]{3})#(?P<nth>[0-9]+)")


class _FieldError(ValueError):
    """A problem with one field; :func:`parse_quartz` adds the expression."""

    def __init__(self, field: str, text: str, reason: str) -> None:
        super().__init__(f"{field} field {text!r} {reason}")


def _quartz_weekday(year: int, month: int, day: int) -> int:
    """Quartz day-of-week (1=SUN .. 7=SAT) of a date."""
    return (calendar.weekday(year, month, day) + 1) % 7 + 1


def _nearest_weekday(year: int, month: int, day: int) -> tuple[int, ...]:
    """Quartz ``W``: the Mon-Fri day nearest ``day``, never leaving the month."""
    last = calendar.monthrange(year, month)[1]
    if not 1 <= day <= last:
        return ()  # e.g. 31W in a 30-day month: no fire that month (like plain 31)
    dow = _quartz_weekday(year, month, day)
    if dow == 7:  # Saturday -> Friday, or Monday the 3rd if the 1st is a Saturday
        return (day - 1,) if day > 1 else (day + 2,)
    if dow == 1:  # Sunday -> Monday, or Friday if Sunday is the last day
        return (day + 1,) if day < last else (day - 2,)
    return (day,)


@dataclass(frozen=True, slots=True)
class DaysOfMonth:
    """Plain day-of-month values (``*``, lists, ranges, steps)."""

    values: tuple[int, ...]

    def days(self, year: int, month: int) -> tuple[int, ...]:
        last = calendar.monthrange(year, month)[1]
        return tuple(d for d in self.values if d <= last)


@dataclass(frozen=True, slots=True)
class LastDayOfMonth:
    """``L``, ``L-n`` (n days before the last) and ``LW`` / ``L-nW`` (nearest weekday)."""

    offset: int
    nearest_weekday: bool

    def days(self, year: int, month: int) -> tuple[int, ...]:
        day = calendar.monthrange(year, month)[1] - self.offset
        if day < 1:
            return ()
        return _nearest_weekday(year, month, day) if self.nearest_weekday else (day,)


@dataclass(frozen=True, slots=True)
class NearestWeekday:
    """``nW``: the weekday nearest day ``n`` of the month."""

    day: int

    def days(self, year: int, month: int) -> tuple[int, ...]:
        return _nearest_weekday(year, month, self.day)


@dataclass(frozen=True, slots=True)
class DaysOfWeek:
    """Plain day-of-week values, Quartz numbering 1=SUN .. 7=SAT."""

    values: frozenset[int]

    def days(self, year: int, month: int) -> tuple[int, ...]:
        first, last = calendar.monthrange(year, month)
        dow1 = (first + 1) % 7 + 1
        return tuple(d for d in range(1, last + 1) if (dow1 + d - 2) % 7 + 1 in self.values)


@dataclass(frozen=True, slots=True)
class LastWeekdayOfMonth:
    """``nL``: the last given weekday of the month (``6L`` = last Friday)."""

    weekday: int

    def days(self, year: int, month: int) -> tuple[int, ...]:
        last = calendar.monthrange(year, month)[1]
        return (last - (_quartz_weekday(year, month, last) - self.weekday) % 7,)


@dataclass(frozen=True, slots=True)
class NthWeekdayOfMonth:
    """``n#k``: the k-th given weekday of the month (``2#1`` = first Monday)."""

    weekday: int
    nth: int

    def days(self, year: int, month: int) -> tuple[int, ...]:
        day = 1 + (self.weekday - _quartz_weekday(year, month, 1)) % 7 + 7 * (self.nth - 1)
        return (day,) if day <= calendar.monthrange(year, month)[1] else ()


DayRule: TypeAlias = (
    DaysOfMonth
    | LastDayOfMonth
    | NearestWeekday
    | DaysOfWeek
    | LastWeekdayOfMonth
    | NthWeekdayOfMonth
)


@lru_cache(maxsize=4096)
def _month_days(rule: DayRule, year: int, month: int) -> tuple[int, ...]:
    return rule.days(year, month)


@dataclass(frozen=True, slots=True)
class QuartzFields:
    """A parsed expression: sorted allowed values per field plus the day rule."""

    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    day_rule: DayRule
    months: tuple[int, ...]
    years: tuple[int, ...]

    @property
    def _times(self) -> tuple[_Values, ...]:
        return (self.hours, self.minutes, self.seconds)

    def first_at_or_after(self, start: datetime) -> datetime | None:
        """The earliest matching naive wall time ``>= start`` (whole seconds)."""
        if start.year > MAX_YEAR:
            return None
        if start.year < MIN_YEAR:
            start = datetime(MIN_YEAR, 1, 1)
        for year in self.years[bisect_left(self.years, start.year) :]:
            same_year = year == start.year
            months = (
                self.months[bisect_left(self.months, start.month) :] if same_year else self.months
            )
            for month in months:
                same_month = same_year and month == start.month
                days = _month_days(self.day_rule, year, month)
                for day in days[bisect_left(days, start.day) :] if same_month else days:
                    at_start = same_month and day == start.day
                    floor = (start.hour, start.minute, start.second) if at_start else (0, 0, 0)
                    hms = _first_from(self._times, floor)
                    if hms is not None:
                        hour, minute, second = hms
                        return datetime(year, month, day, hour, minute, second)
        return None

    def last_at_or_before(self, end: datetime) -> datetime | None:
        """The latest matching naive wall time ``<= end`` (whole seconds)."""
        if end.year < MIN_YEAR:
            return None
        if end.year > MAX_YEAR:
            end = datetime(MAX_YEAR, 12, 31, 23, 59, 59)
        for year in reversed(self.years[: bisect_right(self.years, end.year)]):
            same_year = year == end.year
            months = (
                self.months[: bisect_right(self.months, end.month)] if same_year else self.months
            )
            for month in reversed(months):
                same_month = same_year and month == end.month
                days = _month_days(self.day_rule, year, month)
                for day in reversed(days[: bisect_right(days, end.day)] if same_month else days):
                    at_end = same_month and day == end.day
                    ceiling = (end.hour, end.minute, end.second) if at_end else (23, 59, 59)
                    hms = _last_from(self._times, ceiling)
                    if hms is not None:
                        hour, minute, second = hms
                        return datetime(year, month, day, hour, minute, second)
        return None


def _first_from(fields: tuple[_Values, ...], target: _Values) -> _Values | None:
    """The smallest combination of ``fields``' values ``>= target``, compared left to right."""
    values, rest = fields[0], fields[1:]
    i = bisect_left(values, target[0])
    if rest and i < len(values) and values[i] == target[0]:
        tail = _first_from(rest, target[1:])
        if tail is not None:
            return (values[i], *tail)
        i += 1
    return (values[i], *(later[0] for later in rest)) if i < len(values) else None


def _last_from(fields: tuple[_Values, ...], target: _Values) -> _Values | None:
    """The largest combination of ``fields``' values ``<= target``, compared left to right."""
    values, rest = fields[0], fields[1:]
    i = bisect_right(values, target[0]) - 1
    if rest and i >= 0 and values[i] == target[0]:
        tail = _last_from(rest, target[1:])
        if tail is not None:
            return (values[i], *tail)
        i -= 1
    return (values[i], *(later[-1] for later in rest)) if i >= 0 else None


# --------------------------------------------------------------------------- parsing

_FIELDS = ("second", "minute", "hour", "day-of-month", "month", "day-of-week", "year")
_BOUNDS = {
    "second": (0, 59),
    "minute": (0, 59),
    "hour": (0, 23),
    "day-of-month": (1, 31),
    "month": (1, 12),
    "day-of-week": (1, 7),
    "year": (MIN_YEAR, MAX_YEAR),
}
_NAMES = {"month": _MONTHS, "day-of-week": _DAYS}
_NAME_RANGES = {"month": "JAN-DEC", "day-of-week": "SUN-SAT"}


def _number(field: str, text: str, token: str) -> int:
    lo, hi = _BOUNDS[field]
    names = _NAMES.get(field, {})
    if token in names:
        return names[token]
    if not token.isascii() or not token.isdigit():
        hint = f" or a name {_NAME_RANGES[field]}" if names else ""
        raise _FieldError(field, text, f"has {token!r}, expected a number {lo}-{hi}{hint}")
    value = int(token)
    if not lo <= value <= hi:
        raise _FieldError(field, text, f"out of range {lo}-{hi}")
    return value


def _values(field: str, text: str) -> tuple[int, ...]:
    """Parse ``*``, lists, ranges (wrapping like Quartz, e.g. ``FRI-MON``) and steps."""
    lo, hi = _BOUNDS[field]
    size = hi - lo + 1
    max_step = hi if lo == 0 else size  # Quartz: seconds <= 59, hours <= 23, months <= 12 ...
    if "?" in text:
        raise _FieldError(
            field, text, "may not contain '?' (only a whole day-of-month or day-of-week field)"
        )
    result: set[int] = set()
    for item in text.upper().split(","):
        match = _ITEM.fullmatch(item)
        if match is None or (match["start"] == "*" and match["end"] is not None):
            raise _FieldError(field, text, f"has invalid item {item!r}")
        start_s, end_s, step_s = match.group("start", "end", "step")
        step = 1 if step_s is None else int(step_s)
        if not 1 <= step <= max_step:
            raise _FieldError(field, text, f"has step {step}, expected 1-{max_step}")
        if start_s == "*":
            start, end = lo, hi
        else:
            start = _number(field, text, start_s)
            if end_s is not None:
                end = _number(field, text, end_s)
            else:
                end = hi if step_s is not None else start  # 'a/n' runs to the field maximum
        if end < start:
            if field == "year":
                raise _FieldError(field, text, f"has range {item!r} that ends before it starts")
            end += size  # Quartz wraps around, e.g. hours 22-2 or FRI-MON
        result.update(lo + (v - lo) % size for v in range(start, end + 1, step))
    return tuple(sorted(result))


def _day_of_month(text: str) -> DayRule | None:
    field, upper = "day-of-month", text.upper()
    if upper == "?":
        return None
    if "," in upper and ("L" in upper or "W" in upper):
        raise _FieldError(field, text, "cannot combine 'L' or 'W' with other days (Quartz)")
    if match := _DOM_LAST.fullmatch(upper):
        offset = int(match["offset"] or 0)
        if offset > 30:
            raise _FieldError(field, text, "has offset after 'L-' out of range 0-30")
        return LastDayOfMonth(offset, match["w"] is not None)
    if match := _DOM_NEAREST.fullmatch(upper):
        return NearestWeekday(_number(field, text, match["day"]))
    return DaysOfMonth(_values(field, text))


def _day_of_week(text: str) -> DayRule | None:
    field, upper = "day-of-week", text.upper()
    if upper == "?":
        return None
    if "," in upper and ("L" in upper or "#" in upper):
        raise _FieldError(field, text, "cannot combine 'L' or '#' with other days (Quartz)")
    if upper == "L":  # Quartz: a lone L in day-of-week is 7 = Saturday
        return DaysOfWeek(frozenset({7}))
    if match := _DOW_LAST.fullmatch(upper):
        return LastWeekdayOfMonth(_number(field, text, match["dow"]))
    if match := _DOW_NTH.fullmatch(upper):
        weekday, nth = _number(field, text, match["dow"]), int(match["nth"])
        if not 1 <= nth <= 5:
            raise _FieldError(field, text, f"has '#{nth}', expected '#1'-'#5'")
        return NthWeekdayOfMonth(weekday, nth)
    return DaysOfWeek(frozenset(_values(field, text)))


def parse_quartz(expression: str) -> QuartzFields:
    """Parse a Quartz cron expression (``sec min hour day-of-month month day-of-week [year]``).

    Raises:
        ValueError: naming the field at fault, e.g.
            ``invalid Quartz cron '0 0 25 * * ?': hour field '25' out of range 0-23``.
    """
    parts = expression.split()
    try:
        if len(parts) not in (6, 7):
            raise ValueError(
                f"expected 6 or 7 fields ({' '.join(_FIELDS[:6])} [year]), got {len(parts)}"
            )
        seconds = _values("second", parts[0])
        minutes = _values("minute", parts[1])
        hours = _values("hour", parts[2])
        dom = _day_of_month(parts[3])
        months = _values("month", parts[4])
        dow = _day_of_week(parts[5])
        years = _values("year", parts[6]) if len(parts) == 7 else _ALL_YEARS
        if dom is None and dow is None:
            raise ValueError(
                "day-of-month and day-of-week cannot both be '?' (exactly one must be '?')"
            )
        if dom is not None and dow is not None:
            raise ValueError(
                "Quartz does not support restricting both day-of-month and day-of-week; "
                "set exactly one of them to '?'"
            )
    except ValueError as exc:
        raise ValueError(f"invalid Quartz cron {expression!r}: {exc}") from None
    day_rule = dom if dom is not None else dow
    assert day_rule is not None
    return QuartzFields(seconds, minutes, hours, day_rule, months, years)


_ALL_YEARS = tuple(range(MIN_YEAR, MAX_YEAR + 1))


_parse_cached = lru_cache(maxsize=1024)(parse_quartz)  # jobs share a few schedules

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


@dataclass(frozen=True, slots=True, init=False)
class QuartzSchedule:
    """An immutable Quartz cron schedule in an IANA time zone.

    Fields: ``sec min hour day-of-month month day-of-week [year]``; day-of-week 1=SUN..7=SAT
    (names case-insensitive); exactly one day field is ``?``. Supported: lists, ranges
    (wrapping, ``FRI-MON``), steps, ``L``, ``L-n``, ``nW``, ``LW``, ``nL``, ``n#k``, years
    1970-2199. DST ("compatible", as Quartz): a skipped wall time fires shifted forward by
    the gap (02:30 on Berlin's spring-forward day fires at 03:30 CEST); a repeated one fires
    once, at its first occurrence. Compare results as instants: Python's ``==`` across zones
    is false for a repeated wall time (PEP 495).

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

    def _first_after(self, wall: datetime) -> datetime | None:
        return self._fields.first_at_or_after(wall.replace(microsecond=0) + _SECOND)

    def _last_before(self, wall: datetime) -> datetime | None:
        floor = wall.replace(microsecond=0)
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
