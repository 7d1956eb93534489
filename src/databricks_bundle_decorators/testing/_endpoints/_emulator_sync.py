"""Synchronisation for tests: wait on emulator events instead of sleeping and hoping.

A test that must act "while three runs are in flight" or "before the next submission"
cannot rely on run durations or sleeps: a loaded machine stretches every interval.
These controls make such moments exact:

* :meth:`SyncControls.wait_for` blocks until a condition over the runs holds; it wakes
  on every request the emulator applies and at every planned run end, never polls.
* Held runs (``set_outcome(key, hold=True)`` or ``hold_runs = True``) stay RUNNING
  until :meth:`SyncControls.release` ends them.
* A submission gate (:meth:`SyncControls.block_submissions`) holds ``run-now``
  requests before they are applied, so a client can be killed or cancelled at an
  exactly known point; :meth:`SyncControls.unblock_submissions` lets them through.
* A request hold (:meth:`SyncControls.hold_requests`) does the same for any request a
  test picks by method, path and body (a workspace file's create, say): the client
  waits on the network exactly there until :meth:`SyncControls.release_requests`.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping

from .._store._emulator_state import JobsModel, RunRecord
from ._emulator_http import RUN_NOW

SubmissionGate = Callable[[list[RunRecord]], bool]
"""Whether a ``run-now`` waits at the gate, given every run."""

__all__ = ["RequestMatch", "SyncControls"]

RequestMatch = Callable[[str, str, Mapping[str, object]], bool]
"""Picks a request by its method, path and JSON body (``{}`` when it has none)."""


class SyncControls:
    """Mixed into :class:`~..emulator.JobsEmulator`; every wait has a generous timeout
    that raises ``TimeoutError`` naming what was awaited, so a broken test fails loudly
    instead of hanging."""

    _lock: threading.Lock
    _changed: threading.Condition
    _gate: SubmissionGate | None
    _gate_quota: int | None
    _blocked: int
    _model: JobsModel
    _hold_match: RequestMatch | None = None
    _hold_quota = 0  # matching requests still to hold
    _held = 0  # requests waiting at the hold now

    @property
    def hold_runs(self) -> bool:
        """When true, every run admitted from now on stays RUNNING until released."""
        return self._model.hold_runs

    @hold_runs.setter
    def hold_runs(self, value: bool) -> None:
        with self._lock:
            self._model.hold_runs = bool(value)

    def release(self, key: str | None = None) -> int:
        """End held runs of ``key`` (all keys when ``None``) now; return how many.

        Later runs of the key (all runs, for ``None``) are no longer held.
        """
        with self._lock:
            released = _release(self._model, key, time.monotonic())
            self._changed.notify_all()
        return released

    def wait_for(
        self,
        condition: Callable[[list[RunRecord]], bool],
        *,
        job_id: int | None = None,
        timeout: float = 60.0,
        what: str = "the awaited condition",
    ) -> list[RunRecord]:
        """Block until ``condition(runs)`` holds for the runs (of ``job_id``); return them."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                now = time.monotonic()
                self._model.advance(now)
                runs = self._model.snapshot_runs(job_id)
                if condition(runs):
                    return runs
                if now >= deadline:
                    raise TimeoutError(f"JobsEmulator: {what} not reached in {timeout:g} s")
                wait = deadline - now
                upcoming = self._model.next_event()
                if upcoming is not None and upcoming != math.inf:
                    wait = min(wait, max(upcoming - now, 0.001))  # a run ends on time
                self._changed.wait(wait)

    def wait_for_runs(self, count: int, *, job_id: int | None = None) -> list[RunRecord]:
        """Block until at least ``count`` runs (of ``job_id``) exist; return them all."""
        return self.wait_for(
            lambda runs: len(runs) >= count, job_id=job_id, what=f"{count} runs created"
        )

    def wait_for_run_now_bodies(
        self, count: int, *, job_id: int | None = None, timeout: float = 60.0
    ) -> None:
        """Block until ``count`` ``run-now`` requests (of ``job_id``) have been applied,
        copies sent again with the same token included."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                applied = [
                    b
                    for b in self._model.run_now_bodies
                    if job_id is None or b.get("job_id") == job_id
                ]
                if len(applied) >= count:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"JobsEmulator: {count} run-now requests not applied in {timeout:g} s"
                    )
                self._changed.wait(left)

    # -- the emulator's clock and run ids, as a test sets them ---------------------

    def set_next_run_id(self, run_id: int) -> None:
        """Give the next run ``run_id`` (later runs count up from it): run ids are opaque
        identifiers, not promised to grow with time, so a test may hand out a lower one.

        Raises:
            ValueError: a run already has an id among the next 10,000 from ``run_id``.
        """
        with self._lock:
            if run_id < 1 or any(run_id <= r < run_id + 10_000 for r in self._model._runs):
                raise ValueError(f"run ids from {run_id} are taken or invalid")
            self._model._next_run_id = run_id

    def set_clock_offset(self, seconds: float) -> None:
        """Run the workspace's clock ``seconds`` ahead of this machine's (negative:
        behind), as a workspace's clock may be; set it before the runs of a test."""
        with self._lock:
            self._model.clock.offset(seconds)

    def advance_days(self, days: float) -> None:
        """Move the workspace's clock ``days`` forward from now on (``start_time`` of later
        runs, the workspace files' times); runs older than the retention are then
        removed (see :mod:`.._store._emulator_clock`). Runs in flight keep their real durations.

        Raises:
            ValueError: ``days`` is negative.
        """
        with self._lock:
            self._model.clock.jump(days * 86_400.0, time.monotonic())
            self._changed.notify_all()

    def block_submissions(
        self, when: SubmissionGate | None = None, *, first: int | None = None
    ) -> None:
        """Hold every ``run-now`` request, before it is applied, while ``when(runs)``
        is true for all runs (always, when ``None``).

        ``first``: hold only the next ``first`` requests; later ones go through. A
        client that sends a slow request again (``--resend-after``) is then slow by
        construction: its first copy is held, its second is answered.
        """
        with self._lock:
            self._gate = when or (lambda runs: True)
            self._gate_quota = first
            self._changed.notify_all()

    def unblock_submissions(self) -> None:
        """Open the gate: held ``run-now`` requests are applied now."""
        with self._lock:
            self._gate = None
            self._changed.notify_all()

    def wait_for_blocked_submissions(self, count: int = 1, *, timeout: float = 60.0) -> None:
        """Block until ``count`` ``run-now`` requests are waiting at the gate."""
        self._wait_for_waiting(lambda: self._blocked, count, timeout, "blocked submissions")

    def hold_requests(self, match: RequestMatch, *, first: int = 1) -> None:
        """Hold the next ``first`` requests that ``match(method, path, body)`` picks,
        before they are applied, until :meth:`release_requests`."""
        with self._lock:
            self._hold_match, self._hold_quota = match, first

    def release_requests(self) -> None:
        """Apply the held requests now; hold no more."""
        with self._lock:
            self._hold_match, self._hold_quota = None, 0
            self._changed.notify_all()

    def wait_for_held_requests(self, count: int = 1, *, timeout: float = 60.0) -> None:
        """Block until ``count`` requests wait at the hold of :meth:`hold_requests`."""
        self._wait_for_waiting(lambda: self._held, count, timeout, "held requests")

    def _wait_for_waiting(
        self, waiting: Callable[[], int], count: int, timeout: float, what: str
    ) -> None:
        """Block until ``waiting()`` (read under the lock) reaches ``count``.

        Raises:
            TimeoutError: not reached in ``timeout`` seconds.
        """
        with self._changed:
            if not self._changed.wait_for(lambda: waiting() >= count, timeout=timeout):
                raise TimeoutError(f"JobsEmulator: {count} {what} not reached in {timeout:g} s")

    def _wait_at_gates(self, method: str, path: str, body: object) -> None:
        """Hold a request (not yet applied) at the hold, and a ``run-now`` at the
        submission gate, while they say so."""
        fields: Mapping[str, object] = body if isinstance(body, dict) else {}
        with self._lock:
            match = self._hold_match
            if match is not None and self._hold_quota > 0 and match(method, path, fields):
                self._hold_quota -= 1
                self._held += 1
                self._changed.notify_all()
                while self._hold_match is match:
                    self._changed.wait()
                self._held -= 1
        if method == "POST" and path in RUN_NOW:
            self._wait_at_gate()

    def _wait_at_gate(self) -> None:
        """Hold a ``run-now`` (not yet applied) while the submission gate says so."""
        with self._lock:
            if self._gate is not None and self._gate_quota is not None:
                if self._gate_quota <= 0:
                    return  # the gate's quota of held requests is used up
                self._gate_quota -= 1
            while self._gate is not None:
                self._model.advance(time.monotonic())
                if not self._gate(self._model.snapshot_runs(None)):
                    return
                self._blocked += 1
                self._changed.notify_all()
                self._changed.wait()
                self._blocked -= 1

    @property
    def blocked_submissions(self) -> int:
        """How many ``run-now`` requests wait at the gate now."""
        with self._lock:
            return self._blocked


def _release(model: JobsModel, key: str | None, now: float) -> int:
    """End the hold on runs of ``key`` (every key when ``None``); return how many.

    A released run ends now (or when it starts, if still PENDING); later runs of the
    key are no longer held.  Part of the model's state kept here, beside the other
    test-side controls; the caller holds the emulator's lock.
    """
    if key is None:
        model.hold_runs = False
    model._outcomes = {
        scope: dataclasses.replace(o, hold=False) if key in (None, scope[1]) else o
        for scope, o in model._outcomes.items()
    }
    released = 0
    for q in model._queues.values():
        for run in q.active:
            if run.planned_end == math.inf and key in (None, run.outcome_key):
                assert run.started is not None
                run.planned_end = max(now, run.started)
                released += 1
    model.advance(now)
    return released
