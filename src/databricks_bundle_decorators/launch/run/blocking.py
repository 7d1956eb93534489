"""``--downstream``: which slices are ready, which are blocked, and how that is said.

:class:`ReadySet` launches a slice only after every slice it waits for has succeeded;
among the ready ones, retries first, then the plan's order. A slice whose upstream slice
failed for good is blocked (:func:`..plan.slice_graph.blocked_by`): never launched, said
once, left pending for ``--resume``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Sequence

from ..ledger.ledger import Ledger, SliceRecord, label_of_jobs
from ..ledger.ledger import ledger_jobs as ledger_jobs
from ..plan.slice_graph import blocked_by
from .flights import Loop


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


class ReadySet:
    """The ready set and blocking of a ``--downstream`` ledger (see the module docstring)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.blocked: dict[int, int] = {}  # each slice blocked, by a failed slice blocking it

    def is_ready(self, index: int) -> bool:
        """Whether every slice that slice ``index`` waits for has succeeded."""
        records = self.ledger.slices
        return all(records[w].state == "succeeded" for w in records[index].waits_for)

    def hold(self, loop: Loop) -> list[int]:
        """Before launching: leave only the ready slices queued (retries first, then the
        plan's order); the ones held back, to queue again after."""
        self._block(loop)
        records = self.ledger.slices
        held = [i for i in loop.queue if not self.is_ready(i)]
        ready = sorted(set(loop.queue) - set(held), key=lambda i: (not records[i].attempts, i))
        loop.queue = deque(ready)
        return held

    def stuck(self, loop: Loop) -> bool:
        """Whether nothing runs and nothing can start."""
        self._block(loop)
        return not (loop.flights or loop.delayed or any(map(self.is_ready, loop.queue)))

    def _block(self, loop: Loop) -> None:
        """Block the dependants of the slices failed for good (said once each), and take
        the blocked slices out of the queue."""
        found = blocked_slices(self.ledger.slices, loop.failed_for_good)
        for index, upstream in sorted(found.items()):
            if index not in self.blocked:
                self.blocked[index] = upstream
                loop.warn(f"blocked: {blocked_line(self.ledger.slices, index, upstream)}")
        loop.queue = deque(i for i in loop.queue if i not in self.blocked)

    def token_scope(self, record: SliceRecord) -> str:
        """The material of ``record``'s attempt tokens: the backfill and the slice's job
        (whether a token's scope is a job or the workspace is not said: the workspace is
        assumed; https://docs.databricks.com/api/workspace/jobs/runnow)."""
        return f"{self.ledger.id}\0{record.job or ''}"
