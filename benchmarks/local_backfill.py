"""Local backfill of the example pipeline: dbxdec runs versus a hand-written Spark job.

Three ways to fill the same four tables over N daily partitions (default 90):

(a) one dbxdec run per key (N runs of the four tasks),
(b) ranged dbxdec runs of B keys (``backfill_start_key``; default B=30),
(c) a hand-written single PySpark job producing the same Delta tables (``replaceWhere``,
    as dbxdec writes them): the floor.

For reference it also times (c1): the hand-written job run once per key. (a) - (c1) is
what dbxdec itself adds per key; (c1) - (c) is Spark's own cost of running a job per key
(each key writes four tables, i.e. at least four Spark jobs).

All three run on one embedded SparkSession after a warm-up, each into its own
warehouse, and the script checks that the tables are identical (row count and a
checksum per table). It prints the wall times, (a)/(c), (b)/(c) and the per-key
overhead of (a) over (c), against the targets (b)/(c) <= 1.3 and <= 0.25 s per key.

Usage: python benchmarks/local_backfill.py [--days 90] [--batch 30] [--events-per-day 20000]
"""

from __future__ import annotations

import argparse
import shutil
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The hand-written Delta job and the table fingerprint, shared with the 30-day benchmark.
from local_backfill_delta import TABLES, fingerprint, hand_written  # noqa: E402

TARGET_RANGED = 1.3
TARGET_PER_KEY = 0.25


def per_key(keys: list[str], warehouse: Path, events: str) -> None:
    """(a): one run per key."""
    for key in keys:
        _run({"backfill_key": key, "events_per_day": events}, warehouse)


def ranged(keys: list[str], warehouse: Path, events: str, batch: int) -> None:
    """(b): one ranged run per ``batch`` consecutive keys."""
    for first in range(0, len(keys), batch):
        chunk = keys[first : first + batch]
        params = {"backfill_start_key": chunk[0], "backfill_key": chunk[-1]}
        _run({**params, "events_per_day": events}, warehouse)


def _run(params: dict[str, str], warehouse: Path) -> None:
    result = run_job_locally(
        default_registry, pipeline.sales_pipeline.name, params=params, warehouse=warehouse
    )
    if not result.succeeded:
        raise SystemExit(f"run {params} failed: {result.failed}")


def timed(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def last_job(spark: Any) -> int:
    """The id of the newest Spark job (ids are sequential: differences count jobs)."""
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup(None)
    return max(ids) if ids else -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--batch", type=int, default=30)
    parser.add_argument("--events-per-day", default="20000")
    parser.add_argument("--start", default="2024-01-01")
    args = parser.parse_args()
    backfill = pipeline.BACKFILL
    keys = backfill.keys(args.start, backfill.shift_key(args.start, args.days - 1))
    spark = local_spark_session()
    root = Path(tempfile.mkdtemp(prefix="dbxdec-bench-"))
    events = args.events_per_day
    try:
        warm = keys[:3]  # JIT and code caches warm for every mode alike
        per_key(warm, root / "warm-a" / "warehouse", events)
        hand_written(spark, warm[:1], root / "warm-c1" / "warehouse", events)
        ranged(warm, root / "warm-b" / "warehouse", events, len(warm))
        hand_written(spark, warm, root / "warm-c" / "warehouse", events)

        wa, wb, wc = (root / m / "warehouse" for m in ("a", "b", "c"))
        first = last_job(spark)
        a = timed(lambda: per_key(keys, wa, events))
        after_a = last_job(spark)
        b = timed(lambda: ranged(keys, wb, events, args.batch))
        after_b = last_job(spark)
        c = timed(lambda: hand_written(spark, keys, wc, events))
        wc1 = root / "c1" / "warehouse"
        c1 = timed(lambda: [hand_written(spark, [key], wc1, events) for key in keys] and None)
        prints = [fingerprint(spark, w) for w in (wa, wb, wc)]
    finally:
        shutil.rmtree(root, ignore_errors=True)

    n = len(keys)
    overhead = (a - c) / n
    print(f"example pipeline, {n} daily partitions x {events} events, batch {args.batch}")
    runs_b = -(-n // args.batch)
    print(
        f"  (a) one run per key     {a:8.2f} s   ({a / n:.3f} s per key, "
        f"{(after_a - first) / n:.1f} Spark jobs per key)"
    )
    print(
        f"  (b) ranged runs of {args.batch:<4} {b:8.2f} s   "
        f"({(after_b - after_a) / runs_b:.1f} Spark jobs per run)"
    )
    print(f"  (c) hand-written job    {c:8.2f} s")
    print(f"  (c1) hand-written, per key {c1:7.2f} s   (reference: Spark's cost of per-key jobs)")
    print(f"  (a)/(c) = {a / c:.2f}")
    figure(
        "local_backfill", "ranged / hand-written", b / c, TARGET_RANGED, better="lower", unit="x"
    )
    figure(
        "local_backfill",
        "per-key overhead over hand-written",
        overhead,
        TARGET_PER_KEY,
        better="lower",
        unit="s",
    )
    print(f"  dbxdec's own overhead per key, (a) - (c1): {(a - c1) / n:.3f} s/key")
    same = prints[0] == prints[1] == prints[2]
    print(f"  tables identical across (a), (b), (c): {'yes' if same else 'NO'}")
    for table in TABLES:
        print(f"    {table:<22} rows {prints[2][table][0]:>9}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
