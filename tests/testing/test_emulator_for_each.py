"""For-each task runs of the Jobs API emulator, through the real WorkspaceClient: the
for-each task in ``runs/get``'s ``tasks``, its iterations in ``runs/get`` of its own run id
(100 a page), and each iteration's output by the nested task's type."""

from __future__ import annotations

import json
from typing import Any

from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators.testing import JobsEmulator, RunRecord

GET = "/api/2.2/jobs/runs/get"
WHEEL = {"python_wheel_task": {"package_name": "app", "entry_point": "dbxdec-run"}}
NOTEBOOK = {"notebook_task": {"notebook_path": "./notebooks/j__each.py"}}


def run_loop(
    emu: JobsEmulator, w: WorkspaceClient, inputs: str, nested: dict[str, Any], **params: str
) -> tuple[RunRecord, int]:
    """One run of a job whose only task is a for-each over ``inputs``; its for-each task run id."""
    loop = {"inputs": inputs, "task": {"task_key": "each_iteration", **nested}}
    settings = {"tasks": [{"task_key": "each", "for_each_task": loop}]}
    job_id = emu.create_job("j", parameters=dict.fromkeys(params, ""), settings=settings)
    w.jobs.run_now(job_id, job_parameters=params)
    emu.wait_until_idle()
    (run,) = emu.runs(job_id)
    return run, run.task_run_ids[0]


def test_a_for_each_task_run_lists_its_iterations_each_a_run_of_the_nested_task(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    run, loop_id = run_loop(emu, w, '["a", "b", "c"]', WHEEL)
    (task,) = w.jobs.get_run(run.run_id).tasks or []
    assert task.run_id == loop_id and task.for_each_task is not None
    stats = task.for_each_task.stats
    assert stats is not None and stats.task_run_stats is not None
    assert (stats.task_run_stats.total_iterations, stats.task_run_stats.succeeded_iterations) == (
        3,
        3,
    )
    loop_run = w.jobs.get_run(loop_id)
    assert [t.run_id for t in loop_run.tasks or []] == [loop_id]  # the parent, in tasks
    iterations = loop_run.iterations or []
    assert [i.run_id for i in iterations] == list(run.iterations[loop_id])
    assert {i.task_key for i in iterations} == {"each_iteration"}
    assert all(i.python_wheel_task is not None and i.notebook_task is None for i in iterations)
    assert all(i.state == task.state for i in iterations)

    first, second, _ = run.iterations[loop_id]
    emu.set_task_logs(second, "report\n")
    output = w.jobs.get_run_output(second)
    assert output.logs == "report\n" and output.notebook_output is None
    assert output.metadata is not None and output.metadata.job_run_id == run.run_id
    assert [t.run_id for t in output.metadata.tasks or []] == [second]
    assert w.jobs.get_run_output(first).logs is None  # each iteration has its own output


def test_a_notebook_iteration_answers_its_exit_value_and_no_logs(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    run, loop_id = run_loop(emu, w, '["a"]', NOTEBOOK)
    (iteration,) = run.iterations[loop_id]
    emu.set_notebook_result(iteration, '["line"]')
    output = w.jobs.get_run_output(iteration)
    assert output.notebook_output is not None and output.notebook_output.result == '["line"]'
    assert output.logs is None


def test_iterations_are_paged_by_100_and_the_sdk_reads_every_page(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    run, loop_id = run_loop(emu, w, json.dumps(list(range(250))), WHEEL)
    before = emu.requests[GET]
    iterations = w.jobs.get_run(loop_id).iterations or []
    assert [i.run_id for i in iterations] == list(run.iterations[loop_id])
    assert len(iterations) == 250 and emu.requests[GET] - before == 3
    first = w.api_client.do("GET", GET, query={"run_id": loop_id})
    assert isinstance(first, dict) and len(first["iterations"]) == 100
    assert first["next_page_token"]


def test_inputs_from_a_job_parameter_count_its_array_and_task_values_count_none(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    run, loop_id = run_loop(emu, w, "{{job.parameters.items}}", WHEEL, items='["x", "y"]')
    assert len(run.iterations[loop_id]) == 2
    run, loop_id = run_loop(emu, w, "{{tasks.a.values.k}}", WHEEL)
    assert run.iterations[loop_id] == ()
