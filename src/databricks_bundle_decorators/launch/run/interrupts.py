"""Ctrl-C and SIGTERM as escalating requests: drain first, then cancel.

Level 0 runs normally; level 1 (the first Ctrl-C) drains: no new launches, in-flight
runs finish; level 2 (a second Ctrl-C, or SIGTERM) cancels the in-flight runs.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Literal

InterruptLevel = Literal[0, 1, 2]
DRAIN: InterruptLevel = 1
CANCEL: InterruptLevel = 2


class Interrupts:
    """The current interrupt level and a wake-up event for the scheduler loop."""

    def __init__(self) -> None:
        self.level: InterruptLevel = 0
        self.wake = threading.Event()
        self.stopped = ""  # why launching stopped for good, not by the user: a lost claim
        self._listeners: list[Callable[[InterruptLevel], None]] = []

    def on_change(self, listener: Callable[[InterruptLevel], None]) -> None:
        """Call ``listener`` with the new level whenever it rises."""
        self._listeners.append(listener)

    def escalate(self, level: InterruptLevel | None = None) -> None:
        """Raise the level (by one, or to ``level``); it never goes down."""
        target: InterruptLevel = CANCEL if self.level >= DRAIN else DRAIN
        new = max(self.level, level if level is not None else target)
        if new != self.level:
            self.level = CANCEL if new == CANCEL else DRAIN
            for listener in self._listeners:
                listener(self.level)
        self.wake.set()

    def stop(self, reason: str) -> None:
        """Launch no more runs, for ``reason`` (the runs in flight are watched to their
        end); unlike a drain this is no interrupt: nobody pressed Ctrl-C."""
        self.stopped = self.stopped or reason
        self.wake.set()

    @contextmanager
    def installed(self) -> Iterator[Interrupts]:
        """Route SIGINT (escalate) and SIGTERM (cancel) here while inside the block (in
        the main thread only: elsewhere signals cannot be caught)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            self.escalate()

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            self.escalate(CANCEL)

        previous_int = signal.signal(signal.SIGINT, on_sigint)
        previous_term = signal.signal(signal.SIGTERM, on_sigterm)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous_int)
            signal.signal(signal.SIGTERM, previous_term)
