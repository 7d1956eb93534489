"""A self-healing schedule on real local Delta: a scheduled run of a job with
``catch_up=CatchUp(...)`` processes the keys missing since the last key with data, oldest
first, capped; the rest are pending."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import CatchUp, DailyBackfill, MonthlyBackfill, Registry, task
from databricks_bundle_decorators.backfill import TimeBackfill
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.runtime import run_job_locally
from databricks_bundle_decorators.runtime.core.context import RunEnvironment
from databricks_bundle_decorators.runtime.core.keys import get_written_keys
from databricks_bundle_decorators.runtime.storage.table_name import TableName
from databricks_bundle_decorators.runtime.triggers.local_trigger import pending_line
from databricks_bundle_decorators.runtime.triggers.triggered import pending_keys
from tests.cli.clirun import Cli

pytestmark = pytest.mark.spark
registry = Registry()


def _job(name: str, cap: int | None, backfill: TimeBackfill | None = None) -> None:
    if backfill is None:
        backfill = DailyBackfill("2024-03-01", lookback=1, catch_up=CatchUp(max_keys=cap))

    @registry.job(name=name, backfill=backfill)
    def body() -> None:
        @task(
            name="write",
            io_manager=SparkTableIoManager(f"main.heal.{name}", partition_column="day"),
        )
        def write() -> Any:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession()
            assert spark is not None
            return spark.createDataFrame([(k, 1) for k in get_written_keys()], "day STRING, n INT")

        write()


_job("gap_job", None)
_job("capped_job", 7)
_job("monthly_job", None, MonthlyBackfill("2024-01-01", lookback=1, catch_up=CatchUp(max_keys=2)))


def _at(day: str) -> dict[str, str]:
    return {"backfill_run_time": f"{day}T06:00:00+00:00"}


def _seed(job: str, first: str, last: str, warehouse: Path) -> None:
    params = {"backfill_start_key": first, "backfill_key": last, "backfill_exact": "true"}
    result = run_job_locally(registry, job, params=params, warehouse=warehouse)
    assert result.succeeded, result


def _last_commit_days(spark: Any, warehouse: Path, job: str) -> list[str]:
    path = TableName.parse(f"main.heal.{job}").local_path(warehouse)
    (version,) = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0][:1]
    changes = spark.sql(
        f"SELECT DISTINCT day FROM delta.`{path}` VERSION AS OF {version} "
        f"EXCEPT SELECT DISTINCT day FROM delta.`{path}` VERSION AS OF {version - 1}"
    )
    return sorted(r[0] for r in changes.collect())


def test_three_failed_days_and_one_skipped_are_the_next_runs_four_keys(
    spark: Any, warehouse: Path
) -> None:
    _seed("gap_job", "2024-03-01", "2024-03-16", warehouse)
    # The scheduled runs of 03-17, 03-18 and 03-19 failed and the fire of 03-20 was skipped
    # (no data for any of them); the next scheduled run, at 03-20's logical time, processes
    # exactly the 4 missing keys, oldest first.
    result = run_job_locally(registry, "gap_job", params=_at("2024-03-20"), warehouse=warehouse)
    assert result.succeeded, result
    assert _last_commit_days(spark, warehouse, "gap_job") == [
        "2024-03-17", "2024-03-18", "2024-03-19", "2024-03-20"
    ]  # fmt: skip


def test_twenty_missing_with_max_keys_7_takes_the_oldest_7_and_13_wait(
    spark: Any, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed("capped_job", "2024-03-01", "2024-03-01", warehouse)
    result = run_job_locally(registry, "capped_job", params=_at("2024-03-21"), warehouse=warehouse)
    assert result.succeeded, result
    assert _last_commit_days(spark, warehouse, "capped_job") == [
        f"2024-03-{d:02d}" for d in range(2, 9)
    ]
    left = pending_keys(registry.get("capped_job"), RunEnvironment(spark, warehouse))
    assert left == tuple(f"2024-03-{d:02d}" for d in range(9, 22))
    assert len(left) == 13
    line = pending_line(registry.get("capped_job"), warehouse)  # what status --local prints
    assert line == (
        "13 keys left for the next runs (max_keys): "
        + ", ".join(f"2024-03-{d:02d}" for d in range(9, 19))
        + " and 3 more"
    )
    # ... and `dbxdec status capped_job --local` prints it, from the project's warehouse.
    root = warehouse.parent.parent  # the warehouse fixture is <root>/.dbxdec/warehouse
    (root / "pyproject.toml").write_text(
        '[project]\nname = "healproj"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["tests.runtime.trigger_cli_pipeline"]\n'
    )
    code, out, err = Cli(root, capsys)("status", "capped_job", "--local")
    assert code == 0, err
    assert line in out.splitlines()


def test_a_monthly_catch_up_takes_the_missing_months_oldest_first(
    spark: Any, warehouse: Path
) -> None:
    _seed("monthly_job", "2024-01-01", "2024-02-01", warehouse)
    result = run_job_locally(registry, "monthly_job", params=_at("2024-05-10"), warehouse=warehouse)
    assert result.succeeded, result
    assert _last_commit_days(spark, warehouse, "monthly_job") == ["2024-03-01", "2024-04-01"]
    left = pending_keys(registry.get("monthly_job"), RunEnvironment(spark, warehouse))
    assert left == ("2024-05-01",)
