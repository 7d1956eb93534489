"""A project for the full-refresh tests: ``fr_orders`` writes ``main.fr.raw`` (``per_day``
rows per day, labelled by ``label``) and ``main.fr.daily`` (rows per day and label, read
from ``raw``), so a stage run's ``daily`` shows whether it read ``raw``'s staging table.
A ``raw`` run fails for the key in ``$FR_FAIL_KEY``; its frame check fails while
``$FR_REFUSE`` is set (in the swap run: judged on the whole staging table)."""

from __future__ import annotations

from pathlib import Path

MODULE = "full_refresh_test_pipelines"
RAW = "main.fr.raw"
DAILY = "main.fr.daily"

PIPELINES = """
import os

from databricks_bundle_decorators import DailyBackfill, job, params, task
from databricks_bundle_decorators.checks import FrameCheck
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

raw_io = SparkTableIoManager("main.fr.raw", partition_column="day")
daily_io = SparkTableIoManager("main.fr.daily", partition_column="day")


@job(params={"label": "old", "per_day": "2"}, backfill=DailyBackfill(start_date="2024-01-01"))
def fr_orders():
    @task(io_manager=raw_io, checks=[FrameCheck(lambda frame: os.environ.get("FR_REFUSE"))])
    def raw():
        from pyspark.sql import SparkSession

        keys = get_written_keys()
        if os.environ.get("FR_FAIL_KEY") in keys:
            raise RuntimeError("planned failure")
        rows = [(k, params["label"], n) for k in keys for n in range(int(params["per_day"]))]
        return SparkSession.builder.getOrCreate().createDataFrame(
            rows, "day string, label string, n int"
        )

    @task(io_manager=daily_io)
    def daily(raw):
        return raw.groupBy("day", "label").count()

    daily(raw())
"""


def write_full_refresh_project(root: Path) -> Path:
    """A dbxdec project at ``root`` (tables under ``root/.dbxdec/warehouse``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "frproj"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    return root
