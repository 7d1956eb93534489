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
   answers the value base64-encoded (databricks-sdk ``SecretsAPI.get_secret``).
   **Untested**: the emulator runs no Databricks runtime; this path follows the docs.

Neither path puts a credential in a parameter, a log line, the journal or the ledger.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ..workspace.workspace import connect

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

CLIENT_ID_KEY = "client_id"
CLIENT_SECRET_KEY = "client_secret"


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
    client_id, client_secret = _service_principal(secret_scope)
    return connect(
        host=os.environ.get("DATABRICKS_HOST") or _runtime_host(),
        client_id=client_id,
        client_secret=client_secret,
        auth_type="oauth-m2m",
        **limits,
    )


def _service_principal(scope: str) -> tuple[str, str]:  # pragma: no cover - needs a cluster
    try:
        from databricks.sdk.runtime import dbutils

        return (
            dbutils.secrets.get(scope, CLIENT_ID_KEY),
            dbutils.secrets.get(scope, CLIENT_SECRET_KEY),
        )
    except Exception as exc:  # outside a cluster there is no dbutils.secrets
        raise UsageError(
            f"no default Databricks credentials and the secret scope {scope!r} cannot be "
            f"read here ({type(exc).__name__}): run the controller as a job run, or set "
            "DATABRICKS_HOST and DATABRICKS_TOKEN"
        ) from None


def _runtime_host() -> str | None:  # pragma: no cover - needs a cluster
    """The workspace URL a cluster knows itself by (its Spark conf)."""
    try:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        url = session.conf.get("spark.databricks.workspaceUrl") if session else None
    except Exception:
        return None
    return f"https://{url}" if url else None
