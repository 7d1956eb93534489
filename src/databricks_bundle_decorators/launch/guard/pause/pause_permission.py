"""Before anything is paused or started: the principal that will write ``jobs/update`` may
edit every job it will pause (IS OWNER and CAN MANAGE only: "Edit job settings", "Job
ACLs" in https://docs.databricks.com/aws/en/security/auth/access-control). A check that
cannot be made never passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....errors import WorkspaceRejected, WorkspaceUnreachable
from ...backends.databricks_backend import RemoteJob
from ...workspace.job_access import EDIT_LEVELS, JobAccess, Principal, caller, require_level
from .schedule_pause import SchedulePause

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


def checked_schedule_pause(
    client: WorkspaceClient,
    remote: RemoteJob,
    *,
    root: Path,
    job: str,
    declared_trigger: Mapping[str, Any] | None,
    force_trigger: bool,
) -> SchedulePause:
    """``--pause-schedule`` of deployed job ``remote``: the caller's CAN MANAGE checked now
    (when something starts the job on its own), and the pause, held at launch.

    Raises:
        WorkspaceRejected: as :func:`require_pausable`.
    """
    if remote.schedule_paused is not None:
        jobs = {job: remote.job_id}
        require_pausable(client, jobs, option="--pause-schedule", what="schedule")
    return SchedulePause(
        client,
        root=root,
        job=job,
        job_id=remote.job_id,
        declared_trigger=declared_trigger,  # jobs/get lacks a table update's condition
        force_trigger=force_trigger,
    )


def require_pausable(
    client: WorkspaceClient,
    jobs: Mapping[str, int],
    *,
    option: str,
    what: str,
    principal: Principal | None = None,
    whose: str = "the caller",
    then: str = "nothing was paused or started",
) -> None:
    """Refuse unless ``principal`` (default: the caller) may pause each of ``jobs``.

    Args:
        jobs: dbxdec job name -> deployed job id of each job to pause.
        what: What is paused, for the line (``"schedule"``, ``"trigger"``).
        principal: Who writes ``jobs/update`` (the controller job's ``run_as``);
            ``whose`` says who that is, ``then`` what the refusal means, for the line.

    Raises:
        WorkspaceRejected: it may not, or the ACL could not be read (exit 4).
    """
    if not jobs:
        return
    try:
        principal = principal or caller(client)
    except WorkspaceUnreachable as exc:
        raise WorkspaceRejected(
            f"{option}: could not tell who pauses ({exc.render()}); {then}: run the command again"
        ) from None
    for job, job_id in jobs.items():

        def refusal(access: JobAccess, job: str = job, job_id: int = job_id) -> str:
            who = f"{whose} {access.principal.name}".strip()
            grant = (
                f"ask an owner of job {job!r} to grant {access.principal.name} CAN_MANAGE on "
                f"it (directly or to a group it is directly in), or run without {option}"
            )
            if not access.readable:
                return (
                    f"{option}: could not read the permissions of job {job!r} (job id {job_id}) "
                    f"for {who}: the workspace refused; pausing its {what} needs CAN_MANAGE, "
                    f"which cannot be checked, so {then}; {grant}"
                )
            return (
                f"{option}: {who} has {access.held} on job {job!r} (job id {job_id}); pausing "
                f"its {what} (jobs/update) needs CAN_MANAGE (or IS_OWNER), so {then}; {grant}"
            )

        try:
            require_level(client, job_id, EDIT_LEVELS, refusal=refusal, principal=principal)
        except WorkspaceUnreachable as exc:
            raise WorkspaceRejected(
                f"{option}: could not read the permissions of job {job!r} (job id {job_id}) "
                f"({exc.render()}); {then}: run the command again"
            ) from None
