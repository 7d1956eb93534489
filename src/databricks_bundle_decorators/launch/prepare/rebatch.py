"""``--batch-size auto`` while a backfill runs: after each new success the size is re-chosen
and a change of :data:`SMALLEST_CHANGE` or more regroups the untried tail (keyed slices
at the end of the plan, no attempt, not canaries), the final sync moved last.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...backfill.base import BackfillDef
from ...backfill.wire import KeyRange
from ...errors import counted
from ..estimate.auto_batch import BatchChoice, rechoose
from ..estimate.estimate import PastRun
from ..ledger.ledger import Ledger, SliceRecord
from ..plan.plan import batches
from ..plan.states import RunState
from ..run.flights import Loop

SMALLEST_CHANGE = 0.2
"""A new size differing by less than this share (and at least one key) is ignored."""


def measured_runs(ledger: Ledger) -> list[PastRun]:
    """The backfill's succeeded attempts as past runs (the run's own times when known)."""
    found: list[PastRun] = []
    for record in ledger.slices:
        for attempt in record.attempts:
            start = attempt.started_at or attempt.submitted_at
            if attempt.state != "succeeded" or start is None or attempt.ended_at is None:
                continue
            if record.keys:
                found.append(PastRun(start, attempt.ended_at, len(record.keys), RunState.SUCCEEDED))
    return found


def untried_tail(ledger: Ledger, queued: Sequence[int]) -> list[int]:
    """The indices of the slices that may be re-batched (the module docstring)."""
    waiting = set(queued)
    keyed = [r.index for r in ledger.slices if r.keys]
    canaries = set(keyed[: max(0, ledger.options.canary)])
    tail: list[int] = []
    for index in reversed(keyed):
        record = ledger.slices[index]
        if record.attempts or index in canaries or index not in waiting:
            break
        tail.append(index)
    return tail[::-1]


def regroup(
    backfill: BackfillDef, keys: Sequence[str], size: int, *, reverse: bool
) -> list[tuple[str, ...]]:
    """``keys`` in runs of at most ``size`` consecutive keys, in launch order."""
    groups = batches(backfill, backfill.sort_keys(list(keys)), size)
    return groups[::-1] if reverse else groups


@dataclass(frozen=True, slots=True)
class Rebatched:
    """A re-choice applied to the ledger: the scheduler's new queue and final sync."""

    queue: tuple[int, ...]
    final: int | None
    choice: BatchChoice
    message: str


class Rebatcher:
    """Re-chooses the size of a ``--batch-size auto`` backfill as its runs end (``prior``:
    the job's past runs the first choice came from).
    """

    def __init__(self, backfill: BackfillDef, prior: Sequence[PastRun] = (), *, job: str) -> None:
        self.backfill = backfill
        self.prior = tuple(prior)
        self.job = job
        self._seen = 0

    def __call__(self, loop: Loop) -> None:
        """The scheduler's part: re-batch the queued slices before a round of launches."""
        if loop.launching() and loop.queue:
            found = self.rechoose(
                loop.ledger, list(loop.queue), loop.final, loop.options.max_concurrent
            )
            if found is not None:
                loop.queue, loop.final = deque(found.queue), found.final
                loop.warn(found.message)

    def rechoose(
        self, ledger: Ledger, queued: Sequence[int], final: int | None, max_concurrent: int
    ) -> Rebatched | None:
        """Re-batch the untried slices of ``ledger`` if a new measurement changes the size;
        ``None`` when nothing changed.
        """
        measured = measured_runs(ledger)
        if len(measured) <= self._seen:
            return None  # no new measurement (a resumed ledger's runs count once)
        self._seen = len(measured)
        tail = untried_tail(ledger, queued)
        if not tail:
            return None
        keys = [key for index in tail for key in ledger.slices[index].keys]
        choice = rechoose(
            len(keys),
            measured,
            self.prior,
            max_concurrent=max_concurrent,
            target_seconds=ledger.options.target_run_seconds,
            job=self.job,
        )
        old = ledger.options.batch_size
        if abs(choice.size - old) < max(1.0, SMALLEST_CHANGE * old):
            return None
        reverse = ledger.options.order == "reverse"
        groups = regroup(self.backfill, keys, choice.size, reverse=reverse)
        first, last = tail[0], tail[-1]
        options = ledger.options
        exact = options.exact
        template = ledger.slices[first].parameters  # user and launcher parameters: kept
        fresh = [
            SliceRecord(first + i, group, {**template, **KeyRange.of(group).to_params(exact=exact)})
            for i, group in enumerate(groups)
        ]
        shift = len(groups) - len(tail)
        after = [replace(r, index=r.index + shift) for r in ledger.slices[last + 1 :]]
        ledger.slices = [*ledger.slices[:first], *fresh, *after]
        for record in (*fresh, *after):
            ledger.update(record)  # drops the stale encoding of each index it takes
        ledger.options = replace(options, batch_size=choice.size)
        waiting = [i for i in queued if i < first] + [r.index for r in fresh]
        waiting += [i + shift for i in queued if i > last]
        message = (
            f"batch size auto: {old} -> {counted(choice.size, 'key')} per run for the "
            f"{counted(len(keys), 'key')} "
            f"not launched yet ({len(tail)} -> {counted(len(groups), 'run')}), from "
            f"{counted(len(measured), 'measured run')}: {'; '.join(choice.reasons)}"
        )
        moved = None if final is None else final + shift if final > last else final
        return Rebatched(tuple(waiting), moved, choice, message)
