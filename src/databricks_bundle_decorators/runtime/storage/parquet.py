"""Local Hive-partitioned parquet tables, only when a user asks (``format="parquet"``)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote

from ...atomic import write_atomically
from ..core.errors import TaskRunError
from ..core.predicates import quote_identifier
from .formats import StagedWrite, TableFormat, TableRef, WriteRequest, schema_difference

META_FILE = "_dbxdec_table.json"
"""Schema and partition column of a local table (Spark ignores ``_`` files on read)."""
STAGING_DIR = ".dbxdec_staging"


class LocalParquetFormat(TableFormat):
    """A Hive-partitioned parquet dataset in a local folder.

    Staging writes the output once into ``<warehouse>/.dbxdec_staging/<id>/`` (metrics
    are observed in that job); a commit renames each staged partition folder over the
    table's folder of the same key, as Spark's dynamic partition overwrite does, under
    a lock file.
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
        # a new folder: a plain (static) write, without dynamic overwrite's own staging
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
                # Every key is named before the first swap: a refused key writes nothing.
                cleared = [path / _partition_folder(column, key) for key in request.cleared_keys]
                path.mkdir(exist_ok=True)
                for folder in sorted(self._staging.iterdir()):
                    if folder.is_dir() and folder.name.startswith(f"{column}="):
                        _swap(folder, path / folder.name)
                for target in cleared:
                    if target.is_dir():
                        shutil.rmtree(target)
            if meta != wanted or not (path / META_FILE).is_file():
                write_atomically(path / META_FILE, json.dumps(wanted, indent=1, sort_keys=True))

    def discard(self) -> None:
        shutil.rmtree(self._staging, ignore_errors=True)


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
    if not isinstance(loaded, dict):  # ignoring it would skip the schema check
        raise TaskRunError(
            f"cannot read {path / META_FILE}: expected a JSON object, got {type(loaded).__name__}"
        )
    return loaded


def _check_compatible(
    table: TableRef, meta: dict[str, Any], schema: dict[str, Any], partition_column: str | None
) -> None:
    if meta.get("partition_column") != partition_column:
        raise TaskRunError(
            f"table {table.name} is partitioned by {meta.get('partition_column')!r}, the "
            f"IoManager writes partition column {partition_column!r}; nothing was written. "
            f"Delete {table.path} to recreate it"
        )
    difference = schema_difference(meta.get("schema", {}), schema)
    if difference is not None:
        raise TaskRunError(
            f"the output schema differs from table {table.name} ({difference}); "
            f"nothing was written. Delete {table.path} to rebuild the table with the new schema"
        )
