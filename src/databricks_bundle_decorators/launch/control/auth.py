"""How a controller run authenticates: the SDK's default auth, else a service principal.

The mechanism is the one every job run uses, :mod:`...runtime.core.job_auth` (a task of
a ``CatchUp(since="last_success")`` job reads run history with it too): the SDK's
default authentication (environment, profile, or the runtime's own credentials inside a
cluster), else OAuth machine-to-machine credentials of the service principal the job runs
as, from the secret scope named in ``[tool.dbxdec.controller]``. Here the client is made
with :func:`..workspace.workspace.connect`, which probes it once and turns a refusal or
an unreachable workspace into the launcher's errors (exit 4 and 5).

Neither path puts a credential in a parameter, a log line, the journal or the ledger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...runtime.core.job_auth import (
    CLIENT_ID_KEY,
    CLIENT_SECRET_KEY,
    service_principal_settings,
)
from ..workspace.workspace import connect

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = ["CLIENT_ID_KEY", "CLIENT_SECRET_KEY", "controller_client"]


def controller_client(secret_scope: str = "", *, timeout: float | None = None) -> WorkspaceClient:
    """A workspace client for this controller run (see the module docstring);
    ``timeout`` caps each call's retries and each request (tests set it short).

    Raises:
        UsageError: no credentials by default auth and no usable secret scope.
        WorkspaceRejected: the workspace refused the credentials (exit 4).
        WorkspaceUnreachable: the workspace did not answer (exit 5).
    """
    limits: dict[str, Any] = {}
    if timeout is not None:
        limits = {"retry_timeout_seconds": int(max(1, timeout)), "http_timeout_seconds": timeout}
    try:
        return connect(**limits)
    except UsageError:
        if not secret_scope:
            raise
    return connect(**service_principal_settings(secret_scope), **limits)
