"""The catch-up after a backfill that paused B's trigger, on real local Delta: B's keyed
runs record the versions they read, the catch-up reads the change feed since B's
watermark through the emulated Statement Execution API and launches ONE run over exactly
the keys no run covered (none when all are), and that run advances the watermark."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill.wire import (
    BACKFILL_KEY_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    BACKFILL_START_KEY_PARAM,
    ORDER_PARAM,
    TaskOrder,
    encode_order,
    task_order,
)
from databricks_bundle_decorators.backfill.wire.trigger import (
    TRIGGER_VERSIONS_PARAM,
)
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.launch.operations.trigger_catch_up import catch_up_dependants
from databricks_bundle_decorators.runtime import run_job_locally
from databricks_bundle_decorators.runtime.storage.table_name import TableName
from databricks_bundle_decorators.runtime.triggers.trigger_state import TriggerState
from databricks_bundle_decorators.testing import JobsEmulator

from .trigger_chain import A_TABLE, B_TABLE, DEFINITIONS, FAIL, TRIGGERS, registry

pytestmark = pytest.mark.spark

NOW = datetime(2024, 1, 10, 12, tzinfo=timezone.utc)  # B's current key: 2024-01-10
RUN_TIME = {BACKFILL_RUN_TIME_PARAM: "2024-01-10T12:00:00+00:00"}
STATE = "main.chain.dbxdec_trigger_state"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Path:
    """A's table: days 2024-01-01..10 in one commit (version 0), change data feed on."""
    return a_warehouse(spark, tmp_path_factory.mktemp("catch_up") / ".dbxdec" / "warehouse")


def a_warehouse(spark: Any, folder: Path) -> Path:
    """``folder`` with A's table of days 2024-01-01..10 (version 0), change data feed on."""
    days = ", ".join(f"(TIMESTAMP'2024-01-{d:02d} 08:00:00', {d}L)" for d in range(1, 11))
    path = TableName.parse(A_TABLE).local_path(folder)
    spark.sql(
        f"CREATE TABLE delta.`{path}` USING delta TBLPROPERTIES "
        f"(delta.enableChangeDataFeed = true) AS SELECT * FROM VALUES {days} AS t(ts, v)"
    )
    return folder


def commit_to_a(spark: Any, warehouse: Path, days: list[int]) -> int:
    """One commit of A changing ``days``; its version."""
    path = TableName.parse(A_TABLE).local_path(warehouse)
    listed = ", ".join(map(str, days))
    spark.sql(f"UPDATE delta.`{path}` SET v = v + 100 WHERE day(ts) IN ({listed})")
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0][0])


def run_b(warehouse: Path, run_id: str, params: dict[str, str]) -> None:
    result = run_job_locally(
        registry, "job_b", params={**RUN_TIME, **params}, warehouse=warehouse, run_id=run_id
    )
    assert result.succeeded, result


def state(spark: Any, warehouse: Path) -> TriggerState:
    return TriggerState(RunEnvironment(spark, warehouse, False, "x"), STATE, "job_b")


def b_last_commit(spark: Any, warehouse: Path) -> tuple[int, list[str]]:
    """B's last commit: the rows it wrote, and the days whose row it added or rewrote."""
    path = TableName.parse(B_TABLE).local_path(warehouse)
    last = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]

    def rows(version: int) -> set[tuple[str, Any]]:
        frame = spark.read.format("delta").option("versionAsOf", version).load(str(path))
        return {(str(r[0]), r[1]) for r in frame.select("day", "written_at").collect()}

    changed = rows(last["version"]) - rows(last["version"] - 1)
    return int(last["operationMetrics"]["numOutputRows"]), sorted(day for day, _ in changed)


def test_the_catch_up_runs_only_the_keys_the_backfill_did_not_cover(
    spark: Any, warehouse: Path
) -> None:
    state(spark, warehouse).advance("deploy", {A_TABLE: 0}, [])  # B's first watermark
    commit_to_a(spark, warehouse, [3])  # the backfill of A: version 1 ...
    read = commit_to_a(spark, warehouse, [4, 5])  # ... and 2
    # B's downstream slice over the keys those commits affect (lookback 1): 03..06
    run_b(warehouse, "500-0", {BACKFILL_START_KEY_PARAM: "2024-01-03", BACKFILL_KEY_PARAM: "2024-01-06"})  # fmt: skip
    covered = state(spark, warehouse).rows_of("covered")
    assert [(run, json.loads(value)) for run, _, _, value in covered] == [
        ("500", {"keys": [f"2024-01-0{d}" for d in (3, 4, 5, 6)], "versions": {A_TABLE: read}})
    ]

    with JobsEmulator() as emu:
        emu.statements.add_warehouse("wh")
        emu.statements.map_tables(spark, warehouse)
        job_id = emu.create_job("job_b", settings={"trigger": dict(TRIGGERS["job_b"])})

        def catch_up(backfill_id: str) -> Any:
            (done,) = catch_up_dependants(
                emu.workspace_client(), "wh", ["job_b"], definitions=DEFINITIONS,
                job_id_of=lambda name: job_id, backfill_id=backfill_id, now=NOW,
                poll_interval=0.01,
            )  # fmt: skip
            return done

        # Everything the trigger would have run was covered: no run, the watermark moves.
        first = catch_up("bf-1")
        assert (first.keys, first.run_id) == ((), None)
        assert emu.run_now_bodies() == []
        latest = state(spark, warehouse).latest_advance()
        assert latest is not None and (latest.versions, latest.pending) == ({A_TABLE: 2}, ())

        # A second backfill: someone commits day 8 (v3); B's slice 08..09 reads it; then
        # days 1 and 4 change (v4), after every slice read A.
        commit_to_a(spark, warehouse, [8])
        run_b(warehouse, "501-0", {BACKFILL_START_KEY_PARAM: "2024-01-08", BACKFILL_KEY_PARAM: "2024-01-09"})  # fmt: skip
        newest = commit_to_a(spark, warehouse, [1, 4])
        second = catch_up("bf-2")

        owed = ("2024-01-01", "2024-01-02", "2024-01-04", "2024-01-05")
        assert second.keys == owed and second.run_id is not None
        (body,) = emu.run_now_bodies()
        params = body["job_parameters"]
        assert task_order(params).keys == owed  # 08 and 09 were covered
        assert params[TRIGGER_VERSIONS_PARAM] == f"{A_TABLE}={newest}@"
        assert [r.run_id for r in emu.runs(job_id)] == [second.run_id]  # ONE run
        latest = state(spark, warehouse).latest_advance()
        assert latest is not None and (latest.versions, latest.pending) == ({A_TABLE: 4}, owed)

    # The catch-up run, as the cluster runs it: exactly those keys, then the watermark.
    run_b(warehouse, "600-0", dict(params))
    assert b_last_commit(spark, warehouse) == (4, list(owed))
    latest = state(spark, warehouse).latest_advance()
    assert latest is not None and (latest.versions, latest.pending) == ({A_TABLE: newest}, ())


def test_a_failed_keyed_run_covers_nothing_and_bad_given_keys_are_one_line(
    spark: Any, tmp_path: Path
) -> None:
    # A warehouse of its own, not the module's: it must not lean on what the other test
    # left there, nor leave it rows (a CI run once had this test find none of them).
    warehouse = a_warehouse(spark, tmp_path / ".dbxdec" / "warehouse")
    run_b(warehouse, "699-0", {BACKFILL_KEY_PARAM: "2024-01-06"})  # a run that covers
    before = [run for run, *_ in state(spark, warehouse).rows_of("covered")]
    assert "699" in before
    FAIL.add("job_b")
    try:
        failed = run_job_locally(
            registry, "job_b", params={**RUN_TIME, BACKFILL_KEY_PARAM: "2024-01-07"},
            warehouse=warehouse, run_id="700-0",
        )  # fmt: skip
    finally:
        FAIL.discard("job_b")
    assert not failed.succeeded
    assert [run for run, *_ in state(spark, warehouse).rows_of("covered")] == before

    params = {
        **RUN_TIME,
        ORDER_PARAM: encode_order(TaskOrder(keys=("2023-12-31",))),  # before the start
        TRIGGER_VERSIONS_PARAM: f"{A_TABLE}=1@",
    }
    bad = run_job_locally(registry, "job_b", params=params, warehouse=warehouse, run_id="701-0")
    (error,) = [t.error for t in bad.tasks]
    assert error is not None and "\n" not in error and "dbxdec_order" in error
