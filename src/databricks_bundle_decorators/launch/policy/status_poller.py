"""Status polls of the runs in flight: batched, paced by :mod:`.poll_policy`, off the
scheduler's loop thread.

A poll that takes much longer than polls usually take -- the client waiting out a 429
or 503 before it tries again -- is overtaken by one more poll (two in flight at most),
so one throttled request does not hold up the refill of every slot. Poll starts stay at
least the policy's floor apart (:attr:`.poll_policy.PollBounds.min_gap`), overtaking
ones included. The threshold is the caller's choice
(:attr:`..plan.options.LaunchOptions.resend_after`): adaptive, fixed, or never.

For a backend that tells when a run ends (:class:`..backends.backends.EndsNotified`) the ended
runs are polled at once and the planned polls are only a safety net, ``max_gap`` apart.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from ..backends.backends import RunStatus
from ..plan.options import LaunchOptions
from .poll_policy import PollPacer

__all__ = ["StatusPoller"]

_IN_FLIGHT = 4
_SLOW = 3.0  # a poll is overtaken after this many times the usual poll's latency
_LATENCIES = 16

Poll = Callable[[list[str]], dict[str, RunStatus]]


class StatusPoller:
    """Starts polls when they are due and hands their answers back.

    Args:
        poll: The backend's batched status call.
        options: The scheduler's pacing (see :class:`.poll_policy.PollBounds`).
        wake: Called (from the poll's thread) when a poll has answered.
        notified: The backend tells when runs end (planned polls are a safety net).
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
