"""The attempts the local ledgers record, as run observations (split from :mod:`.ledger`,
which writes and reads the ledgers): how a local backfill's history reads them."""

from __future__ import annotations

from ..plan.history import RunObservation
from ..plan.states import BackfillState, KeyState, RunState
from .ledger import Ledger


def ledger_observations(ledgers: list[Ledger]) -> list[RunObservation]:
    """Every attempt recorded in ``ledgers`` as a run observation (for local history)."""
    observed: list[RunObservation] = []
    for ledger in ledgers:
        for record in ledger.slices:
            for attempt in record.attempts:
                if attempt.state == "rejected" or not record.keys:
                    continue
                state = (
                    KeyState(attempt.state)
                    if attempt.state in (RunState.SUCCEEDED, RunState.CANCELLED)
                    else KeyState.RUNNING
                    if attempt.is_open and ledger.state == BackfillState.RUNNING
                    else KeyState.FAILED
                )
                started = attempt.submitted_at or ledger.created_at
                observed.append(
                    RunObservation(record.keys, state, started, attempt.run_id or "", attempt.error)
                )
    return observed
