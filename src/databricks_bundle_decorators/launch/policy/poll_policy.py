"""When to poll the runs in flight next (at their expected ends, a low quantile of recent
submission-to-seen-end durations; :func:`next_poll_time`), and the poller that starts
the polls (:class:`StatusPoller`).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..backends.backends import RunStatus
from ..plan.options import LaunchOptions

MIN_POLL_GAP = 0.015
"""Seconds between poll starts at least (a smaller ``--poll-interval`` lowers it)."""
_FRACTION = 0.01
_FIRST_FRACTION = 0.03
_OVERDUE_SLOWDOWN = 0.1
_QUANTILE = 0.1
_MARGIN = 0.8
_MEMORY = 64


@dataclass(frozen=True, slots=True)
class PollBounds:
    """The policy's limits in seconds: ``min_gap``/``max_gap`` between poll starts, ``due_gap``
    while runs are due (``--poll-interval``), and the ``fraction`` of a due run's age (of
    the oldest's before any run ended: ``first_fraction``) within which its end is seen.
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
    """80% of the 10th percentile of ``durations`` (``None`` when there are none yet)."""
    if not durations:
        return None
    ordered = sorted(durations)
    return _MARGIN * ordered[int(len(ordered) * _QUANTILE)]


def next_poll_time(
    now: float, starts: Iterable[float], run_length: float | None, bounds: PollBounds
) -> float:
    """The time of the next poll, given the submission times of the runs in flight
    (``run_length``: ``None`` before any run ended): within ``[now + min_gap, now +
    max_gap]``, no later than ``min_gap`` after the earliest expected end to come.

    Example: runs of about 10 s submitted at 0 and 4, now 9: the next poll is at 10 (the
    first run's expected end); at 11 (the first is due, 11 s old), it is at 11.11.
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


_IN_FLIGHT = 4
_SLOW = 3.0  # a poll is overtaken after this many times the usual poll's latency
_LATENCIES = 16

Poll = Callable[[list[str]], dict[str, RunStatus]]


class StatusPoller:
    """Starts polls when they are due and hands their answers back (``wake``: called from the
    poll's thread on an answer; ``notified``: the backend tells when runs end).

    A poll much slower than usual (a 429/503 waited out) is overtaken by one more, poll
    starts staying ``min_gap`` apart; the threshold is ``resend_after``: adaptive, fixed, or
    never. With ``notified`` the ended runs are polled at once and planned polls are a
    safety net, ``max_gap`` apart.
    """

    def __init__(
        self,
        poll: Poll,
        options: LaunchOptions,
        wake: Callable[[], None],
        *,
        notified: bool = False,
    ) -> None:
        self.pacer = PollPacer(options)
        self._notified = notified
        self._poll = poll
        self._wake = wake
        self._pool = ThreadPoolExecutor(_IN_FLIGHT, thread_name_prefix="dbxdec-poll")
        self._in_flight: list[tuple[float, Future[dict[str, RunStatus]]]] = []
        self._latencies: deque[float] = deque(maxlen=_LATENCIES)
        self._next = 0.0
        self._resend_after = options.resend_after

    @property
    def in_flight(self) -> int:
        """Polls started and not yet harvested."""
        return len(self._in_flight)

    def due_at(self) -> float:
        """When the next poll may start (``inf``: not before one in flight answers)."""
        if not self._in_flight:
            return self._next
        if len(self._in_flight) >= _IN_FLIGHT:
            return math.inf
        return max(self._next, self._in_flight[-1][0] + self._overtake_after())

    def start(self, run_ids: Collection[str], now: float, *, at_once: bool = False) -> None:
        """Poll ``run_ids`` if a poll is due at ``now`` (``at_once``: whether due or not,
        for runs the backend said have ended)."""
        if not run_ids or (now < self.due_at() and not at_once):
            return
        future = self._pool.submit(self._poll, list(run_ids))
        future.add_done_callback(lambda _: self._wake())
        self._in_flight.append((now, future))
        self._next = now + self.pacer.bounds.min_gap

    def harvest(self, now: float) -> list[Future[dict[str, RunStatus]]]:
        """The polls that have answered since the last call, oldest first."""
        answered = [(s, f) for s, f in self._in_flight if f.done()]
        self._in_flight = [(s, f) for s, f in self._in_flight if not f.done()]
        self._latencies.extend(now - started for started, _ in answered)
        return [future for _, future in answered]

    def plan(self, now: float, starts: Iterable[float]) -> None:
        """Plan the next poll after an answer, given the submission times in flight."""
        if self._notified:  # ends come as events; this poll only catches a lost one
            self._next = now + self.pacer.bounds.max_gap
            return
        self._next = self.pacer.next_poll(now, starts=starts)  # >= now + the floor

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _overtake_after(self) -> float:
        fixed = self._resend_after
        if fixed is not None:
            return fixed or math.inf  # 0: a poll is never overtaken
        floor = 2 * self.pacer.bounds.min_gap
        if not self._latencies:
            return floor
        return max(floor, _SLOW * statistics.median(self._latencies))
