"""How a controller run authenticates: the SDK's default auth, else a service principal.

1. **The SDK's default authentication** (:func:`..workspace.workspace.connect` with no
   arguments): ``DATABRICKS_HOST`` / ``DATABRICKS_TOKEN`` and the other environment
   variables, a configuration profile, and -- inside a Databricks cluster, where
   ``DATABRICKS_RUNTIME_VERSION`` is set -- the runtime's own credentials (databricks-sdk
   ``credentials_provider.runtime_native_auth``, the ``runtime`` strategy of its default
   chain: https://docs.databricks.com/aws/en/dev-tools/auth/unified-auth). The emulator
   hands its token to the controller process this way, in the environment.
2. Otherwise **OAuth machine-to-machine** credentials of the service principal the job
   runs as (``run_as``), read from the secret scope named in ``[tool.dbxdec.controller]``
   (keys ``client_id`` and ``client_secret``) with ``dbutils.secrets.get``, which a wheel
   task reaches through ``databricks.sdk.runtime`` on a cluster
   (https://docs.databricks.com/aws/en/dev-tools/databricks-utils: "secrets utility").
   The SDK's ``w.secrets.get_secret`` is no way out: it needs a client already, and
   answers the value base64-encoded (databricks-sdk ``SecretsAPI.get_secret``). The SDK
   then gets its tokens with the ``oauth-m2m`` strategy: the token endpoint from the
   workspace's OIDC discovery document, a ``client_credentials`` grant
   (https://docs.databricks.com/aws/en/dev-tools/auth/oauth-m2m). ``dbutils`` is a
   parameter (:func:`controller_client`): the tests hand in a stand-in whose
   ``secrets.get`` answers a service principal the emulator knows, and the emulator
   serves the OIDC endpoints; only :func:`_runtime_dbutils` needs a cluster.

Neither path puts a credential in a parameter, a log line, the journal or the ledger.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol, cast

from ...errors import DbxdecError, UsageError, WorkspaceRejected
from ..workspace.workspace import connect

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

CLIENT_ID_KEY = "client_id"
CLIENT_SECRET_KEY = "client_secret"


class SecretsUtility(Protocol):
    """``dbutils.secrets`` as the controller uses it: ``get(scope, key)``."""

    def get(self, scope: str, key: str) -> str: ...


class DbUtils(Protocol):
    """The part of ``dbutils`` the controller reads: its secrets utility."""

    @property
    def secrets(self) -> SecretsUtility: ...


def controller_client(
    secret_scope: str = "", *, timeout: float | None = None, dbutils: DbUtils | None = None
) -> WorkspaceClient:
    """A workspace client for this controller run (see the module docstring);
    ``timeout`` caps each call's retries and each request (tests set it short).

    Args:
        dbutils: Reads the secret scope (default: the cluster's, :func:`_runtime_dbutils`).

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
    client_id, client_secret = _service_principal(secret_scope, dbutils)
    host = os.environ.get("DATABRICKS_HOST") or _runtime_host()
    try:
        return connect(
            host=host,
            client_id=client_id,
            client_secret=client_secret,
            auth_type="oauth-m2m",
            **limits,
        )
    except UsageError as exc:  # what the SDK says never holds the secret: it is not sent
        raise UsageError(
            f"the service principal of secret scope {secret_scope!r} cannot authenticate: {exc}"
        ) from None
    except DbxdecError as exc:
        if exc.exit_code != WorkspaceRejected.exit_code and not _token_refused(exc):
            raise
        raise WorkspaceRejected(
            f"the workspace at {host} refused the OAuth client ID and secret in secret scope "
            f"{secret_scope!r} (keys {CLIENT_ID_KEY!r}, {CLIENT_SECRET_KEY!r}): store the "
            "service principal's current OAuth secret there, then start the controller again"
        ) from None


def _token_refused(exc: DbxdecError) -> bool:
    """Whether ``exc`` is the token endpoint refusing the client (``invalid_client``,
    RFC 6749 section 5.2; the SDK raises it as ``ValueError("invalid_client: ...")``)."""
    return "invalid_client" in str(exc) or "unauthorized_client" in str(exc)


def _service_principal(scope: str, dbutils: DbUtils | None) -> tuple[str, str]:
    try:
        utils = dbutils if dbutils is not None else _runtime_dbutils()
        return utils.secrets.get(scope, CLIENT_ID_KEY), utils.secrets.get(scope, CLIENT_SECRET_KEY)
    except Exception as exc:  # outside a cluster there is no dbutils.secrets
        raise UsageError(
            f"no default Databricks credentials and the secret scope {scope!r} cannot be "
            f"read here ({type(exc).__name__}): run the controller as a job run, or set "
            "DATABRICKS_HOST and DATABRICKS_TOKEN"
        ) from None


def _runtime_dbutils() -> DbUtils:  # pragma: no cover - needs a cluster
    """The cluster's ``dbutils`` (a wheel task reaches it through ``databricks.sdk.runtime``)."""
    from databricks.sdk.runtime import dbutils

    return cast("DbUtils", dbutils)


def _runtime_host() -> str | None:  # pragma: no cover - needs a cluster
    """The workspace URL a cluster knows itself by (its Spark conf)."""
    try:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        url = session.conf.get("spark.databricks.workspaceUrl") if session else None
    except Exception:
        return None
    return f"https://{url}" if url else None
