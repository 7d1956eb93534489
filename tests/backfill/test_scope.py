"""Key scopes: windows, merged spans and messages."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill, StaticBackfill
from databricks_bundle_decorators.runtime import KeyScope

DAILY = DailyBackfill("2024-01-01", "2024-12-31")


def test_consecutive_days_merge_into_one_span() -> None:
    scope = KeyScope(DAILY, ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-05"))
    spans = scope.spans()
    assert [(str(s.start), str(s.end)) for s in spans] == [
        ("2024-01-01T00:00:00Z", "2024-01-04T00:00:00Z"),
        ("2024-01-05T00:00:00Z", "2024-01-06T00:00:00Z"),
    ]
    assert scope.describe() == (
        "keys 2024-01-01, 2024-01-02, 2024-01-03, 2024-01-05, windows "
        "[2024-01-01T00:00:00Z, 2024-01-04T00:00:00Z), [2024-01-05T00:00:00Z, 2024-01-06T00:00:00Z)"
    )


def test_dst_day_window_is_23_hours() -> None:
    scope = KeyScope(DailyBackfill("2024-03-01", tz="Europe/Berlin"), ("2024-03-31",))
    (span,) = scope.spans()
    assert span.duration_seconds == 23 * 3600


def test_static_scope_has_no_windows() -> None:
    scope = KeyScope(StaticBackfill(keys=["eu", "us"]), ("eu",))
    assert scope.windows() == ()
    assert scope.bounded
    assert scope.describe() == "key eu"


def test_unbounded_scopes() -> None:
    assert not KeyScope(None).bounded
    assert not KeyScope.everything(DAILY).bounded
    assert KeyScope.everything(DAILY).describe() == "all partitions"


@given(st.sets(st.integers(min_value=0, max_value=200), min_size=1, max_size=40))
def test_spans_cover_exactly_the_key_windows(hours: set[int]) -> None:
    backfill = HourlyBackfill("2024-01-01T00", tz="UTC")
    keys = tuple(backfill.shift_key("2024-01-01T00", h) for h in sorted(hours))
    scope = KeyScope(backfill, keys)
    spans = scope.spans()
    assert sum(s.duration_seconds for s in spans) == 3600 * len(keys)
    for window in scope.windows():
        assert any(s.start <= window.start and window.end <= s.end for s in spans)
    for a, b in itertools.pairwise(spans):
        assert a.end < b.start  # separate spans never touch
