"""Who is looking, through which credentials, and what they may do.

On this machine (``dbxdec app``) the viewer is whoever owns the credentials ``dbxdec``
uses (``-t TARGET``, ``--profile``, ``DATABRICKS_HOST``/``DATABRICKS_TOKEN``). As a
Databricks App with user authorization, the viewer is the person whose token the
Databricks Apps proxy forwards in ``x-forwarded-access-token``
(https://docs.databricks.com/aws/dev-tools/databricks-apps/auth, "User authorization"):
every workspace call of their request is made with it, so the workspace's own job ACLs
decide what they see and may do. Without that header (user authorization off) or without a
scope the app needs, the app is read-only and says why on every page; it then reads with
the app's own service principal (``DATABRICKS_CLIENT_ID``/``DATABRICKS_CLIENT_SECRET``,
https://docs.databricks.com/aws/dev-tools/databricks-apps/system-env) and does nothing
with it that changes anything. With the viewer's token but without the Jobs API's scope
(the documented list has none: :data:`.scopes.JOBS_SCOPE_GAP`), their token still says who
they are and what they hold on each job (the two default scopes), and the principal reads
only the jobs they may view: it is used for nothing the viewer could not do.

The token is held in memory only, keyed by its SHA-256 digest; it never reaches a page,
a log line or a URL.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import WorkspaceRejected
from ..launch.workspace.job_access import RUN_LEVELS, Principal, caller, job_access
from ..launch.workspace.target import read_target
from ..launch.workspace.workspace import connect
from .scopes import AUTH_PAGE
from .settings import AppSettings

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

CLIENT_SECONDS = 600.0
"""How long a viewer's client (and who they are) is reused before it is made again."""
MAX_CLIENTS = 64
VIEW_LEVELS = ("CAN_VIEW", *RUN_LEVELS)
"""Any level on a job lets a person see it and its runs (the jobs access-control table)."""


@dataclass(frozen=True, slots=True)
class Viewer:
    """The person behind one request.

    Attributes:
        name: Who they are to the workspace (an email or application id); ``""`` when
            the app reads no workspace.
        client: The workspace, as them; ``None`` when the app reads local ledgers only.
        read_only: Why nothing may be changed from this app now (shown on every page);
            ``""`` when actions are offered (each still checked against the job's ACL).
        acting_as: Whose credentials the app uses for this viewer, in words.
        identity: The viewer's own client when ``client`` is the app's principal reading
            for them: what they may view is checked with it first.
    """

    name: str
    client: WorkspaceClient | None
    read_only: str
    acting_as: str
    identity: WorkspaceClient | None = None
    principal: Principal | None = None
    """Who ``name`` is with their groups, read once (SCIM Me) when the viewer was made:
    each permission check reads only the job's ACL, not Me again."""
    _viewable: dict[int, bool] = field(default_factory=dict, repr=False, compare=False)

    def may_view(self, job_id: int) -> bool:
        """Whether the viewer holds a level on job ``job_id`` (always, when the workspace
        answers as them: it enforces that itself)."""
        if self.identity is None:
            return True
        if job_id not in self._viewable:
            access = job_access(self.identity, job_id, VIEW_LEVELS, principal=self.principal)
            self._viewable[job_id] = access.grant is not None
        return self._viewable[job_id]

    def require_view(self, job_id: int, job: str) -> None:
        """Refuse (one line) unless the viewer may view job ``job_id``.

        Raises:
            WorkspaceRejected: they hold no level on it.
        """
        if not self.may_view(job_id):
            raise WorkspaceRejected(
                f"{self.name or 'you'} may not view job {job} (job id {job_id}): that needs "
                "CAN_VIEW on it; ask an owner of the job"
            )

    def refusal(self, job_id: int, job: str, action: str) -> str:
        """Why this viewer may not ``action`` a backfill of job ``job_id`` (``""``: they may).

        Needs CAN_MANAGE_RUN, IS_OWNER or CAN_MANAGE on the job, as the command line does.
        """
        if self.read_only:
            return self.read_only
        if self.client is None:
            return ""
        access = job_access(self.client, job_id, RUN_LEVELS, principal=self.principal)
        if access.grant is not None:
            return ""
        return (
            f"{self.name or 'you'} may not {action} backfills of job {job}: that needs "
            f"CAN_MANAGE_RUN on it (you hold {access.held})"
        )


class Viewers:
    """Makes (and briefly keeps) the :class:`Viewer` of each request."""

    def __init__(
        self, settings: AppSettings, make_client: Callable[..., WorkspaceClient] = connect
    ) -> None:
        self._settings = settings
        self._connect = make_client
        self._lock = threading.Lock()
        self._made: OrderedDict[str, tuple[float, Viewer]] = OrderedDict()

    def of(self, forwarded_token: str | None) -> Viewer:
        """The viewer of a request that carried ``forwarded_token`` (ignored unless the
        app runs with user authorization).

        Raises:
            UsageError, WorkspaceRejected, WorkspaceUnreachable: the credentials do not work.
        """
        settings = self._settings
        if settings.connection is None:
            return Viewer("", None, "", "local ledgers only")
        if not settings.user_authorization:
            return self._cached("local", self._local)
        if not forwarded_token:
            return self._cached("app", self._app_principal)
        digest = hashlib.sha256(forwarded_token.encode()).hexdigest()
        return self._cached(digest, lambda: self._user(forwarded_token))

    def _cached(self, key: str, make: Callable[[], Viewer]) -> Viewer:
        now = time.monotonic()
        with self._lock:
            found = self._made.get(key)
            if found is not None and now - found[0] < CLIENT_SECONDS:
                self._made.move_to_end(key)
                return found[1]
        viewer = make()
        with self._lock:
            self._made[key] = (now, viewer)
            while len(self._made) > MAX_CLIENTS:
                self._made.popitem(last=False)
        return viewer

    def _host_profile(self) -> tuple[str | None, str | None]:
        connection = self._settings.connection
        assert connection is not None
        target = read_target(self._settings.root, connection.target) if connection.target else None
        host = connection.host or (target.host if target else None)
        return host, connection.profile or (target.profile if target else None)

    def _local(self) -> Viewer:
        host, profile = self._host_profile()
        client = self._connect(host=host, profile=profile)
        who = caller(client)
        how = f"your own credentials ({f'profile {profile}' if profile else client.config.host})"
        return Viewer(who.name, client, "", how, principal=who)

    def _app_principal(self) -> Viewer:
        host, _ = self._host_profile()
        client = self._connect(host=host)
        reason = (
            "Read-only: user authorization is off for this app, so it cannot act as you; pages "
            "are read as the app's own service principal. A workspace admin enables user "
            f"authorization and grants the app its scopes ({AUTH_PAGE})."
        )
        return Viewer(caller(client).name, client, reason, "the app's own service principal")

    def _user(self, token: str) -> Viewer:
        host, _ = self._host_profile()
        mine = self._connect(host=host, token=token, auth_type="pat")
        who = caller(mine)
        gap = self._settings.cannot_act
        if not gap:
            return Viewer(who.name, mine, "", "your Databricks identity", principal=who)
        reader = self._connect(host=host)
        reason = (
            f"Read-only: {gap}. Pages show the jobs your own permissions let you view, read "
            "as the app's own service principal."
        )
        acting = "the app's principal, for the jobs you may view"
        return Viewer(who.name, reader, reason, acting, mine, principal=who)
