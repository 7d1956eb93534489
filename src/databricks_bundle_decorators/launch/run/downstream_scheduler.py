"""The scheduler of a ``--downstream`` backfill: a slice launches once what it reads is written.

Same contract as :class:`.scheduler.Scheduler` (slots, retries, polling, drain, cancel,
canary, the write-ahead ledger), with three rules on top:

- **ready set**: a slice is launched only after every slice it waits for
  (``SliceRecord.waits_for``) has succeeded, its checks included (a run whose checks
  fail is a failed run); among the ready slices, retries first, then the plan's order
  (the user's ``--order`` within each job, upstream jobs first);
- **blocking**: when a slice fails for good, every slice that waits for it, directly
  or through others, is blocked: never launched, counted and said once, with the
  slice that blocked it;
- **one token per job**: two jobs' slices may have the same key, so an attempt's
  idempotency token is derived from the slice's job as well.

Each request names its slice's job through :class:`..backends.job_router.JobRouter`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

from ..backends.backends import Backend
from ..backends.job_router import job_router
from ..ledger.ledger import Attempt, Ledger, attempt_token
from ..plan.pacing import SchedulerOptions
from .blocking import blocked_line, blocked_slices
from .events import Counts, LaunchEvent
from .flights import Flight
from .interrupts import Interrupts
from .scheduler import Scheduler


class DownstreamScheduler(Scheduler):
    """Drives a ``--downstream`` ledger to completion (see the module docstring)."""

    def __init__(
        self,
        backend: Backend,
        ledger: Ledger,
        options: SchedulerOptions,
        *,
        emit: Callable[[LaunchEvent], None] = lambda event: None,
        interrupts: Interrupts | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        router = job_router(backend, ledger)  # tells ends only if the backend does
        super().__init__(router, ledger, options, emit=emit, interrupts=interrupts, clock=clock)
        self._blocked: dict[int, int] = {}

    def counts(self) -> Counts:
        return replace(super().counts(), blocked=len(self._blocked))

    def is_ready(self, index: int) -> bool:
        """Whether every slice that slice ``index`` waits for has succeeded."""
        records = self.ledger.slices
        return all(records[w].state == "succeeded" for w in records[index].waits_for)

    def _launch_ready(self) -> None:
        self._block()
        records = self.ledger.slices
        queued = [i for i in self._queue if i not in self._blocked]
        held = [i for i in queued if not self.is_ready(i)]
        ready = sorted(set(queued) - set(held), key=lambda i: (not records[i].attempts, i))
        self._queue = deque(ready)
        super()._launch_ready()
        self._queue.extend(held)

    def _block(self) -> None:
        """Block the dependants of the slices failed for good (said once each)."""
        found = blocked_slices(self.ledger.slices, self._failed_for_good)
        for index, upstream in sorted(found.items()):
            if index not in self._blocked:
                self._blocked[index] = upstream
                self._warn(f"blocked: {blocked_line(self.ledger.slices, index, upstream)}")

    def _done(self) -> bool:
        self._block()
        self._queue = deque(i for i in self._queue if i not in self._blocked)
        if self._flights or self._delayed or any(self.is_ready(i) for i in self._queue):
            return super()._done()
        return True  # nothing runs and nothing can start: never wait for ever

    def _start_attempt(self, index: int) -> None:
        record = self.ledger.slices[index]
        number = (record.last.number + 1) if record.last else 1
        # A's and B's slices of key K must not share a token: the job is in its material.
        # The Jobs API says a run-now with a token already used returns that run, and not
        # whether the token's scope is one job or the workspace; the least convenient
        # reading (the workspace) is the one kept
        # (https://docs.databricks.com/api/workspace/jobs/runnow, idempotency_token).
        token = attempt_token(f"{self.ledger.id}\0{record.job or ''}", record.keys, number)
        attempt = Attempt(number, token, "submitting", submitted_at=time.time())
        self._budgets.attempt_started(index)
        self.ledger.update(record.with_attempt(attempt))
        self._flights[index] = Flight(index, number, token)
        self._unsaved.append(index)
