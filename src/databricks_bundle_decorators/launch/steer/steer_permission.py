"""Who may steer a detached backfill: ``CAN_MANAGE_RUN`` (or more) on the backfilled job.

The journal folder cannot be the gate: it lives under ``/Shared``, which every user of
the workspace may write. So ``dbxdec backfill pause|unpause|cancel`` first reads the
job's access control list with the Permissions API (``GET
/api/2.0/permissions/jobs/{job_id}``, ``WorkspaceClient.jobs.get_permissions``) and
the caller's identity and groups (SCIM ``Me``), and refuses unless one of them holds a
level that may manage the job's runs.

The ACL and the caller are read, and the levels weighed, by the one reader of job ACLs
(:mod:`...workspace.job_access`: the jobs access-control table, admins, what the docs
leave open); a 403 on the ACL read is a refusal here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..workspace.job_access import ADMINS_GROUP, RUN_LEVELS, JobAccess, require_level

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

STEERING_LEVELS = RUN_LEVELS
"""Job permission levels that may pause, unpause and cancel a backfill of the job."""
__all__ = ["ADMINS_GROUP", "STEERING_LEVELS", "Steerer", "require_steering"]


@dataclass(frozen=True, slots=True)
class Steerer:
    """Who steers, and the grant that lets them (``"CAN_MANAGE_RUN through group eng"``)."""

    user: str
    grant: str


def require_steering(
    client: WorkspaceClient, job_id: int, *, job: str, action: str, backfill_id: str
) -> Steerer:
    """The caller, if they may ``action`` (pause, unpause, cancel) a backfill of job
    ``job_id``.

    Raises:
        WorkspaceRejected: they may not (one line: who, what is missing, what to do),
            or the workspace refused the credentials.
        WorkspaceUnreachable: the workspace did not answer.
    """

    def refusal(access: JobAccess) -> str:
        return (
            f"{access.principal.name or 'this caller'} may not {action} backfill "
            f"{backfill_id}: that needs CAN_MANAGE_RUN on job {job} (job id {job_id}), granted "
            "to the user or to a group they are directly in; ask an owner of the job to grant "
            "it (a writable /Shared folder is not enough)"
        )

    access = require_level(client, job_id, STEERING_LEVELS, refusal=refusal)
    assert access.grant is not None
    return Steerer(access.principal.name, access.grant)
