"""A project whose job has a task-value task (generated as a notebook task) with a check,
and a downstream wheel task, for the tests that run it on the emulator.

``nb_orders`` writes ``main.nb.orders`` (``rows`` rows a day, none on 2024-01-03, so its
``min_row_count(1)`` check fails that day) from the notebook task ``write_orders`` (it
sets a task value), then ``main.nb.totals`` from it in the wheel task ``write_totals``.
"""

from __future__ import annotations

from pathlib import Path

MODULE = "nb_test_pipelines"
EMPTY_DAY = "2024-01-03"

PIPELINES = f"""
from databricks_bundle_decorators import DailyBackfill, job, params, set_task_value, task
from databricks_bundle_decorators.checks import MinRowCount
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

orders_io = SparkTableIoManager("main.nb.orders", partition_column="day")
totals_io = SparkTableIoManager("main.nb.totals", partition_column="day")
DAYS = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")


def _spark():
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


@job(params={{"rows": "2"}}, backfill=DAYS)
def nb_orders():
    @task(io_manager=orders_io, checks=[MinRowCount(1)])
    def write_orders():
        keys = get_written_keys()
        rows = [(k, n) for k in keys if k != "{EMPTY_DAY}" for n in range(int(params["rows"]))]
        set_task_value("rows", len(rows))
        return _spark().createDataFrame(rows, "day string, n int")

    @task(io_manager=totals_io)
    def write_totals(orders):
        return orders.groupBy("day").count()

    write_totals(write_orders())
"""


def write_notebook_project(root: Path) -> Path:
    """A dbxdec project at ``root`` (tables under ``root/.dbxdec/warehouse``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "nbproj"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    return root
