"""Canary slices: the first N slices (never a final sync) run alone; the rest wait until
all succeeded. A canary failed for good stops the backfill, the rest left pending, so
``--resume`` runs the canaries again first.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ledger.ledger import Ledger, SliceRecord


class CanaryGate:
    """Which slices may launch while the ``count`` canaries (``0``: none) have not all
    succeeded: with 2 over slices ``0..9``, slice 2 waits for 0 and 1.
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
