"""Sending attempts (``run-now`` on the scheduler's thread pool) and taking the answers.

Split from :mod:`.scheduler`, whose state they change, called from its loop: an attempt
is sent only once it is saved (write-ahead). A refused submission ends its attempt
(``rejected``; a fatal refusal halts the backfill); an unanswered one (the backend
unreachable) is sent again with its token without counting a try; any other error is
retried with backoff and the same token, ``submit_attempts`` tries in all.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ..backends.backends import SubmitRejected, SubmitRequest
from ..backends.errors import BackendUnavailable
from ..ledger.ledger import Attempt
from ..plan.pacing import backoff
from .flights import Flight
from .loop import Loop

_SUBMIT_RETRY_CAP = 60.0
_UNREACHABLE_RETRY = 2.0  # each unanswered call already took the client's whole budget


def dispatch(scheduler: Loop, pool: ThreadPoolExecutor) -> None:
    """Send every flight not sent yet whose time has come (its attempt is saved)."""
    now = time.monotonic()
    for flight in scheduler.flights.values():
        if flight.run_id is None and not flight.dispatched and flight.not_before <= now:
            record = scheduler.ledger.slices[flight.index]
            sent = record.last.submitted_at if record.last is not None else None
            request = SubmitRequest(flight.token, dict(record.parameters), record.label, sent)
            flight.future = pool.submit(scheduler.backend.submit, request)
            flight.future.add_done_callback(lambda _: scheduler.interrupts.wake.set())
            flight.dispatched = True
            flight.submitted = now


def harvest_submissions(scheduler: Loop) -> None:
    """Take the answers of the submissions that have one."""
    for flight in list(scheduler.flights.values()):
        future = flight.future
        if future is None or not future.done():
            continue
        flight.future = None
        flight.dispatched = False
        record = scheduler.ledger.slices[flight.index]
        attempt = record.attempt(flight.attempt)
        try:
            submitted = future.result()
        except SubmitRejected as exc:
            scheduler.close(flight, replace(attempt, state="rejected", error=str(exc)))
            if exc.fatal:
                scheduler.halt(f"the backend refused a submission: {exc}")
            continue
        except BackendUnavailable:  # not this slice's fault: the outage is reported
            delay = min(scheduler.options.retry_delay, _UNREACHABLE_RETRY)
            flight.not_before = time.monotonic() + delay
            continue
        except Exception as exc:  # unknown whether a run exists: same token again
            _submit_failed(scheduler, flight, attempt, exc)
            continue
        flight.run_id = submitted.run_id
        scheduler.by_run[submitted.run_id] = flight
        running = replace(attempt, state="running", run_id=submitted.run_id, url=submitted.url)
        scheduler.ledger.update(record.with_attempt(running))
        scheduler.event("submitted", record, running)


def _submit_failed(scheduler: Loop, flight: Flight, attempt: Attempt, exc: Exception) -> None:
    flight.submit_errors += 1
    message = f"could not submit {scheduler.ledger.slices[flight.index].label}: {exc}"
    if flight.submit_errors >= scheduler.options.submit_attempts:
        scheduler.halt(f"{message} (gave up after {flight.submit_errors} tries)")
        scheduler.flights.pop(flight.index)  # the attempt stays open in the ledger
        scheduler.failed_for_good.add(flight.index)
        scheduler.event("failed", scheduler.ledger.slices[flight.index], attempt, message=message)
        return
    delay = min(backoff(scheduler.options, flight.submit_errors), _SUBMIT_RETRY_CAP)
    flight.not_before = time.monotonic() + delay
    scheduler.warn(f"{message}; trying again in {delay:g} s")
