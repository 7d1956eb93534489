"""A 30-day local Delta backfill of the example pipeline: dbxdec versus hand-written PySpark.

(d) dbxdec: one ranged run of all the days (``backfill_start_key``..``backfill_key``)
    through ``run_job_locally``, the code path of ``dbxdec backfill --local
    --batch-size 30``: four tasks, each one validated, checked ``replaceWhere`` commit.
(h) hand-written: the same transformations (the example's own functions) in plain
    PySpark, writing the same four Delta tables with ``replaceWhere`` (no checks, no
    validation, no transaction ids): the floor.

Both share one ``local_spark_session()``. After a warm-up of each, they alternate
``--repeats`` times, each into a fresh warehouse folder. The script prints every time,
the medians and the ratio (d)/(h) (target <= 1.3), and fails unless all tables are
identical (row count and an order-independent checksum per table). ``--per-key`` also
times one dbxdec run per day (slow: four Delta commits per day).

Usage: python benchmarks/local_backfill_delta.py [--days 30] [--events-per-day 20000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from figures import figure  # noqa: E402

from databricks_bundle_decorators import default_registry  # noqa: E402
from databricks_bundle_decorators.examples import sales_pipeline as pipeline  # noqa: E402
from databricks_bundle_decorators.runtime import run_job_locally  # noqa: E402
from databricks_bundle_decorators.runtime.session.spark import local_spark_session  # noqa: E402

TABLES = ("sales_raw", "sales_clean", "sales_daily", "sales_region_totals")
TARGET = 1.3
Fingerprint = dict[str, tuple[int, int]]


def tables_of(warehouse: Path) -> Path:
    """Where both ways put the tables: ``<warehouse>/main/dbxdec_demo``."""
    catalog, schema = pipeline.SCHEMA.split(".")
    return warehouse / catalog / schema


def dbxdec_ranged(keys: list[str], warehouse: Path, events: str) -> None:
    """(d): one ranged run over ``keys``."""
    _run({"backfill_start_key": keys[0], "backfill_key": keys[-1]}, warehouse, events)


def dbxdec_per_key(keys: list[str], warehouse: Path, events: str) -> None:
    """One dbxdec run per key."""
    for key in keys:
        _run({"backfill_key": key}, warehouse, events)


def _run(params: dict[str, str], warehouse: Path, events: str) -> None:
    result = run_job_locally(
        default_registry,
        pipeline.sales_pipeline.name,
        params={**params, "events_per_day": events},
        warehouse=warehouse,
    )
    if not result.succeeded:
        raise SystemExit(f"dbxdec run {params} failed: {result.failed}")


def hand_written(spark: Any, keys: list[str], warehouse: Path, events: str) -> None:
    """(h): the four tables from the example's functions, written as Delta by hand."""
    folder = tables_of(warehouse)
    days = f"event_date >= '{keys[0]}' AND event_date <= '{keys[-1]}'"
    raw = pipeline.generate_sales(spark, keys, int(events), 7)
    clean = pipeline.clean_sales(raw).persist()
    daily = pipeline.daily_revenue_of(clean, keys).persist()
    for frame, table in ((raw, "sales_raw"), (clean, "sales_clean"), (daily, "sales_daily")):
        path = folder / table
        writer = frame.write.format("delta").mode("overwrite").option("replaceWhere", days)
        if not (path / "_delta_log").is_dir():
            writer = writer.partitionBy("event_date")
        writer.save(str(path))
    totals = pipeline.region_totals_of(spark.read.format("delta").load(str(folder / "sales_daily")))
    totals.write.format("delta").mode("overwrite").save(str(folder / "sales_region_totals"))
    clean.unpersist()
    daily.unpersist()


def fingerprint(spark: Any, warehouse: Path) -> Fingerprint:
    """Row count and an order-independent checksum (sum of row hashes) of every table."""
    from pyspark.sql import functions as F

    out: Fingerprint = {}
    for table in TABLES:
        frame = spark.read.format("delta").load(str(tables_of(warehouse) / table))
        row = F.xxhash64(*[F.col(c) for c in sorted(frame.columns)]).cast("decimal(38,0)")
        count, checksum = frame.agg(F.count(F.lit(1)), F.sum(row)).first()
        out[table] = (int(count), int(checksum or 0))
    return out


def timed(action: Callable[..., None], *args: Any) -> float:
    started = time.perf_counter()
    action(*args)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--events-per-day", default="20000")
    parser.add_argument("--start", default="2024-01-01")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-key", action="store_true", help="also one dbxdec run per day")
    args = parser.parse_args()
    backfill = pipeline.BACKFILL
    keys = backfill.keys(args.start, backfill.shift_key(args.start, args.days - 1))
    events: str = args.events_per_day
    spark = local_spark_session()
    root = Path(tempfile.mkdtemp(prefix="dbxdec-bench-delta-"))
    print(f"example pipeline, {len(keys)} daily partitions x {events} events, Delta, local")
    dbxdec_times: list[float] = []
    hand_times: list[float] = []
    prints: dict[str, Fingerprint] = {}
    try:
        warm = keys[:3]  # the JVM's code caches warm for both ways alike
        dbxdec_ranged(warm, root / "warm-d", events)
        hand_written(spark, warm, root / "warm-h", events)
        for repeat in range(1, args.repeats + 1):
            wd, wh = root / f"d{repeat}", root / f"h{repeat}"
            dbxdec_times.append(timed(dbxdec_ranged, keys, wd, events))
            hand_times.append(timed(hand_written, spark, keys, wh, events))
            print(
                f"  round {repeat}: (d) dbxdec ranged run {dbxdec_times[-1]:7.2f} s   "
                f"(h) hand-written {hand_times[-1]:7.2f} s",
                flush=True,
            )
            prints[f"d{repeat}"] = fingerprint(spark, wd)
            prints[f"h{repeat}"] = fingerprint(spark, wh)
        if args.per_key:
            wk = root / "per-key"
            per_key = timed(dbxdec_per_key, keys, wk, events)
            prints["per-key"] = fingerprint(spark, wk)
            print(f"  one dbxdec run per key: {per_key:7.2f} s ({per_key / len(keys):.2f} s/key)")
    finally:
        shutil.rmtree(root, ignore_errors=True)

    d, h = statistics.median(dbxdec_times), statistics.median(hand_times)
    print(f"  median (d) dbxdec, one ranged run of {len(keys)} keys: {d:7.2f} s")
    print(f"  median (h) hand-written PySpark + Delta:           {h:7.2f} s")
    figure(
        "local_backfill_delta",
        "ranged Delta run / hand-written",
        d / h,
        TARGET,
        better="lower",
        unit="x",
    )
    reference = prints["h1"]
    differing = sorted(name for name, found in prints.items() if found != reference)
    print(f"  tables identical across every run: {'yes' if not differing else 'NO'}")
    for table in TABLES:
        print(f"    {table:<22} rows {reference[table][0]:>9}")
    if differing:
        for name in differing:
            print(f"  {name} differs: {prints[name]} != {reference}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
