"""Issue 25 item 11: a day as --start/--end of an hourly job means its hours."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.plan.plan import selected_keys

ZONES = ("UTC", "Europe/Berlin", "America/Sao_Paulo", "Australia/Lord_Howe", "Asia/Kolkata")


@given(st.dates(date(2023, 1, 2), date(2025, 12, 30)), st.sampled_from(ZONES))
def test_a_day_selects_exactly_the_hours_that_start_on_it(day: date, tz: str) -> None:
    hourly = HourlyBackfill("2023-01-01T00", "2025-12-31T23", tz=tz)
    chosen = selected_keys(hourly, day.isoformat(), day.isoformat())
    around = hourly.keys(f"{day - timedelta(days=1)}T00", f"{day + timedelta(days=1)}T23")
    expected = [k for k in around if str(hourly.key_start(k).date()) == day.isoformat()]
    assert chosen == expected and chosen  # every hour of the day, in its zone, no other


def test_the_dst_days_have_23_and_25_hours_and_skip_none() -> None:
    berlin = HourlyBackfill("2024-01-01T00", "2024-12-31T23", tz="Europe/Berlin")
    spring = selected_keys(berlin, "2024-03-31", "2024-03-31")
    assert len(spring) == 23 and "2024-03-31T02" not in spring
    autumn = selected_keys(berlin, "2024-10-27", "2024-10-27")
    assert (
        len(autumn) == 24
        and berlin.window("2024-10-27T02").end.timestamp()
        - berlin.window("2024-10-27T02").start.timestamp()
        == 7200
    )  # the repeated hour is one key of two real hours
    assert selected_keys(berlin, "2024-03-30", "2024-03-31T05")[::24] == [
        "2024-03-30T00",
        "2024-03-31T00",
    ]


def test_a_day_is_clamped_to_the_definition_and_other_kinds_are_untouched() -> None:
    hourly = HourlyBackfill("2024-03-31T05", "2024-04-02T10", tz="UTC")
    assert selected_keys(hourly, "2024-03-31", "2024-03-31")[0] == "2024-03-31T05"
    assert selected_keys(hourly, "2024-04-02", "2024-04-02")[-1] == "2024-04-02T10"
    with pytest.raises(UsageError, match="before the backfill's start_date"):
        selected_keys(hourly, "2024-03-30", None)
    with pytest.raises(UsageError, match="not a valid hourly key"):
        selected_keys(hourly, "2024-02-31", None)  # not a date: the usual format error
    daily = DailyBackfill("2024-01-01", "2024-12-31")
    assert selected_keys(daily, "2024-03-31", "2024-03-31") == ["2024-03-31"]
