"""Refusals and failures of the scheduler, through the real WorkspaceClient over HTTP
against the Jobs API emulator: each says so in one message, creates no second run and
leaves the ledger on disk ready for ``--resume``."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import Ledger, attempt_token, read_ledger
from databricks_bundle_decorators.launch.plan.options import LaunchOptions
from databricks_bundle_decorators.launch.plan.states import BackfillState
from databricks_bundle_decorators.launch.run.interrupts import CANCEL, Interrupts
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS, keys_of
from .test_scheduler import EventSignals, day, make_ledger

RUN_NOW = "/api/2.2/jobs/run-now"
RUNS_LIST = "/api/2.2/jobs/runs/list"
INTERNAL = "Internal error (emulated fault)."  # the emulator's 500 answer


def scheduler(
    emu: JobsEmulator,
    ledger: Ledger,
    job_id: int,
    signals: EventSignals,
    *,
    client: WorkspaceClient | None = None,
    interrupts: Interrupts | None = None,
    **options: object,
) -> Scheduler:
    # These tests count requests and script faults request by request, so a slow call
    # is never sent again (resend_after=0): on a loaded machine a resent run-now would
    # take a scripted fault meant for the next try (tests/launch/test_overtake.py
    # covers resending, with the emulator holding a request until released).
    opts = LaunchOptions(
        **{  # type: ignore[arg-type]
            "poll_interval": 0.01,
            "max_poll_interval": 0.1,
            "retry_delay": 0.01,
            "resend_after": 0.0,
            **options,
        }
    )
    backend = DatabricksBackend(
        client or emu.workspace_client(), job_id, resend_after=opts.resend_after
    )
    return Scheduler(backend, ledger, opts, emit=signals.append, interrupts=interrupts)


@contextmanager
def in_background(emu: JobsEmulator, runner: Scheduler) -> Iterator[Future[BackfillState]]:
    """``runner.run()`` on another thread while the test steers the emulator."""
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(runner.run)
        try:
            yield future
        finally:
            emu.release()  # never leave the scheduler waiting on a held run or the gate
            emu.unblock_submissions()
            future.result(timeout=120)


def messages(signals: EventSignals, kind: str) -> list[str]:
    return [e.message for e in signals.events if e.kind == kind]


def new_job(emu: JobsEmulator) -> int:
    return emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)


def test_unknown_submit_error_gives_up_after_the_attempts_and_resume_runs_once(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = new_job(emu)
    keys = [day(i) for i in range(3)]
    ledger = make_ledger(root, keys)
    emu.inject_fault(RUN_NOW, status=500, count=4)  # an InternalError: the SDK does not retry
    signals = EventSignals()

    state = scheduler(emu, ledger, job_id, signals, max_concurrent=1, submit_attempts=4).run()

    assert state == "failed"
    assert emu.requests[RUN_NOW] == 4 and emu.runs(job_id) == []
    warnings = messages(signals, "warning")
    assert warnings[:3] == [
        f"could not submit {keys[0]}: {INTERNAL}; trying again in {delay:g} s"
        for delay in (0.01, 0.02, 0.04)
    ]
    assert warnings[3:] == [
        f"could not submit {keys[0]}: {INTERNAL} (gave up after 4 tries); "
        "no new runs will be launched"
    ]
    saved = read_ledger(ledger.path)
    (attempt,) = saved.slices[0].attempts  # still open: nothing is known about a run
    assert (attempt.number, attempt.state, attempt.run_id) == (1, "submitting", None)
    assert attempt.token == attempt_token(saved.id, (keys[0],), 1)
    assert [r.attempts for r in saved.slices[1:]] == [(), ()]  # never launched
    assert saved.state == "failed"

    assert scheduler(emu, saved, job_id, EventSignals()).run() == "succeeded"
    assert sorted(keys_of(emu, job_id)) == keys
    first = next(r for r in emu.runs(job_id) if r.job_parameters["backfill_key"] == keys[0])
    assert first.idempotency_token == attempt.token
    (resumed,) = read_ledger(ledger.path).slices[0].attempts
    assert (resumed.number, resumed.state, resumed.run_id) == (1, "succeeded", str(first.run_id))


def test_every_retried_submission_carries_the_same_token(emu: JobsEmulator, root: Path) -> None:
    job_id = new_job(emu)
    ledger = make_ledger(root, [day(0), day(1)])
    emu.inject_fault(RUN_NOW, kind="drop_after", count=2)  # applied, answer lost: twice
    client = emu.workspace_client(retry_timeout_seconds=1)  # the SDK gives up after one drop
    signals = EventSignals()

    state = scheduler(
        emu, ledger, job_id, signals, client=client, max_concurrent=1, submit_attempts=2
    ).run()

    # An unanswered submission is an outage, not a failed try: it is sent again until
    # answered, and every request was applied: a second token would have made a second run.
    assert state == "succeeded"
    assert emu.requests[RUN_NOW] == 4  # day 0 three times, day 1 once
    assert keys_of(emu, job_id) == [day(0), day(1)]
    first = emu.runs(job_id)[0]
    (attempt,) = read_ledger(ledger.path).slices[0].attempts
    assert (attempt.token, attempt.run_id) == (first.idempotency_token, str(first.run_id))
    outage = [e for e in signals.events if e.kind in ("unreachable", "reachable")]
    assert [e.kind for e in outage] == ["unreachable", "reachable"]
    assert outage[0].message.endswith("retrying; 1 run in flight")
    assert messages(signals, "warning") == []


def test_failed_status_polls_are_retried_and_every_slice_ends_once(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = new_job(emu)
    keys = [day(i) for i in range(4)]
    ledger = make_ledger(root, keys)
    emu.inject_fault(RUNS_LIST, status=500, count=2)
    signals = EventSignals()

    assert scheduler(emu, ledger, job_id, signals, max_concurrent=4).run() == "succeeded"

    assert emu.faults[f"500 {RUNS_LIST}"] == 2
    assert messages(signals, "warning") == [f"status poll failed, will retry: {INTERNAL}"] * 2
    assert sorted(keys_of(emu, job_id)) == keys  # exactly one run per key
    saved = read_ledger(ledger.path)
    assert [[a.state for a in r.attempts] for r in saved.slices] == [["succeeded"]] * 4
    assert [e.kind for e in signals.events].count("succeeded") == 4


def test_cancel_while_submissions_are_parked_cancels_the_runs_they_create(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = new_job(emu)
    emu.hold_runs = True
    keys = [day(i) for i in range(4)]
    ledger = make_ledger(root, keys)
    interrupts = Interrupts()
    signals = EventSignals()
    emu.block_submissions()
    runner = scheduler(emu, ledger, job_id, signals, interrupts=interrupts, max_concurrent=2)

    with in_background(emu, runner) as result:
        emu.wait_for_blocked_submissions(2)
        interrupts.escalate(level=CANCEL)  # SIGTERM while both run-now requests are parked
        signals.wait("cancelling")
        emu.unblock_submissions()
        assert result.result(timeout=120) == "interrupted"

    assert messages(signals, "cancelling") == ["cancelling 2 in-flight runs"]
    runs = emu.runs(job_id)
    assert sorted(keys_of(emu, job_id)) == keys[:2]
    assert [r.result_state for r in runs] == ["CANCELED"] * 2
    saved = read_ledger(ledger.path)
    assert saved.state == "interrupted"
    cancelled = {a.run_id: a for r in saved.slices[:2] for a in r.attempts}
    assert set(cancelled) == {str(r.run_id) for r in runs}
    assert {(a.state, a.error) for a in cancelled.values()} == {
        ("cancelled", "cancelled by the user")
    }
    assert [r.attempts for r in saved.slices[2:]] == [(), ()]


def test_cancel_while_a_parked_submission_loses_its_answer_keeps_the_attempt_open(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = new_job(emu)
    emu.hold_runs = True
    ledger = make_ledger(root, [day(0), day(1)])
    interrupts = Interrupts()
    signals = EventSignals()
    emu.block_submissions()
    # the run is created, its id never arrives: neither to the request nor to the copy
    # the backend sends when a run-now is slow (launch/backends/overtake.py)
    emu.inject_fault(RUN_NOW, kind="drop_after", count=2)
    client = emu.workspace_client(retry_timeout_seconds=1)
    runner = scheduler(
        emu, ledger, job_id, signals, client=client, interrupts=interrupts, max_concurrent=1
    )

    with in_background(emu, runner) as result:
        emu.wait_for_blocked_submissions(1)
        interrupts.escalate(level=CANCEL)
        signals.wait("cancelling")
        emu.unblock_submissions()
        assert result.result(timeout=120) == "interrupted"
        (run,) = emu.runs(job_id)
        assert run.active  # nothing to cancel it by: the launcher never learnt its id

    saved = read_ledger(ledger.path)
    (attempt,) = saved.slices[0].attempts
    assert (attempt.state, attempt.run_id, attempt.token) == (
        "submitting",
        None,
        run.idempotency_token,
    )
    assert saved.state == "interrupted" and saved.slices[1].attempts == ()

    emu.hold_runs = False
    assert scheduler(emu, saved, job_id, EventSignals(), client=client).run() == "succeeded"
    assert keys_of(emu, job_id) == [day(0), day(1)]  # --resume found the run by its token
    assert read_ledger(ledger.path).slices[0].attempts[0].run_id == str(run.run_id)


@pytest.mark.parametrize(
    ("status", "answer"),
    [
        pytest.param(
            403, "Permission denied (emulated fault). Config: host=", id="permission-denied"
        ),
        pytest.param(401, "Emulated. Config: host=", id="unauthenticated"),
        pytest.param(None, "Job {job_id} does not exist.", id="job-deleted"),
    ],
)
def test_a_fatal_rejection_halts_the_backfill(
    emu: JobsEmulator, root: Path, status: int | None, answer: str
) -> None:
    job_id = new_job(emu)
    if status is None:
        job_id += 1  # the emulator has no such job: run-now answers as for a deleted one
    else:
        emu.inject_fault(RUN_NOW, status=status)
    emu.hold_runs = True  # a run that got through keeps its slot until the refusal is seen
    ledger = make_ledger(root, [day(i) for i in range(5)])
    signals = EventSignals()
    runner = scheduler(emu, ledger, job_id, signals, max_concurrent=2, retries=3)

    with in_background(emu, runner) as result:
        signals.wait("warning")
        emu.release()
        assert result.result(timeout=120) == "failed"

    # Two submissions were under way; the refused one stops any third.
    assert emu.requests[RUN_NOW] == 2
    expected = answer.format(job_id=job_id)
    (halt,) = messages(signals, "warning")
    assert halt.startswith(f"the backend refused a submission: {expected}")
    assert halt.endswith("; no new runs will be launched") and "\n" not in halt
    saved = read_ledger(ledger.path)
    rejected = [a for r in saved.slices for a in r.attempts if a.state == "rejected"]
    assert len(rejected) >= 1 and rejected[0].error.startswith(expected)
    assert all(a.run_id is None for a in rejected)
    assert [len(r.attempts) for r in saved.slices[2:]] == [0, 0, 0]
    assert saved.state == "failed"
    assert len(emu.runs()) == 2 - len(rejected)  # the other one, if any, ran to its end
    assert all(r.result_state == "SUCCESS" for r in emu.runs())
