"""The project's ``databricks.yml``: targets, variables and how resources are loaded.

dbxdec reads only what it needs to act like the Databricks CLI would: the target names
(to reject an unknown ``--target``), the variable values of a target (to resolve
``${var.name}`` in dbxdec's own settings and to check references in generated jobs) and
whether the bundle loads jobs through :func:`load_resources` or from YAML includes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import UsageError, did_you_mean

BUNDLE_FILE_NAMES = ("databricks.yml", "databricks.yaml")
LOAD_RESOURCES_FUNCTION = "databricks_bundle_decorators.bundle:load_resources"
VARIABLE_REFERENCE = re.compile(r"\$\{var\.([A-Za-z_][A-Za-z0-9_\-]*)\}")


@dataclass(frozen=True, slots=True)
class TargetSettings:
    """How a target deploys: its mode, job-name prefix and workspace.

    ``host``/``profile`` are ``None`` when unset or when they hold a ``${...}`` reference
    that only the Databricks CLI can resolve.
    """

    mode: str | None = None
    name_prefix: str | None = None
    host: str | None = None
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class BundleFile:
    """What dbxdec needs from ``databricks.yml``.

    Attributes:
        path: The file.
        targets: Target names, in file order.
        default_target: The target marked ``default: true``, if any.
        variables: Declared variables and their default values (``None``: no default).
        target_variables: Per target, the variable values it sets.
        python_resources: The ``python: resources:`` entries.
        includes: The ``include:`` globs.
        target_settings: Per target, its mode, name prefix and workspace.
        document: The whole parsed file (for the target-mode rules, :mod:`.target_mode`).
    """

    path: Path
    targets: tuple[str, ...] = ()
    default_target: str | None = None
    variables: Mapping[str, Any] = field(default_factory=dict)
    target_variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    python_resources: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    target_settings: Mapping[str, TargetSettings] = field(default_factory=dict)
    document: Mapping[str, Any] = field(default_factory=dict)

    @property
    def uses_load_resources(self) -> bool:
        """Whether the Databricks CLI loads dbxdec jobs itself (``python: resources:``)."""
        return LOAD_RESOURCES_FUNCTION in self.python_resources

    def resolve_target(self, target: str | None) -> str | None:
        """The target to use: ``target`` if declared, else the default target.

        Raises:
            UsageError: ``target`` is not declared in the file.
        """
        if target is None:
            return self.default_target
        if self.targets and target not in self.targets:
            hint = did_you_mean(target, self.targets)
            raise UsageError(
                f"unknown target {target!r} in {self.path.name}.{hint}"
                f" Targets: {', '.join(self.targets)}"
            )
        return target

    def variables_for(self, target: str | None) -> dict[str, Any]:
        """Variable values for ``target``: declared defaults overridden by the target's."""
        values = dict(self.variables)
        if target is not None:
            values.update(self.target_variables.get(target, {}))
        return values


def find_bundle_file(root: Path) -> Path | None:
    """``databricks.yml`` (or ``.yaml``) in ``root``, if present."""
    for name in BUNDLE_FILE_NAMES:
        candidate = root / name
        if candidate.is_file():
            return candidate
    return None


def read_bundle_file(path: Path) -> BundleFile:
    """Parse the parts of ``databricks.yml`` dbxdec uses.

    Raises:
        UsageError: the file is not readable YAML or its ``targets``/``variables`` are
            not mappings.
    """
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        problem = str(exc).replace("\n", " ")
        raise UsageError(f"cannot read {path}: {problem}") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path} must be a YAML mapping")
    targets = _mapping(document.get("targets"), f"{path.name}: targets")
    default_target = next(
        (name for name, spec in targets.items() if isinstance(spec, dict) and spec.get("default")),
        None,
    )
    variables = {
        name: spec.get("default") if isinstance(spec, dict) else spec
        for name, spec in _mapping(document.get("variables"), f"{path.name}: variables").items()
    }
    target_variables = {
        name: {
            var: value.get("default") if isinstance(value, dict) else value
            for var, value in _mapping(
                (spec or {}).get("variables") if isinstance(spec, dict) else None,
                f"{path.name}: targets.{name}.variables",
            ).items()
        }
        for name, spec in targets.items()
    }
    workspace = _mapping(document.get("workspace"), f"{path.name}: workspace")
    settings = {
        str(name): _target_settings(spec if isinstance(spec, dict) else {}, workspace)
        for name, spec in targets.items()
    }
    python = document.get("python") or {}
    resources = python.get("resources") if isinstance(python, dict) else None
    includes = document.get("include") or []
    return BundleFile(
        path=path,
        targets=tuple(str(name) for name in targets),
        default_target=str(default_target) if default_target is not None else None,
        variables=variables,
        target_variables=target_variables,
        python_resources=tuple(str(r) for r in resources or ()),
        includes=tuple(str(i) for i in includes) if isinstance(includes, list) else (),
        target_settings=settings,
        document=document,
    )


def _target_settings(spec: Mapping[str, Any], workspace: Mapping[str, Any]) -> TargetSettings:
    merged = {**workspace, **(spec.get("workspace") or {})}
    presets = spec.get("presets") or {}
    prefix = presets.get("name_prefix") if isinstance(presets, dict) else None
    mode = spec.get("mode")
    return TargetSettings(
        mode=str(mode) if mode else None,
        name_prefix=str(prefix) if prefix else None,
        host=_literal(merged.get("host")),
        profile=_literal(merged.get("profile")),
    )


def _literal(value: object) -> str | None:
    return value if isinstance(value, str) and value and "${" not in value else None


def resolve_variables(value: Any, variables: Mapping[str, Any]) -> Any:
    """``value`` with every string that is exactly ``${var.name}`` replaced by its value.

    References to unknown variables are left as they are, for the Databricks CLI to
    report. Lists and mappings are resolved recursively.

    Example:
        >>> resolve_variables({"env": "${var.env}"}, {"env": "prod"})
        {'env': 'prod'}
    """
    if isinstance(value, str):
        match = VARIABLE_REFERENCE.fullmatch(value)
        if match and match.group(1) in variables and variables[match.group(1)] is not None:
            return variables[match.group(1)]
        return value
    if isinstance(value, list):
        return [resolve_variables(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: resolve_variables(item, variables) for key, item in value.items()}
    return value


def _mapping(value: object, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a mapping")
    return {str(key): item for key, item in value.items()}
