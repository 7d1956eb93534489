"""The emulator's code-running runs: a controller-job run is a real subprocess."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of
from databricks_bundle_decorators.testing.emulator import JobsEmulator

# A stand-in for the controller's entry point: what it does is chosen by its --mode.
_PROGRAM = """
import os, sys, time
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
print("token in env:", bool(os.environ.get("DATABRICKS_TOKEN")), "host:", os.environ["DATABRICKS_HOST"])
print("args:", sorted(args.items()))
mode = args.get("mode", "ok")
if mode.startswith("fail:"):
    count = os.path.join(os.environ["COUNT_DIR"], args["backfill_id"])
    n = int(open(count).read()) if os.path.exists(count) else 0
    open(count, "w").write(str(n + 1))
    sys.exit(3 if n < int(mode[5:]) else 0)
if mode == "hang":
    print("hanging", flush=True)
    time.sleep(600)
"""


def _controller_job(emu: JobsEmulator, retries: int = -1) -> int:
    return emu.create_job(
        "dbxdec_controller",
        parameters={"backfill_id": "", "mode": "ok"},
        max_concurrent_runs=100,
        settings={
            "tasks": [
                {
                    "task_key": "controller",
                    "max_retries": retries,
                    "retry_on_timeout": True,
                    "python_wheel_task": {
                        "package_name": "dbxdec",
                        "entry_point": "dbxdec-controller",
                        "named_parameters": {"run_id": "{{job.run_id}}"},
                    },
                }
            ]
        },
    )


@pytest.fixture
def emu(tmp_path: Path) -> JobsEmulator:
    (tmp_path / "fake_controller.py").write_text(textwrap.dedent(_PROGRAM))
    emulator = JobsEmulator(token="dapi-secret-xyz").start()
    runs = processes_of(emulator)
    runs.module = "fake_controller"
    runs.extra_env = {"PYTHONPATH": str(tmp_path), "COUNT_DIR": str(tmp_path)}
    yield emulator
    emulator.stop()


def _ended(run_id: int):  # type: ignore[no-untyped-def]
    return lambda runs: any(r.run_id == run_id and not r.active for r in runs)


def test_a_run_is_a_process_with_parameters_and_the_token_in_its_environment_only(
    emu: JobsEmulator,
) -> None:
    job_id = _controller_job(emu)
    w = emu.workspace_client()
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_id": "b1"}).run_id
    runs = emu.wait_for(_ended(run_id), what="the process run ended")
    assert [r.result_state for r in runs] == ["SUCCESS"]
    (attempt,) = processes_of(emu).outputs(run_id)
    out = attempt.stdout.decode()
    assert "token in env: True" in out
    assert f"('run_id', '{run_id}')" in out and "('backfill_id', 'b1')" in out
    assert not any("dapi-secret-xyz" in arg for arg in attempt.argv)


def test_a_failed_process_is_retried_in_the_same_run_while_max_retries_is_minus_one(
    emu: JobsEmulator,
) -> None:
    job_id = _controller_job(emu)
    w = emu.workspace_client()
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_id": "b2", "mode": "fail:2"}).run_id
    runs = emu.wait_for(_ended(run_id), what="the retried run ended")
    assert [r.result_state for r in runs] == ["SUCCESS"]
    assert [a.returncode for a in processes_of(emu).outputs(run_id)] == [3, 3, 0]


def test_retries_spent_fail_the_run(emu: JobsEmulator) -> None:
    job_id = _controller_job(emu, retries=1)
    w = emu.workspace_client()
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_id": "b3", "mode": "fail:5"}).run_id
    runs = emu.wait_for(_ended(run_id), what="the failed run ended")
    assert [r.result_state for r in runs] == ["FAILED"]
    assert len(processes_of(emu).outputs(run_id)) == 2


def test_cancel_kills_the_process_and_never_retries(emu: JobsEmulator) -> None:
    job_id = _controller_job(emu)
    w = emu.workspace_client()
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_id": "b4", "mode": "hang"}).run_id
    emu.wait_for(lambda runs: any(r.life_cycle_state == "RUNNING" for r in runs), what="running")
    w.jobs.cancel_run(run_id)
    runs = emu.wait_for(_ended(run_id), what="cancelled")
    assert [r.result_state for r in runs] == ["CANCELED"]
    (attempt,) = processes_of(emu).outputs(run_id)
    assert attempt.process.wait(timeout=10) != 0
    assert len(processes_of(emu).outputs(run_id)) == 1


def test_stop_kills_leftover_processes(tmp_path: Path) -> None:
    (tmp_path / "fake_controller.py").write_text(textwrap.dedent(_PROGRAM))
    with JobsEmulator() as emu:
        runs = processes_of(emu)
        runs.module = "fake_controller"
        runs.extra_env = {"PYTHONPATH": str(tmp_path)}
        job_id = _controller_job(emu)
        emu.workspace_client().jobs.run_now(job_id, job_parameters={"mode": "hang"})
        emu.wait_for(lambda r: bool(r) and r[0].life_cycle_state == "RUNNING", what="running")
    (attempt,) = runs.outputs()
    assert attempt.process.poll() is not None


def test_a_run_now_with_the_same_token_starts_one_process(emu: JobsEmulator) -> None:
    job_id = _controller_job(emu)
    w = emu.workspace_client()
    first = w.jobs.run_now(job_id, job_parameters={"mode": "hang"}, idempotency_token="t-g2")
    again = w.jobs.run_now(job_id, job_parameters={"mode": "hang"}, idempotency_token="t-g2")
    assert first.run_id == again.run_id
    w.jobs.cancel_run(first.run_id)
    emu.wait_for(_ended(first.run_id), what="cancelled")
    assert len(processes_of(emu).outputs()) == 1
