"""What an app serves and as whom: the project, the workspace, the authorization mode."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..launch.plan.request import Connection
from .scopes import REQUIRED_SCOPES

APP_PORT = "DATABRICKS_APP_PORT"
"""Set by Databricks Apps: the port the app must listen on
(https://docs.databricks.com/aws/dev-tools/databricks-apps/system-env)."""
FORWARDED_TOKEN = "x-forwarded-access-token"
"""The header carrying the viewer's token under user authorization
(https://docs.databricks.com/aws/dev-tools/databricks-apps/auth)."""
SCOPES_ENV = "DBXDEC_APP_SCOPES"
"""The ``user_api_scopes`` granted to the app, as ``dbxdec generate`` wrote them into
``app.yaml`` (space-separated); unset: user authorization is off."""


@dataclass(frozen=True, slots=True)
class AppSettings:
    """One app's configuration.

    Attributes:
        root: The project folder (local ledgers under ``.dbxdec/``, ``pyproject.toml``).
        pipelines: Pipeline modules besides ``[tool.dbxdec] pipelines``.
        connection: The workspace (target, host, profile); ``None``: local ledgers only.
        user_authorization: Databricks App mode: every workspace call uses the viewer's
            token from :data:`FORWARDED_TOKEN`; without it the app is read-only.
        granted_scopes: The ``user_api_scopes`` the app was granted (user authorization).
        live_seconds: How often a running backfill's page asks for news.
    """

    root: Path
    pipelines: tuple[str, ...] = ()
    connection: Connection | None = None
    user_authorization: bool = False
    granted_scopes: frozenset[str] = field(default_factory=frozenset)
    live_seconds: float = 2.0

    @property
    def missing_scopes(self) -> tuple[str, ...]:
        """The scopes the app needs and was not granted (user authorization only)."""
        if not self.user_authorization:
            return ()
        return tuple(s for s in REQUIRED_SCOPES if s not in self.granted_scopes)


def databricks_app_settings(root: Path, environ: Mapping[str, str] | None = None) -> AppSettings:
    """The settings of the app run by Databricks Apps: the workspace of
    ``DATABRICKS_HOST``, user authorization on, the scopes ``app.yaml`` names."""
    env = os.environ if environ is None else environ
    pipelines = tuple(env.get("DBXDEC_PIPELINES", "").split())
    scopes = frozenset(env.get(SCOPES_ENV, "").split())
    host = env.get("DATABRICKS_HOST")
    return AppSettings(
        root=root,
        pipelines=pipelines,
        connection=Connection(target=env.get("DBXDEC_TARGET") or None, host=host),
        user_authorization=True,
        granted_scopes=scopes,
    )
