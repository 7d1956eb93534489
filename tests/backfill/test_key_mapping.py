"""The key mapping between a job that writes a table and a job that reads it."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import (
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    MultiBackfill,
    StaticBackfill,
    WeeklyBackfill,
)
from databricks_bundle_decorators.backfill.base import BackfillDef
from databricks_bundle_decorators.backfill.mapping import (
    EVERY_KEY,
    UNPARTITIONED,
    WINDOW,
    KeyEdge,
    downstream_keys,
    upstream_keys,
)

DAILY = DailyBackfill("2024-01-01", "2024-03-31")
B_DAILY = DailyBackfill("2024-01-01", "2024-03-31", lookback=1)
MONTHLY = MonthlyBackfill("2024-01-01", "2024-03-01")
HOURLY = HourlyBackfill("2024-01-30T00", "2024-02-02T23")


def test_daily_to_monthly_is_the_month_containing_the_day() -> None:
    edge = KeyEdge(DAILY, MONTHLY)
    assert downstream_keys(edge, ["2024-01-31"]) == ["2024-01-01"]
    assert downstream_keys(edge, ["2024-01-31", "2024-02-01"]) == ["2024-01-01", "2024-02-01"]
    assert upstream_keys(edge, "2024-02-01") == [f"2024-02-{d:02d}" for d in range(1, 30)]


def test_lookback_sends_a_changed_key_to_the_next_n_keys() -> None:
    """B's K reads A's K-1..K, so A's S is read by B's S and S+1 (issue 30's chain)."""
    edge = KeyEdge(DAILY, B_DAILY)
    assert downstream_keys(edge, ["2024-01-31"]) == ["2024-01-31", "2024-02-01"]
    assert upstream_keys(edge, "2024-02-01") == ["2024-01-31", "2024-02-01"]
    # the lookback stops at B's start_date, as a run's lookback does
    assert upstream_keys(edge, "2024-01-01") == ["2024-01-01"]
    earlier = KeyEdge(DailyBackfill("2023-12-01", "2024-03-31"), B_DAILY)
    assert upstream_keys(earlier, "2024-01-01") == ["2024-01-01"]
    assert downstream_keys(earlier, ["2023-12-31"]) == []
    # the last key has no key after it in B's closed range
    assert downstream_keys(edge, ["2024-03-31"]) == ["2024-03-31"]


def test_the_issue_chain_a_b_c() -> None:
    """A (daily) -> B (daily, lookback 1) -> C (monthly) over 2024-01-30..2024-02-02."""
    a_keys = DAILY.keys("2024-01-30", "2024-02-02")
    b_keys = downstream_keys(KeyEdge(DAILY, B_DAILY), a_keys)
    assert b_keys == ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02", "2024-02-03"]
    assert downstream_keys(KeyEdge(B_DAILY, MONTHLY), b_keys) == ["2024-01-01", "2024-02-01"]


def test_hourly_to_daily_and_back() -> None:
    edge = KeyEdge(HOURLY, DAILY)
    assert downstream_keys(edge, ["2024-01-31T23"]) == ["2024-01-31"]
    assert upstream_keys(edge, "2024-01-31") == [f"2024-01-31T{h:02d}" for h in range(24)]
    # the hourly job starts on 2024-01-30: earlier days read none of its keys
    assert upstream_keys(edge, "2024-01-29") == []
    assert downstream_keys(KeyEdge(DAILY, HOURLY), ["2024-01-30"])[:2] == [
        "2024-01-30T00",
        "2024-01-30T01",
    ]


def test_windows_are_compared_as_instants_across_time_zones() -> None:
    """A Berlin day starts at 23:00 UTC the day before: it overlaps two UTC days."""
    berlin = DailyBackfill("2024-01-01", "2024-03-31", tz="Europe/Berlin")
    assert upstream_keys(KeyEdge(DAILY, berlin), "2024-01-10") == ["2024-01-09", "2024-01-10"]


def test_static_x_time_maps_per_static_value() -> None:
    regions = StaticBackfill(["eu", "us"])
    a = MultiBackfill(regions, DailyBackfill("2024-01-01", "2024-03-31"))
    b = MultiBackfill(StaticBackfill(["eu", "jp"]), MonthlyBackfill("2024-01-01", "2024-03-01"))
    edge = KeyEdge(a, b)
    assert edge.per_static_value
    assert downstream_keys(edge, ["eu:2024-01-05"]) == ["eu:2024-01-01"]
    assert downstream_keys(edge, ["us:2024-01-05"]) == []  # b has no "us"
    assert upstream_keys(edge, "jp:2024-01-01") == []
    # one side static x time: every static value maps through the time parts
    assert downstream_keys(KeyEdge(a, MONTHLY), ["us:2024-02-03"]) == ["2024-02-01"]
    assert upstream_keys(KeyEdge(a, MONTHLY), "2024-02-01")[::29] == [
        "eu:2024-02-01",
        "us:2024-02-01",
    ]
    assert downstream_keys(KeyEdge(DAILY, b), ["2024-03-02"]) == ["eu:2024-03-01", "jp:2024-03-01"]


def test_unwindowed_reads_and_keys_without_time_map_every_key() -> None:
    static = StaticBackfill(["x", "y"])
    assert KeyEdge(DAILY, MONTHLY, windowed=False).mapping == EVERY_KEY
    assert downstream_keys(KeyEdge(DAILY, MONTHLY, windowed=False), ["2024-01-02"]) == (
        MONTHLY.keys()
    )
    assert downstream_keys(KeyEdge(DAILY, static), ["2024-01-02"]) == ["x", "y"]
    assert upstream_keys(KeyEdge(static, None), UNPARTITIONED) == ["x", "y"]
    assert downstream_keys(KeyEdge(None, MONTHLY), [UNPARTITIONED]) == MONTHLY.keys()
    assert downstream_keys(KeyEdge(DAILY, MONTHLY), []) == []
    assert KeyEdge(DAILY, MONTHLY).mapping == WINDOW


def test_keys_outside_a_definition_are_refused() -> None:
    with pytest.raises(ValueError, match="upstream key '2023-12-31'"):
        downstream_keys(KeyEdge(DAILY, MONTHLY), ["2023-12-31"])
    with pytest.raises(ValueError, match="downstream key"):
        upstream_keys(KeyEdge(DAILY, MONTHLY), "2024-01-02")
    with pytest.raises(ValueError, match="no backfill definition"):
        downstream_keys(KeyEdge(None, DAILY), ["2024-01-01"])


def test_describe_names_the_mapping() -> None:
    assert KeyEdge(DAILY, B_DAILY).describe() == "daily -> daily (window overlap, lookback 1)"
    assert KeyEdge(DAILY, None).describe() == "daily -> unpartitioned (every key, no time keys)"


# -- properties: the two directions agree ---------------------------------------------

START = date(2024, 1, 1)
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata")


@st.composite
def time_definitions(draw: st.DrawFn) -> BackfillDef:
    kind = draw(st.sampled_from(["hourly", "daily", "weekly", "monthly"]))
    tz = draw(st.sampled_from(ZONES))
    lookback = draw(st.integers(0, 3))
    offset = draw(st.integers(0, 40))
    first = START + timedelta(days=offset)
    if kind == "hourly":
        # a few days of hours around a DST change in March
        first = date(2024, 3, 8) + timedelta(days=offset % 5)
        last = first + timedelta(days=draw(st.integers(0, 2)))
        return HourlyBackfill(f"{first}T00", f"{last}T23", tz=tz, lookback=lookback)
    if kind == "daily":
        last = first + timedelta(days=draw(st.integers(0, 20)))
        return DailyBackfill(str(first), str(last), tz=tz, lookback=lookback)
    if kind == "weekly":
        year, week, _ = first.isocalendar()
        last_year, last_week, _ = (first + timedelta(weeks=draw(st.integers(0, 6)))).isocalendar()
        return WeeklyBackfill(
            f"{year}-W{week:02d}", f"{last_year}-W{last_week:02d}", tz=tz, lookback=lookback
        )
    months = draw(st.integers(0, 3))
    return MonthlyBackfill(
        f"{first.year}-{first.month:02d}-01",
        f"2024-{first.month + months:02d}-01",
        tz=tz,
        lookback=lookback,
    )


def _agree(edge: KeyEdge) -> None:
    assert edge.upstream is not None and edge.downstream is not None
    up_keys = edge.upstream.keys()
    down_keys = edge.downstream.keys()
    reads = {k: set(upstream_keys(edge, k)) for k in down_keys}
    for s in up_keys:
        fed = set(downstream_keys(edge, [s]))
        assert fed == {k for k in down_keys if s in reads[k]}, s


@settings(max_examples=40, deadline=None)
@given(up=time_definitions(), down=time_definitions())
def test_downstream_and_upstream_keys_agree(up: BackfillDef, down: BackfillDef) -> None:
    """K is in downstream_keys(S) iff S is in upstream_keys(K), for any two cadences,
    zones and lookbacks."""
    _agree(KeyEdge(up, down))


@settings(max_examples=15, deadline=None)
@given(
    up=time_definitions(),
    down=time_definitions(),
    up_static=st.sampled_from([["eu"], ["eu", "us"], None]),
    down_static=st.sampled_from([["eu"], ["us", "eu"], None]),
)
def test_static_x_time_directions_agree(
    up: BackfillDef,
    down: BackfillDef,
    up_static: list[str] | None,
    down_static: list[str] | None,
) -> None:
    assert isinstance(up, DailyBackfill | HourlyBackfill | WeeklyBackfill | MonthlyBackfill)
    assert isinstance(down, DailyBackfill | HourlyBackfill | WeeklyBackfill | MonthlyBackfill)
    a: BackfillDef = up if up_static is None else MultiBackfill(StaticBackfill(up_static), up)
    b: BackfillDef = (
        down if down_static is None else MultiBackfill(StaticBackfill(down_static), down)
    )
    _agree(KeyEdge(a, b))


@settings(max_examples=40, deadline=None)
@given(day=st.dates(START, date(2024, 3, 31)))
def test_a_day_feeds_the_month_containing_it(day: date) -> None:
    assert downstream_keys(KeyEdge(DAILY, MONTHLY), [str(day)]) == [f"2024-{day.month:02d}-01"]


@settings(max_examples=40, deadline=None)
@given(day=st.dates(START, date(2024, 3, 31)), lookback=st.integers(0, 5))
def test_a_day_feeds_itself_and_the_next_lookback_days(day: date, lookback: int) -> None:
    reader = DailyBackfill("2024-01-01", "2024-03-31", lookback=lookback)
    expected = [
        str(d)
        for d in (day + timedelta(days=n) for n in range(lookback + 1))
        if d <= date(2024, 3, 31)
    ]
    assert downstream_keys(KeyEdge(DAILY, reader), [str(day)]) == expected


@settings(max_examples=40, deadline=None)
@given(day=st.dates(date(2024, 1, 30), date(2024, 2, 2)), hour=st.integers(0, 23))
def test_an_hour_feeds_its_day(day: date, hour: int) -> None:
    assert downstream_keys(KeyEdge(HOURLY, DAILY), [f"{day}T{hour:02d}"]) == [str(day)]
