"""A file-triggered run: list the location, compare with the last processed listing,
take the keys of the new or changed files.

The hook in :mod:`.triggered` calls :func:`resolve_file_arrival` in the first task of a
run that a ``FileArrival(keys=...)`` trigger started; the keys are stored and every task
and repair of the run reads them, as for a table-triggered run.

**Listing.** ``spark.read.format("binaryFile")`` with only ``path``, ``length`` and
``modificationTime`` selected: Spark opens a file only for the ``content`` column
(``BinaryFileFormat.parse`` in apache/spark reads the stream in the ``content`` case
alone), so this lists without reading. It is the one way that works on classic and
serverless compute and for both kinds of location: serverless runs Spark Connect APIs
only, so no Hadoop ``FileSystem`` through the JVM
(https://docs.databricks.com/aws/en/compute/serverless/limitations); the Files API
(``GET /api/2.0/fs/directories{directory_path}``) works on Unity Catalog volume paths
only, not the cloud URLs a trigger may watch, and lists one directory per request
(https://docs.databricks.com/api/workspace/files); ``dbutils.fs`` outside a notebook
is the SDK's client-side version, "implemented natively in Python" over the REST APIs
(https://databricks-sdk-py.readthedocs.io/en/latest/dbutils.html), so it inherits their
limits and walks folders one ``ls`` at a time. The binary file source is documented at
https://docs.databricks.com/aws/en/query/formats/binary, with the caveat that
"in some Hadoop FileSystem implementations" ``modificationTime`` "might be unavailable"
(then a rewrite of the same size is not seen). ``recursiveFileLookup`` lists every
subfolder, as the trigger itself watches them
(https://docs.databricks.com/aws/en/jobs/file-arrival-triggers: "recursively checks for
new files in all subdirectories"); Spark skips names starting with ``_`` or ``.``.

**Deleted files** name no keys: the trigger fires on new files only ("Only new files
trigger runs", same page), and landing folders are commonly emptied by retention or
archiving after processing; rewriting a key because its files were cleaned up would
replace good output with what is left. A gone file leaves the recorded listing, so if
it comes back it is new again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from ...backfill.changed_keys import affected_keys, plan_keys, with_lookback
from ...backfill.time_backfill import TimeBackfill
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...definitions.file_keys import KeyFromColumn, KeyFromPath
from ...definitions.triggers import FileArrival
from ...errors import UsageError
from ..core.errors import TaskRunError
from ..core.key_columns import backfill_key_column
from .file_changes import changed_files, path_keys
from .trigger_state import FileStamp, StoredRun, TriggerState

_logger = logging.getLogger("databricks_bundle_decorators.runtime")


def location(job: JobDefinition, trigger: FileArrival, environment: RunEnvironment) -> str:
    """What the run lists: the url on Databricks, the declared local folder elsewhere.

    Raises:
        UsageError: a local run of a trigger without ``local=``.
    """
    if environment.databricks:
        return trigger.url
    if trigger.local is None:
        raise UsageError(
            f"job {job.name!r}: a local run cannot list {trigger.url}; declare "
            "FileArrival(..., local='landing/') (a folder under the project, or a file: URL)"
        )
    return trigger.local


def list_files(spark: Any, root: str) -> dict[str, FileStamp]:
    """Every file under ``root`` (recursively): path -> (size, modification time in
    epoch microseconds), without reading any file's content.

    Raises:
        TaskRunError: the location does not exist or cannot be listed (one line).
    """
    from pyspark.sql import functions as F

    try:
        frame = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(root)
        rows = frame.select(
            "path", "length", F.unix_micros("modificationTime").alias("mtime")
        ).collect()
    except Exception as exc:  # Spark raises its own analysis errors; one line for them
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TaskRunError(f"cannot list {root}: {first}") from None
    return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}


def column_keys(
    spark: Any, keys: KeyFromColumn, paths: Sequence[str], backfill: TimeBackfill
) -> set[str]:
    """The keys of ``keys.column``'s values in the files ``paths`` (and no other file).

    Raises:
        TaskRunError: the files have no such column.
    """
    if not paths:
        return set()
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType

    options = {"recursiveFileLookup": "true", **dict(keys.options)}
    frame = spark.read.format(keys.file_format).options(**options).load(list(paths))
    if keys.column not in frame.columns:
        raise TaskRunError(
            f"KeyFromColumn({keys.column!r}): the new files have no column {keys.column!r} "
            f"(columns: {', '.join(frame.columns)})"
        )
    column = frame.schema[keys.column].dataType
    if isinstance(column, DateType):  # a calendar day: the key of its first instant
        days = frame.select(keys.column).distinct().collect()
        return {_day_key(r[0], backfill) for r in days if r[0] is not None}
    keyed = frame.select(backfill_key_column(F.col(keys.column).cast("timestamp"), backfill))
    return {str(r[0]) for r in keyed.distinct().collect() if r[0] is not None}


def _day_key(day: date, backfill: TimeBackfill) -> str:
    return backfill.key_of(datetime.combine(day, time(), tzinfo=ZoneInfo(backfill.tz)))


def resolve_file_arrival(
    job: JobDefinition,
    trigger: FileArrival,
    state: TriggerState,
    environment: RunEnvironment,
    now: datetime,
) -> StoredRun:
    """The keys of a file-triggered run whose logical time is ``now``: the keys of the
    files new or changed since the last processed run's listing (every file before the
    first), widened by lookback, plus the keys pending from earlier runs, capped by
    ``max_keys``; with the listing change, recorded when the run's last task commits.

    Raises:
        TaskRunError: the location cannot be listed, a path's key is malformed, or a
            KeyFromColumn column is missing.
    """
    backfill = job.backfill
    assert isinstance(backfill, TimeBackfill)  # trigger_of checks it at definition
    root = location(job, trigger, environment)
    listing = list_files(environment.spark, root)
    latest = state.latest_advance()
    files, gone = changed_files(state.processed_listing(), listing)
    if isinstance(trigger.keys, KeyFromPath):
        changed, unmatched = path_keys(trigger.keys, sorted(files), root, backfill)
        if unmatched:
            _logger.warning(
                "job %r: %d new or changed files match no KeyFromPath(%r) and name no key: %s",
                job.name,
                len(unmatched),
                trigger.keys.pattern,
                unmatched[:5],
            )
    else:
        assert isinstance(trigger.keys, KeyFromColumn)  # the hook runs only with keys
        changed = column_keys(environment.spark, trigger.keys, sorted(files), backfill)
    pending = latest.pending if latest is not None else ()
    current = backfill.current_key(now=now)
    plan = plan_keys(
        backfill, [*pending, *affected_keys(backfill, changed, current)], trigger.max_keys
    )
    if not plan.run:
        _logger.warning(
            "job %r: no new or changed file under %s since the last processed run and no "
            "pending key: nothing to write",
            job.name,
            root,
        )
    else:
        _logger.info(
            "job %r: %d new or changed files, %d gone (not reprocessed); keys %s, pending %s",
            job.name,
            len(files),
            len(gone),
            list(plan.run),
            list(plan.pending),
        )
    return StoredRun(with_lookback(backfill, plan.run), plan.run, {}, plan.pending, files, gone)
