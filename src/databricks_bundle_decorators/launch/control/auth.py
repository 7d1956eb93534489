"""How a controller run authenticates: the SDK's default auth, else a service principal.

The mechanism is the one every job run uses, :mod:`...runtime.core.job_auth` (a task of
a ``CatchUp(since="last_success")`` job reads run history with it too): the SDK's
default authentication (environment, profile, or the runtime's own credentials inside a
cluster), else OAuth machine-to-machine credentials of the service principal the job runs
as, from the secret scope named in ``[tool.dbxdec.controller]`` (read with ``dbutils``,
a parameter the tests fill with a stand-in; the emulator serves the OIDC endpoints). Here
the client is made with :func:`..workspace.workspace.connect`, which probes it once and
turns a refusal or an unreachable workspace into the launcher's errors (exit 4 and 5).

Neither path puts a credential in a parameter, a log line, the journal or the ledger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import DbxdecError, UsageError, WorkspaceRejected
from ...runtime.core.job_auth import (
    CLIENT_ID_KEY,
    CLIENT_SECRET_KEY,
    DbUtils,
    service_principal_settings,
)
from ..workspace.workspace import connect

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = ["CLIENT_ID_KEY", "CLIENT_SECRET_KEY", "DbUtils", "controller_client"]


def controller_client(
    secret_scope: str = "", *, timeout: float | None = None, dbutils: DbUtils | None = None
) -> WorkspaceClient:
    """A workspace client for this controller run (see the module docstring);
    ``timeout`` caps each call's retries and each request (tests set it short).

    Args:
        dbutils: Reads the secret scope (default: the cluster's).

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
            raise UsageError(
                "no default Databricks credentials reach the workspace from this run, and no "
                "secret scope is set: set secret_scope in [tool.dbxdec.controller] (a scope "
                f"holding the service principal's {CLIENT_ID_KEY} and {CLIENT_SECRET_KEY}), "
                "then generate and deploy again"
            ) from None
    settings = service_principal_settings(secret_scope, dbutils)
    try:
        return connect(**settings, **limits)
    except UsageError as exc:  # what the SDK says never holds the secret: it is not sent
        raise UsageError(
            f"the service principal of secret scope {secret_scope!r} cannot authenticate: {exc}"
        ) from None
    except DbxdecError as exc:
        if exc.exit_code != WorkspaceRejected.exit_code and not _token_refused(exc):
            raise
        raise WorkspaceRejected(
            f"the workspace at {settings['host']} refused the OAuth client ID and secret in "
            f"secret scope {secret_scope!r} (keys {CLIENT_ID_KEY!r}, {CLIENT_SECRET_KEY!r}): "
            "store the service principal's current OAuth secret there, then start the "
            "controller again"
        ) from None


def _token_refused(exc: DbxdecError) -> bool:
    """Whether ``exc`` is the token endpoint refusing the client (``invalid_client``,
    RFC 6749 section 5.2; the SDK raises it as ``ValueError("invalid_client: ...")``)."""
    return "invalid_client" in str(exc) or "unauthorized_client" in str(exc)
