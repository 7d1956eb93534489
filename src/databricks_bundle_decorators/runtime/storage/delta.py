"""Delta tables: Unity Catalog tables on Databricks (``saveAsTable``), path tables locally
(open-source Spark keeps Delta tables only in ``spark_catalog``), one code path.

A commit is one ``replaceWhere`` overwrite over the run's keys (or an append, for
append-once outputs) carrying the run's ``txnAppId``/``txnVersion``, so a retried
attempt never commits twice, and its id as ``userMetadata``, so ``DESCRIBE HISTORY``
tells which run wrote each version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.errors import TaskRunError
from ..core.predicates import quote_identifier
from .ddl import schema_ddl
from .formats import StagedWrite, TableFormat, TableRef, WriteRequest, schema_difference
from .layout import TableLayout

DELTA_LOG = "_delta_log"


def delta_table_exists(spark: Any, table: TableRef) -> bool:
    """Whether the Delta table exists (a local folder with a log, or a catalog table)."""
    if table.path is not None:
        return (table.path / DELTA_LOG).is_dir()
    return bool(spark.catalog.tableExists(table.name))


def read_delta(spark: Any, table: TableRef, version: int | None = None) -> Any:
    """The table (at ``version``: time travel) as a lazy ``DataFrame``; it must exist."""
    reader = spark.read if version is None else spark.read.option("versionAsOf", int(version))
    if table.path is not None:
        return reader.format("delta").load(str(table.path))
    return reader.table(table.qualified)


def sql_target(table: TableRef) -> str:
    """The table in SQL: ``delta.`/path``` locally, the quoted catalog name otherwise."""
    if table.path is not None:
        return f"delta.{quote_identifier(str(table.path))}"
    return table.qualified


class DeltaFormat(TableFormat):
    """A Delta table: by catalog name on Databricks, by folder locally."""

    def read(
        self, spark: Any, table: TableRef, *, partition_column: str | None, keys: Sequence[str]
    ) -> Any | None:
        # The caller's key predicate on the partition column prunes the files.
        return read_delta(spark, table) if delta_table_exists(spark, table) else None

    def stage(self, frame: Any, table: TableRef, *, partition_column: str | None) -> StagedWrite:
        return _DeltaStagedWrite(frame, table)


class _DeltaStagedWrite(StagedWrite):
    def __init__(self, frame: Any, table: TableRef) -> None:
        self._table = table
        self._persisted = False
        self._frame = frame
        if type(frame).__module__.startswith("pyspark.sql.connect."):
            # Spark Connect (serverless compute's kind) is not asked to cache: serverless
            # refuses it, and OSS Connect would build a cache the lane must not rely on.
            return
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
        exists = delta_table_exists(spark, self._table)
        if exists:
            self._check_schema(spark)
            self._check_layout(spark, request.layout)
        elif request.layout.declared:  # created empty with its layout, then written
            self._create(spark, request)
            exists = True
        try:
            self._write(request, exists=exists)
        except Exception as exc:
            if exists or not any(marker in str(exc) for marker in _CREATION_RACE):
                raise
            # Another run created the table between the check above and this commit (two
            # first commits to one table conflict in Delta): write into the table it made.
            self._check_schema(spark)
            self._check_layout(spark, request.layout)
            self._write(request, exists=True)

    def _write(self, request: WriteRequest, *, exists: bool) -> None:
        mode = "append" if request.append else "overwrite"  # append: replaces nothing
        writer = self._frame.write.format("delta").mode(mode)
        if request.partition_column is not None:
            if request.replace_where is not None and not request.append:
                writer = writer.option("replaceWhere", request.replace_where)
            elif not request.append:
                writer = writer.option("partitionOverwriteMode", "dynamic")
            if not exists:
                writer = writer.partitionBy(*request.partition_by)
        if request.transaction is not None:
            app_id, version = request.transaction
            writer = writer.option("txnAppId", app_id).option("txnVersion", str(version))
            # which run (and backfill) wrote which version, for undo. Writer options, not
            # session settings (serverless lets a job set neither): userMetadata is at
            # https://docs.databricks.com/gcp/en/tables/operations/custom-metadata and
            # txnAppId/txnVersion at https://docs.databricks.com/aws/en/error-messages/
            # delta-invalid-idempotent-writes-options-error-class
            writer = writer.option("userMetadata", request.metadata or app_id)
        try:
            if self._table.path is not None:
                writer.save(str(self._table.path))
            else:
                writer.saveAsTable(self._table.qualified)
        except Exception as exc:
            if type(exc).__name__ not in ("AnalysisException", "IllegalArgumentException"):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TaskRunError(
                f"Delta refused the write to {self._table.name}: {first}; nothing was written"
            ) from None

    def _check_schema(self, spark: Any) -> None:
        existing = read_delta(spark, self._table).schema.jsonValue()
        difference = schema_difference(existing, self._frame.schema.jsonValue())
        if difference is not None:
            where = f"; to rebuild it, delete {self._table.path}" if self._table.path else ""
            raise TaskRunError(
                f"the output schema differs from table {self._table.name} ({difference}); "
                f"nothing was written{where}"
            )

    def _create(self, spark: Any, request: WriteRequest) -> None:
        ddl = schema_ddl(self._frame.schema.jsonValue())
        spark.sql(request.layout.create_sql(sql_target(self._table), ddl, request.partition_by))

    def _check_layout(self, spark: Any, layout: TableLayout) -> None:
        if not layout.declared:
            return
        detail = spark.sql(f"DESCRIBE DETAIL {sql_target(self._table)}").first().asDict()
        difference = layout.difference(detail)
        if difference is not None:
            raise TaskRunError(
                f"table {self._table.name} is {difference}; nothing was written (change the "
                "table with ALTER TABLE, or the IoManager's table_properties/cluster_by)"
            )

    def discard(self) -> None:
        if self._persisted:
            self._persisted = False
            self._frame.unpersist()


_CREATION_RACE = ("DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED", "ProtocolChangedException")
"""What a write says when a concurrent writer created the table first."""
