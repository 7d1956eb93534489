"""A Delta table's history and restoring it: ``DESCRIBE HISTORY`` and ``RESTORE`` by
catalog name on Databricks; locally the history is read from the table's log files (no
JVM: ``undo --dry-run`` starts no Spark) and ``RESTORE`` runs by folder in the same SQL."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...backfill.wire.provenance import split_provenance
from ..core.errors import TaskRunError
from ..core.provenance import pinned_version
from .delta import DELTA_LOG, delta_table_exists, read_delta
from .delta import sql_target as sql_target
from .formats import TableRef


@dataclass(frozen=True, slots=True)
class Commit:
    """One version in a table's history (``at``: the commit time, UTC, for messages)."""

    version: int
    operation: str
    metadata: str | None = None
    at: str = ""
    placement: Placement | None = field(default=None, compare=False, hash=False, repr=False)
    """Where its files fall (only when read with ``files=True``)."""

    def describe(self) -> str:
        """``version 6 (WRITE at 2024-06-01 12:00:00Z by 'dbxdec:other:t:9')`` (the
        identity of its ``userMetadata``: a provenance record after it is left out)."""
        at = f" at {self.at}" if self.at else ""
        identity = split_provenance(self.metadata)[0] if self.metadata else ""
        by = f" by {identity!r}" if identity else " without userMetadata"
        return f"version {self.version} ({self.operation}{at}{by})"


def latest_commit(spark: Any, table: TableRef) -> Any:
    """The first row of ``DESCRIBE HISTORY``, the newest version (the history lists
    operations newest first, https://docs.databricks.com/aws/en/delta/history)."""
    return spark.sql(f"DESCRIBE HISTORY {sql_target(table)} LIMIT 1").first()


def table_version(spark: Any, table: TableRef) -> int | None:
    """The table's latest version, to pin a read to; ``None`` when it has none (missing,
    or not a Delta table: a view). A catalog table's from ``DESCRIBE HISTORY ... LIMIT 1``;
    a local table's from its log's file names (:func:`local_table_version`: no query)."""
    if table.path is not None:
        return local_table_version(table.path)
    try:
        row = latest_commit(spark, table)
    except Exception:  # a view, a foreign table: nothing to pin, read as it is
        return None
    return None if row is None else int(row["version"])


def read_pinned(spark: Any, table: TableRef) -> Any:
    """The existing Delta ``table`` as a task's input: at the version the running task
    pinned for it on its first read (:func:`table_version`), which its output's commit
    records (``runtime/core/provenance.py``); as it is outside a task run. Inputs only:
    a task's reads of its own output (presence, baselines, upserts) take the latest."""
    return read_delta(spark, table, pinned_version(table.name, lambda: table_version(spark, table)))


def local_table_version(folder: Path) -> int | None:
    """The latest version of the local Delta table in ``folder``: the highest
    ``_delta_log/<version>.json`` (the newest commit always has its file, checkpoints or
    not: https://github.com/delta-io/delta/blob/master/PROTOCOL.md#delta-log-entries);
    ``None`` without a log. Lists the folder, reads no file."""
    log = folder / DELTA_LOG
    if not log.is_dir():
        return None
    versions = (p.stem for p in log.glob("*.json"))
    return max((int(v) for v in versions if v.isdigit() and len(v) == 20), default=None)


def read_commits(spark: Any, table: TableRef) -> tuple[Commit, ...]:
    """The table's history, oldest first (empty when the table does not exist); a local
    table's from its log (:func:`read_log_commits`, ``spark`` unused)."""
    if table.path is not None:
        return read_log_commits(table.path)
    if not delta_table_exists(spark, table):
        return ()
    from pyspark.sql import functions as F

    rows = (
        spark.sql(f"DESCRIBE HISTORY {sql_target(table)}")
        .select(
            "version",
            "operation",
            "userMetadata",
            F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss'Z'").alias("at"),
        )
        .collect()
    )
    commits = (Commit(int(r[0]), str(r[1]), r[2], str(r[3] or "")) for r in rows)
    return tuple(sorted(commits, key=lambda c: c.version))


def read_log_commits(folder: Path, *, after: int = -1, files: bool = False) -> tuple[Commit, ...]:
    """The history of the local Delta table in ``folder``, oldest first, as ``DESCRIBE
    HISTORY`` shows it: one commit per ``_delta_log/<version>.json`` file still in the log,
    from its ``commitInfo`` action (operation, ``userMetadata``, ``timestamp`` in epoch
    milliseconds), as the Delta protocol defines them
    (https://github.com/delta-io/delta/blob/master/PROTOCOL.md#commit-provenance-information).
    Empty when the folder has no log. Read without Spark: a few small JSON files.

    Only the versions above ``after``; with ``files``, each commit also tells where its
    ``add`` and ``remove`` actions fall (:class:`Placement`: their ``partitionValues`` and
    the ``minValues``/``maxValues`` of their ``stats``, protocol sections "Add File and
    Remove File" and "Per-file Statistics").
    """
    log = folder / DELTA_LOG
    commits: list[Commit] = []
    for path in log.glob("*.json") if log.is_dir() else ():
        if not path.stem.isdigit() or len(path.stem) != 20:  # not a commit file
            continue
        if int(path.stem) <= after:
            continue
        info: dict[str, Any] = {}
        placement = Placement() if files else None
        if placement is not None:  # every action: one JSON document of the whole file
            lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line]
            for action in json.loads("[" + ",".join(lines) + "]"):
                if "commitInfo" in action:
                    info = action["commitInfo"] or {}
                elif "add" in action or "remove" in action:
                    placement.place(action.get("add") or action.get("remove") or {})
        else:
            with path.open(encoding="utf-8") as actions:
                for line in actions:
                    if '"commitInfo"' in line:
                        info = json.loads(line).get("commitInfo") or {}
                        break
        at = ""
        if isinstance(info.get("timestamp"), int):
            moment = datetime.fromtimestamp(info["timestamp"] / 1000, timezone.utc)
            at = moment.strftime("%Y-%m-%d %H:%M:%SZ")
        metadata = info.get("userMetadata")
        commits.append(
            Commit(
                int(path.stem),
                str(info.get("operation") or ""),
                str(metadata) if metadata is not None else None,
                at,
                placement,
            )
        )
    return tuple(sorted(commits, key=lambda c: c.version))


@dataclass(slots=True)
class Placement:
    """Where one commit's files fall: per partition column, the values its ``add`` and
    ``remove`` actions name; per other column, the least and greatest value their
    statistics give (``ranges``, valid for a column only when every file stated it)."""

    files: int = 0
    values: dict[str, set[str]] = field(default_factory=dict)
    ranges: dict[str, tuple[str, str]] = field(default_factory=dict)
    stated: dict[str, int] = field(default_factory=dict)

    def place(self, action: dict[str, Any]) -> None:
        """Count one ``add`` or ``remove`` action."""
        self.files += 1
        for column, value in (action.get("partitionValues") or {}).items():
            self.values.setdefault(column, set()).add("" if value is None else str(value))
        stats = action.get("stats")
        if not isinstance(stats, str):
            return
        try:
            parsed = json.loads(stats)
        except ValueError:
            return
        lows, highs = parsed.get("minValues") or {}, parsed.get("maxValues") or {}
        for column, low in lows.items():
            high = highs.get(column)
            if isinstance(low, dict) or low is None or high is None:
                continue  # a struct's nested statistics, or none
            low, high = str(low), str(high)
            known = self.ranges.get(column)
            self.ranges[column] = (
                (low, high)
                if known is None
                else (
                    min(known[0], low),
                    max(known[1], high),
                )
            )
            self.stated[column] = self.stated.get(column, 0) + 1

    def range_of(self, column: str) -> tuple[str, str] | None:
        """The least and greatest value of ``column`` in the commit's files, when every
        file stated them."""
        if self.stated.get(column, 0) != self.files:
            return None
        return self.ranges.get(column)


MAINTENANCE_OPERATIONS: frozenset[str] = frozenset(
    {
        # Operations that rewrite or delete files but never change the table's rows, as
        # DESCRIBE HISTORY names them (the "operation metrics keys" table of
        # https://docs.databricks.com/delta/history.html lists OPTIMIZE and VACUUM beside
        # the writes; open-source Delta logs VACUUM as VACUUM START/END and statistics as
        # COMPUTE STATS). Predictive optimization runs OPTIMIZE, VACUUM and ANALYZE on
        # managed tables by itself:
        # https://docs.databricks.com/en/optimizations/predictive-optimization.html
        "OPTIMIZE",
        "VACUUM START",
        "VACUUM END",
        "ANALYZE",
        "COMPUTE STATS",
    }
)
"""Commits no writer of rows made: undo neither counts them as another writer nor refuses."""
RESTORE_OPERATIONS = frozenset({"RESTORE", "DELETE"})
"""What undo's own commits are (``RESTORE``, or ``DELETE`` for a table the backfill made)."""


def changes_rows(commit: Commit) -> bool:
    """Whether ``commit`` may have changed the table's rows (not a maintenance commit)."""
    return commit.operation.upper() not in MAINTENANCE_OPERATIONS


class FilesVacuumed(Exception):
    """The version to restore has data files that are gone (``VACUUM`` removed them)."""


def restore_version(spark: Any, table: TableRef, version: int | None, *, after: int) -> int:
    """Restore ``table`` to ``version`` (``RESTORE TABLE``), or with ``None`` delete every
    row (``DELETE FROM``); returns the version that commit made, read back from the
    history (its first ``RESTORE``/``DELETE`` after version ``after``): neither statement
    takes writer options that would label it.

    Raises:
        FilesVacuumed: the version's data files are gone (open-source Delta checks them
            before it commits, tests/launch/test_undo_maintenance.py; a local table is
            also checked beforehand by :func:`files_gone`); nothing changed.
        TaskRunError: Delta refused for another reason.
    """
    target = sql_target(table)
    if version is None:
        statement = f"DELETE FROM {target}"
    else:
        statement = f"RESTORE TABLE {target} TO VERSION AS OF {int(version)}"
    from pyspark.errors import PySparkException

    try:
        spark.sql(statement).collect()
    except PySparkException as exc:  # Spark's own errors (converted from the JVM)
        text = str(exc).strip()
        if version is not None and _missing_files(text):
            raise FilesVacuumed(text) from None
        first = text.splitlines()[0] if text else type(exc).__name__
        what = "empty" if version is None else f"restore to version {version}"
        raise TaskRunError(f"Delta refused to {what} table {table.name}: {first}") from None
    made = [
        c.version
        for c in read_commits(spark, table)
        if c.version > after and c.operation.upper() in RESTORE_OPERATIONS
    ]
    if not made:
        raise TaskRunError(f"table {table.name}: the restore left no commit in its history")
    return made[0]


def _missing_files(text: str) -> bool:
    """Whether Delta's error says the restored version's data files do not exist
    (open-source Delta 4.0's ``restoreMissedDataFilesError``, or a FileNotFound)."""
    compact = text.upper().replace(" ", "")
    return any(mark in compact for mark in ("MISSEDFILES", "IGNOREMISSINGFILES", "FILENOTFOUND"))


def files_gone(spark: Any, table: TableRef, version: int) -> bool:
    """Whether a data file of ``version`` of a local (folder) table no longer exists
    (a catalog table's ``RESTORE`` refuses by itself)."""
    if table.path is None:
        return False
    from urllib.parse import unquote, urlparse

    frame = spark.read.format("delta").option("versionAsOf", int(version)).load(str(table.path))
    for uri in frame.inputFiles():
        parsed = urlparse(uri)
        if parsed.scheme in ("", "file") and not Path(unquote(parsed.path)).exists():
            return True
    return False
