"""Since when the workspace has not answered, told at once, every :data:`REMIND_EVERY`
seconds, and when a call gets through (runs go on meanwhile).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from typing import Literal, TypeVar

from ..backends.backends import Backend, RunStatus, SubmitRequest, Submitted
from ..backends.errors import BackendUnavailable

REMIND_EVERY = 30.0
"""Seconds between reminders while the workspace stays unreachable."""

OutageKind = Literal["unreachable", "reachable"]
A = TypeVar("A")
R = TypeVar("R")


class OutageTracker:
    """Whether the backend answers, from each call's outcome (thread-safe); the scheduler's
    loop collects the lines to show with :meth:`pending` (``clock``: epoch seconds).
    """

    def __init__(
        self, *, remind_every: float = REMIND_EVERY, clock: Callable[[], float] = time.time
    ) -> None:
        self.remind_every = remind_every
        self.clock = clock
        self.since: float | None = None
        self._reason = ""
        self._told: float | None = None
        self._ended = ""
        self._lock = threading.Lock()

    def failed(self, reason: str, *, sent_at: float | None = None) -> None:
        """A call sent at ``sent_at`` (default: now) got no answer, for ``reason``."""
        with self._lock:
            self._reason = reason
            if self.since is None:
                self.since = self.clock() if sent_at is None else sent_at
                self._told = None

    def answered(self) -> None:
        """A call got an answer: an outage, if any, is over."""
        with self._lock:
            if self.since is not None:
                lasted = _duration(self.clock() - self.since)
                self._ended = f"workspace reachable again after {lasted}"
                self.since = None

    def pending(self, in_flight: int) -> list[tuple[OutageKind, str]]:
        """The lines to show now: an outage's end, its start, or a reminder."""
        with self._lock:
            lines: list[tuple[OutageKind, str]] = []
            if self._ended:
                lines.append(("reachable", self._ended))
                self._ended = ""
            now = self.clock()
            if self.since is not None and (
                self._told is None or now - self._told >= self.remind_every
            ):
                self._told = now
                stamp = time.strftime("%H:%M:%S", time.localtime(self.since))
                runs = "1 run" if in_flight == 1 else f"{in_flight} runs"
                text = f"workspace unreachable since {stamp} ({self._reason}), retrying; "
                lines.append(("unreachable", f"{text}{runs} in flight"))
            return lines


class TrackedBackend:
    """A backend whose every call tells an :class:`OutageTracker` whether it got an answer."""

    def __init__(self, backend: Backend, tracker: OutageTracker) -> None:
        self.backend = backend
        self.tracker = tracker

    @property
    def kind(self) -> str:
        return self.backend.kind

    def submit(self, request: SubmitRequest) -> Submitted:
        return self._call(self.backend.submit, request)

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        return self._call(self.backend.poll, run_ids)

    def cancel(self, run_id: str) -> None:
        self._call(self.backend.cancel, run_id)

    def close(self) -> None:
        self.backend.close()

    def _call(self, method: Callable[[A], R], argument: A) -> R:
        sent_at = self.tracker.clock()  # the outage began before this call gave up
        try:
            result = method(argument)
        except BackendUnavailable as exc:
            self.tracker.failed(str(exc), sent_at=sent_at)
            raise
        except Exception:
            self.tracker.answered()  # a refusal or an error is an answer too
            raise
        self.tracker.answered()
        return result


def _duration(seconds: float) -> str:
    minutes, secs = divmod(max(0, round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
