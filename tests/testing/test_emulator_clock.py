"""The emulator's clock and run retention, through the real databricks-sdk client.

The Jobs API reference (``runs/get-output``, as generated into databricks-sdk-py): "Runs
are automatically removed after 60 days"; a removed run is answered like an id that
never existed (400 ``INVALID_PARAMETER_VALUE``).
"""

from __future__ import annotations

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import ResourceDoesNotExist

from databricks_bundle_decorators.testing.emulator import JobsEmulator

DAY_MS = 86_400_000


def ran(emu: JobsEmulator, w: WorkspaceClient, job_id: int, key: str) -> int:
    """Run the job for ``key`` to its end; its run id."""
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_key": key}).run_id
    emu.wait_until_idle()
    return run_id


def listed(w: WorkspaceClient, job_id: int) -> list[int]:
    return [run.run_id or 0 for run in w.jobs.list_runs(job_id=job_id)]


def test_a_run_is_listed_for_60_days_and_then_removed(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly", parameters={"backfill_key": ""})
    first = ran(emu, w, job_id, "2024-01-01")
    started = w.jobs.get_run(first).start_time or 0

    emu.advance_days(59)
    assert listed(w, job_id) == [first]
    second = ran(emu, w, job_id, "2024-01-02")
    later = w.jobs.get_run(second).start_time or 0
    assert later - started >= 59 * DAY_MS  # runs after the jump carry the moved clock
    assert w.jobs.get_run(first).start_time == started  # earlier ones keep their times

    emu.advance_days(2)  # 61 days after the first run started
    assert listed(w, job_id) == [second]
    with pytest.raises(ResourceDoesNotExist, match=f"Run {first} does not exist"):
        w.jobs.get_run(first)  # 400 INVALID_PARAMETER_VALUE, as for an id never issued
    task_run = emu.runs(job_id)[0]
    assert task_run.run_id == second  # the inspection API no longer holds it either
    with pytest.raises(ResourceDoesNotExist, match=f"Run {first} does not exist"):
        w.jobs.get_run_output(first)


def test_a_run_in_flight_is_never_removed(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("nightly", parameters={"backfill_key": ""})
    emu.set_outcome("2024-01-01", hold=True)
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-01"}).run_id
    emu.wait_for(lambda runs: any(r.life_cycle_state == "RUNNING" for r in runs), job_id=job_id)

    emu.advance_days(90)
    assert listed(w, job_id) == [run_id]
    emu.release()
    emu.wait_until_idle()
    assert listed(w, job_id) == []  # ended, and started more than 60 days ago


def test_the_clock_only_moves_forward(emu: JobsEmulator) -> None:
    with pytest.raises(ValueError, match="only moves forward"):
        emu.advance_days(-1)
