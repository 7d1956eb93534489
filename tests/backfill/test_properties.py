"""Property tests: key formats round-trip and windows tile time, in awkward time zones."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from whenever import Instant

from databricks_bundle_decorators.backfill import (
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    TimeBackfill,
    WeeklyBackfill,
)

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # 30-minute DST shift
    "Pacific/Apia",  # skipped a whole day in 2011
    "America/Santiago",  # DST changes at midnight
    "Asia/Kolkata",  # +05:30, no DST
    "Pacific/Chatham",  # +12:45 / +13:45
    "America/St_Johns",  # -03:30 with DST
]

SPAN_SECONDS = {
    DailyBackfill: 90 * 86_400,
    WeeklyBackfill: 400 * 86_400,
    MonthlyBackfill: 1_500 * 86_400,
    HourlyBackfill: 4 * 86_400,
}
FIRST_KEY = {
    DailyBackfill: "1990-01-01",
    WeeklyBackfill: "1990-W01",
    MonthlyBackfill: "1990-01-01",
    HourlyBackfill: "1990-01-01T00",
}
LAST_KEY = {
    DailyBackfill: "2040-01-01",
    WeeklyBackfill: "2040-W01",
    MonthlyBackfill: "2040-01-01",
    HourlyBackfill: "2040-01-01T00",
}
EARLIEST = Instant.from_utc(1995, 1, 1).timestamp()
LATEST = Instant.from_utc(2035, 12, 31).timestamp()


@st.composite
def definitions_with_range(draw: st.DrawFn) -> tuple[TimeBackfill, str, str]:
    """A random definition and a range of keys within it, taken from two random instants."""
    kind = draw(st.sampled_from(list(SPAN_SECONDS)))
    backfill = kind(FIRST_KEY[kind], LAST_KEY[kind], tz=draw(st.sampled_from(ZONES)))
    # the range ends by LATEST, well inside every definition's bounds
    first = draw(st.integers(EARLIEST, LATEST - SPAN_SECONDS[kind]))
    last = first + draw(st.integers(0, SPAN_SECONDS[kind]))
    lo = backfill.key_of(Instant.from_timestamp(first))
    hi = backfill.key_of(Instant.from_timestamp(last))
    return backfill, lo, hi


@settings(max_examples=150, deadline=None)
@given(definitions_with_range())
def test_windows_of_consecutive_keys_tile_time(case: tuple[TimeBackfill, str, str]) -> None:
    backfill, lo, hi = case
    keys = backfill.keys(lo, hi)
    assert keys, "a non-empty range"
    windows = [backfill.window(k) for k in keys]
    for earlier, later in itertools.pairwise(windows):
        assert earlier.end == later.start  # no gap, no overlap
    for window in windows:
        assert window.end > window.start


@settings(max_examples=150, deadline=None)
@given(definitions_with_range())
def test_key_window_key_round_trip(case: tuple[TimeBackfill, str, str]) -> None:
    backfill, lo, hi = case
    for key in backfill.keys(lo, hi):
        window = backfill.window(key)
        assert backfill.key_of(window.start) == key
        assert backfill.key_of(window.end.subtract(nanoseconds=1)) == key
        assert backfill.key_of(window.end) != key


@settings(max_examples=150, deadline=None)
@given(definitions_with_range())
def test_parse_format_round_trip(case: tuple[TimeBackfill, str, str]) -> None:
    backfill, lo, hi = case
    cadence = backfill.cadence
    for key in backfill.keys(lo, hi):
        assert cadence.format(cadence.parse(key)) == key


@settings(max_examples=100, deadline=None)
@given(definitions_with_range())
def test_enumeration_agrees_with_per_key_windows(case: tuple[TimeBackfill, str, str]) -> None:
    """keys() (fast, transition-based) == every wall period whose window is non-empty."""
    backfill, lo, hi = case
    cadence = backfill.cadence
    expected = []
    wall = cadence.parse(lo)
    while wall <= cadence.parse(hi):
        key = cadence.format(wall)
        try:
            backfill.window(key)
            expected.append(key)
        except ValueError:
            pass
        wall = cadence.shift(wall, 1)
    assert backfill.keys(lo, hi) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([DailyBackfill, WeeklyBackfill, MonthlyBackfill, HourlyBackfill]),
    st.sampled_from(ZONES),
    st.integers(Instant.from_utc(1996, 1, 1).timestamp(), Instant.from_utc(2035, 1, 1).timestamp()),
)
def test_every_instant_has_exactly_one_key(kind: type[TimeBackfill], tz: str, seconds: int) -> None:
    backfill = kind(FIRST_KEY[kind], LAST_KEY[kind], tz=tz)
    instant = Instant.from_timestamp(seconds)
    key = backfill.key_of(instant)
    assert backfill.window(key).contains(instant)
    assert not backfill.window(backfill.shift_key(key, 1)).contains(instant)
    assert not backfill.window(backfill.shift_key(key, -1)).contains(instant)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([DailyBackfill, WeeklyBackfill, MonthlyBackfill, HourlyBackfill]),
    st.one_of(
        st.text(max_size=16),
        st.from_regex(r"\d{4}-(W?\d{2}|\d{2}-\d{2}(T\d{2})?)", fullmatch=True),
    ),
)
def test_malformed_keys_raise_value_error_naming_the_format(
    kind: type[TimeBackfill], text: str
) -> None:
    """Any string either parses to a key that formats back to itself, or is a ValueError."""
    backfill = kind(FIRST_KEY[kind], LAST_KEY[kind])
    cadence = backfill.cadence
    try:
        parsed = cadence.parse(text)
    except ValueError as exc:
        assert cadence.key_format in str(exc)
    else:
        assert cadence.format(parsed) == text
