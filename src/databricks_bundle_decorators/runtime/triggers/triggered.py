"""A table- or file-triggered run: resolve its keys once from what changed, store them,
advance.

:func:`with_key_source` chooses where a task run's keys come from, once, where its
request is built. For a run that a ``TableUpdate`` trigger started (see
:mod:`...backfill.wire.trigger`; an explicit ``backfill_key`` always wins):

1. The run's keys come from the state table (:mod:`.trigger_state`) when a task of the
   run (or of the run before a repair) stored them; otherwise this task resolves them:
   for each source that committed, the keys its versions ``watermark+1 .. triggered``
   changed (:func:`.change_feed.changed_keys`), widened by lookback to the output keys
   they affect, plus the keys left pending by earlier runs, capped by ``max_keys``
   (:mod:`...backfill.changed_keys`); and stores them. A file-triggered run takes the keys
   of the files new or changed since the last processed listing (:mod:`.file_arrival`).
2. The task runs over those keys (``written``; reads add each key's lookback).
3. When the task has committed, its key source marks it done; once every task of the job is done
   in the run, the watermarks advance to the triggered versions.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING

from ...backfill import ResolvedKeys
from ...backfill.changed_keys import affected_keys, plan_keys, with_lookback
from ...backfill.time_backfill import CatchUp, TimeBackfill
from ...backfill.wire import (
    BACKFILL_KEY_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    ORDER_PARAM,
    TaskOrder,
    parse_run_time,
)
from ...backfill.wire.trigger import (
    TRIGGER_FROM_VERSION_PARAM,
    TRIGGER_VERSIONS_PARAM,
    from_version,
    triggered_location,
    triggered_versions,
)
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...definitions.triggers import FileArrival, TableUpdate
from ..core.errors import TaskRunError
from ..programs.run_kinds import KeySource, KeySourceName
from .catching_up import resolve_catch_up, state_table
from .change_feed import changed_keys
from .file_arrival import resolve_file_arrival
from .trigger_coverage import coverage_recorder
from .trigger_state import StoredRun, TriggerState, job_run_of, table_ref

if TYPE_CHECKING:
    from ..programs.run_kinds import TaskRunRequest

_logger = logging.getLogger("databricks_bundle_decorators.runtime")


def with_key_source(request: TaskRunRequest, environment: RunEnvironment) -> TaskRunRequest:
    """``request`` with its key source chosen, once: a table- or file-triggered run or a
    catching-up one takes the keys stored for the job run (resolving and storing them in
    its first task) and the task sees them as its ``backfill_key``; any other run keeps
    the keys of its parameters (``scheduled`` or ``explicit``; ``keyless`` without).

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
    elif isinstance(trigger, FileArrival) and file_triggered(trigger, params):
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


def file_triggered(trigger: FileArrival, params: Mapping[str, str]) -> bool:
    """Whether a run of a ``FileArrival`` job was started by its trigger (and the job
    takes keys from files)."""
    return trigger.keys is not None and triggered_location(params) is not None


_SHARED: dict[tuple[RunEnvironment, str, str], TriggerState] = {}
_SHARED_LOCK = threading.Lock()


def _shared_state(environment: RunEnvironment, table: str, job: str) -> TriggerState:
    """The state table of ``job`` as the tasks of one run see it: one instance per run
    (``environment.run_id``), so a local run's tasks, which run one after another in
    this process, read the table once and see each other's rows (every row they write
    goes through it). On Databricks each task is a process of its own. Only the last
    run's instance is kept; a run without an id gets a fresh one each time."""
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
                table_ref(source.name, environment),
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
