"""When a failed slice is retried: ``--retries N`` and ``--retry-for DURATION`` (within which a
retry must *start*, back-off included); budgets count per session, a refused submission is
never retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ...errors import UsageError
from ..plan.options import LaunchOptions, backoff


@dataclass(frozen=True, slots=True)
class RetryBudget:
    """A slice's retries after the first attempt and the seconds within which one may start."""

    retries: int = 0
    retry_for: float | None = None


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Whether to retry a failed slice after ``delay`` seconds, and else which budget is
    ``spent`` (``""`` when no retry was asked for).
    """

    retry: bool
    delay: float
    spent: str = ""


def decide(budget: RetryBudget, *, failures: int, elapsed: float, delay: float) -> RetryDecision:
    """Retry after the ``failures``-th failed attempt, ``elapsed`` seconds after the first
    submission, with a back-off of ``delay`` seconds?

    >>> decide(RetryBudget(3, 600.0), failures=2, elapsed=300.0, delay=20.0).retry
    True
    >>> decide(RetryBudget(3, 600.0), failures=4, elapsed=300.0, delay=80.0).spent
    'retries spent: 3 of 3'
    >>> decide(RetryBudget(3, 600.0), failures=2, elapsed=590.0, delay=20.0).spent
    'retry time spent: 9m50s of 10m (the retry after a 20s back-off would start past it)'
    """
    if failures > budget.retries:
        spent = f"retries spent: {budget.retries} of {budget.retries}" if budget.retries else ""
        return RetryDecision(False, delay, spent)
    limit = budget.retry_for
    if limit is not None and elapsed + delay >= limit:
        spent = f"retry time spent: {format_duration(elapsed)} of {format_duration(limit)}"
        if elapsed < limit:
            spent += f" (the retry after a {format_duration(delay)} back-off would start past it)"
        return RetryDecision(False, delay, spent)
    return RetryDecision(True, delay)


def check_retry_budgets(retries: int, retry_for: float | None) -> None:
    """Refuse ``--retry-for`` without retries to bound.

    Raises:
        UsageError: ``retry_for`` is set and ``retries`` is 0.
    """
    if retry_for is not None and retries == 0:
        raise UsageError(
            f"--retry-for {format_duration(retry_for)} bounds the time of --retries: add "
            "--retries N (the most retries per key within that time)"
        )


def format_duration(seconds: float) -> str:
    """``seconds`` as hours, minutes and seconds, as ``--retry-for`` takes them.

    >>> format_duration(600), format_duration(5430), format_duration(0.25)
    ('10m', '1h30m30s', '0.25s')
    """
    if seconds < 1:
        return f"{seconds:.3g}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s"]
    return "".join(parts) if secs else "".join(parts[:2])


class RetryBudgets:
    """The budgets of every slice in one launcher session (``clock``: monotonic seconds)."""

    def __init__(self, options: LaunchOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = RetryBudget(options.retries, options.retry_for)
        self.options = options
        self.clock = clock
        self._first_started: dict[int, float] = {}
        self._failures: dict[int, int] = {}

    def attempt_started(self, index: int) -> None:
        """Slice ``index`` has a new attempt; its first one starts the time budget."""
        self._first_started.setdefault(index, self.clock())

    def after_failure(self, index: int) -> RetryDecision:
        """Count a failed attempt of slice ``index`` and decide on a retry."""
        failures = self._failures.get(index, 0) + 1
        self._failures[index] = failures
        now = self.clock()
        elapsed = now - self._first_started.setdefault(index, now)
        delay = backoff(self.options, failures)
        return decide(self.budget, failures=failures, elapsed=elapsed, delay=delay)
