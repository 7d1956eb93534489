"""QuartzSchedule against a deliberately simple brute-force reference (hypothesis)."""

from __future__ import annotations

import calendar
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from typing import NamedTuple
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill.quartz import QuartzSchedule

UTC = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def u(value: datetime | None) -> datetime | None:
    """The same instant in UTC (PEP 495: compare instants, not wall times)."""
    return None if value is None else value.astimezone(UTC)


# --------------------------------------------------------------------------- property test
#
# A deliberately simple reference: every field is a small spec object with its own
# predicate; candidate wall times are enumerated date by date, hour by hour, minute by
# minute, and mapped to instants with the documented DST policy.

Pred = Callable[[int], bool]
DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]  # Quartz 1..7
MONTH_NAMES = [calendar.month_abbr[i].upper() for i in range(1, 13)]


def quartz_weekday(d: date) -> int:
    return d.isoweekday() % 7 + 1  # 1=SUN .. 7=SAT


def last_day(d: date) -> int:
    return calendar.monthrange(d.year, d.month)[1]


@st.composite
def value_specs(
    draw: st.DrawFn, lo: int, hi: int, names: list[str] | None = None
) -> tuple[str, Pred]:
    size = hi - lo + 1

    def show(v: int) -> str:
        if names is not None and draw(st.booleans()):
            return names[v - lo]
        return str(v)

    kind = draw(st.sampled_from(["star", "star-step", "list", "range", "from-step"]))
    if kind == "star":
        return "*", lambda v: True
    if kind == "star-step":
        step = draw(st.integers(1, hi if lo == 0 else size))
        return f"*/{step}", lambda v: (v - lo) % step == 0
    if kind == "list":
        values = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=4))
        return ",".join(show(v) for v in values), lambda v: v in values
    if kind == "from-step":
        start = draw(st.integers(lo, hi))
        step = draw(st.integers(1, hi if lo == 0 else size))
        return f"{show(start)}/{step}", lambda v: v >= start and (v - start) % step == 0
    a, b = draw(st.integers(lo, hi)), draw(st.integers(lo, hi))
    step = draw(st.integers(1, 3))

    def in_range(v: int) -> bool:
        unwrapped = v if v >= a else v + size  # Quartz ranges wrap around, e.g. FRI-MON
        end = b if b >= a else b + size
        return a <= unwrapped <= end and (unwrapped - a) % step == 0

    suffix = f"/{step}" if step > 1 else ""
    return f"{show(a)}-{show(b)}{suffix}", in_range


def nearest_weekday(d: date, target: int) -> bool:
    """The Mon-Fri day of the month closest to ``target`` (months shorter: none)."""
    if target < 1 or target > last_day(d):
        return False
    weekdays = [n for n in range(1, last_day(d) + 1) if date(d.year, d.month, n).isoweekday() <= 5]
    return d.day == min(weekdays, key=lambda n: abs(n - target))


@st.composite
def day_specs(draw: st.DrawFn) -> tuple[str, str, Callable[[date], bool], bool]:
    """(day-of-month text, day-of-week text, predicate on local dates, restricts weekday)."""
    if draw(st.booleans()):
        kind = draw(st.sampled_from(["values", "L", "W", "LW", "L-nW"]))
        if kind == "values":
            text, pred = draw(value_specs(1, 31))
            return text, "?", lambda d: pred(d.day), False
        if kind == "L":
            off = draw(st.sampled_from([0, 0, 1, 3, 10, 30]))
            return (
                ("L" if off == 0 else f"L-{off}"),
                "?",
                lambda d: d.day == last_day(d) - off,
                False,
            )
        if kind == "W":
            n = draw(st.integers(1, 31))
            return f"{n}W", "?", lambda d: nearest_weekday(d, n), False
        if kind == "LW":
            return "LW", "?", lambda d: nearest_weekday(d, last_day(d)), False
        off = draw(st.integers(1, 5))
        return f"L-{off}W", "?", lambda d: nearest_weekday(d, last_day(d) - off), False
    kind = draw(st.sampled_from(["values", "values", "nL", "#", "L"]))
    dow = draw(st.integers(1, 7))
    name = DAY_NAMES[dow - 1] if draw(st.booleans()) else str(dow)
    if kind == "values":
        text, pred = draw(value_specs(1, 7, DAY_NAMES))
        return "?", text, lambda d: pred(quartz_weekday(d)), True
    if kind == "nL":
        return "?", f"{name}L", lambda d: quartz_weekday(d) == dow and d.day + 7 > last_day(d), True
    if kind == "#":
        k = draw(st.integers(1, 5))
        return (
            "?",
            f"{name}#{k}",
            lambda d: quartz_weekday(d) == dow and (d.day - 1) // 7 + 1 == k,
            True,
        )
    return "?", "L", lambda d: quartz_weekday(d) == 7, True


SECONDS = [("0", {0}), ("30", {30}), ("0,30", {0, 30}), ("*/30", {0, 30}), ("30/30", {30})]


class Spec(NamedTuple):
    expression: str
    wall_matches: Callable[[datetime], bool]
    date_matches: Callable[[date], bool]
    day: Callable[[date], bool]
    weekday_restricted: bool


@st.composite
def schedules(draw: st.DrawFn) -> Spec:
    sec_text, secs = draw(st.sampled_from(SECONDS))
    min_text, minute = draw(value_specs(0, 59))
    hour_text, hour = draw(value_specs(0, 23))
    dom_text, dow_text, day, weekday_restricted = draw(day_specs())
    month_text, month = draw(
        st.one_of(st.just(("*", lambda v: True)), value_specs(1, 12, MONTH_NAMES))
    )
    year_text, year = draw(
        st.sampled_from(
            [
                ("", lambda y: True),
                ("*", lambda y: True),
                ("2019-2031", lambda y: 2019 <= y <= 2031),
                ("1970-2023", lambda y: y <= 2023),
                ("2024,2026", lambda y: y in (2024, 2026)),
            ]
        )
    )
    expression = " ".join(
        [sec_text, min_text, hour_text, dom_text, month_text, dow_text, year_text]
    ).strip()

    def wall_matches(w: datetime) -> bool:
        return (
            w.second in secs
            and minute(w.minute)
            and hour(w.hour)
            and month(w.month)
            and year(w.year)
            and day(w.date())
        )

    def date_matches(d: date) -> bool:
        return month(d.month) and year(d.year) and day(d)

    return Spec(expression, wall_matches, date_matches, day, weekday_restricted)


def reference_instant(wall: datetime, tz: ZoneInfo) -> datetime:
    """The documented DST policy, written out directly."""
    candidates = [
        aware.astimezone(UTC)
        for aware in (wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1))
        if aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == wall
    ]
    if candidates:  # an existing wall time: its first occurrence
        return min(candidates)
    offset_after = (wall + timedelta(days=1)).replace(tzinfo=tz).utcoffset()
    offset_before = (wall - timedelta(days=1)).replace(tzinfo=tz).utcoffset()
    assert offset_after is not None and offset_before is not None
    shifted = wall + (offset_after - offset_before)  # skipped: shift forward by the gap
    return shifted.replace(tzinfo=tz).astimezone(UTC)


def reference_fires_on(d: date, wall_matches: Callable[[datetime], bool]) -> list[datetime]:
    out = []
    for h in range(24):
        for m in range(60):
            for s in (0, 30):
                wall = datetime(d.year, d.month, d.day, h, m, s)
                if wall_matches(wall):
                    out.append(wall)
    return out


HORIZON = timedelta(days=40)
ZONES = [ZoneInfo("UTC"), BERLIN, NEW_YORK, ZoneInfo("Australia/Lord_Howe")]
DST_ANCHORS = [
    utc(2024, 3, 31, 1),  # Berlin spring forward
    utc(2024, 10, 27, 1),  # Berlin fall back
    utc(2024, 3, 10, 7),  # New York spring forward
    utc(2024, 11, 3, 6),  # New York fall back
    utc(2024, 10, 5, 15, 30),  # Lord Howe spring forward (30 minutes)
    utc(2024, 4, 6, 15),  # Lord Howe fall back
]
instants = st.one_of(
    st.datetimes(datetime(2020, 1, 1), datetime(2030, 12, 31)).map(lambda d: d.replace(tzinfo=UTC)),
    st.builds(
        lambda anchor, delta: anchor + delta,
        st.sampled_from(DST_ANCHORS),
        st.one_of(
            st.timedeltas(-timedelta(days=2), timedelta(days=2)),
            st.integers(-96, 96).map(lambda k: timedelta(minutes=30 * k)),  # exact half-hours
        ),
    ),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=schedules(), tz=st.sampled_from(ZONES), t=instants)
def test_next_and_previous_fire_match_brute_force(spec: Spec, tz: ZoneInfo, t: datetime) -> None:
    expression, wall_matches, date_matches = spec.expression, spec.wall_matches, spec.date_matches
    schedule = QuartzSchedule(expression, tz.key)
    start_day = t.astimezone(tz).date()

    # next_fire: walk forward date by date; stop a day after the earliest fire found
    best: datetime | None = None
    for n in range(-1, HORIZON.days + 2):
        d = start_day + timedelta(days=n)
        if best is not None and d > best.astimezone(tz).date() + timedelta(days=1):
            break
        if not date_matches(d):
            continue
        for wall in reference_fires_on(d, wall_matches):
            f = reference_instant(wall, tz)
            if f > t and (best is None or f < best):
                best = f
    got = schedule.next_fire(t)
    if best is not None and best < t + HORIZON:
        event("next_fire compared with brute force")
        assert u(got) == best, expression
        assert got is not None and got.tzinfo == tz
        assert schedule.matches(got)
        assert date_matches(got.date())  # incl. the right weekday
        if spec.weekday_restricted:  # the fire's own weekday, computed independently
            assert spec.day(got.date())
    else:
        assert got is None or got >= t + HORIZON, expression

    # previous_fire: the same backwards
    latest: datetime | None = None
    for n in range(1, -HORIZON.days - 2, -1):
        d = start_day + timedelta(days=n)
        if latest is not None and d < latest.astimezone(tz).date() - timedelta(days=1):
            break
        if not date_matches(d):
            continue
        for wall in reference_fires_on(d, wall_matches):
            f = reference_instant(wall, tz)
            if f < t and (latest is None or f > latest):
                latest = f
    got_prev = schedule.previous_fire(t)
    if latest is not None and latest > t - HORIZON:
        event("previous_fire compared with brute force")
        assert u(got_prev) == latest, expression
        assert got_prev is not None
        assert date_matches(got_prev.date())
    else:
        assert got_prev is None or got_prev <= t - HORIZON, expression


@settings(max_examples=150, deadline=None)
@given(spec=day_specs(), start=st.dates(date(2020, 1, 1), date(2030, 12, 31)))
def test_day_rules_land_on_the_right_days(
    spec: tuple[str, str, Callable[[date], bool], bool], start: date
) -> None:
    """Over a year of daily fires, exactly the days the reference names fire."""
    dom_text, dow_text, day, _ = spec
    schedule = QuartzSchedule(f"0 0 12 {dom_text} * {dow_text}")
    t = datetime.combine(start, datetime.min.time(), UTC)
    end = t + timedelta(days=400)
    got = []
    current = schedule.next_fire(t)
    while current is not None and current < end:
        got.append(current.date())
        current = schedule.next_fire(current)
    expected = [start + timedelta(days=n) for n in range(400) if day(start + timedelta(days=n))]
    assert got == expected
