"""Cancelling a detached backfill that no controller is running.

With a controller active, ``dbxdec backfill cancel`` only records the request: the
controller reads it at its next tick and cancels the runs itself. With none (it was
cancelled by a person, or all of its retries failed), nobody would, so the command
does the controller's cancel itself, once:

1. every attempt still ``submitting`` (its ``run-now`` reply never recorded: lost in
   a dropped connection) is sent again with its own idempotency token, which answers
   the run the first request created ("If a run with the provided token already exists,
   the request does not create a new run but returns the ID of the existing run",
   databricks-sdk-py ``JobsAPI.run_now``), or starts it, to be cancelled at once;
2. every run in flight is cancelled (``runs/cancel``, asynchronous: "it may still be
   running when this request completes", ``JobsAPI.cancel_run``), and the command
   waits, boundedly, until the workspace reports each one ended;
3. the attempts are recorded ``cancelled`` and the ledger ``interrupted`` in one journal
   segment, fenced like a controller's (a controller that started meanwhile and wrote
   first wins, and cancels the runs itself), so ``--resume`` gives those keys a new
   attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ...errors import counted
from ..backends.backends import SubmitRequest
from ..backends.databricks_backend import DatabricksBackend
from ..backends.errors import SubmitRejected
from ..ledger.journal import JournalLost, open_journal
from ..ledger.ledger import Attempt, Ledger
from ..plan.states import BackfillState, RunState
from ..status.journal_status import JournalPlace

CANCEL_WAIT = 120.0
"""Seconds to wait for the cancelled runs to be reported ended."""


@dataclass(frozen=True, slots=True)
class CancelReport:
    """What the cancel did: runs cancelled, and lines to show."""

    cancelled: tuple[str, ...]
    lines: tuple[str, ...]


def cancel_without_controller(
    place: JournalPlace,
    *,
    by: str,
    poll_interval: float = 1.0,
    wait: float = CANCEL_WAIT,
    sleep: Callable[[float], None] = time.sleep,
) -> CancelReport:
    """Cancel the runs in flight of ``place``'s backfill and record it in its journal.

    Raises:
        WorkspaceRejected, WorkspaceUnreachable: the workspace refused or did not answer.
    """
    ledger = open_journal(place.client, place.job_id, place.backfill_id, writer=f"steer:{by}")
    backend = DatabricksBackend(place.client, place.job_id)
    lines: list[str] = []
    cancelled: list[str] = []
    try:
        for record in list(ledger.slices):
            attempt = record.last
            if attempt is None or not attempt.is_open:
                continue
            run_id = attempt.run_id or _learn_run_id(backend, ledger, record.index, attempt)
            if run_id is not None:
                backend.cancel(run_id)
                cancelled.append(run_id)
            ended = replace(
                attempt,
                run_id=run_id,
                state=RunState.CANCELLED,
                ended_at=time.time(),
                error=f"cancelled by {by} (dbxdec backfill cancel)",
            )
            ledger.update(record.with_attempt(ended))
        lines += _wait_ended(backend, cancelled, poll_interval, wait, sleep)
    finally:
        backend.close()
    ledger.set_state(BackfillState.INTERRUPTED)
    try:
        ledger.save()
    except JournalLost as lost:  # a controller took the backfill meanwhile: it cancels
        lines.append(f"{lost.render()}; the controller that wrote it cancels the runs itself")
    finally:
        ledger.close()
    lines.insert(0, f"Cancelled {counted(len(cancelled), 'run')} in flight.")
    return CancelReport(tuple(cancelled), tuple(lines))


def _learn_run_id(
    backend: DatabricksBackend, ledger: Ledger, index: int, attempt: Attempt
) -> str | None:
    """The run of a ``submitting`` attempt, found by sending its token again (``None``:
    the workspace refused it, so no run exists)."""
    record = ledger.slices[index]
    request = SubmitRequest(
        attempt.token, record.parameters, record.label, first_sent=attempt.submitted_at
    )
    try:
        return backend.submit(request).run_id
    except SubmitRejected:
        return None


def _wait_ended(
    backend: DatabricksBackend,
    run_ids: list[str],
    poll_interval: float,
    wait: float,
    sleep: Callable[[float], None],
) -> list[str]:
    """Wait until the workspace reports every run of ``run_ids`` ended; a line for
    those still going after ``wait`` seconds."""
    left = set(run_ids)
    deadline = time.monotonic() + wait
    while left:
        left -= set(backend.poll(sorted(left)))
        if not left or time.monotonic() >= deadline:
            break
        sleep(poll_interval)
    if not left:
        return []
    return [f"Still ending after {wait:.0f} s (cancel sent): runs {', '.join(sorted(left))}"]
