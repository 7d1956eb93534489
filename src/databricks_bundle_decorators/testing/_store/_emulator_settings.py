"""``jobs/update`` and ``jobs/reset`` of the emulated Jobs service (no HTTP, no state).

``jobs/update`` replaces each top-level field of ``new_settings`` whole -- a
``schedule`` sent without its cron expression is refused, not merged -- except the
arrays of keyed entries (``tasks`` by ``task_key``, ``job_clusters`` by
``job_cluster_key``, ``environments`` by ``environment_key``, ``parameters`` by
``name``), whose entries replace the old ones with the same key while the others are
kept. ``fields_to_remove`` names top-level fields, or ``tasks/<task_key>`` and
``job_clusters/<job_cluster_key>`` entries; removals apply before the new settings.
``jobs/reset`` replaces the settings whole. Both validate the result as
``jobs/create`` does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ._emulator_records import JsonDict, invalid, job_settings

#: Keyed arrays that ``jobs/update`` merges entry by entry.
MERGED_ARRAYS = {
    "tasks": "task_key",
    "job_clusters": "job_cluster_key",
    "environments": "environment_key",
    "parameters": "name",
}
_REMOVABLE_ENTRIES = ("tasks", "job_clusters")


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
