"""Issue 25 item 11: ``backfill_key_column`` formats a timestamp column as the
definition's key, equal to ``key_of`` for any instant, whatever the session's zone."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators import (
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    StaticBackfill,
    WeeklyBackfill,
    backfill_key_column,
)

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu")
EPOCH = datetime(1990, 1, 1, tzinfo=timezone.utc)
SPAN = int((datetime(2040, 1, 1, tzinfo=timezone.utc) - EPOCH).total_seconds())


def definitions(tz: str) -> dict[str, Any]:
    return {
        "daily": DailyBackfill("1990-01-01", tz=tz),
        "hourly": HourlyBackfill("1990-01-01T00", tz=tz),
        "weekly": WeeklyBackfill("1990-W01", tz=tz),
        "monthly": MonthlyBackfill("1990-01-01", tz=tz),
    }


@pytest.mark.spark
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(ZONES),
    st.lists(st.integers(0, SPAN), min_size=50, max_size=200),
    st.sampled_from(["UTC", "America/Los_Angeles", "Asia/Tokyo"]),
)
def test_the_column_key_equals_key_of(
    spark: Any, tz: str, seconds: list[int], session_tz: str
) -> None:
    instants = [EPOCH + timedelta(seconds=s) for s in seconds]
    # the hours around this year's clock changes in the zone, where a key is most easily wrong
    instants += [
        datetime(2024, 3, 31, 0, tzinfo=timezone.utc) + timedelta(minutes=30 * i) for i in range(8)
    ]
    instants += [
        datetime(2024, 10, 27, 0, tzinfo=timezone.utc) + timedelta(minutes=30 * i) for i in range(8)
    ]
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", session_tz)
    try:
        frame = spark.createDataFrame(
            [(i, at) for i, at in enumerate(instants)], "i int, ts timestamp"
        )
        defs = definitions(tz)
        rows = frame.select(
            "i", *(backfill_key_column("ts", d).alias(kind) for kind, d in defs.items())
        ).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    for row in rows:
        at = instants[row["i"]]
        for kind, definition in defs.items():
            assert row[kind] == definition.key_of(at), (kind, tz, at.isoformat())


def test_a_static_definition_has_no_key_column() -> None:
    with pytest.raises(ValueError, match="needs a time-based definition"):
        backfill_key_column("ts", StaticBackfill(["eu", "us"]))
