"""A self-healing schedule on real local Delta: a scheduled run of a job with
``catch_up=CatchUp(...)`` processes the keys missing since the last key with data, oldest
first, capped; the rest are pending."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import CatchUp, DailyBackfill, MonthlyBackfill, Registry, task
from databricks_bundle_decorators.backfill import TimeBackfill
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.runtime import run_job_locally
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
_job("success_job", None, DailyBackfill("2024-03-01", catch_up=CatchUp("last_success", max_keys=3)))
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


def test_last_success_takes_the_keys_after_the_newest_successful_runs_key(
    spark: Any, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from databricks_bundle_decorators.testing import JobsEmulator

    from .run_history_setup import TOKEN, build_history

    job = registry.get("success_job")
    path = TableName.parse("main.heal.success_job").local_path(warehouse)
    with JobsEmulator(token=TOKEN) as emu:
        emu.runs_list_order = "end_time"  # the held run that succeeded first is listed first
        job_id, _ = build_history(emu, "success_job")
        # Without the job's id (a local run leaves {{job.id}} unrendered): one line.
        refused = run_job_locally(registry, job.name, params=_at("2024-03-12"), warehouse=warehouse)
        (message,) = [r.error for r in refused.tasks]
        assert message is not None and "\n" not in message
        assert "pass -p dbxdec_job_id=N with DATABRICKS_HOST and DATABRICKS_TOKEN" in message
        # The token reaches the task through the environment, as in a job run.
        monkeypatch.setenv("DATABRICKS_HOST", emu.url)
        monkeypatch.setenv("DATABRICKS_TOKEN", TOKEN)
        # This catch-up run is scheduled run X of the job (no backfill_key), still running.
        emu.set_outcome("", job_id=job_id, hold=True)
        scheduled = emu.workspace_client().jobs.run_now(job_id).run_id
        params = {**_at("2024-03-12"), "dbxdec_job_id": str(job_id)}
        first = run_job_locally(
            registry, job.name, params=params, warehouse=warehouse, run_id=f"{scheduled}-0"
        )
        assert first.succeeded, first
        # The newest successful run wrote up to 03-06: 03-07..03-12 are due, the oldest 3 now.
        days = sorted(r[0] for r in spark.read.format("delta").load(str(path)).collect())
        assert days == ["2024-03-07", "2024-03-08", "2024-03-09"]
        left = pending_keys(job, RunEnvironment(spark, warehouse))
        assert left == ("2024-03-10", "2024-03-11", "2024-03-12")
        # X succeeds; the next run starts from the last key X stored (03-09), not from
        # the key current at X's start.
        emu.release("")
        emu.wait_until_idle()
        params = {**_at("2024-03-13"), "dbxdec_job_id": str(job_id)}
        second = run_job_locally(registry, job.name, params=params, warehouse=warehouse)
    assert second.succeeded, second
    assert list(second.keys) == ["2024-03-10", "2024-03-11", "2024-03-12"]
    left = pending_keys(job, RunEnvironment(spark, warehouse))
    assert left == ("2024-03-13",)
