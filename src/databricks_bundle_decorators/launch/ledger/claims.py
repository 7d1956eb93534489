"""One active backfill per job and key: the claim a launcher holds while it runs.

Two people launching overlapping backfills of one job would run every shared key twice,
at the same time, each writing over the other's partitions. So before its first run a
launcher takes a **claim** that names its backfill and the keys it is going to run, and
holds it until the backfill ends (succeeded, failed or interrupted); a second launcher
whose keys overlap a live claim is refused (exit 2) with one line naming the other
backfill and saying how to wait for it, or how to take a stale claim over (``--force``).

Where the claim lives depends on where the runs happen (:mod:`.lease`, one lease over
a :mod:`..ledger.place`): for Databricks backfills a file in the **workspace**, which every
machine launching against the job shares -- the local ledger is no help there; for local
backfills a file under the project's ``.dbxdec/``, which lives as long as its launcher.

A claim covers the keys of the slices still to run (all of them for a new backfill,
those not yet succeeded on ``--resume``). This module holds what both kinds share: the
claim record, how keys are summarised in messages, and :class:`BackfillGuard`.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import socket
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from ...backfill.wire import KeyRange
from .ledger import Ledger

CLAIM_VERSION = 1

ClaimLost = Callable[[str], None]
"""Told why, when a held claim is lost (taken over after it expired, or deleted)."""


class BackfillGuard(Protocol):
    """Keeps a second launcher away from the keys of a running backfill."""

    def hold(self, ledger: Ledger, on_lost: ClaimLost) -> AbstractContextManager[None]:
        """Claim the ledger's keys for the block; released when the block ends.

        Raises:
            UsageError: another backfill holds some of the keys (one line naming it).
        """


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    """Who runs which keys of a job, as stored in a claim (times: epoch seconds).

    ``claim_id`` is random per launch: it tells the launcher its own claim from a
    copy written by anyone else (the same backfill resumed elsewhere included).
    ``expires_at`` is ``None`` for a local lock, which never expires but dies with
    its process.
    """

    backfill_id: str
    job: str
    job_id: int | None
    host: str
    pid: int
    user: str
    started_at: float
    renewed_at: float
    expires_at: float | None
    keys: tuple[str, ...]
    claim_id: str

    def to_text(self) -> str:
        """The claim file's JSON (times in ISO 8601 UTC, readable in the workspace UI)."""
        data: dict[str, Any] = {
            "version": CLAIM_VERSION,
            "backfill_id": self.backfill_id,
            "job": self.job,
            "job_id": self.job_id,
            "host": self.host,
            "pid": self.pid,
            "user": self.user,
            "started_at": _iso(self.started_at),
            "renewed_at": _iso(self.renewed_at),
            "expires_at": None if self.expires_at is None else _iso(self.expires_at),
            "claim_id": self.claim_id,
            "keys": list(self.keys),
        }
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_text(cls, text: str) -> ClaimRecord:
        """Parse a claim file.

        Raises:
            ValueError: not a claim this version of dbxdec can read.
        """
        try:
            data = json.loads(text)
            expires = data["expires_at"]
            job_id = data["job_id"]
            return cls(
                backfill_id=str(data["backfill_id"]),
                job=str(data["job"]),
                job_id=None if job_id is None else int(job_id),
                host=str(data["host"]),
                pid=int(data["pid"]),
                user=str(data["user"]),
                started_at=_epoch(data["started_at"]),
                renewed_at=_epoch(data["renewed_at"]),
                expires_at=None if expires is None else _epoch(expires),
                keys=tuple(str(k) for k in data["keys"]),
                claim_id=str(data["claim_id"]),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a dbxdec claim ({type(exc).__name__}: {exc})") from None

    def is_expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def launcher_gone(self) -> bool:
        """Whether the launcher is known dead: it ran on this machine and its process
        is gone. From another machine nothing is known (the claim's expiry decides)."""
        return self.host == this_host() and not process_alive(self.pid)

    def is_stale(self, now: float) -> bool:
        """Expired, or its launcher is known dead: nobody will renew or release it."""
        return self.is_expired(now) or self.launcher_gone()

    def overlap(self, keys: Collection[str]) -> list[str]:
        """This claim's keys that are also in ``keys``, in this claim's order."""
        wanted = set(keys)
        return [key for key in self.keys if key in wanted]

    @property
    def who(self) -> str:
        """``backfill <id> (<user> on <host>, started <time>)`` for messages."""
        return (
            f"backfill {self.backfill_id} ({self.user} on {self.host}, started "
            f"{when(self.started_at)})"
        )


def claimed_keys(ledger: Ledger) -> tuple[str, ...]:
    """The keys a backfill is about to run: those of its slices not yet succeeded."""
    keys = (k for r in ledger.slices if r.state != "succeeded" for k in r.keys)
    return tuple(dict.fromkeys(keys))


def key_summary(keys: Sequence[str]) -> str:
    """Keys for a message: first..last and how many.

    Example:
        >>> key_summary(["2024-02-01", "2024-02-02", "2024-02-10"])
        '2024-02-01..2024-02-10 (3 keys)'
        >>> key_summary(["eu"])
        'eu (1 key)'
    """
    if not keys:
        return "no keys"
    ordered = sorted(keys)
    span = KeyRange(ordered[0], ordered[-1]).label
    return f"{span} ({len(ordered)} key{'s' if len(ordered) != 1 else ''})"


def when(epoch: float) -> str:
    """An instant for messages: ``2024-06-01 02:00:00 UTC``."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def this_host() -> str:
    """This machine's name, as claims record it."""
    return socket.gethostname()


def this_user() -> str:
    """The operating-system user running the launcher (a fallback for messages)."""
    with contextlib.suppress(Exception):  # getpass raises different errors per platform
        return getpass.getuser()
    return "unknown"


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (a zombie counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")


def _epoch(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"claim time {value!r} has no time zone")
    return parsed.timestamp()
