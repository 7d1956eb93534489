"""The backfill app as a Databricks App: the ``resources.apps.<key>`` resource that
``dbxdec generate`` and ``load_resources`` add when ``[tool.dbxdec.app]`` is set, and the
two files Databricks Apps read from the app's source folder, ``app.yaml`` and
``requirements.txt``.

The source folder is the project root: the app needs what the root holds and the bundle
already syncs to the workspace (``pyproject.toml`` with ``[tool.dbxdec]``, the pipelines
under ``src/``, ``databricks.yml`` to find the target's deployed job names, and dbxdec's
wheel in ``wheels/``). Everything here is also what the app reads back
(:mod:`databricks_bundle_decorators.app.settings`), so the names crossing that boundary
live in this one module.

Databricks facts kept here, each from the page cited beside it:

- ``app.yaml``: ``command`` is a list, run without a shell; ``env`` entries have ``name``
  and ``value`` or ``valueFrom``
  (https://docs.databricks.com/aws/dev-tools/databricks-apps/app-runtime).
- ``requirements.txt`` is installed with pip, and wins over a ``pyproject.toml`` in the same
  folder ("requirements.txt always takes precedence",
  https://docs.databricks.com/aws/dev-tools/databricks-apps/dependencies).
- Under user authorization every call is limited to the ``user_api_scopes`` granted to the
  app ("Databricks blocks access outside approved scopes even if the user has permission",
  https://docs.databricks.com/aws/dev-tools/databricks-apps/auth).
- The app's own service principal can reach only what is granted to it, e.g. as an app
  resource (same page, "App authorization"). dbxdec's app acts with the viewer's token;
  it uses its principal only to *read* when user authorization is off (read-only, with
  a banner: ``app/viewer.py``), so the resource grants it ``CAN_VIEW`` on the bundle's
  jobs and nothing else (``resources.App.resources[].job``, whose permissions are
  ``CAN_MANAGE``, ``IS_OWNER``, ``CAN_MANAGE_RUN``, ``CAN_VIEW`` in the bundle schema).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .framework_wheel import is_remote
from .options import CodegenOptions, is_framework
from .project import AppOptions, ProjectConfig
from .yaml_files import is_generated, render_document, write_generated, write_if_changed

AUTH_PAGE = "https://docs.databricks.com/aws/dev-tools/databricks-apps/auth"


@dataclass(frozen=True, slots=True)
class UserApiScope:
    """One ``user_api_scopes`` entry: its ``name`` as the authorization page lists it, and
    the calls of dbxdec's app it ``covers``."""

    name: str
    covers: str


USER_API_SCOPES: tuple[UserApiScope, ...] = (
    UserApiScope(
        "iam.current-user:read",
        "who the viewer is: SCIM Me (current_user.me), for 'started by' and job access; "
        "one of the two scopes the page names as granted by default",
    ),
    UserApiScope(
        "iam.access-control:read",
        "the viewer's permission level on each job (jobs.get_permissions), which decides "
        "the actions the page offers; the page's other default scope",
    ),
    UserApiScope(
        "workspace.workspace",
        "the journal of detached backfills: workspace files under /Shared/dbxdec/backfills "
        "or the user folder, read and appended with the Workspace API (list, export, "
        "import, mkdirs, delete; launch/ledger/place.py); listed among the page's SDK scopes",
    ),
)
"""The scopes the app asks for (https://docs.databricks.com/aws/dev-tools/databricks-apps/auth,
"User authorization", the scope list).

The Jobs API (jobs/list, jobs/get, runs/list, runs/get, run-now, runs/cancel) is the one
dbxdec needs that the page's list does not cover: it lists no Jobs scope and names no
catch-all scope for user authorization, so none is asked for here (no scope name is made
up). Until Databricks adds one, a viewer's Jobs calls are refused under user
authorization and the app shows what it could read; see :data:`JOBS_SCOPE_GAP`. (Databricks'
own AppKit jobs plugin runs jobs as the app's principal and "does not support on-behalf-of
(OBO) user execution": databricks/databricks-agent-skills,
skills/databricks-apps/references/appkit/jobs.md.)

How the list was read: the page's scope table came through in excerpts, so each name was
cross-checked: the two defaults, ``iam.current-user:read`` and ``iam.access-control:read``,
against Databricks' platform guide for apps (databricks/databricks-agent-skills,
skills/databricks-apps/references/platform-guide.md: "sql", "dashboards.genie",
"files.files" and the two defaults); ``workspace.workspace`` against a dated reproduction
of the page's current list (API scopes ``ai-gateway``, ``apps``, ``files``, ``genie``,
``model-serving``, ``postgres``, ``sql``, ``vector-search``; SDK scopes ``catalog.*`` and
``workspace.workspace``). ``files``/``files.files`` is the Files API, not the Workspace API
the journal uses.
"""

REQUIRED_SCOPES: tuple[str, ...] = tuple(scope.name for scope in USER_API_SCOPES)
"""The names of :data:`USER_API_SCOPES`: ``user_api_scopes`` of the generated resource and
``DBXDEC_APP_SCOPES`` of its ``app.yaml``."""

JOBS_SCOPE_GAP = (
    "the Databricks Apps user-authorization scope list has no scope for the Jobs API and no "
    f"catch-all ({AUTH_PAGE})"
)

SCOPES_ENV = "DBXDEC_APP_SCOPES"
"""The scopes the app was granted, space-separated (read by ``databricks_app_settings``)."""
TARGET_ENV = "DBXDEC_TARGET"
"""The bundle target whose deployed jobs the app finds, as ``-t TARGET`` does."""
PIPELINES_ENV = "DBXDEC_PIPELINES"
"""Pipeline modules besides ``[tool.dbxdec] pipelines`` (set when generate got --pipelines)."""

APP_MODULE = "databricks_bundle_decorators.app"
APP_COMMAND: tuple[str, ...] = ("python", "-m", APP_MODULE, "--project", ".")
"""``app.yaml``'s ``command``: a list, run without a shell, in the app's source folder
(https://docs.databricks.com/aws/dev-tools/databricks-apps/app-runtime)."""

APP_YAML = "app.yaml"
REQUIREMENTS = "requirements.txt"
APP_SUFFIX = ".app.yml"
HEADER = "# Generated by dbxdec from [tool.dbxdec.app]: do not edit.\n"
APP_EXTRA = "app"


def app_resource(
    app: AppOptions, *, source_code_path: str, jobs: Sequence[str] = ()
) -> dict[str, Any]:
    """The ``resources.apps.<key>`` settings: ``source_code_path`` leads from the file that
    holds the resource to the project root; the app's principal may view the ``jobs``
    (resource keys of the same bundle), read-only."""
    resource: dict[str, Any] = {"name": app.name}
    if app.description:
        resource["description"] = app.description
    resource["source_code_path"] = source_code_path
    if app.user_authorization:
        resource["user_api_scopes"] = list(REQUIRED_SCOPES)
    if jobs:
        resource["resources"] = [
            {"name": key, "job": {"id": f"${{resources.jobs.{key}.id}}", "permission": "CAN_VIEW"}}
            for key in sorted(jobs)
        ]
    return resource


def app_environment(config: ProjectConfig, target: str | None) -> list[dict[str, str]]:
    """``app.yaml``'s ``env``: the scopes, the target and the pipelines dbxdec generated
    for. No credential ever: Databricks Apps set ``DATABRICKS_HOST`` and the principal's
    OAuth client themselves, and each viewer's token arrives per request."""
    env = []
    if config.app is None or config.app.user_authorization:
        env.append({"name": SCOPES_ENV, "value": " ".join(REQUIRED_SCOPES)})
    if target is not None:
        env.append({"name": TARGET_ENV, "value": target})
    declared = config.settings.get("pipelines", [])
    declared = [declared] if isinstance(declared, str) else list(declared)
    extra = [module for module in config.pipelines if module not in declared]
    if extra:
        env.append({"name": PIPELINES_ENV, "value": " ".join(extra)})
    return env


def render_app_yaml(env: Sequence[Mapping[str, str]]) -> str:
    """``app.yaml``: the command and ``env``, byte-stable for the same input."""
    document = {"command": list(APP_COMMAND), "env": [dict(entry) for entry in env]}
    return HEADER + render_document(document)


def requirements(config: ProjectConfig, options: CodegenOptions) -> str:
    """``requirements.txt``: dbxdec's wheel from ``wheels/`` with its ``app`` extra, then
    the project itself (its own dependencies; its ``dbxdec==`` pin is met by the wheel),
    both paths inside the source folder, which is all the app deploys.

    Raises:
        UsageError: the framework wheel is outside the project (a ``/Volumes`` path, a URL).
    """
    if is_framework(options.package_name):  # dbxdec's own repository
        lines = [f".[{APP_EXTRA}]"]
    else:
        wheel = options.framework_wheel
        if is_remote(wheel) or wheel.startswith("${"):
            raise UsageError(
                f"[tool.dbxdec.app] needs framework_wheel inside the project (it is {wheel}): "
                "the app installs dbxdec from its own source folder; run 'dbxdec wheel' and "
                "keep the default wheels/ path"
            )
        lines = [f"./{wheel.removeprefix('./')}[{APP_EXTRA}]", "."]
    return HEADER + "\n".join(lines) + "\n"


def app_files(
    config: ProjectConfig, options: CodegenOptions, *, target: str | None
) -> dict[Path, str]:
    """The files at the project root Databricks Apps read: ``app.yaml``, ``requirements.txt``.

    ``options`` must be relative to the project root (``wheel_prefix="./"``).

    Raises:
        UsageError: a file of that name exists that dbxdec did not write (nothing is
            written), or the framework wheel is outside the project.
    """
    files = {
        config.root / APP_YAML: render_app_yaml(app_environment(config, target)),
        config.root / REQUIREMENTS: requirements(config, options),
    }
    for path in files:
        if path.exists() and not is_generated(path, HEADER):
            raise UsageError(
                f"{path} exists and was not written by dbxdec: [tool.dbxdec.app] deploys the "
                "project root as the app's source folder and writes its own "
                f"{APP_YAML} and {REQUIREMENTS} there; move that file away; nothing was written"
            )
    return files


def render_app(key: str, resource: Mapping[str, Any]) -> str:
    """The YAML document of the app resource: ``resources: apps: <key>: ...``."""
    return HEADER + render_document({"resources": {"apps": {key: dict(resource)}}})


def plan_app(
    config: ProjectConfig,
    options: CodegenOptions,
    *,
    target: str | None,
    source_code_path: str,
    jobs: Sequence[str] = (),
) -> tuple[str, dict[str, Any], dict[Path, str]] | None:
    """The app's resource key, settings and root files; ``None`` without ``[tool.dbxdec.app]``.
    ``jobs``: the bundle's job resource keys, which the app's principal may view.

    Raises:
        UsageError: as :func:`app_files`.
    """
    if config.app is None:
        return None
    resource = app_resource(config.app, source_code_path=source_code_path, jobs=jobs)
    return config.app.resource_key, resource, app_files(config, options, target=target)


def write_app(
    config: ProjectConfig,
    out_dir: Path | None,
    planned: tuple[str, dict[str, Any], dict[Path, str]] | None,
) -> list[Path]:
    """Write the planned app: its resource file into ``out_dir`` (``None``: the resource is
    loaded by ``load_resources``, no file) and its files at the root; without an app, remove
    the app files dbxdec wrote before. Returns the files written, sorted."""
    resource_files: dict[Path, str] = {}
    root_files: dict[Path, str] = {}
    if planned is not None:
        key, resource, root_files = planned
        if out_dir is not None:
            resource_files[out_dir / f"{key}{APP_SUFFIX}"] = render_app(key, resource)
    written = (
        write_generated(resource_files, out_dir, f"*{APP_SUFFIX}", HEADER)
        if out_dir is not None
        else []
    )
    for path, text in sorted(root_files.items()):
        write_if_changed(path, text)
    if planned is None:
        for name in (APP_YAML, REQUIREMENTS):
            stale = config.root / name
            if stale.is_file() and is_generated(stale, HEADER):
                stale.unlink()
    return sorted([*written, *root_files])


def relative_source(root: Path, out_dir: Path) -> str:
    """``source_code_path`` from a file in ``out_dir`` to the project ``root``."""
    return os.path.relpath(root.resolve(), out_dir.resolve()).replace(os.sep, "/")


def is_app_file(root: Path, path: Path) -> bool:
    """Whether ``path`` is one of the app's generated files (resource, ``app.yaml``,
    ``requirements.txt``)."""
    if path.name.endswith(APP_SUFFIX):
        return True
    return path.parent.resolve() == root.resolve() and path.name in (APP_YAML, REQUIREMENTS)
