"""Test-side controls: wait on emulator events instead of sleeping, hold and release runs
and requests, set the clock and run ids, fire triggers.

``wait_for`` wakes on every applied request and at every planned run end, never polls;
held runs (``set_outcome(key, hold=True)`` or ``hold_runs``) stay RUNNING until
``release``; the submission gate (``block_submissions``) and the request hold
(``hold_requests``) keep requests unapplied at an exactly known point.

Triggers: ``fire_table_update`` starts a run of a job with a ``trigger.table_update``
block, rendering its job parameters' table-update references
(https://docs.databricks.com/aws/en/jobs/trigger-table-update, "job parameters" of a
table-update trigger): ``updated_tables`` as a JSON list (the page shows no format: a
JSON array is the reading a parser must survive), each committed table's ``version`` and
``commit_timestamp.iso_datetime``; for a watched table that did not commit the page is
silent, so the least convenient legal answer: an empty string. A paused trigger does
not fire (the bundle's development mode pauses triggers,
https://docs.databricks.com/aws/en/dev-tools/bundles/deployment-modes), so firing one
raises. The run's ``trigger`` is ``TABLE`` (databricks-sdk-py ``jobs.TriggerType``:
"Indicates a run that is triggered by a table update"). ``fire_file_arrival`` renders
``{{job.trigger.file_arrival.location}}`` as the block's ``url`` ("the file arrival
location", https://docs.databricks.com/aws/en/jobs/dynamic-value-references); its run's
``trigger`` is ``FILE_ARRIVAL`` ("Indicates a run that is triggered by a file arrival").
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .._store._emulator_records import JobRecord
from .._store._emulator_state import JobsModel, RunRecord
from ._emulator_http import RUN_NOW

SubmissionGate = Callable[[list[RunRecord]], bool]  # whether a run-now waits, given the runs
RequestMatch = Callable[[str, str, Mapping[str, object]], bool]  # method, path, JSON body


class SyncControls:
    """Mixed into :class:`~..emulator.JobsEmulator`; every wait raises ``TimeoutError``
    naming what was awaited, so a broken test fails loudly instead of hanging."""

    _lock: threading.Lock
    _changed: threading.Condition
    _gate: SubmissionGate | None = None
    _gate_quota: int | None = None
    _blocked = 0  # run-now requests waiting at the gate now
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
        bodies = self._model.run_now_bodies
        with self._changed:
            if not self._changed.wait_for(
                lambda: sum(job_id in (None, b.get("job_id")) for b in bodies) >= count,
                timeout=timeout,
            ):
                raise TimeoutError(
                    f"JobsEmulator: {count} run-now requests not applied in {timeout:g} s"
                )

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
        """Move the workspace's clock ``days`` forward from now on; runs older than the
        retention (60 days) are then removed. Runs in flight keep their real durations.

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
        """Block until ``waiting()`` (read under the lock) reaches ``count``."""
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

    def fire_table_update(
        self,
        job_id: int,
        versions: Mapping[str, int],
        *,
        commit_times: Mapping[str, str] | None = None,
    ) -> int:
        """Start a table-triggered run of job ``job_id`` for tables that committed at
        ``versions``; return its run id.

        Raises:
            ValueError: the job has no (unpaused) table-update trigger, or a table in
                ``versions`` is not one it watches.
        """
        times = dict(commit_times or {})
        for table in versions:
            times.setdefault(table, "2024-01-01T00:00:00.000Z")
        with self._lock:
            job, block = self._firing(job_id, "table_update")
            unknown = sorted(set(versions) - set(block.get("table_names", [])))
            if unknown:
                raise ValueError(f"job {job_id} does not watch {', '.join(unknown)}")
            rendered = {
                name: render_table_update(value, versions, times)
                for name, value in job.parameter_defaults.items()
                if "job.trigger.table_update" in value
            }
            return self._fire(job_id, rendered, "TABLE")

    def fire_file_arrival(self, job_id: int) -> int:
        """Start a file-triggered run of job ``job_id``; return its run id.

        Raises:
            ValueError: the job has no (unpaused) file-arrival trigger.
        """
        with self._lock:
            job, block = self._firing(job_id, "file_arrival")
            url = str(block.get("url", ""))
            rendered = {
                name: value.replace(_LOCATION, url)
                for name, value in job.parameter_defaults.items()
                if _LOCATION in value
            }
            return self._fire(job_id, rendered, "FILE_ARRIVAL")

    def _fire(self, job_id: int, parameters: dict[str, str], trigger: str) -> int:
        """Start a run of ``job_id`` with ``parameters`` by ``trigger`` (the lock held)."""
        body = {"job_id": job_id, "job_parameters": parameters}
        run_id = int(self._model.run_now(body, time.monotonic())["run_id"])
        self._model._runs[run_id].trigger = trigger
        self._changed.notify_all()
        return run_id

    def _firing(self, job_id: int, kind: str) -> tuple[JobRecord, dict[str, Any]]:
        """Job ``job_id`` and its unpaused trigger's ``kind`` block, else ``ValueError``."""
        job = self._model._job(job_id)
        trigger = job.settings.get("trigger") or {}
        block = trigger.get(kind)
        if not isinstance(block, dict):
            raise ValueError(f"job {job_id} has no {kind} trigger")
        if trigger.get("pause_status") == "PAUSED":
            raise ValueError(f"job {job_id}'s trigger is paused: it does not fire")
        return job, block


def _release(model: JobsModel, key: str | None, now: float) -> int:
    """End the hold on runs of ``key`` (every key when ``None``); return how many. A
    released run ends now (or when it starts, if still PENDING); the lock is held."""
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


# -- triggers --------------------------------------------------------------------------

_TABLE_REF = re.compile(  # a table's name as it is (the trigger page's form) or backticked
    r"\{\{job\.trigger\.table_update\.(?:`([^`]+)`|([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+){0,2}))\."
    r"(version|commit_timestamp\.iso_datetime)\}\}"
)
_UPDATED = "{{job.trigger.table_update.updated_tables}}"
_LOCATION = "{{job.trigger.file_arrival.location}}"


def render_table_update(
    text: str, versions: Mapping[str, int], commit_times: Mapping[str, str]
) -> str:
    """``text`` with its table-update references rendered for a run of ``versions``."""

    def one(match: re.Match[str]) -> str:
        table = match.group(1) or match.group(2)
        if table not in versions:
            return ""
        if match.group(3) == "version":
            return str(versions[table])
        return commit_times.get(table, "")

    return _TABLE_REF.sub(one, text.replace(_UPDATED, json.dumps(sorted(versions))))
