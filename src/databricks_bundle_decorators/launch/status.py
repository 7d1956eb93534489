"""``dbxdec status``: key states of a job from run history or ledgers, as a grid."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..definitions import JobDefinition
from .connection import Connection, connect_job
from .history import KeyHistory
from .observed import observed_history
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
        return observed_history(job.name, job.backfill, root=root)
    found = connect_job(job, connection, root, cap=1, client=client)
    return observed_history(
        job.name, job.backfill, root=root, client=found.client, job_id=found.remote.job_id
    )


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
