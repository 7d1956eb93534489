"""Events and the end-of-backfill summary, built from the ledger's records."""

from __future__ import annotations

import time

from ...errors import counted
from ..ledger.ledger import Attempt, Ledger, SliceRecord, rerun_command, resume_command
from .blocking import blocked_line, is_downstream, ledger_blocked
from .events import Counts, EventKind, FailedSlice, LaunchEvent, LaunchSummary


def attempt_event(
    kind: EventKind, counts: Counts, record: SliceRecord, attempt: Attempt, *, message: str = ""
) -> LaunchEvent:
    """The event of ``attempt`` of ``record`` (``message`` defaults to its error and
    the retry budget it spent)."""
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
        message=message or _error(attempt),
    )


def _error(attempt: Attempt) -> str:
    """The checks that failed the attempt (a run's error says only which task failed),
    its error, then which retry budget it spent (``"retries spent: 3 of 3"``)."""
    checks = [
        f"check {c.get('check')} failed: {c.get('detail') or 'no detail'}"
        for c in attempt.checks
        if not c.get("passed") and c.get("severity") != "warn"
    ]
    return "; ".join(part for part in (*checks, attempt.error, attempt.gave_up) if part)


_GAVE_UP = (
    "the submission was given up without an answer (--resume asks for the run by its "
    "idempotency token, never launching a second one)"
)


def _failure(record: SliceRecord) -> FailedSlice | None:
    """``record`` as a failure of the session that has just ended: its latest attempt
    failed, or its submission was given up (it has no run)."""
    last = record.last
    if last is None:
        return None
    if record.state == "failed":
        return FailedSlice(record.label, record.keys, _error(last), last.run_id, last.url)
    if last.is_open and last.run_id is None:
        return FailedSlice(record.label, record.keys, last.error or _GAVE_UP)
    return None


def ledger_counts(ledger: Ledger) -> Counts:
    """Slices of ``ledger`` after a session: succeeded, failed (as :func:`summarize`
    lists them), running (a run whose cancellation failed) and the rest."""
    done = failed = running = 0
    for record in ledger.slices:
        if record.state == "succeeded":
            done += 1
        elif _failure(record) is not None:
            failed += 1
        elif record.state in ("submitting", "running"):
            running += 1
    blocked = len(ledger_blocked(ledger))
    return Counts(len(ledger.slices), done, failed, running, blocked)


def summarize(ledger: Ledger, seconds: float, context_args: tuple[str, ...] = ()) -> LaunchSummary:
    """The summary of a ledger after a session of ``seconds`` (its counts are
    :func:`ledger_counts`); ``context_args`` (``--project``...) go in the commands."""
    counts = ledger_counts(ledger)
    failed: list[FailedSlice] = []
    durations: dict[str, float] = {}
    for record in ledger.slices:
        last = record.last
        if record.state == "succeeded" and last is not None and last.seconds is not None:
            durations[record.label] = last.seconds
        elif (failure := _failure(record)) is not None:
            failed.append(failure)
    # a full refresh's failed keys are rerun into its staging tables, by --resume only
    # --downstream: keys of several jobs; --resume runs the failed and blocked slices
    whole = ledger.options.full_refresh or is_downstream(ledger)
    failed_keys = [] if whole else [key for f in failed for key in f.keys]
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
        checks=checks_line(ledger),
        blocked=tuple(
            blocked_line(ledger.slices, i, up) for i, up in sorted(ledger_blocked(ledger).items())
        ),
    )


def checks_line(ledger: Ledger) -> str:
    """What the summary says of the runs' checks (see :attr:`LaunchSummary.checks`)."""
    if not ledger.options.checks:
        return "Checks: off (--no-checks): no run judged its checks, no results were recorded"
    results = [r for record in ledger.slices if record.last for r in record.last.checks]
    if not results:
        return ""
    failed = sum(not r.get("passed") and r.get("severity") != "warn" for r in results)
    warned = sum(not r.get("passed") and r.get("severity") == "warn" for r in results)
    passed = len(results) - failed - warned
    warnings = f", {warned} warned" if warned else ""
    return f"Checks: {counted(len(results), 'result')} ({passed} passed, {failed} failed{warnings})"
