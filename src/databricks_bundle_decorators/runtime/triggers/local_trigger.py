"""``dbxdec run JOB --local --trigger table_update``: a table-update trigger simulated
from the local Delta tables' current versions, so the whole triggered path (change data
feed, state table, watermark) runs on real Delta. ``--trigger file_arrival``: a
file-arrival trigger on the trigger's local folder (``FileArrival(local=...)``)."""

from __future__ import annotations

import json
from pathlib import Path

from ...backfill.wire.trigger import (
    TRIGGER_FROM_VERSION_PARAM,
    TRIGGER_LOCATION_PARAM,
    TRIGGER_TABLES_PARAM,
    TRIGGER_VERSIONS_PARAM,
    encode_versions,
)
from ...definitions import JobDefinition
from ...definitions.triggers import FileArrival, TableUpdate
from ...errors import UsageError, counted
from ..job_tables.tables import local_table_exists
from ..session.spark import local_spark_session
from ..storage.delta_history import latest_commit
from ..storage.formats import TableRef
from ..storage.table_name import TableName


def simulated_file_arrival(job: JobDefinition) -> dict[str, str]:
    """The job parameters Databricks would render when files arrived at the job's
    location.

    Raises:
        UsageError: the job has no ``FileArrival(keys=..., local=...)`` trigger, or its
            local folder does not exist.
    """
    trigger = job.trigger
    if not isinstance(trigger, FileArrival) or trigger.keys is None:
        raise UsageError(
            f"job {job.name!r} has no triggered_by=FileArrival(..., keys=...): --trigger "
            "file_arrival simulates one"
        )
    if trigger.local is None:
        raise UsageError(
            f"job {job.name!r}: FileArrival has no local folder; declare "
            "FileArrival(..., local='landing/') (a folder under the project, or a file: URL)"
        )
    if not Path(trigger.local).is_dir():
        raise UsageError(
            f"job {job.name!r}: the trigger's local folder {trigger.local} does not exist; "
            "create it and put the arriving files there"
        )
    return {TRIGGER_LOCATION_PARAM: trigger.url}


def simulated_trigger(
    job: JobDefinition, warehouse: Path, *, from_version: int | None = None
) -> dict[str, str]:
    """The job parameters Databricks would render when every watched local table that
    exists has just committed its current version.

    Raises:
        UsageError: the job has no ``TableUpdate`` trigger, or none of its tables exists.
    """
    trigger = job.trigger
    if not isinstance(trigger, TableUpdate):
        raise UsageError(
            f"job {job.name!r} has no triggered_by=TableUpdate(...): --trigger table_update "
            "simulates one"
        )
    spark = local_spark_session()
    versions: dict[str, int] = {}
    times: dict[str, str] = {}
    for name in trigger.table_names:
        if not local_table_exists(name, warehouse):
            continue
        table = TableName.parse(name)
        latest = latest_commit(spark, TableRef(name, table.quoted, table.local_path(warehouse)))
        versions[name] = int(latest["version"])
        times[name] = latest["timestamp"].isoformat()
    if not versions:
        raise UsageError(
            f"job {job.name!r}: none of its watched tables ({', '.join(trigger.table_names)}) "
            f"exists under {warehouse}; write them first"
        )
    params = {
        TRIGGER_TABLES_PARAM: json.dumps(sorted(versions)),
        TRIGGER_VERSIONS_PARAM: encode_versions(versions, times),
    }
    if from_version is not None:
        params[TRIGGER_FROM_VERSION_PARAM] = str(from_version)
    return params


def pending_line(job: JobDefinition, warehouse: Path) -> str | None:
    """``status``'s line on the keys a triggered or catching-up job left for later runs
    (its local state table); ``None`` for other jobs or when none are pending."""
    from ...definitions.contracts import LazySession, RunEnvironment
    from .triggered import pending_keys

    environment = RunEnvironment(LazySession(local_spark_session), warehouse, False, "")
    try:
        left = pending_keys(job, environment)
    except UsageError:
        return None
    if not left:
        return None
    shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
    return f"{counted(len(left), 'key')} left for the next runs (max_keys): {shown}"
