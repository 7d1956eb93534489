"""A backend that runs each slice of a ``--downstream`` backfill as a run of its own job.

The scheduler sends a :class:`.backends.SubmitRequest` per attempt and knows nothing of
jobs; the slice's job is in the ledger, found by the attempt's idempotency token (each
token names one attempt of one slice). The local backend runs any job of the registry
(:class:`.local_backend.LocalBackend`), so one backend, one thread pool, serves every
job: ``--max-concurrent`` caps all the jobs' runs together.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from ..ledger.ledger import Ledger
from .backends import Backend, EndsNotified, RunStatus, SubmitRequest, Submitted


class JobRouter:
    """``inner`` with each request's job taken from the ledger (a :class:`.Backend`).

    Args:
        inner: A backend that runs the job a request names (the local one).
        ledger: The backfill's ledger; a slice without a job runs ``inner``'s own.
    """

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
        job = request.job or self.job_of(request.token)
        return self.inner.submit(
            SubmitRequest(request.token, request.parameters, request.label, request.first_sent, job)
        )

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        return self.inner.poll(run_ids)

    def cancel(self, run_id: str) -> None:
        self.inner.cancel(run_id)

    def close(self) -> None:
        self.inner.close()


class NotifyingJobRouter(JobRouter):
    """A :class:`JobRouter` whose inner backend tells when runs end: it passes the ends
    on (:class:`.backends.EndsNotified`). Apart from :class:`JobRouter` so that a router
    over a backend that only polls (Databricks) does not claim to tell ends: the
    scheduler would wait for ends that never come (cancel waits its whole timeout)."""

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
