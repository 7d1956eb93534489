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
   answers the value base64-encoded (databricks-sdk ``SecretsAPI.get_secret``). The SDK
   then gets its tokens with the ``oauth-m2m`` strategy: the token endpoint from the
   workspace's OIDC discovery document, a ``client_credentials`` grant
   (https://docs.databricks.com/aws/en/dev-tools/auth/oauth-m2m). ``dbutils`` is a
   parameter: the tests hand in a stand-in whose ``secrets.get`` answers a service
   principal the emulator knows, and the emulator serves the OIDC endpoints; only
   :func:`_runtime_dbutils` needs a cluster.

Neither path puts a credential in a parameter, a log line, a table or a file.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol, cast

from ...errors import UsageError

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

CLIENT_ID_KEY = "client_id"
CLIENT_SECRET_KEY = "client_secret"


class SecretsUtility(Protocol):
    """``dbutils.secrets`` as a job run uses it: ``get(scope, key)``."""

    def get(self, scope: str, key: str) -> str: ...


class DbUtils(Protocol):
    """The part of ``dbutils`` a job run reads here: its secrets utility."""

    @property
    def secrets(self) -> SecretsUtility: ...


def job_run_client(secret_scope: str = "", *, dbutils: DbUtils | None = None) -> WorkspaceClient:
    """A workspace client for code in a job run (see the module docstring); ``dbutils``
    reads the secret scope (default: the cluster's). Nothing is sent until the first call.

    Raises:
        UsageError: no credentials by default auth and no usable secret scope (one line).
    """
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.config import Config

    try:
        return WorkspaceClient(config=Config())
    except Exception as exc:  # the SDK raises ValueError subclasses with long texts
        if not secret_scope:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0].split(", please")[0]
            raise UsageError(
                f"no Databricks credentials in this job run ({reason[:160]}): inside a job "
                "the runtime's own credentials are used; elsewhere set DATABRICKS_HOST and "
                "DATABRICKS_TOKEN"
            ) from None
    principal = service_principal_settings(secret_scope, dbutils)
    return WorkspaceClient(config=Config(**principal))


def service_principal_settings(secret_scope: str, dbutils: DbUtils | None = None) -> dict[str, Any]:
    """The SDK ``Config`` settings of the job's service principal (OAuth M2M), its
    client id and secret read from ``secret_scope`` (see the module docstring).

    Args:
        dbutils: Reads the secret scope (default: the cluster's, :func:`_runtime_dbutils`).

    Raises:
        UsageError: the secret scope cannot be read here (outside a cluster).
    """
    client_id, client_secret = _service_principal(secret_scope, dbutils)
    return {
        "host": os.environ.get("DATABRICKS_HOST") or _runtime_host(),
        "client_id": client_id,
        "client_secret": client_secret,
        "auth_type": "oauth-m2m",
    }


def _service_principal(scope: str, dbutils: DbUtils | None) -> tuple[str, str]:
    try:
        utils = dbutils if dbutils is not None else _runtime_dbutils()
        return utils.secrets.get(scope, CLIENT_ID_KEY), utils.secrets.get(scope, CLIENT_SECRET_KEY)
    except Exception as exc:  # outside a cluster there is no dbutils.secrets
        raise UsageError(
            f"no default Databricks credentials and the secret scope {scope!r} cannot be "
            f"read here ({type(exc).__name__}): run it as a job run, or set "
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
