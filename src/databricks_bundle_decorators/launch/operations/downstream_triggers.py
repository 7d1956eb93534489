"""A ``--downstream`` backfill's dependants' triggers paused, caught up once the runs are over
(:mod:`.trigger_catch_up`) and restored. Local runs pause nothing: table update triggers watch
Unity Catalog tables (https://docs.databricks.com/aws/en/jobs/trigger-table-update)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ...bundle.table_graph import TableGraph, build_table_graph
from ...definitions import JobDefinition, Registry
from ..guard.downstream_workspace import DownstreamWorkspace
from ..guard.pause.pause_permission import require_pausable
from ..guard.pause.trigger_pause import dependant_triggers, hold_dependant_triggers
from ..prepare.prepared import Hold, PreparedBackfill, RunOutcome
from ..run.blocking import ledger_jobs
from .trigger_catch_up import catch_up_dependants

WAREHOUSE_ENV = "DATABRICKS_WAREHOUSE_ID"
"""The catch-up's SQL warehouse (databricks-sdk-py ``Config.warehouse_id``'s variable)."""


def with_trigger_hold(prepared: PreparedBackfill, *, root: Path) -> PreparedBackfill:
    """``prepared`` (resumed) with the trigger hold of a ``--downstream`` backfill on
    Databricks; else as it is.
    """
    workspace, ledger = prepared.workspace, prepared.ledger
    if workspace is None or prepared.hold is not None or not ledger.slices:
        return prepared
    prepared.hold = trigger_hold(
        workspace,
        workspace.registry,
        ledger_jobs(ledger),
        root=root,
        backfill_id=ledger.id,
        poll_interval=prepared.options.poll_interval,
    )
    return prepared


def written_by(
    registry: Registry, jobs: Sequence[str]
) -> tuple[TableGraph, dict[str, JobDefinition], list[str]]:
    """The table graph, its jobs' definitions, and every table ``jobs`` write."""
    graph = build_table_graph(registry)
    definitions = {name: registry.get(name) for name in graph.jobs}
    return graph, definitions, [table for job in jobs for table in graph.writes.get(job, ())]


def trigger_hold(
    workspace: DownstreamWorkspace,
    registry: Registry,
    jobs: list[str],
    *,
    root: Path,
    backfill_id: str,
    poll_interval: float = 1.0,
) -> Hold:
    """The hold that pauses the dependants' triggers of the backfill over ``jobs`` while it
    runs and catches them up at the end.

    Raises:
        WorkspaceRejected: the caller may not edit a dependant it would pause (CAN
            MANAGE), checked before anything is paused or started.
    """
    graph, definitions, written = written_by(registry, jobs)
    found = dependant_triggers(graph, definitions, written)
    dependants = {d.job: workspace.job_id_of(d.job) for d in found}
    require_pausable(workspace.client, dependants, option="--downstream", what="trigger")
    warehouse = os.environ.get(WAREHOUSE_ENV) or None

    @contextmanager
    def hold(say: Callable[[str], None], outcome: RunOutcome) -> Iterator[None]:
        with hold_dependant_triggers(
            workspace.client,
            graph,
            written,
            definitions=definitions,
            root=root,
            job_id_of=workspace.job_id_of,
            say=say,
        ) as dependants:
            yield
            if not dependants or not outcome.finished:
                return
            names = [d.job for d in dependants]
            if warehouse is None:
                say(
                    f"the catch-up of {', '.join(names)} was not launched: no SQL warehouse "
                    f"(set {WAREHOUSE_ENV}); the triggers are restored, and each one's "
                    "next triggered run processes the commits made while it was paused"
                )
                return
            for done in catch_up_dependants(
                workspace.client,
                warehouse,
                names,
                definitions=definitions,
                job_id_of=workspace.job_id_of,
                backfill_id=backfill_id,
                poll_interval=poll_interval,
            ):
                say(done.line)

    return hold
