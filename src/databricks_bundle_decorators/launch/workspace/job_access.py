"""Which level a principal holds on a job: the one reader of job ACLs.

The ACL comes from the Permissions API (``GET /api/2.0/permissions/jobs/{job_id}``); the
principal and its groups from SCIM (``Me``, or ``Users``/``ServicePrincipals`` filtered
with ``eq``: https://docs.databricks.com/aws/en/admin/users-groups/scim/). Levels ("Job
ACLs" in https://docs.databricks.com/aws/en/security/auth/access-control): *Run now* and
*Cancel run* from CAN MANAGE RUN up, *Edit job settings* only IS OWNER and CAN MANAGE; a
level counts direct or inherited, to the principal or a group SCIM lists it in. Group
``admins`` holds CAN MANAGE on every job
(https://docs.databricks.com/aws/en/jobs/privileges). Left open by the docs, refused
here: a 403 reading the ACL counts as no level; nested groups may go unseen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import WorkspaceRejected
from .workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

RUN_LEVELS = ("CAN_MANAGE_RUN", "IS_OWNER", "CAN_MANAGE")  # run now, cancel, steer
EDIT_LEVELS = ("IS_OWNER", "CAN_MANAGE")  # jobs/update: pause a schedule or trigger
_ORDER = ("CAN_VIEW", "CAN_MANAGE_RUN", "IS_OWNER", "CAN_MANAGE")
ADMINS_GROUP = "admins"


@dataclass(frozen=True, slots=True)
class Principal:
    """A user (``name``: email) or service principal (``name``: application id) and the
    groups SCIM lists it directly in."""

    name: str
    groups: frozenset[str]


@dataclass(frozen=True, slots=True)
class JobAccess:
    """What ``principal`` holds on a job: ``grant`` the first of the asked levels it holds
    and how (``"CAN_MANAGE through group eng"``; ``None``: none), ``held`` its strongest
    level (or ``"no permission"``), ``readable`` whether the job's ACL could be read."""

    principal: Principal
    grant: str | None
    held: str
    readable: bool = True


def caller(client: WorkspaceClient) -> Principal:
    """The identity behind ``client``'s credentials (SCIM ``Me``)."""
    with workspace_errors(client.config.host):
        me = client.current_user.me()
    return Principal(me.user_name or "", _displays(me.groups))


def principal_named(client: WorkspaceClient, name: str) -> Principal:
    """Workspace user ``name`` (an email) or service principal ``name`` (an application
    id), with its groups (none when SCIM does not list it or refuses to)."""
    from databricks.sdk.errors import PermissionDenied

    with workspace_errors(client.config.host):
        try:
            if "@" in name:
                found: Iterable[Any] = client.users.list(filter=f'userName eq "{name}"')
            else:
                found = client.service_principals.list(filter=f'applicationId eq "{name}"')
            first = next(iter(found), None)
        except PermissionDenied:
            first = None
    return Principal(name, _displays(first.groups if first is not None else None))


def runs_as(client: WorkspaceClient, job_id: int) -> Principal:
    """The principal job ``job_id`` runs as, with its groups: ``Job.run_as_user_name`` ("the
    email of an active workspace user or the application ID of a service principal that
    the job runs as ... By default ... the creator of the job if job access control is
    disabled or ... the user with the is_owner permission", databricks-sdk-py
    ``jobs.Job``), else its ``settings.run_as`` (``jobs.JobRunAs``: "If not specified, the
    job runs as the user who created the job"), else its creator. A ``run_as`` group is
    its own group."""
    with workspace_errors(client.config.host):
        job = client.jobs.get(job_id)
    run_as = job.settings.run_as if job.settings is not None else None
    if run_as is not None and run_as.group_name:
        return Principal(run_as.group_name, frozenset({run_as.group_name}))
    name = (
        job.run_as_user_name
        or (run_as.user_name or run_as.service_principal_name if run_as is not None else None)
        or job.creator_user_name
        or ""
    )
    return principal_named(client, name)


def job_access(
    client: WorkspaceClient,
    job_id: int,
    levels: tuple[str, ...],
    *,
    principal: Principal | None = None,
) -> JobAccess:
    """What ``principal`` (default: the caller) holds on job ``job_id``, and which of
    ``levels`` (:data:`RUN_LEVELS`, :data:`EDIT_LEVELS`) if any.

    Raises:
        WorkspaceRejected, WorkspaceUnreachable: refused, or no answer.
    """
    from databricks.sdk.errors import PermissionDenied

    who = principal or caller(client)
    readable = True
    with workspace_errors(client.config.host):
        try:
            acl = client.jobs.get_permissions(str(job_id)).access_control_list or []
        except PermissionDenied:  # who may read an ACL is undocumented: read as "no level"
            acl, readable = [], False
    held: dict[str, str] = {}  # level -> how it is held
    for entry in acl:
        if entry.group_name is not None:
            mine = entry.group_name in who.groups
            via = f" through group {entry.group_name}"
        else:
            mine = who.name in (entry.user_name, entry.service_principal_name)
            via = ""
        if not mine:
            continue
        for permission in entry.all_permissions or ():
            if permission.permission_level is not None:
                held.setdefault(permission.permission_level.value, f"{{}}{via}")
    if ADMINS_GROUP in who.groups:
        held.setdefault("CAN_MANAGE", "workspace admin (group admins)")
    grant = next((held[level].format(level) for level in levels if level in held), None)
    strongest = [level for level in _ORDER if level in held]
    return JobAccess(who, grant, strongest[-1] if strongest else "no permission", readable)


def require_level(
    client: WorkspaceClient,
    job_id: int,
    levels: tuple[str, ...],
    *,
    refusal: Callable[[JobAccess], str],
    principal: Principal | None = None,
) -> JobAccess:
    """:func:`job_access`, refused unless ``principal`` holds one of ``levels``.

    Raises:
        WorkspaceRejected: it does not (``refusal``'s one line, exit 4), or refused.
        WorkspaceUnreachable: the workspace did not answer.
    """
    access = job_access(client, job_id, levels, principal=principal)
    if access.grant is None:
        raise WorkspaceRejected(refusal(access))
    return access


def _displays(groups: Iterable[Any] | None) -> frozenset[str]:
    return frozenset(g.display for g in groups or () if g.display)
