"""A failed notebook task run keeps its reports in its backfill's journal folder
(``runtime.notebook_entry.keep_failed_reports``), and the one reader of a task run's
reports (``launch.backends.task_output``) reads them there for a notebook task run that
did not succeed -- decided by the task run's state, never by what is empty. On the
Jobs API emulator with the real ``WorkspaceClient``; no Spark."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.backfill.check_report import (
    TASK_RUN_ID_PARAM,
    CheckReport,
    CheckResult,
)
from databricks_bundle_decorators.backfill.wire import (
    ORDER_PARAM,
    TaskOrder,
    encode_order,
    exit_value,
)
from databricks_bundle_decorators.launch.backends.task_output import read_check_results
from databricks_bundle_decorators.runtime.notebook_entry import keep_failed_reports
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import BACKFILL_PARAMS

BACKFILL_ID = "nightly-20240101T000000-ab12"
ORDER = encode_order(TaskOrder(backfill_id=BACKFILL_ID))
TASKS = [{"task_key": "discover", "notebook_task": {"notebook_path": "./n/j__discover.py"}}]


def failed_notebook_run(emu: JobsEmulator, result: str) -> tuple[int, int, int, str]:
    """A run of a one-notebook-task job in backfill ``BACKFILL_ID`` ending ``result``:
    the job id, run id, task run id and the task's report line."""
    parameters = {**BACKFILL_PARAMS, ORDER_PARAM: ""}
    job_id = emu.create_job("nightly", parameters=parameters, settings={"tasks": TASKS})
    emu.set_outcome("2024-01-01", result=result, message="check failed")
    run_id = (
        emu.workspace_client()
        .jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-01", ORDER_PARAM: ORDER})
        .run_id
    )
    emu.wait_until_idle()
    (task_run_id,) = emu.runs(job_id)[0].task_run_ids
    found = CheckResult("min_row_count(1)", "2024-01-01", 0.0, ">= 1", False, "discover")
    line = CheckReport((found,), f"{run_id}-0", "discover", str(task_run_id)).to_line()
    return job_id, run_id, task_run_id, line


def test_a_failed_notebook_run_s_kept_reports_are_its_check_results(
    workspace_env: JobsEmulator,
) -> None:
    job_id, run_id, task_run_id, line = failed_notebook_run(workspace_env, "FAILED")
    params = {ORDER_PARAM: ORDER, TASK_RUN_ID_PARAM: str(task_run_id)}
    keep_failed_reports(params, [line])
    kept = f"/Shared/dbxdec/backfills/job-{job_id}/{BACKFILL_ID}/reports/task-{task_run_id}.json"
    assert workspace_env.workspace_files("/Shared") == {kept: exit_value([line]).encode()}
    (result,) = read_check_results(workspace_env.workspace_client(), run_id)
    assert (result.check, result.passed) == ("min_row_count(1)", False)


def test_a_successful_notebook_run_is_read_from_its_exit_value_only(emu: JobsEmulator) -> None:
    job_id, run_id, task_run_id, line = failed_notebook_run(emu, "SUCCESS")
    kept = f"/Shared/dbxdec/backfills/job-{job_id}/{BACKFILL_ID}/reports/task-{task_run_id}.json"
    emu.put_workspace_file(kept, exit_value([line]).encode())  # not its channel
    assert read_check_results(emu.workspace_client(), run_id) == ()


def test_reports_that_cannot_be_kept_are_one_line_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", "/nonexistent/databrickscfg")
    keep_failed_reports({ORDER_PARAM: ORDER, TASK_RUN_ID_PARAM: "7"}, ["dbxdec-report: {}"])
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("dbxdec: the failed run's reports could not be kept in the workspace")


def test_nothing_is_kept_outside_a_backfill(capsys: pytest.CaptureFixture[str]) -> None:
    keep_failed_reports({TASK_RUN_ID_PARAM: "7"}, ["dbxdec-report: {}"])  # no order
    assert capsys.readouterr().err == ""
