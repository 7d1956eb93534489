"""The backfill definition in job tags, and back (bundle/tags.py)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import (
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    StaticBackfill,
    WeeklyBackfill,
)
from databricks_bundle_decorators.bundle import backfill_from_tags, backfill_tags
from databricks_bundle_decorators.bundle.tags import MAX_TAGS, tag_problem

ZONES = ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "Asia/Kolkata"]


@st.composite
def daily_definitions(draw: st.DrawFn) -> DailyBackfill:
    start = draw(st.dates(min_value=date(2000, 1, 1), max_value=date(2030, 12, 31)))
    span = draw(st.none() | st.integers(min_value=0, max_value=4000))
    return DailyBackfill(
        start_date=start.isoformat(),
        end_date=None if span is None else (start + timedelta(days=span)).isoformat(),
        tz=draw(st.sampled_from(ZONES)),
        lookback=draw(st.integers(0, 30)),
        data_lag=draw(st.integers(0, 5)),
        collect_schedule_gaps=draw(st.booleans()),
    )


@given(definition=daily_definitions())
def test_time_definitions_survive_the_round_trip_through_tags(definition: DailyBackfill) -> None:
    tags = backfill_tags(definition)
    assert all(tag_problem(k, v) is None for k, v in tags.items())
    assert backfill_from_tags(tags) == definition


@pytest.mark.parametrize(
    "definition",
    [
        WeeklyBackfill("2020-W52", "2021-W05", tz="Europe/London"),
        MonthlyBackfill("2024-01-01", lookback=2),
        HourlyBackfill("2024-03-10T00", tz="America/New_York", collect_schedule_gaps=True),
    ],
    ids=["weekly", "monthly", "hourly"],
)
def test_every_cadence_survives_the_round_trip(definition: object) -> None:
    assert backfill_from_tags(backfill_tags(definition)) == definition  # type: ignore[arg-type]


_STATIC_KEYS = st.lists(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,40}", fullmatch=True),
    min_size=1,
    max_size=40,
    unique=True,
)


@given(keys=_STATIC_KEYS)
def test_static_keys_survive_the_round_trip_in_valid_tags(keys: list[str]) -> None:
    tags = backfill_tags(StaticBackfill(keys))
    assert all(tag_problem(k, v) is None for k, v in tags.items())
    assert len(tags) < MAX_TAGS
    assert backfill_from_tags(tags) == StaticBackfill(keys)


def test_too_many_static_keys_are_counted_but_not_stored() -> None:
    keys = [f"tenant-{i:05d}" for i in range(2000)]
    tags = backfill_tags(StaticBackfill(keys))
    assert tags["dbxdec_backfill_count"] == "2000"
    assert "dbxdec_backfill_keys" not in tags
    with pytest.raises(ValueError, match="too many to be stored in tags"):
        backfill_from_tags(tags)


def test_a_job_without_backfill_tags_has_no_definition() -> None:
    assert backfill_from_tags({"team": "data"}) is None


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ({"dbxdec_backfill": "yearly"}, "unknown backfill kind 'yearly'"),
        ({"dbxdec_backfill": "daily"}, "lack 'dbxdec_backfill_start'"),
    ],
)
def test_malformed_tags_are_value_errors(tags: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        backfill_from_tags(tags)


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("team", "data-eng@corp.com", True),
        ("path", "a/b:c=d+e", True),
        ("team", "data & ml", False),
        ("", "x", False),
        ("k" * 128, "x", False),
        ("team", "é ü ß 1", True),
    ],
)
def test_tag_rules(key: str, value: str, ok: bool) -> None:
    assert (tag_problem(key, value) is None) is ok


def test_a_two_dimensional_definition_round_trips_through_tags() -> None:
    from databricks_bundle_decorators.backfill import HourlyBackfill, MultiBackfill, StaticBackfill

    multi = MultiBackfill(
        StaticBackfill(["eu", "us"]),
        HourlyBackfill("2024-01-01T00", tz="Europe/Berlin", lookback=1),
    )
    tags = backfill_tags(multi)
    assert tags["dbxdec_backfill"] == "static x hourly"
    assert all(tag_problem(k, v) is None for k, v in tags.items())
    assert backfill_from_tags(tags) == multi
