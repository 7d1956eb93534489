"""The scheduler driving the real WorkspaceClient against the Jobs API emulator."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.run.events import LaunchEvent
from databricks_bundle_decorators.launch.run.interrupts import CANCEL, DRAIN, Interrupts
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
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
    # Faults are scripted request by request here: a slow call is never sent again
    # (resend_after=0), so a loaded machine cannot hand a scripted fault to a copy.
    opts = LaunchOptions(
        **{  # type: ignore[arg-type]
            "poll_interval": 0.01,
            "max_poll_interval": 0.1,
            "retry_delay": 0.01,
            "resend_after": 0.0,
            **options,
        }
    )
    backend = DatabricksBackend(emu.workspace_client(), job_id, resend_after=opts.resend_after)
    sink = events if events is not None else []
    return Scheduler(backend, ledger, opts, emit=sink.append, interrupts=interrupts).run()


@contextmanager
def in_background(
    emu: JobsEmulator, ledger: Ledger, job_id: int, **kwargs: object
) -> Iterator[Future[str]]:
    """The scheduler on another thread while the test steers the emulator."""
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run, emu, ledger, job_id, **kwargs)  # type: ignore[arg-type]
        try:
            yield future
        finally:
            emu.release()  # never leave the scheduler waiting on a held run
            emu.unblock_submissions()
            future.result(timeout=120)


class EventSignals:
    """Scheduler events as a list, with a threading.Event per kind that has occurred."""

    def __init__(self) -> None:
        self.events: list[LaunchEvent] = []
        self._seen: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def _flag(self, kind: str) -> threading.Event:
        with self._lock:
            return self._seen.setdefault(kind, threading.Event())

    def append(self, event: LaunchEvent) -> None:
        self.events.append(event)
        self._flag(event.kind).set()

    def wait(self, kind: str, count: int = 1) -> None:
        """Block until ``count`` events of ``kind`` were emitted."""
        while sum(e.kind == kind for e in list(self.events)) < count:
            flag = self._flag(kind)
            assert flag.wait(60), f"no {kind!r} event"
            flag.clear()


def test_concurrency_is_capped_and_slots_refill_without_waves(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    keys = [day(i) for i in range(40)]
    for key in keys[:5]:  # the first five runs stay RUNNING until released
        emu.set_outcome(key, hold=True)
    ledger = make_ledger(root, keys)

    with in_background(emu, ledger, job_id, max_concurrent=5) as result:
        at_cap = emu.wait_for(lambda runs: sum(r.active for r in runs) == 5, job_id=job_id)
        assert len(at_cap) == 5  # five slots full: no sixth submission
        for key in keys[1:5]:
            emu.release(key)
        # The first run stays held: waves would stall on it; the four free slots must
        # serve every other key meanwhile.
        emu.wait_for(
            lambda runs: len(runs) == 40 and [r.active for r in runs].count(True) == 1,
            job_id=job_id,
            what="every other key done while the first run is held",
        )
        emu.release(keys[0])
        assert result.result(timeout=120) == "succeeded"

    assert emu.max_concurrency(job_id) == 5  # reached, never exceeded
    runs = emu.runs(job_id)
    (first,) = [r for r in runs if r.job_parameters["backfill_key"] == keys[0]]
    assert first.ended is not None
    assert all(r.created < first.ended for r in runs)
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
    emu.set_outcome(keys[1], duration=0.2)  # outlasts the retry delay: the retry comes next
    ledger = make_ledger(root, keys)

    assert run(emu, ledger, job_id, max_concurrent=1, retries=1, halt_on_error=True) == "failed"

    # The slot may serve the next slice during the retry delay (how soon the loop wakes
    # decides); after the retry's failure nothing new is launched.
    launched = keys_of(emu, job_id)
    assert launched in ([keys[0], keys[1], keys[0]], [keys[0], keys[0]])
    last_failure = emu.runs(job_id)[-1]
    assert last_failure.result_state == "FAILED" and last_failure.ended is not None
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
    emu.hold_runs = True
    keys = [day(i) for i in range(8)]
    ledger = make_ledger(root, keys)
    interrupts = Interrupts()
    signals = EventSignals()

    with in_background(
        emu, ledger, job_id, events=signals, interrupts=interrupts, max_concurrent=2
    ) as result:
        signals.wait("submitted", 2)
        interrupts.escalate()  # a first Ctrl-C, while both slots hold a running run
        signals.wait("draining")
        emu.release()
        assert result.result(timeout=120) == "interrupted"

    assert interrupts.level == DRAIN
    runs = emu.runs(job_id)
    assert len(runs) == 2 and all(r.result_state == "SUCCESS" for r in runs)
    saved = read_ledger(ledger.path)
    assert saved.state == "interrupted" and saved.counts()["succeeded"] == 2

    assert run(emu, saved, job_id, max_concurrent=4) == "succeeded"
    assert sorted(keys_of(emu, job_id)) == keys


def test_second_interrupt_cancels_in_flight_runs(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.hold_runs = True
    keys = [day(i) for i in range(6)]
    ledger = make_ledger(root, keys)
    interrupts = Interrupts()
    signals = EventSignals()

    with in_background(
        emu, ledger, job_id, events=signals, interrupts=interrupts, max_concurrent=3
    ) as result:
        signals.wait("submitted", 3)
        interrupts.escalate(level=CANCEL)  # SIGTERM
        assert result.result(timeout=120) == "interrupted"

    assert [r.result_state for r in emu.runs(job_id)] == ["CANCELED"] * 3
    saved = read_ledger(ledger.path)
    assert [r.state for r in saved.slices[:3]] == ["cancelled"] * 3
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
