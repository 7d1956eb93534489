"""Which keys have rows in a job's output tables, read from real Delta tables: the
runtime half of ``dbxdec catchup --by data`` (tests/launch/test_presence.py drives it
locally and through a run on the Jobs API emulator).

The job ``presence_orders`` writes two tables per day: ``main.presence.orders`` (key
strings in ``day``, event times in ``ts``) and ``main.presence.totals`` (daily keys as a
``DATE`` column). Its ``rows`` parameter sets the rows per day (``0``: the day is
written empty, which clears it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill, Registry, job, params, task
from databricks_bundle_decorators.backfill.wire import (
    KeyRange,
    PresenceOrder,
    PresenceReport,
    decode_order,
    encode_order,
)
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys
from databricks_bundle_decorators.runtime import entrypoint
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from databricks_bundle_decorators.runtime.programs.presence import (
    JobPresence,
    keyed_tables,
    read_presence,
)
from databricks_bundle_decorators.runtime.running.dispatch import job_parameters, run_keys
from databricks_bundle_decorators.runtime.running.local import run_job_locally

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = pytest.mark.connect_lane

MODULE = __name__
ORDERS = "main.presence.orders"
TOTALS = "main.presence.totals"
FIVE_DAYS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"]
REGISTRY = Registry()
DAYS = DailyBackfill(start_date="2024-01-01", end_date="2024-01-31")
orders_io = SparkTableIoManager(ORDERS, partition_column="day", time_column="ts")
totals_io = SparkTableIoManager(TOTALS, partition_column="day")
snapshot_io = SparkTableIoManager("main.presence.snapshot")


@job(params={"rows": "2"}, backfill=DAYS, registry=REGISTRY)
def presence_orders() -> None:
    @task(io_manager=orders_io)
    def write_orders() -> Any:
        from datetime import datetime, timezone

        from pyspark.sql import SparkSession

        rows = [
            (key, datetime.fromisoformat(f"{key}T12:00:00").replace(tzinfo=timezone.utc), n)
            for key in get_written_keys()
            for n in range(int(params["rows"]))
        ]
        return SparkSession.builder.getOrCreate().createDataFrame(
            rows, "day string, ts timestamp, n int"
        )

    @task(io_manager=totals_io)
    def write_totals(orders: Any) -> Any:
        from pyspark.sql import functions as F

        return orders.groupBy(F.to_date("day").alias("day")).agg(F.count("*").alias("orders"))

    @task(io_manager=snapshot_io)
    def write_snapshot(orders: Any) -> Any:
        return orders.groupBy().count()

    @task
    def notify() -> None:
        pass

    orders = write_orders()
    write_totals(orders)
    write_snapshot(orders)
    notify()


def write_days(
    warehouse: Path, keys: Sequence[str], *, rows: int = 2, tasks: Sequence[str] | None = None
) -> None:
    """One local run over ``keys`` (consecutive) with ``rows`` rows per day."""
    given = {"backfill_start_key": keys[0], "backfill_key": keys[-1], "rows": str(rows)}
    result = run_job_locally(
        REGISTRY, "presence_orders", params=given, tasks=tasks, warehouse=warehouse
    )
    assert result.succeeded, result


def presence(spark: Any, warehouse: Path, keys: Sequence[str] = FIVE_DAYS) -> JobPresence:
    return read_presence(presence_orders, keys, RunEnvironment(spark, warehouse, False))


@pytest.mark.spark
@pytest.mark.not_in_connect_lane("lane budget: presence counts are the other presence tests'")
def test_rows_per_key_come_from_one_count_per_table(spark: Any, warehouse: Path) -> None:
    write_days(warehouse, ["2024-01-01"])
    write_days(warehouse, ["2024-01-03"], rows=0)  # written, but empty
    write_days(warehouse, ["2024-01-05"], rows=3)
    found = presence(spark, warehouse)
    assert {r.table: (r.exists, dict(r.rows)) for r in found.reports} == {
        ORDERS: (True, {"2024-01-01": 2, "2024-01-05": 3}),
        TOTALS: (True, {"2024-01-01": 1, "2024-01-05": 1}),  # DATE values read as keys
    }
    assert found.missing(FIVE_DAYS) == ["2024-01-02", "2024-01-03", "2024-01-04"]
    assert found.notes == (
        "task 'write_snapshot': table main.presence.snapshot has no partition_column (one "
        "snapshot for all keys); not checked",
    )


@pytest.mark.spark
def test_a_key_in_only_one_of_the_tables_is_missing(spark: Any, warehouse: Path) -> None:
    write_days(warehouse, FIVE_DAYS[:3])
    write_days(warehouse, FIVE_DAYS[3:], tasks=["write_orders"])
    assert presence(spark, warehouse).missing(FIVE_DAYS) == ["2024-01-04", "2024-01-05"]


@pytest.mark.spark
def test_tables_that_do_not_exist_yet_have_no_key(spark: Any, warehouse: Path) -> None:
    found = presence(spark, warehouse)
    assert [(r.table, r.exists, dict(r.rows)) for r in found.reports] == [
        (ORDERS, False, {}),
        (TOTALS, False, {}),
    ]
    assert found.missing(FIVE_DAYS) == FIVE_DAYS


@pytest.mark.spark
def test_rows_outside_a_key_s_window_do_not_count(spark: Any, warehouse: Path) -> None:
    """Another writer appended a row labelled 2024-01-02 whose event time is a week
    later: the IoManager's window predicate keeps it out, so the day is still missing."""
    from datetime import datetime, timezone

    write_days(warehouse, ["2024-01-01"])
    late = datetime(2024, 1, 9, 12, tzinfo=timezone.utc)
    stray = spark.createDataFrame([("2024-01-02", late, 0)], "day string, ts timestamp, n int")
    stray.write.format("delta").mode("append").save(str(local_table_path(ORDERS, warehouse)))
    found = presence(spark, warehouse, ["2024-01-01", "2024-01-02"])
    assert dict(found.reports[0].rows) == {"2024-01-01": 2}
    assert found.missing(["2024-01-01", "2024-01-02"]) == ["2024-01-02"]


def test_keyed_tables_are_the_partitioned_outputs_by_name(tmp_path: Path) -> None:
    found, notes = keyed_tables(presence_orders, RunEnvironment(None, tmp_path, True))
    assert {name: t.tasks for name, t in found.items()} == {
        ORDERS: ("write_orders",),
        TOTALS: ("write_totals",),
    }
    assert len(notes) == 1 and "write_snapshot" in notes[0]
    only, _ = keyed_tables(presence_orders, RunEnvironment(None, tmp_path, True), {"notify"})
    assert only == {}


def test_a_presence_run_processes_no_key() -> None:
    order = encode_order(PresenceOrder(KeyRange("2024-01-01", "2024-01-05")))
    run = job_parameters(presence_orders, {"dbxdec_order": order})
    assert run["backfill_key"] == "" and run_keys(presence_orders, run) is None


@pytest.mark.parametrize(
    "value",
    [
        pytest.param('{"kind": "presence", "first": "2024-01-01"}', id="no-fields"),
        pytest.param(
            '{"kind": "presence", "first": "2024-01-01", "last": "{{job.parameters.x}}"}',
            id="reference",
        ),
        pytest.param(
            '{"kind": "presence", "first": "2024-01-01\';DROP TABLE t", "last": "2024-01-02"}',
            id="quote",
        ),
    ],
)
def test_a_malformed_presence_order_names_the_parameter(value: str) -> None:
    with pytest.raises(ValueError, match=r"^job parameter dbxdec_order=.* is not an order"):
        decode_order(value)


def test_presence_orders_and_reports_round_trip() -> None:
    order = PresenceOrder(KeyRange("2024-W01", "2024-W09"))
    assert decode_order(encode_order(order)) == order
    assert decode_order("  ") is None
    report = PresenceReport(ORDERS, "write_orders", True, {"2024-01-01": 2})
    logs = f"starting\n{report.to_line()}\npresence: 1 of 5 keys\n"
    assert PresenceReport.from_lines(logs) == [report]
    with pytest.raises(ValueError, match="malformed presence report"):
        PresenceReport.from_lines('dbxdec-report: {"kind": "presence", "table": "x"}')


@pytest.mark.spark
def test_dbxdec_run_prints_a_report_per_table_in_a_presence_run(
    spark: Any,
    warehouse: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The code each task of a Databricks presence run executes, on the local warehouse."""
    write_days(warehouse, ["2024-01-02", "2024-01-03"])
    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(warehouse))
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    order = encode_order(PresenceOrder(KeyRange("2024-01-01", "2024-01-05")))

    def dbxdec_run(task_key: str) -> str:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            entrypoint.main(
                [
                    "--dbxdec_job=presence_orders",
                    f"--dbxdec_task={task_key}",
                    f"--dbxdec_module={MODULE}",
                    "--dbxdec_run_id=77-0",
                    f"--dbxdec_order={order}",
                ]
            )
        out, err = capsys.readouterr()
        assert exited.value.code == 0, out + err
        return out

    out = dbxdec_run("write_totals")
    assert PresenceReport.from_lines(out) == [
        PresenceReport(TOTALS, "write_totals", True, {"2024-01-02": 1, "2024-01-03": 1})
    ]
    assert "presence 2024-01-01..2024-01-05: main.presence.totals: 2 of 5 keys have rows" in out
    out = dbxdec_run("notify")
    assert PresenceReport.from_lines(out) == []
    assert "task 'notify' writes no table" in out
    assert "note: task 'write_snapshot'" in dbxdec_run("write_snapshot")
    rows = sorted(
        tuple(r)
        for r in spark.read.format("delta")
        .load(str(local_table_path(ORDERS, warehouse)))
        .select("day")
        .distinct()
        .collect()
    )
    assert rows == [("2024-01-02",), ("2024-01-03",)]  # the presence run wrote nothing
