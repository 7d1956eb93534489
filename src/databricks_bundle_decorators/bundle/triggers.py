"""``@job(triggered_by=...)`` -> the job's ``trigger`` setting, as the Jobs API documents it.

``trigger.table_update``: ``table_names``, ``condition``, ``min_time_between_triggers_seconds``,
``wait_after_last_change_seconds``; ``trigger.file_arrival``: ``url`` and the same two
timings (databricks-sdk-py ``jobs.TableUpdateTriggerConfiguration`` /
``jobs.FileArrivalTriggerConfiguration``; the bundle schema's ``jobs.TriggerSettings``).

``condition`` is left out when it is ``ANY_UPDATED``. Why: the reference gives no default
for it (the SDK docstring says only "The table(s) condition based on which to trigger a
job run"; unverified in a primary source), and the Databricks CLI's direct deployment
engine reports a perpetual plan change for a trigger that sets ``condition`` (any value):
the Jobs API accepts it on create/update but never returns it from ``jobs/get``
(databricks/cli#6315, secondary); leaving it out avoids that drift. The UI triggers on any
updated table unless "all" is chosen (https://docs.databricks.com/aws/en/jobs/trigger-table-update),
so an omitted condition behaves as ``ANY_UPDATED``.
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
    ``trigger={...}``), without ``pause_status``; ``None`` for a job without one.

    What a pause writes back: ``jobs/get`` never returns a table update's ``condition``
    (databricks/cli#6315), so a trigger read from the workspace cannot be written back
    whole; the project's declaration can.
    """
    if job.trigger is not None:
        setting = trigger_setting(job.trigger, paused=False)
    else:
        raw = job.settings.get("trigger")
        if not isinstance(raw, dict):
            return None
        setting = dict(raw)
    setting.pop("pause_status", None)
    return setting
