"""What a scheduler takes up from a ledger when it starts (split from :mod:`.scheduler`).

A new backfill queues every slice; a resumed one also finds its open attempts: each
becomes a flight again with its own idempotency token, so the submission it made finds
the same run instead of starting a second one. The final sync (the slice without keys)
is kept apart: it runs last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..ledger.ledger import SliceRecord
from .flights import Flight


@dataclass
class TakenUp:
    """The work a ledger hands a starting scheduler.

    Attributes:
        succeeded: How many slices had already succeeded.
        flights: The open attempts, by slice index.
        by_run: The open attempts whose run id is known, by run id.
        queue: The slices to launch, in the ledger's order.
        final: The final sync's slice index, if one is left to run.
    """

    succeeded: int = 0
    flights: dict[int, Flight] = field(default_factory=dict)
    by_run: dict[str, Flight] = field(default_factory=dict)
    queue: list[int] = field(default_factory=list)
    final: int | None = None


def take_up(records: Sequence[SliceRecord]) -> TakenUp:
    """Sort the slices of a ledger into done, in flight, queued and the final sync."""
    work = TakenUp()
    for record in records:
        last = record.last
        if record.state == "succeeded":
            work.succeeded += 1
            continue
        if last is not None and last.is_open:  # resumed: same token finds the same run
            flight = Flight(record.index, last.number, last.token, run_id=last.run_id)
            work.flights[record.index] = flight
            if last.run_id is not None:
                work.by_run[last.run_id] = flight
            continue
        if not record.keys:
            work.final = record.index
        else:
            work.queue.append(record.index)
    return work
