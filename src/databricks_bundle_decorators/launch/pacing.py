"""Pacing of a backfill: its options, retry backoff and when to poll next."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    """How the scheduler paces a backfill.

    Attributes:
        max_concurrent: Runs in flight at most.
        retries: Extra attempts per slice after a failed run.
        retry_for: Seconds from a slice's first attempt within which a retry may
            start, back-off included (``None``: no limit); see :mod:`.retry_budget`.
        retry_delay: Seconds before the first retry; doubles per retry.
        max_retry_delay: Upper bound of the retry delay.
        halt_on_error: Stop launching once a slice has failed for good.
        poll_interval: Seconds between status polls while runs end often.
        max_poll_interval: Polls slow down to this while nothing changes.
        submit_attempts: Tries to reach the backend for one submission before the
            backfill stops launching (the attempt stays open for ``--resume``).
        canary: The first this many slices run alone; the rest launch only once they
            have all succeeded (``0``: off). See :mod:`.canary`.
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


def backoff(options: SchedulerOptions, failures: int) -> float:
    """Seconds before retry number ``failures`` (1-based): doubling, capped."""
    return float(min(options.retry_delay * 2 ** (failures - 1), options.max_retry_delay))


class PollPacer:
    """When to poll next, learnt from how long runs take.

    Runs are expected to last at least 80% of the 10th percentile of recent durations
    (which include the launcher's own delays): no poll happens while no run can have
    ended yet; then polls come every ``poll_interval`` plus a tenth of how long the
    earliest run is overdue, so long, uneven runs are polled gently. Before any run has
    ended, the interval grows by half after each poll that saw nothing end.
    """

    def __init__(self, options: SchedulerOptions) -> None:
        self.base = options.poll_interval
        self.ceiling = max(options.max_poll_interval, options.poll_interval)
        self._interval = self.base
        self._durations: deque[float] = deque(maxlen=64)

    def record(self, seconds: float) -> None:
        """A run took ``seconds`` from submission until the launcher saw it end."""
        self._durations.append(seconds)

    def next_poll(self, now: float, *, ended: bool, starts: Iterable[float]) -> float:
        """The monotonic time of the next poll, given the submission times in flight."""
        if ended:
            self._interval = self.base
        else:
            self._interval = min(self._interval * 1.5, self.ceiling)
        if not self._durations:
            return now + self._interval
        shortest = 0.8 * sorted(self._durations)[len(self._durations) // 10]
        expected = min((start + shortest for start in starts), default=now)
        if expected > now:
            return min(expected, now + self.ceiling)
        return now + min(self.base + 0.1 * (now - expected), self.ceiling)
