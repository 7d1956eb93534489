"""The Spark table IoManager: it owns naming, key predicates, the window guard and the
checks of a write; a :class:`~..storage.formats.TableFormat` only reads and writes.

Append-once outputs (seed 004's ``INSERT INTO ONCE``, ``write="append_once"``) append
only the run's keys the table holds no row for yet (a key that produced no rows stays
unwritten), in one commit with the run's ``txnAppId`` (a retried attempt is skipped by
Delta), and print the keys they skip; ``--force-rewrite`` replaces the run's keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date
from typing import Any, ClassVar, Literal

from ...backfill.refresh import staging_table_part
from ...backfill.scope import KeyScope
from ...backfill.wire import KeyRange
from ...backfill.wire.provenance import with_provenance
from ...definitions.contracts import (
    ROWS_METRIC,
    InputContext,
    IoManager,
    LazySession,
    OutputContext,
    RunEnvironment,
)
from ...errors import EnvironmentProblem
from ..checks.baselines import with_baselines
from ..checks.checking import TaskChecks
from ..checks.gate_aggregates import GateAggregate, gate_aggregates
from ..checks.metering import Measured
from ..checks.quarantine import Quarantine
from ..core.errors import InputMissing, OutputRejected, TaskRunError
from ..core.predicates import check_column, conjunction, keys_predicate, windows_predicate
from ..core.provenance import current_recorder
from ..session.spark import has_delta
from ..storage.delta import DeltaFormat, delta_table_exists
from ..storage.delta_history import read_pinned
from ..storage.dimensions import is_two_dimensional, per_static_predicate
from ..storage.formats import TableFormat, TableRef, WriteRequest
from ..storage.layout import TableLayout
from ..storage.parquet import LocalParquetFormat
from ..storage.table_name import TableName, commit_identity, commit_metadata
from ..storage.upsert import upserted

__all__ = ["FormatName", "SparkTableIoManager", "TableName", "commit_identity"]

FormatName = Literal["auto", "delta", "parquet"]
WriteMode = Literal["replace", "append_once", "upsert"]
_SHOWN = 5
OUTSIDE_TIME = "__outside_windows"
"""The metric counting rows whose time column is outside the written windows (or null)."""


class SparkTableIoManager(IoManager):
    """Stores a task's Spark ``DataFrame`` output in a table partitioned by backfill key.

    A Delta table everywhere: the Unity Catalog table ``catalog.schema.table`` on
    Databricks, the Delta folder ``<warehouse>/<catalog>/<schema>/<table>`` locally
    (default warehouse ``.dbxdec/warehouse``). A write is one ``replaceWhere`` commit over
    exactly the run's keys, so re-running a slice is idempotent, and it carries the run's
    id as Delta ``txnAppId``, so a retried attempt never commits twice. Before it commits,
    the output is measured per key: rows outside the run's keys or windows reject the
    write, then the task's checks are judged per key. Reads are filtered to the
    downstream run's keys (lookback included) unless the edge is ``all_partitions``.

    Args:
        table: ``catalog.schema.table``.
        partition_column: Column holding each row's backfill key (the key string or, for
            daily keys, a ``DATE``). ``None`` makes a snapshot table that each run
            replaces whole (for outputs computed from ``all_partitions``).
        time_column: Optional event-time column: for time keys, written rows must lie in
            the run's half-open windows, and reads keep only rows inside them.
        format: ``"auto"`` or ``"delta"`` (Delta everywhere), or ``"parquet"``: plain
            Hive-partitioned parquet folders, only locally.
        table_properties: Delta ``TBLPROPERTIES`` the table is created with.
        cluster_by: Liquid clustering columns the table is created with (it is then not
            partitioned). Both are checked, never changed, when the table exists.
        static_column: For a job with ``backfill=MultiBackfill(...)`` (e.g. region x
            day): the column holding the static value; the table is partitioned by it
            and ``partition_column``.
        write: ``"replace"`` (a run replaces its keys); ``"append_once"`` (each key is
            appended once: a run skips the keys the table holds, unless
            ``--force-rewrite``); or ``"upsert"`` (the run's rows replace the key's rows
            with the same ``upsert_on`` values, the key's other rows are kept). The last
            two need a ``partition_column`` and Delta.
        upsert_on: With ``write="upsert"``: the columns that identify a row.
        gate: Aggregates the diff gate compares per key besides the row count, e.g.
            ``[Sum("amount"), CountDistinct("customer_id")]``. Needs a
            ``partition_column`` and Delta.

    Example:
        >>> clean_io = SparkTableIoManager(
        ...     "main.sales.clean", partition_column="event_date", time_column="event_ts")
    """

    evaluates_checks: ClassVar[bool] = True

    def __init__(
        self,
        table: str,
        *,
        partition_column: str | None = None,
        time_column: str | None = None,
        format: FormatName = "auto",
        table_properties: Mapping[str, str] | None = None,
        cluster_by: Sequence[str] | None = None,
        write: WriteMode = "replace",
        static_column: str | None = None,
        upsert_on: Sequence[str] | None = None,
        gate: Sequence[GateAggregate] | None = None,
    ) -> None:
        self.table = TableName.parse(table)
        self.partition_column = (
            None
            if partition_column is None
            else check_column(partition_column, what="partition_column")
        )
        self.time_column = (
            None if time_column is None else check_column(time_column, what="time_column")
        )
        if format not in ("auto", "delta", "parquet"):
            raise ValueError(f"format must be 'auto', 'delta' or 'parquet', got {format!r}")
        self.format: FormatName = format
        self.static_column = None if static_column is None else self._static(static_column)
        self.layout = TableLayout.declare(table_properties, cluster_by)
        self.write, self.upsert_on = self._write_mode(write, upsert_on)
        self.gate = gate_aggregates(gate)
        if self.gate and (self.partition_column is None or format == "parquet"):
            raise ValueError(
                "gate= compares each key with the table's previous Delta version: it needs "
                "a partition_column and Delta (drop format='parquet')"
            )
        if self.layout.declared and format == "parquet":
            raise ValueError(
                "table_properties and cluster_by are Delta table settings: drop "
                "format='parquet' (Delta is the default)"
            )

    def __repr__(self) -> str:
        return (
            f"SparkTableIoManager({str(self.table)!r}, partition_column="
            f"{self.partition_column!r}, time_column={self.time_column!r})"
        )

    def _static(self, column: str) -> str:
        checked = check_column(column, what="static_column")
        if self.partition_column is None:
            raise ValueError("static_column needs a partition_column (the time key's column)")
        if checked == self.partition_column:
            raise ValueError(f"static_column and partition_column are both {checked!r}")
        if self.format == "parquet":
            raise ValueError("static_column (two-dimensional tables) needs Delta: drop format=")
        return checked

    def _write_mode(self, write: object, upsert_on: object) -> tuple[WriteMode, tuple[str, ...]]:
        """``write`` and its ``upsert_on`` columns, checked (``()`` unless upserting)."""
        if write not in ("replace", "append_once", "upsert"):
            raise ValueError(f"write must be 'replace', 'append_once' or 'upsert', got {write!r}")
        if write != "upsert" and upsert_on is not None:
            raise ValueError(
                f"upsert_on is for write='upsert' (write is {write!r}): add write='upsert' "
                "or drop upsert_on"
            )
        columns: tuple[str, ...] = ()
        if write == "upsert":
            if isinstance(upsert_on, str) or not isinstance(upsert_on, Sequence) or not upsert_on:
                raise ValueError(
                    "write='upsert' needs upsert_on, a non-empty list of the columns that "
                    f"identify a row (e.g. upsert_on=['order_id']), got {upsert_on!r}"
                )
            columns = tuple(check_column(c, what="upsert_on column") for c in upsert_on)
            repeated = sorted({c for c in columns if columns.count(c) > 1})
            if repeated:
                raise ValueError(f"upsert_on names {', '.join(repeated)} more than once")
        if write != "replace" and self.partition_column is None:
            why = "keeps the rows of the run's keys" if columns else "writes each key once"
            raise ValueError(f"write={write!r} {why}: it needs a partition_column")
        if write != "replace" and self.format == "parquet":
            why = (
                "it reads the table's version it replaces"
                if columns
                else "its appends are idempotent by transaction id"
            )
            raise ValueError(f"write={write!r} needs Delta ({why}): drop format='parquet'")
        return write, columns

    @property
    def tables(self) -> tuple[str, ...]:
        """The one table this IoManager writes (for the bundle's table graph)."""
        return (str(self.table),)

    @property
    def partition_columns(self) -> tuple[str, ...]:
        """The table's partition columns, static dimension first (``()``: unpartitioned)."""
        return tuple(c for c in (self.static_column, self.partition_column) if c is not None)

    def table_format(self, environment: RunEnvironment) -> TableFormat:
        """The format this environment uses."""
        if self.format == "parquet" and not environment.databricks:
            return LocalParquetFormat()
        session = environment.session
        unmade = isinstance(session, LazySession) and not session.started
        # a session dbxdec has yet to make is local_spark_session's, with Delta Lake (or it
        # fails to start, saying why): asking now would start a JVM a read of history or of
        # the plan does not need
        if not environment.databricks and not unmade and not has_delta(environment.spark):
            raise EnvironmentProblem(
                f"table {self.table} is a Delta table, and the SparkSession has no Delta Lake; "
                "create it with databricks_bundle_decorators.runtime.spark.local_spark_session() "
                "(or pass format='parquet')"
            )
        return DeltaFormat()

    def table_ref(self, environment: RunEnvironment) -> TableRef:
        """The table's name and, locally, its folder; in a stage run of a full refresh
        (``environment.staging``), its staging table's."""
        table = self.table
        if environment.staging:
            staged = staging_table_part(table.table, environment.staging)
            table = TableName(table.catalog, table.schema, staged)
        path = None if environment.databricks else table.local_path(environment.warehouse)
        return TableRef(str(table), table.quoted, path)

    def transaction(self, context: OutputContext) -> tuple[str, int] | None:
        """The commit's idempotence id, one per run and task (``None``: the run has no id)."""
        run_id = context.environment.run_id
        return (commit_identity(context.job_name, context.task_key, run_id), 0) if run_id else None

    def metadata(self, context: OutputContext) -> str | None:
        """The commit's ``userMetadata`` (see :func:`..storage.table_name.commit_metadata`),
        with the running task's provenance (its pinned reads and code fingerprint)."""
        transaction = self.transaction(context)
        if transaction is None:
            return None
        metadata = commit_metadata(transaction[0], context.environment.backfill_id)
        recorder = current_recorder()
        if recorder is None:
            return metadata
        keys = context.scope.keys if context.scope.bounded else ()
        checks = [check.name for check in context.checks]
        record = recorder.provenance(
            context.job_name, context.task_key, keys, self.partition_column, checks
        )
        return with_provenance(metadata, record)

    def read_predicate(self, scope: KeyScope) -> str | None:
        """The filter a read applies: the scope's keys (and windows), or ``None`` for all.

        Example: ``(`event_date` IN ('2024-01-06', '2024-01-07')) AND ((`event_ts` >=
        TIMESTAMP '2024-01-06 00:00:00Z' AND `event_ts` < TIMESTAMP '2024-01-08 00:00:00Z'))``.
        """
        if self.partition_column is None or not scope.bounded:
            return None
        if self._two_dimensional(scope):
            return self._per_static(scope, windows=True)
        return conjunction(
            keys_predicate(self.partition_column, scope.keys), self._window_predicate(scope)
        )

    def replace_predicate(self, scope: KeyScope) -> str | None:
        """The ``replaceWhere`` of a write: exactly the written keys (``None``: no keys known)."""
        if self.partition_column is None or not scope.bounded:
            return None
        if self._two_dimensional(scope):
            return self._per_static(scope, windows=False)
        return keys_predicate(self.partition_column, scope.keys)

    def _window_predicate(self, scope: KeyScope) -> str | None:
        if self.time_column is None or not scope.is_time_based:
            return None
        if self._two_dimensional(scope):
            return self._per_static(scope, windows=True, keys=False)
        return windows_predicate(self.time_column, scope.spans())

    def _two_dimensional(self, scope: KeyScope) -> bool:
        return is_two_dimensional(str(self.table), self.static_column, scope)

    def _per_static(self, scope: KeyScope, *, windows: bool, keys: bool = True) -> str:
        assert self.static_column is not None and self.partition_column is not None
        time_column = self.time_column if windows else None
        return per_static_predicate(
            scope, self.static_column, self.partition_column, time_column, keys=keys
        )

    def load_input(self, context: InputContext) -> Any:
        environment = context.environment
        ref = self.table_ref(environment)
        scope = context.scope
        table_format = self.table_format(environment)
        if isinstance(table_format, DeltaFormat) and delta_table_exists(environment.spark, ref):
            # read at the version this task run pinned, which its output's commit records
            frame = read_pinned(environment.spark, ref)
        else:
            frame = table_format.read(
                environment.spark,
                ref,
                partition_column=self.partition_column,
                keys=scope.keys if scope.bounded else (),
            )
        if frame is None:
            where = f" ({ref.path})" if ref.path is not None else ""
            raise InputMissing(
                f"task {context.task_key!r} reads table {ref.name}{where}, output of task "
                f"{context.upstream_task_key!r}, which has not been written yet; run "
                f"{context.upstream_task_key!r} first"
            )
        predicate = self.read_predicate(scope)
        return frame if predicate is None else frame.where(predicate)

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        frame = self._require_frame(context, obj)
        append = self.write == "append_once" and not context.force_rewrite
        if append:  # only the keys the table does not hold yet
            owed = unwritten_part(self, context, frame)
            if owed is None:
                return
            context, frame = owed
        quarantine = Quarantine.split(self, context, frame)  # rows moved out before the checks
        frame = frame if quarantine is None else quarantine.kept
        scope = context.scope
        environment = context.environment
        table_format = self.table_format(environment)
        if self.upsert_on:  # the key's rows the output does not replace join it
            frame = upserted(
                frame,
                table=self.table_ref(environment),
                replaced=self.replace_predicate(scope) if scope.keys else None,
                upsert_on=self.upsert_on,
                task_key=context.task_key,
            )
        checks = TaskChecks(context.task_key, tuple(context.checks))
        keyed = self.partition_column is not None and scope.bounded
        window = self._window_predicate(scope)
        outside: dict[str, Any] = {}
        if keyed and window is not None:
            from pyspark.sql import functions as F

            outside[OUTSIDE_TIME] = ~F.coalesce(F.expr(window), F.lit(False))
        metering = checks.metering(
            self.partition_column,
            outside,
            static_column=self.static_column if self._two_dimensional(scope) else None,
        )
        keys = scope.keys if keyed else None
        pending = metering.observe(frame, keys) if table_format.writes_on_stage else None
        staged = table_format.stage(
            frame if pending is None else pending.frame,
            self.table_ref(environment),
            partition_column=self.partition_column,
        )
        try:
            measured = (
                None
                if pending is None
                else pending.resolve(
                    lambda: staged.frame,
                    lambda: staged.present_keys(self.partition_column or ""),
                )
            )
            if measured is None:
                measured = metering.measure(staged.frame)
            if keyed:
                self._reject_outside(context, measured)
            judged = self._judged_keys(scope, measured)
            measured = with_baselines(self, context, measured, judged)
            measured = measured if quarantine is None else quarantine.counted(measured)
            checks.judge(
                measured,
                keys=judged,
                frame=lambda: staged.frame,
                label=KeyRange.of(scope.keys).label if scope.keys else None,
                target=str(self.table),
            )
            present = {k for k, v in measured.items() if k is not None and v[ROWS_METRIC]}
            cleared = tuple(k for k in scope.keys if k not in present) if scope.bounded else ()
            staged.commit(
                WriteRequest(
                    self.partition_column,
                    self.replace_predicate(scope),
                    cleared,
                    self.transaction(context),
                    self.layout,
                    append,
                    static_column=self.static_column,
                    metadata=self.metadata(context),
                )
            )
            if quarantine is not None:  # after the main table: see ..checks.quarantine
                quarantine.commit()
        finally:
            staged.discard()
            if quarantine is not None:
                quarantine.discard()

    def _require_frame(self, context: OutputContext, obj: Any) -> Any:
        columns = getattr(obj, "columns", None)
        if not hasattr(obj, "write") or not isinstance(columns, list):
            raise TaskRunError(
                f"task {context.task_key!r} returned a {type(obj).__name__}; "
                f"SparkTableIoManager({str(self.table)!r}) stores a Spark DataFrame"
            )
        for column in (self.partition_column, self.time_column):
            if column is not None and column not in columns:
                raise TaskRunError(
                    f"task {context.task_key!r}: the output has no column {column!r} for table "
                    f"{self.table} (columns: {', '.join(columns)})"
                )
        return obj

    def _reject_outside(self, context: OutputContext, measured: Measured) -> None:
        """Refuse the write when rows carry keys outside the run's or times outside its
        windows (naming up to five stray keys); nothing is written.

        Raises:
            OutputRejected: such rows exist.
        """
        scope = context.scope
        allowed = set(scope.keys)
        stray = {k: int(v[ROWS_METRIC]) for k, v in measured.items() if k not in allowed}
        late = sum(int(v.get(OUTSIDE_TIME) or 0) for k, v in measured.items() if k in allowed)
        total = sum(stray.values()) + late
        if not total:
            return
        details = []
        if stray:
            listed = sorted(stray.items(), key=lambda kv: str(kv[0]))
            shown = ", ".join(f"{k if k is not None else 'null'} ({n})" for k, n in listed[:_SHOWN])
            more = f" and {len(listed) - _SHOWN} more" if len(listed) > _SHOWN else ""
            details.append(f"{self.partition_column} values {shown}{more}")
        if late:
            details.append(f"{late} with {self.time_column} outside the window")
        raise OutputRejected(
            f"task {context.task_key!r}: {total} rows of the output are outside the run's "
            f"{scope.describe()} ({'; '.join(details)}); nothing was written to {self.table}"
        )

    def _judged_keys(self, scope: KeyScope, measured: Measured) -> list[str | None]:
        """The slices checks hold for: the run's keys, else the keys written."""
        if self.partition_column is not None and scope.bounded:
            return list(scope.keys)
        if self.partition_column is not None:
            return list(measured) or [None]
        return [None]


def written_keys(
    manager: SparkTableIoManager, scope: KeyScope, environment: RunEnvironment
) -> frozenset[str]:
    """The keys of ``scope`` that have rows in the table: one ``GROUP BY`` over the key
    columns under the read predicate (empty when the table does not exist)."""
    column = manager.partition_column
    assert column is not None  # append-once requires one
    columns = [column] if manager.static_column is None else [manager.static_column, column]
    frame = manager.table_format(environment).read(
        environment.spark, manager.table_ref(environment), partition_column=column, keys=scope.keys
    )
    if frame is None:
        return frozenset()
    predicate = manager.read_predicate(scope)
    if predicate is not None:
        frame = frame.where(predicate)
    rows = frame.groupBy(*columns).count().collect()
    found = {":".join(_key_text(row[c]) for c in columns) for row in rows}
    return frozenset(found & set(scope.keys))


def _key_text(value: Any) -> str:
    """A partition value as a key: a ``DATE`` column holds daily keys as dates."""
    return value.isoformat() if isinstance(value, date) else str(value)


def skip_message(task_key: str, table: str, skipped: Sequence[str], *, all_skipped: bool) -> str:
    """The line printed for the keys an append-once write skips.

    Example:
        >>> print(skip_message("load", "main.raw.events", ["2024-01-01"], all_skipped=False))
        ... # doctest: +NORMALIZE_WHITESPACE
        task 'load': table main.raw.events already holds key 2024-01-01 (append-once);
        skipped it, the other keys are appended (--force-rewrite rewrites it)
    """
    listed = ", ".join(skipped[:_SHOWN])
    more = f" and {len(skipped) - _SHOWN} more" if len(skipped) > _SHOWN else ""
    noun, them = ("key", "it") if len(skipped) == 1 else ("keys", "them")
    outcome = (
        "nothing was written, the table keeps its version"
        if all_skipped
        else f"skipped {them}, the other keys are appended"
    )
    return (
        f"task {task_key!r}: table {table} already holds {noun} {listed}{more} (append-once); "
        f"{outcome} (--force-rewrite rewrites {them})"
    )


def unwritten_part(
    manager: SparkTableIoManager, context: OutputContext, frame: Any
) -> tuple[OutputContext, Any] | None:
    """The context narrowed to the run's keys the table does not hold and the output
    without the other keys' rows; ``None`` (after printing the skip message) when the
    table holds every key.

    Raises:
        TaskRunError: the run has no backfill keys.
    """
    scope = context.scope
    table = str(manager.table)
    if not scope.bounded or not scope.keys:
        raise TaskRunError(
            f"task {context.task_key!r}: table {table} is append-once and this run has no "
            "backfill key (a final sync or a job without backfill); nothing was written"
        )
    written = written_keys(manager, scope, context.environment)
    skipped = [key for key in scope.keys if key in written]
    pending = tuple(key for key in scope.keys if key not in written)
    if skipped:
        print(skip_message(context.task_key, table, skipped, all_skipped=not pending), flush=True)
    if not pending:
        return None
    if not skipped:
        return context, frame
    # exactly the skipped keys' rows go; others (nulls included) stay, to be rejected
    dropped = manager.replace_predicate(KeyScope(scope.backfill, tuple(skipped)))
    kept = frame.where(f"NOT COALESCE({dropped}, FALSE)")
    return replace(context, scope=KeyScope(scope.backfill, pending)), kept
