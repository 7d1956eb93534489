"""What ``-t TARGET`` means for finding a deployed job: name prefix, dev mode, workspace.

Read from the project's ``databricks.yml`` the way the Databricks CLI applies it: a
``mode: development`` target prefixes job names with ``[dev <user short name>] ``
unless ``presets.name_prefix`` says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..bundle.bundle_file import TargetSettings, find_bundle_file, read_bundle_file
from ..errors import UsageError, did_you_mean

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
    path = find_bundle_file(root)
    if path is None:
        raise UsageError(f"-t {target}: no databricks.yml in {root}; pass --job-id ID instead")
    bundle = read_bundle_file(path)
    if target not in bundle.targets:
        raise UsageError(
            f"-t {target}: no such target in {path}.{did_you_mean(target, bundle.targets)} "
            f"Targets: {', '.join(bundle.targets) or 'none'}"
        )
    settings = bundle.target_settings.get(target, TargetSettings())
    return TargetInfo(
        name=target,
        dev_mode=settings.mode == "development",
        name_prefix=settings.name_prefix,
        host=settings.host,
        profile=settings.profile,
    )


def needs_short_name(prefix: str | None) -> bool:
    return prefix is not None and _SHORT_NAME in prefix


def with_short_name(prefix: str, short_name: str) -> str:
    return prefix.replace(_SHORT_NAME, short_name)
