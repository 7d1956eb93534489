"""``dbxdec status``: key states of a job from run history or ledgers, as a grid; for local
status also its keys' provenance, a succeeded key that is stale shown ``stale``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...definitions import JobDefinition
from ...errors import DbxdecError
from ..guard.connection import connect_job
from ..ledger.ledger import Ledger, ledger_dir, ledger_observations, list_ledgers
from ..plan.history import KeyHistory, key_history
from ..plan.plan import build_plan, selected_keys
from ..plan.request import Connection
from ..plan.states import KeyState
from ..provenance.job_keys import JobProvenance, job_provenance
from .local_runs import LocalRun, local_runs, runs_dir, with_local_run_details
from .observed import history_horizon, observed_history, with_unknown
from .status_grid import (
    KeyDetail,
    PageOrigin,
    PartitionGrid,
    build_grid,
    ledger_details,
    run_page_url,
)

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


@dataclass(frozen=True, slots=True)
class JobStatus:
    """Key states of a job, details of their latest runs (:class:`KeyDetail`), where both
    come from, and how far back the run history reaches (``horizon``, ``None`` for the
    local ledgers: a key with no record before it is ``unknown``, :mod:`.observed`), and its
    keys' provenance (``None``: not read: a workspace's status, or no local tables).
    """

    history: KeyHistory
    details: dict[str, KeyDetail]
    origin: PageOrigin
    horizon: datetime | None = None
    provenance: JobProvenance | None = None


def job_status(
    job: JobDefinition,
    connection: Connection,
    *,
    root: Path,
    now: datetime,
    client: WorkspaceClient | None = None,
    restore: bool = True,
    warehouse: Path | None = None,
    jobs: Sequence[JobDefinition] = (),
) -> JobStatus:
    """Key states of ``job`` from the local ledgers or the workspace's run history (``now``:
    when, printed on the page; ``client``: instead of connecting; ``restore`` off: change
    nothing, not even a pause an ended backfill left, as a web page's GET must not).

    Local status with the project's local ``warehouse`` (when that folder exists) also
    reads the keys' provenance from the tables' index (:func:`local_provenance`), judged
    with the project's ``jobs`` (``job`` alone when empty).

    Raises:
        UsageError: the job has no backfill definition, or the workspace is unreachable.
    """
    if job.backfill is None:
        build_plan(job)  # raises the "no backfill definition" error
    assert job.backfill is not None
    if connection.local:  # local backfills only: a workspace backfill is not a local run
        ledgers = list_ledgers(root, job.name, backend="local")
        runs = local_runs(root, job.name)  # dbxdec run --local: no ledger, a record per run
        source = f"local ledgers in {ledger_dir(root)} and runs in {runs_dir(root, job.name)}"
        status = ledger_status(ledgers, now=now, where=source, runs=runs)
        if warehouse is None:
            return status
        provenance = local_provenance(job, jobs or (job,), warehouse=warehouse, root=root)
        return replace(status, provenance=provenance)
    details = ledger_details(list_ledgers(root, job.name))
    found = connect_job(job, connection, root, cap=1, client=client, restore=restore)
    job_id = found.remote.job_id
    history = observed_history(
        job.name, job.backfill, root=root, client=found.client, job_id=job_id
    )
    host = found.client.config.host
    for key, detail in details.items():  # a run of a ledger without its page
        if detail.url is None and detail.run_id:
            details[key] = replace(detail, url=run_page_url(host, job_id, detail.run_id))
    source = f"workspace {host}, job {found.remote.name} (job id {job_id})"
    horizon = history_horizon(now, found.remote.created_ms)
    return JobStatus(history, details, PageOrigin(now, source), horizon)


def local_provenance(
    job: JobDefinition, jobs: Sequence[JobDefinition], *, warehouse: Path, root: Path
) -> JobProvenance | None:
    """``job``'s keys' provenance in the local tables under ``warehouse`` (``None``: no such
    folder, or the project's table graph is wrong: ``dbxdec graph`` says why, and the
    status shows the run states alone)."""
    if not warehouse.is_dir():
        return None
    if all(other.name != job.name for other in jobs):
        jobs = (*jobs, job)
    try:
        return job_provenance(job.name, jobs, warehouse, root)
    except DbxdecError:
        return None


def ledger_status(
    ledgers: list[Ledger], *, now: datetime, where: str, runs: Sequence[LocalRun] = ()
) -> JobStatus:
    """The key states of ``ledgers`` and of single local ``runs``, read once (``where``: their
    origin).
    """
    observed = ledger_observations(ledgers)
    history = key_history([*observed, *(run.observation() for run in runs)])
    details = with_local_run_details(ledger_details(ledgers), observed, runs)
    return JobStatus(history, details, PageOrigin(now, where))


def partition_grid(
    job: JobDefinition, status: JobStatus, *, start: str | None, end: str | None
) -> tuple[PartitionGrid, PageOrigin]:
    """The status grid of ``job``'s keys from ``start`` to ``end`` (inclusive), and its origin
    naming the backfills whose runs it details.

    Raises:
        UsageError: a bound is malformed or outside the definition.
    """
    backfill = job.backfill
    if backfill is None:
        build_plan(job)  # raises the "no backfill definition" error
    assert backfill is not None
    keys = selected_keys(backfill, start, end)  # not a plan: 87,000 runs of one key cost
    history = status.history
    if status.horizon is not None:
        history = with_unknown(history, backfill, keys, status.horizon)
    grid = build_grid(job.name, backfill.kind, keys, history, status.details)
    if status.provenance is not None:
        grid = with_stale(grid, status.provenance)
    backfills = sorted({d.backfill_id for d in grid.details.values() if d.backfill_id})
    return grid, replace(status.origin, backfills=tuple(reversed(backfills)))


def with_stale(grid: PartitionGrid, provenance: JobProvenance) -> PartitionGrid:
    """``grid`` with its keys' ``provenance``: a succeeded key that is stale becomes
    ``stale``; a failed, cancelled or running one keeps its state (more urgent: whatever
    it last wrote is being replaced or was not replaced), as a missing or unknown one does
    (no run of it is known here)."""
    states = dict(grid.states)
    for key in provenance.stale:
        if states.get(key) == KeyState.SUCCEEDED:
            states[key] = KeyState.STALE
    return replace(grid, states=states, provenance=provenance)
