"""One backend per job: a ``--downstream`` backfill on Databricks runs each slice as a
run of its own deployed job.

:class:`.job_router.JobRouter` names each request's job (from the ledger); this backend
sends it to that job's :class:`.databricks_backend.DatabricksBackend`. Polls are asked
of the backend of the run's job: a job's backend lists its own job's runs
(``jobs/runs/list`` with its ``job_id``: "The job for which to list runs",
https://docs.databricks.com/api/workspace/jobs/listruns), so another job's run would
only be found one by one.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping

from ..ledger.ledger import Ledger
from .backends import Backend, RunStatus, SubmitRequest, Submitted


class PerJobBackend:
    """A :class:`.backends.Backend` holding one backend per job, by job name.

    Args:
        backends: Each job's backend; the ledger's job must be among them.
        ledger: The backfill's ledger: which job ran a run a resumed launcher finds
            in it (a slice without a job is the ledger's job's).
    """

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
