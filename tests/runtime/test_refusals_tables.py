"""Table writes the runtime refuses, on the real local SparkSession: each refusal says
why, and the table's files are byte-for-byte what they were (nothing written, nothing
lost, no staging left behind)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill, Registry, StaticBackfill, params, task
from databricks_bundle_decorators.io_managers import get_written_keys
from databricks_bundle_decorators.runtime import (
    InputContext,
    KeyScope,
    OutputContext,
    RunEnvironment,
    SparkTableIoManager,
    run_job_locally,
)
from databricks_bundle_decorators.runtime.core.errors import TaskRunError
from databricks_bundle_decorators.runtime.io.spark_table import FormatName
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from databricks_bundle_decorators.runtime.storage.parquet import META_FILE, STAGING_DIR

from .pipelines import table_files

pytestmark = pytest.mark.spark

REGIONS = StaticBackfill(["eu", "us"])
COLUMNS = "region string, day string, n int"
TABLE = "main.refusals.orders"


def frame(spark: Any, rows: list[tuple[Any, ...]], columns: str = COLUMNS) -> Any:
    return spark.createDataFrame(rows, columns)


def output(spark: Any, warehouse: Path, scope: KeyScope) -> OutputContext:
    return OutputContext("job", "load", scope, RunEnvironment(spark, warehouse))


def reading(spark: Any, warehouse: Path, keys: tuple[str, ...]) -> InputContext:
    scope = KeyScope(REGIONS, keys)
    return InputContext("job", "report", "load", "rows", scope, RunEnvironment(spark, warehouse))


def staged_leftovers(warehouse: Path) -> list[str]:
    """Whatever is still in any staging folder of the warehouse."""
    return sorted(str(p) for folder in warehouse.rglob(STAGING_DIR) for p in folder.iterdir())


def written_table(
    spark: Any, warehouse: Path, format: FormatName
) -> tuple[SparkTableIoManager, Path]:
    """``TABLE`` by region with rows for ``eu`` and ``us``: the IoManager and its folder."""
    io = SparkTableIoManager(TABLE, partition_column="region", format=format)
    rows = [("eu", "2024-01-01", 1), ("us", "2024-01-01", 2)]
    io.handle_output(output(spark, warehouse, KeyScope(REGIONS, ("eu", "us"))), frame(spark, rows))
    return io, local_table_path(TABLE, warehouse)


@pytest.mark.parametrize(
    ("format", "advice"),
    [
        pytest.param("delta", "; to rebuild it, delete {path}", id="delta"),
        pytest.param(
            "parquet", ". Delete {path} to rebuild the table with the new schema", id="parquet"
        ),
    ],
)
def test_schema_drift_is_refused_with_the_difference(
    spark: Any, warehouse: Path, format: FormatName, advice: str
) -> None:
    io, path = written_table(spark, warehouse, format)
    before = table_files(warehouse, TABLE)
    drifted = frame(spark, [("eu", "7")], "region string, n string")
    with pytest.raises(TaskRunError) as refused:
        io.handle_output(output(spark, warehouse, KeyScope(REGIONS, ("eu",))), drifted)
    assert refused.value.render() == (
        f"the output schema differs from table {TABLE} (removed day; retyped n); "
        f"nothing was written{advice.format(path=path)}"
    )
    assert table_files(warehouse, TABLE) == before
    assert staged_leftovers(warehouse) == []


def test_parquet_refuses_a_changed_partition_column(spark: Any, warehouse: Path) -> None:
    _, path = written_table(spark, warehouse, "parquet")
    before = table_files(warehouse, TABLE)
    rows = frame(spark, [("eu", "2024-01-01", 9)])
    by_day = KeyScope(DailyBackfill("2024-01-01"), ("2024-01-01",))
    for partition_column, scope in (("day", by_day), (None, KeyScope(None))):
        io = SparkTableIoManager(TABLE, partition_column=partition_column, format="parquet")
        with pytest.raises(TaskRunError) as refused:
            io.handle_output(output(spark, warehouse, scope), rows)
        assert refused.value.render() == (
            f"table {TABLE} is partitioned by 'region', the IoManager writes partition column "
            f"{partition_column!r}; nothing was written. Delete {path} to recreate it"
        )
    assert table_files(warehouse, TABLE) == before
    assert staged_leftovers(warehouse) == []


CORRUPT_META = [
    ("{not json", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ("[]", "expected a JSON object, got list"),
]
UNSAFE_KEYS = ["../x", "a/b", "", ".."]


def test_a_corrupt_meta_file_is_refused_by_name(spark: Any, warehouse: Path) -> None:
    io, path = written_table(spark, warehouse, "parquet")
    for content, problem in CORRUPT_META:
        (path / META_FILE).write_text(content, encoding="utf-8")
        before = table_files(warehouse, TABLE)
        message = f"cannot read {path / META_FILE}: {problem}"
        with pytest.raises(TaskRunError) as refused:
            io.handle_output(
                output(spark, warehouse, KeyScope(REGIONS, ("eu",))), frame(spark, [("eu", "x", 5)])
            )
        assert refused.value.render() == message
        with pytest.raises(TaskRunError) as unread:
            io.load_input(reading(spark, warehouse, ("eu",)))
        assert unread.value.render() == message
        assert table_files(warehouse, TABLE) == before
    assert staged_leftovers(warehouse) == []


def test_keys_that_cannot_name_a_folder_are_refused_before_any_folder_moves(
    spark: Any, warehouse: Path
) -> None:
    """StaticBackfill refuses such keys at definition; a hand-made scope reaches the format.
    The ``eu`` rows of the same write must not replace the table's ``eu`` folder."""
    io, _ = written_table(spark, warehouse, "parquet")
    before = table_files(warehouse, TABLE)
    refusals: dict[str, tuple[str, str]] = {}
    for key in UNSAFE_KEYS:
        with pytest.raises(TaskRunError) as refused:
            io.handle_output(
                output(spark, warehouse, KeyScope(REGIONS, ("eu", key))),
                frame(spark, [("eu", "x", 5)]),
            )
        with pytest.raises(TaskRunError) as unread:
            io.load_input(reading(spark, warehouse, (key,)))
        refusals[key] = (refused.value.render(), unread.value.render())
    assert refusals == {
        key: (f"partition key {key!r} cannot name a folder",) * 2 for key in UNSAFE_KEYS
    }
    assert table_files(warehouse, TABLE) == before
    assert staged_leftovers(warehouse) == []
    # quotes and ';' name a folder; the read's predicate quotes them as one literal
    assert io.load_input(reading(spark, warehouse, ("x'; DROP",))).count() == 0


staging = Registry()
PARQUET_IO = SparkTableIoManager("main.refusals.plain", partition_column="region", format="parquet")
DELTA_IO = SparkTableIoManager("main.refusals.delta", partition_column="region")


def _regions_output() -> Any:
    """One row per written key; with ``fail=true`` computing a row raises in a UDF."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    keys = get_written_keys()
    rows = SparkSession.builder.getOrCreate().createDataFrame(
        [(k, "2024-01-01", i) for i, k in enumerate(keys)], COLUMNS
    )
    if params["fail"] != "true":
        return rows

    def refuse(n: int) -> int:
        raise ValueError("this row cannot be computed")

    return rows.withColumn("n", F.udf(refuse, "int")("n"))


@staging.job(params={"fail": "false"}, backfill=REGIONS)
def staged() -> None:
    @task(io_manager=PARQUET_IO)
    def plain() -> Any:
        return _regions_output()

    @task(io_manager=DELTA_IO)
    def delta() -> Any:
        return _regions_output()

    plain()
    delta()


def test_an_output_that_fails_while_staged_leaves_the_tables_as_they_were(
    spark: Any, warehouse: Path
) -> None:
    keys = {"backfill_start_key": "eu", "backfill_key": "us"}
    first = run_job_locally(staging, "staged", params=keys, warehouse=warehouse)
    assert first.succeeded, first
    before = {
        "main.refusals.plain": table_files(warehouse, "main.refusals.plain"),
        "main.refusals.delta": table_files(warehouse, "main.refusals.delta"),
    }
    failed = run_job_locally(
        staging, "staged", params={**keys, "fail": "true"}, warehouse=warehouse
    )
    assert [(t.task_key, t.status) for t in failed.tasks] == [
        ("plain", "failed"),
        ("delta", "failed"),
    ]
    for result in failed.tasks:
        assert result.error is not None
        assert result.error.startswith(f"task {result.task_key!r}: PythonException: ")
        assert "ValueError: this row cannot be computed" in result.error
    after = {name: table_files(warehouse, name) for name in before}
    assert after == before
    assert staged_leftovers(warehouse) == []
