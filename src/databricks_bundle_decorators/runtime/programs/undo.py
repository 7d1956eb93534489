"""Undo a backfill: restore the Delta tables its runs wrote to their version before it.

A backfill's commits are found in ``DESCRIBE HISTORY`` by the ``userMetadata`` every
dbxdec commit carries (:class:`BackfillRuns`). Per table (``first``: the backfill's first
commit), the action is ``restore`` (to ``first - 1``), ``empty`` (the backfill created
the table: every row is deleted, history stays), ``none`` (no commit of the backfill) or
``done`` (undone already: only commits after the ledger's restore count). ``restore``
and ``empty`` need ``force`` when another writer committed rows after ``first``
(maintenance commits change no row), and ``empty`` always; a version whose files a
``VACUUM`` removed is refused. Every table is planned and checked before any is
restored; a table that changed since the plan is refused.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ...backfill.wire import UndoOrder, report_line
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError
from ..job_tables.outputs import TableOutput, table_outputs, with_quarantine_tables
from ..storage.delta import DeltaFormat
from ..storage.delta_history import (
    RESTORE_OPERATIONS,
    Commit,
    FilesVacuumed,
    changes_rows,
    files_gone,
    read_commits,
    restore_version,
)
from ..storage.formats import TableRef
from ..storage.table_name import COMMIT_ID_PREFIX, split_metadata

UndoAction = Literal["restore", "empty", "none", "done"]
_REPAIRED = re.compile(r"(?P<run>.+)-\d{1,9}")


class UndoRefused(UsageError):
    """Undo needs ``force`` (another writer's commit, a table to empty) or cannot restore."""


@dataclass(frozen=True, slots=True)
class BackfillRuns:
    """Which commits of a table's history are one backfill's: by its id (``by_id``),
    else by ``run_ids`` (or ``<run id>-<repair count>`` on Databricks).

    Example:
        >>> runs = BackfillRuns("sales-1", "sales", frozenset({"42"}), by_id=True)
        >>> runs.wrote("dbxdec:sales:clean:43-0:backfill=sales-1")
        True
        >>> runs.wrote("dbxdec:sales:clean:42-0:backfill=sales-2")
        False
        >>> old = BackfillRuns("sales-1", "sales", frozenset({"42"}))
        >>> old.wrote("dbxdec:sales:clean:42-0"), old.wrote("dbxdec:sales:clean:43-0")
        (True, False)
    """

    backfill_id: str
    job: str
    run_ids: frozenset[str]
    undone: frozenset[tuple[str, int]] = frozenset()
    """``(table, version)`` of every commit an undo of this backfill made (its ledger)."""
    by_id: bool = False

    def undid(self, table: str, commit: Commit) -> bool:
        """Whether ``commit`` of ``table`` is an undo of this backfill."""
        restore = commit.operation.upper() in RESTORE_OPERATIONS
        return restore and (table, commit.version) in self.undone

    def wrote(self, metadata: str | None) -> bool:
        """Whether a commit with this ``userMetadata`` was made by one of the runs."""
        prefix = f"{COMMIT_ID_PREFIX}{self.job}:"
        if not metadata or not metadata.startswith(prefix):
            return False
        identity, backfill_id = split_metadata(metadata)
        if self.by_id:
            swap = f":refresh={self.backfill_id}:" in identity[len(prefix) - 1 :]
            return backfill_id == self.backfill_id or (not backfill_id and swap)
        run = identity.rpartition(":")[2]
        repaired = _REPAIRED.fullmatch(run)
        return run in self.run_ids or (repaired is not None and repaired["run"] in self.run_ids)


@dataclass(frozen=True, slots=True)
class TableUndo:
    """What undo does to one table (``action``: see the module docs); ``current`` is its
    latest version when planned, ``others`` the other writers' commits ``force`` discards."""

    table: TableRef
    tasks: tuple[str, ...]
    action: UndoAction
    current: int | None = None
    to_version: int | None = None
    ours: tuple[Commit, ...] = ()
    others: tuple[Commit, ...] = ()
    made: int | None = None  # the version the restore made, once applied

    def describe(self) -> str:
        """One line for the confirmation prompt."""
        name = self.table.name
        if self.action == "none":
            what = "has no commit of this backfill" if self.current is not None else "not written"
            return f"{name}: {what}; nothing to undo"
        if self.action == "done":
            return f"{name}: already undone (version {self.current})"
        undone = f"{len(self.ours)} commit{'s' * (len(self.ours) != 1)} of this backfill"
        span = _versions(self.ours)
        others = (
            f"; also discards {len(self.others)} commit{'s' * (len(self.others) != 1)} "
            f"by other writers: {', '.join(c.describe() for c in self.others[:3])}"
            f"{' ...' if len(self.others) > 3 else ''}"
            if self.others
            else ""
        )
        if self.action == "empty":
            return (
                f"{name}: created by this backfill ({span}); deletes every row "
                f"(undoes {undone}){others}"
            )
        return (
            f"{name}: restore version {self.current} to version {self.to_version} "
            f"(undoes {undone}, {span}){others}"
        )

    def refusal(self) -> str | None:
        """Why this table needs ``force``, in one line; ``None`` when it does not."""
        if self.action not in ("restore", "empty"):
            return None
        first = self.ours[0].version
        if len(self.others) == 1:
            return (
                f"table {self.table.name}: {self.others[0].describe()} was committed by "
                f"another writer after this backfill's first write (version {first}); "
                "undo would discard it too"
            )
        if self.others:
            return (
                f"table {self.table.name}: {self.others[0].describe()} and "
                f"{len(self.others) - 1} more were committed by other writers after this "
                f"backfill's first write (version {first}); undo would discard them too"
            )
        if self.action == "empty":
            return (
                f"table {self.table.name} was created by this backfill (version {first} is its "
                "first write), so it has no earlier version; undo would delete every row"
            )
        return None


@dataclass(frozen=True, slots=True)
class JobUndo:
    """The undo of one backfill over a job's tables, planned; ``notes``: outputs it
    cannot restore."""

    runs: BackfillRuns
    tables: tuple[TableUndo, ...]
    notes: tuple[str, ...] = ()

    @property
    def changes(self) -> tuple[TableUndo, ...]:
        return tuple(t for t in self.tables if t.action in ("restore", "empty"))

    def refusals(self) -> list[str]:
        return [r for r in (t.refusal() for t in self.tables) if r is not None]

    def refused(self) -> UndoRefused | None:
        """The error undo without ``force`` raises (the first table's reason), if any."""
        refusals = self.refusals()
        if not refusals:
            return None
        more = f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""
        return UndoRefused(
            f"{refusals[0]}{more}; nothing was restored (rerun with --force to undo anyway)"
        )

    def apply(self, spark: Any, *, force: bool = False) -> tuple[TableUndo, ...]:
        """Restore every table of :attr:`changes`; returns them.

        Raises:
            UndoRefused: a table needs ``force`` (nothing is restored), or changed since
                it was planned (the tables before it are restored).
            TaskRunError: Delta refused a restore.
        """
        refused = None if force else self.refused()
        if refused is not None:
            raise refused
        for table in self.changes:  # every table checked before any is restored
            if table.to_version is not None and files_gone(spark, table.table, table.to_version):
                raise UndoRefused(vacuumed(table, read_commits(spark, table.table)))
        return tuple(restore_table(spark, table) for table in self.changes)


def _versions(commits: Sequence[Commit]) -> str:
    first, last = commits[0].version, commits[-1].version
    return f"version {first}" if first == last else f"versions {first}-{last}"


def plan_table(
    table: TableRef, tasks: tuple[str, ...], commits: Sequence[Commit], runs: BackfillRuns
) -> TableUndo:
    """What undoing ``runs`` does to a table with this history (oldest first)."""
    if not commits:
        return TableUndo(table, tasks, "none")
    current = commits[-1].version
    undone_at = [c.version for c in commits if runs.undid(table.name, c)]
    considered = [c for c in commits if not undone_at or c.version > undone_at[-1]]
    ours = tuple(c for c in considered if runs.wrote(c.metadata))
    if not ours:
        return TableUndo(table, tasks, "done" if undone_at else "none", current)
    first = ours[0].version
    others = tuple(
        c
        for c in considered
        if c.version > first and not runs.wrote(c.metadata) and changes_rows(c)
    )
    if first == 0:  # created by the backfill: no earlier version
        return TableUndo(table, tasks, "empty", current, None, ours, others)
    return TableUndo(table, tasks, "restore", current, first - 1, ours, others)


def output_tables(
    job: JobDefinition, environment: RunEnvironment, tasks: Collection[str] | None = None
) -> tuple[dict[str, TableOutput], list[str]]:
    """The Delta tables (and their quarantine tables) the job's tasks (or ``tasks``)
    write, by name; and a note for each output without Delta history."""
    found, notes = table_outputs(
        job,
        environment,
        tasks,
        other="keeps no Delta history; not undone",
        unusable=lambda manager: (
            None
            if isinstance(manager.table_format(environment), DeltaFormat)
            else "is parquet (no history); not undone"
        ),
    )
    return with_quarantine_tables(job, environment, found), notes


def plan_undo(
    job: JobDefinition,
    runs: BackfillRuns,
    environment: RunEnvironment,
    tasks: Collection[str] | None = None,
) -> JobUndo:
    """Plan the undo of ``runs`` over the tables of ``job`` (or of ``tasks``)."""
    found, notes = output_tables(job, environment, tasks)

    def history(ref: TableRef) -> tuple[Commit, ...]:  # a local table's: no session made
        return read_commits(environment.spark if ref.path is None else None, ref)

    tables = tuple(plan_table(t.ref, t.tasks, history(t.ref), runs) for t in found.values())
    return JobUndo(runs, tables, tuple(notes))


def undo_outputs(
    job: JobDefinition, task_key: str, order: UndoOrder, environment: RunEnvironment
) -> JobUndo:
    """An undo run's task: plan and restore the tables ``task_key`` writes, printing one
    line per table and a report line per restore (the launcher records its version).

    Raises:
        UndoRefused: a table needs ``order.force`` (nothing of this task is restored).
        TaskRunError: Delta refused a restore.
    """
    runs = BackfillRuns(
        order.backfill_id,
        job.name,
        frozenset(order.run_ids),
        frozenset(order.undone),
        by_id=order.by_backfill_id,
    )
    plan = plan_undo(job, runs, environment, tasks={task_key})
    lines = [t.describe() for t in plan.tables] + [f"note: {n}" for n in plan.notes]
    for line in lines + ([] if plan.tables else [f"task {task_key!r} writes no table"]):
        print(f"undo of backfill {order.backfill_id}: {line}", flush=True)
    for done in plan.apply(environment.spark if plan.changes else None, force=order.force):
        print(report_line("undo", {"table": done.table.name, "version": done.made}), flush=True)
    return plan


def restore_table(spark: Any, table: TableUndo) -> TableUndo:
    """Restore one planned table; returns it with :attr:`TableUndo.made` set.

    Raises:
        UndoRefused: the table changed since planned, or the version's files were vacuumed.
        TaskRunError: Delta refused the restore.
    """
    now = read_commits(spark, table.table)
    latest = now[-1].version if now else None
    if latest != table.current:
        raise UndoRefused(
            f"table {table.table.name} changed since undo was planned (version {latest}, "
            f"planned at {table.current}); it was not restored: run undo again"
        )
    try:
        made = restore_version(spark, table.table, table.to_version, after=latest or 0)
    except FilesVacuumed:
        raise UndoRefused(vacuumed(table, now)) from None
    return replace(table, made=made)


def vacuumed(table: TableUndo, commits: Sequence[Commit]) -> str:
    after = table.to_version or 0
    vacuums = [c for c in commits if c.version > after and c.operation.upper().startswith("VACUUM")]
    which = vacuums[-1].describe() if vacuums else "a VACUUM"
    return (
        f"table {table.table.name}: version {table.to_version} cannot be restored: {which} "
        "deleted data files it needs; nothing was restored"
    )
