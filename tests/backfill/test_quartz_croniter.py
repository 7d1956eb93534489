"""QuartzSchedule against croniter, an independent engine, for the expressions it supports.

croniter numbers day-of-week the Unix way (0=SUN..6=SAT; Quartz: 1=SUN..7=SAT) and has
no ``L-n``, ``LW``, ``nL``, ``W`` or year field, so the generated Quartz expressions use
only what both read, and weekday numbers are converted for croniter (names are not:
``MON-FRI`` means the same days to both). croniter 7 also misreads one-value ranges such
as ``5-5``, so ranges here span at least two values.

The engines differ on purpose at wall times a clock change skips or repeats (ours fires
a skipped time shifted forward by the gap, as Quartz does; croniter has its own rules),
so examples whose fires land within a day of a transition are not compared.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import QuartzSchedule

croniter_module = pytest.importorskip("croniter")
croniter = croniter_module.croniter
CroniterBadDateError = croniter_module.CroniterBadDateError

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "Australia/Lord_Howe",
    "Pacific/Apia",
]
EARLIEST = int(datetime(1980, 1, 1, tzinfo=timezone.utc).timestamp())
LATEST = int(datetime(2035, 1, 1, tzinfo=timezone.utc).timestamp())
BOUND = datetime(1970, 1, 1, tzinfo=timezone.utc)  # QuartzSchedule's first year
WEEKDAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]  # Quartz 1..7

Field = tuple[str, str]  # (Quartz text, croniter text)


@st.composite
def numeric_field(draw: st.DrawFn, lo: int, hi: int, shift: int = 0) -> Field:
    """``*``, a value, a range, a step or a list; croniter's numbers are ``shift`` lower."""

    def both(text: str, *values: int) -> Field:
        return text.format(*values), text.format(*(v - shift for v in values))

    kind = draw(st.sampled_from(["any", "value", "range", "step", "list"]))
    if kind == "any":
        return "*", "*"
    if kind == "value":
        return both("{}", draw(st.integers(lo, hi)))
    if kind == "range":
        first = draw(st.integers(lo, hi - 1))
        return both("{}-{}", first, draw(st.integers(first + 1, hi)))
    if kind == "step":
        first, step = draw(st.integers(lo, hi)), draw(st.integers(1, max(1, (hi - lo) // 2)))
        unix = f"{first - shift}-{hi - shift}/{step}" if first < hi else str(first - shift)
        return f"{first}/{step}", unix
    values = sorted(draw(st.sets(st.integers(lo, hi), min_size=2, max_size=4)))
    return ",".join(map(str, values)), ",".join(str(v - shift) for v in values)


@st.composite
def weekday_field(draw: st.DrawFn) -> Field:
    """A Quartz day-of-week (1=SUN) and the same days for croniter (0=SUN)."""
    kind = draw(st.sampled_from(["numeric", "names", "nth"]))
    if kind == "numeric":
        return draw(numeric_field(1, 7, shift=1))
    if kind == "names":
        first = draw(st.integers(0, 5))
        names = f"{WEEKDAY_NAMES[first]}-{WEEKDAY_NAMES[draw(st.integers(first + 1, 6))]}"
        return names, names
    day, nth = draw(st.integers(1, 7)), draw(st.integers(1, 5))
    return f"{day}#{nth}", f"{day - 1}#{nth}"


@st.composite
def expressions(draw: st.DrawFn) -> tuple[str, str]:
    """A Quartz expression croniter supports, and its croniter spelling."""
    second = draw(numeric_field(0, 59))
    minute = draw(numeric_field(0, 59))
    hour = draw(numeric_field(0, 23))
    month = draw(numeric_field(1, 12))
    if draw(st.booleans()):
        day = draw(st.one_of(numeric_field(1, 31), st.just(("L", "L"))))
        weekday = ("?", "*")
    else:
        day, weekday = ("?", "*"), draw(weekday_field())
    fields = (second, minute, hour, day, month, weekday)
    return " ".join(f[0] for f in fields), " ".join(f[1] for f in fields)


def _croniter_fire(unix: str, start: datetime, *, forward: bool) -> datetime | None:
    fires = croniter(unix, start, ret_type=datetime, second_at_beginning=True)
    try:
        fire: datetime = fires.get_next() if forward else fires.get_prev()
    except CroniterBadDateError:  # nothing within croniter's 50-year search
        return None
    return fire


def _near_clock_change(zone: ZoneInfo, at: datetime) -> bool:
    """Whether the zone's UTC offset changes within a day of ``at``."""
    return (at - timedelta(days=1)).astimezone(zone).utcoffset() != (
        at + timedelta(days=1)
    ).astimezone(zone).utcoffset()


@settings(max_examples=400, deadline=None)
@given(
    expression=expressions(),
    tz=st.sampled_from(ZONES),
    seconds=st.integers(EARLIEST, LATEST),
    microsecond=st.sampled_from([0, 1, 500_000, 999_999]),
)
def test_next_and_previous_fire_agree_with_croniter(
    expression: tuple[str, str], tz: str, seconds: int, microsecond: int
) -> None:
    quartz, unix = expression
    zone = ZoneInfo(tz)
    start = datetime.fromtimestamp(seconds, zone).replace(microsecond=microsecond)
    schedule = QuartzSchedule(quartz, timezone=tz)
    ours_next, ours_previous = schedule.next_fire(start), schedule.previous_fire(start)
    theirs_next = _croniter_fire(unix, start, forward=True)
    theirs_previous = _croniter_fire(unix, start, forward=False)
    if ours_next is None or ours_previous is None:
        # None: no fire in our range of years (1970-2199), e.g. Feb 30, or the fifth
        # Monday of February (leap years only) before 1980. croniter searches 50 years.
        assert ours_next is not None or theirs_next is None
        assert ours_previous is not None or theirs_previous is None or theirs_previous < BOUND
        return
    assert theirs_next is not None and theirs_previous is not None, (quartz, unix, start)
    moments = (start, ours_next, ours_previous, theirs_next, theirs_previous)
    assume(not any(_near_clock_change(zone, moment) for moment in moments))

    assert ours_next.timestamp() == theirs_next.timestamp(), (quartz, unix, start)
    assert ours_previous.timestamp() == theirs_previous.timestamp(), (quartz, unix, start)
    # Strictly after / before: from a fire itself, the next one is a different fire.
    again = _croniter_fire(unix, ours_next, forward=True)
    following = schedule.next_fire(ours_next)
    assert following is not None and again is not None
    if not _near_clock_change(zone, following):
        assert following.timestamp() == again.timestamp(), (quartz, unix, ours_next)
