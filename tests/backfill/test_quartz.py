"""Behaviour of Quartz cron schedules: field semantics, DST policy, errors, properties."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from databricks_bundle_decorators.backfill.quartz import QuartzSchedule

UTC = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(tz: ZoneInfo, year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=tz)


def u(value: datetime | None) -> datetime | None:
    """The same instant in UTC.

    Needed for equality: PEP 495 makes ``==`` between different zones False when one
    side is a repeated or skipped wall time, and ``==`` within one zone ignores
    ``fold``; comparing in UTC compares instants.
    """
    return None if value is None else value.astimezone(UTC)


def us(values: list[datetime]) -> list[datetime | None]:
    return [u(v) for v in values]


def fires(schedule: QuartzSchedule, after: datetime, count: int) -> list[datetime]:
    out: list[datetime] = []
    current: datetime | None = after
    for _ in range(count):
        assert current is not None
        current = schedule.next_fire(current)
        if current is None:
            break
        out.append(current)
    return out


# --------------------------------------------------------------------------- examples

# (expression, after (UTC), expected next fires (UTC)); calendars: 2024-01-01 is a Monday.
EXAMPLES = [
    pytest.param(
        "0 0 6 * * ?", utc(2024, 1, 1, 6), [utc(2024, 1, 2, 6), utc(2024, 1, 3, 6)], id="daily"
    ),
    pytest.param(
        "0 0 6 ? * MON-FRI",
        utc(2024, 1, 4, 7),
        [utc(2024, 1, 5, 6), utc(2024, 1, 8, 6), utc(2024, 1, 9, 6)],
        id="mon-fri-names",
    ),
    pytest.param(
        "0 0 6 ? * 2-6",
        utc(2024, 1, 4, 7),
        [utc(2024, 1, 5, 6), utc(2024, 1, 8, 6), utc(2024, 1, 9, 6)],
        id="mon-fri-numbers-2-is-monday",
    ),
    pytest.param(
        "0 0 12 ? * 1",
        utc(2024, 1, 1),
        [utc(2024, 1, 7, 12), utc(2024, 1, 14, 12)],
        id="1-is-sunday",
    ),
    pytest.param("0 0 12 ? * sun", utc(2024, 1, 1), [utc(2024, 1, 7, 12)], id="sun-lowercase"),
    pytest.param(
        "0 0 0 ? * L", utc(2024, 1, 1), [utc(2024, 1, 6), utc(2024, 1, 13)], id="dow-L-is-saturday"
    ),
    pytest.param(
        "0 0 0 ? * FRI-MON",
        utc(2024, 1, 3),
        [utc(2024, 1, 5), utc(2024, 1, 6), utc(2024, 1, 7), utc(2024, 1, 8), utc(2024, 1, 12)],
        id="dow-wrapping-range",
    ),
    pytest.param(
        "0 0 22-1 * * ?",
        utc(2024, 1, 1, 12),
        [utc(2024, 1, 1, 22), utc(2024, 1, 1, 23), utc(2024, 1, 2, 0), utc(2024, 1, 2, 1)],
        id="hour-wrapping-range",
    ),
    pytest.param(
        "0 5/20 1-7/3 * * ?",
        utc(2024, 1, 1),
        [
            utc(2024, 1, 1, 1, 5),
            utc(2024, 1, 1, 1, 25),
            utc(2024, 1, 1, 1, 45),
            utc(2024, 1, 1, 4, 5),
        ],
        id="steps",
    ),
    pytest.param(
        "*/20 0 0 * * ?",
        utc(2024, 1, 1),
        [utc(2024, 1, 1, 0, 0, 20), utc(2024, 1, 1, 0, 0, 40), utc(2024, 1, 2)],
        id="seconds-step",
    ),
    pytest.param("0 0 0 L * ?", utc(2024, 2, 1), [utc(2024, 2, 29), utc(2024, 3, 31)], id="L-leap"),
    pytest.param("0 0 0 L * ?", utc(2023, 2, 1), [utc(2023, 2, 28)], id="L-non-leap"),
    pytest.param(
        "0 0 0 L-3 * ?", utc(2024, 1, 1), [utc(2024, 1, 28), utc(2024, 2, 26)], id="L-minus-3"
    ),
    pytest.param("0 0 0 15W * ?", utc(2024, 6, 1), [utc(2024, 6, 14)], id="15W-saturday-to-friday"),
    pytest.param("0 0 0 15W * ?", utc(2024, 9, 1), [utc(2024, 9, 16)], id="15W-sunday-to-monday"),
    pytest.param("0 0 0 15W * ?", utc(2024, 1, 1), [utc(2024, 1, 15)], id="15W-weekday-unchanged"),
    pytest.param(
        "0 0 0 1W * ?", utc(2024, 5, 15), [utc(2024, 6, 3)], id="1W-saturday-to-monday-3rd"
    ),
    pytest.param(
        "0 0 0 31W * ?", utc(2024, 3, 1), [utc(2024, 3, 29)], id="31W-last-sunday-to-friday"
    ),
    pytest.param("0 0 0 LW * ?", utc(2024, 8, 1), [utc(2024, 8, 30)], id="LW-last-saturday"),
    pytest.param("0 0 0 LW * ?", utc(2024, 3, 1), [utc(2024, 3, 29)], id="LW-last-sunday"),
    pytest.param("0 0 0 LW * ?", utc(2024, 1, 1), [utc(2024, 1, 31)], id="LW-last-weekday"),
    pytest.param(
        "0 0 0 ? * 6L", utc(2024, 1, 1), [utc(2024, 1, 26), utc(2024, 2, 23)], id="6L-last-friday"
    ),
    pytest.param("0 0 0 ? * FRIL", utc(2024, 1, 1), [utc(2024, 1, 26)], id="FRIL-last-friday"),
    pytest.param(
        "0 0 0 ? * 2#1", utc(2024, 1, 1), [utc(2024, 2, 5), utc(2024, 3, 4)], id="2#1-first-monday"
    ),
    pytest.param(
        "0 0 0 ? * 6#3",
        utc(2024, 1, 1),
        [utc(2024, 1, 19), utc(2024, 2, 16)],
        id="6#3-third-friday",
    ),
    pytest.param("0 0 0 ? * 5#5", utc(2024, 1, 1), [utc(2024, 2, 29)], id="5#5-fifth-thursday"),
    pytest.param(
        "0 0 0 1 1 ? 2025-2026",
        utc(2024, 6, 1),
        [utc(2025, 1, 1), utc(2026, 1, 1)],
        id="year-range",
    ),
    pytest.param("0 0 0 1 1 ? 2199", utc(2024, 6, 1), [utc(2199, 1, 1)], id="year-2199"),
    pytest.param(
        "0 0 0 29 2 ?", utc(2021, 1, 1), [utc(2024, 2, 29), utc(2028, 2, 29)], id="feb-29"
    ),
    pytest.param("0 0 0 29 2 ?", utc(2096, 3, 1), [utc(2104, 2, 29)], id="feb-29-skips-2100"),
    pytest.param("0 0 0 30 2 ?", utc(2021, 1, 1), [], id="feb-30-never"),
    pytest.param(
        "0 0 0 1 JAN,jul ?", utc(2024, 2, 1), [utc(2024, 7, 1), utc(2025, 1, 1)], id="month-names"
    ),
]


@pytest.mark.parametrize(("expression", "after", "expected"), EXAMPLES)
def test_next_fires(expression: str, after: datetime, expected: list[datetime]) -> None:
    schedule = QuartzSchedule(expression)
    assert us(fires(schedule, after, len(expected))) == expected
    if not expected:
        assert schedule.next_fire(after) is None
    # and backwards from the last fire, the same fires in reverse
    if expected:
        back = [u(schedule.previous_fire(f)) for f in expected[1:]]
        assert back == expected[:-1]
        assert all(schedule.matches(f) for f in expected)


def test_impossible_dates_have_no_fire() -> None:
    schedule = QuartzSchedule("0 0 0 30 2 ?")
    assert schedule.next_fire(utc(1900, 1, 1)) is None
    assert schedule.previous_fire(utc(2500, 1, 1)) is None
    assert QuartzSchedule("0 0 0 ? 2 2#5 2019-2023").next_fire(utc(2019, 1, 1)) is None


def test_year_bounds() -> None:
    schedule = QuartzSchedule("0 0 0 1 1 ? 2025-2026")
    assert schedule.next_fire(utc(2026, 1, 1)) is None
    assert u(schedule.next_fire(utc(2025, 6, 1))) == utc(2026, 1, 1)
    assert QuartzSchedule("0 0 0 1 1 ? 2199").next_fire(utc(2199, 1, 1)) is None
    assert schedule.previous_fire(utc(2025, 1, 1)) is None
    assert u(schedule.previous_fire(utc(2030, 1, 1))) == utc(2026, 1, 1)
    unbounded = QuartzSchedule("0 0 0 1 1 ?")
    assert unbounded.next_fire(utc(2199, 1, 1)) is None
    assert unbounded.previous_fire(utc(1970, 1, 1)) is None
    assert u(unbounded.previous_fire(utc(1970, 1, 1, 0, 0, 1))) == utc(1970, 1, 1)
    assert u(unbounded.next_fire(datetime.min.replace(tzinfo=UTC))) == utc(1970, 1, 1)
    assert u(unbounded.previous_fire(datetime.max.replace(tzinfo=UTC))) == utc(2199, 1, 1)


def test_results_are_in_schedule_timezone() -> None:
    schedule = QuartzSchedule("0 0 6 ? * MON-FRI", "Europe/Berlin")
    fire = schedule.next_fire(utc(2024, 3, 29, 12))
    assert u(fire) == utc(2024, 4, 1, 4)
    assert fire is not None and fire.tzinfo == BERLIN
    assert fire.isoformat() == "2024-04-01T06:00:00+02:00"
    # an input in another zone is the same instant
    assert u(schedule.next_fire(local(NEW_YORK, 2024, 3, 29, 8))) == u(fire)


def test_strictness_and_matches() -> None:
    schedule = QuartzSchedule("0 0 6 * * ?")
    fire = utc(2024, 1, 2, 6)
    assert u(schedule.next_fire(fire)) == utc(2024, 1, 3, 6)
    assert u(schedule.previous_fire(fire)) == utc(2024, 1, 1, 6)
    assert u(schedule.next_fire(fire - timedelta(microseconds=1))) == fire
    assert u(schedule.previous_fire(fire + timedelta(microseconds=1))) == fire
    assert schedule.matches(fire)
    assert not schedule.matches(fire + timedelta(seconds=1))
    assert not schedule.matches(fire + timedelta(microseconds=1))


@pytest.mark.parametrize(
    ("expression", "tz"),
    [
        ("0 0 6 * * ?", "UTC"),
        ("0 */7 * ? * MON-FRI", "Europe/Berlin"),
        ("0 30 2 * * ?", "America/New_York"),
        ("0 0 0 LW * ?", "Europe/Berlin"),
    ],
)
def test_next_and_previous_are_inverse(expression: str, tz: str) -> None:
    schedule = QuartzSchedule(expression, tz)
    t = utc(2024, 3, 1, 13, 17, 5)
    for _ in range(300):
        nxt = schedule.next_fire(t)
        assert nxt is not None and nxt > t
        prev = schedule.previous_fire(nxt)
        assert prev is not None and prev <= t < nxt  # nothing fires in (t, nxt)
        assert u(schedule.next_fire(prev)) == u(nxt)
        expected_prev = prev if prev < t else t
        assert u(schedule.previous_fire(t + timedelta(microseconds=1))) == u(expected_prev)
        t = nxt + timedelta(minutes=41)


def test_value_object() -> None:
    a = QuartzSchedule("  0 0 6   ? * MON-FRI ", "Europe/Berlin")
    b = QuartzSchedule("0 0 6 ? * MON-FRI", "Europe/Berlin")
    assert a.expression == "0 0 6 ? * MON-FRI"
    assert a.timezone == "Europe/Berlin"
    assert a == b and hash(a) == hash(b)
    assert a != QuartzSchedule("0 0 6 ? * MON-FRI")
    assert repr(a) == "QuartzSchedule(expression='0 0 6 ? * MON-FRI', timezone='Europe/Berlin')"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.expression = "0 0 7 * * ?"  # type: ignore[misc]
    assert not hasattr(a, "__dict__")


# --------------------------------------------------------------------------- DST


@pytest.mark.parametrize(
    ("tz", "spring_day"),
    [
        pytest.param(BERLIN, date(2024, 3, 31), id="berlin"),
        pytest.param(NEW_YORK, date(2024, 3, 10), id="new-york"),
    ],
)
def test_spring_forward_gap_fires_shifted_forward(tz: ZoneInfo, spring_day: date) -> None:
    schedule = QuartzSchedule("0 30 2 * * ?", tz.key)
    before = datetime.combine(spring_day - timedelta(days=1), datetime.min.time(), tz)
    got = fires(schedule, before, 3)
    day_after = spring_day + timedelta(days=1)
    assert [f.replace(tzinfo=None) for f in got] == [
        datetime(spring_day.year, spring_day.month, spring_day.day, 2, 30) - timedelta(days=1),
        datetime(spring_day.year, spring_day.month, spring_day.day, 3, 30),
        datetime(day_after.year, day_after.month, day_after.day, 2, 30),
    ]
    assert got[1].utcoffset() != got[0].utcoffset()  # 03:30 in summer time
    assert u(schedule.previous_fire(got[2])) == u(got[1])
    # 02:30 (skipped) and 03:30 collapse into one fire
    both = QuartzSchedule("0 30 2,3 * * ?", tz.key)
    assert [f.hour for f in fires(both, before, 4)] == [2, 3, 3, 2]


def test_spring_forward_exact_instants() -> None:
    assert u(
        QuartzSchedule("0 30 2 * * ?", "Europe/Berlin").next_fire(utc(2024, 3, 30, 12))
    ) == utc(2024, 3, 31, 1, 30)
    assert u(
        QuartzSchedule("0 30 2 * * ?", "America/New_York").next_fire(utc(2024, 3, 9, 12))
    ) == utc(2024, 3, 10, 7, 30)


@pytest.mark.parametrize(
    ("tz", "expression", "fall_day", "first_utc"),
    [
        pytest.param(
            "Europe/Berlin",
            "0 30 2 * * ?",
            date(2024, 10, 27),
            utc(2024, 10, 27, 0, 30),
            id="berlin",
        ),
        pytest.param(
            "America/New_York",
            "0 30 1 * * ?",
            date(2024, 11, 3),
            utc(2024, 11, 3, 5, 30),
            id="new-york",
        ),
    ],
)
def test_fall_back_repeated_time_fires_once(
    tz: str, expression: str, fall_day: date, first_utc: datetime
) -> None:
    schedule = QuartzSchedule(expression, tz)
    got = fires(schedule, first_utc - timedelta(hours=12), 2)
    assert u(got[0]) == first_utc  # the first (earlier, summer-time) occurrence
    assert got[0].fold == 0
    assert got[1].date() == fall_day + timedelta(days=1)
    # from inside the repeated hour (either pass) the next fire is the following day
    assert schedule.matches(first_utc)
    assert u(schedule.next_fire(first_utc + timedelta(minutes=10))) == u(got[1])
    assert u(schedule.next_fire(first_utc + timedelta(hours=1))) == u(got[1])
    assert u(schedule.next_fire(first_utc + timedelta(hours=1, minutes=10))) == u(got[1])
    assert not schedule.matches(first_utc + timedelta(hours=1))  # the second pass
    assert u(schedule.previous_fire(got[1])) == first_utc
    assert u(schedule.previous_fire(first_utc + timedelta(hours=1, minutes=10))) == first_utc


@pytest.mark.parametrize(
    ("tz", "spring_day", "fall_day"),
    [
        pytest.param("Europe/Berlin", date(2024, 3, 31), date(2024, 10, 27), id="berlin"),
        pytest.param("America/New_York", date(2024, 3, 10), date(2024, 11, 3), id="new-york"),
    ],
)
def test_hourly_across_transitions(tz: str, spring_day: date, fall_day: date) -> None:
    schedule = QuartzSchedule("0 0 * * * ?", tz)
    zone = ZoneInfo(tz)
    for day, expected_count, expected_gaps in ((spring_day, 23, set()), (fall_day, 24, {2})):
        start = datetime.combine(day, datetime.min.time(), zone) - timedelta(microseconds=1)
        got = fires(schedule, start, 30)
        on_day = [f for f in got if f.date() == day]
        assert len(on_day) == expected_count
        instants = [f.astimezone(UTC) for f in got]
        assert instants == sorted(set(instants))  # strictly increasing, no duplicates
        steps = {(b - a) // timedelta(hours=1) for a, b in itertools.pairwise(instants)}
        assert steps == {1} | expected_gaps
        # walking backwards yields the same instants
        back = [u(schedule.previous_fire(f)) for f in got[1:]]
        assert back == instants[:-1]


def test_partial_gap_is_not_monotone_in_wall_time() -> None:
    """Lord Howe skips 02:00-02:30: 02:20 fires at 02:50, after the real 02:35."""
    schedule = QuartzSchedule("0 20,35 2 * * ?", "Australia/Lord_Howe")
    zone = ZoneInfo("Australia/Lord_Howe")
    got = fires(schedule, local(zone, 2024, 10, 6, 1), 3)
    assert [(f.hour, f.minute) for f in got] == [(2, 35), (2, 50), (2, 20)]
    assert [u(schedule.previous_fire(f)) for f in got[1:]] == us(got[:-1])
    assert u(schedule.next_fire(got[0])) == u(got[1])
