"""Job settings of the emulated Jobs service: ``jobs/create``'s validation and limits,
``jobs/update`` (whole top-level fields, keyed arrays of :data:`MERGED_ARRAYS` merged by
key, ``fields_to_remove`` applied first) and ``jobs/reset`` (no HTTP, no state).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ._emulator_records import JsonDict, check_queue, invalid
from ._emulator_refs import references_problem

#: ``JobSettings.tags`` in the Jobs API reference (databricks-sdk-py ``jobs.JobSettings``;
#: https://docs.databricks.com/api/workspace/jobs/create): "A maximum of 25 tags can be
#: added to the job".
MAX_JOB_TAGS = 25
#: The settings that start runs on their own; each has a ``pause_status``.
TRIGGER_FIELDS = ("schedule", "trigger", "continuous")
MERGED_ARRAYS = {
    "tasks": "task_key",
    "job_clusters": "job_cluster_key",
    "environments": "environment_key",
    "parameters": "name",
}
_REMOVABLE_ENTRIES = ("tasks", "job_clusters")


def job_settings(body: Mapping[str, Any]) -> JsonDict:
    """Validated JobSettings JSON for ``jobs/create``, with the service's defaults."""
    settings = copy.deepcopy(dict(body))
    # ``run_as`` is kept: ``JobSettings.run_as`` is "the user or service principal that the job
    # runs as, if specified in the request" (databricks-sdk-py ``jobs.JobSettings``)
    settings.pop("access_control_list", None)
    settings.setdefault("name", "Untitled")
    settings.setdefault("max_concurrent_runs", 1)
    settings.setdefault("timeout_seconds", 0)
    settings.setdefault("email_notifications", {})
    settings.setdefault("format", "MULTI_TASK")
    mcr = settings["max_concurrent_runs"]
    if not isinstance(mcr, int) or isinstance(mcr, bool) or not 0 <= mcr <= 1000:
        raise invalid("max_concurrent_runs must be an integer between 0 and 1000")
    check_queue(settings.get("queue"))
    params = settings.get("parameters") or []
    if not isinstance(params, list) or not all(
        isinstance(p, dict) and isinstance(p.get("name"), str) and "default" in p for p in params
    ):
        raise invalid("parameters must be a list of {name, default} objects")
    for name in TRIGGER_FIELDS:  # an omitted ``pause_status`` is stored as UNPAUSED
        block = settings.get(name)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise invalid(f"{name} must be an object")
        if name == "schedule":
            for required in ("quartz_cron_expression", "timezone_id"):
                if not isinstance(block.get(required), str) or not block[required]:
                    raise invalid(f"Missing required field: schedule.{required}")
        status = block.setdefault("pause_status", "UNPAUSED")
        if status not in ("PAUSED", "UNPAUSED"):
            raise invalid(
                f"Invalid value for {name}.pause_status: {status!r} (expected PAUSED or UNPAUSED)"
            )
    if (problem := references_problem(settings)) is not None:
        raise invalid(problem)
    tags = settings.get("tags")
    if tags is not None and not isinstance(tags, Mapping):
        raise invalid("tags must be an object of key-value strings")
    if tags is not None and len(tags) > MAX_JOB_TAGS:
        raise invalid(f"A job may have at most {MAX_JOB_TAGS} tags; got {len(tags)}.")
    return settings


def updated_settings(current: JsonDict, body: Mapping[str, Any]) -> JsonDict:
    """The settings after a ``jobs/update`` request ``body`` (validated)."""
    new = body.get("new_settings")
    if new is not None and not isinstance(new, dict):
        raise invalid("new_settings must be an object")
    removals = body.get("fields_to_remove")
    if removals is not None and not (
        isinstance(removals, list) and all(isinstance(f, str) for f in removals)
    ):
        raise invalid("fields_to_remove must be a list of strings")
    settings = copy.deepcopy(current)
    for field in removals or []:
        _remove(settings, field)
    for name, value in (new or {}).items():
        key = MERGED_ARRAYS.get(name)
        if key is not None and isinstance(value, list) and isinstance(settings.get(name), list):
            settings[name] = _merged(settings[name], value, key)
        else:
            settings[name] = copy.deepcopy(value)
    return job_settings(settings)


def reset_settings(body: Mapping[str, Any]) -> JsonDict:
    """The settings after a ``jobs/reset`` request ``body`` (validated)."""
    new = body.get("new_settings")
    if new is None:
        raise invalid("Missing required field: new_settings")
    if not isinstance(new, dict):
        raise invalid("new_settings must be an object")
    return job_settings(new)


def _remove(settings: JsonDict, field: str) -> None:
    array, slash, entry = field.partition("/")
    if not slash:
        settings.pop(field, None)
        return
    if array not in _REMOVABLE_ENTRIES or not entry or "/" in entry:
        raise invalid(
            f"Invalid field in fields_to_remove: {field!r} (only top-level fields, "
            "tasks/<task_key> and job_clusters/<job_cluster_key> can be removed)"
        )
    key = MERGED_ARRAYS[array]
    entries = settings.get(array) or []
    kept = [e for e in entries if not (isinstance(e, dict) and e.get(key) == entry)]
    if len(kept) == len(entries):
        raise invalid(f"Cannot remove {field!r}: the job has no such {key}")
    settings[array] = kept


def _merged(old: list[Any], new: list[Any], key: str) -> list[Any]:
    replacing = {e.get(key): e for e in new if isinstance(e, dict)}
    if None in replacing:
        raise invalid(f"Every entry must have a {key}")
    merged = [copy.deepcopy(replacing.pop(e.get(key), e)) for e in old if isinstance(e, dict)]
    return merged + [copy.deepcopy(e) for e in replacing.values()]
