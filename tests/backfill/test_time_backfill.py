"""Keys, bounds and windows of the time-partitioned backfill definitions."""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import pytest
from whenever import Instant

from databricks_bundle_decorators.backfill import (
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    WeeklyBackfill,
)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def hours_of(window_seconds: float) -> float:
    return window_seconds / 3600


class TestDaily:
    def test_keys_inclusive_and_leap_day(self) -> None:
        keys = DailyBackfill("2024-02-27", "2024-03-01").keys()
        assert keys == ["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01"]

    def test_start_end_overrides_are_inclusive(self) -> None:
        backfill = DailyBackfill("2024-01-01", "2024-12-31")
        assert backfill.keys("2024-06-29", "2024-07-02") == [
            "2024-06-29",
            "2024-06-30",
            "2024-07-01",
            "2024-07-02",
        ]

    def test_default_end_is_current_key(self) -> None:
        backfill = DailyBackfill("2024-01-01", tz="Europe/Berlin")
        # 23:30 UTC on Jan 5 is already Jan 6 in Berlin.
        assert backfill.keys(now=utc(2024, 1, 5, 23, 30))[-1] == "2024-01-06"

    def test_window_is_local_midnight_to_midnight(self) -> None:
        window = DailyBackfill("2024-01-01", tz="Europe/Berlin").window("2024-03-31")
        assert window.start == Instant.from_utc(2024, 3, 30, 23)
        assert window.end == Instant.from_utc(2024, 3, 31, 22)
        assert hours_of(window.duration_seconds) == 23  # spring-forward day

    def test_skipped_day_has_no_key(self) -> None:
        # Samoa skipped 2011-12-30 entirely when it crossed the date line.
        keys = DailyBackfill("2011-12-28", "2012-01-01", tz="Pacific/Apia").keys()
        assert keys == ["2011-12-28", "2011-12-29", "2011-12-31", "2012-01-01"]


class TestWeekly:
    def test_53_week_year(self) -> None:
        keys = WeeklyBackfill("2020-W51", "2021-W02").keys()
        assert keys == ["2020-W51", "2020-W52", "2020-W53", "2021-W01", "2021-W02"]

    def test_week_53_rejected_in_52_week_year(self) -> None:
        with pytest.raises(ValueError, match=r"2021-W53.*YYYY-Www"):
            WeeklyBackfill("2021-W53")

    def test_window_monday_to_monday(self) -> None:
        window = WeeklyBackfill("2020-W01").window("2020-W53")
        assert window.start == Instant.from_utc(2020, 12, 28)
        assert window.end == Instant.from_utc(2021, 1, 4)

    def test_current_key_iso_week_across_new_year(self) -> None:
        assert WeeklyBackfill("2020-W01").current_key(now=utc(2021, 1, 2, 12)) == "2020-W53"


class TestMonthly:
    def test_keys_pinned_to_day_01(self) -> None:
        keys = MonthlyBackfill("2024-11-01", "2025-02-01").keys()
        assert keys == ["2024-11-01", "2024-12-01", "2025-01-01", "2025-02-01"]

    @pytest.mark.parametrize(
        "bad", ["2024-01-15", "2024-01", "2024-13-01"], ids=["mid-month", "no-day", "month-13"]
    )
    def test_rejects_keys_not_on_day_01(self, bad: str) -> None:
        with pytest.raises(ValueError, match=r"YYYY-MM-01"):
            MonthlyBackfill(bad)

    def test_current_key_with_data_lag_crosses_year(self) -> None:
        backfill = MonthlyBackfill("2020-01-01", data_lag=1)
        assert backfill.current_key(now=utc(2025, 1, 15)) == "2024-12-01"


DST_CASES = [
    pytest.param(
        "Europe/Berlin",
        "2024-03-31T00",
        "2024-03-31T04",
        ["2024-03-31T00", "2024-03-31T01", "2024-03-31T03", "2024-03-31T04"],
        id="berlin-spring-forward",
    ),
    pytest.param(
        "America/New_York",
        "2024-03-10T00",
        "2024-03-10T04",
        ["2024-03-10T00", "2024-03-10T01", "2024-03-10T03", "2024-03-10T04"],
        id="new-york-spring-forward",
    ),
    pytest.param(
        "Europe/Berlin",
        "2024-10-27T00",
        "2024-10-27T04",
        ["2024-10-27T00", "2024-10-27T01", "2024-10-27T02", "2024-10-27T03", "2024-10-27T04"],
        id="berlin-fall-back",
    ),
    pytest.param(
        "America/New_York",
        "2024-11-03T00",
        "2024-11-03T03",
        ["2024-11-03T00", "2024-11-03T01", "2024-11-03T02", "2024-11-03T03"],
        id="new-york-fall-back",
    ),
]


class TestHourlyDst:
    @pytest.mark.parametrize(("tz", "start", "end", "expected"), DST_CASES)
    def test_keys_across_dst(self, tz: str, start: str, end: str, expected: list[str]) -> None:
        assert HourlyBackfill(start, end, tz=tz).keys() == expected

    @pytest.mark.parametrize(
        ("tz", "repeated", "start_utc"),
        [
            pytest.param(
                "Europe/Berlin", "2024-10-27T02", Instant.from_utc(2024, 10, 27, 0), id="berlin"
            ),
            pytest.param(
                "America/New_York", "2024-11-03T01", Instant.from_utc(2024, 11, 3, 5), id="new-york"
            ),
        ],
    )
    def test_repeated_hour_window_spans_two_hours(
        self, tz: str, repeated: str, start_utc: Instant
    ) -> None:
        window = HourlyBackfill("2024-01-01T00", tz=tz).window(repeated)
        assert window.start == start_utc
        assert hours_of(window.duration_seconds) == 2
        # Both occurrences of the repeated wall hour map back to the single key.
        backfill = HourlyBackfill("2024-01-01T00", tz=tz)
        assert backfill.key_of(start_utc.add(minutes=30)) == repeated
        assert backfill.key_of(start_utc.add(minutes=90)) == repeated

    @pytest.mark.parametrize(
        ("tz", "skipped"),
        [
            pytest.param("Europe/Berlin", "2024-03-31T02", id="berlin"),
            pytest.param("America/New_York", "2024-03-10T02", id="new-york"),
        ],
    )
    def test_skipped_hour_is_rejected(self, tz: str, skipped: str) -> None:
        backfill = HourlyBackfill("2024-01-01T00", tz=tz)
        with pytest.raises(ValueError, match=r"skipped by a clock change"):
            backfill.window(skipped)
        with pytest.raises(ValueError, match=r"skipped"):
            HourlyBackfill(skipped, tz=tz)

    def test_windows_around_spring_forward_tile(self) -> None:
        backfill = HourlyBackfill("2024-03-31T00", "2024-03-31T04", tz="Europe/Berlin")
        windows = [backfill.window(k) for k in backfill.keys()]
        assert all(a.end == b.start for a, b in itertools.pairwise(windows))
        assert [hours_of(w.duration_seconds) for w in windows] == [1, 1, 1, 1]

    def test_ten_years_of_hourly_keys(self) -> None:
        keys = HourlyBackfill("2015-01-01T00", "2024-12-31T23", tz="Europe/Berlin").keys()
        # 87,672 wall hours minus 10 skipped spring-forward hours.
        assert len(keys) == 87_672 - 10
        assert len(set(keys)) == len(keys)


class TestBoundsAndErrors:
    def test_override_before_start_names_bound(self) -> None:
        backfill = DailyBackfill("2024-01-01", "2024-01-31")
        with pytest.raises(
            ValueError, match=r"start '2023-12-31' is before the backfill's start_date '2024-01-01'"
        ):
            backfill.keys(start="2023-12-31")

    def test_override_after_end_names_bound(self) -> None:
        backfill = DailyBackfill("2024-01-01", "2024-01-31")
        with pytest.raises(
            ValueError, match=r"end '2024-02-01' is after the backfill's end_date '2024-01-31'"
        ):
            backfill.keys(end="2024-02-01")

    def test_override_in_wrong_format_names_format(self) -> None:
        with pytest.raises(ValueError, match=r"start '2024/01/05'.*expected YYYY-MM-DD"):
            DailyBackfill("2024-01-01", "2024-01-31").keys(start="2024/01/05")

    def test_override_start_after_end(self) -> None:
        with pytest.raises(ValueError, match=r"start '2024-01-10' is after end '2024-01-05'"):
            DailyBackfill("2024-01-01", "2024-01-31").keys("2024-01-10", "2024-01-05")

    def test_start_after_end_rejected(self) -> None:
        with pytest.raises(
            ValueError, match=r"start_date '2024-02-01' is after end_date '2024-01-01'"
        ):
            DailyBackfill("2024-02-01", "2024-01-01")

    def test_unknown_timezone_suggests(self) -> None:
        with pytest.raises(
            ValueError, match=r"unknown time zone 'Europe/Berln'.*Did you mean 'Europe/Berlin'"
        ):
            DailyBackfill("2024-01-01", tz="Europe/Berln")

    @pytest.mark.parametrize("value", [-1, 1.5, True], ids=["negative", "float", "bool"])
    def test_lookback_must_be_count(self, value: object) -> None:
        with pytest.raises(ValueError, match="lookback"):
            DailyBackfill("2024-01-01", lookback=value)  # type: ignore[arg-type]

    def test_invalid_calendar_date(self) -> None:
        with pytest.raises(ValueError, match=r"'2023-02-29' is not a valid daily key"):
            DailyBackfill("2023-02-29")

    def test_future_start_gives_no_keys(self) -> None:
        assert DailyBackfill("2030-01-01").keys(now=utc(2026, 1, 1)) == []


class TestCurrentKey:
    @pytest.mark.parametrize(
        ("backfill", "expected"),
        [
            pytest.param(DailyBackfill("2020-01-01", data_lag=1), "2026-01-07", id="daily-lag-1"),
            pytest.param(DailyBackfill("2020-01-01"), "2026-01-08", id="daily"),
            pytest.param(WeeklyBackfill("2020-W01", data_lag=1), "2026-W01", id="weekly-lag-1"),
            pytest.param(
                HourlyBackfill("2020-01-01T00", data_lag=2), "2026-01-08T08", id="hourly-lag-2"
            ),
            pytest.param(
                HourlyBackfill("2020-01-01T00", tz="Asia/Kolkata"),
                "2026-01-08T16",
                id="hourly-kolkata",
            ),
        ],
    )
    def test_current_key(self, backfill: DailyBackfill, expected: str) -> None:
        assert backfill.current_key(now=utc(2026, 1, 8, 10, 45)) == expected

    def test_data_lag_skips_dst_gap(self) -> None:
        backfill = HourlyBackfill("2024-01-01T00", tz="Europe/Berlin", data_lag=1)
        # 03:30 local on spring-forward day: one hour back is 01, because 02 does not exist.
        assert backfill.current_key(now=utc(2024, 3, 31, 1, 30)) == "2024-03-31T01"

    def test_naive_now_rejected(self) -> None:
        with pytest.raises(ValueError, match="timezone-aware"):
            DailyBackfill("2024-01-01").current_key(now=datetime(2024, 1, 1))


@pytest.mark.parametrize(
    "key",
    ["\uff12\uff10\uff12\uff14-01-01", "2024-0\u0661-01", "2024-01-01\n"],
    ids=["fullwidth", "arabic-indic", "newline"],
)
def test_only_ascii_digits_make_a_key(key: str) -> None:
    """Found by hypothesis: ``\\d`` matches any Unicode digit, and keys reach paths."""
    with pytest.raises(ValueError, match="expected YYYY-MM-DD"):
        DailyBackfill("2024-01-01", "2024-12-31").validate_key(key)
