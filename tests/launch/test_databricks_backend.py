"""The Databricks backend over the real WorkspaceClient and the emulator."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.backends.backends import SubmitRejected, SubmitRequest
from databricks_bundle_decorators.launch.backends.databricks_backend import (
    DatabricksBackend,
    connect,
    find_job,
    run_history,
)
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS

LIST = "/api/2.2/jobs/runs/list"


def request(key: str, token: str | None = None) -> SubmitRequest:
    return SubmitRequest(token or f"tok-{key}", {**BACKFILL_PARAMS, "backfill_key": key}, key)


def test_one_batched_request_polls_many_runs(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    backend = DatabricksBackend(emu.workspace_client(), job_id)
    ids = [backend.submit(request(f"k{i}")).run_id for i in range(30)]
    emu.wait_until_idle()
    emu.requests.clear()

    statuses = backend.poll(ids[2:])

    assert set(statuses) == set(ids[2:]) and all(s.state == "succeeded" for s in statuses.values())
    # the active page (empty), then 28 runs of unknown start: the two newest completed
    # pages hold them (of three at most), no runs/get
    assert emu.requests[LIST] == 3


def test_a_run_ending_alone_is_looked_up_alone(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.set_outcome("slow", duration=0.3)
    backend = DatabricksBackend(emu.workspace_client(), job_id, straggler_interval=60)
    slow = backend.submit(request("slow")).run_id
    quick = [backend.submit(request(f"k{i}")).run_id for i in range(100)]
    emu.wait_until_idle()
    assert len(backend.poll(quick)) == 100
    emu.requests.clear()

    # the active page (empty), and one runs/get: cheaper than any page for one run
    assert backend.poll([slow])[slow].state == "succeeded"
    assert (emu.requests[LIST], emu.requests["/api/2.2/jobs/runs/get"]) == (1, 1)


def test_failed_runs_carry_the_state_message(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.set_outcome("bad", result="FAILED", message="disk full")
    backend = DatabricksBackend(emu.workspace_client(), job_id)
    run_id = backend.submit(request("bad")).run_id
    emu.wait_until_idle()
    status = backend.poll([run_id])[run_id]
    assert status.state == "failed" and status.message == "FAILED: disk full"
    assert status.url and f"/run/{run_id}" in status.url


def test_same_token_same_run_and_rejections(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    backend = DatabricksBackend(emu.workspace_client(), job_id)
    assert backend.submit(request("a", "t1")) == backend.submit(request("a", "t1"))
    with pytest.raises(SubmitRejected) as rejected:
        backend.submit(request("a", "x" * 65))  # token too long: 400
    assert not rejected.value.fatal
    with pytest.raises(SubmitRejected) as gone:
        DatabricksBackend(emu.workspace_client(), 999).submit(request("a"))
    assert "999" in str(gone.value)


def test_find_job_by_name_prefix_and_id(emu: JobsEmulator) -> None:
    w = emu.workspace_client()
    prod = emu.create_job("nightly", max_concurrent_runs=3, queue=False)
    dev = emu.create_job("[dev emulator] nightly")
    staged = emu.create_job("[stage emulator] nightly")
    assert find_job(w, "nightly").job_id == prod
    assert find_job(w, "nightly").max_concurrent_runs == 3
    assert not find_job(w, "nightly").queue_enabled
    assert find_job(w, "nightly", dev_mode=True).job_id == dev
    prefix = "[stage ${workspace.current_user.short_name}] "
    assert find_job(w, "nightly", name_prefix=prefix).job_id == staged
    assert find_job(w, "whatever", job_id=dev).name == "[dev emulator] nightly"
    emu.create_job("nightly")
    with pytest.raises(UsageError, match="several jobs are named 'nightly'"):
        find_job(w, "nightly")


def test_run_history_maps_runs_to_keys(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    backend = DatabricksBackend(emu.workspace_client(), job_id)
    emu.set_outcome("2024-01-03", result="FAILED")
    backend.submit(
        SubmitRequest("r", {"backfill_key": "2024-01-02", "backfill_start_key": "2024-01-01"}, "r")
    )
    backend.submit(request("2024-01-03"))
    backend.submit(request("1999-01-01"))  # not a key of this definition: ignored
    emu.wait_until_idle()
    history = run_history(emu.workspace_client(), job_id, DailyBackfill(start_date="2024-01-01"))
    assert sorted((o.keys, o.state) for o in history) == [
        (("2024-01-01", "2024-01-02"), "succeeded"),
        (("2024-01-03",), "failed"),
    ]


def test_connect_names_the_way_to_fix_missing_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    for name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", "/nonexistent/databrickscfg")
    with pytest.raises(UsageError, match="set DATABRICKS_HOST and DATABRICKS_TOKEN"):
        connect()


def test_check_results_are_read_from_the_output_of_each_task_of_a_run(emu: JobsEmulator) -> None:
    from databricks_bundle_decorators.backfill.check_report import CheckReport, CheckResult

    tasks = [{"task_key": "clean"}, {"task_key": "notify"}, {"task_key": "load"}]
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, settings={"tasks": tasks})
    emu.set_outcome("2024-01-01", result="FAILED", message="check failed")
    backend = DatabricksBackend(emu.workspace_client(), job_id, read_checks=True)
    run_id = backend.submit(request("2024-01-01")).run_id
    emu.wait_until_idle()
    clean, notify, load = emu.runs(job_id)[0].task_run_ids
    passed = CheckResult("unique(id)", "2024-01-01", 0.0, "= 0", True, "clean", run_id)
    failed = CheckResult("min_row_count(5)", "2024-01-01", 3.0, ">= 5", False, "load", run_id)
    emu.set_task_logs(clean, "reading\n" + CheckReport((passed,)).to_line() + "\nwritten\n")
    emu.set_task_logs(notify, "no checks here\n")
    emu.set_task_logs(load, CheckReport((failed,)).to_line() + "\n")

    status = backend.poll([run_id])[run_id]

    assert status.state == "failed" and status.checks == (passed, failed)
    assert DatabricksBackend(emu.workspace_client(), job_id).poll([run_id])[run_id].checks == ()


def test_a_notebook_task_s_check_results_are_read_from_its_exit_value(emu: JobsEmulator) -> None:
    """A task-value task is a notebook task: no ``logs`` (``RunOutput.logs``), its reports
    are its ``dbutils.notebook.exit()`` value (``NotebookOutput.result``)."""
    from databricks_bundle_decorators.backfill.check_report import CheckReport, CheckResult
    from databricks_bundle_decorators.backfill.wire import exit_value

    tasks = [
        {"task_key": "discover", "notebook_task": {"notebook_path": "./n/j__discover.py"}},
        {"task_key": "load", "python_wheel_task": {"package_name": "p", "entry_point": "e"}},
    ]
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, settings={"tasks": tasks})
    backend = DatabricksBackend(emu.workspace_client(), job_id, read_checks=True)
    run_id = backend.submit(request("2024-01-01")).run_id
    emu.wait_until_idle()
    discover, load = emu.runs(job_id)[0].task_run_ids
    found = CheckResult("unique(id)", "2024-01-01", 0.0, "= 0", True, "discover", run_id)
    loaded = CheckResult("not_null(id)", "2024-01-01", 0.0, "= 0", True, "load", run_id)
    emu.set_notebook_result(discover, exit_value([CheckReport((found,)).to_line()]))
    emu.set_task_logs(load, CheckReport((loaded,)).to_line() + "\n")

    assert backend.poll([run_id])[run_id].checks == (found, loaded)
