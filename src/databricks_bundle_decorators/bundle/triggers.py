"""``@job(triggered_by=...)`` -> the job's ``trigger`` setting (SDK
``jobs.TableUpdateTriggerConfiguration`` / ``jobs.FileArrivalTriggerConfiguration``).

``condition: ANY_UPDATED`` is left out: ``jobs/get`` never returns ``condition``, so the
CLI would report a perpetual change (databricks/cli#6315), and an omitted condition
triggers on any updated table (https://docs.databricks.com/aws/en/jobs/trigger-table-update).
"""

from __future__ import annotations

from typing import Any

from ..definitions import JobDefinition
from ..definitions.triggers import FileArrival, TableUpdate, Trigger


def trigger_setting(trigger: Trigger, *, paused: bool) -> dict[str, Any]:
    """The ``trigger`` job setting of ``trigger`` (``pause_status: PAUSED`` if ``paused``).

    Example:
        >>> from databricks_bundle_decorators.definitions import source
        >>> trigger_setting(TableUpdate([source("m.r.o", event_time="ts")]), paused=False)
        {'table_update': {'table_names': ['m.r.o']}}
    """
    timings: dict[str, Any] = {}
    if trigger.min_time_between_triggers is not None:
        timings["min_time_between_triggers_seconds"] = trigger.min_time_between_triggers
    if trigger.wait_after_last_change is not None:
        timings["wait_after_last_change_seconds"] = trigger.wait_after_last_change
    setting: dict[str, Any] = {}
    if paused:
        setting["pause_status"] = "PAUSED"
    if isinstance(trigger, TableUpdate):
        block: dict[str, Any] = {"table_names": list(trigger.table_names)}
        if trigger.condition != "ANY_UPDATED":
            block["condition"] = trigger.condition
        setting["table_update"] = {**block, **timings}
    elif isinstance(trigger, FileArrival):
        setting["file_arrival"] = {"url": trigger.url, **timings}
    return setting


def declared_trigger(job: JobDefinition) -> dict[str, Any] | None:
    """The ``trigger`` setting ``job`` deploys (``triggered_by=...`` or a raw
    ``trigger={...}``) without ``pause_status``, ``None`` without one: what a pause
    writes back (a trigger read from the workspace lacks its ``condition``)."""
    if job.trigger is not None:
        setting = trigger_setting(job.trigger, paused=False)
    else:
        raw = job.settings.get("trigger")
        if not isinstance(raw, dict):
            return None
        setting = dict(raw)
    setting.pop("pause_status", None)
    return setting
