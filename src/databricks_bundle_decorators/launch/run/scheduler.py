"""The scheduler: up to N runs in flight, a slot refilled as soon as a run ends.

One loop thread owns the ledger and all decisions; submissions run on a thread pool,
status is polled in batches (:class:`..policy.poll_policy.StatusPoller`), and a backend that tells
ends wakes the loop at once. An attempt is saved *before* its submission is sent, and
every change before the loop acts on it, so a launcher killed at any instant resumes
without a second run. A ledger that cannot be saved stops launching (runs in flight are
watched to their end); an unreachable backend is polled and re-sent to, uncounted.
Features are parts called at fixed points (docs/architecture.md).
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ...errors import LocalStateProblem, WorkspaceUnreachable, counted
from ..backends.backends import Backend, RunStatus
from ..backends.diff_gate import canary_stop, gated_error
from ..backends.errors import BackendUnavailable
from ..backends.job_router import job_router
from ..ledger.ledger import Attempt, Ledger, SliceRecord, attempt_token
from ..plan.options import LaunchOptions
from ..plan.states import BackfillState, RunState
from ..policy.canary import CanaryGate
from ..policy.outage import OutageTracker, TrackedBackend
from ..policy.poll_policy import StatusPoller
from ..policy.retry_budget import RetryBudgets
from .blocking import ReadySet
from .events import Counts, EventKind, LaunchEvent
from .flights import (
    EndedRuns,
    Flight,
    cancel_flights,
    dispatch,
    earliest_unsent,
    harvest_submissions,
)
from .interrupts import CANCEL, DRAIN, Interrupts
from .steering import Steering
from .summary import attempt_event

_CANCEL_WAIT = 30.0


class Scheduler:
    """Drives one backfill's ledger to completion on a backend.

    Args:
        emit: Receives every :class:`LaunchEvent`.
        interrupts: Drain/cancel requests (Ctrl-C); a fresh one when omitted.
        clock: Monotonic seconds for the ``--retry-for`` budgets.
        ready: ``--downstream``'s ready set and blocking (requests are routed by job).
        steering: A controller run's control ops, handover and fencing.
        rebatch: Called before each round of launches (``--batch-size auto``).
    """

    def __init__(
        self,
        backend: Backend,
        ledger: Ledger,
        options: LaunchOptions,
        *,
        emit: Callable[[LaunchEvent], None] = lambda event: None,
        interrupts: Interrupts | None = None,
        clock: Callable[[], float] = time.monotonic,
        ready: ReadySet | None = None,
        steering: Steering | None = None,
        rebatch: Callable[[Scheduler], None] | None = None,
    ) -> None:
        if ready is not None:
            backend = job_router(backend, ledger)  # tells ends only if the backend does
        self.ready, self.steering, self.rebatch = ready, steering, rebatch
        self.outage = OutageTracker()
        self.backend = TrackedBackend(backend, self.outage)
        self.ledger = ledger
        self.options = options
        self.emit = emit
        self.interrupts = interrupts or Interrupts()
        self._wake = self.interrupts.wake
        self.flights: dict[int, Flight] = {}
        self.by_run: dict[str, Flight] = {}
        self.queue: deque[int] = deque()
        self._unsaved: list[int] = []  # slices whose new attempt is not on disk yet
        self.delayed: list[tuple[float, int]] = []
        self.final: int | None = None
        self.failed_for_good: set[int] = set()
        self._budgets = RetryBudgets(options, clock)
        self._halted = ""
        self._ended = EndedRuns(backend, self._wake.set)
        self._poller = StatusPoller(
            self.backend.poll, options, self._wake.set, notified=self._ended.notified
        )
        self._cancelled = False
        self._drain_announced = False
        self._succeeded = 0
        self._canary = CanaryGate(ledger.slices, options.canary)

    def run(self) -> BackfillState:
        """Run every unfinished slice; return the ledger's final state."""
        workers = max(1, min(self.options.max_concurrent, 32))
        submitter = ThreadPoolExecutor(workers, thread_name_prefix="dbxdec-submit")
        try:
            self._prepare()
            while True:
                harvest_submissions(self)
                self._harvest_poll()
                self._poll_ended()
                for kind, line in self.outage.pending(len(self.flights)):
                    self.say(kind, line)
                self._announce_interrupt()
                if self.interrupts.level >= CANCEL:
                    self._cancel_all(submitter)
                    break
                self._launch_ready()
                self._save()  # write-ahead: attempts exist before submission
                if self.steering is None or self.steering.journal_lost is None:
                    dispatch(self, submitter)  # fenced: not one more run-now
                self._poller.start(self.by_run, time.monotonic())
                if self._done():
                    break
                self._sleep()
        finally:
            submitter.shutdown(wait=False, cancel_futures=True)
            self._poller.close()
        state = self._final_state()
        self.ledger.set_state(state)
        self._save()
        return state

    def counts(self) -> Counts:
        return Counts(
            total=len(self.ledger.slices),
            done=self._succeeded,
            failed=len(self.failed_for_good),
            running=len(self.flights),
            blocked=len(self.ready.blocked) if self.ready is not None else 0,
        )

    def _prepare(self) -> None:
        """Take up the ledger: slices done, in flight (a resumed open attempt, whose token
        finds the run it started), queued, and the final sync (no keys), kept for last."""
        self.ledger.set_state(BackfillState.RUNNING)
        for record in self.ledger.slices:
            last = record.last
            if record.state == "succeeded":
                self._succeeded += 1
            elif last is not None and last.is_open:
                flight = Flight(record.index, last.number, last.token, run_id=last.run_id)
                self.flights[record.index] = flight
                if last.run_id is not None:
                    self.by_run[last.run_id] = flight
            elif not record.keys:
                self.final = record.index
            else:
                self.queue.append(record.index)

    def launching(self) -> bool:
        held = self.steering is not None and self.steering.holds()
        return self.interrupts.level < DRAIN and not self._halted and not held

    def _launch_ready(self) -> None:
        if self.rebatch is not None:
            self.rebatch(self)
        held = self.ready.hold(self) if self.ready is not None else []
        now = time.monotonic()
        while self.delayed and self.delayed[0][0] <= now:
            _, index = heapq.heappop(self.delayed)
            self.queue.appendleft(index)  # a retry goes before untried slices
        if self.launching():
            if self.final is not None and self._only_final_left():
                self.queue.append(self.final)
                self.final = None
            while self.queue and len(self.flights) < self.options.max_concurrent:
                if not self._canary.admits(self.queue[0], self.ledger.slices):
                    break  # the rest wait until every canary has succeeded
                self._start_attempt(self.queue.popleft())
        self.queue.extend(held)

    def _only_final_left(self) -> bool:
        return not (self.queue or self.delayed or self.flights or self.failed_for_good)

    def _start_attempt(self, index: int) -> None:
        record = self.ledger.slices[index]
        number = (record.last.number + 1) if record.last else 1
        scope = self.ledger.id if self.ready is None else self.ready.token_scope(record)
        token = attempt_token(scope, record.keys, number)
        attempt = Attempt(number, token, RunState.SUBMITTING, submitted_at=time.time())
        self._budgets.attempt_started(index)
        self.ledger.update(record.with_attempt(attempt))
        self.flights[index] = Flight(index, number, token)
        self._unsaved.append(index)

    def _save(self) -> None:
        """Save the ledger; if that fails, forget the attempts it would have recorded
        (never sent, so nothing is lost) and launch nothing more (steered:
        :meth:`.steering.Steering.save_failed`)."""
        if self.steering is not None and self.steering.journal_lost is not None:
            return  # fenced: nothing more is saved
        try:
            self.ledger.save_if_dirty()
        except (LocalStateProblem, WorkspaceUnreachable) as exc:
            if self.steering is not None:
                self.steering.save_failed(exc, self)
            elif isinstance(exc, WorkspaceUnreachable):
                raise
            else:
                self.forget_unsaved()
                self.halt(f"{exc}; watching the {counted(len(self.flights), 'run')} in flight")
        self._unsaved.clear()

    def forget_unsaved(self) -> list[int]:
        """Drop the attempts a failed save would have recorded (never sent); their slices."""
        for index in self._unsaved:
            self.flights.pop(index, None)
            record = self.ledger.slices[index]
            self.ledger.update(replace(record, attempts=record.attempts[:-1]))
        return self._unsaved

    def _harvest_poll(self) -> None:
        answered = self._poller.harvest(time.monotonic())
        for future in answered:
            try:
                statuses = future.result()
            except BackendUnavailable:  # reported as an outage
                continue
            except Exception as exc:
                self.warn(f"status poll failed, will retry: {exc}")
                continue
            for run_id, status in statuses.items():
                flight = self.by_run.get(run_id)
                if flight is not None and status.is_terminal:
                    self._finish(flight, status)
        if answered:
            starts = (f.submitted for f in self.by_run.values() if f.submitted)
            self._poller.plan(time.monotonic(), starts)

    def _poll_ended(self) -> None:
        """Poll at once the runs the backend said have ended."""
        self._poller.start(self._ended.take(self.by_run), time.monotonic(), at_once=True)

    def _finish(self, flight: Flight, status: RunStatus) -> None:
        if flight.submitted:
            self._poller.pacer.record(time.monotonic() - flight.submitted)
        record = self.ledger.slices[flight.index]
        attempt = status.onto(record.attempt(flight.attempt))
        url = status.url or attempt.url
        gate = self.options.diff_gate if self._canary.is_canary(flight.index) else None
        gated = canary_stop(self.backend, gate, flight, self.ledger, self.warn, status.state)
        if status.state == "succeeded" and gated is None:
            self.close(flight, replace(attempt, state=RunState.SUCCEEDED, url=url))
            return
        status = status if gated is None else replace(status, state=RunState.FAILED, message=gated)
        state: RunState = (
            RunState.CANCELLED
            if status.state == RunState.CANCELLED and self._cancelled
            else RunState.FAILED
        )
        self.close(flight, replace(attempt, state=state, url=url, error=status.message))

    def close(self, flight: Flight, attempt: Attempt) -> None:
        """Record the end of an attempt; plan a retry or give the slice up."""
        self.flights.pop(flight.index, None)
        if flight.run_id is not None:
            self.by_run.pop(flight.run_id, None)
        attempt = replace(attempt, ended_at=attempt.ended_at or time.time())
        failed = attempt.state == "failed" and not gated_error(attempt.error)
        retry = self._budgets.after_failure(flight.index) if failed else None
        if retry is not None:
            attempt = replace(attempt, gave_up=retry.spent)
        record = self.ledger.slices[flight.index].with_attempt(attempt)
        self.ledger.update(record)
        if attempt.state == "succeeded":
            self._succeeded += 1
        if attempt.state in (RunState.SUCCEEDED, RunState.CANCELLED):
            self.event(
                "succeeded" if attempt.state == RunState.SUCCEEDED else "cancelled", record, attempt
            )
            return
        if retry is not None and retry.retry and self.launching():
            delay = retry.delay
            heapq.heappush(self.delayed, (time.monotonic() + delay, flight.index))
            self.event(
                "retrying", record, attempt, message=f"{attempt.error} (retry in {delay:g} s)"
            )
            return
        self.failed_for_good.add(flight.index)
        self.event("failed", record, attempt)
        if self._canary.is_canary(flight.index):  # the CLI ends with the canary's line
            self._halted = self._halted or f"canary slice {record.label} failed"
        if self.options.halt_on_error:
            self.halt(f"slice {record.label} failed and --halt-on-error is set")

    def halt(self, reason: str) -> None:
        if not self._halted:
            self._halted = reason
            self.warn(f"{reason}; no new runs will be launched")

    def _cancel_all(self, pool: ThreadPoolExecutor) -> None:
        self._cancelled = True
        self.say("cancelling", f"cancelling {counted(len(self.flights), 'in-flight run')}")
        outcomes = cancel_flights(self.backend, list(self.flights.values()), pool, _CANCEL_WAIT)
        # Runs that end inside this process (local) stop before the launcher returns.
        stopping = [self.flights[i].run_id for i, error in outcomes.items() if error is None]
        self._ended.wait_for([r for r in stopping if r is not None], _CANCEL_WAIT)
        for index, error in outcomes.items():
            flight = self.flights[index]
            record = self.ledger.slices[index]
            attempt = replace(record.attempt(flight.attempt), run_id=flight.run_id)
            if error is not None:
                self.warn(f"could not cancel run {flight.run_id} ({record.label}): {error}")
                self.ledger.update(record.with_attempt(attempt))
                continue
            self.close(
                flight, replace(attempt, state=RunState.CANCELLED, error="cancelled by the user")
            )
        self._save()

    def _announce_interrupt(self) -> None:
        if self.steering is not None:  # the per-turn look at the control ops and the clock
            self.steering.turn(self)
        level = self.interrupts.level
        if self.interrupts.stopped and not self._halted:  # said once, in its own words
            self._halted = self.interrupts.stopped
            self.warn(self._halted)
        if level == DRAIN and not self._drain_announced:
            self._drain_announced = True
            self.say(
                "draining",
                f"draining: no new runs; waiting for {len(self.flights)} in flight "
                "(Ctrl-C again cancels them)",
            )

    def _done(self) -> bool:
        if self.steering is not None:
            decided = self.steering.done(self)
            if decided is not None:
                return decided
        if self.ready is not None and self.ready.stuck(self):
            return True  # nothing runs and nothing can start: never wait for ever
        if self.flights:
            return False
        if not self.launching():
            return True
        # A final sync waits for every slice; after a failure it is left for --resume.
        final_left = self.final is not None and not self.failed_for_good
        return not self.queue and not self.delayed and not final_left

    def _final_state(self) -> BackfillState:
        if self.steering is not None and self.steering.hands_over(self.interrupts):
            return BackfillState.RUNNING
        if self.interrupts.level >= DRAIN or self.ledger.save_failure:
            return BackfillState.INTERRUPTED
        if any(r.state != "succeeded" for r in self.ledger.slices):
            return BackfillState.INTERRUPTED if self.interrupts.stopped else BackfillState.FAILED
        return BackfillState.SUCCEEDED

    def _sleep(self) -> None:
        now = time.monotonic()
        wake_at = now + 0.5  # heartbeat: progress displays and signal checks
        if self.by_run:
            wake_at = min(wake_at, self._poller.due_at())
        if self.delayed and self.launching():
            wake_at = min(wake_at, self.delayed[0][0])
        wake_at = earliest_unsent(self.flights.values(), wake_at)
        if wake_at > now:
            self._wake.wait(wake_at - now)
        self._wake.clear()

    def event(
        self, kind: EventKind, record: SliceRecord, attempt: Attempt, *, message: str = ""
    ) -> None:
        self.emit(attempt_event(kind, self.counts(), record, attempt, message=message))

    def say(self, kind: EventKind, message: str) -> None:
        self.emit(LaunchEvent(kind, time.time(), self.counts(), message=message))

    def warn(self, message: str) -> None:
        self.say("warning", message)
