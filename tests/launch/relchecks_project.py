"""A project whose jobs write real Delta tables with checks that compare keys, a warning
check and a quarantining check, for the tests of those checks and of ``--diff-gate``.

Every job writes ``rows`` rows per key (job parameter); ``orders`` makes the first
``bad`` rows of each key negative (they fail ``amount >= 0`` and are quarantined);
``ahead`` writes 10 rows per day of the month (2024-01-02: 20) and warns when a key's
count is not within 20% of the next committed key's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

MODULE = "relchecks_pipelines"
RESULTS = "main.ops.rel_results"
PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, job, params, task
from databricks_bundle_decorators.checks import Expect, RowCountWithin
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

DAYS = DailyBackfill("2024-01-01", "2024-01-31")


def _rows(count, bad=0):
    from pyspark.sql import SparkSession

    rows = [(k, n, -1 if n < bad else n) for k in get_written_keys() for n in range(count)]
    return SparkSession.builder.getOrCreate().createDataFrame(
        rows, "day string, n int, amount int"
    )


@job(params={"rows": "10"}, backfill=DAYS)
def rel_steady():
    @task(
        io_manager=SparkTableIoManager("main.rel.steady", partition_column="day"),
        checks=[RowCountWithin(20, "median_prev_3")],
    )
    def steady_rows():
        return _rows(int(params["rows"]))

    steady_rows()


@job(params={"rows": "10"}, backfill=DAYS)
def rel_watched():
    @task(
        io_manager=SparkTableIoManager("main.rel.watched", partition_column="day"),
        checks=[RowCountWithin(20, "median_prev_3", severity="warn")],
    )
    def watched_rows():
        return _rows(int(params["rows"]))

    watched_rows()


@job(params={"rows": "10"}, backfill=DAYS)
def rel_plain():
    @task(io_manager=SparkTableIoManager("main.rel.plain", partition_column="day"))
    def plain_rows():
        return _rows(int(params["rows"]))

    plain_rows()


@job(backfill=DAYS)
def rel_ahead():
    @task(
        io_manager=SparkTableIoManager("main.rel.ahead", partition_column="day"),
        checks=[RowCountWithin(20, "median_next_1", severity="warn")],
    )
    def ahead_rows():
        from pyspark.sql import SparkSession

        rows = [(k, n, n) for k in get_written_keys() for n in range(10 * int(k[-2:]))]
        return SparkSession.builder.getOrCreate().createDataFrame(
            rows, "day string, n int, amount int"
        )

    ahead_rows()


@job(params={"rows": "10", "bad": "0"}, backfill=DAYS)
def rel_orders():
    @task(
        io_manager=SparkTableIoManager("main.rel.orders", partition_column="day"),
        checks=[Expect("amount >= 0", label="amount", on_fail="quarantine")],
    )
    def write_orders():
        return _rows(int(params["rows"]), int(params["bad"]))

    write_orders()
"""


def write_project(root: Path) -> Path:
    """The project at ``root`` (tables under ``root/.dbxdec/warehouse``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "relproj"\nversion = "0.1"\n\n'
        f'[tool.dbxdec]\npipelines = ["{MODULE}"]\ncheck_results = "{RESULTS}"\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    return root


def dbxdec(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str]:
    """``dbxdec ARGS --project ROOT`` in-process: exit code, stdout and stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*args, "--project", str(root)])
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), out + err


def backfill(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str]:
    """A local backfill (``--yes``-free: the plans here are small)."""
    return dbxdec(capsys, root, "backfill", *args, "--local", "--poll-interval", "0.05")


def rows_per_key(spark: Any, root: Path, table: str, version: int | None = None) -> dict[str, int]:
    """Rows per ``day`` of local table ``table`` (at ``version``, if given)."""
    path = local_table_path(table, root / ".dbxdec" / "warehouse")
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    found = reader.load(str(path)).groupBy("day").count().collect()
    return {str(r[0]): int(r[1]) for r in found}


def results(spark: Any, root: Path, job: str) -> list[dict[str, Any]]:
    """The check results table's rows of ``job``."""
    path = local_table_path(RESULTS, root / ".dbxdec" / "warehouse")
    frame = spark.read.format("delta").load(str(path)).where(f"job = '{job}'")
    return [row.asDict() for row in frame.collect()]
