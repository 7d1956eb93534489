"""The face of :class:`.scheduler.Scheduler` that its parts and :mod:`.submissions` are
handed at the loop's fixed points: a protocol, so that none imports the scheduler."""

from __future__ import annotations

from collections import deque
from typing import Protocol

from ..backends.backends import Backend
from ..ledger.ledger import Attempt, Ledger, SliceRecord
from ..plan.options import LaunchOptions
from .events import EventKind
from .flights import Flight
from .interrupts import Interrupts


class Loop(Protocol):
    """A running scheduler's state and acts (see :class:`.scheduler.Scheduler`)."""

    ledger: Ledger
    options: LaunchOptions
    interrupts: Interrupts
    flights: dict[int, Flight]  # by slice index
    by_run: dict[str, Flight]  # the flights whose run id is known
    queue: deque[int]  # the slices to launch, in order
    final: int | None  # the final sync, launched last
    delayed: list[tuple[float, int]]  # retries, by when they are due
    failed_for_good: set[int]

    @property
    def backend(self) -> Backend: ...
    def launching(self) -> bool: ...
    def warn(self, message: str) -> None: ...
    def event(
        self, kind: EventKind, record: SliceRecord, attempt: Attempt, *, message: str = ""
    ) -> None: ...
    def close(self, flight: Flight, attempt: Attempt) -> None: ...
    def halt(self, reason: str) -> None: ...
    def forget_unsaved(self) -> list[int]: ...
