"""Reading declared sources, filtered to the run's key windows on their ``event_time``:
on Databricks the Unity Catalog table; locally the declared stand-in (a seed file, or a
function of the time range), else the local Delta table of the same name. A Delta table
is read at the version the task run pinned for it (``runtime/core/provenance.py``), which
its output's commit records.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from ...backfill import TimeWindow, current_run_context, run_keys_of
from ...backfill.multi import MultiBackfill
from ...backfill.resolve import get_static_keys
from ...backfill.scope import KeyScope
from ...definitions import JobDefinition, Source
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError, counted
from ..core.context import current_environment
from ..core.errors import TaskRunError
from ..core.predicates import quote_identifier, quote_literal, windows_predicate
from ..io.spark_table import TableName
from ..storage.delta_history import read_pinned
from ..storage.formats import TableRef
from .tables import local_table_exists, local_table_path


def check_local_sources(job: JobDefinition, warehouse: Path) -> None:
    """Refuse a local run, before Spark starts, when a source cannot be read locally.

    Raises:
        UsageError: the first problem, and how many more there are.
    """
    problems = []
    for declared in job.sources:
        seed = declared.seed_path
        if seed is not None and not seed.exists():
            problems.append(f"source {declared.name}: its stand-in {seed} does not exist")
        elif declared.local is None and not local_table_exists(declared.name, warehouse):
            problems.append(
                f"source {declared.name} of job {job.name!r} has no local table "
                f"({local_table_path(declared.name, warehouse)}) and no stand-in; declare one: "
                f"source({declared.name!r}, ..., local='seeds/<file>.csv') (a CSV, JSON or "
                "Parquet file under the project) "
                "or local=<function (spark, start, end) -> DataFrame>"
            )
    if problems:
        more = f" (and {counted(len(problems) - 1, 'more source')})" if len(problems) > 1 else ""
        raise UsageError(problems[0] + more)


def read_source(declared: Source) -> Any:
    """The rows of ``declared`` in the running task's windows (lookback included).

    Raises:
        TaskRunError: outside a task run, or the source cannot be read.
    """
    environment = current_environment()
    context = current_run_context()
    if environment is None or context is None:
        raise TaskRunError(f"source {declared.name}: read() works only inside a task run")
    spans: Sequence[TimeWindow] = ()
    keys: Sequence[str] = ()
    if context.backfill is not None and context.backfill.is_time_based:
        keys = run_keys_of(context).keys
        spans = KeyScope(context.backfill, keys).spans()
    frame = _frame(declared, environment, spans)
    if declared.static_column is not None:  # a MultiBackfill job's (checked at definition)
        frame = _static_filter(frame, declared, get_static_keys())
    if declared.event_time is None or context.backfill is None or not spans:
        return frame
    if declared.event_time not in frame.columns:
        raise TaskRunError(
            f"source {declared.name} has no event_time column {declared.event_time!r} "
            f"(columns: {', '.join(frame.columns)})"
        )
    tz = getattr(context.backfill, "tz", "UTC")
    backfill = context.backfill
    if declared.static_column is None or not isinstance(backfill, MultiBackfill):
        return frame.where(_window_filter(frame, declared.event_time, spans, tz))
    # each static value in its own windows: a run of eu:03-02..us:03-01 reads no us:03-02
    static = f"CAST({quote_identifier(declared.static_column)} AS STRING)"
    own = [
        f"({static} = {quote_literal(value)} AND "
        f"{_window_filter(frame, declared.event_time, _spans(backfill, times), tz)})"
        for value, times in backfill.by_static(tuple(keys)).items()
    ]
    return frame.where(" OR ".join(own))


def _spans(backfill: MultiBackfill, times: Sequence[str]) -> tuple[TimeWindow, ...]:
    return KeyScope(backfill.time, tuple(times)).spans()


def _static_filter(frame: Any, declared: Source, values: Sequence[str]) -> Any:
    """The rows of ``frame`` whose static column holds one of ``values`` (compared as
    strings, as static keys are)."""
    column = declared.static_column
    assert column is not None
    if column not in frame.columns:
        raise TaskRunError(
            f"source {declared.name} has no static_column {column!r} "
            f"(columns: {', '.join(frame.columns)})"
        )
    listed = ", ".join(quote_literal(value) for value in values)
    return frame.where(f"CAST({quote_identifier(column)} AS STRING) IN ({listed})")


def _frame(declared: Source, environment: RunEnvironment, spans: Sequence[TimeWindow]) -> Any:
    spark = environment.spark
    name = TableName.parse(declared.name)
    if environment.databricks:
        return read_pinned(spark, TableRef(declared.name, name.quoted, None))
    if callable(declared.local):
        start = min((s.start_utc() for s in spans), default=datetime.min)
        end = max((s.end_utc() for s in spans), default=datetime.max)
        return declared.local(spark, start, end)
    seed = declared.seed_path
    if seed is not None:
        return _read_seed(spark, seed, declared.name)
    table = name.local_path(environment.warehouse)
    if not local_table_exists(declared.name, environment.warehouse):
        raise TaskRunError(
            f"source {declared.name} has no local table ({table}) and no stand-in; "
            "declare one with source(..., local=...)"
        )
    return read_pinned(spark, TableRef(declared.name, name.quoted, table))


def _read_seed(spark: Any, seed: Path, name: str) -> Any:
    if not seed.exists():
        raise TaskRunError(f"source {name}: its stand-in {seed} does not exist")
    suffix = seed.suffix.lower()
    if suffix == ".csv":
        # preferDate: ISO dates become DATE columns, as in the workspace table
        return (
            spark.read.option("header", "true")
            .option("inferSchema", "true")
            .option("preferDate", "true")
            .csv(str(seed))
        )
    if suffix in (".json", ".jsonl"):
        return spark.read.json(str(seed))
    return spark.read.parquet(str(seed))


def _window_filter(frame: Any, column: str, spans: Sequence[TimeWindow], tz: str) -> str:
    """``column`` inside the spans; a ``DATE`` column compares local calendar days."""
    kind = frame.schema[column].dataType.typeName()
    if kind != "date":
        return windows_predicate(column, spans)
    zone = ZoneInfo(tz)
    col = quote_identifier(column)
    parts = []
    for span in spans:
        first = span.start_utc().astimezone(zone).date()
        last = _end_day(span.end_utc().astimezone(zone))
        parts.append(
            f"({col} >= DATE {quote_literal(first.isoformat())} AND "
            f"{col} < DATE {quote_literal(last.isoformat())})"
        )
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def _end_day(end: datetime) -> date:
    day = end.date()
    return day if end.timetz().replace(tzinfo=None) == time(0) else day + timedelta(days=1)
