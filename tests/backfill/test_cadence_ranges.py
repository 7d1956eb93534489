"""The fast hourly and daily key ranges equal the general period-by-period enumeration."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from whenever import PlainDateTime

from databricks_bundle_decorators.backfill.cadence import DAILY, HOURLY, Cadence

STARTS = st.datetimes(min_value=datetime(1999, 12, 25), max_value=datetime(2030, 1, 1))


def _plain(at: datetime) -> PlainDateTime:
    return PlainDateTime(at.year, at.month, at.day, at.hour)


@settings(max_examples=300, deadline=None)
@given(start=STARTS, hours=st.integers(0, 24 * 9))
def test_hourly_range_equals_the_general_enumeration(start: datetime, hours: int) -> None:
    first = HOURLY.floor(_plain(start))
    last = HOURLY.shift(first, hours)
    assert HOURLY.format_range(first, last) == Cadence.format_range(HOURLY, first, last)


@settings(max_examples=200, deadline=None)
@given(start=STARTS, days=st.integers(0, 800))
def test_daily_range_equals_the_general_enumeration(start: datetime, days: int) -> None:
    first = DAILY.floor(_plain(start))
    last = DAILY.shift(first, days)
    assert DAILY.format_range(first, last) == Cadence.format_range(DAILY, first, last)


def test_one_hour_and_one_day() -> None:
    at = _plain(datetime(2024, 2, 29, 13))
    assert HOURLY.format_range(at, at) == ["2024-02-29T13"]
    assert DAILY.format_range(DAILY.floor(at), DAILY.floor(at)) == ["2024-02-29"]
    assert len(HOURLY.format_range(at, _plain(datetime(2024, 2, 29, 13) + timedelta(days=1)))) == 25
