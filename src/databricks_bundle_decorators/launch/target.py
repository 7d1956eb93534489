"""What ``-t TARGET`` means for finding a deployed job: name prefix, dev mode, workspace.

Read from the project's ``databricks.yml`` the way the Databricks CLI applies it: a
``mode: development`` target prefixes job names with ``[dev <user short name>] ``
unless ``presets.name_prefix`` says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import UsageError, did_you_mean

_BUNDLE_FILES = ("databricks.yml", "databricks.yaml")
_SHORT_NAME = "${workspace.current_user.short_name}"


@dataclass(frozen=True, slots=True)
class TargetInfo:
    """The parts of a bundle target that locate its jobs."""

    name: str
    dev_mode: bool = False
    name_prefix: str | None = None
    host: str | None = None
    profile: str | None = None


def read_target(root: Path, target: str) -> TargetInfo:
    """The target ``target`` of the bundle at ``root``.

    Raises:
        UsageError: no ``databricks.yml``, it is unreadable, or the target is unknown.
    """
    path = next((root / n for n in _BUNDLE_FILES if (root / n).is_file()), None)
    if path is None:
        raise UsageError(f"-t {target}: no databricks.yml in {root}; pass --job-id ID instead")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    targets = _mapping(document.get("targets"))
    if target not in targets:
        known = sorted(str(t) for t in targets)
        raise UsageError(
            f"-t {target}: no such target in {path}.{did_you_mean(target, known)} "
            f"Targets: {', '.join(known) or 'none'}"
        )
    spec = _mapping(targets[target])
    workspace = {**_mapping(document.get("workspace")), **_mapping(spec.get("workspace"))}
    prefix = _mapping(spec.get("presets")).get("name_prefix")
    return TargetInfo(
        name=target,
        dev_mode=spec.get("mode") == "development",
        name_prefix=str(prefix) if prefix else None,
        host=_text(workspace.get("host")),
        profile=_text(workspace.get("profile")),
    )


def needs_short_name(prefix: str | None) -> bool:
    return prefix is not None and _SHORT_NAME in prefix


def with_short_name(prefix: str, short_name: str) -> str:
    return prefix.replace(_SHORT_NAME, short_name)


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value and "${" not in value else None
