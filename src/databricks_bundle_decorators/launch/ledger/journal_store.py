"""Writing a journal: each save of a journal-bound ledger becomes the next segment,
created if absent in a :class:`.place.Place` (see :mod:`.journal` for the design). A
writer that finds the segment written by someone else has lost the backfill
(:class:`JournalLost`); a create whose reply never came is sent again with the same
bytes, and bytes found equal are its own earlier create (:class:`JournalUnreachable`
while the workspace does not answer).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ... import __version__
from ...errors import DbxdecError, LocalStateProblem, WorkspaceUnreachable
from .journal_read import (
    FORMAT,
    PART_BYTES,
    SNAPSHOT_EVERY,
    JournalState,
    encode_files,
    read_state,
    segment_name,
    snapshot_name,
)
from .local_state import one_line
from .place import Place, answer_of

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


class JournalUnreachable(WorkspaceUnreachable, LocalStateProblem):
    """A segment's create went unanswered, sent again, and still unanswered. The segment
    is kept: the next save sends the same bytes first, so nothing is written twice.

    An outage (exit 5), and also a ledger that could not be saved: ``except
    LocalStateProblem`` around a save catches it, as it catches a full disk for the
    SQLite ledger; never a lost race (:class:`JournalLost`).
    """

    exit_code = WorkspaceUnreachable.exit_code


class JournalStore:
    """Writes a ledger's saves as journal segments; the journal twin of
    :class:`.ledger_store.LedgerStore` (same :meth:`write` and :meth:`close`).

    Args:
        place: The journal's folder (:func:`.journal_read.journal_place`), which must exist.
        writer: Who writes, unique to this process (``controller:<run id>:<attempt>``): it
            is in every segment, so an equal segment read back is this writer's own.
        next_seq: The number of the next segment (1 for a new journal).
        snapshot_every: A snapshot follows every this many segments.
        base: The ledger as of segment ``next_seq - 1``, if the caller read it (else it
            is read from the journal when the first snapshot is due).
        resends: How often an unanswered create is sent again within one save.
        part_bytes: Objects larger than this are written in parts (:mod:`.journal_read`).
    """

    def __init__(
        self,
        place: Place,
        *,
        writer: str,
        next_seq: int,
        snapshot_every: int = SNAPSHOT_EVERY,
        base: JournalState | None = None,
        resends: int = RESENDS,
        part_bytes: int = PART_BYTES,
    ) -> None:
        if next_seq < 1 or snapshot_every < 1:
            raise ValueError("next_seq and snapshot_every must be positive")
        self.place = place
        self.folder = place.folder
        self.writer = writer
        self.snapshot_every = snapshot_every
        self.resends = resends
        self.part_bytes = part_bytes
        self.path = Path(self.folder)
        """Where the ledger lives (what ``Ledger.path`` shows)."""
        self.backfill_id = self.folder.rsplit("/", 1)[-1]
        self.lost: JournalLost | None = None
        self._next = next_seq
        if base is None and next_seq == 1:
            base = JournalState(self.backfill_id)  # a new journal: nothing to read
        self._state = base  # None: read when the first snapshot is due
        self._pending: tuple[int, list[tuple[str, str]], dict[str, Any]] | None = None
        self._snapshot_missed = False
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
            files = self._files(segment_name(seq), segment)
            self._pending = (seq, files, segment)
            self._land(*self._pending)
            if seq % self.snapshot_every == 0 or self._snapshot_missed:
                self._snapshot_missed = not self.write_snapshot()  # else at the next write

    def close(self) -> None:
        """Nothing to close: every write is a request of its own."""

    def _files(self, name: str, document: dict[str, Any]) -> list[tuple[str, str]]:
        nonce = secrets.token_hex(4)  # parts of another writer's try never collide with ours
        return encode_files(name, document, nonce=nonce, part_bytes=self.part_bytes)

    def _land(self, seq: int, files: list[tuple[str, str]], segment: dict[str, Any]) -> None:
        self._create(seq, files)
        self._pending = None
        self._next = seq + 1
        if self._state is not None:
            try:
                self._state.apply(segment)
            except LocalStateProblem:  # the mirror went astray: read it when next needed
                self._state = None

    def _create(self, seq: int, files: list[tuple[str, str]]) -> None:
        """Create ``files`` in order (parts, then the segment: the commit point), each
        without overwrite; one already there with our bytes is our own unanswered create."""
        last: BaseException | None = None
        for _ in range(1 + max(0, self.resends)):
            try:
                for name, content in files:
                    existing = self._create_file(name, content)
                    if existing is None or existing == content:
                        continue  # created now, or by our own earlier try
                    if name != segment_name(seq):
                        raise LocalStateProblem(
                            f"the journal of backfill {self.backfill_id} is damaged: {name} "
                            "holds other bytes than this writer's"
                        )
                    self.lost = JournalLost(self.backfill_id, seq, _writer_of(existing))
                    raise self.lost
                return
            except DbxdecError:
                raise
            except Exception as exc:
                if answer_of(exc) != "unanswered":
                    raise self.place.problem(exc, f"journal segment {seq}") from None
                last = exc
        why = one_line(last) if last else "no answer"
        raise JournalUnreachable(
            f"cannot write journal segment {seq} of backfill {self.backfill_id}: "
            f"{self.place.where} did not answer ({why}); the same segment is sent again at "
            "the next save"
        )

    def _create_file(self, name: str, content: str) -> str | None:
        """Create ``name``; ``None`` when created, else the text already there."""
        return None if self.place.create(name, content) else self.place.read(name) or ""

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
                self._state, _ = read_state(self.place, self.backfill_id)
            if self._state.seq != seq:
                return False  # the journal moved on: this writer is about to learn it lost
            for name, content in self._files(snapshot_name(seq), self._state.snapshot()):
                # A snapshot is a function of the segments up to it: one already there is
                # equal (its parts may differ by nonce, never by the slices they hold).
                self._create_file(name, content)
        except Exception:  # an outage, a refusal: the next reader reads more segments
            return False
        return True


def _writer_of(content: str) -> str:
    try:
        writer = json.loads(content)["writer"]
    except (ValueError, KeyError, TypeError):
        return "another writer"
    return str(writer) if writer else "another writer"
