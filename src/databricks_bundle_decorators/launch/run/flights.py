"""Attempts in flight: what the scheduler knows of each submission (:class:`Flight`, from
its ledger entry to its run's end; ``run_id`` ``None`` until the submission answers), the
face of the scheduler its parts are handed (:class:`Loop`, a protocol, so that none
imports the scheduler), the ``run-now`` calls sent once their attempt is saved
(write-ahead), the ends a backend tells (:class:`EndedRuns`) and cancelling the runs.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Container, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from ...errors import counted
from ..backends.backends import (
    Backend,
    EndsNotified,
    SubmitRejected,
    SubmitRequest,
    Submitted,
)
from ..backends.errors import BackendUnavailable
from ..ledger.ledger import Attempt, Ledger, SliceRecord
from ..plan.options import LaunchOptions, backoff
from ..plan.states import RunState
from .events import EventKind
from .interrupts import Interrupts

_SUBMIT_RETRY_CAP = 60.0
_UNREACHABLE_RETRY = 2.0  # each unanswered call already took the client's whole budget


@dataclass
class Flight:
    """One attempt of one slice, from its ledger entry to the end of its run."""

    index: int
    attempt: int
    token: str
    run_id: str | None = None
    future: Future[Submitted] | None = None
    submit_errors: int = 0
    not_before: float = 0.0
    submitted: float = 0.0
    dispatched: bool = False


class Loop(Protocol):
    """A running scheduler's state and acts (see :class:`.scheduler.Scheduler`)."""

    ledger: Ledger
    options: LaunchOptions
    interrupts: Interrupts
    flights: dict[int, Flight]  # by slice index
    by_run: dict[str, Flight]  # the flights whose run id is known
    queue: deque[int]  # the slices to launch, in order
    final: int | None  # the final sync, launched last
    delayed: list[tuple[float, int]]  # retries, by when they are due
    failed_for_good: set[int]

    @property
    def backend(self) -> Backend: ...
    def launching(self) -> bool: ...
    def warn(self, message: str) -> None: ...
    def event(
        self, kind: EventKind, record: SliceRecord, attempt: Attempt, *, message: str = ""
    ) -> None: ...
    def close(self, flight: Flight, attempt: Attempt) -> None: ...
    def halt(self, reason: str) -> None: ...
    def forget_unsaved(self) -> list[int]: ...


class EndedRuns:
    """The ended runs not yet polled, told by a backend that tells ends
    (:class:`..backends.backends.EndsNotified`) from its own threads, each of which calls
    ``wake``; an id may arrive before the scheduler knows its run, and waits."""

    def __init__(self, backend: Backend, wake: Callable[[], None]) -> None:
        self.notified = isinstance(backend, EndsNotified)
        self._wake = wake
        self._ended: set[str] = set()
        self._pending: set[str] = set()  # ended, not yet taken to be polled
        self._lock = threading.Condition()
        if isinstance(backend, EndsNotified):
            backend.on_end(self._heard)

    def _heard(self, run_id: str) -> None:
        with self._lock:
            self._ended.add(run_id)
            self._pending.add(run_id)
            self._lock.notify_all()
        self._wake()

    def take(self, known: Container[str]) -> list[str]:
        """The ended runs among ``known`` not taken before; the others wait for a later
        call."""
        with self._lock:
            found = [run_id for run_id in self._pending if run_id in known]
            self._pending.difference_update(found)
        return found

    def wait_for(self, run_ids: Collection[str], timeout: float) -> bool:
        """Wait until every run of ``run_ids`` has ended, at most ``timeout`` seconds;
        whether they all did (``False`` at once if the backend does not tell ends)."""
        if not self.notified:
            return False
        with self._lock:
            return self._lock.wait_for(lambda: self._ended.issuperset(run_ids), timeout)


def dispatch(loop: Loop, pool: ThreadPoolExecutor) -> None:
    """Send every flight not sent yet whose time has come (its attempt is saved)."""
    now = time.monotonic()
    for flight in loop.flights.values():
        if flight.run_id is None and not flight.dispatched and flight.not_before <= now:
            record = loop.ledger.slices[flight.index]
            sent = record.last.submitted_at if record.last is not None else None
            request = SubmitRequest(flight.token, dict(record.parameters), record.label, sent)
            flight.future = pool.submit(loop.backend.submit, request)
            flight.future.add_done_callback(lambda _: loop.interrupts.wake.set())
            flight.dispatched = True
            flight.submitted = now


def harvest_submissions(loop: Loop) -> None:
    """Take the answers of the submissions that have one."""
    for flight in list(loop.flights.values()):
        future = flight.future
        if future is None or not future.done():
            continue
        flight.future = None
        flight.dispatched = False
        record = loop.ledger.slices[flight.index]
        attempt = record.attempt(flight.attempt)
        try:
            submitted = future.result()
        except SubmitRejected as exc:
            loop.close(flight, replace(attempt, state=RunState.REJECTED, error=str(exc)))
            if exc.fatal:
                loop.halt(f"the backend refused a submission: {exc}")
            continue
        except BackendUnavailable:  # not this slice's fault: the outage is reported
            delay = min(loop.options.retry_delay, _UNREACHABLE_RETRY)
            flight.not_before = time.monotonic() + delay
            continue
        except Exception as exc:  # unknown whether a run exists: same token again
            _submit_failed(loop, flight, attempt, exc)
            continue
        flight.run_id = submitted.run_id
        loop.by_run[submitted.run_id] = flight
        running = replace(
            attempt, state=RunState.RUNNING, run_id=submitted.run_id, url=submitted.url
        )
        loop.ledger.update(record.with_attempt(running))
        loop.event("submitted", record, running)


def _submit_failed(loop: Loop, flight: Flight, attempt: Attempt, exc: Exception) -> None:
    flight.submit_errors += 1
    message = f"could not submit {loop.ledger.slices[flight.index].label}: {exc}"
    if flight.submit_errors >= loop.options.submit_attempts:
        loop.halt(f"{message} (gave up after {counted(flight.submit_errors, 'try', 'tries')})")
        loop.flights.pop(flight.index)  # the attempt stays open in the ledger
        loop.failed_for_good.add(flight.index)
        loop.event("failed", loop.ledger.slices[flight.index], attempt, message=message)
        return
    delay = min(backoff(loop.options, flight.submit_errors), _SUBMIT_RETRY_CAP)
    flight.not_before = time.monotonic() + delay
    loop.warn(f"{message}; trying again in {delay:g} s")


def cancel_flights(
    backend: Backend, flights: Sequence[Flight], pool: ThreadPoolExecutor, wait: float
) -> dict[int, Exception | None]:
    """Cancel the runs of ``flights``, all within ``wait`` seconds (the run ids of the
    submissions under way awaited first; one that does not answer stays open in the
    ledger); per slice index whose run id is known, ``None`` if the backend accepted the
    cancellation, else the exception it raised."""
    deadline = time.monotonic() + wait
    for flight in flights:
        if flight.future is not None:
            try:
                flight.run_id = flight.future.result(timeout=_left(deadline)).run_id
            except Exception:
                continue
    cancels = {
        flight.index: pool.submit(backend.cancel, flight.run_id)
        for flight in flights
        if flight.run_id is not None
    }
    outcomes: dict[int, Exception | None] = {}
    for index, future in cancels.items():
        try:
            future.result(timeout=_left(deadline))
            outcomes[index] = None
        except Exception as exc:
            outcomes[index] = exc
    return outcomes


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def earliest_unsent(flights: Iterable[Flight], default: float) -> float:
    """The earliest ``not_before`` of the flights not yet sent (no run id, not dispatched),
    or ``default`` when it is earlier or there is none: when the loop must wake to send."""
    unsent = [f.not_before for f in flights if f.run_id is None and not f.dispatched]
    return min([default, *unsent])
