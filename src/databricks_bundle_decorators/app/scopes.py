"""The ``user_api_scopes`` the app needs under user authorization."""

from __future__ import annotations

AUTH_PAGE = "https://docs.databricks.com/aws/dev-tools/databricks-apps/auth"
REQUIRED_SCOPES: tuple[str, ...] = ("iam.current-user:read", "iam.access-control:read")
"""Placeholder until checked against the Databricks Apps authorization page."""
