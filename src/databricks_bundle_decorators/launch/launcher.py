"""``dbxdec backfill`` / ``catchup`` / ``--resume`` as functions the CLI calls: plan,
connect, run under a claim on the keys, sum up.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..definitions import Registry
from ..errors import counted
from .guard.pause.schedule_pause import SchedulePause
from .operations.downstream import plan_downstream
from .operations.full_refresh import first_alone, refuse_full_refresh_combinations, stage_ledger
from .operations.presence import check_upstream, find_missing_data
from .operations.undo import carry_id
from .plan.options import Pacing
from .plan.request import BackfillRequest, Connection, ResumeRequest
from .plan.slice_graph import SliceGraph
from .prepare import planners
from .prepare.planners import Draft, Planner, Planning
from .prepare.prepared import PreparedBackfill, RunOutcome
from .run.blocking import ReadySet, is_downstream
from .run.events import Counts, LaunchEvent, LaunchSummary
from .run.interrupts import Interrupts
from .run.scheduler import Scheduler
from .run.summary import summarize
from .status.observed import catch_up_by_runs, read_history

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


PLANNERS: tuple[Planner, ...] = (
    refuse_full_refresh_combinations,
    planners.check_retries,
    planners.check_diff_gate,
    planners.select_keys,
    planners.refuse_local_pause,
    planners.refuse_unfinished,
    planners.connect,
    planners.pause_schedule,
    read_history,
    find_missing_data,
    check_upstream,
    planners.require_order,
    planners.connect_backend,
    planners.measure_canaries,
    planners.claim_keys,
    catch_up_by_runs,
    planners.read_past_runs,
    planners.choose_batches,
    planners.plan_runs,
    planners.record_options,
    first_alone,
    planners.create_ledger,
    carry_id,
    stage_ledger,
    planners.estimate_runs,
)
"""The planners of a new backfill, in the order they run (:mod:`.prepare.planners`)."""


def plan_backfill(
    request: BackfillRequest,
    *,
    root: Path,
    registry: Registry,
    warehouse: Path,
    client: WorkspaceClient | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    slice_graph: SliceGraph | None = None,
) -> PreparedBackfill:
    """Plan ``request`` and connect its backend (``now``: the run history's horizon). A dry
    run launches nothing, but on Databricks reads the job's recent runs for the estimate,
    and ``catchup --by data`` runs the job once to list the partitions present. With
    ``slice_graph`` (``dbxdec restate``), those slices as a ``--downstream`` backfill.

    Raises:
        UsageError: bad job, keys, options, target or credentials; an unfinished twin.
    """
    if request.downstream or slice_graph is not None:
        return plan_downstream(
            request,
            root=root,
            registry=registry,
            warehouse=warehouse,
            dry_run=dry_run,
            now=now,
            client=client,
            graph=slice_graph,
        )
    job = registry.get(request.job)
    planning = Planning(request, job, registry, root, warehouse, client, dry_run, now)
    draft = Draft(request.pacing.cap(request.connection.local))
    for planner in PLANNERS:
        draft = planner(draft, planning)
    return draft.prepared(planning)


def run_backfill(
    prepared: PreparedBackfill,
    reporter: Reporter,
    *,
    interrupts: Interrupts | None = None,
    header: str | None = None,
) -> LaunchSummary:
    """Claim the backfill's keys, run it to the end (or an interrupt) and sum it up.

    Raises:
        UsageError: another backfill holds some of the keys; nothing was launched.
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
        started = time.monotonic()
        reporter.start(
            len(ledger.slices),
            header
            or f"Backfill {ledger.id}: {prepared.plan.job}, {counted(len(ledger.slices), 'run')} "
            f"({backend.kind}, up to {prepared.options.max_concurrent} at once)",
        )
        for warning in [*prepared.warnings, *filter(None, notes)]:
            event = LaunchEvent("warning", time.time(), Counts(len(ledger.slices)), message=warning)
            reporter(event)
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
        outcome.finished = summary.state != "interrupted"
        return summary


def _say_restored(reporter: Reporter, pause: SchedulePause) -> None:
    if pause.restore_message:
        _say(reporter, pause.restore_message)


def _say(reporter: Reporter, line: str) -> None:
    reporter(LaunchEvent("warning", time.time(), Counts(), message=line))
