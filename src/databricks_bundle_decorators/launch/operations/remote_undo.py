"""The undo of a Databricks backfill: a run of each deployed job with ``dbxdec_order``
set (:class:`~...backfill.wire.UndoOrder`), in which every task restores the tables it
writes on the job's own compute, and refuses (failing that task) what needs ``--force``.

A one-job backfill's undo is one run, and its tables are judged by that run alone. A
``--downstream`` backfill's undo (:func:`remote_downstream_undo`) is one run per job, each
sent that job's undo order (its own runs, when the ledger predates the backfill's id),
dependants first; and since a run can only refuse its own job's tables, every table of
every job is first read and judged from the launcher, through a SQL warehouse
(:mod:`..workspace.table_history`), with the same per-table rules a local undo applies:
a refusal anywhere refuses the whole undo before any run is launched. The runs judge
again on their compute (a commit made in between still refuses).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.wire import (
    ORDER_PARAM,
    UndoOrder,
    encode_order,
    read_reports,
)
from ...definitions import JobDefinition, Registry
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError
from ...runtime.programs.undo import BackfillRuns, JobUndo, UndoRefused, output_tables, plan_table
from ..backends.errors import UndoFailed
from ..ledger.ledger import Ledger
from ..workspace.first_watermark import Statements
from ..workspace.table_history import read_history
from ..workspace.target import read_target
from ..workspace.workspace import first_line, request_refusals, require_order_parameter
from .downstream_undo import DownstreamUndo, downstream_jobs, job_runs
from .ledger_undone import record_undone

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import RunTask

UNCHECKED = (
    "the undo of a --downstream backfill on Databricks checks every table of every job "
    "before any undo run is launched, through a SQL warehouse: pass --warehouse-id W or set "
    "DATABRICKS_WAREHOUSE_ID (--force undoes without that check); nothing was restored"
)
"""The refusal of a ``--downstream`` undo that has no warehouse to check its tables."""


def header(ledger: Ledger, runs: BackfillRuns) -> str:
    """The first line of a one-job undo."""
    count = len(runs.run_ids)
    return f"Undo of backfill {ledger.id} ({ledger.job}, {count} run{'s' * (count != 1)}):"


def by_run_ids(runs: BackfillRuns) -> list[str]:
    """The note of an undo whose commits are found by run ids (runs not sent the id)."""
    if runs.by_id or not runs.run_ids:
        return []
    return [
        f"  note: this backfill's runs were not sent its id (its ledger predates it, or the "
        f"job was deployed without {ORDER_PARAM}): its commits are found by the ids "
        f"of its {len(runs.run_ids)} run(s)"
    ]


def in_flight(ledger: Ledger) -> list[str]:
    """The warning of an undo whose ledger saw runs in flight."""
    open_runs = sum(1 for r in ledger.slices for a in r.attempts if a.is_open)
    if not open_runs:
        return []
    return [
        f"  warning: {open_runs} run(s) were in flight when the ledger was last saved; if "
        "they are still running, they may write after the undo"
    ]


@dataclass(frozen=True, slots=True)
class RemoteUndo:
    """A Databricks backfill's undo of one job: a run of the deployed job that restores
    its tables.

    The versions are read by the run, on the job's compute; a table that needs
    ``force`` fails its task there, with the one-line reason in the task's output.
    ``checked``: the same judgement made beforehand from the launcher (a ``--downstream``
    undo, :func:`remote_downstream_undo`); ``None`` when the run alone judges.
    """

    ledger: Ledger
    runs: BackfillRuns
    client: WorkspaceClient
    job_id: int
    job_name: str
    tables: tuple[tuple[str, tuple[str, ...]], ...]
    notes: tuple[str, ...] = ()
    poll_interval: float = 5.0
    checked: JobUndo | None = None

    @property
    def count(self) -> int:
        """Tables the undo run restores (0 when the backfill started no run of the job)."""
        if self.checked is not None:
            return len(self.checked.changes)
        return len(self.tables) if self.runs.run_ids else 0

    def lines(self) -> list[str]:
        out = [header(self.ledger, self.runs)]
        out.append(
            f"  a run of job {self.job_name!r} (id {self.job_id}) restores, on the job's "
            "compute, each table to its version before the backfill's first commit:"
        )
        if self.checked is not None:
            out += [f"    {table.describe()}" for table in self.checked.tables]
        else:
            out += [f"    {name} (task {', '.join(tasks)})" for name, tasks in self.tables]
        if not self.tables:
            out.append("  the job writes no Delta table through an IoManager")
        out += [f"  note: {note}" for note in self.notes] + by_run_ids(self.runs)
        return out + in_flight(self.ledger)

    def refusals(self) -> list[str]:
        """The tables that need ``force``, when checked beforehand; else none (the run
        decides, reading the histories)."""
        return self.checked.refusals() if self.checked is not None else []

    def refused(self) -> UndoRefused | None:
        return self.checked.refused() if self.checked is not None else None

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
                job_parameters={ORDER_PARAM: encode_order(order)},
                idempotency_token=token,
            )
            run_id = int(waiter.run_id)
            while True:
                run = self.client.jobs.get_run(run_id)
                status = run_status(run)
                if status.is_terminal:
                    break
                time.sleep(self.poll_interval)
        except request_refusals() as exc:  # transport and credential failures: the CLI maps them
            raise UsageError(f"the workspace refused the undo run: {first_line(exc)}") from None
        page = f" ({status.url})" if status.url else ""
        # recorded whatever the outcome: a task may have restored before another refused
        for table, version in _undo_reports(self.client, run_id, run.tasks):
            record_undone(self.ledger, table, version)
        if status.state != "succeeded":
            raise UndoFailed(
                f"the undo run {run_id} of job {self.job_name!r} {status.state}: "
                f"{status.message or 'no message'}; each task's output names what it restored "
                f"or refused{page}"
            )
        return [f"Undo run {run_id} succeeded{page}: restored {self.count} table(s)."]


def _undo_reports(
    client: WorkspaceClient, run_id: int, tasks: list[RunTask] | None = None
) -> list[tuple[str, int]]:
    """``(table, version)`` of every commit the tasks of undo run ``run_id`` reported;
    ``tasks``: the ended run's tasks when the caller has just read them."""
    found: list[tuple[str, int]] = []
    tasks = client.jobs.get_run(run_id).tasks if tasks is None else tasks
    for task in tasks or []:
        if task.run_id is None:
            continue
        logs = client.jobs.get_run_output(task.run_id).logs or ""
        try:
            bodies = read_reports(logs, "undo")
            pairs = [(str(body["table"]), int(body["version"])) for _, body in bodies]
        except (ValueError, KeyError, TypeError) as exc:
            raise UndoFailed(f"task {task.task_key!r} of undo run {run_id}: {exc}") from None
        # serverless task logs may repeat lines of other tasks: each commit once
        found += [pair for pair in pairs if pair not in found]
    return found


def remote_job_undo(
    ledger: Ledger,
    runs: BackfillRuns,
    job: JobDefinition,
    client: WorkspaceClient,
    *,
    job_id: int | None = None,
    root: Path | None = None,
    poll_interval: float = 5.0,
    statements: Statements | None = None,
) -> RemoteUndo:
    """The undo run of ``job``'s tables, its deployment found by ``job_id``, else by name
    (with the ledger's target's name prefix, read from ``root``); with ``statements``,
    every table judged beforehand (:attr:`RemoteUndo.checked`).

    Raises:
        UsageError: the job is not deployed, or was deployed without ``dbxdec_order``.
        HistoryUnreadable: a table's history could not be read.
    """
    from ..backends.databricks_backend import find_job

    target = None
    if job_id is None and root is not None and ledger.backend.target:
        target = read_target(root, ledger.backend.target)
    remote = find_job(
        client,
        job.name,
        job_id=job_id,
        name_prefix=target.name_prefix if target else None,
        dev_mode=bool(target and target.dev_mode),
    )
    require_order_parameter(
        client, remote.job_id, remote.name, purpose="to undo", outcome="nothing was restored"
    )
    found, notes = output_tables(job, RunEnvironment(None, Path("."), True))
    tables = tuple((name, table.tasks) for name, table in found.items())
    checked = None
    if statements is not None:
        judged = tuple(
            plan_table(t.ref, t.tasks, read_history(statements, t.ref), runs)
            for t in found.values()
        )
        checked = JobUndo(runs, judged, tuple(notes))
    return RemoteUndo(
        ledger,
        runs,
        client,
        remote.job_id,
        remote.name,
        tables,
        tuple(notes),
        poll_interval,
        checked,
    )


def remote_downstream_undo(
    ledger: Ledger,
    registry: Registry,
    client: WorkspaceClient,
    *,
    root: Path,
    warehouse_id: str | None,
    poll_interval: float = 5.0,
    undone: frozenset[tuple[str, int]] | None = None,
) -> DownstreamUndo:
    """The undo of every job of a ``--downstream`` backfill on Databricks: one
    :class:`RemoteUndo` per job (each by its deployed id in the ledger; a ledger from
    before those ids: the named job by its id, the others by name), each table judged
    through SQL warehouse ``warehouse_id``; without one, the undo refuses unless forced
    (:data:`UNCHECKED`). ``undone``: the backfill's undo records, read once by the
    caller.

    Raises:
        UsageError: a job is not deployed, or lacks the undo parameters.
        HistoryUnreadable: a table's history could not be read.
    """
    spec = ledger.backend
    statements = None
    if warehouse_id:
        statements = Statements(client, warehouse_id, poll_interval, "reading a table's history")
    parts = tuple(
        remote_job_undo(
            ledger,
            job_runs(ledger, name, undone),
            registry.get(name),
            client,
            job_id=spec.job_ids.get(name) or (spec.job_id if name == ledger.job else None),
            root=root,
            poll_interval=poll_interval,
            statements=statements,
        )
        for name in downstream_jobs(ledger)
    )
    return DownstreamUndo(ledger, parts, None if statements is not None else UNCHECKED)
