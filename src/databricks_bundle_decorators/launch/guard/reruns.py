"""The same backfill command again, after the first one did not finish: point at ``--resume``.

Typing the command of a backfill again (shell history, a re-run CI step) after it was
interrupted, killed or stopped halfway would launch every key once more, the ones that
already succeeded included. So :func:`refuse_unfinished_rerun` refuses (exit 2) when
the newest backfill of the same job over exactly the same keys did not finish, names
it, and gives its ``--resume`` command; ``--new`` starts a fresh backfill anyway.
Selections made from run history (``--rerun failed|missing``, ``catchup``) are never
refused: they already leave out what succeeded.

Why a refusal and not a warning: a warning scrolls past while the launcher goes on, and
going on costs cluster hours and rewrites partitions that were done; the refusal costs
one word (``--new``) to someone who does want to start over. Nothing is launched and no
ledger is written before the refusal.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from ...errors import UsageError, counted
from ..ledger.commands import resume_command
from ..ledger.ledger import Ledger, ledger_dir, list_ledgers
from ..ledger.local_state import check_writable

_HOW = {
    "interrupted": "was interrupted",
    "failed": "ended with runs failed or not run",
    "running": "did not finish (its launcher stopped, or is still going)",
}


def check_can_start(
    root: Path, job: str, keys: Collection[str], context_args: Sequence[str] = (), *, new: bool
) -> None:
    """Refuse a new backfill of ``job`` over ``keys`` before anything is launched: when
    no ledger can be written under ``root``, or (unless ``new``) when the last backfill
    of the same keys did not finish.

    Raises:
        LocalStateProblem: the ledger folder cannot be written (exit 6).
        UsageError: the same keys' last backfill did not finish (exit 2).
    """
    check_writable(ledger_dir(root))
    if not new:
        refuse_unfinished_rerun(root, job, keys, context_args)


def unfinished_predecessor(root: Path, job: str, keys: Collection[str]) -> Ledger | None:
    """The newest backfill of ``job`` over exactly ``keys`` if it left work a new one
    would repeat: slices that succeeded or were never finished (pending, open,
    cancelled). One whose every slice failed is not: running them all again *is* the
    rerun its summary printed."""
    wanted = set(keys)
    for ledger in list_ledgers(root, job):  # newest first
        if {key for record in ledger.slices for key in record.keys} != wanted:
            continue
        counts = ledger.counts()
        if ledger.state == "succeeded" or counts["failed"] == len(ledger.slices):
            return None
        return ledger
    return None


def refuse_unfinished_rerun(
    root: Path, job: str, keys: Collection[str], context_args: Sequence[str] = ()
) -> None:
    """Refuse to start a backfill whose twin did not finish.

    Raises:
        UsageError: the newest backfill of ``job`` over ``keys`` did not succeed; the
            message gives its resume command and mentions ``--new``.
    """
    earlier = unfinished_predecessor(root, job, keys)
    if earlier is None:
        return
    done = earlier.counts()["succeeded"]
    how = _HOW.get(earlier.state, f"is {earlier.state}")
    raise UsageError(
        f"backfill {earlier.id} of the same keys {how} with {done} of "
        f"{counted(len(earlier.slices), 'run')} succeeded: finish it with: "
        f"{resume_command(earlier, context_args)} (or pass --new to run every key again)"
    )
