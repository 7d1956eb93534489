"""The scheduler driving the real WorkspaceClient against the Jobs API emulator."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.events import LaunchEvent
from databricks_bundle_decorators.launch.interrupts import CANCEL, DRAIN, Interrupts
from databricks_bundle_decorators.launch.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    read_ledger,
)
from databricks_bundle_decorators.launch.pacing import SchedulerOptions
from databricks_bundle_decorators.launch.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS, keys_of


def day(i: int) -> str:
    return f"2024-{1 + i // 28:02d}-{1 + i % 28:02d}"


def make_ledger(root: Path, keys: list[str], *, final_sync: bool = False) -> Ledger:
    slices = [Slice(i, (k,)) for i, k in enumerate(keys)]
    if final_sync:
        slices.append(Slice(len(slices), ()))
    plan = BackfillPlan("nightly", tuple(slices))
    return Ledger.create(root, plan, backend=BackendSpec("databricks", 1), options=LaunchOptions())


def run(
    emu: JobsEmulator,
    ledger: Ledger,
    job_id: int,
    events: list[LaunchEvent] | None = None,
    interrupts: Interrupts | None = None,
    **options: object,
) -> str:
    opts = SchedulerOptions(**{"poll_interval": 0.01, "retry_delay": 0.01, **options})  # type: ignore[arg-type]
    backend = DatabricksBackend(emu.workspace_client(), job_id)
    sink = events if events is not None else []
    return Scheduler(backend, ledger, opts, emit=sink.append, interrupts=interrupts).run()


def test_concurrency_is_capped_and_slots_refill_without_waves(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    keys = [day(i) for i in range(40)]
    for i, key in enumerate(keys):  # every 7th run is slow: waves would stall on it
        emu.set_outcome(key, duration=0.4 if i % 7 == 0 else 0.05)
    ledger = make_ledger(root, keys)

    assert run(emu, ledger, job_id, max_concurrent=5) == "succeeded"

    assert emu.max_concurrency(job_id) == 5  # reached, never exceeded
    timeline = emu.timeline(job_id)
    slow = [
        (s, e)
        for (s, e, _), k in zip(timeline, keys_of(emu, job_id), strict=True)
        if k in keys[::7]
    ]
    # While a slow run was running, other slots were refilled several times over.
    refills = [sum(1 for s, _, _ in timeline if a < s < b) for a, b in slow]
    assert max(refills) >= 8
    assert sorted(keys_of(emu, job_id)) == keys  # exactly one run per key
    assert all(r.state == "succeeded" for r in read_ledger(ledger.path).slices)


def test_retries_recover_transient_failures(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    keys = [day(i) for i in range(6)]
    emu.set_outcome(keys[2], fail_attempts=2)
    ledger = make_ledger(root, keys)
    events: list[LaunchEvent] = []

    assert run(emu, ledger, job_id, events, max_concurrent=3, retries=2) == "succeeded"

    runs = [r for r in emu.runs(job_id) if r.job_parameters["backfill_key"] == keys[2]]
    assert [r.result_state for r in runs] == ["FAILED", "FAILED", "SUCCESS"]
    assert len({r.idempotency_token for r in runs}) == 3  # a new token per attempt
    record = read_ledger(ledger.path).slices[2]
    assert [a.state for a in record.attempts] == ["failed", "failed", "succeeded"]
    assert "Emulated failure" in record.attempts[0].error
    assert [e.kind for e in events].count("retrying") == 2


def test_exhausted_retries_fail_the_slice_and_halt_on_error_stops_launching(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    keys = [day(i) for i in range(10)]
    emu.set_outcome(keys[0], result="FAILED", message="boom")
    ledger = make_ledger(root, keys)

    assert run(emu, ledger, job_id, max_concurrent=1, retries=1, halt_on_error=True) == "failed"

    # The slot serves the next slice during the retry delay; nothing new after the failure.
    assert keys_of(emu, job_id) == [keys[0], keys[1], keys[0]]
    record = read_ledger(ledger.path).slices[0]
    assert record.state == "failed" and "boom" in record.attempts[-1].error


def test_final_sync_runs_last_with_no_key(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    keys = [day(i) for i in range(5)]
    ledger = make_ledger(root, keys, final_sync=True)

    assert run(emu, ledger, job_id, max_concurrent=3) == "succeeded"

    runs = emu.runs(job_id)
    assert runs[-1].job_parameters["backfill_key"] == ""
    assert runs[-1].created >= max(r.ended or 0 for r in runs[:-1])


def test_final_sync_waits_while_a_slice_failed(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    keys = [day(i) for i in range(3)]
    emu.set_outcome(keys[1], result="FAILED")
    ledger = make_ledger(root, keys, final_sync=True)

    assert run(emu, ledger, job_id) == "failed"
    assert "" not in keys_of(emu, job_id)


def test_drain_lets_in_flight_runs_finish_and_resume_completes(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.default_duration = 0.3
    keys = [day(i) for i in range(8)]
    ledger = make_ledger(root, keys)
    interrupts = Interrupts()
    threading.Timer(0.1, interrupts.escalate).start()  # a first Ctrl-C

    assert run(emu, ledger, job_id, interrupts=interrupts, max_concurrent=2) == "interrupted"

    assert interrupts.level == DRAIN
    runs = emu.runs(job_id)
    assert len(runs) == 2 and all(r.result_state == "SUCCESS" for r in runs)
    saved = read_ledger(ledger.path)
    assert saved.state == "interrupted" and saved.counts()["succeeded"] == 2

    emu.default_duration = 0.01
    assert run(emu, saved, job_id, max_concurrent=4) == "succeeded"
    assert sorted(keys_of(emu, job_id)) == keys


def test_second_interrupt_cancels_in_flight_runs(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.default_duration = 5.0
    keys = [day(i) for i in range(6)]
    ledger = make_ledger(root, keys)
    interrupts = Interrupts()
    threading.Timer(0.2, interrupts.escalate, kwargs={"level": CANCEL}).start()  # SIGTERM

    assert run(emu, ledger, job_id, interrupts=interrupts, max_concurrent=3) == "interrupted"

    assert [r.result_state for r in emu.runs(job_id)] == ["CANCELED"] * 3
    saved = read_ledger(ledger.path)
    assert [r.state for r in saved.slices[:3]] == ["canceled"] * 3
    assert [r.state for r in saved.slices[3:]] == ["pending"] * 3


def test_rejected_submission_fails_the_slice_without_retrying(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    ledger = make_ledger(root, [day(0)])
    emu.inject_fault("/api/2.2/jobs/run-now", status=400)

    assert run(emu, ledger, job_id, retries=3) == "failed"
    assert read_ledger(ledger.path).slices[0].attempts[0].state == "rejected"
    assert emu.runs(job_id) == []


@pytest.mark.parametrize("kind", ["drop_after", "drop_before"])
def test_lost_submission_response_does_not_duplicate_the_run(
    emu: JobsEmulator, root: Path, kind: str
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    ledger = make_ledger(root, [day(0)])
    emu.inject_fault("/api/2.2/jobs/run-now", kind=kind)  # type: ignore[arg-type]

    assert run(emu, ledger, job_id) == "succeeded"
    assert keys_of(emu, job_id) == [day(0)]
