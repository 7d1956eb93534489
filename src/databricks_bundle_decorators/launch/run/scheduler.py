"""The scheduler: up to N runs in flight, a slot refilled as soon as a run ends.

One loop thread owns the ledger and all decisions. Submissions run on a small thread pool
(a slow or retried ``run-now`` never blocks the others), status is polled in batches
(:mod:`..policy.status_poller`), and a backend that tells when a run ends (the local one) reports
it at once; each of these wakes the loop, which otherwise sleeps until the next poll or
retry is due.

Durability: an attempt (with its idempotency token) is saved *before* its submission is
sent, and every change before the loop acts on it, so a launcher killed at any instant
resumes without a second run for an attempt. When the ledger cannot be saved (a full
disk), unsaved attempts are dropped, no new run is launched, and runs in flight are
watched to their end. When the backend does not
answer, runs in flight go on: the loop polls, re-sends submissions with their tokens
without counting a try, and says since when it has been unreachable.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ...errors import LocalStateProblem, counted
from ..backends.backends import Backend, RunStatus, SubmitRejected, SubmitRequest
from ..backends.diff_gate import canary_stop, gated_error
from ..backends.errors import BackendUnavailable
from ..ledger.ledger import Attempt, AttemptState, Ledger, LedgerState, SliceRecord, attempt_token
from ..plan.pacing import SchedulerOptions, backoff
from ..policy.canary import CanaryGate
from ..policy.outage import OutageTracker, TrackedBackend
from ..policy.retry_budget import RetryBudgets
from ..policy.status_poller import StatusPoller
from .events import Counts, EventKind, LaunchEvent
from .flights import Flight, cancel_flights, earliest_unsent
from .interrupts import CANCEL, DRAIN, Interrupts
from .run_ends import EndedRuns
from .summary import attempt_event
from .take_up import take_up

_SUBMIT_RETRY_CAP = 60.0
_UNREACHABLE_RETRY = 2.0  # each unanswered call already took the client's whole budget
_CANCEL_WAIT = 30.0


class Scheduler:
    """Drives one backfill's ledger to completion on a backend.

    Args:
        backend: Where runs happen.
        ledger: The backfill's ledger; slices not yet succeeded are run.
        options: Concurrency, retries and polling.
        emit: Receives every :class:`LaunchEvent`.
        interrupts: Drain/cancel requests (Ctrl-C); a fresh one when omitted.
        clock: Monotonic seconds for the ``--retry-for`` budgets (tests pass their own).
    """

    def __init__(
        self,
        backend: Backend,
        ledger: Ledger,
        options: SchedulerOptions,
        *,
        emit: Callable[[LaunchEvent], None] = lambda event: None,
        interrupts: Interrupts | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.outage = OutageTracker()
        self.backend = TrackedBackend(backend, self.outage)
        self.ledger = ledger
        self.options = options
        self.emit = emit
        self.interrupts = interrupts or Interrupts()
        self._wake = self.interrupts.wake
        self._flights: dict[int, Flight] = {}
        self._by_run: dict[str, Flight] = {}
        self._queue: deque[int] = deque()
        self._unsaved: list[int] = []  # slices whose new attempt is not on disk yet
        self._delayed: list[tuple[float, int]] = []
        self._final: int | None = None
        self._failed_for_good: set[int] = set()
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

    # -- public ------------------------------------------------------------------------

    def run(self) -> LedgerState:
        """Run every unfinished slice; return the ledger's final state."""
        workers = max(1, min(self.options.max_concurrent, 32))
        submitter = ThreadPoolExecutor(workers, thread_name_prefix="dbxdec-submit")
        try:
            self._prepare()
            while True:
                self._harvest_submissions()
                self._harvest_poll()
                self._poll_ended()
                for kind, line in self.outage.pending(len(self._flights)):
                    self._event_plain(kind, line)
                self._announce_interrupt()
                if self.interrupts.level >= CANCEL:
                    self._cancel_all(submitter)
                    break
                self._launch_ready()
                self._save()  # write-ahead: attempts exist before submission
                self._dispatch(submitter)
                self._poller.start(self._by_run, time.monotonic())
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
            failed=len(self._failed_for_good),
            running=len(self._flights),
        )

    # -- setup -------------------------------------------------------------------------

    def _prepare(self) -> None:
        self.ledger.set_state("running")
        work = take_up(self.ledger.slices)
        self._succeeded += work.succeeded
        self._flights.update(work.flights)
        self._by_run.update(work.by_run)
        self._queue.extend(work.queue)
        if work.final is not None:
            self._final = work.final

    # -- launching ---------------------------------------------------------------------

    def _launching(self) -> bool:
        return self.interrupts.level < DRAIN and not self._halted

    def _launch_ready(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            _, index = heapq.heappop(self._delayed)
            self._queue.appendleft(index)  # a retry goes before untried slices
        if not self._launching():
            return
        if self._final is not None and self._only_final_left():
            self._queue.append(self._final)
            self._final = None
        while self._queue and len(self._flights) < self.options.max_concurrent:
            if not self._canary.admits(self._queue[0], self.ledger.slices):
                break  # the rest wait until every canary has succeeded
            self._start_attempt(self._queue.popleft())

    def _only_final_left(self) -> bool:
        return not (self._queue or self._delayed or self._flights or self._failed_for_good)

    def _start_attempt(self, index: int) -> None:
        record = self.ledger.slices[index]
        number = (record.last.number + 1) if record.last else 1
        token = attempt_token(self.ledger.id, record.keys, number)
        attempt = Attempt(number, token, "submitting", submitted_at=time.time())
        self._budgets.attempt_started(index)
        self.ledger.update(record.with_attempt(attempt))
        self._flights[index] = Flight(index, number, token)
        self._unsaved.append(index)

    def _save(self) -> None:
        """Save the ledger; if that fails, forget the attempts it would have recorded
        (never sent, so nothing is lost) and launch nothing more."""
        try:
            self.ledger.save_if_dirty()
        except LocalStateProblem as exc:
            for index in self._unsaved:
                self._flights.pop(index)
                record = self.ledger.slices[index]
                self.ledger.update(replace(record, attempts=record.attempts[:-1]))
            self._halt(f"{exc}; watching the {counted(len(self._flights), 'run')} in flight")
        self._unsaved.clear()

    def _dispatch(self, pool: ThreadPoolExecutor) -> None:
        now = time.monotonic()
        for flight in self._flights.values():
            if flight.run_id is None and not flight.dispatched and flight.not_before <= now:
                record = self.ledger.slices[flight.index]
                sent = record.last.submitted_at if record.last is not None else None
                request = SubmitRequest(flight.token, dict(record.parameters), record.label, sent)
                flight.future = pool.submit(self.backend.submit, request)
                flight.future.add_done_callback(lambda _: self._wake.set())
                flight.dispatched = True
                flight.submitted = now

    def _harvest_submissions(self) -> None:
        for flight in list(self._flights.values()):
            future = flight.future
            if future is None or not future.done():
                continue
            flight.future = None
            flight.dispatched = False
            record = self.ledger.slices[flight.index]
            attempt = record.attempt(flight.attempt)
            try:
                submitted = future.result()
            except SubmitRejected as exc:
                self._close(flight, replace(attempt, state="rejected", error=str(exc)))
                if exc.fatal:
                    self._halt(f"the backend refused a submission: {exc}")
                continue
            except BackendUnavailable:  # not this slice's fault: the outage is reported
                delay = min(self.options.retry_delay, _UNREACHABLE_RETRY)
                flight.not_before = time.monotonic() + delay
                continue
            except Exception as exc:  # unknown whether a run exists: same token again
                self._submit_failed(flight, attempt, exc)
                continue
            flight.run_id = submitted.run_id
            self._by_run[submitted.run_id] = flight
            running = replace(attempt, state="running", run_id=submitted.run_id, url=submitted.url)
            self.ledger.update(record.with_attempt(running))
            self._event("submitted", record, running)

    def _submit_failed(self, flight: Flight, attempt: Attempt, exc: Exception) -> None:
        flight.submit_errors += 1
        message = f"could not submit {self.ledger.slices[flight.index].label}: {exc}"
        if flight.submit_errors >= self.options.submit_attempts:
            self._halt(f"{message} (gave up after {flight.submit_errors} tries)")
            self._flights.pop(flight.index)  # the attempt stays open in the ledger
            self._failed_for_good.add(flight.index)
            self._event("failed", self.ledger.slices[flight.index], attempt, message=message)
            return
        delay = min(backoff(self.options, flight.submit_errors), _SUBMIT_RETRY_CAP)
        flight.not_before = time.monotonic() + delay
        self._warn(f"{message}; trying again in {delay:g} s")

    # -- polling -----------------------------------------------------------------------

    def _harvest_poll(self) -> None:
        answered = self._poller.harvest(time.monotonic())
        for future in answered:
            try:
                statuses = future.result()
            except BackendUnavailable:  # reported as an outage
                continue
            except Exception as exc:
                self._warn(f"status poll failed, will retry: {exc}")
                continue
            for run_id, status in statuses.items():
                flight = self._by_run.get(run_id)
                if flight is not None and status.is_terminal:
                    self._finish(flight, status)
        if answered:
            starts = (f.submitted for f in self._by_run.values() if f.submitted)
            self._poller.plan(time.monotonic(), starts)

    def _poll_ended(self) -> None:
        """Poll at once the runs the backend said have ended."""
        self._poller.start(self._ended.take(self._by_run), time.monotonic(), at_once=True)

    def _finish(self, flight: Flight, status: RunStatus) -> None:
        if flight.submitted:
            self._poller.pacer.record(time.monotonic() - flight.submitted)
        record = self.ledger.slices[flight.index]
        attempt = status.onto(record.attempt(flight.attempt))
        url = status.url or attempt.url
        gate = self.options.diff_gate if self._canary.is_canary(flight.index) else None
        gated = canary_stop(self.backend, gate, flight, self.ledger, self._warn, status.state)
        if status.state == "succeeded" and gated is None:
            self._close(flight, replace(attempt, state="succeeded", url=url))
            return
        status = status if gated is None else replace(status, state="failed", message=gated)
        state: AttemptState = (
            "canceled" if status.state == "canceled" and self._cancelled else "failed"
        )
        self._close(flight, replace(attempt, state=state, url=url, error=status.message))

    def _close(self, flight: Flight, attempt: Attempt) -> None:
        """Record the end of an attempt; plan a retry or give the slice up."""
        self._flights.pop(flight.index, None)
        if flight.run_id is not None:
            self._by_run.pop(flight.run_id, None)
        attempt = replace(attempt, ended_at=attempt.ended_at or time.time())
        failed = attempt.state == "failed" and not gated_error(attempt.error)
        retry = self._budgets.after_failure(flight.index) if failed else None
        if retry is not None:
            attempt = replace(attempt, gave_up=retry.spent)
        record = self.ledger.slices[flight.index].with_attempt(attempt)
        self.ledger.update(record)
        if attempt.state == "succeeded":
            self._succeeded += 1
        if attempt.state in ("succeeded", "canceled"):
            self._event(attempt.state, record, attempt)
            return
        if retry is not None and retry.retry and self._launching():
            delay = retry.delay
            heapq.heappush(self._delayed, (time.monotonic() + delay, flight.index))
            self._event(
                "retrying", record, attempt, message=f"{attempt.error} (retry in {delay:g} s)"
            )
            return
        self._failed_for_good.add(flight.index)
        self._event("failed", record, attempt)
        if self._canary.is_canary(flight.index):  # the CLI ends with the canary's line
            self._halted = self._halted or f"canary slice {record.label} failed"
        if self.options.halt_on_error:
            self._halt(f"slice {record.label} failed and --halt-on-error is set")

    # -- stopping ----------------------------------------------------------------------

    def _halt(self, reason: str) -> None:
        if not self._halted:
            self._halted = reason
            self._warn(f"{reason}; no new runs will be launched")

    def _cancel_all(self, pool: ThreadPoolExecutor) -> None:
        self._cancelled = True
        self._event_plain(
            "cancelling", f"cancelling {counted(len(self._flights), 'in-flight run')}"
        )
        outcomes = cancel_flights(self.backend, list(self._flights.values()), pool, _CANCEL_WAIT)
        # Runs that end inside this process (local) stop before the launcher returns.
        stopping = [self._flights[i].run_id for i, error in outcomes.items() if error is None]
        self._ended.wait_for([r for r in stopping if r is not None], _CANCEL_WAIT)
        for index, error in outcomes.items():
            flight = self._flights[index]
            record = self.ledger.slices[index]
            attempt = replace(record.attempt(flight.attempt), run_id=flight.run_id)
            if error is not None:
                self._warn(f"could not cancel run {flight.run_id} ({record.label}): {error}")
                self.ledger.update(record.with_attempt(attempt))
                continue
            self._close(flight, replace(attempt, state="canceled", error="cancelled by the user"))
        self._save()

    def _announce_interrupt(self) -> None:
        level = self.interrupts.level
        if self.interrupts.stopped and not self._halted:  # said once, in its own words
            self._halted = self.interrupts.stopped
            self._warn(self._halted)
        if level == DRAIN and not self._drain_announced:
            self._drain_announced = True
            self._event_plain(
                "draining",
                f"draining: no new runs; waiting for {len(self._flights)} in flight "
                "(Ctrl-C again cancels them)",
            )

    def _done(self) -> bool:
        if self._flights:
            return False
        if not self._launching():
            return True
        # A final sync waits for every slice; after a failure it is left for --resume.
        final_left = self._final is not None and not self._failed_for_good
        return not self._queue and not self._delayed and not final_left

    def _final_state(self) -> LedgerState:
        if self.interrupts.level >= DRAIN or self.ledger.save_failure:
            return "interrupted"
        if any(r.state != "succeeded" for r in self.ledger.slices):
            return "interrupted" if self.interrupts.stopped else "failed"
        return "succeeded"

    def _sleep(self) -> None:
        now = time.monotonic()
        wake_at = now + 0.5  # heartbeat: progress displays and signal checks
        if self._by_run:
            wake_at = min(wake_at, self._poller.due_at())
        if self._delayed and self._launching():
            wake_at = min(wake_at, self._delayed[0][0])
        wake_at = earliest_unsent(self._flights.values(), wake_at)
        if wake_at > now:
            self._wake.wait(wake_at - now)
        self._wake.clear()

    # -- helpers -----------------------------------------------------------------------

    def _event(
        self, kind: EventKind, record: SliceRecord, attempt: Attempt, *, message: str = ""
    ) -> None:
        self.emit(attempt_event(kind, self.counts(), record, attempt, message=message))

    def _event_plain(self, kind: EventKind, message: str) -> None:
        self.emit(LaunchEvent(kind, time.time(), self.counts(), message=message))

    def _warn(self, message: str) -> None:
        self._event_plain("warning", message)
