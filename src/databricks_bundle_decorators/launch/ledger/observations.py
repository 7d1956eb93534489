"""The attempts the local ledgers record, as run observations (split from :mod:`.ledger`,
which writes and reads the ledgers): how a local backfill's history reads them."""

from __future__ import annotations

from ..plan.history import ObservedState, RunObservation
from .ledger import Ledger


def ledger_observations(ledgers: list[Ledger]) -> list[RunObservation]:
    """Every attempt recorded in ``ledgers`` as a run observation (for local history)."""
    observed: list[RunObservation] = []
    for ledger in ledgers:
        for record in ledger.slices:
            for attempt in record.attempts:
                if attempt.state == "rejected" or not record.keys:
                    continue
                state: ObservedState = (
                    "succeeded"
                    if attempt.state == "succeeded"
                    else "cancelled"
                    if attempt.state == "canceled"
                    else "running"
                    if attempt.is_open and ledger.state == "running"
                    else "failed"
                )
                started = attempt.submitted_at or ledger.created_at
                observed.append(
                    RunObservation(record.keys, state, started, attempt.run_id or "", attempt.error)
                )
    return observed
