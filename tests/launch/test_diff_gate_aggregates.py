"""The diff gate with declared aggregates, on real Delta tables: locally, and on
Databricks through the Jobs API emulator with the real ``WorkspaceClient``.

``gate_amounts`` writes 10 rows per day with ``amount = 10 * scale / 100`` (job parameter
``scale``), so ``sum(amount)`` per day is ``scale`` while the row count never moves: only
the declared aggregate can stop a canary.

On Databricks the emulator runs no code. A stand-in cluster (a thread) does what
Databricks does with each run of the job: it executes ``dbxdec-run`` (the real entry
point) for the job's task with the run's job parameters, ``{{job.run_id}}-0`` as
``dbxdec_run_id`` and the trigger time rendered, on a local warehouse, keeps its stdout
as the task run's logs (``JobsEmulator.set_task_logs``, answered by
``jobs/runs/get-output``), then ends the run. Real: the launcher, scheduler, Databricks
backend and measurement request over HTTP, the canary's Delta write and the measurement
run's Delta time travel; stand-in: the cluster starting ``dbxdec-run`` and Databricks
keeping its stdout.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill, Registry, job, params, task
from databricks_bundle_decorators.backfill.wire import (
    BACKFILL_PARAM_DEFAULTS,
    KeyRange,
    MeasureOrder,
    decode_order,
)
from databricks_bundle_decorators.checks import CountDistinct, Sum
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys
from databricks_bundle_decorators.launch.backends.measure_run import (
    MeasurementFailed,
    RemoteKeyChanges,
)
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Connection,
    Pacing,
    plan_backfill,
    run_backfill,
)
from databricks_bundle_decorators.launch.ledger.ledger import Ledger
from databricks_bundle_decorators.launch.plan.options import LaunchOptions
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.runtime import entrypoint
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from databricks_bundle_decorators.runtime.running.local import run_job_locally
from databricks_bundle_decorators.testing import JobsEmulator

MODULE = __name__
REGISTRY = Registry()
AMOUNTS = "main.gate.amounts"
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]
STOPPED = (
    "diff gate 10%: main.gate.amounts key 2024-01-01: sum(amount) 100.0 -> 40.0 "
    "(-60%, versions 0 -> 1)"
)
amounts_io = SparkTableIoManager(
    AMOUNTS, partition_column="day", gate=[Sum("amount"), CountDistinct("customer")]
)


@job(params={"scale": "100"}, backfill=DailyBackfill("2024-01-01", "2024-01-31"), registry=REGISTRY)
def gate_amounts() -> None:
    @task(io_manager=amounts_io)
    def write_amounts() -> Any:
        from pyspark.sql import SparkSession

        amount = 10.0 * int(params["scale"]) / 100
        rows = [(k, n % 5, amount) for k in get_written_keys() for n in range(10)]
        return SparkSession.builder.getOrCreate().createDataFrame(
            rows, "day string, customer int, amount double"
        )

    write_amounts()


def sums(spark: Any, warehouse: Path) -> dict[str, float]:
    path = str(local_table_path(AMOUNTS, warehouse))
    found = spark.read.format("delta").load(path).groupBy("day").sum("amount").collect()
    return {str(r[0]): float(r[1]) for r in found}


def seed(warehouse: Path) -> None:
    """Version 0: the three days at scale 100 (sum 100.0 each), written by no backfill."""
    params = {"backfill_start_key": DAYS[0], "backfill_key": DAYS[-1]}
    result = run_job_locally(REGISTRY, "gate_amounts", params=params, warehouse=warehouse)
    assert result.succeeded, [t.error for t in result.failed]


def gated(scale: int, days: list[str], connection: Connection) -> BackfillRequest:
    return BackfillRequest(
        "gate_amounts", start=days[0], end=days[-1],
        options=LaunchOptions(params={"scale": str(scale)}, canary=1, diff_gate=10.0),
        connection=connection, pacing=Pacing(poll_interval=0.02),
    )  # fmt: skip


def launch(request: BackfillRequest, root: Path, warehouse: Path, **more: Any) -> Ledger:
    prepared = plan_backfill(request, root=root, registry=REGISTRY, warehouse=warehouse, **more)
    run_backfill(prepared, JsonReporter(io.StringIO()))
    return prepared.ledger


@pytest.mark.spark
def test_local_a_canary_whose_sum_drops_60_percent_stops_and_plus_5_percent_goes_on(
    spark: Any, tmp_path: Path
) -> None:
    root, warehouse = tmp_path / "proj", tmp_path / "warehouse"
    root.mkdir()
    seed(warehouse)
    local = Connection(local=True)

    stopped = launch(gated(40, DAYS, local), root, warehouse)
    assert [s.state for s in stopped.slices] == ["failed", "pending", "pending"]
    assert stopped.slices[0].attempts[-1].error == STOPPED
    assert sums(spark, warehouse) == {DAYS[0]: 40.0, DAYS[1]: 100.0, DAYS[2]: 100.0}

    passed = launch(gated(105, DAYS[1:2], local), root, warehouse)  # one canary, measured
    assert [s.state for s in passed.slices] == ["succeeded"]
    assert sums(spark, warehouse) == {DAYS[0]: 40.0, DAYS[1]: 105.0, DAYS[2]: 100.0}


@contextlib.contextmanager
def stand_in_cluster(
    emu: JobsEmulator, job_id: int, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """Executes every run of the job as Databricks would (see the module docs); yields
    the errors of task runs that did not exit 0."""
    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(warehouse))
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    emu.hold_runs = True  # a run is RUNNING until the stand-in has executed it
    done: set[int] = set()
    errors: list[str] = []
    stop = threading.Event()

    def next_run() -> Any:
        runs = emu.wait_for(
            lambda runs: (
                stop.is_set()
                or any(r.life_cycle_state == "RUNNING" and r.run_id not in done for r in runs)
            ),
            job_id=job_id,
            what="a run to execute",
            timeout=300,
        )
        waiting = [r for r in runs if r.life_cycle_state == "RUNNING" and r.run_id not in done]
        return None if stop.is_set() else waiting[0]

    def execute() -> None:
        try:
            while (run := next_run()) is not None:
                rendered = {**run.job_parameters, "backfill_run_time": "1704067200000"}
                argv = [
                    "--dbxdec_job=gate_amounts",
                    "--dbxdec_task=write_amounts",
                    f"--dbxdec_module={MODULE}",
                    f"--dbxdec_run_id={run.run_id}-0",  # {{job.run_id}}-{{job.repair_count}}
                    *(f"--{name}={value}" for name, value in rendered.items()),
                ]
                out = io.StringIO()
                with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
                    entrypoint.main(argv)
                if exited.value.code != 0:
                    errors.append(f"run {run.run_id} exited {exited.value.code}: {out.getvalue()}")
                (task_run_id,) = run.task_run_ids
                emu.set_task_logs(task_run_id, out.getvalue())
                done.add(run.run_id)
                emu.release(run.outcome_key)
        except BaseException as exc:  # reported by the test, never a hang
            errors.append(repr(exc))

    worker = threading.Thread(target=execute, daemon=True)
    worker.start()
    try:
        yield errors
    finally:
        stop.set()
        emu.release("no such key")  # wakes the stand-in's wait
        worker.join(timeout=120)


@pytest.mark.spark
def test_databricks_a_canary_whose_sum_drops_60_percent_is_stopped_by_the_measurement_run(
    spark: Any, tmp_path: Path, emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, warehouse = tmp_path / "proj", tmp_path / "warehouse"
    root.mkdir()
    seed(warehouse)
    parameters = {"scale": "100", **BACKFILL_PARAM_DEFAULTS}
    job_id = emu.create_job(
        "gate_amounts", parameters=parameters, settings={"tasks": [{"task_key": "write_amounts"}]}
    )
    with stand_in_cluster(emu, job_id, warehouse, monkeypatch) as errors:
        ledger = launch(
            gated(40, DAYS, Connection(job_id=job_id)),
            root,
            warehouse,
            client=emu.workspace_client(),
        )
    assert errors == []
    assert [s.state for s in ledger.slices] == ["failed", "pending", "pending"]
    assert ledger.slices[0].attempts[-1].error == STOPPED
    canary, measure = emu.runs(job_id)  # nothing else launched
    assert canary.job_parameters["backfill_key"] == DAYS[0]
    assert measure.job_parameters["backfill_key"] == ""  # the measurement processes no key
    assert decode_order(measure.job_parameters["dbxdec_order"]) == MeasureOrder(
        str(canary.run_id), ledger.id, KeyRange(DAYS[0], DAYS[0])
    )
    assert sums(spark, warehouse) == {DAYS[0]: 40.0, DAYS[1]: 100.0, DAYS[2]: 100.0}


def test_databricks_a_job_deployed_without_the_measure_parameter_is_refused(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    old = {k: v for k, v in BACKFILL_PARAM_DEFAULTS.items() if k != "dbxdec_order"}
    job_id = emu.create_job("gate_amounts", parameters={"scale": "100", **old})
    with pytest.raises(UsageError) as refused:
        plan_backfill(
            gated(40, DAYS, Connection(job_id=job_id)),
            root=tmp_path,
            registry=REGISTRY,
            warehouse=tmp_path / "warehouse",
            client=emu.workspace_client(),
        )
    assert str(refused.value) == (
        f"job 'gate_amounts' (id {job_id}) was deployed without the dbxdec_order parameter "
        "(by an older dbxdec): deploy it again (dbxdec deploy) to --diff-gate; nothing was "
        "launched"
    )
    assert emu.runs(job_id) == []


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        pytest.param(
            {"result": "FAILED", "message": "Task write_amounts failed"},
            r"the measurement run \d+ failed: FAILED: Task write_amounts failed",
            id="failed",
        ),
        pytest.param(
            {},
            r"the measurement run \d+ reported nothing for table main\.gate\.amounts; was the "
            r"job deployed by this dbxdec\? \(dbxdec deploy\)",
            id="no-report",
        ),
    ],
)
def test_databricks_a_measurement_that_tells_nothing_is_never_within_the_gate(
    emu: JobsEmulator, outcome: dict[str, str], message: str
) -> None:
    """A failed measurement run, or one whose tasks printed no report (e.g. an older
    dbxdec wheel on the cluster), is not read as "nothing moved"."""
    job_id = emu.create_job(
        "gate_amounts",
        parameters={"scale": "100", **BACKFILL_PARAM_DEFAULTS},
        settings={"tasks": [{"task_key": "write_amounts"}]},
    )
    emu.set_outcome("", **outcome)  # type: ignore[arg-type]
    measure = RemoteKeyChanges(
        emu.workspace_client(), job_id, REGISTRY.get("gate_amounts"), poll_interval=0.01
    )
    with pytest.raises(MeasurementFailed, match=message):
        measure("41", [DAYS[0]], "gate-1")
    (run,) = emu.runs(job_id)
    assert decode_order(run.job_parameters["dbxdec_order"]) == MeasureOrder(
        "41", "gate-1", KeyRange(DAYS[0], DAYS[0])
    )
