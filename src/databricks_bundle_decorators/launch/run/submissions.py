"""The scheduler's ``run-now`` calls, sent on its thread pool once their attempt is saved
(write-ahead), and their answers: a refusal ends the attempt (a fatal one halts), an
unreachable backend is asked again uncounted, another error retried with backoff."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ..backends.backends import SubmitRejected, SubmitRequest
from ..backends.errors import BackendUnavailable
from ..ledger.ledger import Attempt
from ..plan.options import backoff
from ..plan.states import RunState
from .flights import Flight
from .loop import Loop

_SUBMIT_RETRY_CAP = 60.0
_UNREACHABLE_RETRY = 2.0  # each unanswered call already took the client's whole budget


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
        loop.halt(f"{message} (gave up after {flight.submit_errors} tries)")
        loop.flights.pop(flight.index)  # the attempt stays open in the ledger
        loop.failed_for_good.add(flight.index)
        loop.event("failed", loop.ledger.slices[flight.index], attempt, message=message)
        return
    delay = min(backoff(loop.options, flight.submit_errors), _SUBMIT_RETRY_CAP)
    flight.not_before = time.monotonic() + delay
    loop.warn(f"{message}; trying again in {delay:g} s")
