"""Where a backfill's runs go, and finding its job in the workspace."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...definitions import JobDefinition
from ...errors import DbxdecError
from ..backends.databricks_backend import RemoteJob, connect, find_job
from ..ledger.ledger import BackendSpec
from ..plan.request import Connection
from ..workspace.target import read_target
from .pause.schedule_pause import restore_stale_pauses, slot_policy
from .pause.trigger_pause import restore_stale_workspace_pauses

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


@dataclass(frozen=True, slots=True)
class ConnectedJob:
    """The deployed job a backfill runs, with the client that reached it; ``cap`` the
    concurrency the backfill may use, ``warnings`` why it changed."""

    client: WorkspaceClient
    remote: RemoteJob
    spec: BackendSpec
    cap: int
    warnings: tuple[str, ...] = ()


def connect_job(
    job: JobDefinition,
    conn: Connection,
    root: Path,
    cap: int,
    client: WorkspaceClient | None = None,
    *,
    pause_schedule: bool = False,
    restore: bool = True,
) -> ConnectedJob:
    """Connect to the workspace of ``conn`` and find ``job``'s deployment, first putting
    back what crashed or ended backfills left paused (not when ``restore`` is off: a reader
    that must change nothing); a job whose schedule runs keeps a slot free unless
    ``pause_schedule`` (:func:`.pause.schedule_pause.slot_policy`).

    Raises:
        UsageError: unknown target, missing credentials, or the job is not deployed.
    """
    target = read_target(root, conn.target) if conn.target else None
    host = conn.host or (target.host if target else None)
    profile = conn.profile or (target.profile if target else None)
    if client is None:
        client = connect(host=host, profile=profile)
    warnings = restore_stale_pauses(client, root, job.name) if restore else []
    remote = find_job(
        client,
        job.name,
        job_id=conn.job_id,
        name_prefix=target.name_prefix if target else None,
        dev_mode=bool(target and target.dev_mode),
    )
    if restore:
        warnings += restore_stale_workspace_pauses(client, job.name, remote.job_id)
    if remote.max_concurrent_runs < cap:
        if remote.queue_enabled:
            warnings.append(
                f"job {remote.name!r} allows {remote.max_concurrent_runs} concurrent runs; "
                f"with queueing on, runs beyond that wait in the job queue"
            )
        else:
            warnings.append(
                f"job {remote.name!r} allows only {remote.max_concurrent_runs} concurrent runs "
                f"and queueing is off: using --max-concurrent {remote.max_concurrent_runs} "
                f"instead of {cap} (set max_concurrent_runs on the job to go faster)"
            )
            cap = max(1, remote.max_concurrent_runs)
    cap, lines = slot_policy(remote, cap, paused=pause_schedule)
    warnings += lines
    spec = BackendSpec(
        "databricks",
        job_id=remote.job_id,
        remote_name=remote.name,
        host=client.config.host,
        profile=profile,
        target=conn.target,
    )
    return ConnectedJob(client, remote, spec, cap, tuple(warnings))


def unreached_workspace(conn: Connection, root: Path) -> BackendSpec:
    """Where a dry run's runs would go when the workspace could not be reached: the host
    of ``--host``, the target or ``DATABRICKS_HOST``/``DATABRICKS_CONFIG_PROFILE``
    (https://docs.databricks.com/aws/dev-tools/auth/env-vars); no job id."""
    try:
        target = read_target(root, conn.target) if conn.target else None
    except DbxdecError:  # the connection failed on it already: that reason is shown
        target = None
    host = conn.host or (target.host if target else None)
    profile = conn.profile or (target.profile if target else None)
    if host is None and profile is None:
        host = os.environ.get("DATABRICKS_HOST") or None
        profile = os.environ.get("DATABRICKS_CONFIG_PROFILE") or None
    return BackendSpec("databricks", host=host, profile=profile, target=conn.target)
