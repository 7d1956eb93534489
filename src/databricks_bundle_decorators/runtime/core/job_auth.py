"""How code inside a job run authenticates to its workspace: the SDK's default auth, else
a service principal.

The one mechanism both a task (``CatchUp(since="last_success")`` reads its job's run
history) and the controller of a detached backfill (``launch/control/auth.py``) use:

1. **The SDK's default authentication**: ``DATABRICKS_HOST`` / ``DATABRICKS_TOKEN`` and
   the other environment variables, a configuration profile, and -- inside a Databricks
   cluster, where ``DATABRICKS_RUNTIME_VERSION`` is set -- the runtime's own credentials
   (databricks-sdk ``credentials_provider.runtime_native_auth``, the ``runtime`` strategy
   of its default chain: https://docs.databricks.com/aws/en/dev-tools/auth/unified-auth).
   The emulator's tests hand their token over this way, in the environment.
2. Otherwise **OAuth machine-to-machine** credentials of the service principal the job
   runs as (``run_as``), read from a secret scope (keys ``client_id`` and
   ``client_secret``) with ``dbutils.secrets.get``, which a wheel task reaches through
   ``databricks.sdk.runtime`` on a cluster
   (https://docs.databricks.com/aws/en/dev-tools/databricks-utils: "secrets utility").
   The SDK's ``w.secrets.get_secret`` is no way out: it needs a client already, and
   answers the value base64-encoded (databricks-sdk ``SecretsAPI.get_secret``).
   **Untested**: the emulator runs no Databricks runtime; this path follows the docs.

Neither path puts a credential in a parameter, a log line, a table or a file.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...errors import UsageError

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

CLIENT_ID_KEY = "client_id"
CLIENT_SECRET_KEY = "client_secret"


def job_run_client(secret_scope: str = "", **settings: Any) -> WorkspaceClient:
    """A workspace client for code in a job run (see the module docstring); ``settings``
    go to the SDK's ``Config`` (timeouts). Nothing is sent until the first call.

    Raises:
        UsageError: no credentials by default auth and no usable secret scope (one line).
    """
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.config import Config

    try:
        return WorkspaceClient(config=Config(**settings))
    except Exception as exc:  # the SDK raises ValueError subclasses with long texts
        if not secret_scope:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0].split(", please")[0]
            raise UsageError(
                f"no Databricks credentials in this job run ({reason[:160]}): inside a job "
                "the runtime's own credentials are used; elsewhere set DATABRICKS_HOST and "
                "DATABRICKS_TOKEN"
            ) from None
    return WorkspaceClient(config=Config(**service_principal_settings(secret_scope), **settings))


def service_principal_settings(secret_scope: str) -> dict[str, Any]:
    """The SDK ``Config`` settings of the job's service principal (OAuth M2M), its
    client id and secret read from ``secret_scope`` (see the module docstring).

    Raises:
        UsageError: the secret scope cannot be read here (outside a cluster).
    """
    client_id, client_secret = _service_principal(secret_scope)
    return {
        "host": os.environ.get("DATABRICKS_HOST") or _runtime_host(),
        "client_id": client_id,
        "client_secret": client_secret,
        "auth_type": "oauth-m2m",
    }


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
            f"read here ({type(exc).__name__}): run it as a job run, or set "
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
