"""Attempts in flight: what the scheduler knows of each submission, and cancelling them.

A :class:`Flight` lives from the moment an attempt is written to the ledger until its
run ends (or it is given up); ``run_id`` is ``None`` while the submission's answer is
not known yet.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..backends.backends import Backend, Submitted


@dataclass
class Flight:
    """One attempt of one slice, from its ledger entry to the end of its run."""

    index: int
    attempt: int
    token: str
    run_id: str | None = None
    future: Future[Submitted] | None = None
    submit_errors: int = 0
    not_before: float = 0.0
    submitted: float = 0.0
    dispatched: bool = False


def cancel_flights(
    backend: Backend, flights: Sequence[Flight], pool: ThreadPoolExecutor, wait: float
) -> dict[int, Exception | None]:
    """Cancel the runs of ``flights``, all within ``wait`` seconds.

    First the run id of each submission still under way is awaited (one that does not
    answer stays open in the ledger: ``--resume`` finds its run by token), then every
    cancellation is sent at once.

    Returns:
        Per slice index whose run id is known: ``None`` if the backend accepted the
        cancellation, else the exception it raised.
    """
    deadline = time.monotonic() + wait
    for flight in flights:
        if flight.future is not None:
            try:
                flight.run_id = flight.future.result(timeout=_left(deadline)).run_id
            except Exception:
                continue
    cancels = {
        flight.index: pool.submit(backend.cancel, flight.run_id)
        for flight in flights
        if flight.run_id is not None
    }
    outcomes: dict[int, Exception | None] = {}
    for index, future in cancels.items():
        try:
            future.result(timeout=_left(deadline))
            outcomes[index] = None
        except Exception as exc:
            outcomes[index] = exc
    return outcomes


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def earliest_unsent(flights: Iterable[Flight], default: float) -> float:
    """The earliest ``not_before`` of the flights not yet sent (no run id, not dispatched),
    or ``default`` when it is earlier or there is none: when the loop must wake to send."""
    unsent = [f.not_before for f in flights if f.run_id is None and not f.dispatched]
    return min([default, *unsent])
