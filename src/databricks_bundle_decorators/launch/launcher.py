"""``dbxdec backfill`` / ``catchup`` / ``--resume`` as functions: plan, connect, run, sum up.

The CLI only parses options into a :class:`BackfillRequest` and prints; everything a
test wants to call without a terminal is here. A backfill runs under a claim on its
keys (:mod:`.claims`): a second launcher over overlapping keys of the job is refused.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..bundle.project import ProjectConfig
from ..definitions import JobDefinition, Registry
from ..errors import DbxdecError
from .backends import Backend
from .claims import BackfillGuard
from .databricks_backend import DatabricksBackend, connect, find_job, run_history
from .events import Counts, LaunchEvent, LaunchSummary
from .history import KeyHistory, RerunMode, key_history, keys_without_success
from .interrupts import DRAIN, Interrupts
from .ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    ledger_observations,
    list_ledgers,
    load_ledger,
)
from .local_lock import LocalLock
from .pacing import SchedulerOptions
from .plan import BackfillPlan, Order, Slice, build_plan
from .reruns import check_can_start
from .scheduler import Scheduler
from .spark_extra import require_local_spark
from .summary import summarize
from .target import read_target
from .workspace_claims import WorkspaceClaims

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from .progress import Reporter

DEFAULT_MAX_CONCURRENT = 4
DEFAULT_LOCAL_CONCURRENT = 1


@dataclass(frozen=True, slots=True)
class Connection:
    """Where runs go: ``local``, or a workspace (host/profile) and how to find the job."""

    local: bool = False
    target: str | None = None
    job_id: int | None = None
    profile: str | None = None
    host: str | None = None


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    """Everything ``dbxdec backfill`` was asked to do.

    ``max_concurrent`` ``None`` means the backend's default (4 on Databricks, 1 locally).
    ``context_args`` are the CLI arguments that select the project (``--project``,
    ``--pipelines``), repeated in the printed rerun and resume commands. ``force``
    takes over expired claims of other backfills on the same keys. ``new``: see :mod:`.reruns`.
    """

    job: str
    start: str | None = None
    end: str | None = None
    keys: tuple[str, ...] = ()
    order: Order = "forward"
    batch_size: int = 1
    rerun: RerunMode = "all"
    catchup: bool = False
    exact: bool = False
    final_sync: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    connection: Connection = field(default_factory=Connection)
    max_concurrent: int | None = None
    retries: int = 0
    retry_delay: float = 10.0
    halt_on_error: bool = False
    poll_interval: float = 1.0
    context_args: tuple[str, ...] = ()
    force: bool = False
    new: bool = False


@dataclass
class PreparedBackfill:
    """A planned backfill with its ledger and a connected backend, ready to run;
    ``guard`` claims its keys while it runs (none for a dry run)."""

    plan: BackfillPlan
    ledger: Ledger
    backend: Backend | None
    options: SchedulerOptions
    warnings: list[str] = field(default_factory=list)
    context_args: tuple[str, ...] = ()
    guard: BackfillGuard | None = None


def plan_backfill(
    request: BackfillRequest,
    *,
    root: Path,
    registry: Registry,
    warehouse: Path,
    client: WorkspaceClient | None = None,
    dry_run: bool = False,
) -> PreparedBackfill:
    """Plan ``request``; connect the backend unless a dry run needs no history.

    Raises:
        UsageError: bad job, keys, options, target or credentials; an unfinished twin.
    """
    job = registry.get(request.job)
    selected = _checked_plan(job, request)  # bad keys and options fail before any connection
    conn = request.connection
    needs_history = request.rerun != "all" or request.catchup
    if not dry_run:  # before connecting: fails in milliseconds (history picks its own keys)
        fresh = request.new or needs_history
        check_can_start(root, job.name, selected.keys, request.context_args, new=fresh)
    backend: Backend | None = None
    guard: BackfillGuard | None = None
    history: KeyHistory | None = None
    warnings: list[str] = []
    cap = request.max_concurrent or (
        DEFAULT_LOCAL_CONCURRENT if conn.local else DEFAULT_MAX_CONCURRENT
    )
    spec = BackendSpec("local")
    if conn.local:
        if needs_history:
            history = key_history(ledger_observations(list_ledgers(root, job.name)))
        if not dry_run:
            require_local_spark()
            from .local_backend import LocalBackend

            backend = LocalBackend(registry, job.name, warehouse=warehouse, max_workers=cap)
            guard = LocalLock(root, job.name, force=request.force)
    elif not dry_run or needs_history:
        client, spec, cap, warnings = connect_job(job, conn, root, cap, client)
        if needs_history:
            assert job.backfill is not None and spec.job_id is not None
            history = key_history(run_history(client, spec.job_id, job.backfill))
        if not dry_run:
            assert spec.job_id is not None
            backend = DatabricksBackend(client, spec.job_id)
            guard = WorkspaceClaims(
                client, job=job.name, job_id=spec.job_id, backfill=job.backfill, force=request.force
            )
    plan = _checked_plan(job, request, history)
    if request.catchup and history is not None:
        wanted = set(keys_without_success(plan.keys, history))
        plan = replace(
            plan,
            slices=tuple(
                replace(s, index=i)
                for i, s in enumerate(
                    s for s in plan.slices if s.is_final_sync or set(s.keys) & wanted
                )
            ),
        )
    launch_options = LaunchOptions(
        max_concurrent=cap,
        retries=request.retries,
        retry_delay=request.retry_delay,
        halt_on_error=request.halt_on_error,
        exact=request.exact,
        batch_size=request.batch_size,
        order=request.order,
        final_sync=request.final_sync,
        params=dict(request.params),
    )
    ledger = Ledger.create(root, plan, backend=spec, options=launch_options)
    return PreparedBackfill(
        plan,
        ledger,
        backend,
        launch_options.for_scheduler(request.poll_interval),
        warnings,
        request.context_args,
        guard,
    )


def _checked_plan(
    job: JobDefinition, request: BackfillRequest, history: KeyHistory | None = None
) -> BackfillPlan:
    return build_plan(
        job,
        start=request.start,
        end=request.end,
        keys=request.keys,
        order=request.order,
        batch_size=request.batch_size,
        rerun=request.rerun if history is not None else "all",
        history=history,
        exact=request.exact,
        final_sync=request.final_sync,
        params=request.params,
    )


def connect_job(
    job: JobDefinition,
    conn: Connection,
    root: Path,
    cap: int,
    client: WorkspaceClient | None,
) -> tuple[WorkspaceClient, BackendSpec, int, list[str]]:
    target = read_target(root, conn.target) if conn.target else None
    host = conn.host or (target.host if target else None)
    profile = conn.profile or (target.profile if target else None)
    if client is None:
        client = connect(host=host, profile=profile)
    remote = find_job(
        client,
        job.name,
        job_id=conn.job_id,
        name_prefix=target.name_prefix if target else None,
        dev_mode=bool(target and target.dev_mode),
    )
    warnings: list[str] = []
    if remote.max_concurrent_runs < cap:
        if remote.queue_enabled:
            warnings.append(
                f"job {remote.name!r} allows {remote.max_concurrent_runs} concurrent runs; "
                f"with queueing on, runs beyond that wait in the job queue"
            )
        else:
            warnings.append(
                f"job {remote.name!r} allows only {remote.max_concurrent_runs} concurrent runs "
                f"and queueing is off: using --max-concurrent {remote.max_concurrent_runs} "
                f"instead of {cap} (set max_concurrent_runs on the job to go faster)"
            )
            cap = max(1, remote.max_concurrent_runs)
    spec = BackendSpec(
        "databricks",
        job_id=remote.job_id,
        remote_name=remote.name,
        host=client.config.host,
        profile=profile,
        target=conn.target,
    )
    return client, spec, cap, warnings


def prepare_resume(
    backfill_id: str,
    *,
    root: Path,
    project_loader: Callable[[], tuple[ProjectConfig, Registry]],
    client: WorkspaceClient | None = None,
    host: str | None = None,
    profile: str | None = None,
    max_concurrent: int | None = None,
    retries: int | None = None,
    retry_delay: float | None = None,
    halt_on_error: bool = False,
    poll_interval: float = 1.0,
    context_args: tuple[str, ...] = (),
    force: bool = False,
) -> PreparedBackfill:
    """Load backfill ``backfill_id`` and reconnect its backend; pacing may be changed.

    Slices already succeeded are skipped; open attempts are re-submitted with their
    own idempotency token (which finds the run they started); failed and cancelled
    slices get a new attempt. The keys left are claimed again when it runs
    (``force``: taking over expired claims).

    Raises:
        UsageError: unknown id, missing credentials, or the job no longer exists.
    """
    ledger = load_ledger(root, backfill_id)
    old = ledger.options
    ledger.options = replace(
        old,
        max_concurrent=max_concurrent or old.max_concurrent,
        retries=old.retries if retries is None else retries,
        retry_delay=old.retry_delay if retry_delay is None else retry_delay,
        halt_on_error=halt_on_error or old.halt_on_error,
    )
    spec = ledger.backend
    backend: Backend
    guard: BackfillGuard
    if spec.kind == "local":
        require_local_spark()
        config, registry = project_loader()
        registry.get(ledger.job)
        from .local_backend import LocalBackend

        backend = LocalBackend(
            registry,
            ledger.job,
            warehouse=config.warehouse,
            max_workers=ledger.options.max_concurrent,
        )
        guard = LocalLock(root, ledger.job, force=force)
    else:
        if client is None:
            client = connect(host=host or spec.host, profile=profile or spec.profile)
        assert spec.job_id is not None
        find_job(client, ledger.job, job_id=spec.job_id)
        backend = DatabricksBackend(client, spec.job_id)
        try:  # the definition reads the keys of ranged runs; the ledger runs without it
            definition = project_loader()[1].get(ledger.job).backfill
        except DbxdecError:
            definition = None
        guard = WorkspaceClaims(
            client, job=ledger.job, job_id=spec.job_id, backfill=definition, force=force
        )
    slices = tuple(Slice(r.index, r.keys) for r in ledger.slices)
    plan = BackfillPlan(ledger.job, slices, exact=old.exact, params=old.params)
    left = [r for r in ledger.slices if r.state != "succeeded"]
    if not left:
        ledger.slices = []  # nothing to run; the ledger file is left as it is
    return PreparedBackfill(
        plan,
        ledger,
        backend,
        ledger.options.for_scheduler(poll_interval),
        [],
        context_args,
        guard,
    )


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
        interrupts.escalate(DRAIN)

    with contextlib.ExitStack() as cleanup:
        cleanup.callback(backend.close)
        if prepared.guard is not None:
            cleanup.enter_context(prepared.guard.hold(ledger, claim_lost))
        ledger.save()  # the id exists on disk before the first run is launched
        return _run(prepared, backend, reporter, interrupts, header, lost)


def _run(
    prepared: PreparedBackfill,
    backend: Backend,
    reporter: Reporter,
    interrupts: Interrupts,
    header: str | None,
    lost: list[str],
) -> LaunchSummary:
    ledger = prepared.ledger
    started = time.monotonic()
    reporter.start(
        len(ledger.slices),
        header
        or f"Backfill {ledger.id}: {prepared.plan.job}, {len(ledger.slices)} runs "
        f"({backend.kind}, up to {prepared.options.max_concurrent} at once)",
    )
    for warning in prepared.warnings:
        reporter(LaunchEvent("warning", time.time(), Counts(len(ledger.slices)), message=warning))
    scheduler = Scheduler(backend, ledger, prepared.options, emit=reporter, interrupts=interrupts)
    with interrupts.installed():
        scheduler.run()
    for message in lost:
        reporter(LaunchEvent("warning", time.time(), scheduler.counts(), message=message))
    summary = summarize(
        ledger, scheduler.counts(), time.monotonic() - started, prepared.context_args
    )
    reporter.finish(summary)
    return summary
