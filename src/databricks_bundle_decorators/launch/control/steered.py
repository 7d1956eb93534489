"""The scheduler as a controller run drives it: steered, handing over, fenced.

:class:`SteeredScheduler` is the launcher's :class:`~..run.scheduler.Scheduler` with
what a run in the workspace adds, checked once per loop turn (:meth:`_announce_interrupt`
is the loop's per-turn hook):

- **steering**: the backfill's control ops (``pause``/``unpause``/``cancel``, read at
  most every ``control_every`` seconds): paused launches nothing new and keeps polling;
  cancelled first re-sends the token of every attempt whose run id is unknown (a
  ``run-now`` whose reply was lost: the Jobs API answers a token it has seen with the
  run it started), then cancels every run in flight and ends ``interrupted``;
- **handover**: past ``handover_at`` (monotonic) it launches nothing new and stops once
  no submission is under way, leaving the runs in flight to the next generation (the
  journal has their run ids and tokens) and the backfill ``running``;
- **fencing**: a save that finds the next journal segment written by another controller
  (:class:`~..ledger.journal.JournalLost`) stops it at once: nothing more is launched
  (no ``run-now`` is sent, not even for an attempt the lost save would have recorded),
  watched or saved. A save that failed otherwise (the workspace unreachable) forgets
  the attempts it would have recorded -- never sent -- and queues their slices again:
  an outage fails nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Literal

from ...errors import LocalStateProblem, WorkspaceUnreachable
from ..backends.backends import SubmitRequest
from ..ledger.journal import JournalLost
from ..ledger.ledger import LedgerState
from ..run.downstream_scheduler import DownstreamScheduler
from ..run.interrupts import CANCEL
from ..run.scheduler import Scheduler

ControlState = Literal["running", "paused", "cancelled"]


class SteeredScheduler(Scheduler):
    """A :class:`Scheduler` steered by control ops, handing over, fenced by the journal.

    Args (besides the scheduler's):
        control: Reads the backfill's control state (``running``/``paused``/``cancelled``);
            an exception (the workspace unreachable) leaves the last state as it was.
        control_every: Seconds between two reads of the control state.
        handover_at: ``time.monotonic()`` after which this run hands over.
    """

    def __init__(
        self,
        *args: object,
        control: Callable[[], ControlState],
        control_every: float,
        handover_at: float,
        **kwargs: object,
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._control = control
        self._control_every = control_every
        self._control_read_at = -float("inf")
        self.handover_at = handover_at
        self.control_state: ControlState = "running"
        self.handing_over = False
        self.journal_lost: JournalLost | None = None
        self._idle_said = False

    # -- the per-turn hook -------------------------------------------------------------

    def _announce_interrupt(self) -> None:
        now = time.monotonic()
        if now - self._control_read_at >= self._control_every and not self.journal_lost:
            self._control_read_at = now
            try:
                state = self._control()
            except Exception as exc:  # unreachable: keep the last state, report it
                self._warn(f"could not read the backfill's control ops, will retry: {exc}")
                state = self.control_state
            if state != self.control_state:
                self._event_plain("warning", f"backfill {self.ledger.id} is now {state}")
                self.control_state = state
            if state == "cancelled" and self.interrupts.level < CANCEL:
                self._learn_lost_run_ids()
                self.interrupts.escalate(CANCEL)
        if now >= self.handover_at and not self.handing_over:
            self.handing_over = True
            self._event_plain("warning", "handing over to the next controller run")
        super()._announce_interrupt()

    def _learn_lost_run_ids(self) -> None:
        """Re-send the token of every flight whose run id is unknown and not being asked."""
        for flight in self._flights.values():
            if flight.run_id is not None or flight.future is not None:
                continue
            record = self.ledger.slices[flight.index]
            request = SubmitRequest(flight.token, dict(record.parameters), record.label, None)
            try:
                flight.run_id = self.backend.submit(request).run_id
            except Exception as exc:  # left open in the journal: the next run asks again
                self._warn(f"could not learn the run of {record.label}: {exc}")
                continue
            self._by_run[flight.run_id] = flight
            attempt = record.attempt(flight.attempt)
            running = replace(attempt, state="running", run_id=flight.run_id)
            self.ledger.update(record.with_attempt(running))

    # -- what the controller changes -----------------------------------------------------

    def _launching(self) -> bool:
        steered = self.control_state == "running" and not self.handing_over
        return steered and not self.journal_lost and super()._launching()

    def _dispatch(self, pool: ThreadPoolExecutor) -> None:
        if self.journal_lost is None:  # fenced: not one more run-now, even of a known token
            super()._dispatch(pool)

    def _done(self) -> bool:
        if self.journal_lost is not None or self.interrupts.stopped:
            return True  # the runs in flight are the next controller's
        if self.handing_over:
            return not any(f.future is not None for f in self._flights.values())
        if self.control_state == "paused" and self.interrupts.level < CANCEL:
            if not self._flights and not self._idle_said:  # once per pause, for the log
                self._idle_said = True
                self._event_plain(
                    "warning",
                    f"backfill {self.ledger.id} paused with no run in flight; "
                    "waiting for unpause or cancel",
                )
            return False  # paused: poll on, launch nothing, wait for unpause or cancel
        self._idle_said = False
        return super()._done()

    def _final_state(self) -> LedgerState:
        if self.handing_over and self.interrupts.level < CANCEL and not self.journal_lost:
            return "running"
        return super()._final_state()

    def _save(self) -> None:
        if self.journal_lost is not None:
            return
        try:
            self.ledger.save_if_dirty()
        except JournalLost as exc:
            self.journal_lost = exc
            self._warn(f"{exc}; launching no more runs")
        except (LocalStateProblem, WorkspaceUnreachable) as exc:  # the segment is not in
            self.ledger.save_failure = ""
            for index in self._unsaved:
                self._flights.pop(index, None)
                record = self.ledger.slices[index]
                self.ledger.update(replace(record, attempts=record.attempts[:-1]))
                self._queue.appendleft(index)
            self._warn(f"{exc}; will save again")
        self._unsaved.clear()


class SteeredDownstreamScheduler(SteeredScheduler, DownstreamScheduler):
    """A detached ``--downstream`` backfill's scheduler: the steering, handover and
    fencing of :class:`SteeredScheduler` over the ready set and blocking of
    :class:`~..run.downstream_scheduler.DownstreamScheduler`.

    Both override ``_done``; the method order (this class, steered, downstream, the
    scheduler) makes a steered stop, a handover or a pause decide first, and the
    downstream rule (nothing runs and nothing can start: done) only when running.
    """
