"""Declared sources: windows of the run (lookback included), seed and function stand-ins,
and a local run refused before it starts when a workspace-only source has no stand-in."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    DefinitionError,
    MultiBackfill,
    Registry,
    StaticBackfill,
    UsageError,
    set_task_value,
    source,
    task,
)
from databricks_bundle_decorators.io_managers import SparkTableIoManager, local_table_path
from databricks_bundle_decorators.runtime import LocalTaskValueStore, run_job_locally

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = pytest.mark.connect_lane

SEED = Path(__file__).parent / "data" / "orders.csv"
orders = source("samples.tpch.orders", event_time="o_orderdate", local=SEED)
calls: list[tuple[datetime, datetime]] = []


def _events(spark: Any, start: datetime, end: datetime) -> Any:
    calls.append((start, end))
    return spark.sql(
        "SELECT CAST(ts AS TIMESTAMP) AS ts, v FROM VALUES "
        "('2024-03-01 23:30:00', 1), ('2024-03-02 00:00:00', 2), ('2024-03-03 12:00:00', 3) "
        "AS t(ts, v)"
    )


events = source("raw.web.events", event_time="ts", local=_events)
workspace_only = source("samples.nyctaxi.trips", event_time="pickup")

registry = Registry()


@registry.job(backfill=DailyBackfill("2024-01-01", lookback=1), sources=[orders, events])
def reads_sources() -> None:
    @task
    def collect() -> None:
        days = sorted({str(r.o_orderdate) for r in orders.read().collect()})
        set_task_value("order_days", days)
        set_task_value("event_values", sorted(r.v for r in events.read().collect()))

    collect()


@registry.job(backfill=DailyBackfill("2024-01-01"), sources=[workspace_only])
def needs_workspace() -> None:
    @task
    def count() -> None:
        workspace_only.read()

    count()


def _regional_days(spark: Any, start: datetime, end: datetime) -> Any:
    return spark.sql(
        "SELECT region, DATE(day) AS day, n FROM VALUES "
        + ", ".join(f"('{r}', '2024-03-0{d}', {d})" for r in ("eu", "us") for d in (1, 2, 3))
        + " AS t(region, day, n)"
    )


regional_orders = source(
    "raw.shop.regional_orders", event_time="day", static_column="region", local=_regional_days
)


regional_march = MultiBackfill(
    StaticBackfill(["eu", "us"]), DailyBackfill("2024-03-01", "2024-03-03", tz="Europe/Berlin")
)


@registry.job(backfill=regional_march, sources=[regional_orders])
def march_regions() -> None:
    @task(
        io_manager=SparkTableIoManager(
            "main.shop.march", partition_column="day", static_column="region"
        )
    )
    def copy() -> Any:
        return regional_orders.read().selectExpr("region", "CAST(day AS STRING) AS day", "n")

    copy()


@pytest.mark.spark
def test_a_run_across_two_regions_reads_each_region_in_its_own_days_of_its_zone(
    spark: Any, warehouse: Path
) -> None:
    # eu:03-02, eu:03-03, us:03-01: neither eu:03-01 nor us:03-02/03 belongs to the run;
    # a Berlin day is [23:00Z the day before, 23:00Z): read as UTC days it would span two
    # DATE values, and the day before would reach the output as rows outside the run's keys
    result = run_job_locally(
        registry,
        "march_regions",
        params={"backfill_start_key": "eu:2024-03-02", "backfill_key": "us:2024-03-01"},
        warehouse=warehouse,
    )
    assert result.succeeded, result
    table = local_table_path("main.shop.march", warehouse)
    rows = spark.read.format("delta").load(str(table)).collect()
    assert sorted((r.region, r.day) for r in rows) == [
        ("eu", "2024-03-02"),
        ("eu", "2024-03-03"),
        ("us", "2024-03-01"),
    ]


@pytest.mark.spark
def test_reads_keep_the_run_windows_with_lookback(spark: Any, warehouse: Path) -> None:
    calls.clear()
    result = run_job_locally(
        registry, "reads_sources", params={"backfill_key": "2024-03-02"}, warehouse=warehouse
    )
    assert result.succeeded, result
    store = LocalTaskValueStore(warehouse.parent / "task_values" / result.run_id)
    # the seed has 2024-02-29 .. 2024-03-04; the run reads 03-02 and its lookback day 03-01
    assert store.get("collect", "order_days") == ["2024-03-01", "2024-03-02"]
    assert store.get("collect", "event_values") == [1, 2]
    utc = timezone.utc
    assert calls == [(datetime(2024, 3, 1, tzinfo=utc), datetime(2024, 3, 3, tzinfo=utc))]


def test_a_workspace_only_source_without_stand_in_refuses_the_local_run(warehouse: Path) -> None:
    with pytest.raises(UsageError) as caught:
        run_job_locally(
            registry, "needs_workspace", params={"backfill_key": "2024-03-02"}, warehouse=warehouse
        )
    message = caught.value.render()
    assert message.startswith(
        "source samples.nyctaxi.trips of job 'needs_workspace' has no local table ("
    )
    assert "declare one: source('samples.nyctaxi.trips', ..., local='seeds/<file>.csv')" in message
    assert list(warehouse.iterdir()) == []  # nothing was written
    assert not (warehouse.parent / "task_values").exists()


def test_reading_outside_a_task_says_where_it_works() -> None:
    with pytest.raises(RuntimeError, match=r"read\(\) works inside a task run"):
        orders.read()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "orders"}, "source name 'orders' must be catalog.schema.table"),
        (
            {"name": "a.b.c", "local": "orders.xlsx"},
            "source a.b.c: local='orders.xlsx' must be a seed file ending in .csv",
        ),
        (
            {"name": "a.b.c", "event_time": "x; DROP"},
            "source a.b.c: event_time 'x; DROP' is not a column name",
        ),
    ],
)
def test_bad_declarations_fail_at_definition_time(kwargs: dict[str, Any], message: str) -> None:
    name = kwargs.pop("name")
    with pytest.raises(DefinitionError) as caught:
        source(name, **kwargs)
    assert caught.value.render().startswith(message)


def test_a_source_declared_twice_is_refused() -> None:
    with pytest.raises(DefinitionError, match=r"source a\.b\.c is declared twice"):

        @Registry().job(sources=[source("a.b.c"), source("a.b.c")])
        def twice() -> None: ...
