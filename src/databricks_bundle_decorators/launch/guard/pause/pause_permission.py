"""Before anything is paused or started: the principal that will write ``jobs/update`` may
edit every job it will pause.

A pause and its restore are ``jobs/update`` requests, which the jobs access-control
table grants to IS OWNER and CAN MANAGE only ("Edit job settings", "Job ACLs" in
https://docs.databricks.com/aws/en/security/auth/access-control; CAN MANAGE RUN may run
and cancel, not edit). Finding out at the pause means a backfill half set up, or -- for
a detached backfill, whose controller holds and restores the triggers as the controller
job's principal -- a trigger paused for good. So ``--pause-schedule``, ``--downstream``
and ``--detach`` first read, through :mod:`...workspace.job_access`, the ACL of each job
they will pause and the groups of the principal that will write (the caller, or the
controller job's ``run_as``), and refuse in one line (exit 4) when it cannot edit one,
or when the ACL cannot be read: a check that cannot be made never passes.
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

__all__ = ["checked_schedule_pause", "require_pausable"]


def checked_schedule_pause(
    client: WorkspaceClient,
    remote: RemoteJob,
    *,
    root: Path,
    job: str,
    declared_trigger: Mapping[str, Any] | None,
    force_trigger: bool,
) -> SchedulePause:
    """``--pause-schedule`` of deployed job ``remote`` (a new backfill or ``--resume``):
    the caller's CAN MANAGE checked now, before anything is paused or started (nothing
    is checked when nothing starts the job on its own), and the pause, held at launch.

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
        client: The workspace of the jobs.
        jobs: dbxdec job name -> deployed job id of each job to pause.
        option: The option that pauses (``--pause-schedule``, ``--downstream``).
        what: What is paused, for the line (``"schedule"``, ``"trigger"``).
        principal: Who writes ``jobs/update`` (the controller job's ``run_as``).
        whose: Who that is, for the line (``"the controller job's principal"``).
        then: What the refusal means, for the line.

    Raises:
        WorkspaceRejected: one line naming the job, the principal, the level it has and
            CAN_MANAGE, or saying the ACL could not be read; the workspace refused the
            credentials or did not answer while reading it (exit 4 either way).
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
