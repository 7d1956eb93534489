"""Two-dimensional keys (static x time): text form, enumeration, order and resolution."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import (
    DailyBackfill,
    HourlyBackfill,
    MultiBackfill,
    QuartzSchedule,
    RunContext,
    StaticBackfill,
    get_backfill_keys,
    run_context,
)
from databricks_bundle_decorators.backfill.multi import MultiKey, split_key

REGIONS = StaticBackfill(["eu", "us", "apac-1"])
DAYS = MultiBackfill(REGIONS, DailyBackfill("2024-01-01", "2024-03-31", lookback=2))

static_keys = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,20}", fullmatch=True)
days = st.dates(min_value=datetime(2024, 1, 1).date(), max_value=datetime(2024, 3, 31).date())


@given(static=static_keys, day=days)
def test_the_text_form_round_trips(static: str, day: object) -> None:
    key = MultiKey(static, str(day))
    assert split_key(key.text) == key


@given(first=days, last=days)
def test_time_bounds_give_every_static_value_over_the_range(first: object, last: object) -> None:
    lo, hi = sorted((str(first), str(last)))
    times = DAYS.time.keys(lo, hi)
    keys = DAYS.keys(lo, hi)
    assert keys == [f"{s}:{t}" for s in REGIONS.declared_keys for t in times]
    assert DAYS.sort_keys(list(reversed(keys))) == keys
    for key in keys:
        DAYS.validate_key(key)
        assert DAYS.window(key) == DAYS.time.window(split_key(key).time)


@given(a=st.integers(0, 30 * 3 - 1), b=st.integers(0, 30 * 3 - 1))
def test_full_key_bounds_follow_the_definitions_order(a: int, b: int) -> None:
    universe = DAYS.keys()
    lo, hi = sorted((a, b))
    assert DAYS.keys(universe[lo], universe[hi]) == universe[lo : hi + 1]


def test_static_major_order_and_kind() -> None:
    both = MultiBackfill(StaticBackfill(["eu", "us"]), DailyBackfill("2024-01-01", "2024-01-02"))
    assert both.keys() == ["eu:2024-01-01", "eu:2024-01-02", "us:2024-01-01", "us:2024-01-02"]
    assert both.kind == "static x daily"


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("eu", "is not a two-part key: expected STATIC:TIME"),
        ("eu:2024-01-01:x", "is not a two-part key"),
        ("xx:2024-01-01", "static part 'xx' is not a declared static key"),
        ("eu:2023-12-31", "time part '2023-12-31' is before the backfill's start_date"),
        ("eu:2024-1-1", "expected YYYY-MM-DD"),
    ],
)
def test_bad_keys_name_the_part_at_fault(key: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DAYS.validate_key(key)


def test_mixed_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="both bounds as time keys"):
        DAYS.keys("eu:2024-01-01", "2024-01-05")


def test_constructor_names_the_wrong_argument() -> None:
    with pytest.raises(ValueError, match="takes a StaticBackfill"):
        MultiBackfill(DailyBackfill("2024-01-01"), DailyBackfill("2024-01-01"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="takes a DailyBackfill"):
        MultiBackfill(REGIONS, REGIONS)  # type: ignore[arg-type]


def keys_for(params: dict[str, str], **context: object) -> list[str]:
    with run_context(RunContext("job", "task", params, DAYS, **context)):  # type: ignore[arg-type]
        return get_backfill_keys()


def test_a_ranged_run_looks_back_within_each_static_value() -> None:
    params = {"backfill_start_key": "eu:2024-01-05", "backfill_key": "eu:2024-01-06"}
    assert keys_for(params) == [
        "eu:2024-01-03",
        "eu:2024-01-04",
        "eu:2024-01-05",
        "eu:2024-01-06",
    ]
    exact = {**params, "backfill_exact": "true"}
    assert keys_for(exact) == ["eu:2024-01-05", "eu:2024-01-06"]


def test_a_scheduled_run_processes_every_static_value_and_their_gaps() -> None:
    hourly = MultiBackfill(
        StaticBackfill(["eu", "us"]), HourlyBackfill("2024-01-01T00", collect_schedule_gaps=True)
    )
    every_3h = QuartzSchedule("0 0 0/3 * * ?", timezone="UTC")
    now = datetime(2024, 1, 2, 6, 0, 1, tzinfo=timezone.utc)
    with run_context(RunContext("job", "task", {}, hourly, every_3h, now)):
        keys = get_backfill_keys()
    hours = ["2024-01-02T04", "2024-01-02T05", "2024-01-02T06"]
    assert keys == [f"eu:{h}" for h in hours] + [f"us:{h}" for h in hours]


def test_the_zone_of_a_static_x_time_job_is_its_time_dimensions() -> None:
    from databricks_bundle_decorators.definitions import Registry

    berlin = MultiBackfill(StaticBackfill(["eu"]), DailyBackfill("2024-01-01", tz="Europe/Berlin"))
    assert berlin.tz == "Europe/Berlin"

    def regional() -> None: ...

    # a schedule string is read in the job's zone, as for a one-dimensional job
    job = Registry().job(regional, backfill=berlin, schedule="0 0 6 * * ?")
    assert job.schedule is not None and job.schedule.timezone == "Europe/Berlin"
