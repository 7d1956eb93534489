"""What an app serves and as whom: the project, the workspace, the authorization mode."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..launch.plan.request import Connection
from .scopes import AUTH_PAGE, JOBS_SCOPE_ENV, JOBS_SCOPE_GAP, REQUIRED_SCOPES

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
        jobs_scope: The scope that lets the app call the Jobs API as its viewer
            (``[tool.dbxdec.app] jobs_scope``); ``None``: none is documented, so under user
            authorization the app cannot act as anyone.
        live_seconds: How often a running backfill's page asks for news.
    """

    root: Path
    pipelines: tuple[str, ...] = ()
    connection: Connection | None = None
    user_authorization: bool = False
    granted_scopes: frozenset[str] = field(default_factory=frozenset)
    jobs_scope: str | None = None
    live_seconds: float = 2.0

    @property
    def missing_scopes(self) -> tuple[str, ...]:
        """The scopes the app needs and was not granted (user authorization only)."""
        if not self.user_authorization:
            return ()
        needed = (*REQUIRED_SCOPES, *((self.jobs_scope,) if self.jobs_scope else ()))
        return tuple(s for s in needed if s not in self.granted_scopes)

    @property
    def cannot_act(self) -> str:
        """Why the app cannot act as its viewers under user authorization (``""``: it can):
        a scope it needs was not granted, or the Jobs API has none to grant."""
        if not self.user_authorization:
            return ""
        missing = self.missing_scopes
        if missing:
            return (
                f"the app was not granted the scope{'s' * (len(missing) > 1)} "
                f"{', '.join(missing)} it needs to act as you; a workspace admin adds "
                f"{'them' if len(missing) > 1 else 'it'} to the app's user authorization "
                f"({AUTH_PAGE})"
            )
        if self.jobs_scope is None:
            return f"{JOBS_SCOPE_GAP}, so it cannot launch or steer runs as you"
        return ""


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
        jobs_scope=env.get(JOBS_SCOPE_ENV) or None,
    )
