"""``dbxdec backfill undo ID`` as functions: which runs were the backfill's, what undo
restores, and the restore itself (the CLI only prints and asks).

Every run the backfill started (every attempt, failed ones too: a run can commit one
table and fail in a later task) was sent the backfill's id, and each of its Delta
commits carries it (see :mod:`..runtime.programs.undo`), so the tables' histories say which
versions to undo, however many runs the backfill took. A backfill whose ledger predates
that id (its runs were not sent it: :func:`.ledger_undone.carries_backfill_id`) is found
by the ids of its runs instead, which the ledger recorded. Undo runs where the tables are:

- a local backfill's tables are planned and restored on the embedded Spark, every table
  checked before any is restored (:class:`LocalUndo`);
- a Databricks backfill's tables live in Unity Catalog: undo is a run of the deployed
  job with ``dbxdec_order`` set (:class:`~..backfill.wire.UndoOrder`), in which every
  task restores the tables it writes on the job's own compute, through the same runtime
  code, and refuses (failing that task) what needs ``--force``
  (:class:`.remote_undo.RemoteUndo`); a ``--downstream`` backfill's, one such run per
  job, every table checked first (:func:`.remote_undo.remote_downstream_undo`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...bundle.project import ProjectConfig
from ...definitions import Registry
from ...definitions.contracts import LazySession, RunEnvironment
from ...errors import UsageError
from ...runtime.programs.undo import BackfillRuns, JobUndo, UndoRefused, plan_undo
from ..backends.spark_extra import require_local_spark
from ..guard.claims import this_host, this_user
from ..ledger.journal import open_journal
from ..ledger.ledger import Ledger, load_ledger
from ..ledger.ledger_store import backfill_ids, ledger_dir
from ..plan.request import Connection
from ..run.blocking import is_downstream
from ..status.journal_status import locate_journal
from .downstream_triggers import WAREHOUSE_ENV
from .downstream_undo import DownstreamUndo, downstream_jobs, job_runs
from .ledger_undone import read_undone, record_undone
from .remote_undo import (
    RemoteUndo,
    _undo_reports,
    by_run_ids,
    header,
    in_flight,
    remote_downstream_undo,
    remote_job_undo,
)

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = ["LocalUndo", "RemoteUndo", "_undo_reports", "backfill_runs", "prepare_undo"]


def backfill_runs(ledger: Ledger, undone: frozenset[tuple[str, int]] | None = None) -> BackfillRuns:
    """The ids of every run a one-job backfill started (rejected submissions have none),
    and whether they carried the backfill's id (:func:`.downstream_undo.job_runs` of
    its job)."""
    return job_runs(ledger, ledger.job, undone)


@dataclass(frozen=True, slots=True)
class LocalUndo:
    """A local backfill's undo, planned from the tables' histories; :meth:`apply` restores."""

    ledger: Ledger
    plan: JobUndo
    spark: Any

    @property
    def runs(self) -> BackfillRuns:
        """The runs whose commits are undone."""
        return self.plan.runs

    @property
    def count(self) -> int:
        """Tables that would change."""
        return len(self.plan.changes)

    def lines(self) -> list[str]:
        """What undo will do, one line per table, then notes and warnings."""
        out = [header(self.ledger, self.plan.runs)]
        out += [f"  {table.describe()}" for table in self.plan.tables]
        if not self.plan.tables:
            out.append("  the job writes no Delta table through an IoManager")
        out += [f"  note: {note}" for note in self.plan.notes] + by_run_ids(self.plan.runs)
        old = not self.plan.runs.by_id
        if old and any(run.startswith("local-") for run in self.plan.runs.run_ids):
            out.append(
                "  warning: this backfill ran before dbxdec recorded the run ids its commits "
                "carry; its commits cannot be told from others, so none is undone"
            )
        return out + in_flight(self.ledger)

    def refusals(self) -> list[str]:
        """One line per table that needs ``force``."""
        return self.plan.refusals()

    def refused(self) -> UndoRefused | None:
        """The error undo without ``force`` raises, if any."""
        return self.plan.refused()

    def apply(self, *, force: bool = False) -> list[str]:
        """Restore every table (all were checked first); one line per table restored.

        The version each restore made is recorded in the ledger (a later undo knows it).
        """
        lines = []
        for table in self.plan.apply(self.spark, force=force):
            if table.made is not None:
                record_undone(self.ledger, table.table.name, table.made)
            lines.append(
                f"{'Emptied' if table.action == 'empty' else 'Restored'} {table.table.name}."
            )
        return lines


def detached_ledger(
    backfill_id: str,
    root: Path,
    *,
    host: str | None,
    profile: str | None,
    client: WorkspaceClient | None,
    target: str | None = None,
) -> tuple[Ledger, WorkspaceClient]:
    """The journal of detached backfill ``backfill_id``, open for its undo records
    (:mod:`.ledger_undone`), and the workspace it is in.

    Raises:
        UsageError: no local ledger and no journal of that id; the backfill still runs
            (its controller would go on writing after the undo: cancel it first).
    """
    try:
        place = locate_journal(
            backfill_id,
            Connection(host=host, profile=profile, target=target),
            root,
            client=client,
        )
        ledger = open_journal(
            place.client, place.job_id, backfill_id, writer=f"undo:{this_user()}@{this_host()}"
        )
    except UsageError as missing:
        raise UsageError(
            f"no backfill {backfill_id!r} in {ledger_dir(root)}, nor a detached one in the "
            f"workspace ({missing.render()}); see: dbxdec backfills --workspace"
        ) from None
    if ledger.state == "running":
        raise UsageError(
            f"backfill {backfill_id} is detached and still running: its controller would go "
            f"on writing after the undo; cancel it first (dbxdec backfill cancel "
            f"{backfill_id}), then undo"
        )
    return ledger, place.client


def prepare_undo(
    backfill_id: str,
    *,
    root: Path,
    project_loader: Callable[[], tuple[ProjectConfig, Registry]],
    spark: Any = None,
    client: WorkspaceClient | None = None,
    host: str | None = None,
    profile: str | None = None,
    poll_interval: float = 5.0,
    warehouse_id: str | None = None,
    target: str | None = None,
) -> LocalUndo | RemoteUndo | DownstreamUndo:
    """Load backfill ``backfill_id`` and plan the undo of its writes (nothing changes).

    Args:
        backfill_id: The backfill (``dbxdec backfills`` lists them).
        root: The project root (its ``.dbxdec/backfills``).
        project_loader: Reads the project's config and definitions.
        spark: Local: the session the tables are read with (default: the embedded one).
        client: Databricks: the workspace client (default: from the ledger's host and
            profile, or ``host``/``profile``).
        host: Databricks: workspace URL instead of the ledger's.
        profile: Databricks: ``~/.databrickscfg`` profile instead of the ledger's.
        poll_interval: Databricks: seconds between looks at the undo run.
        target: A detached backfill: the bundle target its job was deployed to (the
            name prefix its journal's job is found by).
        warehouse_id: Databricks, ``--downstream``: the SQL warehouse every table's
            history is read through before any undo run (default:
            ``DATABRICKS_WAREHOUSE_ID``).

    Raises:
        UsageError: unknown id, its job is no longer defined, or (Databricks) a
            deployed job has no ``dbxdec_order`` parameter.
        HistoryUnreadable: (Databricks, ``--downstream``) a table's history could not
            be read through the warehouse.
        EnvironmentProblem: (local) PySpark or Delta Lake is missing.
    """
    if backfill_id in backfill_ids(ledger_dir(root)):
        ledger = load_ledger(root, backfill_id)
    else:  # a detached backfill: its journal in the workspace (or an unknown id)
        ledger, client = detached_ledger(
            backfill_id, root, host=host, profile=profile, client=client, target=target
        )
    undone = read_undone(ledger)  # once: a journal's records are a listing and exports
    spec = ledger.backend
    if spec.kind != "local":
        _, registry = project_loader()
        if spec.job_id is None:
            raise UsageError(f"backfill {ledger.id}'s ledger names no job id; nothing was restored")
        if client is None:
            from ..workspace.workspace import connect

            client = connect(host=host or spec.host, profile=profile or spec.profile)
        if is_downstream(ledger):  # every job's tables, each job's runs by its own undo
            warehouse = warehouse_id or os.environ.get(WAREHOUSE_ENV) or None
            return remote_downstream_undo(
                ledger, registry, client, root=root, warehouse_id=warehouse,
                poll_interval=poll_interval, undone=undone,
            )  # fmt: skip
        return remote_job_undo(
            ledger, backfill_runs(ledger, undone), registry.get(ledger.job), client,
            job_id=spec.job_id,
            poll_interval=poll_interval,
        )  # fmt: skip
    require_local_spark()
    config, registry = project_loader()
    job = registry.get(ledger.job)
    if spark is None:
        from ...runtime.session.spark import local_spark_session

        session: Any = LazySession(local_spark_session)
    else:
        session = spark
    environment = RunEnvironment(session, config.warehouse, False)
    if is_downstream(ledger):  # --downstream: every job
        parts = []
        for name in downstream_jobs(ledger):
            part = plan_undo(registry.get(name), job_runs(ledger, name, undone), environment)
            parts.append(LocalUndo(ledger, part, environment.spark if part.tables else None))
        return DownstreamUndo(ledger, tuple(parts))
    plan = plan_undo(job, backfill_runs(ledger, undone), environment)
    return LocalUndo(ledger, plan, environment.spark if plan.tables else None)
