"""``GET jobs/runs/get-output`` of the Jobs API emulator, through the real WorkspaceClient:
a task run's metadata and logs; job run ids and unknown ids are refused as Databricks does."""

from __future__ import annotations

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import InvalidParameterValue, ResourceDoesNotExist
from databricks.sdk.service.jobs import RunLifeCycleState, RunResultState

from databricks_bundle_decorators.testing import JobsEmulator, RunRecord
from databricks_bundle_decorators.testing._store._emulator_state import MAX_OUTPUT_BYTES

TASKS = ("extract", "load")
GET_OUTPUT = "/api/2.2/jobs/runs/get-output"
MULTI_TASK = "Retrieving the output of runs with multiple tasks is not supported"


def run_job(
    emu: JobsEmulator, w: WorkspaceClient, key: str = "2024-01-02", tasks: tuple[str, ...] = TASKS
) -> RunRecord:
    """One run of a new job with ``tasks``, run to its end."""
    settings = {"tasks": [{"task_key": task} for task in tasks]}
    job_id = emu.create_job("nightly", parameters={"backfill_key": ""}, settings=settings)
    w.jobs.run_now(job_id, job_parameters={"backfill_key": key})
    emu.wait_until_idle()
    (run,) = emu.runs(job_id)
    return run


def test_a_task_run_answers_its_logs_and_itself_as_metadata(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    run = run_job(emu, w)
    extract, load = run.task_run_ids
    emu.set_task_logs(extract, "read 3 rows\n")
    output = w.jobs.get_run_output(extract)
    assert (output.logs, output.logs_truncated, output.error) == ("read 3 rows\n", False, None)
    metadata = output.metadata
    assert metadata is not None and metadata.state is not None and metadata.tasks is not None
    assert (metadata.run_id, metadata.job_run_id, metadata.job_id) == (
        extract,
        run.run_id,
        run.job_id,
    )
    assert metadata.state.result_state == RunResultState.SUCCESS
    assert [task.task_key for task in metadata.tasks] == ["extract"]
    assert metadata.job_parameters is not None
    assert {p.name: p.value for p in metadata.job_parameters} == {"backfill_key": "2024-01-02"}
    # the task as runs/get lists it in its job run
    listed = w.jobs.get_run(run.run_id).tasks
    assert listed is not None
    assert metadata.tasks[0] == listed[0]
    assert metadata.run_page_url == listed[0].run_page_url
    assert (metadata.start_time, metadata.end_time) == (listed[0].start_time, listed[0].end_time)

    silent = w.jobs.get_run_output(load)
    assert (silent.logs, silent.logs_truncated) == (None, False)  # no logs set: no field
    assert silent.metadata is not None and silent.metadata.run_id == load
    assert emu.requests[GET_OUTPUT] == 2


def test_set_task_logs_replaces_earlier_logs(emu: JobsEmulator, w: WorkspaceClient) -> None:
    extract = run_job(emu, w).task_run_ids[0]
    emu.set_task_logs(extract, "first\n")
    emu.set_task_logs(extract, "second\n")
    assert w.jobs.get_run_output(extract).logs == "second\n"


def test_a_running_task_run_answers_its_current_state(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly", settings={"tasks": [{"task_key": "only"}]})
    emu.set_outcome("k", hold=True)
    w.jobs.run_now(job_id, job_parameters={"backfill_key": "k"})
    (run,) = emu.wait_for(
        lambda runs: runs[-1].life_cycle_state == "RUNNING", job_id=job_id, what="running"
    )
    (task_run_id,) = run.task_run_ids
    emu.set_task_logs(task_run_id, "halfway\n")
    running = w.jobs.get_run_output(task_run_id)
    assert running.metadata is not None and running.metadata.state is not None
    assert running.metadata.state.life_cycle_state == RunLifeCycleState.RUNNING
    assert running.logs == "halfway\n"
    emu.release("k")
    ended = w.jobs.get_run_output(task_run_id)
    assert ended.metadata is not None and ended.metadata.state is not None
    assert ended.metadata.state.life_cycle_state == RunLifeCycleState.TERMINATED


def test_a_failed_task_run_answers_its_error(emu: JobsEmulator, w: WorkspaceClient) -> None:
    emu.set_outcome("bad", result="FAILED", message="Task extract failed: boom")
    run = run_job(emu, w, key="bad")
    output = w.jobs.get_run_output(run.task_run_ids[0])
    assert output.error == "Task extract failed: boom"
    assert output.metadata is not None and output.metadata.state is not None
    assert output.metadata.state.result_state == RunResultState.FAILED


@pytest.mark.parametrize(
    "tasks", [pytest.param(TASKS, id="two"), pytest.param(("only",), id="one")]
)
def test_a_job_run_id_is_refused_like_databricks_does(
    emu: JobsEmulator, w: WorkspaceClient, tasks: tuple[str, ...]
) -> None:
    """Databricks answers get-output for task runs only, even when the job has one task."""
    run = run_job(emu, w, tasks=tasks)
    with pytest.raises(InvalidParameterValue, match=MULTI_TASK) as refused:
        w.jobs.get_run_output(run.run_id)
    assert str(refused.value) == (
        f"{MULTI_TASK}. Please retrieve the output of each individual task run instead."
    )
    with pytest.raises(ValueError, match=MULTI_TASK):
        emu.set_task_logs(run.run_id, "never answered")


def test_an_unknown_run_is_refused_like_runs_get(emu: JobsEmulator, w: WorkspaceClient) -> None:
    with pytest.raises(ResourceDoesNotExist, match="Run 424242 does not exist"):
        w.jobs.get_run(424242)
    with pytest.raises(ResourceDoesNotExist, match="Run 424242 does not exist"):
        w.jobs.get_run_output(424242)
    with pytest.raises(KeyError, match="Run 424242 does not exist"):
        emu.set_task_logs(424242, "never answered")


def test_the_2_1_path_is_an_alias(emu: JobsEmulator, w: WorkspaceClient) -> None:
    extract = run_job(emu, w).task_run_ids[0]
    emu.set_task_logs(extract, "read 3 rows\n")
    answer = w.api_client.do("GET", "/api/2.1/jobs/runs/get-output", query={"run_id": extract})
    assert isinstance(answer, dict)
    assert (answer["logs"], answer["logs_truncated"]) == ("read 3 rows\n", False)
    assert answer["metadata"]["run_id"] == extract


def test_a_run_of_a_job_without_tasks_is_its_own_task_run(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    run = run_job(emu, w, tasks=())
    emu.set_task_logs(run.run_id, "no tasks\n")
    output = w.jobs.get_run_output(run.run_id)
    assert output.logs == "no tasks\n"
    assert output.metadata == w.jobs.get_run(run.run_id)


@pytest.mark.parametrize(
    ("text", "logs", "truncated"),
    [
        pytest.param("x" * MAX_OUTPUT_BYTES, "x" * MAX_OUTPUT_BYTES, False, id="at-the-limit"),
        # the last 5 MB are kept (RunOutput.logs): the reports a task prints last survive
        pytest.param("y" + "x" * MAX_OUTPUT_BYTES, "x" * MAX_OUTPUT_BYTES, True, id="one-over"),
        pytest.param(
            "y" * MAX_OUTPUT_BYTES + "report\n",
            "y" * (MAX_OUTPUT_BYTES - 7) + "report\n",
            True,
            id="the-end-is-kept",
        ),
        pytest.param(  # the cut falls inside a two-byte character: it is left out whole
            "é" * (MAX_OUTPUT_BYTES // 2) + "x",
            "é" * (MAX_OUTPUT_BYTES // 2 - 1) + "x",
            True,
            id="mid-character",
        ),
    ],
)
def test_logs_past_5_mb_keep_their_last_5_mb_and_are_flagged_truncated(
    emu: JobsEmulator, w: WorkspaceClient, text: str, logs: str, truncated: bool
) -> None:
    extract = run_job(emu, w).task_run_ids[0]
    emu.set_task_logs(extract, text)
    output = w.jobs.get_run_output(extract)
    assert output.logs_truncated is truncated
    assert output.logs == logs
