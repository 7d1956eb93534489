"""Ends told as events (the local backend): the scheduler is woken by a run's end.

The backend here is local-like: its runs end when the test says, in the test's thread,
and it tells the scheduler (``on_end``). The scheduler must notice an end by that wake,
never by a timed sleep running out; its planned polls are a safety net only. A
poll-only backend (Databricks) keeps the adaptive polling.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from databricks_bundle_decorators.launch.backends.backends import (
    EndsNotified,
    RunStatus,
    SubmitRequest,
    Submitted,
)
from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.run.events import LaunchEvent
from databricks_bundle_decorators.launch.run.interrupts import CANCEL, DRAIN, Interrupts
from databricks_bundle_decorators.launch.run.scheduler import Scheduler

# Planned polls an hour apart: a run's end seen within the test came from its wake.
SLOW_POLLS = LaunchOptions(max_concurrent=1, poll_interval=3600.0, max_poll_interval=3600.0)


class GatedRuns:
    """Runs that end when :meth:`end` is called; polls and submissions recorded."""

    kind = "local"

    def __init__(self) -> None:
        self.submitted: queue.Queue[str] = queue.Queue()
        self.polls: list[list[str]] = []
        self._ended: set[str] = set()
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()

    def submit(self, request: SubmitRequest) -> Submitted:
        run_id = f"run-{request.label}"
        self.submitted.put(run_id)
        return Submitted(run_id)

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        with self._lock:
            self.polls.append(sorted(run_ids))
            return {r: RunStatus("succeeded") for r in run_ids if r in self._ended}

    def end(self, run_id: str) -> None:
        with self._lock:
            self._ended.add(run_id)
        for listener in self._listeners:
            listener(run_id)

    def cancel(self, run_id: str) -> None:
        pass

    def close(self) -> None:
        pass


class TellingRuns(GatedRuns):
    """The same runs, and the backend tells the scheduler when one ends."""

    def on_end(self, callback: Callable[[str], None]) -> None:
        self._listeners.append(callback)


class CountingWake(threading.Event):
    """The scheduler's wake-up event, counting the sleeps that ran out (timed wakes)."""

    def __init__(self) -> None:
        super().__init__()
        self.timed_out = 0

    def wait(self, timeout: float | None = None) -> bool:
        woken = super().wait(timeout)
        self.timed_out += not woken
        return woken


def ledger_of(root: Path, days: int) -> Ledger:
    plan = BackfillPlan("nightly", tuple(Slice(i, (f"2024-01-0{i + 1}",)) for i in range(days)))
    return Ledger.create(root, plan, backend=BackendSpec("local"), options=LaunchOptions())


@contextmanager
def scheduling(backend: GatedRuns, ledger: Ledger, interrupts: Interrupts) -> Iterator[Future[str]]:
    with ThreadPoolExecutor(1) as pool:
        scheduler = Scheduler(backend, ledger, SLOW_POLLS, interrupts=interrupts)
        yield pool.submit(scheduler.run)


def test_backend_capability_is_optional() -> None:
    assert isinstance(TellingRuns(), EndsNotified)
    assert not isinstance(GatedRuns(), EndsNotified)


def test_each_end_wakes_the_scheduler_and_the_next_run_launches_without_a_timed_wait(
    tmp_path: Path,
) -> None:
    backend, interrupts, wake = TellingRuns(), Interrupts(), CountingWake()
    interrupts.wake = wake
    timed_between: list[int] = []
    with scheduling(backend, ledger_of(tmp_path, 4), interrupts) as done:
        run_id = backend.submitted.get(timeout=60)
        for _ in range(3):
            before = wake.timed_out
            backend.end(run_id)
            run_id = backend.submitted.get(timeout=60)  # launched only once the end was seen
            timed_between.append(wake.timed_out - before)
        backend.end(run_id)
        assert done.result(timeout=60) == "succeeded"
    assert timed_between == [0, 0, 0]
    # One poll at the first launch (the safety net's), then one per end: no polls paced
    # by run lengths.
    assert len(backend.polls) <= 1 + 4
    assert all(len(ids) == 1 for ids in backend.polls)


def test_a_drain_ends_when_the_last_run_ends(tmp_path: Path) -> None:
    backend, interrupts, wake = TellingRuns(), Interrupts(), CountingWake()
    interrupts.wake = wake
    with scheduling(backend, ledger_of(tmp_path, 3), interrupts) as done:
        backend.end(backend.submitted.get(timeout=60))
        run_id = backend.submitted.get(timeout=60)
        interrupts.escalate(DRAIN)  # Ctrl-C: no new launches, the run in flight finishes
        before = wake.timed_out
        backend.end(run_id)
        assert done.result(timeout=60) == "interrupted"
        assert wake.timed_out == before  # returned on the end's wake, not a timed one
    assert backend.submitted.empty()


class StoppingRuns(TellingRuns):
    """Runs that stop a while after they are cancelled (once the test releases them),
    in the backend's own thread, as local runs do."""

    def __init__(self) -> None:
        super().__init__()
        self.cancel_asked = threading.Event()
        self.release = threading.Event()

    def cancel(self, run_id: str) -> None:
        def stop() -> None:
            self.release.wait(timeout=60)
            self.end(run_id)

        threading.Thread(target=stop).start()
        self.cancel_asked.set()

    def stopped(self, run_id: str) -> bool:
        return run_id in self._ended


def test_a_second_ctrl_c_says_it_cancels_and_returns_once_the_runs_stopped(
    tmp_path: Path,
) -> None:
    backend, interrupts = StoppingRuns(), Interrupts()
    events: list[tuple[LaunchEvent, bool]] = []
    ledger = ledger_of(tmp_path, 3)
    run_id = ""

    def emit(event: LaunchEvent) -> None:  # with whether the run had stopped by then
        events.append((event, backend.stopped(run_id)))

    with ThreadPoolExecutor(1) as pool:
        scheduler = Scheduler(backend, ledger, SLOW_POLLS, emit=emit, interrupts=interrupts)
        done = pool.submit(scheduler.run)
        run_id = backend.submitted.get(timeout=60)
        interrupts.escalate(DRAIN)
        interrupts.escalate(CANCEL)
        assert backend.cancel_asked.wait(timeout=60)
        backend.release.set()
        assert done.result(timeout=60) == "interrupted"
    said = [(e.message, stopped) for e, stopped in events if e.kind in ("cancelling", "cancelled")]
    # Said before waiting; the run recorded cancelled only once it had stopped.
    assert said == [("cancelling 1 in-flight run", False), ("cancelled by the user", True)]
    assert [r.state for r in ledger.slices] == ["cancelled", "pending", "pending"]
