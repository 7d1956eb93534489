"""The same backfill command again after the first did not finish: refused (exit 2), naming
it and its ``--resume`` command; ``--new`` starts afresh. Selections from run history
(``--rerun failed|missing``, ``catchup``) are never refused. A refusal, not a warning: a
warning scrolls past while cluster hours rewrite finished partitions.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from ...errors import UsageError, counted
from ..ledger.ledger import Ledger, ledger_dir, list_ledgers, resume_command
from ..ledger.place import check_writable

_HOW = {
    "interrupted": "was interrupted",
    "failed": "ended with runs failed or not run",
    "running": "did not finish (its launcher stopped, or is still going)",
}


def check_can_start(
    root: Path, job: str, keys: Collection[str], context_args: Sequence[str] = (), *, new: bool
) -> None:
    """Refuse a new backfill of ``job`` over ``keys`` when no ledger can be written, or
    (unless ``new``) when the last backfill of the same keys did not finish.

    Raises:
        LocalStateProblem: the ledger folder cannot be written (exit 6).
        UsageError: the same keys' last backfill did not finish (exit 2).
    """
    check_writable(ledger_dir(root))
    if not new:
        refuse_unfinished_rerun(root, job, keys, context_args)


def unfinished_predecessor(root: Path, job: str, keys: Collection[str]) -> Ledger | None:
    """The newest backfill of ``job`` over exactly ``keys`` if it left work a new one would
    repeat (one whose every slice failed did not: rerunning all *is* its rerun)."""
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
    """Refuse to start a backfill whose twin did not finish (a :class:`UsageError` giving
    its resume command and ``--new``)."""
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
