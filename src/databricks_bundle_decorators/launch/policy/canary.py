"""Canary slices: the first N slices of a backfill run alone before the rest.

With ``--canary 2`` the scheduler launches the first two slices (in plan order; a final
sync is never a canary) and holds every other slice back until both have succeeded. A
canary that fails for good (after its retries) stops the backfill: nothing else is
launched and the other slices stay pending in the ledger, so ``--resume`` runs the
canaries again first. Canaries already succeeded in an earlier session have passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ledger.ledger import Ledger, SliceRecord


class CanaryGate:
    """Which slices may launch while the canaries have not all succeeded.

    Args:
        slices: The ledger's slices, in launch order.
        count: How many slices are canaries; ``0`` turns the gate off.

    Example:
        ``count=2`` over slices ``0..9``: slices 0 and 1 launch at once; slice 2 only
        after both have succeeded.
    """

    def __init__(self, slices: Sequence[SliceRecord], count: int) -> None:
        keyed = [record for record in slices if record.keys]
        self._canaries = frozenset(record.index for record in keyed[: max(0, count)])
        self._open = not self._canaries or all(
            record.state == "succeeded" for record in keyed if record.index in self._canaries
        )

    def is_canary(self, index: int) -> bool:
        return index in self._canaries

    def admits(self, index: int, slices: Sequence[SliceRecord]) -> bool:
        """Whether slice ``index`` may launch now."""
        if self._open or index in self._canaries:
            return True
        self._open = all(slices[i].state == "succeeded" for i in self._canaries)
        return self._open


def canary_failure(ledger: Ledger) -> SliceRecord | None:
    """The first canary slice of ``ledger`` that failed, if its options name canaries."""
    gate = CanaryGate(ledger.slices, ledger.options.canary)
    return next((r for r in ledger.slices if gate.is_canary(r.index) and r.state == "failed"), None)


def canary_failure_line(record: SliceRecord, resume_command: str | None) -> str:
    """The one line a backfill stopped by a failed canary ends with."""
    error = record.last.error if record.last is not None else ""
    line = f"canary slice {record.label} failed: {error or 'no reason given'}"
    line += "; nothing else launched; fix and rerun"
    return f"{line}, or {resume_command}" if resume_command else line
