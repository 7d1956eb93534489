"""``dbxdec backfill undo ID``: which runs were the backfill's and the restore of their tables,
locally on Spark (:class:`SparkRestore`) or by an undo run of the job (:class:`RunRestore`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...backfill.wire import (
    ORDER_PARAM,
    UndoOrder,
    encode_order,
    order_in,
    read_reports,
    task_order,
    with_order,
)
from ...bundle.project import ProjectConfig
from ...definitions import JobDefinition, Registry
from ...definitions.contracts import LazySession, RunEnvironment
from ...errors import UsageError, counted
from ...runtime.programs.undo import (
    BackfillRuns,
    JobUndo,
    UndoRefused,
    output_tables,
    plan_table,
    plan_undo,
)
from ..backends.errors import UndoFailed, require_local_spark
from ..backends.measure_run import wait_for_run
from ..backends.task_output import task_reports
from ..ledger.claims import this_host, this_user
from ..ledger.journal import open_journal
from ..ledger.ledger import Ledger, backfill_ids, ledger_dir, load_ledger, read_detached
from ..plan.request import Connection
from ..prepare.planners import Draft, Planning
from ..run.blocking import is_downstream
from ..status.journal_status import locate_journal
from ..workspace.first_watermark import Statements, read_history
from ..workspace.target import read_target
from ..workspace.workspace import (
    declares_order_parameter,
    first_line,
    request_refusals,
    require_order_parameter,
)
from .downstream_triggers import WAREHOUSE_ENV

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import RunTask

    from ..guard.connection import ConnectedJob

UNCHECKED = (
    "the undo of a --downstream backfill on Databricks checks every table of every job "
    "before any undo run is launched, through a SQL warehouse: pass --warehouse-id W or set "
    "DATABRICKS_WAREHOUSE_ID (--force undoes without that check); nothing was restored"
)


def downstream_jobs(ledger: Ledger) -> list[str]:
    """The jobs of a ``--downstream`` ledger's slices, in the plan's order."""
    return list(dict.fromkeys(record.job or ledger.job for record in ledger.slices))


def job_runs(ledger: Ledger, job: str) -> BackfillRuns:
    """The runs of ``ledger`` that ran ``job`` (rejected ones left out), with its undo records."""
    ids = frozenset(
        attempt.run_id
        for record in ledger.slices
        if (record.job or ledger.job) == job
        for attempt in record.attempts
        if attempt.run_id and attempt.state != "rejected"
    )
    by_id = bool(ledger.slices) and all(  # every run was sent the backfill's id
        getattr(order_in(r.parameters), "backfill_id", "") == ledger.id for r in ledger.slices
    )
    return BackfillRuns(ledger.id, job, ids, ledger.undone, by_id=by_id)


class Restorer(Protocol):
    """Where one job's tables are restored: :class:`SparkRestore` or :class:`RunRestore`."""

    def intro(self) -> list[str]:
        """The lines before the tables (which are then indented under them)."""

    def restore(self, undo: Undo, *, force: bool) -> list[str]:
        """Restore ``undo``'s tables, recording each version made; the lines to print."""


@dataclass(frozen=True, slots=True)
class Undo:
    """One job's undo; ``checked``: every table judged beforehand, or ``None`` (the run judges)."""

    ledger: Ledger
    runs: BackfillRuns
    restorer: Restorer
    tables: tuple[tuple[str, tuple[str, ...]], ...]
    notes: tuple[str, ...] = ()
    checked: JobUndo | None = None

    @property
    def count(self) -> int:
        """Tables that would change (0 when the backfill started no run of the job)."""
        if self.checked is not None:
            return len(self.checked.changes)
        return len(self.tables) if self.runs.run_ids else 0

    def lines(self) -> list[str]:
        """What undo will do: one line per table, then notes and warnings."""
        count = len(self.runs.run_ids)
        job = self.runs.job
        out = [f"Undo of backfill {self.ledger.id} ({job}, {count} run{'s' * (count != 1)}):"]
        intro = self.restorer.intro()
        pad = "    " if intro else "  "
        if self.checked is not None:
            listed = [table.describe() for table in self.checked.tables]
        else:
            listed = [f"{name} (task {', '.join(tasks)})" for name, tasks in self.tables]
        out += intro + [pad + line for line in listed]
        if not self.tables:
            out.append("  the job writes no Delta table through an IoManager")
        out += [f"  note: {note}" for note in self.notes]
        if not self.runs.by_id and self.runs.run_ids:
            out.append(
                f"  note: this backfill's runs were not sent its id (its ledger predates it, "
                f"or the job was deployed without {ORDER_PARAM}): its commits are found "
                f"by the ids of its {counted(count, 'run')}"
            )
        if not self.runs.by_id and any(run.startswith("local-") for run in self.runs.run_ids):
            out.append(
                "  warning: this backfill ran before dbxdec recorded the run ids its commits "
                "carry; its commits cannot be told from others, so none is undone"
            )
        open_runs = sum(1 for r in self.ledger.slices for a in r.attempts if a.is_open)
        if open_runs:
            out.append(
                f"  warning: {counted(open_runs, 'run')} "
                f"{'was' if open_runs == 1 else 'were'} in flight when the ledger was last "
                f"saved; if {'it is' if open_runs == 1 else 'they are'} still running, "
                f"{'it' if open_runs == 1 else 'they'} may write after the undo"
            )
        return out

    def refusals(self) -> list[str]:
        """One line per table that needs ``force`` (none when the undo run judges)."""
        return self.checked.refusals() if self.checked is not None else []

    def refused(self) -> UndoRefused | None:
        """The error undo without ``force`` raises, if any."""
        return self.checked.refused() if self.checked is not None else None

    def apply(self, *, force: bool = False) -> list[str]:
        """Restore the tables (see :class:`Restorer`)."""
        return self.restorer.restore(self, force=force)


@dataclass(frozen=True, slots=True)
class SparkRestore:
    """Restore on the local Spark, every table checked first (:meth:`JobUndo.apply`)."""

    plan: JobUndo
    session: Any  # a LazySession: made when a table is restored, never for a dry run

    def intro(self) -> list[str]:
        return []

    def restore(self, undo: Undo, *, force: bool) -> list[str]:
        """One line per table restored.

        Raises:
            UndoRefused: a table needs ``force`` or changed since planned.
            TaskRunError: Delta refused a restore.
        """
        lines = []
        session = self.session
        spark = session.get() if isinstance(session, LazySession) else session
        for table in self.plan.apply(spark, force=force):
            if table.made is not None:
                undo.ledger.record_undone(table.table.name, table.made)
            lines.append(
                f"{'Emptied' if table.action == 'empty' else 'Restored'} {table.table.name}."
            )
        return lines


@dataclass(frozen=True, slots=True)
class RunRestore:
    """Restore by a run of the deployed job with an undo order (a refusal fails its task)."""

    client: WorkspaceClient
    job_id: int
    job_name: str
    poll_interval: float = 5.0

    def intro(self) -> list[str]:
        return [
            f"  a run of job {self.job_name!r} (id {self.job_id}) restores, on the job's "
            "compute, each table to its version before the backfill's first commit:"
        ]

    def restore(self, undo: Undo, *, force: bool) -> list[str]:
        """Trigger the undo run and wait for it to end.

        Raises:
            UndoFailed: the run failed (a refusal or a restore Delta refused) or was
                cancelled; the message gives its page.
            UsageError: the workspace refused the run.
        """
        runs = undo.runs
        # by the backfill's id: the order does not grow with the number of runs
        run_ids = () if runs.by_id else tuple(sorted(runs.run_ids))
        order = UndoOrder(undo.ledger.id, run_ids, force, tuple(sorted(runs.undone)))
        token = f"dbxdec-undo-{secrets.token_hex(16)}"  # a new run per undo asked for
        try:
            waiter = self.client.jobs.run_now(
                self.job_id,
                job_parameters={ORDER_PARAM: encode_order(order)},
                idempotency_token=token,
            )
            run_id = int(waiter.run_id)
            run, status = wait_for_run(self.client, run_id, self.poll_interval)
        except request_refusals() as exc:  # transport and credential failures: the CLI maps them
            raise UsageError(f"the workspace refused the undo run: {first_line(exc)}") from None
        page = f" ({status.url})" if status.url else ""
        # recorded whatever the outcome: a task may have restored before another refused
        for table, version in _undo_reports(self.client, run_id, run.tasks):
            undo.ledger.record_undone(table, version)
        if status.state != "succeeded":
            raise UndoFailed(
                f"the undo run {run_id} of job {self.job_name!r} {status.state}: "
                f"{status.message or 'no message'}; each task's output names what it restored "
                f"or refused{page}"
            )
        return [f"Undo run {run_id} succeeded{page}: restored {counted(undo.count, 'table')}."]


def _undo_reports(
    client: WorkspaceClient, run_id: int, tasks: list[RunTask] | None = None
) -> list[tuple[str, int]]:
    """``(table, version)`` reported by undo run ``run_id``'s tasks, each once."""

    def parse(text: str) -> list[tuple[str, int]]:
        try:
            return [(str(b["table"]), int(b["version"])) for _, b in read_reports(text, "undo")]
        except (KeyError, TypeError) as exc:
            raise ValueError(exc) from None

    return list(dict.fromkeys(task_reports(client, run_id, parse, (UndoFailed, "undo"), tasks)))


@dataclass(frozen=True, slots=True)
class DownstreamUndo:
    """The undo of every job of a ``--downstream`` backfill; ``unchecked``: why not all checked."""

    ledger: Ledger
    jobs: tuple[Undo, ...]
    unchecked: str | None = None

    @property
    def count(self) -> int:
        """Tables that would change, over every job."""
        return sum(undo.count for undo in self.jobs)

    def lines(self) -> list[str]:
        """One header, then each job's lines."""
        names = ", ".join(undo.runs.job for undo in self.jobs)
        runs = sum(len(undo.runs.run_ids) for undo in self.jobs)
        out = [
            f"Undo of backfill {self.ledger.id} (--downstream: {names}; {counted(runs, 'run')}):"
        ]
        for undo in self.jobs:
            out.append(f"  job {undo.runs.job}:")
            out += [f"  {line}" for line in undo.lines()[1:]]
        return out

    def refusals(self) -> list[str]:
        """One line per table of any job that needs ``force`` (or why none could be checked)."""
        head = [self.unchecked] if self.unchecked else []
        return head + [line for undo in self.jobs for line in undo.refusals()]

    def refused(self) -> UndoRefused | None:
        """Why the tables were not checked, else the first job's refusal, if any."""
        if self.unchecked:
            return UndoRefused(self.unchecked)
        return next((r for r in (u.refused() for u in self.jobs) if r is not None), None)

    def apply(self, *, force: bool = False) -> list[str]:
        """Restore every job's tables, dependants first.

        Raises:
            UndoRefused: a table needs ``force`` (nothing was restored).
            UndoFailed: a job's undo failed after the jobs before it were undone (named).
        """
        refused = None if force else self.refused()
        if refused is not None:  # checked whole before any table changes
            raise refused
        lines: list[str] = []
        undone: list[str] = []
        for undo in reversed(self.jobs):
            if not undo.count:
                continue
            try:
                lines += undo.apply(force=force)
            except (UndoRefused, UndoFailed) as err:
                if not undone:
                    raise
                raise UndoFailed(
                    f"{err.render()} (job {undo.runs.job}); the undo of {', '.join(undone)} "
                    "had already succeeded: run undo again once that is solved"
                ) from None
            undone.append(undo.runs.job)
        return lines


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
) -> Undo | DownstreamUndo:
    """Load backfill ``backfill_id`` and plan the undo of its writes (nothing changes).

    ``spark``: the local session (default: the embedded one); ``client``, ``host``,
    ``profile``: the workspace (default: the ledger's); ``warehouse_id``: ``--downstream`` on
    Databricks reads every table's history through it first (default:
    ``DATABRICKS_WAREHOUSE_ID``); ``target``: a detached backfill's bundle target.

    Raises:
        UsageError: unknown id, its job is no longer defined, or a deployed job has no
            ``dbxdec_order`` parameter.
        HistoryUnreadable: a table's history could not be read through the warehouse.
        EnvironmentProblem: (local) PySpark or Delta Lake is missing.
    """
    if backfill_id in backfill_ids(ledger_dir(root)):
        ledger = load_ledger(root, backfill_id)
    else:  # a detached backfill: its journal in the workspace (or an unknown id)

        def journal() -> tuple[Ledger, WorkspaceClient]:
            connection = Connection(host=host, profile=profile, target=target)
            place = locate_journal(backfill_id, connection, root, client=client)
            writer = f"undo:{this_user()}@{this_host()}"
            ledger = open_journal(place.client, place.job_id, backfill_id, writer=writer)
            return ledger, place.client

        hint = "; see: dbxdec backfills --workspace"
        ledger, client = read_detached(backfill_id, root, journal, hint=hint)
        if ledger.state == "running":
            raise UsageError(
                f"backfill {backfill_id} is detached and still running: its controller would go "
                f"on writing after the undo; cancel it first (dbxdec backfill cancel "
                f"{backfill_id}), then undo"
            )
    downstream = is_downstream(ledger)
    spec = ledger.backend
    unchecked = None
    plan: Callable[[JobDefinition, BackfillRuns], Undo]
    if spec.kind != "local":
        _, registry = project_loader()
        if spec.job_id is None:
            raise UsageError(f"backfill {ledger.id}'s ledger names no job id; nothing was restored")
        if client is None:
            from ..workspace.workspace import connect

            client = connect(host=host or spec.host, profile=profile or spec.profile)
        workspace = client
        statements = None  # a one-job undo run alone judges its tables
        if downstream and (warehouse := warehouse_id or os.environ.get(WAREHOUSE_ENV)):
            what = "reading a table's history"
            statements = Statements(client, warehouse, poll_interval, what)
        unchecked = UNCHECKED if downstream and statements is None else None

        def plan(job: JobDefinition, runs: BackfillRuns) -> Undo:
            """An undo run of the deployed ``job``; with ``statements``, its tables judged first."""
            from ..backends.databricks_backend import find_job

            # by each job's deployed id (a ledger from before those ids: the named job's), else
            # by name with the ledger's target's prefix
            job_id = spec.job_ids.get(job.name) or (spec.job_id if job.name == ledger.job else None)
            target = read_target(root, spec.target) if job_id is None and spec.target else None
            remote = find_job(
                workspace,
                job.name,
                job_id=job_id,
                name_prefix=target.name_prefix if target else None,
                dev_mode=bool(target and target.dev_mode),
            )
            done = "nothing was restored"
            require_order_parameter(
                workspace, remote.job_id, remote.name, purpose="to undo", outcome=done
            )
            found, notes = output_tables(job, RunEnvironment(None, Path("."), True))
            checked = None
            if statements is not None:
                judged = tuple(
                    plan_table(t.ref, t.tasks, read_history(statements, t.ref), runs)
                    for t in found.values()
                )
                checked = JobUndo(runs, judged, tuple(notes))
            restorer = RunRestore(workspace, remote.job_id, remote.name, poll_interval)
            tables = tuple((name, table.tasks) for name, table in found.items())
            return Undo(ledger, runs, restorer, tables, tuple(notes), checked)
    else:
        require_local_spark()
        config, registry = project_loader()
        if spark is None:
            from ...runtime.session.spark import local_spark_session

            spark = LazySession(local_spark_session)
        environment = RunEnvironment(spark, config.warehouse, False)

        def plan(job: JobDefinition, runs: BackfillRuns) -> Undo:
            checked = plan_undo(job, runs, environment)
            restorer = SparkRestore(checked, environment.session if checked.tables else None)
            tables = tuple((t.table.name, t.tasks) for t in checked.tables)
            return Undo(ledger, runs, restorer, tables, checked.notes, checked)

    parts = tuple(
        plan(registry.get(name), job_runs(ledger, name))
        for name in (downstream_jobs(ledger) if downstream else [ledger.job])
    )
    return DownstreamUndo(ledger, parts, unchecked) if downstream else parts[0]


def carry_backfill_id(ledger: Ledger, found: ConnectedJob | None = None) -> list[str]:
    """Give every slice of a new ledger its backfill's id in its order (kept by ``--resume``
    and re-batches). On Databricks only when the deployed job declares ``dbxdec_order``
    (``run-now`` with an undeclared parameter is unspecified,
    https://docs.databricks.com/api/workspace/jobs/runnow); else returns the warning.

    Raises:
        UsageError: the deployed job cannot be read.
    """
    if found is not None and not declares_order_parameter(found.client, found.remote.job_id):
        return [
            f"job {found.remote.name!r} (id {found.remote.job_id}) was deployed without the "
            f"{ORDER_PARAM} parameter (by an older dbxdec): its runs are not sent the "
            "backfill's id, so its undo names every run; deploy it again (dbxdec deploy)"
        ]
    for record in ledger.slices:
        order = replace(task_order(record.parameters), backfill_id=ledger.id)
        ledger.update(replace(record, parameters=with_order(record.parameters, order)))
    return []


def carry_id(draft: Draft, planning: Planning) -> Draft:
    """The planner of :func:`carry_backfill_id` for a new backfill's ledger."""
    assert draft.ledger is not None
    return replace(draft, warnings=(*draft.warnings, *carry_backfill_id(draft.ledger, draft.found)))
