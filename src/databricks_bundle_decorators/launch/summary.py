"""Events and the end-of-backfill summary, built from the ledger's records."""

from __future__ import annotations

import time

from .commands import rerun_command, resume_command
from .events import Counts, EventKind, FailedSlice, LaunchEvent, LaunchSummary
from .ledger import Attempt, Ledger, SliceRecord


def attempt_event(
    kind: EventKind, counts: Counts, record: SliceRecord, attempt: Attempt, *, message: str = ""
) -> LaunchEvent:
    """The event of ``attempt`` of ``record`` (``message`` defaults to its error)."""
    return LaunchEvent(
        kind,
        time.time(),
        counts,
        label=record.label,
        keys=record.keys,
        attempt=attempt.number,
        run_id=attempt.run_id,
        url=attempt.url,
        seconds=attempt.seconds,
        message=message or attempt.error,
    )


def summarize(
    ledger: Ledger, counts: Counts, seconds: float, context_args: tuple[str, ...] = ()
) -> LaunchSummary:
    """The summary of a ledger after a session."""
    failed: list[FailedSlice] = []
    durations: dict[str, float] = {}
    for record in ledger.slices:
        last = record.last
        if record.state == "succeeded" and last is not None and last.seconds is not None:
            durations[record.label] = last.seconds
        elif record.state == "failed" and last is not None:
            failed.append(FailedSlice(record.label, record.keys, last.error, last.run_id, last.url))
    failed_keys = [key for f in failed for key in f.keys]
    return LaunchSummary(
        backfill_id=ledger.id,
        job=ledger.job,
        state=ledger.state,
        counts=counts,
        seconds=seconds,
        durations=durations,
        failed=tuple(failed),
        rerun_command=rerun_command(ledger, failed_keys, context_args) if failed_keys else None,
        resume_command=resume_command(ledger, context_args),
        unsaved=ledger.save_failure,
    )
