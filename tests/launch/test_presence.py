"""``dbxdec catchup --by data``: the keys whose data is missing or empty, read from the
job's Delta tables -- locally on the embedded Spark, and on Databricks through a run of
the job, here on the Jobs API emulator with the real ``WorkspaceClient``.

The emulator runs no code, so a stand-in cluster (a thread) does what Databricks does
with the presence run: it executes ``dbxdec-run`` for each task with the run's job
parameters (on a local warehouse) and keeps each task's stdout as that task run's logs
(``JobsEmulator.set_task_logs``), which the emulator's ``jobs/runs/get-output`` answers,
as Databricks does for a wheel task (``RunOutput.logs``).
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill.wire import (
    BACKFILL_PARAM_DEFAULTS,
    KeyRange,
    PresenceOrder,
    decode_order,
)
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.backends.errors import PresenceFailed
from databricks_bundle_decorators.launch.operations.presence import (
    keys_missing_data_databricks,
    keys_missing_data_local,
)
from databricks_bundle_decorators.runtime import entrypoint
from databricks_bundle_decorators.testing import JobsEmulator
from tests.runtime.test_presence import FIVE_DAYS, MODULE, REGISTRY, presence_orders, write_days

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = pytest.mark.connect_lane

TASKS = ("write_orders", "write_totals", "write_snapshot", "notify")
JOB_PARAMS = {"rows": "2", **BACKFILL_PARAM_DEFAULTS}
GET_OUTPUT = "/api/2.2/jobs/runs/get-output"


def deploy(emu: JobsEmulator, parameters: dict[str, str] = JOB_PARAMS) -> int:
    tasks = [{"task_key": key} for key in TASKS]
    return emu.create_job("presence_orders", parameters=parameters, settings={"tasks": tasks})


@contextlib.contextmanager
def stand_in_cluster(
    emu: JobsEmulator, job_id: int, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """Executes the next run of the job as Databricks would: ``dbxdec-run`` per task with
    the run's parameters (references rendered), stdout kept as the task's logs; then
    ends the run. Yields the errors of tasks that did not exit 0."""
    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(warehouse))
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    emu.set_outcome("", hold=True)  # a presence run has no backfill_key
    errors: list[str] = []

    def execute() -> None:
        try:
            (run,) = emu.wait_for(lambda runs: bool(runs), job_id=job_id, what="the run")
            rendered = {**run.job_parameters, "backfill_run_time": "1704067200000"}
            for task_key, task_run_id in zip(TASKS, run.task_run_ids, strict=True):
                argv = [
                    "--dbxdec_job=presence_orders",
                    f"--dbxdec_task={task_key}",
                    f"--dbxdec_module={MODULE}",
                    f"--dbxdec_run_id={run.run_id}-0",
                    *(f"--{name}={value}" for name, value in rendered.items()),
                ]
                out = io.StringIO()
                with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
                    entrypoint.main(argv)
                if exited.value.code != 0:
                    errors.append(f"{task_key} exited {exited.value.code}: {out.getvalue()}")
                emu.set_task_logs(task_run_id, out.getvalue())
        except BaseException as exc:  # reported by the test, never a hang
            errors.append(repr(exc))
        finally:
            emu.release()

    worker = threading.Thread(target=execute, daemon=True)
    worker.start()
    try:
        yield errors
    finally:
        worker.join(timeout=120)


@pytest.mark.spark
@pytest.mark.not_in_connect_lane("lane budget: the Databricks presence run reads the same tables")
def test_local_days_two_and_four_missing_and_day_three_empty_are_exactly_the_keys(
    spark: Any, warehouse: Path
) -> None:
    write_days(warehouse, ["2024-01-01"])
    write_days(warehouse, ["2024-01-03"], rows=0)  # the run succeeded, with no rows
    write_days(warehouse, ["2024-01-05"])
    missing = keys_missing_data_local(
        REGISTRY, "presence_orders", FIVE_DAYS, warehouse=warehouse, spark=spark
    )
    assert missing == ["2024-01-02", "2024-01-03", "2024-01-04"]
    backwards = keys_missing_data_local(
        REGISTRY, presence_orders, FIVE_DAYS[::-1], warehouse=warehouse, spark=spark
    )
    assert backwards == ["2024-01-04", "2024-01-03", "2024-01-02"]  # the plan's order


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        pytest.param(["2023-12-31"], "is before the backfill's start_date", id="out-of-bounds"),
        pytest.param(["2024-1-2"], "2024-1-2", id="malformed"),
    ],
)
def test_a_key_that_is_not_the_job_s_is_refused(keys: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        keys_missing_data_local(REGISTRY, "presence_orders", keys, warehouse=Path("."))


def test_no_key_asked_reads_nothing(tmp_path: Path) -> None:
    assert keys_missing_data_local(REGISTRY, presence_orders, [], warehouse=tmp_path) == []


@pytest.mark.spark
def test_databricks_a_presence_run_reads_the_tables_and_its_tasks_report_back(
    spark: Any, warehouse: Path, emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_days(warehouse, ["2024-01-01"])
    write_days(warehouse, ["2024-01-03"], rows=0)
    write_days(warehouse, ["2024-01-05"])
    job_id = deploy(emu)
    asked = ["2024-01-02", "2024-01-01", "2024-01-03", "2024-01-05", "2024-01-04"]
    with stand_in_cluster(emu, job_id, warehouse, monkeypatch) as errors:
        missing = keys_missing_data_databricks(
            emu.workspace_client(), job_id, presence_orders, asked, poll_interval=0.05
        )
    assert errors == []
    assert missing == ["2024-01-02", "2024-01-03", "2024-01-04"]
    (run,) = emu.runs(job_id)
    assert decode_order(run.job_parameters["dbxdec_order"]) == PresenceOrder(
        KeyRange("2024-01-01", "2024-01-05")
    )
    assert run.job_parameters["backfill_key"] == ""  # a presence run processes no key
    assert run.result_state == "SUCCESS"
    assert emu.requests[GET_OUTPUT] == len(TASKS)


def test_databricks_a_failed_presence_run_is_reported_with_its_message(
    emu: JobsEmulator,
) -> None:
    job_id = deploy(emu)
    emu.set_outcome("", result="FAILED", message="Task write_orders failed")
    with pytest.raises(PresenceFailed) as failed:
        keys_missing_data_databricks(
            emu.workspace_client(), job_id, presence_orders, FIVE_DAYS, poll_interval=0.01
        )
    run_id = emu.runs(job_id)[-1].run_id
    assert str(failed.value).startswith(
        f"the presence run {run_id} of job 'presence_orders' failed: FAILED: Task write_orders "
        "failed; each task's output says what it read ("
    )
    assert emu.requests[GET_OUTPUT] == 0


def test_databricks_a_run_whose_tasks_report_nothing_is_not_read_as_all_present(
    emu: JobsEmulator,
) -> None:
    """The run succeeded but printed no report (e.g. a job deployed with an older
    dbxdec wheel): no key may be taken as present."""
    job_id = deploy(emu)
    with pytest.raises(PresenceFailed, match=r"reported nothing for table main\.presence\.orders"):
        keys_missing_data_databricks(
            emu.workspace_client(), job_id, presence_orders, FIVE_DAYS, poll_interval=0.01
        )
    assert emu.requests[GET_OUTPUT] == len(TASKS)


def test_databricks_a_run_past_the_timeout_is_cancelled(emu: JobsEmulator) -> None:
    job_id = deploy(emu)
    emu.set_outcome("", hold=True)
    with pytest.raises(PresenceFailed, match=r"did not end within 0 s; it was cancelled"):
        keys_missing_data_databricks(
            emu.workspace_client(), job_id, presence_orders, FIVE_DAYS, timeout=0
        )
    (run,) = emu.wait_for(
        lambda runs: runs[-1].life_cycle_state == "TERMINATED", job_id=job_id, what="cancel"
    )
    assert run.result_state == "CANCELED"


def test_databricks_a_job_deployed_without_the_parameter_is_refused(emu: JobsEmulator) -> None:
    old = {k: v for k, v in JOB_PARAMS.items() if k != "dbxdec_order"}
    job_id = deploy(emu, old)
    with pytest.raises(UsageError) as refused:
        keys_missing_data_databricks(emu.workspace_client(), job_id, presence_orders, FIVE_DAYS)
    assert str(refused.value) == (
        f"job 'presence_orders' (id {job_id}) was deployed without the dbxdec_order "
        "parameter (by an older dbxdec): deploy it again (dbxdec deploy) to find missing keys "
        "from the data, or catch up by run history; nothing was launched"
    )
    assert emu.runs(job_id) == []
