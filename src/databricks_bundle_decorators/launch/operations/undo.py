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
  job with ``backfill_undo`` set (:class:`~..backfill.wire.UndoOrder`), in which every
  task restores the tables it writes on the job's own compute, through the same runtime
  code, and refuses (failing that task) what needs ``--force`` (:class:`RemoteUndo`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...backfill.wire import (
    BACKFILL_ID_PARAM,
    BACKFILL_UNDO_PARAM,
    UNDO_REPORT_PREFIX,
    UndoOrder,
    report_bodies,
)
from ...bundle.project import ProjectConfig
from ...definitions import JobDefinition, Registry
from ...errors import UsageError
from ...runtime.core.context import LazySession, RunEnvironment
from ...runtime.programs.undo import BackfillRuns, JobUndo, UndoRefused, output_tables, plan_undo
from ..backends.errors import UndoFailed
from ..backends.spark_extra import require_local_spark
from ..ledger.ledger import Ledger, load_ledger
from ..workspace.workspace import request_refusals, require_job_parameter
from .downstream_undo import DownstreamUndo, downstream_jobs, job_runs
from .ledger_undone import carries_backfill_id, read_undone, record_undone

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

"""Answers that refuse the request itself (a job gone, a parameter refused)."""


def backfill_runs(ledger: Ledger) -> BackfillRuns:
    """The ids of every run the backfill started (rejected submissions have none), and
    whether they carried the backfill's id."""
    ids = frozenset(
        attempt.run_id
        for record in ledger.slices
        for attempt in record.attempts
        if attempt.run_id and attempt.state != "rejected"
    )
    by_id = carries_backfill_id(ledger)
    return BackfillRuns(ledger.id, ledger.job, ids, read_undone(ledger), by_id=by_id)


def _header(ledger: Ledger, runs: BackfillRuns) -> str:
    count = len(runs.run_ids)
    return f"Undo of backfill {ledger.id} ({ledger.job}, {count} run{'s' * (count != 1)}):"


def _by_run_ids(runs: BackfillRuns) -> list[str]:
    if runs.by_id or not runs.run_ids:
        return []
    return [
        f"  note: this backfill's runs were not sent its id (its ledger predates it, or the "
        f"job was deployed without {BACKFILL_ID_PARAM}): its commits are found by the ids "
        f"of its {len(runs.run_ids)} run(s)"
    ]


def _in_flight(ledger: Ledger) -> list[str]:
    open_runs = sum(1 for r in ledger.slices for a in r.attempts if a.is_open)
    if not open_runs:
        return []
    return [
        f"  warning: {open_runs} run(s) were in flight when the ledger was last saved; if "
        "they are still running, they may write after the undo"
    ]


@dataclass(frozen=True, slots=True)
class LocalUndo:
    """A local backfill's undo, planned from the tables' histories; :meth:`apply` restores."""

    ledger: Ledger
    plan: JobUndo
    spark: Any

    @property
    def count(self) -> int:
        """Tables that would change."""
        return len(self.plan.changes)

    def lines(self) -> list[str]:
        """What undo will do, one line per table, then notes and warnings."""
        out = [_header(self.ledger, self.plan.runs)]
        out += [f"  {table.describe()}" for table in self.plan.tables]
        if not self.plan.tables:
            out.append("  the job writes no Delta table through an IoManager")
        out += [f"  note: {note}" for note in self.plan.notes] + _by_run_ids(self.plan.runs)
        old = not self.plan.runs.by_id
        if old and any(run.startswith("local-") for run in self.plan.runs.run_ids):
            out.append(
                "  warning: this backfill ran before dbxdec recorded the run ids its commits "
                "carry; its commits cannot be told from others, so none is undone"
            )
        return out + _in_flight(self.ledger)

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


@dataclass(frozen=True, slots=True)
class RemoteUndo:
    """A Databricks backfill's undo: a run of the deployed job that restores its tables.

    The versions are read by the run, on the job's compute; a table that needs
    ``force`` fails its task there, with the one-line reason in the task's output.
    """

    ledger: Ledger
    runs: BackfillRuns
    client: WorkspaceClient
    job_id: int
    job_name: str
    tables: tuple[tuple[str, tuple[str, ...]], ...]
    notes: tuple[str, ...] = ()
    poll_interval: float = 5.0

    @property
    def count(self) -> int:
        """Tables the undo run restores (0 when the backfill started no run)."""
        return len(self.tables) if self.runs.run_ids else 0

    def lines(self) -> list[str]:
        out = [_header(self.ledger, self.runs)]
        out.append(
            f"  a run of job {self.job_name!r} (id {self.job_id}) restores, on the job's "
            "compute, each table to its version before the backfill's first commit:"
        )
        out += [f"    {name} (task {', '.join(tasks)})" for name, tasks in self.tables]
        if not self.tables:
            out.append("  the job writes no Delta table through an IoManager")
        out += [f"  note: {note}" for note in self.notes] + _by_run_ids(self.runs)
        return out + _in_flight(self.ledger)

    def refusals(self) -> list[str]:
        return []  # decided by the run, which reads the histories

    def refused(self) -> UndoRefused | None:
        return None

    def apply(self, *, force: bool = False) -> list[str]:
        """Trigger the undo run and wait for it to end.

        Raises:
            UndoFailed: the run failed (a refusal or a restore Delta refused) or was
                cancelled; the message gives its page.
            UsageError: the workspace refused the run.
        """
        from ..backends.databricks_backend import run_status

        # by the backfill's id: the order does not grow with the number of runs
        run_ids = () if self.runs.by_id else tuple(sorted(self.runs.run_ids))
        order = UndoOrder(self.ledger.id, run_ids, force, tuple(sorted(self.runs.undone)))
        token = f"dbxdec-undo-{secrets.token_hex(16)}"  # a new run per undo asked for
        try:
            waiter = self.client.jobs.run_now(
                self.job_id,
                job_parameters={BACKFILL_UNDO_PARAM: order.to_param()},
                idempotency_token=token,
            )
            run_id = int(waiter.run_id)
            while True:
                status = run_status(self.client.jobs.get_run(run_id))
                if status.is_terminal:
                    break
                time.sleep(self.poll_interval)
        except request_refusals() as exc:  # transport and credential failures: the CLI maps them
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UsageError(f"the workspace refused the undo run: {first}") from None
        page = f" ({status.url})" if status.url else ""
        # recorded whatever the outcome: a task may have restored before another refused
        for table, version in _undo_reports(self.client, run_id):
            record_undone(self.ledger, table, version)
        if status.state != "succeeded":
            raise UndoFailed(
                f"the undo run {run_id} of job {self.job_name!r} {status.state}: "
                f"{status.message or 'no message'}; each task's output names what it restored "
                f"or refused{page}"
            )
        return [f"Undo run {run_id} succeeded{page}: restored {len(self.tables)} table(s)."]


def _undo_reports(client: WorkspaceClient, run_id: int) -> list[tuple[str, int]]:
    """``(table, version)`` of every commit the tasks of undo run ``run_id`` reported."""
    found: list[tuple[str, int]] = []
    for task in client.jobs.get_run(run_id).tasks or []:
        if task.run_id is None:
            continue
        logs = client.jobs.get_run_output(task.run_id).logs or ""
        try:
            bodies = report_bodies(logs, UNDO_REPORT_PREFIX, "undo report")
            pairs = [(str(body["table"]), int(body["version"])) for _, body in bodies]
        except (ValueError, KeyError, TypeError) as exc:
            raise UndoFailed(f"task {task.task_key!r} of undo run {run_id}: {exc}") from None
        # serverless task logs may repeat lines of other tasks: each commit once
        found += [pair for pair in pairs if pair not in found]
    return found


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

    Raises:
        UsageError: unknown id, its job is no longer defined, or (Databricks) the
            deployed job has no ``backfill_undo`` parameter.
        EnvironmentProblem: (local) PySpark or Delta Lake is missing.
    """
    ledger = load_ledger(root, backfill_id)
    runs = backfill_runs(ledger)
    if ledger.backend.kind != "local":
        _, registry = project_loader()
        return _prepare_remote(
            ledger, runs, registry.get(ledger.job), client, host, profile, poll_interval
        )
    require_local_spark()
    config, registry = project_loader()
    job = registry.get(ledger.job)
    if spark is None:
        from ...runtime.session.spark import local_spark_session

        session: Any = LazySession(local_spark_session)
    else:
        session = spark
    environment = RunEnvironment(session, config.warehouse, False)
    if any(record.job is not None for record in ledger.slices):  # --downstream: every job
        parts = []
        for name in downstream_jobs(ledger):
            part = plan_undo(registry.get(name), job_runs(ledger, name), environment)
            parts.append(LocalUndo(ledger, part, environment.spark if part.tables else None))
        return DownstreamUndo(ledger, tuple(parts))
    plan = plan_undo(job, runs, environment)
    return LocalUndo(ledger, plan, environment.spark if plan.tables else None)


def _prepare_remote(
    ledger: Ledger,
    runs: BackfillRuns,
    job: JobDefinition,
    client: WorkspaceClient | None,
    host: str | None,
    profile: str | None,
    poll_interval: float,
) -> RemoteUndo:
    from ..backends.databricks_backend import connect, find_job

    spec = ledger.backend
    if spec.job_id is None:
        raise UsageError(f"backfill {ledger.id}'s ledger names no job id; nothing was restored")
    if client is None:
        client = connect(host=host or spec.host, profile=profile or spec.profile)
    remote = find_job(client, ledger.job, job_id=spec.job_id)
    # a job deployed without backfill_id runs a dbxdec that cannot read an order by id
    for parameter in (BACKFILL_UNDO_PARAM, BACKFILL_ID_PARAM)[: 1 + runs.by_id]:
        require_job_parameter(
            client,
            remote.job_id,
            remote.name,
            parameter,
            purpose="to undo",
            outcome="nothing was restored",
        )
    found, notes = output_tables(job, RunEnvironment(None, Path("."), True))
    tables = tuple((name, table.tasks) for name, table in found.items())
    return RemoteUndo(
        ledger, runs, client, remote.job_id, remote.name, tables, tuple(notes), poll_interval
    )
