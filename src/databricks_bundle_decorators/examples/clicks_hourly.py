"""Example pipeline: hourly click counts in Europe/Berlin, across clock changes.

``generate_clicks`` makes deterministic clicks per hour, keyed with
:func:`backfill_key_column` (2024-03-31 has no ``T02``; 2024-10-27's ``T02`` holds two real
hours); ``hourly_clicks`` counts clicks and users per hour and page::

    dbxdec backfill clicks_hourly --start 2024-03-31 --end 2024-03-31 --local
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from databricks_bundle_decorators import HourlyBackfill, backfill_key_column, job, params, task
from databricks_bundle_decorators.checks import MinRowCount, Unique
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

SCHEMA = "main.dbxdec_demo"
PAGES = ("home", "search", "product", "cart", "checkout")
BACKFILL = HourlyBackfill(start_date="2024-03-30T00", tz="Europe/Berlin", data_lag=1)

raw_io = SparkTableIoManager(
    f"{SCHEMA}.clicks_raw", partition_column="event_hour", time_column="event_ts"
)
hourly_io = SparkTableIoManager(f"{SCHEMA}.clicks_hourly", partition_column="event_hour")


def _spark() -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


def generate_clicks(spark: Any, hours: Sequence[str], per_hour: int, seed: int) -> Any:
    """Clicks of ``hours`` (hourly keys of :data:`BACKFILL`), deterministic per
    (seed, hour, number), each inside its hour's window."""
    from pyspark.sql import functions as F

    n = int(per_hour)
    windows = [BACKFILL.window(hour) for hour in hours]
    starts = [int(w.start.timestamp()) for w in windows]
    lengths = [int(w.end.timestamp()) - s for w, s in zip(windows, starts, strict=True)]
    index = (F.col("id") / n).cast("int") + 1
    hour = F.element_at(F.array(*[F.lit(h) for h in hours]), index)
    h = F.xxhash64(F.lit(int(seed)), hour, F.col("id") % n)
    offset = F.pmod(F.shiftright(h, 16), F.element_at(F.array(*map(F.lit, lengths)), index))
    instant = F.element_at(F.array(*map(F.lit, starts)), index).cast("bigint") + offset
    frame = spark.range(0, n * len(hours), numPartitions=max(1, min(4, len(hours)))).select(
        F.timestamp_seconds(instant).alias("event_ts"),
        F.pmod(F.shiftright(h, 8), F.lit(500)).cast("bigint").alias("user_id"),
        F.element_at(
            F.array(*[F.lit(p) for p in PAGES]), F.pmod(h, F.lit(5)).cast("int") + 1
        ).alias("page"),
    )
    return frame.withColumn("event_hour", backfill_key_column("event_ts", BACKFILL))


def hourly_clicks_of(clicks: Any) -> Any:
    """Per hour and page: clicks and distinct users."""
    from pyspark.sql import functions as F

    return clicks.groupBy("event_hour", "page").agg(
        F.count(F.lit(1)).alias("clicks"), F.count_distinct("user_id").alias("users")
    )


@job(
    params={"clicks_per_hour": "200", "seed": "11"},
    backfill=BACKFILL,
    schedule="0 15 * * * ?",
    max_concurrent_runs=4,
    tags={"project": "dbxdec-demo"},
)
def clicks_hourly() -> None:
    @task(io_manager=raw_io, checks=[MinRowCount(1)])
    def generate_raw() -> Any:
        hours = get_written_keys()
        return generate_clicks(_spark(), hours, int(params["clicks_per_hour"]), int(params["seed"]))

    @task(io_manager=hourly_io, checks=[Unique("event_hour", "page")])
    def hourly_clicks(clicks: Any) -> Any:
        return hourly_clicks_of(clicks)

    hourly_clicks(generate_raw())
