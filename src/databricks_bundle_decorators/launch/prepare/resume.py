"""``dbxdec backfill --resume ID``: load a backfill's ledger and reconnect its backend."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.base import BackfillDef
from ...bundle.project import ProjectConfig
from ...bundle.triggers import declared_trigger
from ...definitions import Registry
from ...errors import DbxdecError
from ..backends.backends import Backend
from ..backends.databricks_backend import DatabricksBackend, connect, find_job
from ..backends.errors import require_local_spark
from ..backends.job_router import PerJobBackend
from ..backends.measure_run import RemoteKeyChanges
from ..guard.downstream_workspace import DownstreamWorkspace, connect_downstream, job_locks
from ..guard.pause.pause_permission import checked_schedule_pause
from ..guard.pause.schedule_pause import SchedulePause, restore_stale_pauses
from ..ledger.claims import BackfillGuard
from ..ledger.lease import LocalLock, WorkspaceClaims
from ..ledger.ledger import Ledger, load_ledger
from ..plan.plan import BackfillPlan, Slice, with_options
from ..plan.request import Connection, ResumeRequest
from ..plan.states import RunState
from ..policy.retry_budget import check_retry_budgets
from ..run.blocking import is_downstream, ledger_jobs
from .prepared import PreparedBackfill
from .rebatch import Rebatcher

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


LOST_LOCAL_RUN = (
    "its launcher stopped before the run ended (a local run lives in its launcher's process)"
)


def _close_lost_local_runs(ledger: Ledger) -> None:
    """Close each open attempt of a local ledger as failed, so the resume runs its slice
    again: a local run lived in the launcher that stopped (killed, crashed), so it ended
    with it; no token can find it (its keys are replaced whole by the new attempt)."""
    for record in ledger.slices:
        last = record.last
        if last is not None and last.is_open:
            lost = replace(last, state=RunState.FAILED, error=LOST_LOCAL_RUN)
            ledger.update(record.with_attempt(lost))


def prepare_resume(
    request: ResumeRequest,
    *,
    root: Path,
    project_loader: Callable[[], tuple[ProjectConfig, Registry]],
    client: WorkspaceClient | None = None,
    ledger: Ledger | None = None,
) -> PreparedBackfill:
    """Load backfill ``request.backfill_id`` (or the given ``ledger``: a detached backfill's
        journal) and reconnect its backend; only the pacing may change. Succeeded slices are
        skipped, open attempts re-submitted with their token (locally: closed as failed, their
    run died with its launcher), failed ones get a new attempt.

        Raises:
            UsageError: unknown id, missing credentials, or the job no longer exists.
    """
    ledger = ledger or load_ledger(root, request.backfill_id)  # given: a journal's
    old, pacing = ledger.options, request.pacing
    cap = pacing.max_concurrent or old.max_concurrent
    ledger.options = replace(old, max_concurrent=cap).paced(pacing)
    check_retry_budgets(ledger.options.retries, ledger.options.retry_for)
    spec = ledger.backend
    backend: Backend
    guard: BackfillGuard
    pause: SchedulePause | None = None
    warnings: list[str] = []
    definition: BackfillDef | None
    downstream: DownstreamWorkspace | None = None
    if spec.kind == "local":
        require_local_spark()
        config, registry = project_loader()
        definition = registry.get(ledger.job).backfill
        from ..backends.local_backend import LocalBackend

        backend = LocalBackend(
            registry,
            ledger.job,
            warehouse=config.warehouse,
            max_workers=ledger.options.max_concurrent,
        )
        guard = LocalLock(root, ledger.job, force=request.force)
        if is_downstream(ledger):  # each job's keys under that job's lock
            jobs = list(dict.fromkeys(r.job or ledger.job for r in ledger.slices))
            guard = job_locks(root, jobs, force=request.force)
        _close_lost_local_runs(ledger)
    else:
        if client is None:
            conn = request.connection
            client = connect(host=conn.host or spec.host, profile=conn.profile or spec.profile)
        assert spec.job_id is not None
        # a --downstream backfill: what a killed launcher left paused for any of its
        # jobs (a dependant's trigger, guard.pause.trigger_pause) is put back first
        for job in ledger_jobs(ledger):
            warnings += restore_stale_pauses(client, root, job)
        remote = find_job(client, ledger.job, job_id=spec.job_id)
        backend = DatabricksBackend(
            client, spec.job_id, read_checks=old.checks, resend_after=pacing.resend_after
        )
        try:  # the definition reads the keys of ranged runs; the ledger runs without it
            job_def = project_loader()[1].get(ledger.job)
            definition = job_def.backfill
        except DbxdecError:
            job_def, definition = None, None
        if old.pause_schedule:  # paused again for the rest of the backfill
            pause = checked_schedule_pause(  # checked before anything starts
                client,
                remote,
                root=root,
                job=ledger.job,
                declared_trigger=None if job_def is None else declared_trigger(job_def),
                force_trigger=old.force_trigger_pause,
            )
        if old.diff_gate is not None and job_def is not None:  # the canaries are measured
            backend.measure = RemoteKeyChanges(
                backend.client, spec.job_id, job_def, poll_interval=pacing.poll_interval
            )
        guard = WorkspaceClaims(
            client, job=ledger.job, job_id=spec.job_id, backfill=definition, force=request.force
        )
        if is_downstream(ledger):  # each job's runs on its own deployment, claimed per job
            workspace = connect_downstream(
                project_loader()[1],
                ledger_jobs(ledger),
                Connection(target=spec.target, job_id=spec.job_id, host=spec.host),
                root,
                ledger.options.max_concurrent,
                client,
                checks=old.checks,
                resend_after=pacing.resend_after,
                force=request.force,
            )
            backend, guard = PerJobBackend(workspace.backends, ledger), workspace.guard
            downstream = workspace
    slices = tuple(Slice(r.index, r.keys) for r in ledger.slices)
    plan = with_options(
        BackfillPlan(ledger.job, slices, exact=old.exact, params=old.params),
        checks=old.checks,
        force_rewrite=old.force_rewrite,
        tasks=old.tasks,
    )
    if all(r.state == "succeeded" for r in ledger.slices):
        ledger.slices = []  # nothing to run; the ledger file is left as it is
    rebatcher = None  # --batch-size auto goes on re-choosing from the ledger's runs
    if old.batch_auto and definition is not None:
        rebatcher = Rebatcher(definition, job=ledger.job)
    return PreparedBackfill(
        plan,
        ledger,
        backend,
        ledger.options,
        warnings,
        request.context_args,
        guard,
        pause,
        rebatcher=rebatcher,
        workspace=downstream,
    )
