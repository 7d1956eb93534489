"""How code in a job run (a ``CatchUp`` run-history read, the detached backfill's
controller) authenticates to its workspace, never putting a credential in a parameter,
log line, table or file:

1. the SDK's default authentication, on a cluster the runtime's own credentials
   (https://docs.databricks.com/aws/en/dev-tools/auth/unified-auth);
2. else OAuth machine-to-machine as the job's service principal, its ``client_id`` and
   ``client_secret`` read from a secret scope with ``dbutils.secrets.get``
   (https://docs.databricks.com/aws/en/dev-tools/databricks-utils; the SDK's
   ``get_secret`` needs a client already), then the SDK's ``oauth-m2m`` strategy
   (https://docs.databricks.com/aws/en/dev-tools/auth/oauth-m2m).
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
    def get(self, scope: str, key: str) -> str: ...


class DbUtils(Protocol):
    """The part of ``dbutils`` read here: its secrets utility."""

    @property
    def secrets(self) -> SecretsUtility: ...


def job_run_client(secret_scope: str = "", *, dbutils: DbUtils | None = None) -> WorkspaceClient:
    """A workspace client for code in a job run (see the module docs); ``dbutils`` reads
    the secret scope (default: the cluster's). Nothing is sent until the first call.

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
    client id and secret read from ``secret_scope`` with ``dbutils`` (default: the cluster's).

    Raises:
        UsageError: the secret scope cannot be read here (outside a cluster).
    """
    try:
        if dbutils is None:  # pragma: no cover - needs a cluster
            from databricks.sdk.runtime import dbutils as runtime_dbutils

            dbutils = cast("DbUtils", runtime_dbutils)
        secrets = dbutils.secrets
        client_id = secrets.get(secret_scope, CLIENT_ID_KEY)
        client_secret = secrets.get(secret_scope, CLIENT_SECRET_KEY)
    except Exception as exc:  # outside a cluster there is no dbutils.secrets
        raise UsageError(
            f"no default Databricks credentials and the secret scope {secret_scope!r} cannot "
            f"be read here ({type(exc).__name__}): run it as a job run, or set "
            "DATABRICKS_HOST and DATABRICKS_TOKEN"
        ) from None
    return {
        "host": os.environ.get("DATABRICKS_HOST") or _runtime_host(),
        "client_id": client_id,
        "client_secret": client_secret,
        "auth_type": "oauth-m2m",
    }


def _runtime_host() -> str | None:  # pragma: no cover - needs a cluster
    try:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        url = session.conf.get("spark.databricks.workspaceUrl") if session else None
    except Exception:
        return None
    return f"https://{url}" if url else None
