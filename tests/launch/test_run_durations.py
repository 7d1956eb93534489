"""Run durations come from the run's own start and end, not from when the launcher noticed.

A held run is released while the workspace answers the launcher's polls with errors (an
outage the SDK retries through); the attempt's recorded start, end and duration are the
emulator's own (its ``start_time``/``end_time``), whatever the launcher's delay.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import Attempt, read_ledger
from databricks_bundle_decorators.launch.run.events import LaunchEvent
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS
from .test_scheduler import in_background, make_ledger

LIST = "/api/2.2/jobs/runs/list"
GET = "/api/2.2/jobs/runs/get"


def test_a_run_that_ended_during_an_outage_reports_its_own_duration(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    emu.hold_runs = True
    ledger = make_ledger(root, ["2024-01-01"])
    events: list[LaunchEvent] = []
    with in_background(emu, ledger, job_id, events=events) as result:
        emu.wait_for(lambda runs: any(r.active for r in runs), job_id=job_id)
        for path in (LIST, GET):  # the workspace unreachable while the run ends
            emu.inject_fault(path, status=503, count=3)
        emu.release()
        assert result.result(timeout=120) == "succeeded"
    (run,) = emu.runs(job_id)
    assert run.ended is not None
    attempt: Attempt = read_ledger(ledger.path).slices[0].attempts[-1]
    assert attempt.state == "succeeded"
    api = emu.workspace_client().jobs.get_run(run.run_id)  # the emulator's own times
    assert api.start_time and api.end_time
    started, ended = api.start_time / 1000, api.end_time / 1000
    assert ended - started == pytest.approx(run.ended - run.created, abs=0.002)
    assert (attempt.started_at, attempt.ended_at) == (started, ended)
    assert attempt.seconds == pytest.approx(ended - started)
    assert emu.faults[f"503 {LIST}"] + emu.faults[f"503 {GET}"] >= 1  # the outage happened
    (done,) = [e for e in events if e.kind == "succeeded"]
    assert done.seconds == pytest.approx(ended - started)


def test_an_old_ledgers_attempt_without_started_at_times_from_submission() -> None:
    attempt = Attempt(1, "t", "succeeded", submitted_at=100.0, ended_at=130.0)
    assert attempt.started_at is None and attempt.seconds == 30.0
    backend_timed = Attempt(
        1, "t", "succeeded", submitted_at=100.0, ended_at=131.0, started_at=130.0
    )
    assert backend_timed.seconds == 1.0
