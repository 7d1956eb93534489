"""The ledger of a detached backfill: an append-only journal of files in a
:class:`.place.Place` (a workspace folder; the same code runs on a local one).

**Where.** ``/Shared/dbxdec/backfills/job-<job_id>/<backfill id>/`` (``$DBXDEC_JOURNAL_DIR``
replaces ``/Shared/dbxdec/backfills``): :func:`journal_folder`. Workspace files through the
Workspace API rather than a Unity Catalog volume: they need no catalog or volume set up,
the backfill claims already live there (:mod:`.lease`), and ``import``
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

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import LocalStateProblem, UsageError
from ..plan.states import ControlState
from .journal_control import (
    ControlOp,
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
    PART_BYTES,
    SNAPSHOT_EVERY,
    JournalState,
    journal_folder,
    journal_place,
    read_state,
)
from .journal_store import JournalLost, JournalStore, JournalUnreachable
from .ledger import Ledger
from .place import reading

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = [
    "FORMAT",
    "JOURNAL_DIR",
    "JOURNAL_DIR_ENV",
    "PART_BYTES",
    "SNAPSHOT_EVERY",
    "ControlOp",
    "ControlState",
    "JournalFollower",
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


def create_journal(
    client: WorkspaceClient,
    ledger: Ledger,
    *,
    job_id: int,
    writer: str,
    root: str | None = None,
    snapshot_every: int = SNAPSHOT_EVERY,
) -> Ledger:
    """Start the journal of ``ledger`` (a new backfill): create its folder and write
    segment 1 with every slice.

    Returns:
        ``ledger``, whose saves now write segments (the next is 2).

    Raises:
        UsageError: the backfill already has a journal (segment 1 exists).
        WorkspaceUnreachable, WorkspaceRejected, LocalStateProblem: the workspace did not
            answer or refused.
    """
    place = journal_place(client, job_id, ledger.id, root)
    with reading(place, f"the journal folder {place.folder}"):
        place.make()
    ledger.bind(JournalStore(place, writer=writer, next_seq=1, snapshot_every=snapshot_every))
    try:
        ledger.save()
    except JournalLost:
        raise UsageError(
            f"backfill {ledger.id} already has a journal in the workspace ({place.folder}): "
            f"follow it with: dbxdec backfill watch {ledger.id}"
        ) from None
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
    place = journal_place(client, job_id, backfill_id, root)
    state, read = read_state(place, backfill_id)
    store = JournalStore(
        place, writer=writer, next_seq=state.seq + 1, snapshot_every=snapshot_every, base=state
    )
    with reading(place, f"the journal of backfill {backfill_id}"):  # a damaged header
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
    return JournalFollower(client, job_id, backfill_id, root).read()


class JournalFollower:
    """Reads one journal again and again (``watch``): the first :meth:`read` as
    :func:`read_journal`, each later one a ``list`` and the segments added since."""

    def __init__(
        self, client: WorkspaceClient, job_id: int, backfill_id: str, root: str | None = None
    ) -> None:
        self.place = journal_place(client, job_id, backfill_id, root)
        self.backfill_id = backfill_id
        self._state: JournalState | None = None

    @property
    def seq(self) -> int:
        """The last segment read (0: none yet)."""
        return self._state.seq if self._state is not None else 0

    def read(self) -> Ledger:
        """The ledger as of the journal's last segment, read-only.

        Raises:
            UsageError, LocalStateProblem, WorkspaceUnreachable, WorkspaceRejected: as
                :func:`read_journal`.
        """
        self._state, _ = read_state(self.place, self.backfill_id, self._state)
        folder = self.place.folder
        with reading(self.place, f"the journal of backfill {self.backfill_id}"):
            return Ledger.from_json(Path(folder), self._state.to_json(), store=_ReadOnly(folder))


class _ReadOnly:
    """The store of a journal read for viewing: it refuses to write."""

    def __init__(self, folder: str) -> None:
        self.path = Path(folder)

    def write(
        self, header: dict[str, Any], changed: Iterable[tuple[int, dict[str, Any]]], count: int
    ) -> None:
        raise LocalStateProblem(
            f"the journal {self.path} was read for viewing; open it with open_journal to write"
        )

    def close(self) -> None:
        pass
