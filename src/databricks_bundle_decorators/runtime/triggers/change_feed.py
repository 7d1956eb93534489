"""Which source keys changed between two table versions, from documented interfaces only.

1. The change data feed: ``readChangeFeed`` from version ``start`` to ``end`` inclusive
   (https://docs.databricks.com/aws/en/delta/delta-change-data-feed, "Read changes in
   batch queries"); every change row (insert, update pre/post image, delete) puts its
   ``event_time`` into a key.
2. Best effort, when the feed is not there (CDF off, or not over the whole range):
   ``DESCRIBE HISTORY`` (https://docs.databricks.com/aws/en/delta/history, "History
   schema": ``operationParameters``). A commit that replaced a ``replaceWhere`` range of
   the event-time column names its keys in ``predicate``; commits that change no data
   (``OPTIMIZE``, ``VACUUM`` ...) are skipped. The predicate's text is not a documented
   format, so this path is marked best effort in the log, and any commit it cannot read
   makes it give up.
3. Otherwise the run fails with one line naming the remedy: enable the change data feed.

Unity Catalog manages where a managed table's files live, so a job never reads a table's
``_delta_log`` files itself (``tests/runtime/test_no_delta_log_reads.py`` checks the
package for it).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timezone
from typing import Any

from ...backfill.time_backfill import TimeBackfill
from ...definitions import Source
from ..core.errors import TaskRunError
from ..core.key_columns import backfill_key_column
from ..storage.delta_history import MAINTENANCE_OPERATIONS, sql_target
from ..storage.formats import TableRef

_logger = logging.getLogger("databricks_bundle_decorators.runtime")

CDF_REMEDY = (
    "enable the change data feed on it (ALTER TABLE {table} SET TBLPROPERTIES "
    "(delta.enableChangeDataFeed = true)), then rerun with --from-version at or after the "
    "version that enabled it"
)
_COMPARISON = re.compile(
    r"[`(\s]*(?P<col>[A-Za-z_][A-Za-z0-9_]*)`?\s*(?P<op>>=|<=|=|>|<)\s*'(?P<lit>[^']*)'"
)
_IN = re.compile(r"[`(\s]*(?P<col>[A-Za-z_][A-Za-z0-9_]*)`?\s+IN\s*\((?P<items>[^)]*)\)", re.I)


def changed_keys(
    spark: Any, source: Source, table: TableRef, backfill: TimeBackfill, start: int, end: int
) -> set[str]:
    """The keys of ``source``'s rows changed by versions ``start..end`` (inclusive).

    Raises:
        TaskRunError: neither the change feed nor the history tells (one line, with the
            remedy).
    """
    assert source.event_time is not None  # TableUpdate checks it at definition
    try:
        feed = _read_feed(spark, table, start, end)
        keyed = feed.select(backfill_key_column(source.event_time, backfill).alias("k"))
        return {str(r[0]) for r in keyed.distinct().collect() if r[0] is not None}
    except Exception as exc:  # CDF off or not recorded over the range
        if not _missing_feed(exc):
            raise
    keys = _history_keys(spark, table, source.event_time, backfill, start, end)
    if keys is None:
        raise TaskRunError(
            f"source {source.name}: versions {start}..{end} have no change data feed and "
            f"their history does not name the changed keys; {CDF_REMEDY.format(table=source.name)}"
        )
    _logger.warning(
        "source %s: changed keys of versions %d..%d read from DESCRIBE HISTORY "
        "(replaceWhere predicates, best effort: no change data feed): %s",
        source.name,
        start,
        end,
        sorted(keys),
    )
    return keys


def _read_feed(spark: Any, table: TableRef, start: int, end: int) -> Any:
    reader = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", start)
        .option("endingVersion", end)
    )
    if table.path is not None:
        return reader.load(str(table.path))
    return reader.table(table.qualified)


def _missing_feed(exc: Exception) -> bool:
    text = str(exc)
    return "DELTA_MISSING_CHANGE_DATA" in text or "change data" in text.lower()


def _history_keys(
    spark: Any, table: TableRef, column: str, backfill: TimeBackfill, start: int, end: int
) -> set[str] | None:
    rows = (
        spark.sql(f"DESCRIBE HISTORY {sql_target(table)}")
        .select("version", "operation", "operationParameters")
        .collect()
    )
    keys: set[str] = set()
    for version, operation, parameters in rows:
        if not start <= int(version) <= end or str(operation) in MAINTENANCE_OPERATIONS:
            continue
        predicate = dict(parameters or {}).get("predicate")
        found = predicate_keys(str(predicate), column, backfill) if predicate else None
        if found is None:
            return None
        keys |= found
    return keys


def predicate_keys(predicate: str, column: str, backfill: TimeBackfill) -> set[str] | None:
    """The keys a ``replaceWhere`` predicate over ``column`` covers; ``None`` when it is
    not a bounded range, equality or ``IN`` list of that column (best effort).

    Example:
        >>> from databricks_bundle_decorators.backfill import DailyBackfill
        >>> sorted(predicate_keys("ts >= '2024-01-02' AND ts < '2024-01-04'", "ts",
        ...                       DailyBackfill("2024-01-01")))
        ['2024-01-02', '2024-01-03']
    """
    lower: datetime | None = None
    upper: datetime | None = None
    points: list[datetime] = []
    for match in _COMPARISON.finditer(predicate):
        if match.group("col") != column:
            return None
        at = _instant(match.group("lit"))
        if at is None:
            return None
        op = match.group("op")
        if op == "=":
            points.append(at)
        elif op in (">=", ">"):
            lower = at if lower is None else max(lower, at)
        else:
            upper = at if upper is None else min(upper, at)
    for match in _IN.finditer(predicate):
        if match.group("col") != column:
            return None
        for item in match.group("items").split(","):
            at = _instant(item.strip().strip("'"))
            if at is None:
                return None
            points.append(at)
    keys = {backfill.key_of(p) for p in points}
    if lower is not None and upper is not None and lower < upper:
        key, last = backfill.key_of(lower), backfill.key_of(upper)
        while backfill.compare(key, last) < 0 or (
            key == last and backfill.window(key).start.to_stdlib() < upper
        ):
            keys.add(key)
            key = backfill.shift_key(key, 1)
    elif lower is not None or upper is not None:
        return None  # an open range: which keys, the history does not say
    return keys or None


def _instant(text: str) -> datetime | None:
    """A literal as an instant; a naive one is read in UTC, Databricks' default session
    time zone (https://docs.databricks.com/aws/en/sql/language-manual/parameters/timezone)."""
    try:
        at = datetime.fromisoformat(text.replace(" ", "T", 1) if len(text) > 10 else text)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)
