"""``dbxdec backfill undo ID`` as functions: which runs were the backfill's, what undo
restores, and the restore itself (the CLI only prints and asks).

The ledger recorded the id of every run the backfill started (every attempt, failed
ones too: a run can commit one table and fail in a later task). Each of those runs'
Delta commits carries its id (see :mod:`..runtime.undo`), so the tables' histories say
which versions to undo. A local backfill's tables are restored on the embedded Spark,
where they live. A backfill that ran on Databricks is refused for now: its tables live
in Unity Catalog and are to be restored by a run of the job on its own compute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bundle.project import ProjectConfig
from ..definitions import Registry
from ..errors import UsageError
from ..runtime.context import LazySession, RunEnvironment
from ..runtime.undo import BackfillRuns, JobUndo, TableUndo, plan_undo
from .ledger import Ledger, load_ledger
from .spark_extra import require_local_spark


def backfill_runs(ledger: Ledger) -> BackfillRuns:
    """The ids of every run the backfill started (rejected submissions have none)."""
    ids = frozenset(
        attempt.run_id
        for record in ledger.slices
        for attempt in record.attempts
        if attempt.run_id and attempt.state != "rejected"
    )
    return BackfillRuns(ledger.id, ledger.job, ids)


@dataclass(frozen=True, slots=True)
class PreparedUndo:
    """A planned undo: the backfill's ledger, the plan per table, and where to apply it."""

    ledger: Ledger
    plan: JobUndo
    spark: Any

    @property
    def in_flight(self) -> int:
        """Runs still open when the ledger was last saved (they may still write)."""
        return sum(1 for r in self.ledger.slices for a in r.attempts if a.is_open)

    def lines(self) -> list[str]:
        """What undo will do, one line per table, then notes and warnings."""
        runs = len(self.plan.runs.run_ids)
        out = [
            f"Undo of backfill {self.ledger.id} ({self.ledger.job}, {runs} run{'s' * (runs != 1)}):"
        ]
        out += [f"  {table.describe()}" for table in self.plan.tables]
        if not self.plan.tables:
            out.append("  the job writes no Delta table through an IoManager")
        out += [f"  note: {note}" for note in self.plan.notes]
        if self.in_flight:
            out.append(
                f"  warning: {self.in_flight} run(s) were in flight when the ledger was last "
                "saved; if they are still running, they may write after the undo"
            )
        return out

    def refusals(self) -> list[str]:
        """One line per table that needs ``force``."""
        return self.plan.refusals()

    def apply(self, *, force: bool = False) -> tuple[TableUndo, ...]:
        """Restore the tables (see :meth:`~..runtime.undo.JobUndo.apply`)."""
        return self.plan.apply(self.spark, force=force)


def prepare_undo(
    backfill_id: str,
    *,
    root: Path,
    project_loader: Callable[[], tuple[ProjectConfig, Registry]],
    spark: Any = None,
) -> PreparedUndo:
    """Load backfill ``backfill_id`` and plan the undo of its writes (nothing changes).

    Args:
        backfill_id: The backfill (``dbxdec backfills`` lists them).
        root: The project root (its ``.dbxdec/backfills``).
        project_loader: Reads the project's config and definitions.
        spark: The session the local tables are read with (default: the embedded one).

    Raises:
        UsageError: unknown id, a backfill that ran on Databricks (not yet supported),
            or its job is no longer defined.
        EnvironmentProblem: PySpark or Delta Lake is missing.
    """
    ledger = load_ledger(root, backfill_id)
    if ledger.backend.kind != "local":
        raise UsageError(
            f"backfill {ledger.id} ran on Databricks: undo is not yet supported there "
            "(only local backfills can be undone for now); nothing was restored"
        )
    require_local_spark()
    config, registry = project_loader()
    job = registry.get(ledger.job)
    if spark is None:
        from ..runtime.spark import local_spark_session

        session: Any = LazySession(local_spark_session)
    else:
        session = spark
    environment = RunEnvironment(session, config.warehouse, False)
    plan = plan_undo(job, backfill_runs(ledger), environment)
    return PreparedUndo(ledger, plan, environment.spark if plan.tables else None)
