"""The lease of a backfill: its claim file ``<backfill id>.json`` in the folder of its job,
held while it runs (the behaviour users see: docs/guides/backfill.md).

Databricks (:class:`WorkspaceClaims`): ``/Shared/dbxdec/claims/job-<job_id>/`` (or
``$DBXDEC_CLAIMS_DIR``), shared by everyone launching the job; claims conflict when their
keys overlap, and the job's active runs over the keys are checked last. Locally
(:class:`LocalLock`): ``<root>/.dbxdec/locks/<job>/``; every claim of the job conflicts
(Delta's local log store excludes commits only within one JVM).

A launcher creates its own file only if absent, then reads every other claim and
withdraws on a live conflict: everyone writes before reading, so two launchers may both
withdraw but never both run. A workspace claim lasts :data:`CLAIM_TTL` from its last
renewal (every :data:`RENEW_EVERY`); one found expired is not renewed unless it expired
in an outage and the file is still this launcher's; a claim taken over ends the backfill
(exit 7). ``--force`` takes over an expired claim; a claim of a dead process on this
machine is stale at once.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import UsageError, WorkspaceRejected
from ..workspace.workspace import classify, workspace_errors
from .claims import (
    ClaimLost,
    ClaimRecord,
    claimed_keys,
    foreign_runs_message,
    local_refusal,
    refusal,
    this_host,
    this_user,
    when,
)
from .ledger import Ledger
from .place import LocalPlace, Place, WorkspacePlace

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from ...backfill.base import BackfillDef

CLAIMS_DIR = "/Shared/dbxdec/claims"
CLAIMS_DIR_ENV = "DBXDEC_CLAIMS_DIR"
CLAIM_TTL = 300.0
RENEW_EVERY = 60.0


def claims_folder(job_id: int, root: str | None = None) -> str:
    """The workspace folder of job ``job_id``'s claims."""
    base = (root or os.environ.get(CLAIMS_DIR_ENV) or CLAIMS_DIR).rstrip("/")
    return f"{base}/job-{job_id}"


def locks_dir(root: Path) -> Path:
    """Where the local backfill claims of a project live."""
    return root / ".dbxdec" / "locks"


class Lease:
    """The claim of one backfill in ``place`` (a :class:`~.claims.BackfillGuard`).

    Args:
        job: The dbxdec job name; ``job_id`` the deployed job (``None`` locally).
        force: Take over claims that expired (``--force``).
        ttl: Seconds a claim lasts after its last renewal (``None``: never expires,
            not renewed).
        host: Who holds it, as recorded (default: this machine; a controller: its run).
    """

    def __init__(
        self,
        place: Place,
        *,
        job: str,
        job_id: int | None = None,
        force: bool = False,
        ttl: float | None = CLAIM_TTL,
        renew_every: float = RENEW_EVERY,
        clock: Callable[[], float] = time.time,
        host: str | None = None,
    ) -> None:
        self.place = place
        self.host = host or this_host()
        self.job = job
        self.job_id = job_id
        self.force = force
        self.ttl = ttl
        self.renew_every = renew_every
        self.clock = clock
        self.record: ClaimRecord | None = None
        self.lost: str | None = None
        self.unreached_since: float | None = None  # first renewal of an outage (clock)

    def path(self, backfill_id: str) -> str:
        return f"{self.place.folder}/{backfill_id}.json"

    @contextmanager
    def hold(self, ledger: Ledger, on_lost: ClaimLost) -> Iterator[None]:
        """Claim ``ledger``'s keys for the block, renewing the claim in a thread."""
        self.acquire(ledger)
        stop = threading.Event()
        renewer = threading.Thread(
            target=self._renew_until, args=(stop, on_lost), name="dbxdec-claim", daemon=True
        )
        if self.ttl is not None:
            renewer.start()
        try:
            yield
        finally:
            stop.set()
            if renewer.is_alive():
                renewer.join(timeout=30)
            self.release()

    def acquire(self, ledger: Ledger) -> ClaimRecord:
        """Write this backfill's claim; withdraw it and refuse on any conflict.

        Raises:
            UsageError: another backfill or a foreign run holds some of the keys (locally:
                the job), or the folder cannot be written.
            WorkspaceRejected, WorkspaceUnreachable: refused (exit 4) or no answer (5).
        """
        now = self.clock()
        record = ClaimRecord(
            backfill_id=ledger.id,
            job=self.job,
            job_id=self.job_id,
            host=self.host,
            pid=os.getpid(),
            user=self._user_name(),
            started_at=now,
            renewed_at=now,
            expires_at=None if self.ttl is None else now + self.ttl,
            keys=claimed_keys(ledger),
            claim_id=secrets.token_hex(8),
        )
        with self._reaching():  # unreachable: one line, exit 5
            self.place.make()
            self._create(record)
            self.record = record
            try:
                self._refuse_conflicts(record, ledger)
            except BaseException:
                self.release()
                raise
        return record

    def holder(self) -> ClaimRecord | None:
        """The earliest claim in the folder (it may have ended since)."""
        return min(self._claims(), key=lambda c: c.started_at, default=None)

    def renew(self) -> bool:
        """Extend the claim by ``ttl`` if it is still this launcher's: ``False`` when it
        was taken over or deleted (:attr:`lost` says how), ``True`` otherwise (a failed
        renewal included: the next one tries again)."""
        record = self.record
        if record is None:
            return False
        now = self.clock()
        expired = record.is_expired(now)
        if expired and not self._expired_in_outage(record):
            self.lost = (  # anyone may have taken it over meanwhile, with --force
                f"the claim of backfill {record.backfill_id} on job {self.job!r} expired at "
                f"{when(record.expires_at or now)} before it was renewed (was this launcher "
                "stalled?); launching no more runs"
            )
            return False
        try:
            current = self._read(record.backfill_id)
            if current is None:  # a --force deletes it: who holds the keys now?
                current = next((c for c in self._claims() if c.overlap(record.keys)), None)
            if current is None or current.claim_id != record.claim_id:
                self.lost = (
                    f"the claim of backfill {record.backfill_id} on job {self.job!r} was "
                    + ("deleted" if current is None else f"taken over by {current.who}")
                    + "; launching no more runs"
                )
                return False
            renewed = replace(record, renewed_at=now, expires_at=now + (self.ttl or 0.0))
            self.place.write(f"{record.backfill_id}.json", renewed.to_text())
            self.record = renewed
            if expired and not self._retaken(record, now):
                return False
        except (OSError, WorkspaceRejected) as exc:  # DatabricksError is an OSError
            found = classify(exc)  # unreachable: the SDK retried already
            if self.unreached_since is None and found is not None and found[0] == "unreachable":
                self.unreached_since = now
            return True  # try again at the next renewal
        self.unreached_since = None
        return True

    def _expired_in_outage(self, record: ClaimRecord) -> bool:
        """Whether the claim expired while renewals found the workspace unreachable (one
        before the expiry, none answered since), not because this launcher stalled."""
        since = self.unreached_since
        return since is not None and record.expires_at is not None and since < record.expires_at

    def _retaken(self, record: ClaimRecord, now: float) -> bool:
        """After renewing a claim that expired in an outage: ``False`` (and :attr:`lost`)
        if a live claim of another launcher overlaps it. One taking it over right now
        writes before reading, so either this listing shows its claim or it reads this
        renewed one and is refused."""
        rival = next(
            (
                c
                for c in self._claims()
                if c.claim_id != record.claim_id and c.overlap(record.keys) and not c.is_stale(now)
            ),
            None,
        )
        if rival is None:
            return True
        self.lost = (
            f"the claim of backfill {record.backfill_id} on job {self.job!r} expired while "
            f"the workspace was unreachable and was taken over by {rival.who}; launching no "
            "more runs"
        )
        return False

    def release(self) -> None:
        """Delete the claim if it is still this launcher's (best effort)."""
        record, self.record = self.record, None
        if record is None:
            return
        try:
            current = self._read(record.backfill_id)
            if current is not None and current.claim_id == record.claim_id:
                self.place.delete(f"{record.backfill_id}.json")
        except OSError:  # an API or network error (DatabricksError is an OSError)
            pass

    def _renew_until(self, stop: threading.Event, on_lost: ClaimLost) -> None:
        while not stop.wait(self.renew_every):
            if not self.renew():
                on_lost(self.lost or "the backfill's claim was lost")
                return

    def _create(self, record: ClaimRecord) -> None:
        """Write ``record`` if no claim of its backfill exists; a stale one (a dead launcher,
        or expired with ``--force``) is deleted and created again."""
        name = f"{record.backfill_id}.json"
        for _ in range(2):
            if self.place.create(name, record.to_text()):
                return
            existing = self._read(record.backfill_id)
            if existing is not None and existing.claim_id == record.claim_id:
                return  # our own write, whose reply was lost and the SDK retried
            now = self.clock()
            gone = existing is None or existing.launcher_gone()
            if existing is not None and not gone and not (self.force and existing.is_expired(now)):
                raise UsageError(self._refusal(existing, record.keys, now))
            self.place.delete(name)
        raise UsageError(
            f"could not claim backfill {record.backfill_id}: its claim "
            f"{self.path(record.backfill_id)} keeps reappearing (another launcher is taking "
            "it over); try again"
        )

    def _refuse_conflicts(self, record: ClaimRecord, ledger: Ledger) -> None:
        now = self.clock()
        others = [c for c in self._claims() if c.backfill_id != record.backfill_id]
        for other in sorted(others, key=lambda c: c.started_at):
            if self.place.shared and not other.overlap(record.keys):
                continue
            stale = other.launcher_gone() if not self.place.shared else other.is_stale(now)
            if not (stale and (self.force or not self.place.shared)):
                raise UsageError(self._refusal(other, record.keys, now))
            self.place.delete(f"{other.backfill_id}.json")  # taken over
        message = self._foreign_runs(record, ledger)
        if message:
            raise UsageError(message)

    def _refusal(self, other: ClaimRecord, keys: tuple[str, ...], now: float) -> str:
        if not self.place.shared:
            return local_refusal(other, self.job, self.force)
        return refusal(other, keys, self.job, now, self.force)

    def _foreign_runs(self, record: ClaimRecord, ledger: Ledger) -> str | None:
        """A refusal for runs over the keys not launched by this backfill (none locally)."""
        return None

    def _user_name(self) -> str:
        return this_user()

    def _reaching(self) -> AbstractContextManager[None]:
        return nullcontext()

    def _read(self, backfill_id: str) -> ClaimRecord | None:
        """The claim of ``backfill_id``; ``None`` when there is none (or it is not a claim)."""
        text = self.place.read(f"{backfill_id}.json")
        try:
            return None if text is None else ClaimRecord.from_text(text)
        except ValueError:
            return None

    def _claims(self) -> list[ClaimRecord]:
        names = (n for n in self.place.names() if n.endswith(".json"))
        found = (self._read(name[: -len(".json")]) for name in names)
        return [c for c in found if c is not None]


class LocalLock(Lease):
    """The claim of a job's local backfills in the project at ``root``: one at a time."""

    def __init__(self, root: Path, job: str, *, force: bool = False) -> None:
        super().__init__(LocalPlace(locks_dir(root) / job), job=job, force=force, ttl=None)


class WorkspaceClaims(Lease):
    """The claim of one Databricks backfill, in the workspace every launcher shares.

    Args:
        backfill: The job's backfill definition, to read the keys of ranged runs.
        root: The claims folder root (default ``$DBXDEC_CLAIMS_DIR`` or :data:`CLAIMS_DIR`).
        **lease: As :class:`Lease` (``job`` and ``job_id`` required).
    """

    def __init__(
        self,
        client: WorkspaceClient,
        *,
        job: str,
        job_id: int,
        backfill: BackfillDef | None = None,
        root: str | None = None,
        **lease: Any,
    ) -> None:
        advice = f"or set {CLAIMS_DIR_ENV} to a folder everyone launching job {job!r} can write"
        place = WorkspacePlace(
            client, claims_folder(job_id, root), what="the backfill claims folder", advice=advice
        )
        super().__init__(place, job=job, job_id=job_id, **lease)
        self.client = client
        self.backfill = backfill
        self._user: str | None = None

    def _foreign_runs(self, record: ClaimRecord, ledger: Ledger) -> str | None:
        assert self.job_id is not None
        return foreign_runs_message(
            self.client, self.job, self.job_id, ledger, record.keys, self.backfill
        )

    def _reaching(self) -> AbstractContextManager[None]:
        return workspace_errors(self.client.config.host)

    def _user_name(self) -> str:
        if self._user is None:
            try:
                self._user = self.client.current_user.me().user_name or this_user()
            except OSError:  # an API or network error: the OS user will do
                self._user = this_user()
        return self._user
