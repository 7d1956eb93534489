"""The claim of a local backfill: one at a time per job and project, across processes.

``<project root>/.dbxdec/locks/<job>.lock`` is held with ``flock`` while a ``--local``
backfill (or its ``--resume``) of the job runs; the operating system releases it when the
process ends, however it ends, so a local claim is never stale and ``--force`` has
nothing to take over. Beside it, ``<job>.holder.json`` describes the holder (backfill id,
pid, start time, keys) for the refusal line.

Locally the whole job is locked, not only the overlapping keys: the local Delta tables
of a project are one warehouse, and Delta's local log store guarantees mutual exclusion
of commits only within one JVM, so two processes must never write a job's tables at
once. On platforms without ``fcntl`` (Windows) local backfills are not locked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...atomic import write_atomically
from ...errors import UsageError
from ..ledger.ledger import Ledger
from .claims import ClaimLost, ClaimRecord, claimed_keys, key_summary, this_host, this_user, when


def locks_dir(root: Path) -> Path:
    """Where the local backfill locks of a project live."""
    return root / ".dbxdec" / "locks"


class LocalLock:
    """The lock of a job's local backfills in the project at ``root`` (a
    :class:`~.claims.BackfillGuard`); ``force`` only changes the refusal's words."""

    def __init__(self, root: Path, job: str, *, force: bool = False) -> None:
        self.root = root
        self.job = job
        self.force = force
        self.lock_path = locks_dir(root) / f"{job}.lock"
        self.holder_path = locks_dir(root) / f"{job}.holder.json"

    @contextmanager
    def hold(self, ledger: Ledger, on_lost: ClaimLost) -> Iterator[None]:
        """Hold the job's lock for the block (a local lock is never lost).

        Raises:
            UsageError: another process runs a local backfill of the job.
        """
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+b") as handle:
            if not _try_lock(handle.fileno()):
                raise UsageError(self._refusal())
            now = time.time()
            record = ClaimRecord(
                backfill_id=ledger.id,
                job=self.job,
                job_id=None,
                host=this_host(),
                pid=os.getpid(),
                user=this_user(),
                started_at=now,
                renewed_at=now,
                expires_at=None,
                keys=claimed_keys(ledger),
                claim_id=secrets.token_hex(8),
            )
            write_atomically(self.holder_path, record.to_text())
            try:
                yield
            finally:
                holder = self.holder()
                if holder is not None and holder.claim_id == record.claim_id:
                    with contextlib.suppress(OSError):
                        self.holder_path.unlink()
                # closing the file releases the lock

    def holder(self) -> ClaimRecord | None:
        """The last recorded holder (it may have ended since)."""
        try:
            return ClaimRecord.from_text(self.holder_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _refusal(self) -> str:
        holder = self.holder()
        if holder is None or holder.launcher_gone() or holder.host != this_host():
            who = "another dbxdec process"  # the holder has not recorded itself yet
        else:
            who = (
                f"backfill {holder.backfill_id} (pid {holder.pid}, started "
                f"{when(holder.started_at)}, {key_summary(holder.keys)})"
            )
        if self.force:
            return (
                f"--force: {who} is still running job {self.job!r} locally in this project "
                "and holds its lock; a local lock is released when its launcher ends, so "
                "there is nothing stale to take over: wait until it ends"
            )
        return (
            f"{who} is already running job {self.job!r} locally in this project: wait "
            "until it ends (dbxdec backfills lists it); local backfills of a job run one "
            "at a time"
        )


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` without waiting; ``False`` if someone holds it."""
    if sys.platform == "win32":
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
