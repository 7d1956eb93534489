"""Who may steer a detached backfill: ``CAN_MANAGE_RUN`` (or more) on the backfilled job.

The journal folder cannot be the gate: it lives under ``/Shared``, which every user of
the workspace may write. So ``dbxdec backfill pause|unpause|cancel`` first reads the
job's access control list with the Permissions API (``GET
/api/2.0/permissions/jobs/{job_id}``, ``WorkspaceClient.jobs.get_permissions``) and
the caller's identity and groups (SCIM ``Me``), and refuses unless one of them holds a
level that may manage the job's runs.

The levels, from the jobs access-control table ("Job ACLs" in
https://docs.databricks.com/aws/en/security/auth/access-control, read as
https://docs.azure.cn/en-us/databricks/security/auth-authz/access-control/jobs-acl:
*Run now* and *Cancel run* are granted from CAN MANAGE RUN up): CAN MANAGE
RUN, IS OWNER and CAN MANAGE allow; CAN VIEW and no permission do not. A level counts
whether it is granted directly or inherited (``all_permissions[].inherited``), to the
caller (``user_name``, or ``service_principal_name`` for a service principal, whose
``Me.userName`` is its application id) or to a group the caller's ``Me`` lists.

Workspace admins: the docs say they have CAN MANAGE on every job
(https://docs.databricks.com/aws/en/jobs/privileges, "Default privileges for jobs"), and
that the system group ``admins`` holds the workspace admins
(https://docs.databricks.com/aws/en/admin/users-groups/groups). So a caller whose ``Me``
lists the group ``admins`` may steer even when the job's ACL does not show that grant.

What the docs leave open, and what dbxdec does then (the refusal side each time):
who may read a job's ACL is not documented, so a 403 on that read is a refusal; and
whether ``Me`` lists groups reached through nested groups is not documented, so a grant
to a group the caller is in only through another group may not be seen -- the refusal
then says to grant the level to the user or to a group they are directly in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import WorkspaceRejected
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

STEERING_LEVELS = ("CAN_MANAGE_RUN", "IS_OWNER", "CAN_MANAGE")
"""Job permission levels that may pause, unpause and cancel a backfill of the job."""
ADMINS_GROUP = "admins"
"""The workspace's system group of workspace admins."""


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
    from databricks.sdk.errors import PermissionDenied

    with workspace_errors(client.config.host):
        me = client.current_user.me()
        user = me.user_name or ""
        groups = {g.display for g in me.groups or () if g.display}
        try:
            acl = client.jobs.get_permissions(str(job_id)).access_control_list or []
        except PermissionDenied:  # who may read an ACL is undocumented: read as "no level"
            acl = []
    for entry in acl:
        if entry.group_name is not None:
            mine = entry.group_name in groups
            via = f" through group {entry.group_name}"
        else:
            mine = user in (entry.user_name, entry.service_principal_name)
            via = ""
        levels = [
            p.permission_level.value for p in entry.all_permissions or () if p.permission_level
        ]
        allowed = [level for level in STEERING_LEVELS if level in levels]
        if mine and allowed:
            return Steerer(user, f"{allowed[0]}{via}")
    if ADMINS_GROUP in groups:
        return Steerer(user, "workspace admin (group admins)")
    raise WorkspaceRejected(
        f"{user or 'this caller'} may not {action} backfill {backfill_id}: that needs "
        f"CAN_MANAGE_RUN on job {job} (job id {job_id}), granted to the user or to a group "
        "they are directly in; ask an owner of the job to grant it (a writable /Shared "
        "folder is not enough)"
    )
