"""A project whose jobs write Delta tables, for the undo tests.

``undo_orders`` writes ``main.undo.orders`` (two rows per day, labelled by the ``label``
parameter, so a run's rows show which run wrote them); ``undo_fresh`` writes a table
only backfills create; the job named ``undo`` shares its name with the subcommand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MODULE = "undo_test_pipelines"

PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, job, params, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

orders_io = SparkTableIoManager("main.undo.orders", partition_column="day")
fresh_io = SparkTableIoManager("main.undo.fresh", partition_column="day")
DAYS = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")


def _rows(label):
    from pyspark.sql import SparkSession

    keys = get_written_keys()
    rows = [(key, label, n) for key in keys for n in range(2)]
    return SparkSession.builder.getOrCreate().createDataFrame(
        rows, "day string, label string, n int"
    )


@task
def noop() -> None:
    pass


@job(params={"label": "first"}, backfill=DAYS)
def undo_orders():
    @task(io_manager=orders_io)
    def write_orders():
        return _rows(params["label"])

    write_orders()
    noop()


@job(backfill=DAYS)
def undo_fresh():
    @task(io_manager=fresh_io)
    def write_fresh():
        return _rows("fresh")

    write_fresh()


@job(backfill=DAYS)
def undo():
    noop()
"""


def write_undo_project(root: Path) -> Path:
    """A dbxdec project at ``root`` (tables under ``root/.dbxdec/warehouse``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "undoproj"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    return root


def table_rows(spark: Any, root: Path, name: str) -> list[tuple[Any, ...]]:
    """Every row of local table ``name`` of the project, sorted."""
    from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

    path = local_table_path(name, root / ".dbxdec" / "warehouse")
    return sorted(tuple(row) for row in spark.read.format("delta").load(str(path)).collect())


def table_history(spark: Any, root: Path, name: str) -> list[tuple[int, str, str | None]]:
    """``(version, operation, userMetadata)`` of every commit of the table, oldest first."""
    from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

    path = local_table_path(name, root / ".dbxdec" / "warehouse")
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return sorted((r.version, r.operation, r.userMetadata) for r in rows)
