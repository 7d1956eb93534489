"""``JobsEmulator.execute_tasks``: the emulator runs a job's generated tasks as Databricks
would, without Spark here: ``depends_on`` order, task values from one notebook task to
the next, a notebook's exit value as ``notebook_output.result``, a wheel task's stdout as
``logs``, and a raise failing the run with no notebook output."""

from __future__ import annotations

from typing import Any

import pytest

from databricks_bundle_decorators import Registry, get_task_value, set_task_value, task
from databricks_bundle_decorators.bundle import job_resource
from databricks_bundle_decorators.testing import JobsEmulator

REGISTRY = Registry()


@REGISTRY.job(name="tv_chain", params={"fail": "no"})
def tv_chain() -> None:
    @task
    def first() -> None:
        set_task_value("n", 3)

    @task(depends_on=[first])
    def second() -> None:
        from databricks_bundle_decorators import params

        if params["fail"] == "yes":
            raise RuntimeError("second refused")
        print(f"second read {get_task_value('first', 'n')}")

    @task(depends_on=[second])
    def last() -> None:
        print("last ran")

    first()
    second()
    last()


@pytest.fixture
def deployed(
    emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> tuple[JobsEmulator, int]:
    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "pyspark-shell")  # no Spark: none is started
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    settings = job_resource(REGISTRY.get("tv_chain"), package_name="proj")
    settings["tasks"].reverse()  # the order of the list is not the order of the run
    job_id = emu.create_job("tv_chain", settings=settings)
    emu.execute_tasks(job_id)
    return emu, job_id


def test_tasks_run_in_depends_on_order_and_read_each_other_s_task_values(
    deployed: tuple[JobsEmulator, int],
) -> None:
    emu, job_id = deployed
    w = emu.workspace_client()
    run_id = w.jobs.run_now(job_id).run_id
    run = w.jobs.wait_get_run_job_terminated_or_skipped(run_id)
    assert run.state is not None and run.state.result_state is not None
    assert run.state.result_state.value == "SUCCESS"
    done = [(t.task_key, t.kind, t.error) for t in emu.executed_tasks()]
    assert done == [
        ("first", "notebook_task", ""),
        ("second", "notebook_task", ""),  # it reads a task value: a notebook task too
        ("last", "python_wheel_task", ""),
    ]
    assert "second read 3" in emu.executed_tasks()[1].stdout
    outputs = {t.task_key: w.jobs.get_run_output(t.run_id or 0) for t in run.tasks or []}
    assert outputs["first"].notebook_output is not None
    assert outputs["first"].notebook_output.result == "[]"  # no check: no report line
    assert outputs["first"].logs is None  # not supported for the notebook_task
    assert outputs["last"].logs is not None and "last ran" in outputs["last"].logs


def test_a_notebook_that_raises_fails_the_run_leaves_no_result_and_stops_downstream(
    deployed: tuple[JobsEmulator, int],
) -> None:
    emu, job_id = deployed
    w = emu.workspace_client()
    run_id = w.jobs.run_now(job_id, job_parameters={"fail": "yes"}).run_id
    run = w.jobs.wait_get_run_job_terminated_or_skipped(run_id)
    assert run.state is not None and run.state.result_state is not None
    assert run.state.result_state.value == "FAILED"
    assert run.state.state_message == "Task second failed"
    done = [(t.task_key, t.error != "") for t in emu.executed_tasks()]
    assert done == [("first", False), ("second", True)]  # last never ran
    (second,) = [t for t in run.tasks or [] if t.task_key == "second"]
    notebook = w.jobs.get_run_output(second.run_id or 0).notebook_output
    assert notebook is None or notebook.result is None  # exit() was never called


def test_a_task_the_emulator_cannot_execute_fails_the_run_saying_so(emu: JobsEmulator) -> None:
    iteration = {
        "task_key": "x_iter",
        "python_wheel_task": {"package_name": "p", "entry_point": "dbxdec-run"},
    }
    loop = {"task_key": "x", "for_each_task": {"inputs": "[1]", "task": iteration}}
    job_id = emu.create_job("loop", settings={"tasks": [loop]})
    emu.execute_tasks(job_id)
    w = emu.workspace_client()
    run = w.jobs.wait_get_run_job_terminated_or_skipped(w.jobs.run_now(job_id).run_id)
    assert run.state is not None and run.state.result_state is not None
    assert run.state.result_state.value == "FAILED"
    assert (run.state.state_message or "").startswith("the emulator could not execute run")
