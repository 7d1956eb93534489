"""``dbxdec backfill A ... --downstream``: one :class:`..plan.slice_graph.SliceGraph` from A's
keys to every job that reads them, each slice carrying its job and the slices it waits for;
on Databricks the dependants' triggers held paused, then caught up (:mod:`.downstream_triggers`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...bundle.table_graph import build_table_graph
from ...definitions import Registry
from ...errors import DefinitionError, UsageError
from ..backends.backends import Backend
from ..backends.errors import require_local_spark
from ..backends.job_router import PerJobBackend
from ..guard.connection import unreached_workspace
from ..guard.downstream_workspace import connect_downstream, job_locks
from ..guard.reruns import check_can_start
from ..ledger.claims import BackfillGuard, this_user
from ..ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    ledger_dir,
    new_backfill_id,
)
from ..plan.plan import BackfillPlan, Slice, slice_parameters, with_options
from ..plan.request import BackfillRequest
from ..plan.slice_graph import SliceGraph, build_slice_graph
from ..prepare.prepared import PreparedBackfill
from .downstream_triggers import trigger_hold
from .undo import carry_backfill_id

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


def _refuse_combinations(request: BackfillRequest) -> None:
    """Options a ``--downstream`` backfill does not take, each refused in one line."""
    conflicts = {
        "--batch-size": request.batch_size != 1,
        "--rerun": request.rerun != "all",
        "--final-sync": request.options.final_sync,
        "--full-refresh": request.options.full_refresh,
        "--diff-gate": request.options.diff_gate is not None,
        "--tasks/--skip-tasks": bool(request.tasks or request.skip_tasks),
        "--pause-schedule": request.options.pause_schedule,
        "--exact": request.options.exact,
        "--force-rewrite": request.options.force_rewrite,
    }
    for option, given in conflicts.items():
        if given:
            raise UsageError(
                f"--downstream cannot be combined with {option}: each job's keys run one "
                f"per run, as the job defines them; drop {option}"
            )
    if request.catchup:
        raise UsageError("--downstream is an option of dbxdec backfill, not of catchup")


def plan_slice_graph(
    request: BackfillRequest, registry: Registry, *, now: datetime | None = None
) -> SliceGraph:
    """The slices of ``request`` with ``--downstream`` (no connection, nothing runs).

    Raises:
        UsageError: bad job, keys or option; a dependant without a backfill definition;
            jobs reading each other in a cycle.
    """
    job = registry.get(request.job)
    root = request.plan(job)
    try:
        graph = build_table_graph(registry)
    except DefinitionError as exc:
        raise UsageError(f"--downstream: {exc}") from None
    definitions = {name: registry.get(name).backfill for name in graph.jobs}
    keys = [key for s in root.slices for key in s.keys]
    order = request.options.order
    forward = keys if order == "forward" else keys[::-1]
    return build_slice_graph(graph, definitions, job.name, forward, order=order, now=now)


def downstream_ledger(
    root: Path,
    graph: SliceGraph,
    request: BackfillRequest,
    options: LaunchOptions,
    spec: BackendSpec | None = None,
) -> Ledger:
    """A new ledger of ``graph``'s slices (not saved); ``--param`` values go to the named
    job's runs only.
    """
    backfill_id = new_backfill_id(graph.root)
    records = []
    for s in graph.slices:
        params = dict(request.options.params) if s.job == graph.root else {}
        if not request.options.checks:
            params = dict(with_options(BackfillPlan(s.job, (), params=params), checks=False).params)
        parameters = slice_parameters((s.key,), exact=False, params=params)
        records.append(SliceRecord(s.index, (s.key,), parameters, (), s.job, s.waits_for))
    return Ledger(
        ledger_dir(root) / f"{backfill_id}.sqlite",
        backfill_id=backfill_id,
        job=graph.root,
        backend=spec or BackendSpec("local"),
        options=options,
        slices=records,
        started_by=request.started_by or this_user(),
        because=request.because,
    )


def plan_downstream(
    request: BackfillRequest,
    *,
    root: Path,
    registry: Registry,
    warehouse: Path,
    dry_run: bool = False,
    now: datetime | None = None,
    client: WorkspaceClient | None = None,
    graph: SliceGraph | None = None,
) -> PreparedBackfill:
    """Plan ``request`` with ``--downstream`` and connect its backend (the module docstring);
    ``graph``: these slices instead of the request's keys' (``dbxdec restate``: from
    several roots; the request then names ``graph.root``).

    Raises:
        UsageError: see :func:`plan_slice_graph`; an option it does not take; the last
            backfill of the named job's keys did not finish (without ``--new``).
    """
    _refuse_combinations(request)
    if graph is None:
        graph = plan_slice_graph(request, registry, now=now)
    if not dry_run:
        check_can_start(
            root, graph.root, graph.keys_of(graph.root), request.context_args, new=request.new
        )
    pacing = request.pacing
    local = request.connection.local
    cap = pacing.cap(local)
    workspace = spec = None
    if not local and not dry_run:
        workspace = connect_downstream(
            registry,
            graph.jobs,
            request.connection,
            root,
            cap,
            client,
            checks=request.options.checks,
            resend_after=pacing.resend_after,
            force=request.force,
        )
        cap, spec = workspace.cap, workspace.spec
    elif not local:  # a dry run plans without the workspace, but says where runs go
        spec = unreached_workspace(request.connection, root)
    named = len(graph.keys_of(graph.root))  # the canaries are the named job's keys
    options = replace(
        request.options, max_concurrent=cap, canary=min(request.options.canary, named)
    ).paced(pacing)
    ledger = downstream_ledger(root, graph, request, options, spec)
    carry_backfill_id(ledger)  # every job's commits carry the one id: undo finds them
    plan = BackfillPlan(
        graph.root, tuple(Slice(r.index, r.keys) for r in ledger.slices), params=options.params
    )
    backend: Backend | None = None
    guard: BackfillGuard | None = None
    hold = None
    if workspace is not None:
        backend = PerJobBackend(workspace.backends, ledger)
        guard = workspace.guard
        hold = trigger_hold(
            workspace,
            registry,
            list(graph.jobs),
            root=root,
            backfill_id=ledger.id,
            poll_interval=pacing.poll_interval,
        )
    elif not dry_run:
        require_local_spark()
        from ..backends.local_backend import LocalBackend

        backend = LocalBackend(registry, graph.root, warehouse=warehouse, max_workers=cap)
        guard = job_locks(root, graph.jobs, force=request.force)
    return PreparedBackfill(
        plan,
        ledger,
        backend,
        options,
        [],
        request.context_args,
        guard,
        slice_graph=graph,
        hold=hold,
        workspace=workspace,
    )
