"""``dbxdec status``: key states of a job from run history or ledgers, as a grid."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..definitions import JobDefinition
from .databricks_backend import run_history
from .history import KeyHistory, key_history
from .launcher import DEFAULT_MAX_CONCURRENT, Connection, connect_job
from .ledger import ledger_observations, list_ledgers
from .plan import build_plan
from .status_grid import PartitionGrid, build_grid

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


def job_history(
    job: JobDefinition,
    connection: Connection,
    *,
    root: Path,
    client: WorkspaceClient | None = None,
) -> KeyHistory:
    """Key states of ``job`` from the local ledgers or the workspace's run history.

    Raises:
        UsageError: the job has no backfill definition, or the workspace is unreachable.
    """
    if job.backfill is None:
        build_plan(job)  # raises the "no backfill definition" error
    assert job.backfill is not None
    if connection.local:
        return key_history(ledger_observations(list_ledgers(root, job.name)))
    client, spec, _, _ = connect_job(job, connection, root, DEFAULT_MAX_CONCURRENT, client)
    assert spec.job_id is not None
    return key_history(run_history(client, spec.job_id, job.backfill))


def partition_grid(
    job: JobDefinition, history: KeyHistory, *, start: str | None, end: str | None
) -> PartitionGrid:
    """The status grid of ``job``'s keys from ``start`` to ``end`` (inclusive).

    Raises:
        UsageError: a bound is malformed or outside the definition.
    """
    plan = build_plan(job, start=start, end=end)
    assert job.backfill is not None
    return build_grid(job.name, job.backfill.kind, plan.keys, history)
