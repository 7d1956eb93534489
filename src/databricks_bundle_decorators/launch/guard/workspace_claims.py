"""Claims of Databricks backfills, kept in the workspace every launcher shares.

**Where.** One file per backfill, ``/Shared/dbxdec/claims/job-<job_id>/<backfill id>.json``
(``$DBXDEC_CLAIMS_DIR`` replaces ``/Shared/dbxdec/claims``). ``/Shared`` is writable by
every workspace user by default, and the folder depends only on the job id, so everyone
launching against a job -- from any checkout or machine -- looks in the same place. (Not
next to the bundle's deployment state: that folder belongs to whoever deployed, often a
service principal, and people who may run the job often cannot write there.) A user who
cannot write the folder gets one line naming it and the variable (exit 4).

**Taking a claim.** The launcher writes its own file with ``workspace/import`` and
``overwrite: false``, so one backfill id is claimed once (a ``--resume`` of the same id
from a second terminal is refused). Then it lists the job's folder and reads every other
claim: one that is live and overlaps its keys makes it withdraw (delete its file) and
refuse. Because everyone writes before reading, two launchers starting at once with
overlapping keys can both withdraw, but never both run. Backfills of one job over
**disjoint keys run side by side**. Last, the job's active runs are listed: a run whose
``backfill_key`` (or ``backfill_start_key``..``backfill_key`` range) overlaps the keys and
that this backfill did not launch was started by someone else, and refuses too (a run of
a slice whose submission reply was lost is known only by its keys and counts as ours).

**Renewal and expiry.** A claim lasts :data:`CLAIM_TTL` (5 minutes) from its last
renewal; a thread renews it every :data:`RENEW_EVERY` (60 s) after checking the file is
still this launcher's, and the launcher deletes it when the backfill ends. A launcher
that finds its own claim expired (it was stalled) does not renew it: someone may have
taken the keys over meanwhile. One that expired in an outage (renewals went unanswered)
is taken again once the file is still this launcher's (a takeover deletes it). A launcher
that dies (SIGKILL, a lost laptop) leaves a claim that expires; ``--force`` takes an
expired claim over (and is refused, on its own line, on a live one). A claim written on
this machine by a process that no longer exists is known stale at once: ``--resume`` of
that backfill takes it over without ``--force``. If a renewal finds the claim taken
over, the launcher stops: it launches nothing more, says so, and exits 7.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import UsageError, WorkspaceRejected
from ..ledger.ledger import Ledger
from ..workspace.workspace import classify, workspace_errors
from .claim_checks import foreign_runs_message, refusal
from .claims import ClaimLost, ClaimRecord, claimed_keys, this_host, this_user, when

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.errors import PermissionDenied

    from ...backfill.base import BackfillDef

CLAIMS_DIR = "/Shared/dbxdec/claims"
CLAIMS_DIR_ENV = "DBXDEC_CLAIMS_DIR"
CLAIM_TTL = 300.0
RENEW_EVERY = 60.0


def claims_folder(job_id: int, root: str | None = None) -> str:
    """The workspace folder of job ``job_id``'s claims."""
    base = (root or os.environ.get(CLAIMS_DIR_ENV) or CLAIMS_DIR).rstrip("/")
    return f"{base}/job-{job_id}"


class WorkspaceClaims:
    """The claim of one Databricks backfill (a :class:`~.claims.BackfillGuard`).

    Args:
        client: The workspace the job lives in.
        job: The dbxdec job name; ``job_id`` the deployed job.
        backfill: The job's backfill definition, to read the keys of ranged runs
            (without it a range covers the keys that sort between its ends).
        force: Take over claims that expired (``--force``).
        root: The claims folder root (default ``$DBXDEC_CLAIMS_DIR`` or
            :data:`CLAIMS_DIR`).
        ttl: Seconds a claim lasts after its last renewal.
        renew_every: Seconds between renewals while the backfill runs.
        clock: The wall clock (epoch seconds); tests pass their own.
        host: Who holds it, as recorded (default: this machine; a controller: its run).
    """

    def __init__(
        self,
        client: WorkspaceClient,
        *,
        job: str,
        job_id: int,
        backfill: BackfillDef | None = None,
        force: bool = False,
        root: str | None = None,
        ttl: float = CLAIM_TTL,
        renew_every: float = RENEW_EVERY,
        clock: Callable[[], float] = time.time,
        host: str | None = None,
    ) -> None:
        self.client, self.host = client, host or this_host()
        self.job = job
        self.job_id = job_id
        self.backfill = backfill
        self.force = force
        self.folder = claims_folder(job_id, root)
        self.ttl = ttl
        self.renew_every = renew_every
        self.clock = clock
        self.record: ClaimRecord | None = None
        self.lost: str | None = None
        self.unreached_since: float | None = None  # first renewal of an outage (clock)
        self._user: str | None = None

    def path(self, backfill_id: str) -> str:
        return f"{self.folder}/{backfill_id}.json"

    # -- the guard ---------------------------------------------------------------------

    @contextmanager
    def hold(self, ledger: Ledger, on_lost: ClaimLost) -> Iterator[None]:
        """Claim ``ledger``'s keys for the block, renewing the claim in a thread."""
        self.acquire(ledger)
        stop = threading.Event()
        renewer = threading.Thread(
            target=self._renew_until, args=(stop, on_lost), name="dbxdec-claim", daemon=True
        )
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join(timeout=30)
            self.release()

    def acquire(self, ledger: Ledger) -> ClaimRecord:
        """Write this backfill's claim; withdraw it and refuse on any overlap.

        Raises:
            UsageError: another backfill holds some of the keys, or a run not launched
                by this backfill is running one of them; the folder cannot be written.
            WorkspaceRejected: the credentials were refused (exit 4).
            WorkspaceUnreachable: the workspace did not answer (exit 5).
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
            expires_at=now + self.ttl,
            keys=claimed_keys(ledger),
            claim_id=secrets.token_hex(8),
        )
        with workspace_errors(self.client.config.host):  # unreachable: one line, exit 5
            self._mkdirs()
            self._create(record)
            self.record = record
            try:
                self._refuse_overlaps(record, ledger)
            except BaseException:
                self.release()
                raise
        return record

    def renew(self) -> bool:
        """Extend the claim by ``ttl`` if it is still this launcher's.

        Returns:
            ``False`` when the claim was taken over or deleted (:attr:`lost` says how);
            ``True`` otherwise, a renewal that failed on the network included (the
            next one tries again, long before the claim expires).
        """
        record = self.record
        if record is None:
            return False
        now = self.clock()
        expired = record.expires_at is not None and now >= record.expires_at
        if expired and not self._expired_in_outage(record):
            self.lost = (  # anyone may have taken it over meanwhile, with --force
                f"the claim of backfill {record.backfill_id} on job {self.job!r} expired at "
                f"{when(record.expires_at or now)} before it was renewed (was this launcher "
                "stalled?); launching no more runs"
            )
            return False
        try:
            current = self._read(self.path(record.backfill_id))
            if current is None:  # a --force deletes it: who holds the keys now?
                current = next((c for c in self._claims() if c.overlap(record.keys)), None)
            if current is None or current.claim_id != record.claim_id:
                self.lost = (
                    f"the claim of backfill {record.backfill_id} on job {self.job!r} was "
                    + ("deleted" if current is None else f"taken over by {current.who}")
                    + "; launching no more runs"
                )
                return False
            renewed = replace(record, renewed_at=now, expires_at=now + self.ttl)
            self._write(renewed, overwrite=True)
            self.record = renewed
            if expired and not self._retaken(record, now):
                return False
        except (OSError, WorkspaceRejected) as exc:  # DatabricksError is an OSError
            if self.unreached_since is None and _unanswered(exc):  # the SDK retried already
                self.unreached_since = now
            return True  # try again at the next renewal
        self.unreached_since = None
        return True

    def _expired_in_outage(self, record: ClaimRecord) -> bool:
        """Whether the claim expired while renewals found the workspace unreachable
        (one before the expiry, none answered since), rather than because this
        launcher stalled."""
        since = self.unreached_since
        return since is not None and record.expires_at is not None and since < record.expires_at

    def _retaken(self, record: ClaimRecord, now: float) -> bool:
        """After renewing a claim that expired in an outage: ``False`` (and :attr:`lost`)
        if a live claim of another launcher overlaps it.

        The file was still this launcher's, and whoever takes an expired claim over
        deletes it (``--force``), so nobody had. But one may be doing so right now: it
        writes its own claim *before* reading (and deleting) this one, and this launcher
        rewrote its claim before this listing; so either the listing shows the other
        claim, or the other launcher reads this renewed, live claim and is refused.
        """
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
        """Delete the claim if it is still this launcher's (best effort: an unreleased
        claim expires by itself)."""
        record, self.record = self.record, None
        if record is None:
            return
        path = self.path(record.backfill_id)
        try:
            current = self._read(path)
            if current is not None and current.claim_id == record.claim_id:
                self.client.workspace.delete(path)
        except OSError:  # an API or network error (DatabricksError is an OSError)
            pass

    # -- steps -------------------------------------------------------------------------

    def _renew_until(self, stop: threading.Event, on_lost: ClaimLost) -> None:
        while not stop.wait(self.renew_every):
            if not self.renew():
                on_lost(self.lost or "the backfill's claim was lost")
                return

    def _create(self, record: ClaimRecord) -> None:
        """Write ``record`` without overwrite. A stale claim of the same backfill (its
        launcher died on this machine, or it expired and ``--force`` was given) is
        deleted and written again, without overwrite, so that of two launchers taking
        it over at once only one succeeds."""
        from databricks.sdk.errors import ResourceAlreadyExists

        path = self.path(record.backfill_id)
        for _ in range(2):
            try:
                self._write(record, overwrite=False)
                return
            except ResourceAlreadyExists:
                existing = self._read(path)
            if existing is not None and existing.claim_id == record.claim_id:
                return  # our own write, whose reply was lost and the SDK retried
            now = self.clock()
            gone = existing is None or existing.launcher_gone()
            if existing is not None and not gone and not (self.force and existing.is_expired(now)):
                raise UsageError(refusal(existing, record.keys, self.job, now, self.force))
            self._delete_quietly(path)
        raise UsageError(
            f"could not claim backfill {record.backfill_id}: its claim {path} keeps "
            "reappearing (another launcher is taking it over); try again"
        )

    def _refuse_overlaps(self, record: ClaimRecord, ledger: Ledger) -> None:
        now = self.clock()
        others = [c for c in self._claims() if c.backfill_id != record.backfill_id]
        for other in sorted(others, key=lambda c: c.started_at):
            if not other.overlap(record.keys):
                continue
            if not (self.force and other.is_stale(now)):
                raise UsageError(refusal(other, record.keys, self.job, now, self.force))
            self._delete_quietly(self.path(other.backfill_id))  # --force: taken over
        message = foreign_runs_message(
            self.client, self.job, self.job_id, ledger, record.keys, self.backfill
        )
        if message:
            raise UsageError(message)

    # -- workspace I/O -----------------------------------------------------------------

    def _mkdirs(self) -> None:
        from databricks.sdk.errors import PermissionDenied, ResourceAlreadyExists

        try:
            self.client.workspace.mkdirs(self.folder)
        except PermissionDenied as exc:
            raise self._refused(exc) from None
        except ResourceAlreadyExists as exc:  # a file where a folder should be
            raise UsageError(
                f"cannot create the backfill claims folder {self.folder} in the workspace "
                f"({_first_line(exc)}): set {CLAIMS_DIR_ENV} to a folder everyone launching "
                f"job {self.job!r} can write"
            ) from None

    def _write(self, record: ClaimRecord, *, overwrite: bool) -> None:
        from databricks.sdk.errors import PermissionDenied
        from databricks.sdk.service.workspace import ImportFormat

        content = base64.b64encode(record.to_text().encode()).decode()
        try:
            self.client.workspace.import_(
                self.path(record.backfill_id),
                content=content,
                format=ImportFormat.AUTO,
                overwrite=overwrite,
            )
        except PermissionDenied as exc:
            raise self._refused(exc) from None

    def _refused(self, exc: PermissionDenied) -> WorkspaceRejected:
        return WorkspaceRejected(
            f"the workspace refused to let these credentials write the backfill claims "
            f"folder {self.folder} ({_first_line(exc)}): ask a workspace admin for CAN EDIT "
            f"on it, or set {CLAIMS_DIR_ENV} to a folder everyone launching job "
            f"{self.job!r} can write"
        )

    def _read(self, path: str) -> ClaimRecord | None:
        """The claim at ``path``; ``None`` when there is none (or it is not a claim)."""
        from databricks.sdk.errors import ResourceDoesNotExist
        from databricks.sdk.service.workspace import ExportFormat

        try:
            exported = self.client.workspace.export(path, format=ExportFormat.AUTO)
        except ResourceDoesNotExist:
            return None
        try:
            return ClaimRecord.from_text(base64.b64decode(exported.content or "").decode())
        except ValueError:
            return None

    def _claims(self) -> list[ClaimRecord]:
        from databricks.sdk.service.workspace import ObjectType

        found: list[ClaimRecord] = []
        for item in self.client.workspace.list(self.folder):
            if item.object_type == ObjectType.FILE and (item.path or "").endswith(".json"):
                claim = self._read(item.path or "")
                if claim is not None:
                    found.append(claim)
        return found

    def _delete_quietly(self, path: str) -> None:
        from databricks.sdk.errors import ResourceDoesNotExist

        with contextlib.suppress(ResourceDoesNotExist):  # someone else was first
            self.client.workspace.delete(path)

    def _user_name(self) -> str:
        if self._user is None:
            try:
                self._user = self.client.current_user.me().user_name or this_user()
            except OSError:  # an API or network error: the OS user will do
                self._user = this_user()
        return self._user


def _unanswered(exc: BaseException) -> bool:
    """Whether ``exc`` says the workspace did not answer (an outage), not that it refused."""
    found = classify(exc)
    return found is not None and found[0] == "unreachable"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
