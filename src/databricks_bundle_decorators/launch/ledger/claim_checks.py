"""What keeps a backfill from starting, in one line each: a claim on some of its keys,
or runs of the job it did not launch that write some of them (see :mod:`.claims`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from ...backfill.wire import KeyRange
from ...runtime.triggers.run_history import RUNS_LIST_PAGE
from ..plan.history import keys_of_parameters
from .claims import ClaimRecord, key_summary, this_host, when
from .ledger import Ledger

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from ...backfill.base import BackfillDef

_LISTED_RUNS = 4


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
    backfill of ``ledger`` did not launch; ``None`` when there are none.

    A run is this backfill's when its id is in the ledger, or when its keys are those of
    a slice whose submission is open with no run id yet (the reply was lost: the
    scheduler finds the run again by its idempotency token).
    """
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
