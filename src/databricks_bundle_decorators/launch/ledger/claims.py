"""One active backfill per job and key: the claim a launcher holds while it runs, over
the keys of its slices still to run (:mod:`.lease` keeps it: in the workspace for
Databricks backfills, under ``.dbxdec/`` for local ones). A second launcher whose keys
overlap a live claim is refused (exit 2) with one line naming the other backfill and
what to do (:func:`refusal`), as is one over keys that active runs it did not launch
write (:func:`foreign_runs_message`).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import socket
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from ...backfill.wire import KeyRange
from ...runtime.triggers.run_history import RUNS_LIST_PAGE
from ..plan.history import keys_of_parameters
from .ledger import Ledger

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from ...backfill.base import BackfillDef

CLAIM_VERSION = 1
_LISTED_RUNS = 4

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
    ``claim_id`` is random per launch (tells its own claim from any copy);
    ``expires_at`` is ``None`` for a local lock, which dies with its process."""

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
        data: dict[str, Any] = {"version": CLAIM_VERSION, **asdict(self)}
        for name in ("started_at", "renewed_at", "expires_at"):
            data[name] = None if data[name] is None else _iso(data[name])
        data["keys"] = list(data.pop("keys"))  # the keys last
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_text(cls, text: str) -> ClaimRecord:
        """Parse a claim file (``ValueError``: not a claim this dbxdec can read)."""
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
        is gone."""
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


def refusal(other: ClaimRecord, keys: Collection[str], job: str, now: float, force: bool) -> str:
    """Why a backfill over ``keys`` may not start while ``other`` holds its claim, and
    what to do: wait for it, resume it, or take a stale claim over with ``--force``."""
    shared = other.overlap(keys)
    held = (
        f"{key_summary(other.keys)} of job {job!r} ({_overlap_words(len(shared), len(set(keys)))})"
    )
    resume = f"dbxdec backfill --resume {other.backfill_id}"
    if not other.is_stale(now):
        renewed = f"renewed {when(other.renewed_at)}"
        if force:
            return (
                f"--force: {other.who} is alive and holds {held}; its claim was {renewed} "
                f"and lasts until {_until(other)}: --force takes over only a claim that "
                "expired (its launcher stopped renewing it); wait until that backfill ends"
            )
        return (
            f"{other.who} is already running {held}: wait until it ends (dbxdec backfills "
            f"on {other.host} lists it, dbxdec status {job} shows its runs); if its launcher "
            f"died, take over with --force once its claim expires ({_until(other)} unless "
            "renewed)"
        )
    if other.launcher_gone():
        return (
            f"{other.who} holds {held} but its launcher (pid {other.pid}) is no longer "
            f"running on this machine: resume it with {resume}, or take its keys over "
            "with --force"
        )
    return (
        f"{other.who} left a stale claim on {held}: it expired at {_until(other)} (its "
        f"launcher stopped renewing it): resume it on {other.host} with {resume}, or "
        "take its keys over with --force"
    )


def local_refusal(other: ClaimRecord, job: str, force: bool) -> str:
    """Why a local backfill of ``job`` may not start while ``other`` runs one: local
    backfills of a job run one at a time, and a local claim dies with its launcher."""
    who = (
        f"backfill {other.backfill_id} (pid {other.pid}, started {when(other.started_at)}, "
        f"{key_summary(other.keys)})"
        if other.host == this_host()
        else "another dbxdec process"
    )
    if force:
        return (
            f"--force: {who} is still running job {job!r} locally in this project "
            "and holds its lock; a local lock is released when its launcher ends, so "
            "there is nothing stale to take over: wait until it ends"
        )
    return (
        f"{who} is already running job {job!r} locally in this project: wait "
        "until it ends (dbxdec backfills lists it); local backfills of a job run one "
        "at a time"
    )


def foreign_runs_message(
    client: WorkspaceClient,
    job: str,
    job_id: int,
    ledger: Ledger,
    keys: Sequence[str],
    backfill: BackfillDef | None,
) -> str | None:
    """One line about the job's active runs that write some of ``keys`` and that the
    backfill of ``ledger`` did not launch (its run ids, or a slice submitted with no run
    id yet: the reply was lost); ``None`` when there are none."""
    ours = {a.run_id for r in ledger.slices for a in r.attempts if a.run_id}
    unanswered = {
        r.keys for r in ledger.slices if r.last is not None and r.last.is_open and not r.last.run_id
    }
    mine = set(keys)
    foreign: list[tuple[int, float]] = []
    written: set[str] = set()
    for run in client.jobs.list_runs(job_id=job_id, active_only=True, limit=RUNS_LIST_PAGE):
        params = {
            p.name: (p.value if p.value is not None else p.default or "")
            for p in run.job_parameters or []
            if p.name
        }
        started = (run.start_time or 0) / 1000
        run_keys = _run_keys(params, mine, backfill, started)
        shared = mine.intersection(run_keys)
        if not shared or str(run.run_id) in ours or tuple(run_keys) in unanswered:
            continue
        foreign.append((int(run.run_id or 0), started))
        written |= shared
    if not foreign:
        return None
    foreign.sort()
    ids = ", ".join(str(run_id) for run_id, _ in foreign[:_LISTED_RUNS])
    more = f" and {len(foreign) - _LISTED_RUNS} more" if len(foreign) > _LISTED_RUNS else ""
    since = when(min(started for _, started in foreign))
    subject = f"run {ids}" if len(foreign) == 1 else f"runs {ids}{more}"
    verb, ends, them = ("is", "it ends", "it") if len(foreign) == 1 else ("are", "they end", "them")
    return (
        f"{subject} of job {job!r} (job {job_id}), not launched by this backfill, {verb} "
        f"running {key_summary(sorted(written))} that this backfill would run (since "
        f"{since}): wait until {ends}, or cancel {them}, then launch again"
    )


def _run_keys(
    params: Mapping[str, str], mine: set[str], backfill: BackfillDef | None, started: float
) -> list[str]:
    """The keys a run writes (with no definition at hand: those of ``mine`` inside its
    range; time keys sort in time order)."""
    if backfill is not None:
        return list(keys_of_parameters(backfill, params, started=started))
    encoded = KeyRange.from_params(params)
    if encoded is None:
        return []
    if encoded.first == encoded.last:
        return [encoded.last]
    return sorted(k for k in mine if encoded.first <= k <= encoded.last)


def _overlap_words(shared: int, mine: int) -> str:
    if shared == mine:
        return f"all {mine} of your keys" if mine != 1 else "your key"
    return f"{shared} of your {mine} keys"


def _until(claim: ClaimRecord) -> str:
    return "never" if claim.expires_at is None else when(claim.expires_at)
