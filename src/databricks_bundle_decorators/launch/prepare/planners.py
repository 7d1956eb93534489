"""A new backfill planned by planners, each owning one feature and refining one
:class:`Draft`: ``planner(draft, planning) -> draft``, run in the order of
:data:`..launcher.PLANNERS` (checks needing no connection first). Planners of later
rooms' features sit with them (:mod:`..status.observed`, :mod:`..operations`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.base import BackfillDef
from ...bundle.triggers import declared_trigger
from ...definitions import JobDefinition, Registry
from ...errors import DbxdecError, UsageError
from ...runtime.programs.task_subset import task_selection
from ..backends.backends import Backend
from ..backends.databricks_backend import DatabricksBackend
from ..backends.diff_gate import checked_diff_gate
from ..backends.errors import BackendUnavailable, require_local_spark
from ..backends.measure_run import RemoteKeyChanges
from ..backends.task_output import job_has_checks
from ..estimate.auto_batch import BatchChoice, choose_batch_size, fit_model
from ..estimate.cost import with_past_dbus
from ..estimate.estimate import (
    Estimate,
    PastRun,
    compute_of_job,
    estimate,
    past_runs_databricks,
    past_runs_local,
    with_spark_startup,
)
from ..guard.connection import ConnectedJob, connect_job, unreached_workspace
from ..guard.pause.pause_permission import checked_schedule_pause
from ..guard.pause.schedule_pause import SchedulePause
from ..guard.reruns import check_can_start
from ..ledger.claims import BackfillGuard, this_user
from ..ledger.lease import LocalLock, WorkspaceClaims
from ..ledger.ledger import BackendSpec, Ledger
from ..plan.history import KeyHistory
from ..plan.options import LaunchOptions
from ..plan.plan import BackfillPlan, with_options
from ..plan.request import BackfillRequest
from ..policy.retry_budget import check_retry_budgets
from ..workspace.workspace import require_order_parameter
from .prepared import PreparedBackfill
from .rebatch import Rebatcher

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


@dataclass(frozen=True, slots=True)
class Planning:
    """What every planner reads: the request, its job and where it runs."""

    request: BackfillRequest
    job: JobDefinition
    registry: Registry
    root: Path
    warehouse: Path
    client: WorkspaceClient | None = None
    dry_run: bool = False
    now: datetime | None = None

    @property
    def local(self) -> bool:
        return self.request.connection.local

    @property
    def backfill(self) -> BackfillDef:
        assert self.job.backfill is not None  # select_keys refused a job without one
        return self.job.backfill

    @property
    def needs_history(self) -> bool:
        """Whether keys are picked by their past runs (``--rerun``, ``catchup --by runs``)."""
        request = self.request
        return request.rerun != "all" or (request.catchup and request.by == "runs")

    @property
    def by_data(self) -> bool:
        return self.request.catchup and self.request.by == "data"


@dataclass(frozen=True, slots=True)
class Draft:
    """A backfill being planned: ``asked`` (the plan of the keys asked for), ``history`` and
    ``only`` (what reruns and catch-ups keep), ``plan`` (the runs that go), ``found`` (the
    deployed job), ``unreached`` (why a dry run could not reach it), ``past`` (the job's
    past runs).
    """

    cap: int
    spec: BackendSpec = field(default_factory=lambda: BackendSpec("local"))
    asked: BackfillPlan | None = None
    tasks: str = ""
    diff_gate: float | None = None
    found: ConnectedJob | None = None
    unreached: str | None = None
    history: KeyHistory | None = None
    only: frozenset[str] | None = None
    backend: Backend | None = None
    guard: BackfillGuard | None = None
    pause: SchedulePause | None = None
    warnings: tuple[str, ...] = ()
    past: list[PastRun] | None = None
    choice: BatchChoice | None = None
    batch_size: int = 1
    plan: BackfillPlan | None = None
    options: LaunchOptions | None = None
    ledger: Ledger | None = None
    estimate: Estimate | None = None
    rebatcher: Rebatcher | None = None

    @property
    def keys(self) -> list[str]:
        """The keys asked for (after :func:`select_keys`)."""
        assert self.asked is not None
        return self.asked.keys

    def prepared(self, planning: Planning) -> PreparedBackfill:
        """The planned backfill (after :func:`create_ledger`)."""
        assert self.plan is not None and self.ledger is not None
        return PreparedBackfill(
            self.plan,
            self.ledger,
            self.backend,
            self.ledger.options,
            list(self.warnings),
            planning.request.context_args,
            self.guard,
            self.pause,
            self.estimate,
            self.choice,
            self.rebatcher,
            self.unreached,
        )


Planner = Callable[[Draft, Planning], Draft]


def check_retries(draft: Draft, planning: Planning) -> Draft:
    """``--retries`` and ``--retry-for`` that cannot work are refused."""
    pacing = planning.request.pacing
    check_retry_budgets(pacing.retries or 0, pacing.retry_for)
    return draft


def check_diff_gate(draft: Draft, planning: Planning) -> Draft:
    """``--diff-gate`` (percent), refused without canaries; the one reading of it."""
    return replace(draft, diff_gate=checked_diff_gate(planning.request, planning.local))


def select_keys(draft: Draft, planning: Planning) -> Draft:
    """The keys asked for and the tasks to run (bad keys fail before any connection)."""
    request = planning.request
    asked = request.plan(planning.job)  # a job without a backfill definition first
    tasks = task_selection(planning.job, request.tasks, request.skip_tasks)
    return replace(draft, asked=asked, tasks=tasks)


def refuse_local_pause(draft: Draft, planning: Planning) -> Draft:
    """``--pause-schedule`` pauses a Databricks job's schedule: refused with ``--local``."""
    if planning.request.options.pause_schedule and planning.local:
        raise UsageError("--pause-schedule pauses a Databricks job's schedule: drop --local")
    return draft


def refuse_unfinished(draft: Draft, planning: Planning) -> Draft:
    """An unfinished backfill of the same keys is refused before connecting."""
    request = planning.request
    if not planning.dry_run:
        fresh = request.new or request.catchup or planning.needs_history
        job, args = planning.job.name, request.context_args
        check_can_start(planning.root, job, draft.keys, args, new=fresh)
    return draft


def connect(draft: Draft, planning: Planning) -> Draft:
    """The deployed job; a dry run that cannot reach the workspace plans without it."""
    if planning.local:
        return draft
    request = planning.request
    try:
        found = connect_job(
            planning.job,
            request.connection,
            planning.root,
            draft.cap,
            planning.client,
            pause_schedule=request.options.pause_schedule,
        )
    except (DbxdecError, BackendUnavailable) as exc:
        if not planning.dry_run or planning.needs_history or planning.by_data:
            raise
        spec = unreached_workspace(request.connection, planning.root)
        return replace(draft, spec=spec, unreached=str(exc))
    warnings = (*draft.warnings, *found.warnings)
    return replace(draft, found=found, spec=found.spec, cap=found.cap, warnings=warnings)


def require_order(draft: Draft, planning: Planning) -> Draft:
    """The deployed job declares ``dbxdec_order`` when an option of the request travels in
    it (without one, a job lacking it runs without the backfill's id: a warning)."""
    options, found = planning.request.options, draft.found
    if found is None or planning.dry_run:
        return draft
    wanted = (
        (options.full_refresh, "to --full-refresh"),
        (bool(draft.tasks), "to run --tasks"),
        (options.force_rewrite, "to --force-rewrite"),
        (not options.checks, "to --no-checks"),
        (draft.diff_gate is not None, "to --diff-gate"),
    )
    purpose = next((purpose for on, purpose in wanted if on), "")
    if purpose:
        require_order_parameter(
            found.client, found.remote.job_id, planning.job.name, purpose=purpose
        )
    return draft


def connect_backend(draft: Draft, planning: Planning) -> Draft:
    """Where the runs go: the local Spark or the deployed job (none for a dry run)."""
    request, found = planning.request, draft.found
    if planning.dry_run:
        return draft
    if found is None:
        require_local_spark()
        from ..backends.local_backend import LocalBackend

        backend: Backend = LocalBackend(
            planning.registry,
            planning.job.name,
            warehouse=planning.warehouse,
            max_workers=draft.cap,
        )
        return replace(draft, backend=backend)
    backend = DatabricksBackend(
        found.client,
        found.remote.job_id,
        read_checks=request.options.checks and job_has_checks(planning.job),
        resend_after=request.pacing.resend_after,
    )
    return replace(draft, backend=backend)


def measure_canaries(draft: Draft, planning: Planning) -> Draft:
    """``--diff-gate`` on Databricks: a run of the job measures the canaries' keys."""
    found, backend = draft.found, draft.backend
    if not isinstance(backend, DatabricksBackend) or found is None:
        return draft
    if draft.diff_gate is not None:
        backend.measure = RemoteKeyChanges(
            backend.client,
            found.remote.job_id,
            planning.job,
            poll_interval=planning.request.pacing.poll_interval,
        )
    return draft


def claim_keys(draft: Draft, planning: Planning) -> Draft:
    """The claim on the keys, held while the backfill runs (none for a dry run)."""
    request, found = planning.request, draft.found
    if planning.dry_run:
        return draft
    if found is None:
        return replace(
            draft, guard=LocalLock(planning.root, planning.job.name, force=request.force)
        )
    guard = WorkspaceClaims(
        found.client,
        job=planning.job.name,
        job_id=found.remote.job_id,
        backfill=planning.backfill,
        force=request.force,
    )
    return replace(draft, guard=guard)


def pause_schedule(draft: Draft, planning: Planning) -> Draft:
    """``--pause-schedule``: the schedule paused while the backfill runs, the permission
    checked before anything is paused or started.
    """
    found = draft.found
    if planning.dry_run or found is None or not planning.request.options.pause_schedule:
        return draft
    pause = checked_schedule_pause(
        found.client,
        found.remote,
        root=planning.root,
        job=planning.job.name,
        declared_trigger=declared_trigger(planning.job),
        force_trigger=planning.request.options.force_trigger_pause,
    )
    return replace(draft, pause=pause)


def read_past_runs(draft: Draft, planning: Planning) -> Draft:
    """The job's past runs, for a dry run's estimate and ``--batch-size auto``."""
    auto = planning.request.batch_size == "auto"
    found = draft.found
    if not (planning.dry_run or auto) or draft.unreached is not None:
        return draft
    if found is None:
        return replace(draft, past=past_runs_local(planning.root, planning.job.name))
    past = past_runs_databricks(found.client, found.remote.job_id, planning.job.backfill)
    return replace(draft, past=past)


def choose_batches(draft: Draft, planning: Planning) -> Draft:
    """``--batch-size auto``: keys per run from the past runs, re-chosen as runs end."""
    request = planning.request
    if request.batch_size != "auto":
        return draft
    keys = len(request.plan(planning.job, draft.history, draft.only).keys)
    choice = choose_batch_size(
        fit_model(draft.past or []),
        keys=keys,
        max_concurrent=draft.cap,
        target_seconds=request.options.target_run_seconds,
        job=planning.job.name,
    )
    rebatcher = Rebatcher(planning.backfill, draft.past or (), job=planning.job.name)
    return replace(draft, choice=choice, rebatcher=rebatcher)


def plan_runs(draft: Draft, planning: Planning) -> Draft:
    """The runs that go: the keys selected, batched, with their job parameters."""
    request = planning.request
    size = draft.choice.size if draft.choice is not None else int(request.batch_size)
    chosen = draft.asked  # unless keys are selected or batched
    if chosen is None or draft.history is not None or draft.only is not None or size != 1:
        chosen = request.plan(planning.job, draft.history, draft.only, batch_size=size)
    options = request.options  # the whole order: each call replaces it
    plan = with_options(
        chosen, checks=options.checks, force_rewrite=options.force_rewrite, tasks=draft.tasks
    )
    return replace(draft, plan=plan, batch_size=size)


def record_options(draft: Draft, planning: Planning) -> Draft:
    """The options the ledger keeps and the scheduler runs by."""
    request = planning.request
    options = replace(
        request.options,
        max_concurrent=draft.cap,
        batch_size=draft.batch_size,
        batch_auto=request.batch_size == "auto",
        tasks=draft.tasks,
        diff_gate=draft.diff_gate,
    )
    return replace(draft, options=options.paced(request.pacing))


def create_ledger(draft: Draft, planning: Planning) -> Draft:
    """The backfill's ledger (not yet saved)."""
    assert draft.plan is not None and draft.options is not None
    ledger = Ledger.create(
        planning.root,
        draft.plan,
        backend=draft.spec,
        options=draft.options,
        started_by=planning.request.started_by or this_user(),
    )
    return replace(draft, ledger=ledger)


def estimate_runs(draft: Draft, planning: Planning) -> Draft:
    """A dry run's estimate of the wall time (and compute) from the job's past runs."""
    if not planning.dry_run or draft.unreached is not None:
        return draft
    plan, runs, found, cap = draft.plan, draft.past or [], draft.found, draft.cap
    assert plan is not None
    if found is None:
        guess = estimate(plan, runs, max_concurrent=cap, compute=None)
        guess = with_spark_startup(guess, planning.root) if planning.local else guess
        return replace(draft, estimate=guess)
    rate = planning.request.dbu_per_hour
    compute = compute_of_job(found.client, found.remote.job_id)
    guess = estimate(plan, runs, max_concurrent=cap, compute=compute, dbu_per_hour=rate)
    # a rate the user gave wins; else past DBUs per key, when billing is readable
    if rate is None:
        guess = with_past_dbus(guess, plan, found.client, runs)
    return replace(draft, estimate=guess)
