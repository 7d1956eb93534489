"""A brute-force model of the time-key rules, independent of ``whenever``.

The rules (DESIGN.md, seed 001): every instant has exactly one key; consecutive windows
tile time; a skipped local period has no key; a repeated local hour has one key whose
window spans both occurrences. dbxdec's policy for partial and unaligned shifts: an
instant belongs to the period of the *latest* wall time the clock has shown so far.

The model asks ``zoneinfo`` (the stdlib) for each zone's UTC offset (a daily scan, each
change bisected to the second) and then simulates the wall clock in plain integer
arithmetic: wall times are "naive epoch seconds", the local clock read as if it were
UTC. Calendar arithmetic comes from ``datetime``; nothing from dbxdec or ``whenever``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

HOUR = 3_600
DAY = 86_400
_EPOCH = datetime(1970, 1, 1)
MODEL_START = int(datetime(1979, 12, 1, tzinfo=timezone.utc).timestamp())
MODEL_END = int(datetime(2038, 2, 1, tzinfo=timezone.utc).timestamp())


@dataclass(frozen=True, slots=True)
class Period:
    """One key of the model and its half-open window ``[start, end)`` in epoch seconds."""

    key: str
    start: int
    end: int
    wall: int  # the period's wall-clock start, in naive epoch seconds


def _offset_at(zone: ZoneInfo, ts: int) -> int:
    offset = datetime.fromtimestamp(ts, zone).utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


@functools.cache
def _offset_table(tz: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(starts, offsets)``: from ``starts[i]`` on, the zone's UTC offset is ``offsets[i]``.

    From zoneinfo, 1979-12..2038-02, scanned once a day with each change bisected to the
    second. (No zone tested changes its offset twice within a day in that span; checked
    against the transitions ``whenever`` lists when this model was written.)
    """
    zone = ZoneInfo(tz)
    starts, offsets = [MODEL_START], [_offset_at(zone, MODEL_START)]
    for at in range(MODEL_START, MODEL_END, DAY):
        offset = _offset_at(zone, at + DAY)
        if offset != offsets[-1]:
            lo, hi = at, at + DAY
            while hi - lo > 1:  # the first second with the new offset
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _offset_at(zone, mid) == offsets[-1] else (lo, mid)
            starts.append(hi)
            offsets.append(offset)
    return tuple(starts), tuple(offsets)


def transitions(tz: str) -> tuple[int, ...]:
    """Instants (epoch seconds) at which ``tz`` changes its UTC offset, 1980..2037."""
    return _offset_table(tz)[0][1:]


def _civil(wall: int) -> datetime:
    return _EPOCH + timedelta(seconds=wall)


def _floor_month(wall: int) -> int:
    civil = _civil(wall)
    return int((datetime(civil.year, civil.month, 1) - _EPOCH).total_seconds())


def _floor_week(wall: int) -> int:
    days = wall // DAY
    return (days - (days + 3) % 7) * DAY  # 1970-01-01 was a Thursday


def _week_key(wall: int) -> str:
    year, week, _ = _civil(wall).isocalendar()
    return f"{year:04d}-W{week:02d}"


FLOOR: dict[str, Callable[[int], int]] = {
    "hourly": lambda wall: wall - wall % HOUR,
    "daily": lambda wall: wall - wall % DAY,
    "weekly": _floor_week,
    "monthly": _floor_month,
}
FOLLOWING: dict[str, Callable[[int], int]] = {
    "hourly": lambda start: start + HOUR,
    "daily": lambda start: start + DAY,
    "weekly": lambda start: start + 7 * DAY,
    "monthly": lambda start: _floor_month(start + 32 * DAY),
}
FORMAT: dict[str, Callable[[int], str]] = {
    "hourly": lambda wall: _civil(wall).isoformat()[:13],  # YYYY-MM-DDTHH
    "daily": lambda wall: _civil(wall).isoformat()[:10],  # YYYY-MM-DD
    "weekly": _week_key,
    "monthly": lambda wall: f"{_civil(wall):%Y-%m}-01",
}


def periods(tz: str, cadence: str, t0: int, t1: int) -> list[Period]:
    """Every key whose whole window lies in ``[t0, t1]``, in order.

    The key of an instant is the period of the highest wall time shown so far, so a key
    starts where the wall clock first reaches or passes the start of the period after
    the current one. The walk goes event by event: from one instant to the next
    transition, or to the instant at which the current offset's wall clock reaches that
    next period start, whichever is first. ``t0`` must be at least a day before the first
    instant a caller asks about, so that a fall-back before it is seen whole.
    """
    floor, following = FLOOR[cadence], FOLLOWING[cadence]
    starts, offsets = _offset_table(tz)
    assert t0 >= MODEL_START and t1 <= MODEL_END, "outside the modelled years"
    segment = bisect.bisect_right(starts, t0) - 1
    last_segment = len(starts) - 1
    period = floor(t0 + offsets[segment])
    boundaries = [(period, t0)]  # (the period's wall start, its first instant)
    after = following(period)
    at = t0
    while at <= t1:
        while segment < last_segment and starts[segment + 1] <= at:
            segment += 1
        wall = at + offsets[segment]
        if wall >= after:
            period = floor(wall)
            after = following(period)
            boundaries.append((period, at))
        # The next event: this segment's clock reaching ``after``, or the next transition.
        at = after - offsets[segment]
        if segment < last_segment and starts[segment + 1] < at:
            at = starts[segment + 1]
    fmt = FORMAT[cadence]
    # The first boundary is where the walk began, not where its period began.
    return [
        Period(fmt(wall), start, end, wall)
        for (wall, start), (_, end) in itertools.pairwise(boundaries)
    ][1:]


def wall_periods(cadence: str, first: Period, last: Period) -> list[str]:
    """Every wall-clock period from ``first`` to ``last`` inclusive, skipped or not."""
    keys = []
    wall = first.wall
    while wall <= last.wall:
        keys.append(FORMAT[cadence](wall))
        wall = FOLLOWING[cadence](wall)
    return keys


def key_at(model: list[Period], ts: int) -> int:
    """The index in ``model`` of the period whose window contains ``ts``."""
    index = bisect.bisect_right([period.start for period in model], ts) - 1
    assert index >= 0 and ts < model[index].end, f"instant {ts} is outside the modelled span"
    return index
