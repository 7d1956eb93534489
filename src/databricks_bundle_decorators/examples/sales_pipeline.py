"""Example pipeline: daily sales events, generated, cleaned, aggregated and summarised.

``generate_events`` (deterministic, ~1% bad rows on purpose) -> ``clean_events`` (checked)
-> ``daily_revenue`` (a 3-day rolling revenue: ``lookback=2``) -> ``region_totals``
(``all_partitions`` of the daily table, a snapshot replaced by each run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from databricks_bundle_decorators import (
    DailyBackfill,
    all_partitions,
    job,
    params,
    set_task_value,
    task,
)
from databricks_bundle_decorators.checks import Expect, MaxNullFraction, MinRowCount, Unique
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

SCHEMA = "main.dbxdec_demo"
REGIONS = ("north", "south", "east", "west")
ROLLING_DAYS = 3
BACKFILL = DailyBackfill(start_date="2024-01-01", lookback=ROLLING_DAYS - 1, data_lag=1)

raw_io = SparkTableIoManager(
    f"{SCHEMA}.sales_raw", partition_column="event_date", time_column="event_ts"
)
clean_io = SparkTableIoManager(
    f"{SCHEMA}.sales_clean", partition_column="event_date", time_column="event_ts"
)
daily_io = SparkTableIoManager(f"{SCHEMA}.sales_daily", partition_column="event_date")
totals_io = SparkTableIoManager(f"{SCHEMA}.sales_region_totals")


def _spark() -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


# -- transformations: plain functions of DataFrames, shared with the benchmark ---------


def generate_sales(spark: Any, days: Sequence[str], events_per_day: int, seed: int) -> Any:
    """Events of ``days`` (``YYYY-MM-DD``, UTC), deterministic per (seed, day, number)."""
    from pyspark.sql import functions as F

    n = int(events_per_day)
    day_index = (F.col("id") / n).cast("int")
    number = F.col("id") % n
    day = F.element_at(F.array(*[F.lit(d) for d in days]), day_index + 1)
    h = F.xxhash64(F.lit(int(seed)), day, number)
    amount = F.round((F.pmod(F.shiftright(h, 24), F.lit(100_000)) + 1) / 100, 2)
    frame = spark.range(0, n * len(days), numPartitions=max(1, min(4, len(days)))).select(
        F.concat_ws("-", day, F.lpad(number.cast("string"), 7, "0")).alias("order_id"),
        F.when(F.pmod(h, F.lit(150)) == 0, F.lit(None))
        .otherwise(F.pmod(F.shiftright(h, 8), F.lit(5_000)))
        .cast("bigint")
        .alias("customer_id"),
        F.element_at(
            F.array(*[F.lit(r) for r in REGIONS]), F.pmod(h, F.lit(4)).cast("int") + 1
        ).alias("region"),
        F.when(F.pmod(F.shiftright(h, 40), F.lit(200)) == 0, -amount)
        .otherwise(amount)
        .alias("amount"),
        F.timestamp_seconds(
            F.unix_date(F.to_date(day)).cast("bigint") * 86_400
            + F.pmod(F.shiftright(h, 32), F.lit(86_400))
        ).alias("event_ts"),
        day.alias("event_date"),
        h.alias("_h"),
    )
    duplicates = frame.where(F.pmod(F.col("_h"), F.lit(250)) == 1)
    return frame.unionByName(duplicates).drop("_h")


def clean_sales(raw: Any) -> Any:
    """Valid events only: known customer, positive amount, one row per order."""
    from pyspark.sql import functions as F

    return raw.where(F.col("customer_id").isNotNull() & (F.col("amount") > 0)).dropDuplicates(
        ["order_id"]
    )


def daily_revenue_of(clean: Any, written: Sequence[str]) -> Any:
    """Per day and region: orders, revenue and the revenue of the last 3 days."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    daily = clean.groupBy("event_date", "region").agg(
        F.count(F.lit(1)).alias("orders"), F.round(F.sum("amount"), 2).alias("revenue")
    )
    day_number = F.unix_date(F.to_date("event_date"))
    rolling = Window.partitionBy("region").orderBy(day_number).rangeBetween(-(ROLLING_DAYS - 1), 0)
    return daily.withColumn(
        f"revenue_{ROLLING_DAYS}d", F.round(F.sum("revenue").over(rolling), 2)
    ).where(F.col("event_date").isin(list(written)))


def region_totals_of(daily: Any) -> Any:
    """Per region over every day: days covered, orders, revenue."""
    from pyspark.sql import functions as F

    return (
        daily.groupBy("region")
        .agg(
            F.count_distinct("event_date").alias("days"),
            F.sum("orders").alias("orders"),
            F.round(F.sum("revenue"), 2).alias("revenue"),
            F.min("event_date").alias("first_day"),
            F.max("event_date").alias("last_day"),
        )
        .orderBy("region")
    )


# -- the job -----------------------------------------------------------------------


@job(
    params={"events_per_day": "2000", "seed": "7"},
    backfill=BACKFILL,
    schedule="0 0 6 * * ?",
    max_concurrent_runs=4,
    tags={"project": "dbxdec-demo"},
)
def sales_pipeline() -> None:
    @task(io_manager=raw_io, checks=[MinRowCount(1)])
    def generate_events() -> Any:
        days = get_written_keys()
        set_task_value("days", days)
        return generate_sales(_spark(), days, int(params["events_per_day"]), int(params["seed"]))

    @task(
        io_manager=clean_io,
        checks=[
            MinRowCount(1),
            MaxNullFraction("customer_id", 0.0),
            Unique("order_id"),
            Expect("amount > 0"),
        ],
    )
    def clean_events(raw: Any) -> Any:
        from pyspark.sql import functions as F

        # The input holds the lookback days too; clean only the days this run writes.
        return clean_sales(raw.where(F.col("event_date").isin(get_written_keys())))

    @task(io_manager=daily_io, checks=[Unique("event_date", "region")])
    def daily_revenue(clean: Any) -> Any:
        return daily_revenue_of(clean, get_written_keys())

    @task(io_manager=totals_io, checks=[MinRowCount(len(REGIONS))])
    def region_totals(daily: Any) -> Any:
        return region_totals_of(daily)

    region_totals(all_partitions(daily_revenue(clean_events(generate_events()))))
