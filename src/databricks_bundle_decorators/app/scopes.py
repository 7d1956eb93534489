"""The ``user_api_scopes`` the app needs under user authorization
(https://docs.databricks.com/aws/dev-tools/databricks-apps/auth, "User authorization").

Defined beside the app resource that ``dbxdec generate`` writes
(:mod:`databricks_bundle_decorators.bundle.app_resource`: the bundle layer writes them, the
app reads them back, and a layer never imports one below it); each scope there says which
of the app's calls it covers. The Jobs API has no scope on that page:
:data:`JOBS_SCOPE_GAP`.
"""

from __future__ import annotations

from ..bundle.app_resource import (
    AUTH_PAGE,
    JOBS_SCOPE_GAP,
    REQUIRED_SCOPES,
    USER_API_SCOPES,
    UserApiScope,
)

__all__ = ["AUTH_PAGE", "JOBS_SCOPE_GAP", "REQUIRED_SCOPES", "USER_API_SCOPES", "UserApiScope"]
