"""The claims of a ``--downstream`` backfill: one per job it runs, each on that job's keys.

Each job's guard (the local lock of the job, or the job's workspace claim) sees a view
of the ledger holding only that job's slices, so a claim names the keys of its own job
and a refusal (raised by that job's guard) names the job. The claims are taken in the
plan's job order and released in reverse; if one is refused, those already taken are
released and nothing is launched.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..ledger.claims import BackfillGuard, ClaimLost
from ..ledger.lease import LocalLock
from ..ledger.ledger import Ledger, job_part


class JobClaims:
    """A :class:`~.claims.BackfillGuard` holding one guard per job, by job name."""

    def __init__(self, guards: Mapping[str, BackfillGuard]) -> None:
        self.guards = dict(guards)

    @contextmanager
    def hold(self, ledger: Ledger, on_lost: ClaimLost) -> Iterator[None]:
        """Claim each job's keys for the block.

        Raises:
            UsageError: another backfill holds some keys of one of the jobs (the line
                its guard gives names that job).
        """
        with ExitStack() as held:
            for job, guard in self.guards.items():
                held.enter_context(guard.hold(job_part(ledger, job), on_lost))
            yield


def job_locks(root: Path, jobs: Sequence[str], *, force: bool) -> JobClaims:
    """One local lock per job of the project at ``root``, in the plan's job order."""
    return JobClaims({job: LocalLock(root, job, force=force) for job in jobs})
