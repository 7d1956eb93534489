"""``dbxdec backfill`` / ``catchup`` / ``--resume`` as functions: plan, connect, run, sum up.

The CLI only parses options into a :class:`BackfillRequest` and prints; everything a
test wants to call without a terminal is here. A backfill runs under a claim on its
keys (:mod:`.claims`): a second launcher over overlapping keys of the job is refused.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..backfill.wire import (
    BACKFILL_CHECKS_PARAM,
    BACKFILL_FORCE_REWRITE_PARAM,
    BACKFILL_TASKS_PARAM,
    ORDER_PARAM,
)
from ..definitions import JobDefinition, Registry
from ..errors import DbxdecError, UsageError, counted
from ..runtime.programs.task_subset import task_selection
from .backends.backends import Backend
from .backends.check_reports import job_has_checks
from .backends.databricks_backend import DatabricksBackend
from .backends.diff_gate import checked_diff_gate
from .backends.errors import BackendUnavailable
from .backends.measure_run import RemoteKeyChanges
from .backends.spark_extra import require_local_spark
from .estimate.auto_batch import choose_batch_size, fit_model
from .estimate.dry_run import dry_run_estimate, past_runs_of
from .estimate.estimate import PastRun
from .estimate.local_startup import with_spark_startup
from .guard.claims import BackfillGuard
from .guard.connection import ConnectedJob, connect_job, unreached_workspace
from .guard.lease import LocalLock, WorkspaceClaims
from .guard.pause.schedule_pause import SchedulePause
from .guard.reruns import check_can_start
from .ledger.ledger import BackendSpec, LaunchOptions, Ledger
from .operations.downstream import plan_downstream
from .operations.full_refresh import (
    check_full_refresh,
    first_alone,
    require_deployed_parameter,
    stage_ledger,
)
from .operations.ledger_undone import carry_backfill_id
from .operations.presence import keys_missing_data_databricks, keys_missing_data_local
from .plan.history import KeyHistory, keys_without_success
from .plan.options import Pacing
from .plan.plan import BackfillPlan, build_plan, with_checks, with_force_rewrite, with_tasks
from .plan.request import BackfillRequest, Connection, ResumeRequest
from .policy.retry_budget import check_retry_budgets
from .prepare.prepared import PreparedBackfill, RunOutcome
from .prepare.rebatch import Rebatcher
from .run.blocking import ReadySet, is_downstream
from .run.events import Counts, LaunchEvent, LaunchSummary
from .run.interrupts import Interrupts
from .run.scheduler import Scheduler
from .run.summary import summarize
from .status.horizon import history_to_select
from .status.observed import observed_history
from .workspace.workspace import require_job_parameter

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from .status.progress import Reporter

__all__ = [
    "BackfillRequest",
    "Connection",
    "Pacing",
    "PreparedBackfill",
    "ResumeRequest",
    "plan_backfill",
    "run_backfill",
]


def plan_backfill(
    request: BackfillRequest,
    *,
    root: Path,
    registry: Registry,
    warehouse: Path,
    client: WorkspaceClient | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PreparedBackfill:
    """Plan ``request`` and connect its backend (``now``: when, for the run history's horizon).

    A dry run launches nothing; on Databricks it still reads the job's recent runs for
    the estimate (when the workspace cannot be reached, the estimate says so), and
    ``catchup --by data`` runs the job once to list the partitions present.

    Raises:
        UsageError: bad job, keys, options, target or credentials; an unfinished twin.
    """
    if request.downstream:
        return plan_downstream(
            request,
            root=root,
            registry=registry,
            warehouse=warehouse,
            dry_run=dry_run,
            now=now,
            client=client,
        )
    job = registry.get(request.job)
    check_full_refresh(request)
    check_retry_budgets(request.pacing.retries or 0, request.pacing.retry_for)
    selected = _checked_plan(job, request)  # bad keys and options fail before any connection
    tasks = task_selection(job, request.tasks, request.skip_tasks)
    if request.pause_schedule and request.connection.local:
        raise UsageError("--pause-schedule pauses a Databricks job's schedule: drop --local")
    conn, pacing = request.connection, request.pacing
    needs_history = request.rerun != "all" or (request.catchup and request.by == "runs")
    by_data = request.catchup and request.by == "data"
    if not dry_run:  # before connecting: fails in milliseconds (history picks its own keys)
        fresh = request.new or request.catchup or needs_history
        check_can_start(root, job.name, selected.keys, request.context_args, new=fresh)
    backend: Backend | None = None
    guard: BackfillGuard | None = None
    pause: SchedulePause | None = None
    history: KeyHistory | None = None
    only: list[str] | None = None
    warnings: list[str] = []
    unreached: str | None = None
    cap = pacing.cap(conn.local)
    spec = BackendSpec("local")
    found: ConnectedJob | None = None
    assert job.backfill is not None  # _checked_plan refused a job without one
    if conn.local:
        if needs_history:
            history = observed_history(job.name, job.backfill, root=root)
        if by_data:
            require_local_spark()
            only = keys_missing_data_local(registry, job, selected.keys, warehouse=warehouse)
        if not dry_run:
            require_local_spark()
            from .backends.local_backend import LocalBackend

            backend = LocalBackend(registry, job.name, warehouse=warehouse, max_workers=cap)
            guard = LocalLock(root, job.name, force=request.force)
    else:
        try:
            found = connect_job(job, conn, root, cap, client, pause_schedule=request.pause_schedule)
        except (DbxdecError, BackendUnavailable) as exc:
            if not dry_run or needs_history or by_data:
                raise
            # a dry run plans without the workspace, but says where the runs would go
            spec, unreached = unreached_workspace(conn, root), str(exc)
    if found is not None:
        client, spec, cap, warnings = found.client, found.spec, found.cap, [*found.warnings]
        job_id = found.remote.job_id
        if request.full_refresh:
            require_deployed_parameter(client, job_id, job.name)
        if needs_history:
            history = observed_history(
                job.name, job.backfill, root=root, client=client, job_id=job_id
            )
            history = history_to_select(  # keys beyond the runs' 60 days: unknown, left alone
                history, job.backfill, selected.keys, request.keys, found.remote, warnings, now=now
            )
        if by_data:
            only = keys_missing_data_databricks(
                client, job_id, job, selected.keys, poll_interval=pacing.poll_interval
            )
        if not dry_run:
            gated = checked_diff_gate(request, conn.local) is not None
            for parameter, purpose in _required_parameters(request, tasks, gated=gated):
                require_job_parameter(client, job_id, job.name, parameter, purpose=purpose)
            backend = DatabricksBackend(
                client,
                job_id,
                read_checks=request.checks and job_has_checks(job),
                resend_after=pacing.resend_after,
            )
            if gated:
                backend.measure = RemoteKeyChanges(
                    backend.client, job_id, job, poll_interval=pacing.poll_interval
                )
            guard = WorkspaceClaims(
                client, job=job.name, job_id=job_id, backfill=job.backfill, force=request.force
            )
            if request.pause_schedule:
                pause = SchedulePause(client, root=root, job=job.name, job_id=job_id)
    if request.catchup and history is not None:
        only = keys_without_success(selected.keys, history)
    auto = request.batch_size == "auto"
    past: list[PastRun] | None = None
    if (dry_run or auto) and unreached is None:  # never the local runs' times for Databricks
        past = past_runs_of(job, root, found)
    choice = None
    if auto:
        keys = len(_checked_plan(job, request, history, only, batch_size=1).keys)
        choice = choose_batch_size(
            fit_model(past or []),
            keys=keys,
            max_concurrent=cap,
            target_seconds=request.target_run_seconds,
            job=job.name,
        )
    size = choice.size if choice is not None else int(request.batch_size)
    unfiltered = history is None and only is None and size == 1  # the plan is `selected`
    chosen = selected if unfiltered else _checked_plan(job, request, history, only, batch_size=size)
    plan = with_tasks(with_force_rewrite(chosen, request.force_rewrite), tasks)
    launch_options = LaunchOptions(
        max_concurrent=cap,
        exact=request.exact,
        batch_size=size,
        order=request.order,
        final_sync=request.final_sync,
        params=dict(request.params),
        force_rewrite=request.force_rewrite,
        full_refresh=request.full_refresh,
        checks=request.checks,
        canary=first_alone(request),
        diff_gate=checked_diff_gate(request, conn.local),
        pause_schedule=request.pause_schedule,
        batch_auto=auto,
        target_run_seconds=request.target_run_seconds,
        tasks=tasks,
    ).paced(pacing)
    ledger = Ledger.create(root, plan, backend=spec, options=launch_options)
    warnings += carry_backfill_id(ledger, found)  # its commits carry its id: undo finds them
    if request.full_refresh:
        stage_ledger(ledger)  # the slices write staging tables; the last run swaps them in
    guess = None
    if dry_run and unreached is None:
        guess = dry_run_estimate(plan, past or [], found, cap, request.dbu_per_hour)
        guess = with_spark_startup(guess, root) if conn.local else guess
    rebatcher = Rebatcher(job.backfill, past or (), job=job.name) if auto else None
    return PreparedBackfill(
        plan,
        ledger,
        backend,
        launch_options,
        warnings,
        request.context_args,
        guard,
        pause,
        guess,
        choice,
        rebatcher,
        unreached,
    )


def _required_parameters(
    request: BackfillRequest, tasks: str, *, gated: bool
) -> list[tuple[str, str]]:
    """The job parameters the deployed job must declare for ``request``'s options, in
    the order they are checked, each with the advice's purpose (``gated``: the diff gate
    measures the canaries with a run of the job)."""
    wanted = (
        (bool(tasks), BACKFILL_TASKS_PARAM, "to run --tasks"),
        (request.force_rewrite, BACKFILL_FORCE_REWRITE_PARAM, "to --force-rewrite"),
        (not request.checks, BACKFILL_CHECKS_PARAM, "to --no-checks"),
        (gated, ORDER_PARAM, "to --diff-gate"),
    )
    return [(parameter, purpose) for on, parameter, purpose in wanted if on]


def _checked_plan(
    job: JobDefinition,
    request: BackfillRequest,
    history: KeyHistory | None = None,
    only: Collection[str] | None = None,
    *,
    batch_size: int = 1,
) -> BackfillPlan:
    plan = build_plan(
        job,
        start=request.start,
        end=request.end,
        keys=request.keys,
        order=request.order,
        batch_size=batch_size,
        rerun=request.rerun if history is not None else "all",
        history=history,
        exact=request.exact,
        final_sync=request.final_sync or request.full_refresh,  # a full refresh's swap
        params=request.params,
        only=None if only is None else frozenset(only),
    )
    return with_checks(plan, request.checks)


def run_backfill(
    prepared: PreparedBackfill,
    reporter: Reporter,
    *,
    interrupts: Interrupts | None = None,
    header: str | None = None,
) -> LaunchSummary:
    """Claim the backfill's keys, run it to the end (or an interrupt) and sum it up.

    Raises:
        UsageError: another backfill holds some of the keys; nothing was launched and
            no ledger was written.
    """
    ledger, backend = prepared.ledger, prepared.backend
    assert backend is not None
    interrupts = interrupts or Interrupts()
    lost: list[str] = []

    def claim_lost(message: str) -> None:  # called from the claim's renewal thread
        lost.append(message)
        interrupts.stop(message)  # not a Ctrl-C: its own message and exit code (7)

    with contextlib.ExitStack() as cleanup:
        cleanup.callback(backend.close)
        cleanup.callback(ledger.close)  # after the last save: one whole file again
        if prepared.guard is not None:
            cleanup.enter_context(prepared.guard.hold(ledger, claim_lost))
        notes: list[str] = []
        if prepared.pause is not None:  # under the claim: a refused claim pauses nothing
            pause = prepared.pause
            notes.append(cleanup.enter_context(pause.hold()))
            cleanup.callback(lambda: _say_restored(reporter, pause))
        outcome = RunOutcome()
        if prepared.hold is not None:  # under the claims, as the schedule's pause
            cleanup.enter_context(prepared.hold(lambda line: _say(reporter, line), outcome))
        ledger.save()  # the id exists on disk before the first run is launched
        summary = _run(prepared, backend, reporter, interrupts, header, lost, notes)
        outcome.finished = summary.state != "interrupted"
        return summary


def _run(
    prepared: PreparedBackfill,
    backend: Backend,
    reporter: Reporter,
    interrupts: Interrupts,
    header: str | None,
    lost: list[str],
    notes: list[str],
) -> LaunchSummary:
    ledger = prepared.ledger
    started = time.monotonic()
    reporter.start(
        len(ledger.slices),
        header
        or f"Backfill {ledger.id}: {prepared.plan.job}, {counted(len(ledger.slices), 'run')} "
        f"({backend.kind}, up to {prepared.options.max_concurrent} at once)",
    )
    for warning in [*prepared.warnings, *filter(None, notes)]:
        reporter(LaunchEvent("warning", time.time(), Counts(len(ledger.slices)), message=warning))
    scheduler = Scheduler(
        backend,
        ledger,
        prepared.options,
        emit=reporter,
        interrupts=interrupts,
        ready=ReadySet(ledger) if is_downstream(ledger) else None,
        rebatch=prepared.rebatcher,
    )
    with interrupts.installed():
        scheduler.run()
    summary = summarize(ledger, time.monotonic() - started, prepared.context_args)
    if lost and summary.state != "succeeded":  # the scheduler has said it and stopped
        summary = replace(summary, claim_lost=lost[0])
    reporter.finish(summary)
    return summary


def _say_restored(reporter: Reporter, pause: SchedulePause) -> None:
    if pause.restore_message:
        _say(reporter, pause.restore_message)


def _say(reporter: Reporter, line: str) -> None:
    reporter(LaunchEvent("warning", time.time(), Counts(), message=line))
