"""Test-side control: fire a job's table-update or file-arrival trigger, as Databricks would.

:meth:`TriggerControls.fire_table_update` starts a run of a job whose settings hold a
``trigger.table_update`` block, with its job parameters' table-update references
rendered (https://docs.databricks.com/aws/en/jobs/trigger-table-update, "job parameters"
of a table-update trigger):

- ``{{job.trigger.table_update.updated_tables}}``: the tables that committed, rendered
  as a JSON list (the page calls it a list and shows no format; a JSON array is the
  reading a parser must survive, the runtime falls back when it is not one);
- ``{{job.trigger.table_update.<table>.version}}`` and
  ``...commit_timestamp.iso_datetime``: the given version and commit time of each table
  that committed. For a watched table that did not commit the page is silent, so the
  emulator renders the least convenient legal answer: an empty string.

A paused trigger does not fire ("pause_status": the trigger is paused; the bundle's
development mode pauses triggers, https://docs.databricks.com/aws/en/dev-tools/bundles/deployment-modes),
so firing one raises. The run's ``trigger`` (``runs/get``) is ``TABLE``
(databricks-sdk-py ``jobs.TriggerType``: "Indicates a run that is triggered by a table
update").

:meth:`TriggerControls.fire_file_arrival` starts a run of a job with a
``trigger.file_arrival`` block, rendering ``{{job.trigger.file_arrival.location}}`` as
the block's ``url`` ("the file arrival location",
https://docs.databricks.com/aws/en/jobs/dynamic-value-references); the run's ``trigger``
is ``FILE_ARRIVAL`` (databricks-sdk-py ``jobs.TriggerType``: "Indicates a run that is
triggered by a file arrival").
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from .._store._emulator_records import JobRecord
from .._store._emulator_state import JobsModel

__all__ = ["TriggerControls"]

_TABLE_REF = re.compile(  # a table's name as it is (the trigger page's form) or backticked
    r"\{\{job\.trigger\.table_update\.(?:`([^`]+)`|([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+){0,2}))\."
    r"(version|commit_timestamp\.iso_datetime)\}\}"
)
_UPDATED = "{{job.trigger.table_update.updated_tables}}"
_LOCATION = "{{job.trigger.file_arrival.location}}"


def render_table_update(
    text: str, versions: Mapping[str, int], commit_times: Mapping[str, str]
) -> str:
    """``text`` with its table-update references rendered for a run of ``versions``."""

    def one(match: re.Match[str]) -> str:
        table = match.group(1) or match.group(2)
        if table not in versions:
            return ""
        if match.group(3) == "version":
            return str(versions[table])
        return commit_times.get(table, "")

    return _TABLE_REF.sub(one, text.replace(_UPDATED, json.dumps(sorted(versions))))


class TriggerControls:
    """Mixed into :class:`~..emulator.JobsEmulator`."""

    _lock: threading.Lock
    _changed: threading.Condition
    _model: JobsModel

    def fire_table_update(
        self,
        job_id: int,
        versions: Mapping[str, int],
        *,
        commit_times: Mapping[str, str] | None = None,
    ) -> int:
        """Start a table-triggered run of job ``job_id`` for tables that committed at
        ``versions``; return its run id.

        Raises:
            ValueError: the job has no (unpaused) table-update trigger, or a table in
                ``versions`` is not one it watches.
        """
        times = dict(commit_times or {})
        for table in versions:
            times.setdefault(table, "2024-01-01T00:00:00.000Z")
        with self._lock:
            job, block = self._firing(job_id, "table_update")
            unknown = sorted(set(versions) - set(block.get("table_names", [])))
            if unknown:
                raise ValueError(f"job {job_id} does not watch {', '.join(unknown)}")
            rendered = {
                name: render_table_update(value, versions, times)
                for name, value in job.parameter_defaults.items()
                if "job.trigger.table_update" in value
            }
            body = {"job_id": job_id, "job_parameters": rendered}
            run_id = int(self._model.run_now(body, time.monotonic())["run_id"])
            self._model._runs[run_id].trigger = "TABLE"
            self._changed.notify_all()
        return run_id

    def fire_file_arrival(self, job_id: int) -> int:
        """Start a file-triggered run of job ``job_id``; return its run id.

        Raises:
            ValueError: the job has no (unpaused) file-arrival trigger.
        """
        with self._lock:
            job, block = self._firing(job_id, "file_arrival")
            url = str(block.get("url", ""))
            rendered = {
                name: value.replace(_LOCATION, url)
                for name, value in job.parameter_defaults.items()
                if _LOCATION in value
            }
            body = {"job_id": job_id, "job_parameters": rendered}
            run_id = int(self._model.run_now(body, time.monotonic())["run_id"])
            self._model._runs[run_id].trigger = "FILE_ARRIVAL"
            self._changed.notify_all()
        return run_id

    def _firing(self, job_id: int, kind: str) -> tuple[JobRecord, dict[str, Any]]:
        """Job ``job_id`` and its trigger's ``kind`` block, if that trigger can fire: a
        paused trigger does not (the caller holds the lock).

        Raises:
            ValueError: the job has no such trigger, or it is paused.
        """
        job = self._model._job(job_id)
        trigger = job.settings.get("trigger") or {}
        block = trigger.get(kind)
        if not isinstance(block, dict):
            raise ValueError(f"job {job_id} has no {kind} trigger")
        if trigger.get("pause_status") == "PAUSED":
            raise ValueError(f"job {job_id}'s trigger is paused: it does not fire")
        return job, block
