"""The deadline monitor's runs on real Delta tables: a run fails once per new overdue key
and state (its message lists them), succeeds when nothing is new, and a backfill of an
old key does not hide a newer late one."""

from __future__ import annotations

import contextlib
import io
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    Deadline,
    DeadlineMonitor,
    Registry,
    job,
    task,
)
from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys
from databricks_bundle_decorators.runtime import monitor_entry
from databricks_bundle_decorators.runtime.checks.check_results import write_check_results
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from databricks_bundle_decorators.runtime.running.deadline_monitor import (
    NewOverdueKeys,
    run_monitor,
)

AMS = "Europe/Amsterdam"
ORDERS = "main.late.orders"
REGISTRY = Registry()
MONITOR = DeadlineMonitor(
    "main.ops.deadline_alerts", email_notifications={"on_failure": ["data@example.com"]}
)


@job(
    backfill=DailyBackfill("2024-03-25", "2024-04-05", tz=AMS),
    deadline=Deadline("09:00", monitor=MONITOR),
    check_results="main.ops.check_results",
    registry=REGISTRY,
)
def late_orders() -> None:
    @task(io_manager=SparkTableIoManager(ORDERS, partition_column="day"))
    def write_orders() -> Any:
        from pyspark.sql import SparkSession

        rows = [(key, 1) for key in get_written_keys()]
        return SparkSession.builder.getOrCreate().createDataFrame(rows, "day string, n int")

    write_orders()


def _append(spark: Any, warehouse: Path, *keys: str) -> None:
    """Rows for ``keys`` in the job's output table, as its task writes them (the job
    itself runs in tests/runtime/test_presence.py; here only the data matters)."""
    frame = spark.createDataFrame([(key, 1) for key in keys], "day string, n int")
    frame.write.format("delta").mode("append").save(str(local_table_path(ORDERS, warehouse)))


def _run(environment: RunEnvironment, now: datetime) -> str:
    """One monitor run: ``""`` when it succeeds, else its failure message."""
    try:
        run_monitor(late_orders, environment, now)
    except NewOverdueKeys as exc:
        return exc.render()
    return ""


@pytest.mark.spark
def test_the_monitor_fails_once_per_new_key_and_state(spark: Any, warehouse: Path) -> None:
    environment = RunEnvironment(spark, warehouse, False, "monitor-test")
    _append(spark, warehouse, "2024-03-25", "2024-03-26", "2024-03-27", "2024-03-28")
    now = datetime(2024, 3, 31, 7, 0, 1, tzinfo=timezone.utc)  # 2024-03-30 due a second ago

    first = _run(environment, now)
    assert first == (
        "2 new overdue keys of late_orders: 2024-03-29 (no data, due 2024-03-30 09:00 CET), "
        "2024-03-30 (no data, due 2024-03-31 09:00 CEST)"
    )
    assert _run(environment, now) == ""  # the same keys in the same state: no second alert

    failing = CheckResult("min_row_count(5)", "2024-03-27", 1.0, ">= 5", False, "write_orders")
    write_check_results("late_orders", "write_orders", [failing], "main.ops.check_results",
                        environment)  # fmt: skip
    assert _run(environment, now) == (
        "1 new overdue key of late_orders: 2024-03-27 (checks failed: min_row_count(5), "
        "due 2024-03-28 09:00 CET)"
    )

    _append(spark, warehouse, "2024-03-29")  # a backfill of the oldest late key
    later = datetime(2024, 4, 1, 7, 0, 1, tzinfo=timezone.utc)  # 2024-03-31 now due too
    assert _run(environment, later) == (
        "1 new overdue key of late_orders: 2024-03-31 (no data, due 2024-04-01 09:00 CEST)"
    )
    # the entry point a monitor job runs, at the run's trigger time: nothing new
    argv = [
        "--dbxdec_job=late_orders",
        f"--dbxdec_module={__name__}",
        "--backfill_run_time=1711954801000",  # 2024-04-01 07:00:01 UTC
    ]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        monitor_entry.run(argv, environment=environment)
    assert out.getvalue() == (  # the backfill of 2024-03-29 left 2024-03-30 late
        "dbxdec-monitor late_orders: 3 overdue keys, none new: 2024-03-27, 2024-03-30, 2024-03-31\n"
    )


@pytest.mark.spark
def test_the_entry_point_exits_1_listing_new_keys_then_0_when_none_is_new(
    spark: Any, warehouse: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dbxdec-monitor`` as a job runs it (``main``, no environment given): the local
    warehouse from ``$DBXDEC_WAREHOUSE``, the fixture's session reused."""
    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(warehouse))
    _append(spark, warehouse, "2024-03-25", "2024-03-26", "2024-03-27", "2024-03-28")
    argv = [
        "--dbxdec_job=late_orders",
        f"--dbxdec_module={__name__}",
        "--backfill_run_time=1711868401000",  # 2024-03-31 07:00:01 UTC
    ]

    def exit_code() -> int | str | None:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            monitor_entry.main(argv)
        return exited.value.code

    assert exit_code() == 1
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err == (
        "Error: 2 new overdue keys of late_orders: 2024-03-29 (no data, due 2024-03-30 "
        "09:00 CET), 2024-03-30 (no data, due 2024-03-31 09:00 CEST)\n"
    )
    assert exit_code() == 0  # the next run, the same keys late: nothing new, no alert
    assert capsys.readouterr() == (
        "dbxdec-monitor late_orders: 2 overdue keys, none new: 2024-03-29, 2024-03-30\n",
        "",
    )


def test_the_entry_point_refuses_bad_arguments_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        monitor_entry.main(["--dbxdec_job=late_orders"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == "Error: dbxdec-monitor needs --dbxdec_module\n"
    with pytest.raises(SystemExit) as exited:
        monitor_entry.main(
            ["--dbxdec_job=late_orders", f"--dbxdec_module={__name__}", "--backfill_run_time=x"]
        )
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and err.count("\n") == 1 and "backfill_run_time" in err
