"""The scheduler as its parts see it: :class:`Loop`, the narrow face of
:class:`.scheduler.Scheduler` that the parts (:class:`.blocking.ReadySet`,
:class:`.steering.Steering`, :class:`..prepare.rebatch.Rebatcher`) and the submissions
(:mod:`.submissions`) are handed at the loop's fixed points. A protocol, so that no part
imports the scheduler that calls it.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from ..backends.backends import Backend
from ..ledger.ledger import Attempt, Ledger, SliceRecord
from ..plan.pacing import SchedulerOptions
from .events import EventKind
from .flights import Flight
from .interrupts import Interrupts


class Loop(Protocol):
    """The state and the acts of a running scheduler that its parts use."""

    ledger: Ledger
    options: SchedulerOptions
    interrupts: Interrupts
    flights: dict[int, Flight]  # by slice index
    by_run: dict[str, Flight]  # the flights whose run id is known
    queue: deque[int]  # the slices to launch, in order
    final: int | None  # the final sync, launched last
    delayed: list[tuple[float, int]]  # retries, by when they are due
    failed_for_good: set[int]

    @property
    def backend(self) -> Backend: ...

    def launching(self) -> bool:
        """Whether new runs may be launched."""

    def warn(self, message: str) -> None: ...

    def event(
        self, kind: EventKind, record: SliceRecord, attempt: Attempt, *, message: str = ""
    ) -> None: ...

    def close(self, flight: Flight, attempt: Attempt) -> None:
        """Record the end of an attempt; plan a retry or give the slice up."""

    def halt(self, reason: str) -> None:
        """Launch nothing more, for ``reason`` (said once)."""

    def forget_unsaved(self) -> list[int]:
        """Drop the attempts a failed save would have recorded; their slices."""
