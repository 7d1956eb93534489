"""File-triggered runs on real files in tmp folders and real local Delta: the keys of
the files new or changed since the last processed listing, widened by lookback, capped
by max_keys; the listing is recorded only when the run's last task committed."""

from __future__ import annotations

import json
import os
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    FileArrival,
    KeyFromColumn,
    KeyFromPath,
    Registry,
    task,
)
from databricks_bundle_decorators.backfill.wire.trigger import TRIGGER_LOCATION_PARAM
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.runtime import run_job_locally
from databricks_bundle_decorators.runtime.core.keys import get_written_keys
from databricks_bundle_decorators.runtime.storage.table_name import TableName
from databricks_bundle_decorators.runtime.triggers.local_trigger import (
    pending_line,
    simulated_file_arrival,
)
from databricks_bundle_decorators.runtime.triggers.trigger_state import TriggerState
from databricks_bundle_decorators.runtime.triggers.triggered import pending_keys

pytestmark = pytest.mark.spark

DAILY = DailyBackfill("2024-03-01", lookback=2)
NOW = {"backfill_run_time": "2024-03-20T12:00:00+00:00"}  # current key D = 2024-03-20
URL = "/Volumes/main/raw/landing"
STATE = "main.raw.dbxdec_trigger_state"  # the volume's schema
FAIL: set[str] = set()  # jobs whose task fails while named here
READ: dict[str, list[str]] = {}  # job -> the files its task's keys came from (column job)


def _day(offset: int) -> str:
    """D-offset, D = 2024-03-20."""
    return (date(2024, 3, 20) - timedelta(days=offset)).isoformat()


def _write(folder: Path, relative: str, days: list[str]) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"event_date": d, "v": 1}) + "\n" for d in days))
    return path


def _rows_in_windows(folder: Path) -> list[tuple[str, int]]:
    """Per written key K, the rows of the folder's files with an event day in K-2..K
    (what a lookback-2 task reads), computed without Spark so the test pays only for
    the runs' own Spark work."""
    days: list[str] = []
    for file in folder.rglob("*.json"):
        days += [json.loads(line)["event_date"] for line in file.read_text().splitlines()]
    out = []
    for key in get_written_keys():
        window = set(DAILY.previous_keys(key, 2)) | {key}
        out.append((key, sum(1 for d in days if d in window)))
    return out


def _job(registry: Registry, name: str, trigger: FileArrival, folder: Path) -> None:
    @registry.job(name=name, backfill=DAILY, triggered_by=trigger)
    def body() -> None:
        @task(name="t", io_manager=SparkTableIoManager(f"main.out.{name}", partition_column="day"))
        def t() -> Any:
            from pyspark.sql import SparkSession

            if name in FAIL:
                raise RuntimeError(f"{name} fails on purpose")
            spark = SparkSession.getActiveSession()
            assert spark is not None
            return spark.createDataFrame(_rows_in_windows(folder), "day STRING, n LONG")

        t()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> tuple[Registry, Path, Path]:
    """One registry of two jobs, each with its own landing folder; one warehouse."""
    root = tmp_path_factory.mktemp("file_arrival")
    registry = Registry()
    by_path = FileArrival(URL, keys=KeyFromPath("date={key}/"), local=root / "path")
    by_column = FileArrival(
        URL, keys=KeyFromColumn("event_date", file_format="json"), max_keys=2,
        local=f"file://{root / 'column'}",
    )  # fmt: skip
    for name, trigger in (("path_job", by_path), ("column_job", by_column)):
        (root / name.removesuffix("_job")).mkdir()
        _job(registry, name, trigger, root / name.removesuffix("_job"))
    return registry, root, root / ".dbxdec" / "warehouse"


def _run(setup: tuple[Registry, Path, Path], job: str, run_id: str) -> Any:
    registry, _, warehouse = setup
    params = {**NOW, **simulated_file_arrival(registry.get(job))}
    assert params[TRIGGER_LOCATION_PARAM] == URL  # what Databricks renders: the location
    return run_job_locally(registry, job, params=params, warehouse=warehouse, run_id=run_id)


def _days(spark: Any, warehouse: Path, table: str) -> list[str]:
    path = TableName.parse(table).local_path(warehouse)
    return sorted(str(r["day"]) for r in spark.read.format("delta").load(str(path)).collect())


def _history(spark: Any, warehouse: Path, table: str) -> list[str]:
    path = TableName.parse(table).local_path(warehouse)
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return [str(r["operation"]) for r in sorted(rows, key=lambda r: r["version"])]


def test_files_for_d5_and_d1_write_exactly_those_keys_widened_by_lookback(
    spark: Any, setup: tuple[Registry, Path, Path]
) -> None:
    _, root, warehouse = setup
    folder = root / "path"
    _write(folder, f"date={_day(5)}/part-0.json", [_day(5)])
    _write(folder, f"date={_day(1)}/part-0.json", [_day(1), _day(1)])
    _write(folder, "_SUCCESS", [])  # hidden from listings, as Spark hides it
    _write(folder, "manifest.txt", [])  # no key in its path: skipped, not a failure
    result = _run(setup, "path_job", "500-0")
    assert result.succeeded, result
    expected = [_day(5), _day(4), _day(3), _day(1), _day(0)]
    assert list(result.keys) == expected
    table = "main.out.path_job"
    assert [r[0] for r in _rows(spark, warehouse, table)] == expected
    # each key's rows: the files' rows in its lookback window
    assert [r[1] for r in _rows(spark, warehouse, table)] == [1, 1, 1, 2, 2]
    assert _history(spark, warehouse, table) == ["WRITE"]

    # A second run, no new file: nothing written, and the run says so (no keys).
    again = _run(setup, "path_job", "501-0")
    assert again.succeeded and again.keys == ()
    assert _history(spark, warehouse, table) == ["WRITE"]


def _rows(spark: Any, warehouse: Path, table: str) -> list[tuple[str, int]]:
    path = TableName.parse(table).local_path(warehouse)
    frame = spark.read.format("delta").load(str(path))
    return sorted((str(r["day"]), int(r["n"])) for r in frame.collect())


def test_a_failed_run_leaves_the_listing_unrecorded_and_a_rewrite_is_reprocessed(
    spark: Any, setup: tuple[Registry, Path, Path]
) -> None:
    registry, root, warehouse = setup
    folder = root / "path"
    rewritten = _write(folder, f"date={_day(5)}/part-0.json", [_day(5), _day(5), _day(5)])
    os.utime(rewritten, (1_700_000_000, 1_700_000_000))  # a new size and a new mtime
    FAIL.add("path_job")
    try:
        failed = _run(setup, "path_job", "502-0")
    finally:
        FAIL.discard("path_job")
    assert not failed.succeeded
    _write(folder, f"date={_day(10)}/part-0.json", [_day(10)])  # a second arrival
    after = _run(setup, "path_job", "503-0")
    assert after.succeeded, after
    # both: the rewritten D-5 (-> D-5..D-3) and the new D-10 (-> D-10..D-8)
    assert list(after.keys) == [_day(10), _day(9), _day(8), _day(5), _day(4), _day(3)]
    table = "main.out.path_job"
    assert _history(spark, warehouse, table) == ["WRITE", "WRITE"]  # 502 wrote nothing
    assert dict(_rows(spark, warehouse, table))[_day(5)] == 3
    environment = RunEnvironment(spark, warehouse, False, "x")
    listing = TriggerState(environment, STATE, "path_job").processed_listing()
    assert listing is not None
    assert sorted(p.rsplit("/", 2)[-2] for p in listing if "date=" in p) == [
        f"date={_day(10)}", f"date={_day(5)}", f"date={_day(1)}"
    ]  # fmt: skip
    assert pending_keys(registry.get("path_job"), environment) == ()


def test_key_from_column_reads_only_the_new_files_and_max_keys_leaves_the_rest_pending(
    spark: Any, setup: tuple[Registry, Path, Path]
) -> None:
    registry, root, warehouse = setup
    folder = root / "column"
    old = _write(folder, "batch-1.json", [_day(15)])
    first = _run(setup, "column_job", "700-0")
    assert first.succeeded and list(first.keys) == [_day(15), _day(14)]  # max_keys=2
    environment = RunEnvironment(spark, warehouse, False, "x")
    assert pending_keys(registry.get("column_job"), environment) == (_day(13),)
    # Plant a bad value in the processed file, keeping its size and modification time:
    # a run that read it again would take the key 2024-03-02 from it.
    stamp = old.stat()
    old.write_text(old.read_text().replace(_day(15), "2024-03-02"))
    os.utime(old, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert old.stat().st_size == stamp.st_size
    _write(folder, "nested/batch-2.json", [_day(2)])
    second = _run(setup, "column_job", "701-0")
    assert second.succeeded, second
    # the pending D-13 first, then the oldest of the new file's D-2, D-1, D; never 2024-03-02
    assert list(second.keys) == [_day(13), _day(2)]
    assert "2024-03-02" not in _days(spark, warehouse, "main.out.column_job")
    line = pending_line(registry.get("column_job"), warehouse)
    assert line == f"2 keys left for the next runs (max_keys): {_day(1)}, {_day(0)}"


def test_an_empty_location_lists_nothing_and_a_missing_one_fails_in_one_line(
    spark: Any, tmp_path: Path
) -> None:
    from databricks_bundle_decorators.runtime.core.errors import TaskRunError
    from databricks_bundle_decorators.runtime.triggers.file_arrival import list_files

    (tmp_path / "empty" / "sub").mkdir(parents=True)
    assert list_files(spark, str(tmp_path / "empty")) == {}
    with pytest.raises(TaskRunError) as caught:
        list_files(spark, str(tmp_path / "missing"))
    assert str(caught.value).startswith(f"cannot list {tmp_path / 'missing'}: ")
    assert "\n" not in str(caught.value)
