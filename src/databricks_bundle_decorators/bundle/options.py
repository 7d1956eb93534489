"""Code generation options: ``[tool.dbxdec]`` settings, per target, with bundle variables::

[tool.dbxdec]
wheel = "dist/*.whl"  # and framework_wheel, environment_version, params, tags

[tool.dbxdec.targets.dev]
pause_schedules = true
params = { catalog = "dev" }
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from ..errors import UsageError
from .bundle_file import resolve_variables
from .framework_wheel import FRAMEWORK_DISTRIBUTION, default_framework_wheel, is_remote
from .project import ProjectConfig

NOTEBOOK_FOLDER = "dbxdec_notebooks"
"""The folder of generated notebooks, beside the generated job files (``resources/``)."""

DEFAULT_PACKAGE_NAME = "dbxdec"
DEFAULT_WHEEL = "dist/*.whl"
DEFAULT_ENVIRONMENT_VERSION = "3"
DEFAULT_ENVIRONMENT_KEY = "default"

_TARGET_KEYS = frozenset(
    {"wheel", "framework_wheel", "environment_version", "pause_schedules", "params", "tags"}
)


@dataclass(frozen=True, slots=True)
class CodegenOptions:
    """How definitions become Databricks job settings.

    Attributes:
        package_name: Distribution of the wheel holding the pipelines (``dbxdec-run``).
        wheel: The wheel as the job references it (a glob relative to the job's file, or
            a ``/Volumes/...``/``/Workspace/...`` path); ``framework_wheel`` likewise.
        params: Job parameter defaults that replace the declared ones, by name.
        notebook_dir: Folder of the generated notebooks, relative to the job's file.
    """

    package_name: str = DEFAULT_PACKAGE_NAME
    wheel: str = f"./{DEFAULT_WHEEL}"
    framework_wheel: str = f"./{default_framework_wheel()}"
    environment_version: str = DEFAULT_ENVIRONMENT_VERSION
    environment_key: str = DEFAULT_ENVIRONMENT_KEY
    pause_schedules: bool = False
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    target: str | None = None
    notebook_dir: str = f"./resources/{NOTEBOOK_FOLDER}"

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "tags", MappingProxyType(dict(self.tags)))

    @property
    def wheels(self) -> tuple[str, ...]:
        """The wheels every task installs: dbxdec's first (it satisfies the project's
        ``dbxdec==<version>`` requirement, so no index is asked), then the project's."""
        if is_framework(self.package_name):
            return (self.wheel,)
        return (self.framework_wheel, self.wheel)


@lru_cache(maxsize=64)  # asked for every task's wheels
def is_framework(distribution: str) -> bool:
    """Whether ``distribution`` names dbxdec (PEP 503 normalised)."""
    return re.sub(r"[-_.]+", "-", distribution).lower() == FRAMEWORK_DISTRIBUTION


def options_from_config(
    config: ProjectConfig,
    *,
    target: str | None = None,
    variables: Mapping[str, Any] | None = None,
    wheel_prefix: str = "./",
) -> CodegenOptions:
    """Options from ``[tool.dbxdec]`` and its ``targets.<target>`` table, ``${var.name}``
    settings resolved from ``variables``; ``wheel_prefix`` leads from the job's file to the
    project root (``./`` for ``databricks.yml``, ``../`` for ``resources/*.yml``).

    Raises:
        UsageError: a setting has the wrong type or a target table an unknown key.
    """
    table = dict(config.settings)
    targets = table.get("targets", {})
    if not isinstance(targets, dict):
        raise UsageError("[tool.dbxdec] targets must be a table of target tables")
    if target is not None and target in targets:
        overrides = targets[target]
        if not isinstance(overrides, dict):
            raise UsageError(f"[tool.dbxdec.targets.{target}] must be a table")
        unknown = sorted(set(overrides) - _TARGET_KEYS)
        if unknown:
            raise UsageError(
                f"[tool.dbxdec.targets.{target}] has unknown setting {unknown[0]!r}; "
                f"known: {', '.join(sorted(_TARGET_KEYS))}"
            )
        params = {
            **_strings(table.get("params"), "params"),
            **_strings(overrides.get("params"), f"targets.{target}.params"),
        }
        tags = {
            **_strings(table.get("tags"), "tags"),
            **_strings(overrides.get("tags"), f"targets.{target}.tags"),
        }
        table.update(overrides)
        table["params"], table["tags"] = params, tags
    if variables:
        table = resolve_variables(table, variables)
    wheel = _string(table.get("wheel", DEFAULT_WHEEL), "wheel")
    framework = _string(table.get("framework_wheel", default_framework_wheel()), "framework_wheel")
    return CodegenOptions(
        package_name=_string(
            table.get("package_name", config.distribution or DEFAULT_PACKAGE_NAME), "package_name"
        ),
        wheel=_located(wheel, wheel_prefix),
        framework_wheel=_located(framework, wheel_prefix),
        environment_version=_string(
            table.get("environment_version", DEFAULT_ENVIRONMENT_VERSION), "environment_version"
        ),
        pause_schedules=_bool(table.get("pause_schedules", False), "pause_schedules"),
        params=_strings(table.get("params"), "params"),
        tags=_strings(table.get("tags"), "tags"),
        target=target,
    )


def _located(path: str, prefix: str) -> str:
    """A relative ``path`` from the job's file (``prefix`` leads to the project root)."""
    if is_remote(path) or path.startswith("${"):
        return path
    path = path[2:] if path.startswith("./") else path
    return f"{prefix}{path}" if prefix.endswith("/") else f"{prefix}/{path}"


def _string(value: object, name: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise UsageError(f"[tool.dbxdec] {name} must be a non-empty string, got {value!r}")
    return value


def _bool(value: object, name: str) -> bool:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise UsageError(f"[tool.dbxdec] {name} must be true or false, got {value!r}")
    return value


def _strings(value: object, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"[tool.dbxdec] {name} must be a table of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            out[str(key)] = "true" if item else "false"
        elif isinstance(item, (str, int, float)):
            out[str(key)] = str(item)
        else:
            raise UsageError(f"[tool.dbxdec] {name}.{key} must be a string, got {item!r}")
    return out
