"""The project's ``databricks.yml``: targets, variables, how resources are loaded, and the
Databricks CLI's target-mode rules applied offline, after databricks/cli at commit 7bbe285
(``validate_target_mode.go``, ``apply_target_mode.go``, ``apply_presets.go``, ``run_as.go``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import UsageError, did_you_mean
from .tags import MAX_TAGS

BUNDLE_FILE_NAMES = ("databricks.yml", "databricks.yaml")
LOAD_RESOURCES_FUNCTION = "databricks_bundle_decorators.bundle:load_resources"
VARIABLE_REFERENCE = re.compile(r"\$\{var\.([A-Za-z_][A-Za-z0-9_\-]*)\}")
DEV_TAG = "dev"
SHARED_ROOT_PATH = "/Workspace/Shared/.bundle/${bundle.name}/${bundle.target}"


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
    """What dbxdec needs from ``databricks.yml``: target names in file order, the
    default target, declared variables with their defaults (``None``: none), each
    target's variable values and settings, and the whole parsed ``document``."""

    path: Path
    targets: tuple[str, ...] = ()
    default_target: str | None = None
    variables: Mapping[str, Any] = field(default_factory=dict)
    target_variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    uses_load_resources: bool = False  # the Databricks CLI loads dbxdec's jobs itself
    target_settings: Mapping[str, TargetSettings] = field(default_factory=dict)
    document: Mapping[str, Any] = field(default_factory=dict)

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
        UsageError: not readable YAML, or ``targets``/``variables`` not mappings.
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
    return BundleFile(
        path=path,
        targets=tuple(str(name) for name in targets),
        default_target=str(default_target) if default_target is not None else None,
        variables=variables,
        target_variables=target_variables,
        uses_load_resources=LOAD_RESOURCES_FUNCTION in [str(r) for r in resources or ()],
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
    """``value`` with every string that is exactly ``${var.name}`` replaced by its value,
    recursively; unknown variables are left for the Databricks CLI to report.

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


@dataclass(frozen=True, slots=True)
class TargetMode:
    """What the target-mode rules read for one target (``root_path``: the target's
    own, never the top-level one; ``bundle_run_as``: ``run_as`` at the top level or in
    the target; ``preset_tags``: the target's over the top-level ones)."""

    target: str
    mode: str | None = None
    root_path: str | None = None
    bundle_run_as: bool = False
    preset_tags: Mapping[str, str] = field(default_factory=dict)
    trigger_pause_status: str | None = None
    development_pipelines: tuple[str, ...] = ()


def target_mode(bundle: BundleFile, target: str) -> TargetMode:
    """The target-mode settings of ``target`` in ``bundle``."""
    document = bundle.document
    spec = _loose(_loose(document.get("targets")).get(target))
    presets = {**_loose(document.get("presets")), **_loose(spec.get("presets"))}
    tags = {**_loose(_loose(document.get("presets")).get("tags"))}
    tags.update(_loose(_loose(spec.get("presets")).get("tags")))
    root = _loose(spec.get("workspace")).get("root_path")
    pipelines = {
        **_loose(_loose(document.get("resources")).get("pipelines")),
        **_loose(_loose(spec.get("resources")).get("pipelines")),
    }
    mode = spec.get("mode")
    pause = presets.get("trigger_pause_status")
    return TargetMode(
        target=target,
        mode=str(mode) if mode else None,
        root_path=str(root) if root else None,
        bundle_run_as=bool(document.get("run_as") or spec.get("run_as")),
        preset_tags={str(k): str(v) for k, v in tags.items()},
        trigger_pause_status=str(pause) if pause else None,
        development_pipelines=tuple(
            str(name) for name, p in pipelines.items() if _loose(p).get("development") is True
        ),
    )


def mode_problems(
    mode: TargetMode, jobs: Mapping[str, Mapping[str, Any]], *, service_principal: bool = False
) -> list[str]:
    """One line per rule of ``mode``'s target that the CLI would refuse (as errors)."""
    where = f"target {mode.target!r} (mode: {mode.mode})"
    problems: list[str] = []
    if mode.mode == "production":
        problems += [
            f"{where}: pipeline {name!r} has development: true, which production mode refuses"
            for name in mode.development_pipelines
        ]
        every_job_run_as = mode.bundle_run_as or all(job.get("run_as") for job in jobs.values())
        if mode.root_path is None and not (service_principal or every_job_run_as):
            problems.append(
                f"{where}: set targets.{mode.target}.workspace.root_path (e.g. "
                f"{SHARED_ROOT_PATH}) so only one copy is deployed; the Databricks CLI "
                "refuses a production target without it (a top-level workspace.root_path "
                "does not count)"
            )
    if mode.mode == "development" and (mode.trigger_pause_status or "").upper() == "UNPAUSED":
        problems.append(
            f"{where}: presets.trigger_pause_status UNPAUSED is refused in development mode; "
            "remove it (or unpause single jobs)"
        )
    return problems


def deployed_tags(mode: TargetMode, tags: Mapping[str, str]) -> dict[str, str]:
    """The tags a job with ``tags`` gets from the CLI: a preset tag unless the job sets
    the key, and in development mode ``dev`` unless a preset sets it."""
    presets = dict(mode.preset_tags)
    if mode.mode == "development":
        presets.setdefault(DEV_TAG, "<short user name>")
    merged = dict(tags)
    for key, value in presets.items():
        if not merged.get(key):
            merged[key] = value
    return merged


def tag_count_problem(mode: TargetMode | None, name: str, job: Mapping[str, Any]) -> str | None:
    """One line when job ``name`` would have more than 25 tags once deployed to the
    target (``JobSettings.tags``: "A maximum of 25 tags can be added to the job")."""
    own = {str(k): str(v) for k, v in _loose(job.get("tags")).items()}
    tags = deployed_tags(mode, own) if mode is not None else own
    if len(tags) <= MAX_TAGS:
        return None
    added = sorted(set(tags) - set(own))
    how = (
        f" once target {mode.target!r} adds {', '.join(added)}"
        f"{' (development mode)' if mode is not None and mode.mode == 'development' else ''}"
        if added and mode is not None
        else ""
    )
    return (
        f"job {name!r}: {len(tags)} tags{how}; a Databricks job may have at most {MAX_TAGS}: "
        "remove tags"
    )


def _loose(value: object) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}
