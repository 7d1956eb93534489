"""The ledger of a detached backfill: an append-only journal of workspace files.

**Where.** ``/Shared/dbxdec/backfills/job-<job_id>/<backfill id>/`` (``$DBXDEC_JOURNAL_DIR``
replaces ``/Shared/dbxdec/backfills``): :func:`journal_folder`. Workspace files through the
Workspace API rather than a Unity Catalog volume: they need no catalog or volume set up,
the backfill claims already live there (:mod:`..guard.workspace_claims`), and ``import``
with ``overwrite: false`` is a documented create-if-absent (``RESOURCE_ALREADY_EXISTS``),
which the fencing below needs.

**What.** Each :meth:`Ledger.save` of a journal-bound ledger creates the next segment,
``seg-<n:09d>.json``, with what the save changed (header, changed slices, slice count);
segment 1 holds every slice. Every :data:`SNAPSHOT_EVERY` segments its writer adds
``snap-<n:09d>.json``, the whole ledger, so a reader needs one ``list``, one snapshot and
fewer than :data:`SNAPSHOT_EVERY` segments (:mod:`.journal_read`). Nothing secret is in
either: the header holds the backend's host, profile and job id, never a credential.

**Fencing.** A segment is created without overwrite, so its number is a fencing token:
a writer that finds ``seg-<n>`` already written by someone else has lost the backfill
(:class:`JournalLost`) and must stop launching. A create whose reply never came (a
dropped connection, 503 until the SDK gave up) is not a lost race: the same bytes are
sent again, and ``RESOURCE_ALREADY_EXISTS`` then leads to reading the segment back --
equal bytes are our own earlier create (go on), other bytes another writer's.

Pause, unpause and cancel requests live beside the segments (:mod:`.journal_control`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...errors import DbxdecError, LocalStateProblem, WorkspaceUnreachable
from .journal_control import (
    ControlOp,
    ControlState,
    JournalSummary,
    append_control,
    control_ops,
    current_control,
    list_journals,
)
from .journal_read import (
    FORMAT,
    JOURNAL_DIR,
    JOURNAL_DIR_ENV,
    SNAPSHOT_EVERY,
    JournalState,
    answer_of,
    create_file,
    encode,
    export_bytes,
    journal_folder,
    read_state,
    reading,
    segment_name,
    snapshot_name,
    workspace_problem,
)
from .ledger import Ledger

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = [
    "FORMAT",
    "JOURNAL_DIR",
    "JOURNAL_DIR_ENV",
    "SNAPSHOT_EVERY",
    "ControlOp",
    "ControlState",
    "JournalLost",
    "JournalStore",
    "JournalSummary",
    "JournalUnreachable",
    "append_control",
    "control_ops",
    "create_journal",
    "current_control",
    "journal_folder",
    "list_journals",
    "open_journal",
    "read_journal",
]

RESENDS = 2
"""How many times a segment whose create went unanswered is sent again within one save."""


class JournalLost(LocalStateProblem):
    """Another writer created the segment this one was to write: it has lost the backfill
    and must launch nothing more (runs in flight are left to the journal's new writer)."""

    def __init__(self, backfill_id: str, seq: int, writer: str) -> None:
        self.backfill_id, self.seq, self.writer = backfill_id, seq, writer
        super().__init__(
            f"backfill {backfill_id}: journal segment {seq} was written by {writer}; this "
            "controller stops"
        )


class JournalUnreachable(WorkspaceUnreachable):
    """A segment's create went unanswered, sent again, and still unanswered. The segment
    is kept: the next save sends the same bytes first, so nothing is written twice."""


class JournalStore:
    """Writes a ledger's saves as journal segments; the journal twin of
    :class:`.ledger_store.LedgerStore` (same :meth:`write` and :meth:`close`).

    Args:
        client: The workspace of the journal.
        folder: The journal's folder (:func:`journal_folder`), which must exist.
        writer: Who writes, unique to this process (``controller:<run id>:<attempt>``): it
            is in every segment, so an equal segment read back is this writer's own.
        next_seq: The number of the next segment (1 for a new journal).
        snapshot_every: A snapshot follows every this many segments.
        base: The ledger as of segment ``next_seq - 1``, if the caller read it (else it
            is read from the journal when the first snapshot is due).
        resends: How often an unanswered create is sent again within one save.
    """

    def __init__(
        self,
        client: WorkspaceClient,
        folder: str,
        *,
        writer: str,
        next_seq: int,
        snapshot_every: int = SNAPSHOT_EVERY,
        base: JournalState | None = None,
        resends: int = RESENDS,
    ) -> None:
        if next_seq < 1 or snapshot_every < 1:
            raise ValueError("next_seq and snapshot_every must be positive")
        self.client = client
        self.folder = folder.rstrip("/")
        self.writer = writer
        self.snapshot_every = snapshot_every
        self.resends = resends
        self.path = Path(self.folder)
        """Where the ledger lives (what ``Ledger.path`` shows)."""
        self.legacy = None  # as LedgerStore: no older file to migrate
        self.backfill_id = self.folder.rsplit("/", 1)[-1]
        self.lost: JournalLost | None = None
        self._next = next_seq
        if base is None and next_seq == 1:
            base = JournalState(self.backfill_id)  # a new journal: nothing to read
        self._state = base  # None: read when the first snapshot is due
        self._pending: tuple[int, bytes, dict[str, Any]] | None = None
        self._lock = threading.Lock()

    @property
    def next_seq(self) -> int:
        """The number of the segment the next write creates."""
        return self._next

    def write(
        self, header: dict[str, Any], changed: Iterable[tuple[int, dict[str, Any]]], count: int
    ) -> None:
        """Create the next segment with ``header``, the ``changed`` slices (index, JSON
        object) below ``count`` and ``count``; then the snapshot, if one is due.

        Raises:
            JournalLost: another writer created the segment (then every later write too).
            JournalUnreachable: the workspace did not answer; the segment is sent again
                first by the next write.
            WorkspaceRejected, LocalStateProblem: the workspace refused the write.
        """
        with self._lock:
            if self.lost is not None:
                raise self.lost
            if self._pending is not None:
                self._land(*self._pending)
            seq = self._next
            segment = {
                "format": FORMAT,
                "seq": seq,
                "writer": self.writer,
                "header": header,
                "slices": {str(i): body for i, body in changed if 0 <= i < count},
                "count": count,
                "dbxdec": __version__,
            }
            self._pending = (seq, encode(segment), segment)
            self._land(*self._pending)
            if seq % self.snapshot_every == 0:
                self.write_snapshot()

    def close(self) -> None:
        """Nothing to close: every write is a request of its own."""

    def _land(self, seq: int, content: bytes, segment: dict[str, Any]) -> None:
        self._create(seq, content)
        self._pending = None
        self._next = seq + 1
        if self._state is not None:
            self._state.apply(segment)

    def _create(self, seq: int, content: bytes) -> None:
        from databricks.sdk.errors import ResourceAlreadyExists

        path = f"{self.folder}/{segment_name(seq)}"
        last: BaseException | None = None
        for _ in range(1 + max(0, self.resends)):
            try:
                try:
                    create_file(self.client, path, content)
                    return
                except ResourceAlreadyExists:
                    existing = export_bytes(self.client, path)
                if existing == content:
                    return  # our own create, whose reply was lost
                self.lost = JournalLost(self.backfill_id, seq, _writer_of(existing))
                raise self.lost
            except DbxdecError:
                raise
            except Exception as exc:
                if answer_of(exc) != "unanswered":
                    raise workspace_problem(exc, self._host, f"journal segment {seq}") from None
                last = exc
        raise JournalUnreachable(
            f"cannot write journal segment {seq} of backfill {self.backfill_id}: the "
            f"workspace at {self._host} did not answer ({_line(last)}); the same segment is "
            "sent again at the next save"
        )

    def write_snapshot(self) -> bool:
        """Write the snapshot of the journal as of the last segment written (best effort:
        a missing snapshot costs a reader more reads, never the ledger).

        Returns:
            Whether the snapshot is in the journal now.
        """
        seq = self._next - 1
        if seq < 1:
            return False
        try:
            if self._state is None or self._state.seq != seq:
                self._state, _ = read_state(self.client, self.folder, self.backfill_id)
            if self._state.seq != seq:
                return False  # the journal moved on: this writer is about to learn it lost
            create_file(
                self.client, f"{self.folder}/{snapshot_name(seq)}", encode(self._state.snapshot())
            )
        except DbxdecError:
            return False
        except Exception as exc:
            from databricks.sdk.errors import ResourceAlreadyExists

            # A snapshot is a function of the segments up to it: one already there is equal.
            return isinstance(exc, ResourceAlreadyExists)
        return True

    @property
    def _host(self) -> str:
        return str(self.client.config.host or "")


def create_journal(
    client: WorkspaceClient, ledger: Ledger, *, job_id: int, writer: str, root: str | None = None
) -> Ledger:
    """Start the journal of ``ledger`` (a new backfill): create its folder and write
    segment 1 with every slice.

    Returns:
        ``ledger``, whose saves now write segments (the next is 2).

    Raises:
        JournalLost: the backfill already has a journal (segment 1 exists).
        WorkspaceUnreachable, WorkspaceRejected, LocalStateProblem: the workspace did not
            answer or refused.
    """
    folder = journal_folder(job_id, ledger.id, root)
    with reading(client, f"the journal folder {folder}"):
        client.workspace.mkdirs(folder)
    ledger.bind(JournalStore(client, folder, writer=writer, next_seq=1))
    ledger.save()
    return ledger


def open_journal(
    client: WorkspaceClient,
    job_id: int,
    backfill_id: str,
    *,
    writer: str,
    root: str | None = None,
    snapshot_every: int = SNAPSHOT_EVERY,
) -> Ledger:
    """The ledger of a journal, to go on writing it: read with one ``list``, the newest
    snapshot and the segments after it; its saves write the following segments. When
    ``snapshot_every`` or more segments had to be read (a writer died before its
    snapshot), a snapshot of the last one is written for the next reader.

    Raises:
        UsageError: there is no such journal.
        LocalStateProblem: a journal of another format, or a damaged one.
        WorkspaceUnreachable, WorkspaceRejected: the workspace did not answer or refused.
    """
    folder = journal_folder(job_id, backfill_id, root)
    state, read = read_state(client, folder, backfill_id)
    store = JournalStore(
        client,
        folder,
        writer=writer,
        next_seq=state.seq + 1,
        snapshot_every=snapshot_every,
        base=state,
    )
    ledger = Ledger.from_json(store.path, state.to_json(), store=store)
    if read >= snapshot_every:
        store.write_snapshot()
    return ledger


def read_journal(
    client: WorkspaceClient, job_id: int, backfill_id: str, root: str | None = None
) -> Ledger:
    """The ledger of a journal, read-only (for ``status`` and ``watch``): one ``list``,
    the newest snapshot and the segments after it. Saving it raises ``LocalStateProblem``.

    Raises:
        UsageError, LocalStateProblem, WorkspaceUnreachable, WorkspaceRejected: as
            :func:`open_journal`.
    """
    folder = journal_folder(job_id, backfill_id, root)
    state, _ = read_state(client, folder, backfill_id)
    return Ledger.from_json(Path(folder), state.to_json(), store=_ReadOnly(folder))


class _ReadOnly:
    """The store of a journal read for viewing: it refuses to write."""

    def __init__(self, folder: str) -> None:
        self.path = Path(folder)
        self.legacy = None

    def write(
        self, header: dict[str, Any], changed: Iterable[tuple[int, dict[str, Any]]], count: int
    ) -> None:
        raise LocalStateProblem(
            f"the journal {self.path} was read for viewing; open it with open_journal to write"
        )

    def close(self) -> None:
        pass


def _writer_of(content: bytes | None) -> str:
    import json

    try:
        writer = json.loads(content or b"")["writer"]
    except (ValueError, KeyError, TypeError):
        return "another writer"
    return str(writer) if writer else "another writer"


def _line(exc: BaseException | None) -> str:
    return " ".join(str(exc).split())[:160] if exc is not None else "no answer"
