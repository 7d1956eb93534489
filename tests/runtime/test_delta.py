"""Local Delta tables, proved from the table history: one commit per run, exact
replacement, idempotent retries, nothing committed on a rejected write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill
from databricks_bundle_decorators.runtime import (
    KeyScope,
    OutputContext,
    RunEnvironment,
    SparkTableIoManager,
    run_job_locally,
)
from databricks_bundle_decorators.runtime.checks.shipped import MinRowCount
from databricks_bundle_decorators.runtime.core.errors import (
    CheckFailed,
    OutputRejected,
    TaskRunError,
)
from databricks_bundle_decorators.runtime.job_tables.tables import (
    local_table_exists,
    local_table_path,
    read_table,
)

from .pipelines import events_for, partition_values, read_local, registry, table_version

pytestmark = [pytest.mark.spark, pytest.mark.connect_lane]  # tests/connect_lane.py

BACKFILL = DailyBackfill("2024-01-01")


def history(spark: Any, warehouse: Path, name: str) -> list[tuple[int, str, dict[str, str]]]:
    path = local_table_path(name, warehouse)
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return sorted((r.version, r.operation, dict(r.operationParameters)) for r in rows)


@pytest.mark.not_in_connect_lane(
    "lane budget: ranged runs through the local runner are test_spark_table's same-range test"
)
def test_a_ranged_run_is_one_replace_where_commit_per_table(spark: Any, warehouse: Path) -> None:
    params = {"backfill_start_key": "2024-09-01", "backfill_key": "2024-09-03"}
    first = run_job_locally(registry, "daily", params=params, warehouse=warehouse)
    assert first.succeeded, first
    assert (local_table_path("main.test.events", warehouse) / "_delta_log").is_dir()
    assert [v for v, _, _ in history(spark, warehouse, "main.test.events")] == [0]
    again = run_job_locally(registry, "daily", params=params, warehouse=warehouse)
    assert again.succeeded, again
    commits = history(spark, warehouse, "main.test.events")
    assert [(v, op) for v, op, _ in commits] == [(0, "WRITE"), (1, "WRITE")]
    assert commits[1][2]["predicate"] == "`day` IN ('2024-09-01', '2024-09-02', '2024-09-03')"
    assert partition_values(spark, warehouse, "main.test.events", "day") == [
        "2024-09-01",
        "2024-09-02",
        "2024-09-03",
    ]
    assert read_local(spark, warehouse, "main.test.events").count() == 9
    # one run per key: one commit each, and only that key replaced
    for key in ("2024-09-02", "2024-09-04"):
        one = run_job_locally(registry, "daily", params={"backfill_key": key}, warehouse=warehouse)
        assert one.succeeded, one
    assert table_version(spark, warehouse, "main.test.events") == 3
    assert read_local(spark, warehouse, "main.test.events").count() == 12


def _write(
    io: SparkTableIoManager, environment: RunEnvironment, keys: list[str], **kw: Any
) -> None:
    scope = KeyScope(BACKFILL, tuple(keys))
    io.handle_output(OutputContext("job", "task", scope, environment), events_for(keys, **kw))


def test_a_retried_attempt_of_a_run_never_commits_twice(spark: Any, warehouse: Path) -> None:
    io = SparkTableIoManager("main.test.retried", partition_column="day", time_column="ts")
    run_a = RunEnvironment(spark, warehouse, run_id="run-a")
    _write(io, run_a, ["2024-10-01"])
    _write(io, run_a, ["2024-10-01"], per_day=1)  # the same run again: skipped
    assert table_version(spark, warehouse, "main.test.retried") == 0
    assert read_local(spark, warehouse, "main.test.retried").count() == 3
    # a new run of the same key (a later backfill) commits
    _write(io, RunEnvironment(spark, warehouse, run_id="run-b"), ["2024-10-01"], per_day=1)
    assert table_version(spark, warehouse, "main.test.retried") == 1
    assert read_local(spark, warehouse, "main.test.retried").count() == 1
    # no run id: no transaction id, every write commits
    _write(io, RunEnvironment(spark, warehouse), ["2024-10-01"], per_day=2)
    _write(io, RunEnvironment(spark, warehouse), ["2024-10-01"], per_day=2)
    assert table_version(spark, warehouse, "main.test.retried") == 3


def test_rejected_writes_leave_the_table_at_its_version(spark: Any, warehouse: Path) -> None:
    io = SparkTableIoManager("main.test.guarded", partition_column="day", time_column="ts")
    environment = RunEnvironment(spark, warehouse, run_id="r1")
    _write(io, environment, ["2024-11-01"])
    with pytest.raises(OutputRejected, match=r"nothing was written to main.test.guarded"):
        _write(io, RunEnvironment(spark, warehouse, run_id="r2"), ["2024-11-01"], late=True)
    checked = OutputContext(
        "job",
        "task",
        KeyScope(BACKFILL, ("2024-11-01",)),
        RunEnvironment(spark, warehouse, run_id="r3"),
        (MinRowCount(5),),
    )
    with pytest.raises(CheckFailed, match="min_row_count\\(5\\) failed for key 2024-11-01"):
        io.handle_output(checked, events_for(["2024-11-01"]))
    assert table_version(spark, warehouse, "main.test.guarded") == 0
    assert read_local(spark, warehouse, "main.test.guarded").count() == 3


def test_schema_drift_is_refused_with_the_difference(spark: Any, warehouse: Path) -> None:
    io = SparkTableIoManager("main.test.drift", partition_column="day", time_column="ts")
    _write(io, RunEnvironment(spark, warehouse, run_id="r1"), ["2024-12-01"])
    frame = events_for(["2024-12-02"])
    wider = frame.withColumn("note", frame.id)
    scope = KeyScope(BACKFILL, ("2024-12-02",))
    context = OutputContext("job", "task", scope, RunEnvironment(spark, warehouse, run_id="r2"))
    with pytest.raises(TaskRunError) as caught:
        io.handle_output(context, wider)
    assert caught.value.render().startswith(
        "the output schema differs from table main.test.drift (added note); nothing was written"
    )
    assert table_version(spark, warehouse, "main.test.drift") == 0


def test_catalog_names_map_to_separate_local_tables(spark: Any, warehouse: Path) -> None:
    for catalog, rows in (("dev", 1), ("main", 2)):
        io = SparkTableIoManager(f"{catalog}.sales.orders", partition_column="day")
        _write(io, RunEnvironment(spark, warehouse, run_id=catalog), ["2024-01-05"], per_day=rows)
    assert local_table_path("dev.sales.orders", warehouse) == warehouse / "dev/sales/orders"
    dev = read_table("dev.sales.orders", spark=spark, warehouse=warehouse)
    main = read_table("main.sales.orders", spark=spark, warehouse=warehouse)
    assert (dev.count(), main.count()) == (1, 2)
    assert not local_table_exists("qa.sales.orders", warehouse)
    with pytest.raises(ValueError, match=r"table qa.sales.orders does not exist locally"):
        read_table("qa.sales.orders", spark=spark, warehouse=warehouse)
    with pytest.raises(ValueError, match=r"must be catalog.schema.table"):
        read_table("orders", spark=spark, warehouse=warehouse)


@pytest.mark.not_in_connect_lane("parquet outputs are local folders, never on Databricks")
def test_parquet_remains_when_asked_for(spark: Any, warehouse: Path) -> None:
    io = SparkTableIoManager("main.test.plain", partition_column="day", format="parquet")
    _write(io, RunEnvironment(spark, warehouse, run_id="p"), ["2024-02-01", "2024-02-02"])
    folder = warehouse / "main/test/plain"
    assert not (folder / "_delta_log").exists()
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == [
        "day=2024-02-01",
        "day=2024-02-02",
    ]
    assert spark.read.parquet(str(folder)).count() == 6


def test_two_runs_creating_one_table_at_once_both_commit(
    spark: Any, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both runs see no table, then both commit a first version: Delta refuses the second
    (a concurrent protocol change); it is written again into the table the first made."""
    import threading

    from databricks_bundle_decorators.runtime.storage import delta

    io = SparkTableIoManager("main.test.raced", partition_column="day", time_column="ts")
    both_checked = threading.Barrier(2, timeout=120)
    real_exists = delta.delta_table_exists

    def exists_then_wait(spark_: Any, table: Any) -> bool:
        found = real_exists(spark_, table)
        if not found:
            both_checked.wait()  # neither writes before both saw no table
        return found

    monkeypatch.setattr(delta, "delta_table_exists", exists_then_wait)
    errors: list[BaseException] = []

    def write(run: str, day: str) -> None:
        try:
            _write(io, RunEnvironment(spark, warehouse, run_id=run), [day])
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(f"run-{d}", f"2024-12-0{d}")) for d in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert partition_values(spark, warehouse, "main.test.raced", "day") == [
        "2024-12-01",
        "2024-12-02",
    ]
    assert [v for v, _, _ in history(spark, warehouse, "main.test.raced")] == [0, 1]
