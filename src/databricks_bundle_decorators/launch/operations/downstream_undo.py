"""``dbxdec backfill undo ID`` of a ``--downstream`` backfill: every table of every job.

Each job's tables are planned as a one-job backfill's are (locally
:class:`.undo.LocalUndo`; on Databricks one undo run per job,
:class:`.remote_undo.RemoteUndo`, its tables judged beforehand through a SQL warehouse:
the commits of the backfill are those its runs made, found by the backfill's id, which
every job's runs carried, or else by that job's own run ids), with the
undo refusal rules per table. Every table of every job is checked before any is
restored: a refusal anywhere restores nothing. Tables are restored dependants first
(the reverse of the plan's job order), so a reader never sees a restored upstream table
beside a dependant table still holding rows computed from the backfilled data for
longer than it must.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ...runtime.programs.undo import BackfillRuns, UndoRefused
from ..backends.errors import UndoFailed
from ..ledger.ledger import Ledger
from .ledger_undone import carries_backfill_id, read_undone


class OneJobUndo(Protocol):
    """One job's part: a :class:`.undo.LocalUndo` or a :class:`.remote_undo.RemoteUndo`
    (not imported: both modules import this)."""

    @property
    def runs(self) -> BackfillRuns: ...

    @property
    def count(self) -> int: ...

    def lines(self) -> list[str]: ...

    def refusals(self) -> list[str]: ...

    def refused(self) -> UndoRefused | None: ...

    def apply(self, *, force: bool = False) -> list[str]: ...


def downstream_jobs(ledger: Ledger) -> list[str]:
    """The jobs of a ``--downstream`` ledger's slices, in the plan's order."""
    return list(dict.fromkeys(record.job or ledger.job for record in ledger.slices))


def job_runs(
    ledger: Ledger, job: str, undone: frozenset[tuple[str, int]] | None = None
) -> BackfillRuns:
    """The runs of ``ledger`` that ran ``job`` (their commits name the job); ``undone``:
    the backfill's undo records when the caller read them (else they are read)."""
    ids = frozenset(
        attempt.run_id
        for record in ledger.slices
        if (record.job or ledger.job) == job
        for attempt in record.attempts
        if attempt.run_id and attempt.state != "rejected"
    )
    undone = read_undone(ledger) if undone is None else undone
    return BackfillRuns(ledger.id, job, ids, undone, by_id=carries_backfill_id(ledger))


@dataclass(frozen=True, slots=True)
class DownstreamUndo:
    """The undo of every job of a ``--downstream`` backfill (same face as
    :class:`.undo.LocalUndo`).

    ``unchecked``: why the tables could not all be checked before any is restored (the
    refusal of an undo that is not forced), or ``None``.
    """

    ledger: Ledger
    jobs: tuple[OneJobUndo, ...]
    unchecked: str | None = None

    @property
    def count(self) -> int:
        """Tables that would change, over every job."""
        return sum(undo.count for undo in self.jobs)

    def lines(self) -> list[str]:
        """One header, then each job's lines (its tables, notes and warnings)."""
        names = ", ".join(undo.runs.job for undo in self.jobs)
        runs = sum(len(undo.runs.run_ids) for undo in self.jobs)
        out = [f"Undo of backfill {self.ledger.id} (--downstream: {names}; {runs} runs):"]
        for undo in self.jobs:
            out.append(f"  job {undo.runs.job}:")
            out += [f"  {line}" for line in undo.lines()[1:]]
        return out

    def refusals(self) -> list[str]:
        """One line per table, of any job, that needs ``force`` (or why they could not
        be checked)."""
        head = [self.unchecked] if self.unchecked else []
        return head + [line for undo in self.jobs for line in undo.refusals()]

    def refused(self) -> UndoRefused | None:
        """Why the tables were not checked, else the first job's refusal (each names its
        table), if any."""
        if self.unchecked:
            return UndoRefused(self.unchecked)
        return next((r for r in (u.refused() for u in self.jobs) if r is not None), None)

    def apply(self, *, force: bool = False) -> list[str]:
        """Restore every job's tables, dependants first; one line per table (locally) or
        per undo run (a job with nothing to restore gets none).

        Raises:
            UndoRefused: a table needs ``force`` (nothing was restored).
            UndoFailed: a job's undo failed after the jobs before it were undone (the
                message names them).
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
