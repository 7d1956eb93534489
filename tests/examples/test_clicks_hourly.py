"""The hourly example: its graph, and clicks partitioned by the key helper across DST."""

from __future__ import annotations

from typing import Any

import pytest

from databricks_bundle_decorators.examples import clicks_hourly
from databricks_bundle_decorators.examples.clicks_hourly import (
    BACKFILL,
    generate_clicks,
    hourly_clicks_of,
)


def test_graph_and_backfill() -> None:
    job = clicks_hourly.clicks_hourly
    assert job.graph.topological_order() == ["generate_raw", "hourly_clicks"]
    assert job.backfill is BACKFILL and BACKFILL.kind == "hourly" and BACKFILL.tz == "Europe/Berlin"


@pytest.mark.spark
def test_each_click_lands_in_its_hours_partition_across_the_clock_changes(spark: Any) -> None:
    spring = BACKFILL.keys("2024-03-31T00", "2024-03-31T04")  # no T02: skipped
    autumn = BACKFILL.keys("2024-10-27T01", "2024-10-27T03")  # T02: two real hours
    hours = [*spring, *autumn]
    clicks = generate_clicks(spark, hours, 40, 11)
    per_hour = {
        r["event_hour"]: r["n"]
        for r in clicks.groupBy("event_hour").count().withColumnRenamed("count", "n").collect()
    }
    assert per_hour == dict.fromkeys(hours, 40)
    for row in clicks.select("event_ts", "event_hour").collect():
        assert BACKFILL.key_of(row["event_ts"].astimezone()) == row["event_hour"]
    totals = hourly_clicks_of(clicks).groupBy("event_hour").sum("clicks").collect()
    assert sorted(r["sum(clicks)"] for r in totals) == [40] * len(hours)
