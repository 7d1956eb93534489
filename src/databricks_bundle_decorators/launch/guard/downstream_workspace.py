"""The jobs of a ``--downstream`` backfill on Databricks: each job's deployment (found as
:func:`.connection.connect_job` finds one, restoring stale pauses), backend and claim.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...definitions import Registry
from ..backends.backends import Backend
from ..backends.databricks_backend import DatabricksBackend
from ..backends.task_output import job_has_checks
from ..ledger.claims import BackfillGuard, ClaimLost
from ..ledger.lease import LocalLock, WorkspaceClaims
from ..ledger.ledger import BackendSpec, Ledger, job_part
from ..plan.request import Connection
from .connection import connect_job

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


@dataclass(frozen=True, slots=True)
class DownstreamWorkspace:
    """The connected jobs of a ``--downstream`` backfill: each job's deployed id, backend
    and claim; ``spec`` where the named job's runs go, ``cap`` the lowest any job allows."""

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
    """Connect every job of ``jobs`` (the named job first, the only one ``conn.job_id``
    names) in one workspace.

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


class JobClaims:
    """A :class:`~.claims.BackfillGuard` holding one guard per job, by job name."""

    def __init__(self, guards: Mapping[str, BackfillGuard]) -> None:
        self.guards = dict(guards)

    @contextmanager
    def hold(self, ledger: Ledger, on_lost: ClaimLost) -> Iterator[None]:
        """Claim each job's keys for the block (a refusal names the job)."""
        with ExitStack() as held:
            for job, guard in self.guards.items():
                held.enter_context(guard.hold(job_part(ledger, job), on_lost))
            yield


def job_locks(root: Path, jobs: Sequence[str], *, force: bool) -> JobClaims:
    """One local lock per job of the project at ``root``, in the plan's job order."""
    return JobClaims({job: LocalLock(root, job, force=force) for job in jobs})
