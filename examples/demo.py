"""``make demo``: a 31-day local backfill of the example sales pipeline.

Every day is one run of the four tasks on the embedded Spark, with the same code path
a Databricks task runs. The tables are parquet folders under ``.dbxdec/warehouse``;
running the demo again replaces the same partitions (idempotent writes).

Usage: ``python examples/demo.py [--start 2024-01-01] [--days 31] [--events-per-day 2000]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from databricks_bundle_decorators import default_registry  # noqa: E402
from databricks_bundle_decorators.examples import sales_pipeline  # noqa: E402
from databricks_bundle_decorators.runtime import run_job_locally  # noqa: E402
from databricks_bundle_decorators.runtime.spark import local_spark_session  # noqa: E402

TABLES = ("sales_raw", "sales_clean", "sales_daily", "sales_region_totals")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the backfill, then print where the tables are and a few rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", default="2024-01-01", help="first day (default 2024-01-01)")
    parser.add_argument("--days", type=int, default=31, help="number of days (default 31)")
    parser.add_argument("--events-per-day", default="2000", help="events per day (default 2000)")
    parser.add_argument(
        "--warehouse", type=Path, default=REPO / ".dbxdec" / "warehouse", help="table folder"
    )
    args = parser.parse_args(argv)
    job = sales_pipeline.sales_pipeline
    keys = sales_pipeline.BACKFILL.keys(args.start, _shift(args.start, args.days - 1))
    warehouse: Path = args.warehouse.resolve()

    print("Starting the embedded Spark ...", flush=True)
    spark = local_spark_session()
    print(f"Backfilling {job.name} over {len(keys)} days ({keys[0]}..{keys[-1]}), one run per day")
    started = time.perf_counter()
    for number, key in enumerate(keys, 1):
        result = run_job_locally(
            default_registry,
            job.name,
            params={"backfill_key": key, "events_per_day": args.events_per_day},
            warehouse=warehouse,
        )
        seconds = sum(t.seconds for t in result.tasks)
        status = "ok" if result.succeeded else "FAILED"
        print(f"  [{number:>2}/{len(keys)}] {key}  {status:<6} {seconds:5.2f}s", flush=True)
        if not result.succeeded:
            for failed in result.failed:
                print(f"      {failed.task_key}: {failed.error}", file=sys.stderr)
            return 1
    print(f"Done in {time.perf_counter() - started:.1f}s.\n\nTables:")
    for table in TABLES:
        print(f"  main.dbxdec_demo.{table:<22} {warehouse / 'main' / 'dbxdec_demo' / table}")

    folder = warehouse / "main" / "dbxdec_demo"
    daily = spark.read.parquet(str(folder / "sales_daily"))
    print("\nDaily revenue, last 2 days (revenue_3d: rolling 3 days, read through lookback):")
    daily.where(daily.event_date >= keys[max(0, len(keys) - 2)]).orderBy(
        "event_date", "region"
    ).select("event_date", "region", "orders", "revenue", "revenue_3d").show(truncate=False)
    print("Totals per region over every day (read with all_partitions):")
    spark.read.parquet(str(folder / "sales_region_totals")).orderBy("region").show(truncate=False)
    return 0


def _shift(day: str, days: int) -> str:
    from datetime import date, timedelta

    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()


if __name__ == "__main__":
    sys.exit(main())
