"""A real ``--downstream`` backfill of A on the emulator, ending with the real catch-up:
B's table-update trigger is paused while it runs, the catch-up reads B's state and A's
change feed through the emulated Statement Execution API on local Delta, launches ONE
run of B over exactly the keys no run of the backfill covered (none when all were), and
only then is the trigger restored.

Real: the launcher, per-job backend, trigger pause and restore, the catch-up and its
statements (real Delta: ``DESCRIBE HISTORY``, ``table_changes``, the state table).
Stand-in: the cluster. The emulator simulates the runs; while each is held RUNNING, a
thread writes what that run writes on Databricks and the catch-up reads: A's run of
day K commits day K to A (change data feed on); B's run of key K records what it
covered (:mod:`databricks_bundle_decorators.runtime.triggers.trigger_state`: its key,
A's latest version when it ran).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import MonthlyBackfill, Registry, task
from databricks_bundle_decorators.backfill.wire import TaskOrder, order_in
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.definitions.triggers import TableUpdate
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.launch.launcher import plan_backfill, run_backfill
from databricks_bundle_decorators.runtime.storage.table_name import TableName
from databricks_bundle_decorators.runtime.triggers.trigger_state import (
    COVERED,
    TriggerState,
    covered_value,
)
from databricks_bundle_decorators.testing import JobsEmulator

from .test_downstream_databricks import KEY, Lines, deploy, request, status
from .trigger_chain import A_DAILY, A_SRC, A_TABLE, B_DAILY, B_SRC, B_TABLE, C_TABLE

pytestmark = pytest.mark.spark

STATE = "main.chain.dbxdec_trigger_state"
OUTSIDE = "2024-01-10"  # the day of A another writer commits while B's trigger is paused
registry = Registry()
"""trigger_chain's A -> B -> C alone: no two of their runs hold the same key at once (B's
K waits for A's K; C's month for every B key of it), so releasing a held run by its key
(the emulator's only way) ends that run and no other."""


def _writes(table: str) -> None:
    @task(name="t", io_manager=SparkTableIoManager(table, partition_column="day"))
    def t() -> Any:
        raise NotImplementedError  # the emulator simulates the runs

    t()


@registry.job(name="job_a", backfill=A_DAILY)
def job_a() -> None:
    _writes(A_TABLE)


@registry.job(name="job_b", backfill=B_DAILY, sources=[A_SRC], triggered_by=TableUpdate([A_SRC]))
def job_b() -> None:
    _writes(B_TABLE)


@registry.job(
    name="job_c", backfill=MonthlyBackfill("2024-01-01"), sources=[B_SRC],
    triggered_by=TableUpdate([B_SRC]),
)  # fmt: skip
def job_c() -> None:
    _writes(C_TABLE)


def a_path(warehouse: Path) -> str:
    return str(TableName.parse(A_TABLE).local_path(warehouse))


def commit_day(spark: Any, warehouse: Path, day: str) -> None:
    """One commit of A changing day ``day``'s row."""
    where = f"to_date(ts) = DATE'{day}'"
    spark.sql(f"UPDATE delta.`{a_path(warehouse)}` SET v = v + 100 WHERE {where}")


def latest(spark: Any, warehouse: Path) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{a_path(warehouse)}` LIMIT 1").first()[0])


def b_state(spark: Any, warehouse: Path) -> TriggerState:
    return TriggerState(RunEnvironment(spark, warehouse, False, "x"), STATE, "job_b")


def _chain_warehouse(
    emu: JobsEmulator, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The local warehouse (A, change data feed on, with a row a day; B's first
    watermark), served as SQL warehouse ``wh``, named in ``DATABRICKS_WAREHOUSE_ID``."""
    warehouse = tmp_path / "warehouse"
    _chain_tables(spark, warehouse)
    emu.statements.add_warehouse("wh")
    emu.statements.map_tables(spark, warehouse)
    monkeypatch.setenv("DATABRICKS_WAREHOUSE_ID", "wh")
    return warehouse


def _chain_tables(spark: Any, warehouse: Path) -> None:
    """A (change data feed on) with a row a day, and B's first watermark."""
    days = ", ".join(
        f"(TIMESTAMP'{day} 08:00:00', 1L)"
        for day in [f"2024-01-{d:02d}" for d in range(5, 32)] + ["2024-02-01", "2024-02-02"]
    )
    spark.sql(
        f"CREATE TABLE delta.`{a_path(warehouse)}` USING delta TBLPROPERTIES "
        f"(delta.enableChangeDataFeed = true) AS SELECT * FROM VALUES {days} AS t(ts, v)"
    )
    b_state(spark, warehouse).advance("deploy", {A_TABLE: 0}, [])  # B's first watermark


def stand_in(
    emu: JobsEmulator, ids: dict[str, int], spark: Any, warehouse: Path, outside: bool
) -> tuple[threading.Thread, threading.Event, list[str]]:
    """The thread that does each held run's writes (see the module docs), then ends it;
    with ``outside``, another writer commits day :data:`OUTSIDE` of A before A's first run writes,
    while B's trigger is paused. Returns the thread, its stop event and what it saw."""
    stop, seen, done = threading.Event(), [], set()
    by_id = {job_id: name for name, job_id in ids.items()}

    def waiting(runs: list[Any]) -> list[Any]:  # of the chain's jobs (not a controller's)
        return [
            r
            for r in runs
            if r.life_cycle_state == "RUNNING" and r.run_id not in done and r.job_id in by_id
        ]

    def work() -> None:
        try:
            while True:
                runs = emu.wait_for(lambda rs: stop.is_set() or bool(waiting(rs)), timeout=300)
                if stop.is_set():
                    return
                run = waiting(runs)[0]
                job, key = by_id[run.job_id], run.job_parameters.get(KEY, "")
                if job == "job_a" and outside and not seen:
                    seen.append(f"outside commit, B {status(emu, ids['job_b'])}")
                    commit_day(spark, warehouse, OUTSIDE)
                if job == "job_a":
                    commit_day(spark, warehouse, key)
                elif job == "job_b" and key:
                    value = covered_value([key], {A_TABLE: latest(spark, warehouse)})
                    b_state(spark, warehouse).append_rows(
                        [("job_b", str(run.run_id), COVERED, "", value)]
                    )
                done.add(run.run_id)
                emu.release(run.outcome_key)
        except BaseException as exc:  # reported by the test, never a hang
            seen.append(repr(exc))

    return threading.Thread(target=work, daemon=True), stop, seen


def given_keys(body: dict[str, Any]) -> tuple[str, ...]:
    """The keys a run-now body's order gives the run (a catch-up run's)."""
    order = order_in(body["job_parameters"])
    return order.keys if isinstance(order, TaskOrder) else ()


@pytest.mark.parametrize("outside", [True, False], ids=["uncovered-day", "all-covered"])
def test_the_catch_up_at_the_end_runs_only_the_uncovered_keys_before_the_restore(
    emu: JobsEmulator,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    outside: bool,
) -> None:
    warehouse = _chain_warehouse(emu, spark, tmp_path, monkeypatch)
    ids = deploy(emu)
    prepared = plan_backfill(
        request(), root=tmp_path, registry=registry, warehouse=warehouse,
        client=emu.workspace_client(),
    )  # fmt: skip
    prepared.options = replace(prepared.options, max_poll_interval=0.05)
    slices = len(prepared.ledger.slices)
    if outside:  # the first run-now after every slice's run ended (the catch-up) waits
        emu.block_submissions(lambda rs: len(rs) >= slices and not any(r.active for r in rs))
    emu.hold_runs = True
    worker, stop, seen = stand_in(emu, ids, spark, warehouse, outside)
    worker.start()
    reporter = Lines()
    outcome: list[int] = []
    launcher = threading.Thread(target=lambda: outcome.append(run_backfill(prepared, reporter).exit_code))  # fmt: skip
    launcher.start()
    try:
        if outside:
            emu.wait_for_blocked_submissions(1, timeout=300)
            # launched at the end, while B's trigger is still paused
            assert status(emu, ids["job_b"]) == "PAUSED"
            emu.unblock_submissions()
        launcher.join(timeout=300)
    finally:
        emu.unblock_submissions()
        stop.set()
        emu.release()
        worker.join(timeout=120)
        launcher.join(timeout=120)
    assert outcome == [0] and not launcher.is_alive()
    assert seen == (["outside commit, B PAUSED"] if outside else [])
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"

    catch_ups = [b for b in emu.run_now_bodies() if given_keys(b)]
    if outside:
        # A's days 01-30..02-01 changed under B's keys 01-30..02-02 (lookback 1), each
        # covered by B's run of it; the outside day 01-10 under 01-10 and 01-11: no run
        (body,) = catch_ups  # ONE catch-up run, of B
        assert body["job_id"] == ids["job_b"]
        assert given_keys(body) == ("2024-01-10", "2024-01-11")
        assert "job 'job_b': catch-up run " in "\n".join(reporter.lines)
    else:
        assert catch_ups == []
        assert "job 'job_b': the backfill covered every key its trigger would run" in reporter.lines
    b_keys = sorted(r.job_parameters.get(KEY) for r in emu.runs(ids["job_b"]) if r.job_parameters.get(KEY))  # fmt: skip
    assert b_keys == ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02"]


def test_a_detached_backfill_s_last_controller_run_launches_the_catch_up_of_the_uncovered_keys(
    emu: JobsEmulator, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same backfill with ``--detach``: the controller run (a subprocess, importing
    B's definition from this module) launches the one catch-up run of B over the day
    another writer changed, while B's trigger is still paused, then restores it."""
    from databricks_bundle_decorators.launch.control.detach import detach_backfill
    from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

    from .controller_fixtures import controller_job

    warehouse = _chain_warehouse(emu, spark, tmp_path, monkeypatch)
    ids = deploy(emu)
    ctl = controller_job(emu)
    processes_of(emu).extra_env = {"DBXDEC_CLAIMS_DIR": "/Shared/dbxdec/claims"}
    prepared = plan_backfill(
        request(), root=tmp_path, registry=registry, warehouse=warehouse,
        client=emu.workspace_client(),
    )  # fmt: skip
    slices = len(prepared.ledger.slices)

    def chain_ended(runs: list[Any]) -> bool:  # the catch-up's run-now waits at the gate
        mine = [r for r in runs if r.job_id != ctl]
        return len(mine) >= slices and not any(r.active for r in mine)

    emu.block_submissions(chain_ended)
    emu.hold_runs = True
    worker, stop, seen = stand_in(emu, ids, spark, warehouse, True)
    worker.start()
    try:
        detach_backfill(prepared, root=tmp_path)
        emu.wait_for_blocked_submissions(1, timeout=300)
        assert status(emu, ids["job_b"]) == "PAUSED"  # launched before the restore
        emu.unblock_submissions()
        emu.wait_for(
            lambda runs: bool(runs) and not any(r.active for r in runs),
            job_id=ctl,
            timeout=300,
            what="the controller run ended",
        )
    finally:
        emu.unblock_submissions()
        stop.set()
        emu.release()
        worker.join(timeout=120)
    out = "\n".join((a.stdout + a.stderr).decode() for a in processes_of(emu).outputs())
    assert seen == ["outside commit, B PAUSED"], out
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    catch_ups = [b for b in emu.run_now_bodies() if given_keys(b)]
    (body,) = catch_ups  # ONE catch-up run, of B, over the days no run of B covered
    assert body["job_id"] == ids["job_b"], out
    assert given_keys(body) == ("2024-01-10", "2024-01-11")
    assert "job 'job_b': catch-up run " in out
