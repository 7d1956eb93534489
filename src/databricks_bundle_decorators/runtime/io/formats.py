"""Table formats: they only read and write. Predicates, windows, checks and naming
belong to :class:`~.spark_table.SparkTableIoManager`.

A write has two phases so that nothing becomes visible before the output is validated:
:meth:`TableFormat.stage` materialises the output where readers cannot see it, the
IoManager measures it (from metrics observed while a format that writes on
:meth:`~TableFormat.stage` wrote it, or by reading :attr:`StagedWrite.frame`), then
:meth:`StagedWrite.commit` replaces the run's partitions or :meth:`StagedWrite.discard`
drops everything.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote

from ..errors import TaskRunError
from ..predicates import quote_identifier

META_FILE = "_dbxdec_table.json"
"""Schema and partition column of a local table (Spark ignores ``_`` files on read)."""
STAGING_DIR = ".dbxdec_staging"


@dataclass(frozen=True, slots=True)
class TableRef:
    """Where a table lives: its name, its quoted name and, locally, its folder."""

    name: str
    qualified: str
    path: Path | None = None


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """What a commit replaces.

    Attributes:
        partition_column: The table's partition column; ``None`` replaces the whole table.
        replace_where: Predicate selecting exactly the written keys (``None``: the
            partitions present in the output, or the whole unpartitioned table).
        cleared_keys: Written keys with no rows in the output; their old rows go away.
    """

    partition_column: str | None
    replace_where: str | None
    cleared_keys: tuple[str, ...] = ()


class StagedWrite(ABC):
    """An output materialised but not yet visible in the table."""

    @property
    @abstractmethod
    def frame(self) -> Any:
        """The rows that a commit makes visible (for validation and checks)."""

    def present_keys(self, partition_column: str) -> frozenset[str] | None:
        """The partition values that have staged rows, when known without reading the
        rows; ``None`` otherwise."""
        return None

    @abstractmethod
    def commit(self, request: WriteRequest) -> None:
        """Replace the requested partitions with the staged rows."""

    @abstractmethod
    def discard(self) -> None:
        """Release the staged rows (after a commit, or instead of one). Idempotent."""


class TableFormat(ABC):
    """Reads and writes one kind of table."""

    writes_on_stage: ClassVar[bool] = False
    """Whether :meth:`stage` computes the frame (writes it somewhere private): then an
    observation attached to the frame is filled when ``stage`` returns."""

    @abstractmethod
    def read(
        self, spark: Any, table: TableRef, *, partition_column: str | None, keys: Sequence[str]
    ) -> Any | None:
        """The table as a lazy ``DataFrame``; ``None`` when it does not exist.

        ``keys`` (non-empty) is a pruning hint: only those partitions are needed. The
        caller still filters with the exact predicate.
        """

    @abstractmethod
    def stage(self, frame: Any, table: TableRef, *, partition_column: str | None) -> StagedWrite:
        """Materialise ``frame`` for a later commit."""


# -- local parquet ---------------------------------------------------------------------


class LocalParquetFormat(TableFormat):
    """A Hive-partitioned parquet dataset in a local folder.

    Staging: Spark writes the output once, partitioned, into
    ``<warehouse>/.dbxdec_staging/<id>/``; metrics are observed in that job, and
    anything that reads the output back reads those very files. Commit:
    dynamic partition overwrite, done as Spark's own ``partitionOverwriteMode=dynamic``
    commit does it: each written partition folder replaces the table's folder of the
    same key (a rename), other partitions are untouched. Commits of one table are
    serialised with a lock file.
    """

    writes_on_stage: ClassVar[bool] = True

    def read(
        self, spark: Any, table: TableRef, *, partition_column: str | None, keys: Sequence[str]
    ) -> Any | None:
        path = _path(table)
        if not path.is_dir():
            return None
        meta = _read_meta(path)
        if meta is None:
            return spark.read.parquet(str(path))
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(meta["schema"])
        reader = spark.read.schema(schema)
        if partition_column is not None and keys:
            folders = [path / _partition_folder(partition_column, key) for key in keys]
            present = [str(f) for f in folders if f.is_dir()]
            if not present:
                return spark.createDataFrame([], schema)
            frame = reader.option("basePath", str(path)).parquet(*present)
        else:
            frame = reader.parquet(str(path))
        # Spark puts partition columns last; restore the declared order.
        return frame.select(*[quote_identifier(name) for name in schema.fieldNames()])

    def stage(self, frame: Any, table: TableRef, *, partition_column: str | None) -> StagedWrite:
        path = _path(table)
        staging = path.parent / STAGING_DIR / f"{path.name}-{uuid.uuid4().hex}"
        # The folder is new: a plain (static) write, without dynamic overwrite's extra
        # staging and renames inside Spark.
        writer = frame.write.mode("overwrite").format("parquet")
        if partition_column is not None:
            writer = writer.option("partitionOverwriteMode", "static").partitionBy(partition_column)
        try:
            writer.save(str(staging))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return _LocalStagedWrite(table, staging, frame.sparkSession, frame.schema)


class _LocalStagedWrite(StagedWrite):
    def __init__(self, table: TableRef, staging: Path, spark: Any, schema: Any) -> None:
        self._table = table
        self._staging = staging
        self._spark = spark
        self._struct = schema
        self._schema = schema.jsonValue()
        self._frame: Any = None

    @property
    def frame(self) -> Any:
        if self._frame is None:  # listed only when something reads the staged rows
            staged = self._spark.read.schema(self._struct).parquet(str(self._staging))
            names = self._struct.fieldNames()
            self._frame = staged.select(*[quote_identifier(n) for n in names])
        return self._frame

    def present_keys(self, partition_column: str) -> frozenset[str] | None:
        prefix = f"{partition_column}="
        return frozenset(
            unquote(folder.name[len(prefix) :])
            for folder in self._staging.iterdir()
            if folder.is_dir() and folder.name.startswith(prefix)
        )

    def commit(self, request: WriteRequest) -> None:
        path = _path(self._table)
        column = request.partition_column
        path.parent.mkdir(parents=True, exist_ok=True)
        with _table_lock(path):
            meta = _read_meta(path) if path.is_dir() else None
            if meta is not None:
                _check_compatible(self._table, meta, self._schema, column)
            wanted = {"schema": self._schema, "partition_column": column}
            if column is None:
                _swap(self._staging, path)
            else:
                path.mkdir(exist_ok=True)
                for folder in sorted(self._staging.iterdir()):
                    if folder.is_dir() and folder.name.startswith(f"{column}="):
                        _swap(folder, path / folder.name)
                for key in request.cleared_keys:
                    target = path / _partition_folder(column, key)
                    if target.is_dir():
                        shutil.rmtree(target)
            if meta != wanted or not (path / META_FILE).is_file():
                _write_json_atomic(path / META_FILE, wanted)

    def discard(self) -> None:
        shutil.rmtree(self._staging, ignore_errors=True)


# -- Delta (Databricks) ----------------------------------------------------------------


class DeltaFormat(TableFormat):
    """A Unity Catalog Delta table. A commit is one ``replaceWhere`` overwrite over the
    run's keys, so a ranged run replaces all its keys in a single Delta commit."""

    def read(
        self, spark: Any, table: TableRef, *, partition_column: str | None, keys: Sequence[str]
    ) -> Any | None:
        if not spark.catalog.tableExists(table.name):
            return None
        return spark.read.table(table.qualified)

    def stage(self, frame: Any, table: TableRef, *, partition_column: str | None) -> StagedWrite:
        return _DeltaStagedWrite(frame, table)


class _DeltaStagedWrite(StagedWrite):
    def __init__(self, frame: Any, table: TableRef) -> None:
        self._table = table
        self._persisted = False
        try:  # validated and written once, even with nondeterministic columns
            self._frame = frame.persist()
            self._persisted = True
        except Exception:  # serverless compute has no cache; the frame is recomputed
            self._frame = frame

    @property
    def frame(self) -> Any:
        return self._frame

    def commit(self, request: WriteRequest) -> None:
        spark = self._frame.sparkSession
        writer = self._frame.write.format("delta").mode("overwrite")
        if request.partition_column is not None:
            if request.replace_where is not None:
                writer = writer.option("replaceWhere", request.replace_where)
            else:
                writer = writer.option("partitionOverwriteMode", "dynamic")
            if not spark.catalog.tableExists(self._table.name):
                writer = writer.partitionBy(request.partition_column)
        writer.saveAsTable(self._table.qualified)

    def discard(self) -> None:
        if self._persisted:
            self._persisted = False
            self._frame.unpersist()


# -- helpers ---------------------------------------------------------------------------


def _path(table: TableRef) -> Path:
    if table.path is None:
        raise TaskRunError(f"table {table.name} has no local folder")
    return table.path


def _partition_folder(column: str, key: str) -> str:
    # Keys are validated by the backfill definition (dates, weeks, hours, static keys of
    # A-Z a-z 0-9 _ . -), which Hive path escaping leaves unchanged.
    if not key or "/" in key or key in (".", ".."):
        raise TaskRunError(f"partition key {key!r} cannot name a folder")
    return f"{column}={key}"


def _swap(source: Path, target: Path) -> None:
    """Move ``source`` to ``target``, replacing it; the old folder is removed after."""
    aside = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
    if target.exists():
        os.replace(target, aside)
    os.replace(source, target)
    shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def _table_lock(path: Path) -> Iterator[None]:
    lock = path.parent / f".{path.name}.lock"
    with open(lock, "a+") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: commits are not serialised
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads((path / META_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TaskRunError(f"cannot read {path / META_FILE}: {exc}") from None
    return loaded if isinstance(loaded, dict) else None


def _columns(schema: dict[str, Any]) -> dict[str, str]:
    return {f["name"]: json.dumps(f["type"], sort_keys=True) for f in schema.get("fields", [])}


def _check_compatible(
    table: TableRef, meta: dict[str, Any], schema: dict[str, Any], partition_column: str | None
) -> None:
    if meta.get("partition_column") != partition_column:
        raise TaskRunError(
            f"table {table.name} is partitioned by {meta.get('partition_column')!r}, the "
            f"IoManager writes partition column {partition_column!r}; nothing was written. "
            f"Delete {table.path} to recreate it"
        )
    old, new = _columns(meta.get("schema", {})), _columns(schema)
    if old != new:
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        changed = sorted(c for c in set(old) & set(new) if old[c] != new[c])
        parts = [
            f"{label} {', '.join(cols)}"
            for label, cols in (("added", added), ("removed", removed), ("retyped", changed))
            if cols
        ]
        raise TaskRunError(
            f"the output schema differs from table {table.name} ({'; '.join(parts)}); "
            f"nothing was written. Delete {table.path} to rebuild the table with the new schema"
        )


def _write_json_atomic(target: Path, document: dict[str, Any]) -> None:
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1, sort_keys=True)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
