"""Runtime key resolution: get_backfill_key / get_backfill_keys / get_run_logical_date."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from databricks_bundle_decorators.backfill import (
    BackfillDef,
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    QuartzSchedule,
    RunContext,
    StaticBackfill,
    WeeklyBackfill,
    get_backfill_key,
    get_backfill_keys,
    get_run_logical_date,
    resolve_keys,
    run_context,
)

# Monday 2026-01-12, 06:00 UTC: just after the Monday fire of a Mon-Fri 06:00 schedule.
MONDAY_MORNING = datetime(2026, 1, 12, 6, 0, 5, tzinfo=timezone.utc)
MON_TO_FRI = QuartzSchedule("0 0 6 ? * MON-FRI", timezone="UTC")


def keys_for(
    backfill: BackfillDef | None,
    params: Mapping[str, str],
    *,
    schedule: QuartzSchedule | None = None,
    now: datetime = MONDAY_MORNING,
) -> list[str]:
    with run_context(RunContext("job", "task", params, backfill, schedule, now)):
        return get_backfill_keys()


class TestPrimaryKey:
    def test_explicit_key_returned(self) -> None:
        with run_context(
            RunContext(params={"backfill_key": "2024-01-05"}, backfill=DailyBackfill("2024-01-01"))
        ):
            assert get_backfill_key() == "2024-01-05"

    def test_auto_derived_with_warning(self, caplog: pytest.LogCaptureFixture) -> None:
        context = RunContext(
            "sales", params={}, backfill=DailyBackfill("2024-01-01", data_lag=1), now=MONDAY_MORNING
        )
        with caplog.at_level(logging.WARNING), run_context(context):
            assert get_backfill_key() == "2026-01-11"
        assert "derived '2026-01-11'" in caplog.text

    def test_no_definition_and_no_key_is_runtime_error(self) -> None:
        with (
            run_context(RunContext(params={})),
            pytest.raises(RuntimeError, match="no backfill definition"),
        ):
            get_backfill_key()

    def test_static_without_key_is_runtime_error(self) -> None:
        with (
            run_context(RunContext(params={}, backfill=StaticBackfill(["us"]))),
            pytest.raises(RuntimeError, match="static backfill has no default key"),
        ):
            get_backfill_key()

    def test_outside_a_run_is_runtime_error(self) -> None:
        with pytest.raises(RuntimeError, match="no run context"):
            get_backfill_key()

    def test_out_of_range_key_is_value_error_unless_not_validated(self) -> None:
        context = RunContext(
            params={"backfill_key": "2023-12-31"}, backfill=DailyBackfill("2024-01-01")
        )
        with run_context(context):
            with pytest.raises(ValueError, match="before the backfill's start_date"):
                get_backfill_key()
            assert get_backfill_key(validate=False) == "2023-12-31"

    def test_key_without_definition_is_passed_through(self) -> None:
        with run_context(RunContext(params={"backfill_key": "anything"})):
            assert get_backfill_key() == "anything"
            assert get_backfill_keys() == ["anything"]


class TestLookback:
    def test_seed_example(self) -> None:
        backfill = DailyBackfill("2026-01-01", lookback=2)
        assert keys_for(backfill, {"backfill_key": "2026-01-08"}) == [
            "2026-01-06",
            "2026-01-07",
            "2026-01-08",
        ]

    def test_lookback_clipped_at_start_bound(self) -> None:
        backfill = DailyBackfill("2026-01-01", lookback=3)
        assert keys_for(backfill, {"backfill_key": "2026-01-01"}) == ["2026-01-01"]
        assert keys_for(backfill, {"backfill_key": "2026-01-02"}) == ["2026-01-01", "2026-01-02"]

    def test_lookback_applies_to_auto_derived(self) -> None:
        backfill = WeeklyBackfill("2025-W01", lookback=1)
        assert keys_for(backfill, {}) == ["2026-W02", "2026-W03"]

    def test_lookback_skips_dst_gap(self) -> None:
        backfill = HourlyBackfill("2024-03-30T00", tz="Europe/Berlin", lookback=2)
        assert keys_for(backfill, {"backfill_key": "2024-03-31T03"}) == [
            "2024-03-31T00",
            "2024-03-31T01",
            "2024-03-31T03",
        ]

    def test_exact_bypasses_lookback(self) -> None:
        backfill = DailyBackfill("2026-01-01", lookback=2)
        params = {"backfill_key": "2026-01-08", "backfill_exact": "true"}
        assert keys_for(backfill, params) == ["2026-01-08"]

    def test_bad_exact_flag(self) -> None:
        with pytest.raises(ValueError, match="backfill_exact='maybe' is not a boolean"):
            keys_for(
                DailyBackfill("2026-01-01"),
                {"backfill_key": "2026-01-08", "backfill_exact": "maybe"},
            )


class TestScheduleGaps:
    def test_monday_run_collects_weekend(self) -> None:
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True)
        assert keys_for(backfill, {}, schedule=MON_TO_FRI) == [
            "2026-01-10",
            "2026-01-11",
            "2026-01-12",
        ]

    def test_quartz_numeric_weekdays_same_as_names(self) -> None:
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True)
        numeric = QuartzSchedule("0 0 6 ? * 2-6", timezone="UTC")
        assert keys_for(backfill, {}, schedule=numeric) == [
            "2026-01-10",
            "2026-01-11",
            "2026-01-12",
        ]

    def test_tuesday_run_has_no_gap(self) -> None:
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True)
        tuesday = datetime(2026, 1, 13, 6, 30, tzinfo=timezone.utc)
        assert keys_for(backfill, {}, schedule=MON_TO_FRI, now=tuesday) == ["2026-01-13"]

    def test_gaps_only_for_auto_derived_keys(self) -> None:
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True)
        assert keys_for(backfill, {"backfill_key": "2026-01-12"}, schedule=MON_TO_FRI) == [
            "2026-01-12"
        ]

    def test_gaps_with_lookback_is_sorted_union(self) -> None:
        # Seed 001: lookback counts from the run's key (Mon 12th), not from the earliest
        # gap key; the result is the sorted union of both.
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True, lookback=1)
        assert keys_for(backfill, {}, schedule=MON_TO_FRI) == [
            "2026-01-10",
            "2026-01-11",
            "2026-01-12",
        ]

    def test_lookback_beyond_the_gap_reads_before_it(self) -> None:
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True, lookback=3)
        context = RunContext("job", "task", {}, backfill, MON_TO_FRI, MONDAY_MORNING)
        resolved = resolve_keys(context)
        assert resolved.keys == ("2026-01-09", "2026-01-10", "2026-01-11", "2026-01-12")
        assert resolved.written == ("2026-01-10", "2026-01-11", "2026-01-12")

    def test_gaps_with_data_lag(self) -> None:
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True, data_lag=1)
        # Friday's run processed Thursday; Monday's run processes Fri, Sat, Sun.
        assert keys_for(backfill, {}, schedule=MON_TO_FRI) == [
            "2026-01-09",
            "2026-01-10",
            "2026-01-11",
        ]

    def test_exact_bypasses_gaps(self) -> None:
        backfill = DailyBackfill("2025-01-01", collect_schedule_gaps=True)
        assert keys_for(backfill, {"backfill_exact": "true"}, schedule=MON_TO_FRI) == ["2026-01-12"]

    def test_gaps_clipped_at_start_bound(self) -> None:
        backfill = DailyBackfill("2026-01-11", collect_schedule_gaps=True)
        assert keys_for(backfill, {}, schedule=MON_TO_FRI) == ["2026-01-11", "2026-01-12"]


class TestRangedRuns:
    def test_range_from_start_key(self) -> None:
        backfill = DailyBackfill("2026-01-01")
        params = {"backfill_key": "2026-01-04", "backfill_start_key": "2026-01-02"}
        assert keys_for(backfill, params) == ["2026-01-02", "2026-01-03", "2026-01-04"]

    def test_range_with_lookback_reaches_before_start_key(self) -> None:
        backfill = DailyBackfill("2026-01-01", lookback=1)
        params = {"backfill_key": "2026-01-04", "backfill_start_key": "2026-01-03"}
        assert keys_for(backfill, params) == ["2026-01-02", "2026-01-03", "2026-01-04"]

    def test_static_range_by_position(self) -> None:
        backfill = StaticBackfill(["us", "eu", "jp"])
        assert keys_for(backfill, {"backfill_key": "jp", "backfill_start_key": "us"}) == [
            "us",
            "eu",
            "jp",
        ]

    def test_open_end_is_bounded_by_the_run_clock(self) -> None:
        # The run's clock (2026-01-12), not the wall clock, bounds an open end_date.
        backfill = DailyBackfill("2026-01-01")
        past = {"backfill_key": "2026-01-13", "backfill_start_key": "2026-01-11"}
        with pytest.raises(ValueError, match="after the current key '2026-01-12'"):
            keys_for(backfill, past)
        ahead = datetime(2099, 1, 1, tzinfo=timezone.utc)
        future = {"backfill_key": "2098-12-31", "backfill_start_key": "2098-12-30"}
        assert keys_for(backfill, future, now=ahead) == ["2098-12-30", "2098-12-31"]

    def test_reversed_range_rejected(self) -> None:
        params = {"backfill_key": "2026-01-02", "backfill_start_key": "2026-01-04"}
        with pytest.raises(ValueError, match="after"):
            keys_for(DailyBackfill("2026-01-01"), params)


class TestStatic:
    def test_static_key_has_no_expansion(self) -> None:
        assert keys_for(StaticBackfill(["us", "eu"]), {"backfill_key": "eu"}) == ["eu"]

    def test_static_unknown_key(self) -> None:
        with pytest.raises(ValueError, match="not a declared static key"):
            keys_for(StaticBackfill(["us", "eu"]), {"backfill_key": "jp"})


class TestLogicalDate:
    @pytest.mark.parametrize(
        ("backfill", "key", "expected"),
        [
            pytest.param(
                DailyBackfill("2024-01-01", tz="Europe/Berlin"),
                "2024-03-31",
                datetime(2024, 3, 31, tzinfo=ZoneInfo("Europe/Berlin")),
                id="daily-berlin",
            ),
            pytest.param(
                WeeklyBackfill("2020-W01"),
                "2020-W53",
                datetime(2020, 12, 28, tzinfo=timezone.utc),
                id="weekly",
            ),
            pytest.param(
                MonthlyBackfill("2024-01-01"),
                "2024-02-01",
                datetime(2024, 2, 1, tzinfo=timezone.utc),
                id="monthly",
            ),
            pytest.param(
                HourlyBackfill("2024-01-01T00", tz="America/New_York"),
                "2024-11-03T01",
                datetime(2024, 11, 3, 5, tzinfo=timezone.utc),
                id="hourly-repeated-earliest",
            ),
            pytest.param(
                None, "2024-05-06", datetime(2024, 5, 6, tzinfo=timezone.utc), id="no-definition"
            ),
        ],
    )
    def test_logical_date(self, backfill: BackfillDef | None, key: str, expected: datetime) -> None:
        with run_context(RunContext(params={"backfill_key": key}, backfill=backfill)):
            result = get_run_logical_date()
        assert result.tzinfo is not None
        # Compare instants: PEP 495 makes == across zones False inside a repeated hour.
        assert result.timestamp() == expected.timestamp()

    def test_static_key_is_not_a_date(self) -> None:
        with (
            run_context(RunContext(params={"backfill_key": "us"}, backfill=StaticBackfill(["us"]))),
            pytest.raises(ValueError, match="cannot be read as a date"),
        ):
            get_run_logical_date()
