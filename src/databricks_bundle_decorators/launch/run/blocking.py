"""Which slices of a ``--downstream`` ledger are blocked, and how that is said.

A slice is blocked when a slice it waits for (directly, or through slices that are
themselves blocked) failed for good: it is never launched, and stays pending in the
ledger, so ``--resume`` runs it once its upstream slice succeeds. The rule itself is
:func:`..plan.slice_graph.blocked_by`; this module applies it to a ledger.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..ledger.ledger import Ledger, SliceRecord, label_of_jobs, ledger_jobs
from ..plan.slice_graph import blocked_by

__all__ = [
    "blocked_line",
    "blocked_slices",
    "is_downstream",
    "jobs_label",
    "ledger_blocked",
    "ledger_jobs",
]


def is_downstream(ledger: Ledger) -> bool:
    """Whether ``ledger`` is a ``--downstream`` backfill's (its slices name their job)."""
    return any(record.job is not None for record in ledger.slices)


def jobs_label(ledger: Ledger) -> str:
    """``a`` for one job's backfill; ``a --downstream: b, c`` for one across jobs."""
    return label_of_jobs(ledger_jobs(ledger))


def blocked_slices(records: Sequence[SliceRecord], failed: Collection[int]) -> dict[int, int]:
    """The slices of ``records`` blocked by the ``failed`` ones, each mapped to one
    failed slice that blocks it."""
    return blocked_by({r.index: r.waits_for for r in records}, failed)


def ledger_blocked(ledger: Ledger) -> dict[int, int]:
    """The pending slices of ``ledger`` blocked by its failed slices (after a session)."""
    failed = [r.index for r in ledger.slices if r.state == "failed"]
    found = blocked_slices(ledger.slices, failed)
    return {i: up for i, up in found.items() if ledger.slices[i].state == "pending"}


def blocked_line(records: Sequence[SliceRecord], index: int, upstream: int) -> str:
    """``c 2024-02-01 (blocked by a 2024-01-31, which failed)``: the failed slice it
    waits for, directly or through other blocked slices."""
    return f"{records[index].label} (blocked by {records[upstream].label}, which failed)"
