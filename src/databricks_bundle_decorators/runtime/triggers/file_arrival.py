"""A file-triggered run: list the location, compare with the last processed listing,
take the keys of the new or changed files (a listing maps each path to its size and
modification time; a path new or with another stamp is changed).

Listing reads ``binaryFile`` (https://docs.databricks.com/aws/en/query/formats/binary)
selecting only ``path``, ``length`` and ``modificationTime``, so no file is opened: the
one way that works on serverless (Spark Connect only,
https://docs.databricks.com/aws/en/compute/serverless/limitations) and for cloud URLs
(the Files API lists volumes only, https://docs.databricks.com/api/workspace/files);
``recursiveFileLookup`` lists every subfolder, as the trigger watches them. Deleted files
name no keys: the trigger fires on new files only
(https://docs.databricks.com/aws/en/jobs/file-arrival-triggers).

Example:
    >>> before = {"in/date=2024-03-15/a.json": (10, 1)}
    >>> after = {"in/date=2024-03-15/a.json": (12, 2), "in/date=2024-03-19/b.json": (5, 3)}
    >>> changed, gone = changed_files(before, after)
    >>> sorted(changed), gone
    (['in/date=2024-03-15/a.json', 'in/date=2024-03-19/b.json'], ())
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, time
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from ...backfill.changed_keys import affected_keys, plan_keys, with_lookback
from ...backfill.time_backfill import TimeBackfill
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...definitions.triggers import FileArrival, KeyFromColumn, KeyFromPath
from ...errors import UsageError
from ..core.errors import TaskRunError
from ..core.key_columns import backfill_key_column
from .trigger_state import FileStamp, StoredRun, TriggerState

_logger = logging.getLogger("databricks_bundle_decorators.runtime")
Listing = Mapping[str, FileStamp]


def changed_files(
    before: Listing | None, after: Listing
) -> tuple[dict[str, FileStamp], tuple[str, ...]]:
    """The files of ``after`` that are new or changed since ``before`` (every file
    when ``before`` is ``None``: no run was processed yet), and the paths gone."""
    if before is None:
        return dict(after), ()
    changed = {p: s for p, s in after.items() if before.get(p) != s}
    gone = tuple(sorted(p for p in before if p not in after))
    return changed, gone


def relative_path(path: str, root: str) -> str:
    """``path`` below the monitored location ``root`` (the listing's paths carry a
    scheme, ``file:/...`` or ``dbfs:/Volumes/...``, that ``root`` may not have).

    Example:
        >>> relative_path("dbfs:/Volumes/c/s/v/in/date=2024-03-15/a.json", "/Volumes/c/s/v/in/")
        'date=2024-03-15/a.json'
        >>> relative_path("s3://bucket/in/x.csv", "s3://bucket/in")
        'x.csv'
    """
    parsed = urlsplit(root)
    folder = parsed.path if parsed.scheme else root
    folder = "/" + folder.strip("/") + "/" if folder.strip("/") else "/"
    at = path.find(folder)
    return path[at + len(folder) :] if at >= 0 else path


def path_keys(
    keys: KeyFromPath, paths: Iterable[str], root: str, backfill: TimeBackfill
) -> tuple[set[str], list[str]]:
    """The keys the paths name (by ``keys``'s pattern, below ``root``), and the paths
    that match no pattern (they have no key).

    Raises:
        TaskRunError: a path's key text is not a key of ``backfill`` (one line naming
            the file and the expected format).
    """
    found: set[str] = set()
    unmatched: list[str] = []
    for path in paths:
        text = keys.key_text(relative_path(path, root))
        if text is None:
            unmatched.append(path)
            continue
        try:
            backfill.cadence.parse(text, what="key")
        except ValueError as exc:
            raise TaskRunError(
                f"file {path}: {exc} (taken by KeyFromPath({keys.pattern!r})); rename the "
                "file or change the pattern"
            ) from None
        found.add(text)
    return found, sorted(unmatched)


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
    files new or changed since the last processed listing, widened by lookback, plus the
    keys pending, capped by ``max_keys``; with the listing change.

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
