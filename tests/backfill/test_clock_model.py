"""Time keys against a brute-force clock model (``clock_model``: zoneinfo, no ``whenever``).

Three defect classes of issue 11 are pinned here, each over zones with unusual clock
changes and 10,000 examples, most of them within a day or two of a real transition:

1. keys inside gaps longer than, or not aligned to, one period (two- and three-hour
   jumps, skipped days, Chatham's 02:45 -> 03:45) agree across ``keys()``,
   ``window()``, ``key_of()``, ``validate_key()``, ``previous_keys()`` and
   ``current_key()``/``data_lag``;
2. with ``collect_schedule_gaps``, lookback counts from the run's key (seed 001);
3. a ranged run with an open ``end_date`` is bounded by the run's clock, not the wall's.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from whenever import Instant

from databricks_bundle_decorators.backfill import (
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    QuartzSchedule,
    RunContext,
    TimeBackfill,
    WeeklyBackfill,
    resolve_keys,
)

from .clock_model import DAY, HOUR, Period, key_at, periods, transitions, wall_periods

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Pacific/Apia",  # skipped 2011-12-30
    "Pacific/Kiritimati",  # skipped 1995-01-01
    "Australia/Lord_Howe",  # 30-minute DST shift
    "Pacific/Chatham",  # 02:45 -> 03:45: hour 03 partly skipped
    "America/Santiago",  # DST at midnight
    "Asia/Kathmandu",  # +05:30 -> +05:45 in 1986: a 15-minute jump
    "Antarctica/Troll",  # +00 <-> +02: two-hour jumps every year
    "Antarctica/Casey",  # +08 <-> +11: three-hour jumps, some at 03:01
    "Antarctica/Vostok",  # a seven-hour fall-back in 1994
    "America/St_Johns",  # 1988: a two-hour jump at 00:01
]
BACKFILL: dict[str, type[TimeBackfill]] = {
    "hourly": HourlyBackfill,
    "daily": DailyBackfill,
    "weekly": WeeklyBackfill,
    "monthly": MonthlyBackfill,
}
FIRST_KEY = {
    "hourly": "1960-01-01T00",
    "daily": "1960-01-01",
    "weekly": "1960-W01",
    "monthly": "1960-01-01",
}
LAST_KEY = {
    "hourly": "2039-12-31T23",
    "daily": "2039-12-31",
    "weekly": "2039-W52",
    "monthly": "2039-12-01",
}
UNIT = {"hourly": HOUR, "daily": DAY}
SPAN = {"hourly": 30 * HOUR, "daily": 4 * DAY}
# From 1980 every offset of these zones is a multiple of 15 minutes (Kiritimati was -10:40
# until 1979), which the model's 15-minute walk relies on.
EARLIEST = int(datetime(1980, 3, 1, tzinfo=timezone.utc).timestamp())
LATEST = int(datetime(2037, 6, 1, tzinfo=timezone.utc).timestamp())


@functools.cache
def _anchors(tz: str) -> tuple[int, ...]:
    return tuple(at for at in transitions(tz) if EARLIEST <= at <= LATEST)


class Knobs(random.Random):
    """The small parameters of one example, derived from one drawn ``seed``.

    Hypothesis spends about a millisecond per example and more per drawn value; 10,000
    examples of seven drawn values each took minutes. So a test draws its zone, its
    cadence and one seed, and the rest comes from here (shown with ``note`` on failure).
    """

    def instant(self, tz: str) -> int:
        """Four times in five within two days before / one after a transition of ``tz``."""
        anchors = _anchors(tz)
        if anchors and self.randrange(5):
            return self.choice(anchors) + self.randint(-2 * DAY, DAY)
        return self.randint(EARLIEST, LATEST)


ZONE = st.sampled_from(ZONES)
HOURLY_OR_DAILY = st.sampled_from(["hourly", "daily"])
SEED = st.integers(0, 2**32 - 1)


def _window(backfill: TimeBackfill, key: str) -> tuple[float, float]:
    window = backfill.window(key)
    return window.start.timestamp(), window.end.timestamp()


def _at(ts: int) -> Instant:
    return Instant.from_timestamp(ts)


def _keys(model: list[Period], indices: Iterable[int]) -> tuple[str, ...]:
    return tuple(model[i].key for i in sorted(set(indices)))


# -- 1. keys, windows, validation, lookback and data_lag across every kind of gap ------


@settings(max_examples=10_000, deadline=None)
@given(tz=ZONE, cadence=HOURLY_OR_DAILY, seed=SEED)
def test_time_keys_match_the_clock_model(tz: str, cadence: str, seed: int) -> None:
    knobs = Knobs(seed)
    t0 = knobs.instant(tz)
    t1 = t0 + knobs.randint(0, SPAN[cadence])
    probe, lag, count = knobs.randint(t0, t1), knobs.randint(0, 3), knobs.randint(0, 4)
    note(f"instants {t0}..{t1}, probe {probe}, data_lag={lag}, previous_keys count={count}")
    unit = UNIT[cadence]
    model = periods(tz, cadence, t0 - DAY - (lag + count + 2) * unit, t1 + DAY + unit)
    backfill = BACKFILL[cadence](FIRST_KEY[cadence], LAST_KEY[cadence], tz=tz, data_lag=lag)
    inside = [p for p in model if p.end > t0 and p.start <= t1]

    assert backfill.keys(inside[0].key, inside[-1].key) == [p.key for p in inside]
    for period in inside:
        assert _window(backfill, period.key) == (period.start, period.end)
        assert backfill.key_of(_at(period.start)) == period.key
        assert backfill.key_of(_at(period.end - 1)) == period.key
    existing = {p.key for p in inside}
    for wall in wall_periods(cadence, inside[0], inside[-1]):
        if wall not in existing:
            with pytest.raises(ValueError, match="does not exist"):
                backfill.validate_key(wall)
            with pytest.raises(ValueError, match="does not exist"):
                backfill.window(wall)

    index = key_at(model, probe)
    assert index >= max(lag, count)
    assert backfill.key_of(_at(probe)) == model[index].key
    now = datetime.fromtimestamp(probe, timezone.utc)
    assert backfill.current_key(now=now) == model[index - lag].key
    assert backfill.previous_keys(model[index].key, count) == [
        p.key for p in model[index - count : index]
    ]


@settings(max_examples=300, deadline=None)
@given(tz=ZONE, cadence=st.sampled_from(["weekly", "monthly"]), seed=SEED)
def test_week_and_month_windows_match_the_clock_model(tz: str, cadence: str, seed: int) -> None:
    at = Knobs(seed).instant(tz)
    reach = 40 * DAY if cadence == "monthly" else 10 * DAY
    model = periods(tz, cadence, at - reach, at + reach)
    backfill = BACKFILL[cadence](FIRST_KEY[cadence], LAST_KEY[cadence], tz=tz)
    assert backfill.key_of(_at(at)) == model[key_at(model, at)].key
    for period in model:
        assert _window(backfill, period.key) == (period.start, period.end)
    assert backfill.keys(model[0].key, model[-1].key) == [p.key for p in model]


# -- 2. schedule gaps: lookback counts from the run's key -----------------------------


def _latest_fires(now: int, minute: int, hours: list[int], weekdays: set[int] | None) -> list[int]:
    """The two latest fires at or before ``now`` of a UTC schedule (Quartz 1=SUN..7=SAT)."""
    fires: list[int] = []
    day = now - now % DAY
    while len(fires) < 2:
        quartz_weekday = (datetime.fromtimestamp(day, timezone.utc).weekday() + 1) % 7 + 1
        if weekdays is None or quartz_weekday in weekdays:
            fires += sorted(
                (f for h in hours if (f := day + h * HOUR + minute * 60) <= now), reverse=True
            )
        day -= DAY
    return fires[:2]


@settings(max_examples=10_000, deadline=None)
@given(tz=ZONE, cadence=HOURLY_OR_DAILY, seed=SEED)
def test_schedule_gaps_and_lookback_match_the_model(tz: str, cadence: str, seed: int) -> None:
    knobs = Knobs(seed)
    now, minute = knobs.instant(tz), knobs.randint(0, 59)
    lookback, lag = knobs.randint(0, 4), knobs.randint(0, 2)
    if cadence == "daily":  # one fire a day, on some weekdays
        hours = [knobs.randint(0, 23)]
        weekdays: set[int] | None = set(knobs.sample(range(1, 8), knobs.randint(1, 7)))
        assert weekdays
        expression = f"0 {minute} {hours[0]} ? * {','.join(map(str, sorted(weekdays)))}"
    else:  # a few fires every day
        hours = sorted(knobs.sample(range(24), knobs.randint(1, 5)))
        weekdays = None
        expression = f"0 {minute} {','.join(map(str, hours))} * * ?"
    note(f"now {now}, schedule {expression!r}, lookback={lookback}, data_lag={lag}")
    _trigger, previous = _latest_fires(now, minute, hours, weekdays)
    unit = UNIT[cadence]
    model = periods(tz, cadence, previous - DAY - (lookback + lag + 2) * unit, now + DAY + unit)
    current = key_at(model, now) - lag
    gaps = range(key_at(model, previous) - lag + 1, current + 1)  # key(previous) < k <= current

    backfill = BACKFILL[cadence](
        FIRST_KEY[cadence], tz=tz, lookback=lookback, data_lag=lag, collect_schedule_gaps=True
    )
    schedule = QuartzSchedule(expression, timezone="UTC")
    clock = datetime.fromtimestamp(now, ZoneInfo(tz))
    resolved = resolve_keys(RunContext("job", "task", {}, backfill, schedule, clock))

    assert resolved.primary == model[current].key
    assert resolved.written == _keys(model, [*gaps, current])
    # Seed 001: the N keys before the run's key, united with the gap keys.
    assert resolved.keys == _keys(model, [*gaps, *range(current - lookback, current + 1)])


# -- 3. ranged runs with an open end_date: the run's clock bounds them -----------------


@settings(max_examples=10_000, deadline=None)
@given(tz=ZONE, cadence=HOURLY_OR_DAILY, seed=SEED)
def test_ranged_run_with_open_end_is_bounded_by_the_run_clock(
    tz: str, cadence: str, seed: int
) -> None:
    knobs = Knobs(seed)
    now = knobs.instant(tz)
    unit, span = UNIT[cadence], SPAN[cadence]
    first = now + knobs.randint(-span, span // 4)
    last = first + knobs.randint(0, span)
    lookback, lag = knobs.randint(0, 3), knobs.randint(0, 2)
    note(f"now {now}, range {first}..{last}, lookback={lookback}, data_lag={lag}")
    model = periods(
        tz,
        cadence,
        min(first, now) - DAY - (lookback + lag + 2) * unit,
        max(last, now) + DAY + unit,
    )
    start, end, current = key_at(model, first), key_at(model, last), key_at(model, now) - lag
    assert min(start - lookback, current) >= 0

    backfill = BACKFILL[cadence](FIRST_KEY[cadence], tz=tz, lookback=lookback, data_lag=lag)
    params = {"backfill_key": model[end].key, "backfill_start_key": model[start].key}
    clock = datetime.fromtimestamp(now, ZoneInfo(tz))
    context = RunContext("job", "task", params, backfill, None, clock)
    if end > current:
        with pytest.raises(ValueError, match=f"after the current key '{model[current].key}'"):
            resolve_keys(context)
        return
    resolved = resolve_keys(context)
    assert resolved.written == _keys(model, range(start, end + 1))
    assert resolved.keys == _keys(model, range(start - lookback, end + 1))
