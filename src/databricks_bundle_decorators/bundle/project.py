"""The user's project: ``[tool.dbxdec]`` settings and its pipelines (loaded through
:mod:`..definitions.loader`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import Registry
from ..definitions.job import JobDefinition, check_results_table
from ..definitions.loader import PipelineImportError, import_pipelines, load_pipelines
from ..definitions.registry import Diagnostic, default_registry
from ..errors import DefinitionError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


APP_NAME_RULE = "lowercase letters, digits and hyphens, at most 30 characters"
APP_NAME_SOURCES = (
    "https://docs.databricks.com/aws/dev-tools/cli/reference/apps-commands",
    "https://github.com/databricks/databricks-agent-skills/blob/main/skills/databricks-apps/SKILL.md",
    "https://github.com/databricks/databricks-agent-skills/blob/main/skills/databricks-apps/references/platform-guide.md",
)
_APP_NAME = re.compile(r"[a-z0-9-]{1,30}")
_APP_KEYS = frozenset({"name", "description", "user_authorization"})


@dataclass(frozen=True, slots=True)
class AppOptions:
    """``[tool.dbxdec.app]``: deploy the backfill app as a Databricks App.

    Attributes:
        name: The app's name in the workspace. Databricks Apps allow only lowercase
            alphanumeric characters and hyphens ("The name must contain only lowercase
            alphanumeric characters and hyphens. It must be unique within the workspace.",
            https://docs.databricks.com/aws/dev-tools/cli/reference/apps-commands) and at
            most 30 characters: the documentation pages state no length, Databricks' own
            agent skills do ("max 30 total", :data:`APP_NAME_SOURCES`).
        description: Shown on the app's page in the workspace.
        user_authorization: Ask for ``user_api_scopes`` (default). ``false`` for a
            workspace where no admin enabled user authorization (a preview): there a
            resource with ``user_api_scopes`` fails to deploy ("user token passthrough not
            enabled", Databricks' agent skills platform guide, :data:`APP_NAME_SOURCES`),
            and the app runs read-only, with its banner.
    """

    name: str
    description: str | None = None
    user_authorization: bool = True

    @property
    def resource_key(self) -> str:
        """The key under ``resources.apps`` (``${resources.apps.<key>...}``)."""
        return self.name.replace("-", "_")


def app_options(table: Mapping[str, Any], source: Path) -> AppOptions | None:
    """``[tool.dbxdec.app]`` of ``table`` (``[tool.dbxdec]``); ``None`` when absent.

    Raises:
        UsageError: a value breaks a rule; the message names the rule and its source.
    """
    app = table.get("app")
    if app is None:
        return None
    where = f"[tool.dbxdec.app] in {source}"
    if not isinstance(app, dict):
        raise UsageError(f'{where} must be a table with name = "my-app"')
    unknown = sorted(set(app) - _APP_KEYS)
    if unknown:
        raise UsageError(
            f"{where} has unknown setting {unknown[0]!r}; known: {', '.join(sorted(_APP_KEYS))}"
        )
    name = app.get("name")
    if not isinstance(name, str) or _APP_NAME.fullmatch(name) is None:
        shown = repr(name) if name is not None else "missing"
        raise UsageError(
            f"{where}: name is {shown}; a Databricks App name has {APP_NAME_RULE} "
            f"({APP_NAME_SOURCES[0]})"
        )
    description = app.get("description")
    if description is not None and not isinstance(description, str):
        raise UsageError(f"{where}: description must be a string")
    user_authorization = app.get("user_authorization", True)
    if not isinstance(user_authorization, bool):
        raise UsageError(f"{where}: user_authorization must be true or false")
    return AppOptions(name, description or None, user_authorization)


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """Settings of a dbxdec project: its ``root`` (holding ``pyproject.toml``), the
    modules that define jobs, the local table ``warehouse``, the whole ``[tool.dbxdec]``
    table, the ``[project] name`` (the wheel tasks' ``package_name``) and the
    ``[tool.dbxdec.app]`` settings (``None``: the project deploys no app)."""

    root: Path
    pipelines: tuple[str, ...]
    warehouse: Path
    settings: dict[str, Any] = field(default_factory=dict)
    distribution: str | None = None
    app: AppOptions | None = None


def find_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` with a ``pyproject.toml`` or
    ``databricks.yml``; ``start`` itself when there is none."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pyproject.toml").is_file() or (candidate / "databricks.yml").is_file():
            return candidate
    return here


def not_a_project(start: Path | None = None) -> UsageError:
    where = (start or Path.cwd()).resolve()
    return UsageError(
        f"not in a dbxdec project (no pyproject.toml with [tool.dbxdec] in {where} or its "
        "parents): run dbxdec init, or pass --project"
    )


def project_root(start: Path | None = None) -> Path:
    """:func:`find_root`, for a command that reads or writes ``.dbxdec/`` state, when
    it has a ``[tool.dbxdec]`` table or a ``.dbxdec/`` folder.

    Raises:
        UsageError: neither: the command was run outside a project.
    """
    root = find_root(start)
    try:
        tool = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("tool")
    except (OSError, tomllib.TOMLDecodeError):
        tool = None
    if (isinstance(tool, dict) and isinstance(tool.get("dbxdec"), dict)) or (
        root / ".dbxdec"
    ).is_dir():
        return root
    raise not_a_project(start)


def load_config(start: Path | None = None, *, pipelines: Sequence[str] = ()) -> ProjectConfig:
    """Read ``[tool.dbxdec]``; ``pipelines`` (from ``--pipelines``) overrides the file.

    Raises:
        UsageError: unreadable pyproject, no pipelines configured, or not in a project.
    """
    root = find_root(start)
    table: dict[str, Any] = {}
    distribution: str | None = None
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"cannot read {pyproject}: {exc}") from None
        table = dict(document.get("tool", {}).get("dbxdec", {}))
        name = document.get("project", {}).get("name")
        distribution = name if isinstance(name, str) and name else None
    modules = tuple(pipelines) or tuple(_string_list(table.get("pipelines", []), pyproject))
    if not modules and not pyproject.is_file():
        raise not_a_project(start)
    if not modules:
        raise UsageError(
            'no pipelines configured: add [tool.dbxdec] pipelines = ["your_package.pipelines"] '
            f"to {pyproject} or pass --pipelines MODULE"
        )
    warehouse = Path(str(table.get("warehouse", ".dbxdec/warehouse")))
    return ProjectConfig(
        root=root,
        pipelines=modules,
        warehouse=warehouse if warehouse.is_absolute() else root / warehouse,
        settings=table,
        distribution=distribution,
        app=app_options(table, pyproject),
    )


def _string_list(value: object, source: Path) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise UsageError(f"[tool.dbxdec] pipelines in {source} must be a list of module names")


__all__ = [
    "AppOptions",
    "PipelineImportError",
    "ProjectConfig",
    "find_root",
    "import_pipelines",
    "load_config",
    "load_project",
    "load_project_for_job",
    "not_a_project",
    "project_root",
]


def load_project(
    project: Path | None, pipelines: Sequence[str] = ()
) -> tuple[ProjectConfig, Registry]:
    """The project's configuration and the registry its pipelines fill.

    Raises:
        UsageError: as :func:`load_config`.
        PipelineImportError: a pipeline module fails to import.
    """
    config = load_config(project, pipelines=pipelines)
    registry = import_pipelines(config.pipelines, root=config.root)
    apply_check_results_default(config, registry)
    return config, registry


def load_project_for_job(
    project: Path | None, pipelines: Sequence[str], job: str
) -> tuple[ProjectConfig, Registry, list[Diagnostic]]:
    """:func:`load_project` for a command about ``job`` alone: pipeline modules that fail
    to import are left out, their failures returned (to warn of), as long as ``job`` is
    defined by the others.

    ``job``'s body is traced (and no other's), so its definition mistakes are refused
    before anything is planned or started.

    Raises:
        UsageError: as :func:`load_config`.
        PipelineImportError: modules failed to import and ``job`` is not defined by the
            modules that did (it may be in a failed one).
        DefinitionError: ``job``'s body is wrong (e.g. an output that cannot hold its keys).
    """
    config = load_config(project, pipelines=pipelines)
    failures = load_pipelines(config.pipelines, root=config.root, registry=default_registry)
    if failures and job not in default_registry:
        raise PipelineImportError(failures)
    if job in default_registry:  # its body's mistakes refuse a --dry-run too (no Spark)
        _ = default_registry.get(job).graph
    apply_check_results_default(config, default_registry)
    return config, default_registry, failures


def apply_check_results_default(config: ProjectConfig, registry: Iterable[JobDefinition]) -> None:
    """Give every job without ``@job(check_results=...)`` the project's
    ``[tool.dbxdec] check_results``.

    Raises:
        UsageError: the setting is not a ``catalog.schema.table`` name.
    """
    value = config.settings.get("check_results")
    if value is None:
        return
    try:
        table = check_results_table(value, None, None)
    except DefinitionError as exc:
        where = config.root / "pyproject.toml"
        raise UsageError(f"[tool.dbxdec] in {where}: {exc.message}") from None
    for job in registry:
        if job.check_results is None:
            job.check_results = table
