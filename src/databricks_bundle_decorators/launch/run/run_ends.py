"""Runs a backend said have ended: how the scheduler hears of ends as events.

A backend that tells when a run ends (:class:`.backends.EndsNotified`, the local one)
calls back from its own thread; the ids wait here until the scheduler's loop polls
them (at once, see :mod:`..policy.status_poller`). An id may arrive before the submission that
started the run has answered: it waits until the scheduler knows the run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Container

from ..backends.backends import Backend, EndsNotified

__all__ = ["EndedRuns"]


class EndedRuns:
    """The ended runs not yet polled, filled from the backend's threads.

    Args:
        backend: The backend; if it does not tell ends, nothing ever arrives.
        wake: Wakes the scheduler's loop (called from the backend's thread).
    """

    def __init__(self, backend: Backend, wake: Callable[[], None]) -> None:
        self.notified = isinstance(backend, EndsNotified)
        self._wake = wake
        self._ended: set[str] = set()
        self._pending: set[str] = set()  # ended, not yet taken to be polled
        self._lock = threading.Condition()
        if isinstance(backend, EndsNotified):
            backend.on_end(self._heard)

    def _heard(self, run_id: str) -> None:
        with self._lock:
            self._ended.add(run_id)
            self._pending.add(run_id)
            self._lock.notify_all()
        self._wake()

    def take(self, known: Container[str]) -> list[str]:
        """The ended runs among ``known`` not taken before; the others wait for a later
        call."""
        with self._lock:
            found = [run_id for run_id in self._pending if run_id in known]
            self._pending.difference_update(found)
        return found

    def wait_for(self, run_ids: Collection[str], timeout: float) -> bool:
        """Wait until every run of ``run_ids`` has ended, at most
        ``timeout`` seconds; whether they all did. A backend that does not tell ends
        returns False at once."""
        if not self.notified:
            return False
        with self._lock:
            return self._lock.wait_for(lambda: self._ended.issuperset(run_ids), timeout)
