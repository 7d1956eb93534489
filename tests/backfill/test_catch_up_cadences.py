"""``CatchUp``'s key model on every cadence, Spark-free: the keys after the last done
key up to the current key, oldest first, capped, read with their lookback (the daily
cadence is in ``test_changed_keys.py`` and ``tests/runtime/test_catching_up.py``)."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import HourlyBackfill, MonthlyBackfill, WeeklyBackfill
from databricks_bundle_decorators.backfill.changed_keys import catch_up_plan, with_lookback


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


def test_hourly_across_a_skipped_hour() -> None:
    # Europe/Berlin skips 02:00-03:00 on 2024-03-31; 02:30 UTC is 04:30 CEST (key T04).
    hourly = HourlyBackfill("2024-03-30T00", tz="Europe/Berlin", lookback=1)
    plan = catch_up_plan(hourly, ["2024-03-30T20", "2024-03-31T00"], _utc(2024, 3, 31, 2, 30), 2)
    assert plan.run == ("2024-03-31T01", "2024-03-31T03")  # no T02: it has no key
    assert plan.pending == ("2024-03-31T04",)
    assert with_lookback(hourly, plan.run) == ("2024-03-31T00", "2024-03-31T01", "2024-03-31T03")


def test_hourly_data_lag_moves_the_current_key_back() -> None:
    hourly = HourlyBackfill("2024-06-01T00", data_lag=2)
    plan = catch_up_plan(hourly, ["2024-06-01T05"], _utc(2024, 6, 1, 10, 15), None)
    assert plan.run == ("2024-06-01T06", "2024-06-01T07", "2024-06-01T08")  # up to T10 - 2
    assert plan.pending == ()


def test_weekly_across_an_iso_year_with_53_weeks() -> None:
    weekly = WeeklyBackfill("2020-W40", lookback=1)
    # 2021-01-13 is in 2021-W02; 2020 has an ISO week 53.
    plan = catch_up_plan(weekly, ["2020-W50", "2020-W51"], _utc(2021, 1, 13), 3)
    assert plan.run == ("2020-W52", "2020-W53", "2021-W01")
    assert plan.pending == ("2021-W02",)
    assert with_lookback(weekly, plan.run) == ("2020-W51", "2020-W52", "2020-W53", "2021-W01")


def test_weekly_with_the_current_week_done_runs_only_the_current_week() -> None:
    weekly = WeeklyBackfill("2020-W40")
    plan = catch_up_plan(weekly, ["2021-W02"], _utc(2021, 1, 13), 3)
    assert plan.run == ("2021-W02",) and plan.pending == ()


def test_monthly_across_a_year_end() -> None:
    monthly = MonthlyBackfill("2024-01-01", lookback=1)
    plan = catch_up_plan(monthly, ["2024-03-01", "2024-11-01"], _utc(2025, 2, 15), None)
    assert plan.run == ("2024-12-01", "2025-01-01", "2025-02-01")  # after the LAST done key
    assert plan.pending == ()
    assert with_lookback(monthly, plan.run)[0] == "2024-11-01"


@given(
    done=st.lists(st.integers(min_value=0, max_value=30), max_size=6),
    current=st.integers(min_value=0, max_value=30),
    cap=st.one_of(st.none(), st.integers(min_value=1, max_value=8)),
)
def test_monthly_matches_a_calendar_model(done: list[int], current: int, cap: int | None) -> None:
    def key(n: int) -> str:  # the n-th month after 2024-01 (plain calendar arithmetic)
        return f"{2024 + n // 12}-{n % 12 + 1:02d}-01"

    monthly = MonthlyBackfill("2024-01-01")
    now = datetime.fromisoformat(key(current)).replace(day=20, tzinfo=timezone.utc)
    plan = catch_up_plan(monthly, [key(d) for d in done], now, cap)
    before = [d for d in done if d <= current]
    expected = (
        [current] if not before or max(before) >= current else range(max(before) + 1, current + 1)
    )
    keys = [key(n) for n in expected]
    taken = len(keys) if cap is None else min(cap, len(keys))
    assert plan.run == tuple(keys[:taken])
    assert plan.pending == tuple(keys[taken:])
