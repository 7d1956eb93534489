"""Append-once outputs on real local Delta tables, proved from the table history: a key
already written is skipped (the table keeps its version), ``force_rewrite`` replaces
exactly that key in one commit, and a retried attempt of a run never appends twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill
from databricks_bundle_decorators.backfill.wire import TaskOrder, with_order
from databricks_bundle_decorators.runtime import (
    KeyScope,
    OutputContext,
    RunEnvironment,
    SparkTableIoManager,
)
from databricks_bundle_decorators.runtime.core.errors import TaskRunError
from databricks_bundle_decorators.runtime.io import spark_table
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from databricks_bundle_decorators.runtime.programs.run_kinds import decode_run_kind

from .pipelines import events_for, read_local, registry, table_version

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = pytest.mark.connect_lane

BACKFILL = DailyBackfill("2024-01-01")
D1, D2, D3 = "2024-03-01", "2024-03-02", "2024-03-03"


def _write(
    io: SparkTableIoManager,
    environment: RunEnvironment,
    keys: list[str],
    *,
    force: bool = False,
    **kw: Any,
) -> None:
    scope = KeyScope(BACKFILL, tuple(keys))
    context = OutputContext("job", "load", scope, environment, force_rewrite=force)
    io.handle_output(context, events_for(keys, **kw))


def _rows_per_key(spark: Any, warehouse: Path, name: str) -> dict[str, int]:
    rows = read_local(spark, warehouse, name).groupBy("day").count().collect()
    return {row["day"]: int(row["count"]) for row in rows}


def _last_commit(spark: Any, warehouse: Path, name: str) -> tuple[int, str, dict[str, str]]:
    path = local_table_path(name, warehouse)
    row = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()
    return int(row.version), str(row.operation), dict(row.operationParameters)


@pytest.mark.spark
@pytest.mark.not_in_connect_lane("lane budget: append-once writes are the retried-attempt test's")
def test_a_rerun_skips_written_keys_and_force_rewrite_replaces_exactly_them(
    spark: Any, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "main.test.history_once"
    io = SparkTableIoManager(name, partition_column="day", time_column="ts", write="append_once")
    _write(io, RunEnvironment(spark, warehouse, run_id="r1"), [D1, D2])
    assert table_version(spark, warehouse, name) == 0
    capsys.readouterr()

    _write(io, RunEnvironment(spark, warehouse, run_id="r2"), [D1], per_day=1)
    assert capsys.readouterr().out == (
        f"task 'load': table {name} already holds key {D1} (append-once); nothing was "
        "written, the table keeps its version (--force-rewrite rewrites it)\n"
    )
    assert table_version(spark, warehouse, name) == 0
    assert _rows_per_key(spark, warehouse, name) == {D1: 3, D2: 3}

    # a range over a written and a new key: the new one is appended, the other kept
    _write(io, RunEnvironment(spark, warehouse, run_id="r3"), [D2, D3], per_day=1)
    assert f"already holds key {D2} (append-once); skipped it" in capsys.readouterr().out
    version, operation, parameters = _last_commit(spark, warehouse, name)
    assert (version, operation, parameters["mode"]) == (1, "WRITE", "Append")
    assert _rows_per_key(spark, warehouse, name) == {D1: 3, D2: 3, D3: 1}

    _write(io, RunEnvironment(spark, warehouse, run_id="r4"), [D1], force=True, per_day=2)
    version, operation, parameters = _last_commit(spark, warehouse, name)
    assert (version, parameters["mode"]) == (2, "Overwrite")
    assert parameters["predicate"] == f"`day` IN ('{D1}')"
    assert _rows_per_key(spark, warehouse, name) == {D1: 2, D2: 3, D3: 1}
    assert capsys.readouterr().out == ""


@pytest.mark.spark
def test_a_retried_attempt_of_an_append_once_run_never_appends_twice(
    spark: Any, warehouse: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "main.test.retried_once"
    io = SparkTableIoManager(name, partition_column="day", write="append_once")
    attempt = RunEnvironment(spark, warehouse, run_id="run-a")
    _write(io, attempt, [D1])
    capsys.readouterr()
    _write(io, attempt, [D1])  # the retry finds the key written: skipped, says so
    assert "already holds key 2024-03-01" in capsys.readouterr().out
    # the retry looked before the first attempt's commit landed: Delta's txnAppId skips it
    monkeypatch.setattr(spark_table, "written_keys", lambda *args: frozenset())
    _write(io, attempt, [D1])
    assert table_version(spark, warehouse, name) == 0
    assert _rows_per_key(spark, warehouse, name) == {D1: 3}
    # a new run that does not see the key appends (what the presence check prevents)
    _write(io, RunEnvironment(spark, warehouse, run_id="run-b"), [D1])
    assert table_version(spark, warehouse, name) == 1
    assert _rows_per_key(spark, warehouse, name) == {D1: 6}


def test_append_once_is_declared_with_a_partition_column_on_delta() -> None:
    with pytest.raises(ValueError, match=r"^write='append_once' .* needs a partition_column$"):
        SparkTableIoManager("main.s.t", write="append_once")
    with pytest.raises(ValueError, match=r"drop format='parquet'$"):
        SparkTableIoManager(
            "main.s.t", partition_column="day", format="parquet", write="append_once"
        )
    with pytest.raises(
        ValueError, match=r"^write must be 'replace', 'append_once' or 'upsert', got 'once'$"
    ):
        SparkTableIoManager("main.s.t", partition_column="day", write="once")  # type: ignore[arg-type]
    assert SparkTableIoManager("main.s.t").write == "replace"


def test_force_rewrite_is_read_from_the_job_parameter() -> None:
    job = registry.get("daily")

    def force_rewrite(params: dict[str, str]) -> bool:
        return decode_run_kind(job, params).order_as(TaskOrder).force_rewrite

    assert force_rewrite({}) is False
    assert force_rewrite(with_order({}, TaskOrder(force_rewrite=True))) is True
    with pytest.raises(Exception, match=r"dbxdec_order=.* 'yes please' is not true or false"):
        force_rewrite({"dbxdec_order": '{"kind": "task", "force_rewrite": "yes please"}'})


@pytest.mark.spark
def test_an_append_once_run_without_keys_is_refused(spark: Any, warehouse: Path) -> None:
    io = SparkTableIoManager("main.test.unkeyed_once", partition_column="day", write="append_once")
    context = OutputContext("job", "load", KeyScope(None), RunEnvironment(spark, warehouse))
    with pytest.raises(TaskRunError, match=r"is append-once and this run has no backfill key"):
        io.handle_output(context, events_for([D1]))
