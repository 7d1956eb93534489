"""When to poll the status of the runs in flight next: adaptive polling.

The launcher learns how long runs take as they finish and polls when runs are
expected to end, so that a slot is refilled within a small fraction of a run's
length, whatever that length is, at a bounded request rate:

- nothing learnt yet (no run has ended): polls come every
  :attr:`PollBounds.first_fraction` of the oldest run's age, so the first end is seen
  within that fraction of the run's length and a long first wave costs a number of polls
  that grows only with the logarithm of its length;
- a run not yet due (submitted less than the learnt run length ago): the next poll is
  at its expected end;
- runs due (past their expected end, not seen ended): polls every ``fraction`` of the
  youngest due run's age -- a run of that age that ends now is seen within that
  fraction of its length -- but no more than ``poll_interval`` apart (plus a tenth of
  how long the earliest is overdue, so long, uneven runs are polled gently);
- always: polls start at least :attr:`PollBounds.min_gap` apart (the request-rate
  bound) and at most :attr:`PollBounds.max_gap` apart.

A poll is one batched request (``runs/list``; see :mod:`..backends.databricks_backend`) whatever
the number of runs in flight. The learnt run length is a low quantile of recent
durations from submission until the launcher saw the end (so it includes the
launcher's own delays): a poll that comes early costs a request, one that comes late
costs a slot's time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..plan.options import LaunchOptions

__all__ = ["MIN_POLL_GAP", "PollBounds", "PollPacer", "learnt_run_length", "next_poll_time"]

MIN_POLL_GAP = 0.025
"""Seconds between the starts of two polls at least: 40 polls a second at most (a
smaller ``--poll-interval`` lowers it). Polls come that often only while runs end that
often, when submissions are as many."""
_FRACTION = 0.02
_FIRST_FRACTION = 0.05
_OVERDUE_SLOWDOWN = 0.1
_QUANTILE = 0.1
_MARGIN = 0.8
_MEMORY = 64


@dataclass(frozen=True, slots=True)
class PollBounds:
    """The limits of the polling policy, in seconds.

    Attributes:
        min_gap: Polls start at least this far apart (the request-rate bound).
        max_gap: Polls start at most this far apart while runs are in flight.
        due_gap: The longest gap while runs are due to end (``--poll-interval``).
        fraction: A due run is seen ended within this fraction of its age (until the
            gaps reach their bounds).
        first_fraction: The same before any run has ended.
    """

    min_gap: float = MIN_POLL_GAP
    max_gap: float = 15.0
    due_gap: float = 1.0
    fraction: float = _FRACTION
    first_fraction: float = _FIRST_FRACTION

    @classmethod
    def of(cls, options: LaunchOptions) -> PollBounds:
        """The bounds for a scheduler's options."""
        min_gap = min(options.poll_interval, MIN_POLL_GAP)
        max_gap = max(options.max_poll_interval, options.poll_interval)
        return cls(min_gap, max_gap, options.poll_interval)


def learnt_run_length(durations: Sequence[float]) -> float | None:
    """The length before which few runs end: 80% of the 10th percentile of
    ``durations`` (``None`` when there are none yet)."""
    if not durations:
        return None
    ordered = sorted(durations)
    return _MARGIN * ordered[int(len(ordered) * _QUANTILE)]


def next_poll_time(
    now: float, starts: Iterable[float], run_length: float | None, bounds: PollBounds
) -> float:
    """The time of the next poll, given when the runs in flight were submitted.

    Args:
        now: The current time (the last poll started no later than this).
        starts: The submission times of the runs in flight (same clock as ``now``).
        run_length: The learnt run length (:func:`learnt_run_length`), ``None`` before
            any run has ended.
        bounds: The limits of the policy.

    Returns:
        A time in ``[now + min_gap, now + max(min_gap, max_gap)]``; no later than
        ``min_gap`` after the earliest expected end still to come; ``now + min_gap``
        when no run is in flight (the next one submitted is polled soon).

    Example: runs of about 10 s submitted at 0 and 4, now 9: the next poll is at 10 (the
    first run's expected end); at 11 (the first is due, 11 s old), it is at 11.22.
    """
    ages = sorted((now - start for start in starts), reverse=True)
    if not ages:  # the next run submitted is polled as soon as the bound allows
        return now + bounds.min_gap
    candidates = [now + bounds.max_gap]
    if run_length is None:
        candidates.append(now + bounds.first_fraction * ages[0])
    else:
        due = [age for age in ages if age >= run_length]
        if len(due) < len(ages):  # the oldest run not yet due ends first
            candidates.append(now + run_length - ages[len(due)])
        if due:
            overdue = due[0] - run_length
            gentle = bounds.due_gap + _OVERDUE_SLOWDOWN * overdue
            candidates.append(now + min(bounds.fraction * due[-1], gentle))
    return max(now + bounds.min_gap, min(candidates))


class PollPacer:
    """Learns run lengths as runs end and says when to poll next (see the module)."""

    def __init__(self, options: LaunchOptions) -> None:
        self.bounds = PollBounds.of(options)
        self._durations: deque[float] = deque(maxlen=_MEMORY)

    def record(self, seconds: float) -> None:
        """A run took ``seconds`` from submission until the launcher saw it end."""
        self._durations.append(seconds)

    @property
    def run_length(self) -> float | None:
        return learnt_run_length(self._durations)

    def next_poll(self, now: float, *, starts: Iterable[float]) -> float:
        """The monotonic time of the next poll, given the submission times in flight."""
        return next_poll_time(now, starts, self.run_length, self.bounds)
