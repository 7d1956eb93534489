"""The end-of-backfill summary built from the ledger."""

from __future__ import annotations

from .commands import rerun_command, resume_command
from .events import Counts, FailedSlice, LaunchSummary
from .ledger import Ledger


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
    )
