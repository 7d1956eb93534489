"""Backends that run each slice of a ``--downstream`` backfill as a run of its own job, found
in the ledger: locally one backend for all (:class:`JobRouter`); on Databricks one per job,
as runs/list lists one ``job_id`` (https://docs.databricks.com/api/workspace/jobs/listruns).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from ..ledger.ledger import Ledger
from .backends import Backend, EndsNotified, RunStatus, SubmitRequest, Submitted


class JobRouter:
    """``inner`` (the local backend) with each request's job taken from the ledger (a
    slice without a job runs ``inner``'s own)."""

    def __init__(self, inner: Backend, ledger: Ledger) -> None:
        self.inner = inner
        self.ledger = ledger

    @property
    def kind(self) -> str:
        return self.inner.kind

    def job_of(self, token: str) -> str | None:
        """The job of the slice whose attempt carries ``token`` (``None``: the ledger's)."""
        for record in self.ledger.slices:
            if any(attempt.token == token for attempt in record.attempts):
                return record.job
        return None

    def submit(self, request: SubmitRequest) -> Submitted:
        return self.inner.submit(replace(request, job=request.job or self.job_of(request.token)))

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        return self.inner.poll(run_ids)

    def cancel(self, run_id: str) -> None:
        self.inner.cancel(run_id)

    def close(self) -> None:
        self.inner.close()


class NotifyingJobRouter(JobRouter):
    """A :class:`JobRouter` passing run ends on (:class:`.backends.EndsNotified`); apart,
    so a router over a backend that only polls does not claim to tell ends."""

    def on_end(self, callback: Callable[[str], None]) -> None:
        """Pass run ends on (see :class:`.backends.EndsNotified`)."""
        assert isinstance(self.inner, EndsNotified)
        self.inner.on_end(callback)


def job_router(inner: Backend, ledger: Ledger) -> JobRouter:
    """``inner`` routed by job, telling ends exactly when ``inner`` does."""
    if isinstance(inner, JobRouter):
        return inner
    if isinstance(inner, EndsNotified):
        return NotifyingJobRouter(inner, ledger)
    return JobRouter(inner, ledger)


class PerJobBackend:
    """One backend per job name (the ledger's job among them); a run a resumed launcher
    finds is its slice's job's, by the ledger."""

    def __init__(self, backends: Mapping[str, Backend], ledger: Ledger) -> None:
        self.backends = dict(backends)
        self.ledger = ledger
        self._jobs: dict[str, str] = {}  # run id -> job, for the runs started here
        self._lock = threading.Lock()

    @property
    def kind(self) -> str:
        return "databricks"

    def submit(self, request: SubmitRequest) -> Submitted:
        job = request.job or self.ledger.job
        submitted = self.backends[job].submit(request)
        with self._lock:
            self._jobs[submitted.run_id] = job
        return submitted

    def _job_of(self, run_id: str) -> str:
        with self._lock:
            known = self._jobs.get(run_id)
        if known is not None:
            return known
        for record in self.ledger.slices:
            if any(a.run_id == run_id for a in record.attempts):
                return record.job or self.ledger.job
        return self.ledger.job

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        by_job: dict[str, list[str]] = {}
        for run_id in run_ids:
            by_job.setdefault(self._job_of(run_id), []).append(run_id)
        found: dict[str, RunStatus] = {}
        for job, runs in by_job.items():
            found.update(self.backends[job].poll(runs))
        return found

    def cancel(self, run_id: str) -> None:
        self.backends[self._job_of(run_id)].cancel(run_id)

    def close(self) -> None:
        for backend in self.backends.values():
            backend.close()
