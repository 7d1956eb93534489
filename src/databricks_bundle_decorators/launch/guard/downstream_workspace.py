"""The jobs of a ``--downstream`` backfill on Databricks: each job's deployment, its
backend and its workspace claim.

Each job is found as a one-job backfill finds its job (:func:`.connection.connect_job`:
the target's name prefix, the deployed name), which also puts back what a killed
launcher left paused for that job (a schedule, or a dependant's trigger held by
:mod:`.pause.trigger_pause`): any command that connects to a job of the graph
restores it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...definitions import Registry
from ..backends.backends import Backend
from ..backends.databricks_backend import DatabricksBackend
from ..backends.task_output import job_has_checks
from ..ledger.lease import WorkspaceClaims
from ..ledger.ledger import BackendSpec
from ..plan.request import Connection
from .connection import connect_job
from .job_claims import JobClaims

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


@dataclass(frozen=True, slots=True)
class DownstreamWorkspace:
    """The connected jobs of a ``--downstream`` backfill.

    Attributes:
        client: The workspace.
        job_ids: Each job's deployed id.
        backends: Each job's backend (runs of that job).
        guard: One workspace claim per job, on that job's keys.
        spec: Where the named job's runs go (the ledger's backend).
        cap: The concurrency of the whole backfill (the lowest any job allows).
        warnings: What the connections said (stale pauses restored, limits).
        registry: The project's jobs (the dependants' triggers).
    """

    client: WorkspaceClient
    job_ids: dict[str, int]
    backends: dict[str, Backend]
    guard: JobClaims
    spec: BackendSpec
    cap: int
    warnings: tuple[str, ...]
    registry: Registry

    def job_id_of(self, job: str) -> int:
        """The deployed id of ``job`` (a job of the graph)."""
        return self.job_ids[job]


def connect_downstream(
    registry: Registry,
    jobs: Sequence[str],
    conn: Connection,
    root: Path,
    cap: int,
    client: WorkspaceClient | None = None,
    *,
    checks: bool = True,
    resend_after: float | None = None,
    force: bool = False,
) -> DownstreamWorkspace:
    """Connect every job of ``jobs`` (the named job first) in one workspace.

    ``conn.job_id`` names the first job's deployment only; the others are found by name.

    Raises:
        UsageError: unknown target, missing credentials, or a job is not deployed.
    """
    job_ids: dict[str, int] = {}
    backends: dict[str, Backend] = {}
    guards: dict[str, WorkspaceClaims] = {}
    warnings: list[str] = []
    spec: BackendSpec | None = None
    for position, name in enumerate(dict.fromkeys(jobs)):
        job = registry.get(name)
        found = connect_job(
            job, conn if position == 0 else replace(conn, job_id=None), root, cap, client
        )
        client, cap = found.client, min(cap, found.cap)
        spec = spec or found.spec
        warnings += found.warnings
        job_id = found.remote.job_id
        job_ids[name] = job_id
        backends[name] = DatabricksBackend(
            client,
            job_id,
            read_checks=checks and job_has_checks(job),
            resend_after=resend_after,
        )
        guards[name] = WorkspaceClaims(
            client, job=name, job_id=job_id, backfill=job.backfill, force=force
        )
    assert client is not None and spec is not None  # jobs holds the named job at least
    spec = replace(spec, job_ids=dict(job_ids))
    return DownstreamWorkspace(
        client, job_ids, backends, JobClaims(guards), spec, cap, tuple(warnings), registry
    )
