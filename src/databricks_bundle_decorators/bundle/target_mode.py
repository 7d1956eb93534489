"""The Databricks CLI's target-mode rules, applied offline by ``dbxdec validate``.

What ``databricks bundle deploy`` does with ``mode:`` (databricks/cli, read at commit
7bbe285 of 2026-08-21: ``bundle/config/mutator/resourcemutator/validate_target_mode.go``,
``apply_target_mode.go``, ``apply_presets.go`` and ``run_as.go``):

- ``mode: production`` without ``targets.<t>.workspace.root_path`` is an **error** for a
  human deployer and only a recommendation when every job has ``run_as`` (a job's own or
  the bundle's ``run_as``, which the CLI copies into every job) or when a service
  principal deploys. A top-level ``workspace.root_path`` does not count: the CLI asks
  the target itself (``isExplicitRootSet``). A pipeline with ``development: true`` is an
  error in production mode.
- ``mode: development`` refuses ``presets.trigger_pause_status: UNPAUSED`` and adds a
  ``dev`` tag to every job unless ``presets.tags`` sets one; ``presets.tags`` are added to
  every job (a job's own tag of the same key wins) in any mode.

dbxdec cannot know who deploys, so it assumes a human unless every job has ``run_as``
or ``dbxdec validate --as-service-principal`` says otherwise. The development-mode
checks that need the deployer's user name (paths and ``presets.name_prefix`` must hold
it) are left to the Databricks CLI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .bundle_file import BundleFile
from .tags import MAX_TAGS

DEV_TAG = "dev"
SHARED_ROOT_PATH = "/Workspace/Shared/.bundle/${bundle.name}/${bundle.target}"


@dataclass(frozen=True, slots=True)
class TargetMode:
    """What the target-mode rules read from ``databricks.yml`` for one target.

    Attributes:
        target: The target's name.
        mode: ``development``, ``production`` or ``None``.
        root_path: ``targets.<t>.workspace.root_path`` (never the top-level one).
        bundle_run_as: Whether ``run_as`` is set at the top level or in the target.
        preset_tags: ``presets.tags`` (the target's over the top-level ones).
        trigger_pause_status: ``presets.trigger_pause_status``.
        development_pipelines: Pipelines declared with ``development: true``.
    """

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
    spec = _mapping(_mapping(document.get("targets")).get(target))
    presets = {**_mapping(document.get("presets")), **_mapping(spec.get("presets"))}
    tags = {**_mapping(_mapping(document.get("presets")).get("tags"))}
    tags.update(_mapping(_mapping(spec.get("presets")).get("tags")))
    root = _mapping(spec.get("workspace")).get("root_path")
    pipelines = {
        **_mapping(_mapping(document.get("resources")).get("pipelines")),
        **_mapping(_mapping(spec.get("resources")).get("pipelines")),
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
            str(name) for name, p in pipelines.items() if _mapping(p).get("development") is True
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
    """The tags a job with ``tags`` gets once the CLI applied the target's presets and
    mode (``apply_presets.go``: a preset tag is added unless the job sets the key;
    ``apply_target_mode.go``: development mode adds ``dev`` unless a preset sets it)."""
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
    own = {str(k): str(v) for k, v in _mapping(job.get("tags")).items()}
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


def _mapping(value: object) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}
