"""The Spark table IoManager on the real local SparkSession: idempotent slices, window
validation, checks before the write, lookback and all_partitions reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.runtime import LocalTaskValueStore, run_job_locally

from .pipelines import partition_values, read_local, registry, table_version

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = [pytest.mark.spark, pytest.mark.connect_lane]


def run(warehouse: Path, **params: str) -> Any:
    return run_job_locally(registry, "daily", params=params, warehouse=warehouse)


def values(warehouse: Path, result: Any, task: str, key: str) -> Any:
    return LocalTaskValueStore(warehouse.parent / "task_values" / result.run_id).get(task, key)


def contents(spark: Any, warehouse: Path, table: str) -> tuple[int, int, list[str]]:
    """Row count, an order-independent checksum of all rows, and the partition folders."""
    from pyspark.sql import functions as F

    frame = read_local(spark, warehouse, table)
    row_hash = F.xxhash64(*[F.col(c) for c in sorted(frame.columns)])
    count, checksum = frame.agg(F.count(F.lit(1)), F.sum(row_hash.cast("decimal(38,0)"))).first()
    return count, int(checksum or 0), partition_values(spark, warehouse, table, "day")


def test_same_range_twice_gives_identical_tables(spark: Any, warehouse: Path) -> None:
    first = run(warehouse, backfill_start_key="2024-01-01", backfill_key="2024-01-03")
    assert first.succeeded, first
    before = {t: contents(spark, warehouse, t) for t in ("main.test.events", "main.test.seen")}
    again = run(warehouse, backfill_start_key="2024-01-01", backfill_key="2024-01-03")
    assert again.succeeded, again
    after = {t: contents(spark, warehouse, t) for t in ("main.test.events", "main.test.seen")}
    assert after == before
    assert before["main.test.events"][0] == 9
    assert before["main.test.events"][2] == ["2024-01-01", "2024-01-02", "2024-01-03"]


@pytest.mark.not_in_connect_lane(
    "lane budget: lookback reads are test_sources' and test_spark_table's same-range test"
)
def test_overlapping_lookback_runs_never_duplicate_rows(spark: Any, warehouse: Path) -> None:
    for params in (
        {"backfill_key": "2024-02-02"},
        {"backfill_start_key": "2024-02-01", "backfill_key": "2024-02-03"},
        {"backfill_key": "2024-02-03"},
        {"backfill_start_key": "2024-02-02", "backfill_key": "2024-02-04"},
    ):
        result = run(warehouse, **params)
        assert result.succeeded, result
    events = read_local(spark, warehouse, "main.test.events")
    assert events.count() == 12
    assert events.select("id").distinct().count() == 12
    seen = {
        r.day: (r.rows, r.amount) for r in read_local(spark, warehouse, "main.test.seen").collect()
    }
    assert seen == {d: (3, 30) for d in ("2024-02-01", "2024-02-02", "2024-02-03", "2024-02-04")}
    # the last run read its lookback day (02-01) from the table, and nothing beyond it
    assert values(warehouse, result, "seen", "run_keys") == [
        "2024-02-01",
        "2024-02-02",
        "2024-02-03",
        "2024-02-04",
    ]
    assert values(warehouse, result, "seen", "read_days") == [
        "2024-02-01",
        "2024-02-02",
        "2024-02-03",
        "2024-02-04",
    ]
    single = run(warehouse, backfill_key="2024-02-04")
    assert values(warehouse, single, "seen", "read_days") == ["2024-02-03", "2024-02-04"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param(
            {"shift_days": "2"},
            r"3 rows of the output are outside the run's key 2024-03-02, window "
            r"\[2024-03-02T00:00:00Z, 2024-03-03T00:00:00Z\) \(day values 2024-03-04 \(3\)\)",
            id="rows-labelled-with-another-day",
        ),
        pytest.param(
            {"late": "true"},
            r"3 rows of the output are outside the run's key 2024-03-02, window "
            r"\[2024-03-02T00:00:00Z, 2024-03-03T00:00:00Z\) \(3 with ts outside the window\)",
            id="timestamps-outside-the-window",
        ),
    ],
)
def test_rows_outside_the_window_fail_and_leave_the_table_unchanged(
    spark: Any, warehouse: Path, params: dict[str, str], message: str
) -> None:
    assert run(warehouse, backfill_start_key="2024-03-01", backfill_key="2024-03-03").succeeded
    before = table_version(spark, warehouse, "main.test.events")
    result = run(warehouse, backfill_key="2024-03-02", **params)
    assert not result.succeeded
    failed = result.failed[0]
    assert failed.task_key == "events"
    assert failed.error is not None
    import re

    assert re.search(message, failed.error), failed.error
    assert "nothing was written to main.test.events" in failed.error
    assert [t.status for t in result.tasks] == ["failed", "skipped", "skipped"]
    assert table_version(spark, warehouse, "main.test.events") == before


def test_failing_check_writes_nothing_and_names_check_and_key(spark: Any, warehouse: Path) -> None:
    from databricks_bundle_decorators import DailyBackfill
    from databricks_bundle_decorators.runtime import (
        KeyScope,
        OutputContext,
        RunEnvironment,
        SparkTableIoManager,
    )
    from databricks_bundle_decorators.runtime.checks.shipped import MinRowCount, Unique
    from databricks_bundle_decorators.runtime.core.errors import CheckFailed

    from .pipelines import events_for

    io = SparkTableIoManager("main.test.checked", partition_column="day", time_column="ts")
    backfill = DailyBackfill("2024-01-01")
    environment = RunEnvironment(spark, warehouse)
    good = OutputContext("j", "t", KeyScope(backfill, ("2024-05-01",)), environment)
    io.handle_output(good, events_for(["2024-05-01"]))
    before = table_version(spark, warehouse, "main.test.checked")
    frame = events_for(["2024-05-01", "2024-05-02"], per_day=2)
    doubled = frame.unionByName(frame.where("day = '2024-05-02'"))
    context = OutputContext(
        "j",
        "t",
        KeyScope(backfill, ("2024-05-01", "2024-05-02")),
        environment,
        (MinRowCount(2), Unique("id")),
    )
    with pytest.raises(CheckFailed) as caught:
        io.handle_output(context, doubled)
    assert caught.value.render() == (
        "task 't': check unique(id) failed for key 2024-05-02: 2 duplicate rows on (id); "
        "nothing was written to main.test.checked"
    )
    assert table_version(spark, warehouse, "main.test.checked") == before
    empty = OutputContext(
        "j", "t", KeyScope(backfill, ("2024-05-03",)), environment, (MinRowCount(1),)
    )
    with pytest.raises(
        CheckFailed,
        match="check min_row_count\\(1\\) failed for key 2024-05-03: 0 rows, expected at least 1",
    ):
        io.handle_output(empty, events_for([]))
    assert table_version(spark, warehouse, "main.test.checked") == before


def test_all_partitions_reads_everything(spark: Any, warehouse: Path) -> None:
    assert run(warehouse, backfill_start_key="2024-06-01", backfill_key="2024-06-05").succeeded
    result = run(warehouse, backfill_key="2024-06-10")
    assert result.succeeded
    history = read_local(spark, warehouse, "main.test.history").first()
    assert (history.rows, history.days) == (6, 6)  # every seen partition, not the run's keys
    # the plain edge of the same run read only its keys (10th plus lookback 9th, absent)
    assert values(warehouse, result, "seen", "read_days") == ["2024-06-10"]


def test_rerun_with_fewer_rows_replaces_the_slice(spark: Any, warehouse: Path) -> None:
    assert run(warehouse, backfill_key="2024-07-01", per_day="3").succeeded
    assert run(warehouse, backfill_key="2024-07-01", per_day="1").succeeded
    events = read_local(spark, warehouse, "main.test.events")
    assert [r.id for r in events.collect()] == ["2024-07-01-0"]
