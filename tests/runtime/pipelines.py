"""Small pipelines for the runtime tests, each in its own registry.

Rows are tiny and deterministic; a job parameter steers the misbehaviour under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from databricks_bundle_decorators import (
    DailyBackfill,
    Registry,
    StaticBackfill,
    all_partitions,
    get_task_value,
    params,
    set_task_value,
    task,
)
from databricks_bundle_decorators.backfill import get_backfill_keys
from databricks_bundle_decorators.checks import MinRowCount, Unique
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

registry = Registry()

events_io = SparkTableIoManager("main.test.events", partition_column="day", time_column="ts")
seen_io = SparkTableIoManager("main.test.seen", partition_column="day")
history_io = SparkTableIoManager("main.test.history")
region_io = SparkTableIoManager("main.test.regions", partition_column="region")


def _spark() -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


def events_for(
    days: list[str], *, per_day: int = 3, shift_days: int = 0, late: bool = False
) -> Any:
    """``per_day`` rows per day; ``shift_days`` labels them with another day, ``late``
    moves their timestamps a day later (outside the window) while keeping the label."""
    from datetime import date, timedelta

    rows = []
    for day in days:
        label = (date.fromisoformat(day) + timedelta(days=shift_days)).isoformat()
        stamp_day = date.fromisoformat(day) + timedelta(days=1 if late else 0)
        for n in range(per_day):
            rows.append((f"{day}-{n}", label, f"{stamp_day.isoformat()} 0{n}:00:00", n * 10))
    return _spark().sql(
        "SELECT id, day, CAST(ts AS TIMESTAMP) AS ts, CAST(amount AS BIGINT) AS amount "
        "FROM VALUES " + ", ".join(str(r) for r in rows) + " AS t(id, day, ts, amount)"
        if rows
        else "SELECT 'x' AS id, 'x' AS day, CAST(NULL AS TIMESTAMP) AS ts, 0L AS amount LIMIT 0"
    )


@registry.job(
    params={"shift_days": "0", "late": "false", "per_day": "3", "min_rows": "0"},
    backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31", lookback=1),
)
def daily() -> None:
    """events (lookback 1) -> seen (what each run read) ; history reads all partitions."""

    @task(io_manager=events_io, checks=[Unique("id")])
    def events() -> Any:
        set_task_value("written", get_written_keys())
        return events_for(
            get_written_keys(),
            per_day=int(params["per_day"]),
            shift_days=int(params["shift_days"]),
            late=params["late"] == "true",
        )

    @task(io_manager=seen_io)
    def seen(rows: Any) -> Any:
        from pyspark.sql import functions as F

        assert get_task_value("events", "written") == get_written_keys()
        set_task_value("read_days", sorted(r.day for r in rows.select("day").distinct().collect()))
        set_task_value("run_keys", get_backfill_keys())
        keys = get_written_keys()
        return (
            rows.where(F.col("day").isin(keys))
            .groupBy("day")
            .agg(F.count(F.lit(1)).alias("rows"), F.sum("amount").alias("amount"))
        )

    @task(io_manager=history_io, checks=[MinRowCount(1)])
    def history(everything: Any) -> Any:
        from pyspark.sql import functions as F

        return everything.agg(
            F.count(F.lit(1)).alias("rows"), F.count_distinct("day").alias("days")
        )

    history(all_partitions(seen(events())))


@registry.job(
    params={"min_rows": "0"},
    backfill=StaticBackfill(keys=["eu", "us", "jp"]),
)
def regional() -> None:
    @task(io_manager=region_io)
    def by_region() -> Any:
        keys = get_written_keys()
        return _spark().createDataFrame(
            [(k, i) for i, k in enumerate(keys)], "region string, n int"
        )

    @task
    def report(rows: Any) -> None:
        set_task_value("regions", sorted(r.region for r in rows.collect()))

    report(by_region())


def table_files(warehouse: Path, name: str) -> dict[str, str]:
    """Every file of a local table (relative path -> sha256), hidden files included."""
    import hashlib

    folder = warehouse.joinpath(*name.split("."))
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def read_local(spark: Any, warehouse: Path, name: str) -> Any:
    """The local Delta table ``name`` as a DataFrame."""
    from databricks_bundle_decorators.runtime.job_tables.tables import read_table

    return read_table(name, spark=spark, warehouse=warehouse)


def table_version(spark: Any, warehouse: Path, name: str) -> int:
    """The newest commit version of the local Delta table ``name`` (-1: no table)."""
    from databricks_bundle_decorators.runtime.job_tables.tables import (
        local_table_exists,
        local_table_path,
    )

    if not local_table_exists(name, warehouse):
        return -1
    path = local_table_path(name, warehouse)
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first().version)


def partition_values(spark: Any, warehouse: Path, name: str, column: str) -> list[str]:
    """The distinct values of ``column`` in the table, sorted."""
    frame = read_local(spark, warehouse, name)
    return sorted(str(r[0]) for r in frame.select(column).distinct().collect())
