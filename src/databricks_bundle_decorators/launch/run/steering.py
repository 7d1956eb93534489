"""The scheduler's part for a controller run: steered, handing over, fenced.

- **steering**: the control ops, read at most every ``control_every`` seconds: paused
  launches nothing new and keeps polling; cancelled first re-sends the token of every
  attempt whose run id is unknown, then cancels the runs in flight, ending
  ``interrupted``;
- **handover**: past ``handover_at`` (monotonic) it launches nothing new and stops once
  no submission is under way, leaving the runs in flight and the backfill ``running``
  to the next generation;
- **fencing**: a save that finds its segment written by another controller
  (:class:`~..ledger.journal.JournalLost`) stops everything at once; a save that failed
  otherwise forgets the attempts it would have recorded and queues their slices again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ..backends.backends import SubmitRequest
from ..ledger.journal import JournalLost
from ..plan.states import ControlState, RunState
from .flights import Loop
from .interrupts import CANCEL, Interrupts


class Steering:
    """A controller run's say over its scheduler: ``control`` reads the backfill's control
    state every ``control_every`` seconds (an exception keeps the last one), and past
    ``handover_at`` (``time.monotonic()``) this run hands over."""

    def __init__(
        self, control: Callable[[], ControlState], *, control_every: float, handover_at: float
    ) -> None:
        self._control = control
        self._control_every = control_every
        self._control_read_at = -float("inf")
        self.handover_at = handover_at
        self.control_state: ControlState = ControlState.RUNNING
        self.handing_over = False
        self.journal_lost: JournalLost | None = None
        self._idle_said = False

    def turn(self, loop: Loop) -> None:
        """Once per loop turn: read the control ops when due, and hand over when due."""
        now = time.monotonic()
        if now - self._control_read_at >= self._control_every and not self.journal_lost:
            self._control_read_at = now
            try:
                state = self._control()
            except Exception as exc:  # unreachable: keep the last state, report it
                loop.warn(f"could not read the backfill's control ops, will retry: {exc}")
                state = self.control_state
            if state != self.control_state:
                loop.warn(f"backfill {loop.ledger.id} is now {state}")
                self.control_state = state
            if state == "cancelled" and loop.interrupts.level < CANCEL:
                _learn_lost_run_ids(loop)
                loop.interrupts.escalate(CANCEL)
        if now >= self.handover_at and not self.handing_over:
            self.handing_over = True
            loop.warn("handing over to the next controller run")

    def holds(self) -> bool:
        """Whether nothing new may be launched: paused, cancelled, handing over or fenced."""
        return self.control_state != "running" or self.handing_over or bool(self.journal_lost)

    def done(self, loop: Loop) -> bool | None:
        """Whether the loop ends now; ``None`` leaves it to the scheduler."""
        if self.journal_lost is not None or loop.interrupts.stopped:
            return True  # the runs in flight are the next controller's
        if self.handing_over:
            return not any(f.future is not None for f in loop.flights.values())
        if self.control_state == "paused" and loop.interrupts.level < CANCEL:
            if not loop.flights and not self._idle_said:  # once per pause, for the log
                self._idle_said = True
                loop.warn(
                    f"backfill {loop.ledger.id} paused with no run in flight; "
                    "waiting for unpause or cancel"
                )
            return False  # paused: poll on, launch nothing, wait for unpause or cancel
        self._idle_said = False
        return None

    def save_failed(self, exc: Exception, loop: Loop) -> None:
        """After a failed save: fenced (the journal lost), or its slices queued again."""
        if isinstance(exc, JournalLost):
            self.journal_lost = exc
            loop.warn(f"{exc}; launching no more runs")
            return
        loop.ledger.save_failure = ""  # the segment is not in: the next save sends it
        loop.queue.extendleft(loop.forget_unsaved())
        loop.warn(f"{exc}; will save again")

    def hands_over(self, interrupts: Interrupts) -> bool:
        """Whether the backfill is left ``running`` to the next controller run."""
        return self.handing_over and interrupts.level < CANCEL and not self.journal_lost


def _learn_lost_run_ids(loop: Loop) -> None:
    """Re-send the token of every flight whose run id is unknown and not being asked."""
    ledger = loop.ledger
    for flight in loop.flights.values():
        if flight.run_id is not None or flight.future is not None:
            continue
        record = ledger.slices[flight.index]
        request = SubmitRequest(flight.token, dict(record.parameters), record.label, None)
        try:
            flight.run_id = loop.backend.submit(request).run_id
        except Exception as exc:  # left open in the journal: the next run asks again
            loop.warn(f"could not learn the run of {record.label}: {exc}")
            continue
        loop.by_run[flight.run_id] = flight
        attempt = record.attempt(flight.attempt)
        running = replace(attempt, state=RunState.RUNNING, run_id=flight.run_id)
        ledger.update(record.with_attempt(running))
