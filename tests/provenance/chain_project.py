"""A chain on real local Delta for the provenance tests: a source table ``main.raw.events``
(partitioned by ``day``, written by the test), job ``pv_a`` (daily) reads it and writes
``main.pv.a_out``; ``pv_b`` (daily, lookback 1) reads that and writes ``main.pv.b_out``;
``pv_c`` (monthly) reads that and writes ``main.pv.c_out``. Each row carries what it was
computed from, so equal tables mean equal inputs. ``pv_b``'s body has a line the tests
rewrite to change B's code (``CHANGE_B``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.launch.downstream_project import own_jobs, table_rows

__all__ = ["own_jobs", "table_rows", "write_chain_project", "write_events"]

SOURCE, A_OUT, B_OUT, C_OUT = "main.raw.events", "main.pv.a_out", "main.pv.b_out", "main.pv.c_out"
CHANGE_B = ('suffix = "b1"', 'suffix = "b2"')

PIPELINES = """
from datetime import datetime, timedelta

from databricks_bundle_decorators import DailyBackfill, MonthlyBackfill, job, source, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

EVENTS = source("main.raw.events", event_time="day")
A_SRC = source("main.pv.a_out", event_time="ts")
B_SRC = source("main.pv.b_out", event_time="ts")
SCHEMA = "day string, ts timestamp, labels string"


def _spark():
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


@job(backfill=DailyBackfill("2024-01-01", "2024-03-31"), sources=[EVENTS])
def pv_a():
    @task(io_manager=SparkTableIoManager("main.pv.a_out", partition_column="day"))
    def write_a():
        rows = EVENTS.read().collect()
        out = []
        for key in get_written_keys():
            seen = sorted(r.v for r in rows if str(r.day) == key)
            out.append((key, datetime.fromisoformat(key), "+".join(seen) or "none"))
        return _spark().createDataFrame(out, SCHEMA)

    write_a()


@job(backfill=DailyBackfill("2024-01-01", "2024-03-31", lookback=1), sources=[A_SRC])
def pv_b():
    @task(io_manager=SparkTableIoManager("main.pv.b_out", partition_column="day"))
    def write_b():
        suffix = "b1"
        rows = A_SRC.read().collect()
        out = []
        for key in get_written_keys():
            day = datetime.fromisoformat(key)
            seen = sorted(r.labels for r in rows if day - timedelta(days=1) <= r.ts < day + timedelta(days=1))
            out.append((key, day, "|".join(seen) + "/" + suffix))
        return _spark().createDataFrame(out, SCHEMA)

    write_b()


@job(backfill=MonthlyBackfill("2024-01-01", "2024-03-01"), sources=[B_SRC])
def pv_c():
    @task(io_manager=SparkTableIoManager("main.pv.c_out", partition_column="day"))
    def write_c():
        rows = B_SRC.read().collect()
        out = []
        for key in get_written_keys():
            seen = sorted(r.labels for r in rows if r.day[:7] == key[:7])
            out.append((key, datetime.fromisoformat(key), ";".join(seen) or "none"))
        return _spark().createDataFrame(out, SCHEMA)

    write_c()
"""


def write_chain_project(root: Path, module: str) -> Path:
    """The project at ``root`` (tables under ``root/.dbxdec/warehouse``), pipelines in
    ``module`` (a name no other test uses: the job registry is process-wide)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "pvproj"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{module}"]\n'
    )
    (root / f"{module}.py").write_text(PIPELINES)
    return root


def source_path(root: Path) -> Path:
    from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

    return local_table_path(SOURCE, root / ".dbxdec" / "warehouse")


def write_events(spark: Any, root: Path, rows: list[tuple[str, str]], *, days: list[str]) -> None:
    """Replace the source's ``days`` with ``rows`` (``(day, value)``) in one commit."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(rows, "day string, v string").withColumn("day", F.to_date("day"))
    listed = ", ".join(f"DATE'{d}'" for d in days)
    (
        frame.write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", f"day IN ({listed})")
        .partitionBy("day")
        .save(str(source_path(root)))
    )
