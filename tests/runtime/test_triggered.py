"""Table-triggered runs on real local Delta: the changed keys from the change data feed
(or, best effort, the history), widened by lookback, resolved once per run and stored;
the watermark advances only after the last task committed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill, Registry, source, task
from databricks_bundle_decorators.backfill.wire.trigger import (
    TRIGGER_FROM_VERSION_PARAM,
    TRIGGER_TABLES_PARAM,
    TRIGGER_VERSIONS_PARAM,
    encode_versions,
)
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.definitions.triggers import TableUpdate
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.runtime import run_job_locally
from databricks_bundle_decorators.runtime.core.key_columns import backfill_key_column
from databricks_bundle_decorators.runtime.core.keys import get_written_keys
from databricks_bundle_decorators.runtime.storage.table_name import TableName
from databricks_bundle_decorators.runtime.triggers.trigger_state import TriggerState
from databricks_bundle_decorators.runtime.triggers.triggered import pending_keys
from tests.cli.clirun import Cli

pytestmark = pytest.mark.spark

DAILY = DailyBackfill("2024-03-01", lookback=2)
D = "2024-03-20"  # the current key of every run here
NOW = {"backfill_run_time": "2024-03-20T12:00:00+00:00"}
FAIL: set[str] = set()  # task keys that fail while named here

CDF = source("main.raw.orders", event_time="ts")
TWO = source("main.raw.orders_two", event_time="ts")
PLAIN = source("main.raw.orders_plain", event_time="ts")
registry = Registry()


def _daily_counts(src: Any) -> Any:
    from pyspark.sql import functions as F

    keyed = src.read().withColumn("day", backfill_key_column("ts", DAILY))
    written = get_written_keys()
    return keyed.where(F.col("day").isin(written)).groupBy("day").agg(F.count("*").alias("n"))


def _make_job(name: str, src: Any, out: str, *, two_tasks: bool) -> None:
    @registry.job(name=name, backfill=DAILY, sources=[src], triggered_by=TableUpdate([src]))
    def body() -> None:
        @task(
            name="t1", io_manager=SparkTableIoManager(f"main.out.{out}_1", partition_column="day")
        )
        def t1() -> Any:
            if "t1" in FAIL:
                raise RuntimeError("t1 fails on purpose")
            return _daily_counts(src)

        if not two_tasks:
            t1()
            return

        @task(
            name="t2", io_manager=SparkTableIoManager(f"main.out.{out}_2", partition_column="day")
        )
        def t2() -> Any:
            if "t2" in FAIL:
                raise RuntimeError("t2 fails on purpose")
            return _daily_counts(src)

        t1()
        t2()


_make_job("lookback_job", CDF, "lookback", two_tasks=False)
_make_job("two_task_job", TWO, "two", two_tasks=True)
_make_job("plain_job", PLAIN, "plain", two_tasks=False)
_make_job("override_job", CDF, "override", two_tasks=False)


@registry.job(
    name="capped_trigger_job", backfill=DAILY, sources=[CDF],
    triggered_by=TableUpdate([CDF], max_keys=3),
)  # fmt: skip
def capped_trigger_job() -> None:
    """Run through ``dbxdec run --local --trigger table_update`` (``trigger_cli_pipeline``)."""

    @task(name="t", io_manager=SparkTableIoManager("main.out.capped", partition_column="day"))
    def t() -> Any:
        return _daily_counts(CDF)

    t()


DEPLOY_STATE = "main.raw.deploy_state"


@registry.job(
    name="deployed_job", backfill=DAILY, sources=[CDF],
    triggered_by=TableUpdate([CDF], state_table=DEPLOY_STATE),
)  # fmt: skip
def deployed_job() -> None:
    @task(name="t", io_manager=SparkTableIoManager("main.out.deployed", partition_column="day"))
    def t() -> Any:
        return _daily_counts(CDF)

    t()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Path:
    """The three sources, each made with its 20 days of rows in one commit (version 0)."""
    folder = tmp_path_factory.mktemp("triggered") / ".dbxdec" / "warehouse"
    days = ", ".join(f"(TIMESTAMP'2024-03-{d:02d} 08:00:00', {d}L)" for d in range(1, 21))
    for name, cdf in ((CDF.name, True), (TWO.name, True), (PLAIN.name, False)):
        path = TableName.parse(name).local_path(folder)
        spark.sql(
            f"CREATE TABLE delta.`{path}` USING delta "
            f"TBLPROPERTIES (delta.enableChangeDataFeed = {str(cdf).lower()}) "
            f"AS SELECT * FROM VALUES {days} AS t(ts, v)"
        )
    return folder


def _sql(spark: Any, warehouse: Path, src: Any, statement: str) -> int:
    """Run ``statement`` (``{t}``: the source) as one commit; return the new version."""
    path = TableName.parse(src.name).local_path(warehouse)
    spark.sql(statement.format(t=f"delta.`{path}`"))
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0][0])


def _touch(days: list[int]) -> str:
    return "UPDATE {t} SET v = v + 100 WHERE day(ts) IN (" + ", ".join(map(str, days)) + ")"


def _add(day: int) -> str:
    """A commit that appends a row of ``day``: it changes that key as an ``UPDATE`` does,
    without rewriting the table's file (the repair test's commits only need a key)."""
    return f"INSERT INTO {{t}} VALUES (TIMESTAMP'2024-03-{day:02d} 09:00:00', 1)"


def _triggered(src: Any, version: int, **extra: str) -> dict[str, str]:
    return {
        **NOW,
        TRIGGER_TABLES_PARAM: json.dumps([src.name]),
        TRIGGER_VERSIONS_PARAM: encode_versions({src.name: version}, {}),
        **extra,
    }


def _days(spark: Any, warehouse: Path, table: str) -> list[str]:
    path = TableName.parse(table).local_path(warehouse)
    return sorted(r[0] for r in spark.read.format("delta").load(str(path)).select("day").collect())


def _writes(spark: Any, warehouse: Path, table: str) -> list[str]:
    path = TableName.parse(table).local_path(warehouse)
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return [str(r["operation"]) for r in sorted(rows, key=lambda r: r["version"])]


def _state(spark: Any, warehouse: Path, job: str, src: Any) -> TriggerState:
    environment = RunEnvironment(spark, warehouse, False, "x")
    return TriggerState(environment, "main.raw.dbxdec_trigger_state", job)


def test_changes_to_d5_and_d1_write_exactly_those_keys_widened_by_lookback(
    spark: Any, warehouse: Path
) -> None:
    _state(spark, warehouse, "lookback_job", CDF).advance("deploy", {CDF.name: 0}, [])
    version = _sql(spark, warehouse, CDF, _touch([15, 19]))  # D-5 and D-1, one commit
    result = run_job_locally(
        registry,
        "lookback_job",
        params=_triggered(CDF, version),
        warehouse=warehouse,
        run_id="100-0",
    )
    assert result.succeeded, result
    out = "main.out.lookback_1"
    expected = ["2024-03-15", "2024-03-16", "2024-03-17", "2024-03-19", "2024-03-20"]
    assert _days(spark, warehouse, out) == expected
    assert list(result.keys) == expected  # what the local run records for status
    assert _writes(spark, warehouse, out) == ["WRITE"]  # one commit, those keys only
    advance = _state(spark, warehouse, "lookback_job", CDF).latest_advance()
    assert advance is not None and advance.versions == {CDF.name: version}


def test_a_repair_writes_the_stored_keys_and_the_watermark_waits_for_the_last_task(
    spark: Any, warehouse: Path
) -> None:
    state = _state(spark, warehouse, "two_task_job", TWO)
    state.advance("deploy", {TWO.name: 0}, [])
    first = _sql(spark, warehouse, TWO, _add(18))  # D-2 -> D-2, D-1, D
    FAIL.add("t2")
    try:
        failed = run_job_locally(
            registry, "two_task_job", params=_triggered(TWO, first), warehouse=warehouse,
            run_id="200-0",
        )  # fmt: skip
    finally:
        FAIL.discard("t2")
    assert [r.status for r in failed.tasks] == ["succeeded", "failed"]
    state.refresh()
    latest = state.latest_advance()
    assert latest is not None and latest.versions == {TWO.name: 0}  # t2 has not committed
    keys = ["2024-03-18", "2024-03-19", "2024-03-20"]
    assert _days(spark, warehouse, "main.out.two_1") == keys
    history = _writes(spark, warehouse, "main.out.two_1")
    # The repair runs a day later, after commits to 03-03 and 03-20: resolving its keys
    # again at its own parameters (the watermark is still version 0) would give
    # 03-03..03-05 and 03-18..03-21 (03-21: its current key, within 03-20's lookback);
    # it reads the keys its first attempt stored instead.
    _sql(spark, warehouse, TWO, _add(3))
    later = _sql(spark, warehouse, TWO, _add(20))
    repair_params = _triggered(TWO, later, backfill_run_time="2024-03-21T12:00:00+00:00")
    repaired = run_job_locally(
        registry, "two_task_job", params=repair_params, warehouse=warehouse,
        tasks=["t2"], run_id="200-1",
    )  # fmt: skip
    assert repaired.succeeded, repaired
    assert list(repaired.keys) == keys
    assert _days(spark, warehouse, "main.out.two_2") == keys
    assert _writes(spark, warehouse, "main.out.two_1") == history  # t1 is not run again
    assert _days(spark, warehouse, "main.out.two_1") == keys
    state.refresh()
    latest = state.latest_advance()
    assert latest is not None and latest.versions == {TWO.name: first}

    # A triggered run fails, the source commits again: the next run covers both commits.
    second = _sql(spark, warehouse, TWO, _add(6))
    FAIL.add("t1")
    try:
        broken = run_job_locally(
            registry, "two_task_job", params=_triggered(TWO, second), warehouse=warehouse,
            run_id="300-0",
        )  # fmt: skip
    finally:
        FAIL.discard("t1")
    assert not broken.succeeded
    third = _sql(spark, warehouse, TWO, _add(10))
    after = run_job_locally(
        registry, "two_task_job", params=_triggered(TWO, third), warehouse=warehouse,
        run_id="301-0",
    )  # fmt: skip
    assert after.succeeded, after
    both = ["2024-03-03", "2024-03-04", "2024-03-05", "2024-03-06", "2024-03-07",
            "2024-03-08", "2024-03-10", "2024-03-11", "2024-03-12"]  # fmt: skip
    # main.out.two_1: version 0 by run 200-0, version 1 by run 301-0 (300-0 wrote nothing)
    assert _writes(spark, warehouse, "main.out.two_1") == ["WRITE", "WRITE"]
    assert _days(spark, warehouse, "main.out.two_1") == sorted([*both, *keys])
    state.refresh()
    latest = state.latest_advance()
    assert latest is not None and latest.versions == {TWO.name: third}
    assert pending_keys(registry.get("two_task_job"), RunEnvironment(spark, warehouse)) == ()


def test_without_change_feed_or_usable_history_the_run_fails_naming_the_remedy(
    spark: Any, warehouse: Path
) -> None:
    version = _sql(
        spark, warehouse, PLAIN, "INSERT INTO {t} VALUES (TIMESTAMP'2024-03-12 09:00:00', 1)"
    )
    params = _triggered(PLAIN, version, **{TRIGGER_FROM_VERSION_PARAM: str(version)})
    result = run_job_locally(
        registry, "plain_job", params=params, warehouse=warehouse, run_id="400-0"
    )
    assert not result.succeeded
    (message,) = [r.error for r in result.tasks]
    assert message is not None and "\n" not in message
    assert "enable the change data feed" in message and "delta.enableChangeDataFeed" in message
    assert not (TableName.parse("main.out.plain_1").local_path(warehouse)).exists()


def test_without_change_feed_a_replace_where_commit_names_its_keys_best_effort(
    spark: Any, warehouse: Path
) -> None:
    path = TableName.parse(PLAIN.name).local_path(warehouse)
    frame = spark.sql("SELECT TIMESTAMP'2024-03-09 10:00:00' AS ts, 7L AS v")
    frame.write.format("delta").mode("overwrite").option(
        "replaceWhere", "ts >= '2024-03-09' AND ts < '2024-03-10'"
    ).save(str(path))
    version = int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0][0])
    params = _triggered(PLAIN, version, **{TRIGGER_FROM_VERSION_PARAM: str(version)})
    result = run_job_locally(
        registry, "plain_job", params=params, warehouse=warehouse, run_id="401-0"
    )
    assert result.succeeded, result
    assert _days(spark, warehouse, "main.out.plain_1") == ["2024-03-09", "2024-03-10", "2024-03-11"]


def test_a_local_trigger_is_simulated_from_the_tables_current_versions(
    spark: Any, warehouse: Path
) -> None:
    from databricks_bundle_decorators.runtime.triggers.local_trigger import simulated_trigger

    path = TableName.parse(CDF.name).local_path(warehouse)
    latest = int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0][0])
    params = simulated_trigger(registry.get("lookback_job"), warehouse, from_version=2)
    assert json.loads(params[TRIGGER_TABLES_PARAM]) == [CDF.name]
    assert params[TRIGGER_VERSIONS_PARAM].startswith(f"{CDF.name}={latest}@")
    assert params[TRIGGER_FROM_VERSION_PARAM] == "2"


def test_deploy_records_the_first_watermark_through_a_sql_warehouse_once(
    spark: Any, warehouse: Path
) -> None:
    from databricks_bundle_decorators.launch.workspace.first_watermark import (
        NO_WAREHOUSE_LINE,
        record_first_watermarks,
    )
    from databricks_bundle_decorators.testing import JobsEmulator

    job = registry.get("deployed_job")
    path = TableName.parse(CDF.name).local_path(warehouse)
    latest = int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0][0])
    with JobsEmulator() as emulator:
        emulator.statements.add_warehouse("wh")
        emulator.statements.map_tables(spark, warehouse)
        client = emulator.workspace_client()
        lines = record_first_watermarks(client, "wh", [job], poll_interval=0.01)
        assert lines == [
            f"job 'deployed_job': first watermark {CDF.name} at version {latest} "
            f"(in {DEPLOY_STATE})"
        ]
        environment = RunEnvironment(spark, warehouse, False, "x")
        advance = TriggerState(environment, DEPLOY_STATE, "deployed_job").latest_advance()
        assert advance is not None and advance.versions == {CDF.name: latest}
        # A later deploy, after the source committed again, keeps the first watermark.
        _sql(spark, warehouse, CDF, "INSERT INTO {t} VALUES (TIMESTAMP'2024-03-02 09:00:00', 1)")
        again = record_first_watermarks(client, "wh", [job], poll_interval=0.01)
        assert again == ["job 'deployed_job': its watermark is already recorded; kept"]
        advance = TriggerState(environment, DEPLOY_STATE, "deployed_job").latest_advance()
        assert advance is not None and advance.versions == {CDF.name: latest}
    # No warehouse: one line, and deploy goes on.
    assert record_first_watermarks(None, None, [job, registry.get("plain_job")]) == [
        NO_WAREHOUSE_LINE.format(job="deployed_job"),
        NO_WAREHOUSE_LINE.format(job="plain_job"),
    ]


def test_from_version_overrides_the_recorded_watermark(spark: Any, warehouse: Path) -> None:
    early = _sql(spark, warehouse, CDF, _touch([5]))
    state = _state(spark, warehouse, "override_job", CDF)
    state.advance("deploy", {CDF.name: early}, [])  # 03-05's commit is recorded as processed
    late = _sql(spark, warehouse, CDF, _touch([12]))
    params = _triggered(CDF, late, **{TRIGGER_FROM_VERSION_PARAM: str(early)})
    result = run_job_locally(
        registry, "override_job", params=params, warehouse=warehouse, run_id="500-0"
    )
    assert result.succeeded, result
    # From the watermark alone: 03-12..03-14. From version `early` on: 03-05's commit too.
    expected = ["2024-03-05", "2024-03-06", "2024-03-07", "2024-03-12", "2024-03-13", "2024-03-14"]
    assert list(result.keys) == expected
    assert _days(spark, warehouse, "main.out.override_1") == expected
    state.refresh()
    advance = state.latest_advance()
    assert advance is not None and advance.versions == {CDF.name: late}


def test_dbxdec_run_local_trigger_writes_the_oldest_max_keys_and_status_shows_the_rest(
    spark: Any, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = warehouse.parent.parent  # the warehouse fixture is <root>/.dbxdec/warehouse
    (root / "pyproject.toml").write_text(
        '[project]\nname = "trigproj"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["tests.runtime.trigger_cli_pipeline"]\n'
    )
    dbxdec = Cli(root, capsys)
    first = _sql(spark, warehouse, CDF, _touch([3, 8]))  # 03-03..03-05 and 03-08..03-10
    job = "capped_trigger_job"
    trigger = ("--local", "--trigger", "table_update")
    code, out, err = dbxdec("run", job, *trigger, "--from-version", str(first))
    assert code == 0, err
    assert "succeeded for keys 2024-03-03..2024-03-05." in out  # max_keys=3: the oldest 3
    assert _days(spark, warehouse, "main.out.capped") == ["2024-03-03", "2024-03-04", "2024-03-05"]
    code, out, err = dbxdec("status", job, "--local")
    assert code == 0, err
    left = "3 keys left for the next runs (max_keys): 2024-03-08, 2024-03-09, 2024-03-10"
    assert left in out.splitlines()

    # No new commit: the next triggered run takes the pending keys, and none are left.
    code, out, err = dbxdec("run", job, *trigger)
    assert code == 0, err
    assert "succeeded for keys 2024-03-08..2024-03-10." in out
    assert _days(spark, warehouse, "main.out.capped") == [
        "2024-03-03", "2024-03-04", "2024-03-05", "2024-03-08", "2024-03-09", "2024-03-10"
    ]  # fmt: skip
    code, out, err = dbxdec("status", job, "--local")
    assert code == 0, err
    assert "keys left for the next runs" not in out
