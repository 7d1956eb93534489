"""A table- or file-triggered run, or a catching-up one: resolve its keys once, store
them, advance.

:func:`with_key_source` chooses where a task run's keys come from, once, where its
request is built (an explicit ``backfill_key`` always wins). A run that a
``TableUpdate`` trigger started takes the keys stored for the job run in the state table
(:mod:`.trigger_state`) or, in the run's first task, resolves and stores them: the keys
each source's versions ``watermark+1 .. triggered`` changed (:func:`changed_keys`),
widened by lookback, plus the keys left pending, capped by ``max_keys``. A file-triggered
run takes the keys of the files new or changed since the last processed listing
(:mod:`.file_arrival`); a catching-up scheduled run the keys missing since the last
done key (:func:`resolve_catch_up`). Once every task of the job has committed in the
run, the watermarks advance.

Changed keys come from documented interfaces only (a job never reads ``_delta_log``):
the change data feed (``readChangeFeed``,
https://docs.databricks.com/aws/en/delta/delta-change-data-feed), else, best effort and
logged as such, the ``replaceWhere`` predicates in ``DESCRIBE HISTORY``'s
``operationParameters`` (https://docs.databricks.com/aws/en/delta/history), else the run
fails naming the remedy.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from ...backfill import ResolvedKeys
from ...backfill.changed_keys import affected_keys, catch_up_plan, plan_keys, with_lookback
from ...backfill.time_backfill import CatchUp, TimeBackfill
from ...backfill.wire import (
    BACKFILL_KEY_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    ORDER_PARAM,
    TaskOrder,
    parse_run_time,
)
from ...backfill.wire.params import JOB_ID_PARAM, JOB_ID_VALUE, job_id_of
from ...backfill.wire.trigger import (
    TRIGGER_FROM_VERSION_PARAM,
    TRIGGER_VERSIONS_PARAM,
    from_version,
    triggered_location,
    triggered_versions,
)
from ...definitions import JobDefinition, Source
from ...definitions.contracts import RunEnvironment
from ...definitions.triggers import FileArrival, TableUpdate
from ...errors import UsageError
from ..core.errors import TaskRunError
from ..core.job_auth import job_run_client
from ..core.key_columns import backfill_key_column
from ..programs.presence import keyed_tables, read_presence
from ..programs.run_kinds import KeySource, KeySourceName
from ..storage.delta_history import MAINTENANCE_OPERATIONS, sql_target
from ..storage.formats import TableRef
from ..storage.table_name import TableName
from .file_arrival import resolve_file_arrival
from .run_history import newest_success, run_key
from .trigger_state import StoredRun, TriggerState, coverage_recorder, job_run_of

if TYPE_CHECKING:
    from ..programs.run_kinds import TaskRunRequest

_logger = logging.getLogger("databricks_bundle_decorators.runtime")

STATE_TABLE_NAME = "dbxdec_trigger_state"
CDF_REMEDY = (
    "enable the change data feed on it (ALTER TABLE {table} SET TBLPROPERTIES "
    "(delta.enableChangeDataFeed = true)), then rerun with --from-version at or after the "
    "version that enabled it"
)
_COMPARISON = re.compile(
    r"[`(\s]*(?P<col>[A-Za-z_][A-Za-z0-9_]*)`?\s*(?P<op>>=|<=|=|>|<)\s*'(?P<lit>[^']*)'"
)
_IN = re.compile(r"[`(\s]*(?P<col>[A-Za-z_][A-Za-z0-9_]*)`?\s+IN\s*\((?P<items>[^)]*)\)", re.I)


def with_key_source(request: TaskRunRequest, environment: RunEnvironment) -> TaskRunRequest:
    """``request`` with its key source chosen, once: a triggered or catching-up run takes
    the keys stored for the job run (the task sees them as its ``backfill_key``); any
    other run keeps the keys of its parameters (``scheduled``, ``explicit``, ``keyless``).

    Raises:
        TaskRunError: the changed keys cannot be known (one line naming the remedy),
            or no watermark exists yet; nothing is written.
    """
    kind = request.kind
    # an explicit key wins (another order than a task's is another kind of run)
    explicit = bool(request.params.get(BACKFILL_KEY_PARAM))
    if kind is not None and kind.name == "task" and not explicit:
        stored = _stored_keys(request, environment)
        if stored is not None:
            return stored
    keys = request.keys
    if keys is None:
        return replace(request, source=KeySource("keyless"))
    committed = coverage_recorder(request, environment)
    name: KeySourceName = "scheduled" if keys.auto_derived else "explicit"
    return replace(request, source=KeySource(name, committed=committed))


def _stored_keys(request: TaskRunRequest, environment: RunEnvironment) -> TaskRunRequest | None:
    """The request of a triggered or catching-up run; ``None`` for any other run."""
    job, params = request.job, request.params
    trigger = job.trigger
    catch_up = getattr(job.backfill, "catch_up", None)
    versions = triggered_versions(params) if isinstance(trigger, TableUpdate) else None
    name: KeySourceName = "triggered"
    resolve: Callable[..., StoredRun]
    if versions is not None and isinstance(trigger, TableUpdate):
        table = trigger.state_table
        order = request.kind.order if request.kind is not None else None
        given = order.keys if isinstance(order, TaskOrder) and order.keys else None
        if given is not None:
            name, resolve = "catch_up", partial(_given, request, given=given, versions=versions)
        else:
            resolve = partial(_resolve, request, environment, trigger=trigger, versions=versions)
    elif (  # started by its file-arrival trigger, and the job takes keys from files
        isinstance(trigger, FileArrival)
        and trigger.keys is not None
        and triggered_location(params) is not None
    ):
        table = state_table(job, trigger, environment)
        now = _now(request)
        resolve = partial(resolve_file_arrival, job, trigger, environment=environment, now=now)
    elif isinstance(catch_up, CatchUp):
        name, table = "catch_up", state_table(job, catch_up, environment)
        now = _now(request)
        resolve = partial(resolve_catch_up, job, catch_up, now, environment, params)
    else:
        return None
    state = _shared_state(environment, table, job.name)
    job_run = job_run_of(environment.run_id)
    stored = state.stored_run(job_run)
    if stored is None:
        stored = resolve(state=state)
        state.store_run(job_run, stored)
    written = stored.written
    keys = ResolvedKeys(written[-1] if written else "", stored.keys, written, False)
    if written:
        _logger.info("run %s of job %r: keys %s", job_run, job.name, written)
    tasks = set(job.graph.topological_order())
    finish = partial(state.finish, job_run, request.task_key, tasks, stored)
    # the task sees its keys as an explicit key, as a run given them would
    seen = {**params, BACKFILL_KEY_PARAM: keys.primary, TRIGGER_VERSIONS_PARAM: ""}
    return replace(request, params=seen, keys=keys, source=KeySource(name, not written, finish))


_SHARED: dict[tuple[RunEnvironment, str, str], TriggerState] = {}
_SHARED_LOCK = threading.Lock()


def _shared_state(environment: RunEnvironment, table: str, job: str) -> TriggerState:
    """The state table of ``job`` as the tasks of one run see it: one instance per run
    id (only the last run's is kept), so a local run's tasks, one after another in this
    process, read the table once and see each other's rows."""
    if not environment.run_id:
        return TriggerState(environment, table, job)
    key = (environment, table, job)
    with _SHARED_LOCK:
        state = _SHARED.get(key)
        if state is None:
            _SHARED.clear()
            state = _SHARED[key] = TriggerState(environment, table, job)
        return state


def _resolve(
    request: TaskRunRequest,
    environment: RunEnvironment,
    state: TriggerState,
    trigger: TableUpdate,
    versions: dict[str, int],
) -> StoredRun:
    job = request.job
    backfill = job.backfill
    assert isinstance(backfill, TimeBackfill)  # TableUpdate checks it at definition
    latest = state.latest_advance()
    processed = dict(latest.versions) if latest is not None else {}
    pending = latest.pending if latest is not None else ()
    first = from_version(request.params)
    changed: set[str] = set()
    for source in trigger.sources:
        target = versions.get(source.name)
        if target is None:
            continue
        after = first - 1 if first is not None else processed.get(source.name)
        if after is None:
            raise TaskRunError(
                f"job {job.name!r}: no processed version of source {source.name} is recorded "
                "yet; start the first run with --from-version N (job parameter "
                f"{TRIGGER_FROM_VERSION_PARAM}=N) to process its versions from N on"
            )
        if target > after:
            changed |= changed_keys(
                environment.spark,
                source,
                TableName.parse(source.name).ref(environment),
                backfill,
                after + 1,
                target,
            )
        processed[source.name] = max(target, processed.get(source.name, target))
    current = backfill.current_key(now=_now(request))
    plan = plan_keys(
        backfill, [*pending, *affected_keys(backfill, changed, current)], trigger.max_keys
    )
    return StoredRun(with_lookback(backfill, plan.run), plan.run, processed, plan.pending)


def _given(
    request: TaskRunRequest, state: TriggerState, given: tuple[str, ...], versions: dict[str, int]
) -> StoredRun:
    """The keys of a catch-up run dbxdec launched (its order's ``keys``): run as
    given, then advance to ``versions`` as a triggered run does; the pending keys it
    runs leave the pending list."""
    backfill = request.job.backfill
    assert isinstance(backfill, TimeBackfill)  # TableUpdate checks it at definition
    for key in given:
        try:
            backfill.validate_key(key)
        except ValueError as exc:
            raise TaskRunError(f"job {request.job.name!r}: {ORDER_PARAM}: {exc}") from None
    latest = state.latest_advance()
    processed = dict(latest.versions) if latest is not None else {}
    for name, version in versions.items():
        processed[name] = max(version, processed.get(name, version))
    pending = tuple(k for k in (latest.pending if latest else ()) if k not in given)
    written = tuple(backfill.sort_keys(list(given)))
    return StoredRun(with_lookback(backfill, written), written, processed, pending)


def _now(request: TaskRunRequest) -> datetime:
    if request.now is not None:
        return request.now
    zone = getattr(request.job.backfill, "tz", "UTC")
    parsed = parse_run_time(request.params.get(BACKFILL_RUN_TIME_PARAM, ""), tz=zone)
    return parsed if parsed is not None else datetime.now(timezone.utc)


def pending_keys(job: JobDefinition, environment: RunEnvironment) -> tuple[str, ...]:
    """The keys a triggered or catching-up job left for later runs (``max_keys``), as of
    its last completed run; for ``dbxdec status``."""
    trigger, catch_up = job.trigger, getattr(job.backfill, "catch_up", None)
    if isinstance(trigger, TableUpdate):
        table = trigger.state_table
    elif isinstance(trigger, FileArrival) and trigger.keys is not None:
        table = state_table(job, trigger, environment)
    elif isinstance(catch_up, CatchUp):
        table = state_table(job, catch_up, environment)
    else:
        return ()
    latest = TriggerState(environment, table, job.name).latest_advance()
    return latest.pending if latest is not None else ()


def state_table(
    job: JobDefinition, setting: CatchUp | FileArrival, environment: RunEnvironment
) -> str:
    """The state table of a catching-up or file-triggered job: the one ``setting``
    declares, else ``dbxdec_trigger_state`` in the schema of its first partitioned output
    table.

    Raises:
        UsageError: none declared and the job writes no partitioned table.
    """
    if setting.state_table:
        return setting.state_table
    tables, _ = keyed_tables(job, environment)
    owner = "CatchUp" if isinstance(setting, CatchUp) else f"FileArrival(url={setting.url!r})"
    if not tables:
        raise UsageError(
            f"job {job.name!r}: {owner} needs state_table='catalog.schema.table' (the job "
            "writes no partitioned table to put it beside)"
        )
    return f"{sorted(tables)[0].rsplit('.', 1)[0]}.{STATE_TABLE_NAME}"


def resolve_catch_up(
    job: JobDefinition,
    catch_up: CatchUp,
    now: datetime,
    environment: RunEnvironment,
    params: Mapping[str, str],
    state: TriggerState,
) -> StoredRun:
    """The keys of a catching-up run whose logical time is ``now``: every key after the
    last done key (the last present in the job's output tables, or with
    ``since="last_success"`` the key of the job's newest successful run) up to the
    current key, oldest first, capped by ``max_keys``.

    Raises:
        TaskRunError: ``since="last_success"`` and the run history cannot be read (no job
            id, no credentials, a refusal: one line naming the remedy).
    """
    backfill = job.backfill
    assert isinstance(backfill, TimeBackfill)
    if catch_up.since == "last_success":
        done = _last_success(job, backfill, catch_up, params, state)
    else:
        current = backfill.current_key(now=now)
        candidates = backfill.keys(None, current, now=now)
        presence = read_presence(job, candidates, environment)
        absent = set(presence.missing(candidates))
        done = [k for k in candidates if k not in absent]
    plan = catch_up_plan(backfill, done, now, catch_up.max_keys)
    return StoredRun(with_lookback(backfill, plan.run), plan.run, {}, plan.pending)


def _last_success(
    job: JobDefinition,
    backfill: TimeBackfill,
    catch_up: CatchUp,
    params: Mapping[str, str],
    state: TriggerState,
) -> list[str]:
    """The key of the job's newest successful run (``[]``: none in its run history)."""
    job_id = job_id_of(params)
    if job_id is None:
        raise TaskRunError(
            f"job {job.name!r}: CatchUp(since='last_success') reads the job's run history "
            f"and needs its id in job parameter {JOB_ID_PARAM} ({JOB_ID_VALUE} on "
            f"Databricks; in a local run pass -p {JOB_ID_PARAM}=N with DATABRICKS_HOST and "
            "DATABRICKS_TOKEN set)"
        )
    from databricks.sdk.errors.base import DatabricksError

    try:
        client = job_run_client(catch_up.secret_scope or "")
        newest = newest_success(client, job_id)
    except UsageError as exc:
        raise TaskRunError(f"job {job.name!r}: CatchUp(since='last_success'): {exc}") from None
    except (DatabricksError, OSError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise TaskRunError(
            f"job {job.name!r}: CatchUp(since='last_success') could not read the run "
            f"history of job {job_id} (jobs/runs/list: {first})"
        ) from None
    if newest is None:
        return []
    key = run_key(backfill, newest, state.stored_run(str(newest.run_id)))
    return [key] if key is not None else []


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
