"""Pacing of a backfill: its options and retry backoff (polls: :mod:`..policy.poll_policy`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    """How the scheduler paces a backfill.

    Attributes:
        max_concurrent: Runs in flight at most.
        retries: Extra attempts per slice after a failed run.
        retry_for: Seconds from a slice's first attempt within which a retry may
            start, back-off included (``None``: no limit); see :mod:`..policy.retry_budget`.
        retry_delay: Seconds before the first retry; doubles per retry.
        max_retry_delay: Upper bound of the retry delay.
        halt_on_error: Stop launching once a slice has failed for good.
        poll_interval: The longest gap between status polls while runs are due to
            end; shorter runs are polled sooner (see :mod:`..policy.poll_policy`).
        max_poll_interval: The longest gap between status polls.
        submit_attempts: Tries to reach the backend for one submission before the
            backfill stops launching (the attempt stays open for ``--resume``).
        canary: The first this many slices run alone; the rest launch only once they
            have all succeeded (``0``: off). See :mod:`..policy.canary`.
        resend_after: A status poll not answered within this many seconds is
            overtaken by one more (``0``: never; ``None``: a few times the usual
            poll's latency). See :mod:`..policy.status_poller`.
        diff_gate: With canaries, the most a canary key's row count may move (percent)
            before the backfill stops (``None``: off). See :mod:`.diff_gate`.
    """

    max_concurrent: int = 4
    retries: int = 0
    retry_for: float | None = None
    retry_delay: float = 10.0
    max_retry_delay: float = 600.0
    halt_on_error: bool = False
    poll_interval: float = 1.0
    max_poll_interval: float = 15.0
    submit_attempts: int = 4
    canary: int = 0
    resend_after: float | None = None
    diff_gate: float | None = None


def backoff(options: SchedulerOptions, failures: int) -> float:
    """Seconds before retry number ``failures`` (1-based): doubling, capped."""
    return float(min(options.retry_delay * 2 ** (failures - 1), options.max_retry_delay))
