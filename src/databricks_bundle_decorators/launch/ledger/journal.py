"""The ledger of a detached backfill: an append-only journal of files in a
:class:`.place.Place`, ``/Shared/dbxdec/backfills/job-<job_id>/<backfill id>/`` (or
``$DBXDEC_JOURNAL_DIR``; workspace files: no catalog to set up, and ``import`` without
overwrite is a documented create-if-absent), and its steering requests.

- ``seg-<n:09d>.json``: what one save changed (header, changed slices, slice count);
- ``snap-<n:09d>.json``: the whole ledger as of segment n, every :data:`SNAPSHOT_EVERY`;
- ``control/<m:09d>-<op>.json``: ``pause``, ``unpause``, ``cancel``
  (``{"format": 1, "op", "by", "at"}``), created by the steering commands at one more
  than the highest ``m`` listed; the latest wins, and two ops at one ``m`` rank
  ``unpause`` < ``pause`` < ``cancel``, so a concurrent stop is never hidden.

A segment's number is a fencing token: a writer that finds its segment written by
someone else has lost the backfill (:class:`JournalLost`); a create whose reply never
came is sent again with the same bytes, and bytes found equal are its own. An object
over :data:`PART_BYTES` is written as parts ``<name>.<nonce>.p<k:03d>.json`` first, then
the object naming them (the commit point): the Workspace API refuses an import over
10 MB (SDK docstring of ``WorkspaceAPI.import_``: "The base64-encoded content. This has
a limit of 10 MB"). Every object carries ``"format": 1``.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ... import __version__
from ...backfill.wire.report import (
    JOURNAL_DIR_ENV,
    journal_folder_path,
    journals_root_path,
)
from ...errors import DbxdecError, LocalStateProblem, UsageError, WorkspaceUnreachable
from ..plan.states import BackfillState, ControlState
from .ledger import Ledger, ledger_jobs
from .place import Place, WorkspacePlace, answer_of, one_line, reading

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


FORMAT = 1
SNAPSHOT_EVERY = 50  # a snapshot follows every this many segments
PART_BYTES = 4_000_000  # the largest object written whole (base64: 5.3 MB, under 10 MB)
_SEGMENT = re.compile(r"seg-(\d{9})\.json")
_SNAPSHOT = re.compile(r"snap-(\d{9})\.json")
ControlOpName = Literal["pause", "unpause", "cancel"]
CONTROL = "control"
_RANK: Mapping[str, int] = {"unpause": 0, "pause": 1, "cancel": 2}
_STATE: Mapping[str, ControlState] = {
    "unpause": ControlState.RUNNING,
    "pause": ControlState.PAUSED,
    "cancel": ControlState.CANCELLED,
}
_NAME = re.compile(r"(\d{9})-(pause|unpause|cancel)\.json")
APPEND_TRIES = 10
RESENDS = 2


def journals_root(root: str | None = None) -> str:
    """The folder of every job's journals (``$DBXDEC_JOURNAL_DIR`` or its default;
    :class:`UsageError` when not an absolute workspace path)."""
    try:
        return journals_root_path(root)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def journal_folder(job_id: int, backfill_id: str, root: str | None = None) -> str:
    """The workspace folder of backfill ``backfill_id``'s journal on job ``job_id``.

    >>> journal_folder(7, "nightly-20240101T000000-ab12", root="/Shared/x")
    '/Shared/x/job-7/nightly-20240101T000000-ab12'

    Raises:
        UsageError: ``backfill_id`` is not a backfill id (it would reach a path).
    """
    try:
        return journal_folder_path(job_id, backfill_id, root)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def journal_place(
    client: WorkspaceClient, job_id: int, backfill_id: str, root: str | None = None
) -> WorkspacePlace:
    """Backfill ``backfill_id``'s journal folder in the workspace (:func:`journal_folder`)."""
    return WorkspacePlace(
        client,
        journal_folder(job_id, backfill_id, root),
        what="the journal folder",
        advice=f"or set {JOURNAL_DIR_ENV} to a folder they can write",
    )


def segment_name(seq: int) -> str:
    return f"seg-{seq:09d}.json"


def snapshot_name(seq: int) -> str:
    return f"snap-{seq:09d}.json"


def encode(document: Mapping[str, Any]) -> str:
    """The text of a journal object: ASCII, the same for the same document."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def encode_files(
    name: str, document: Mapping[str, Any], *, nonce: str, part_bytes: int = PART_BYTES
) -> list[tuple[str, str]]:
    """The files of the journal object ``name``: ``[(name, bytes)]``, or, past
    ``part_bytes``, its parts (slices) followed by the object that names them."""
    whole = encode(document)
    if len(whole) <= part_bytes:
        return [(name, whole)]
    slices = document["slices"]
    items = list(slices.items()) if isinstance(slices, dict) else list(slices)
    chunks: list[list[Any]] = [[]]
    size = 0
    for item in items:
        grows = len(encode({"s": item}))
        if chunks[-1] and size + grows > part_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += grows
    stem = name.removesuffix(".json")
    files = [
        (
            f"{stem}.{nonce}.p{k:03d}.json",
            encode({"format": FORMAT, "slices": dict(c) if isinstance(slices, dict) else c}),
        )
        for k, c in enumerate(chunks, start=1)
    ]
    empty: dict[str, Any] | list[Any] = {} if isinstance(slices, dict) else []
    head = {**document, "slices": empty, "parts": {"nonce": nonce, "count": len(chunks)}}
    return [*files, (name, encode(head))]


def check_format(document: Mapping[str, Any], backfill_id: str) -> None:
    """Refuse a journal object of another format than :data:`FORMAT` (or none) with a
    one-line :class:`LocalStateProblem`."""
    found = document.get("format")
    if found == FORMAT:
        return
    if not isinstance(found, int) or isinstance(found, bool):
        raise LocalStateProblem(
            f"the journal of backfill {backfill_id} has an object without a format: it is "
            "damaged or not a dbxdec journal"
        )
    wrote = document.get("dbxdec")
    use = f"dbxdec {wrote}" if isinstance(wrote, str) and wrote else "the dbxdec that wrote it"
    raise LocalStateProblem(
        f"journal format {found} of backfill {backfill_id} is not this dbxdec's ({FORMAT}): "
        f"use {use}"
    )


@dataclass
class JournalState:
    """A ledger as a journal builds it up: the header and slices of ``Ledger.to_json()``
    after segment :attr:`seq` (0: nothing yet)."""

    backfill_id: str
    header: dict[str, Any] = field(default_factory=dict)
    slices: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0

    @classmethod
    def from_snapshot(cls, backfill_id: str, document: Mapping[str, Any]) -> JournalState:
        check_format(document, backfill_id)
        header = {k: v for k, v in document.items() if k not in ("slices", "format", "seq")}
        header.pop("dbxdec", None)
        return cls(backfill_id, header, list(document["slices"]), int(document["seq"]))

    def apply(self, segment: Mapping[str, Any]) -> None:
        """Add the changes of ``segment``, which must be the next one
        (:class:`LocalStateProblem` otherwise, or for a slice left unwritten)."""
        check_format(segment, self.backfill_id)
        seq, count = int(segment["seq"]), int(segment["count"])
        if seq != self.seq + 1:
            raise self.damaged(f"segment {seq} follows segment {self.seq}")
        changes = {int(i): dict(body) for i, body in dict(segment["slices"]).items()}
        kept = min(len(self.slices), count)
        missing = next((i for i in range(kept, count) if i not in changes), None)
        if missing is not None:
            raise self.damaged(f"segment {seq} leaves slice {missing} unwritten")
        header = dict(segment["header"])
        # Checked first, changed in place after: costs what the segment holds, not the ledger.
        del self.slices[count:]
        self.slices.extend(changes[i] for i in range(kept, count))
        for index, body in changes.items():
            if 0 <= index < kept:
                self.slices[index] = body
        self.header = header
        self.seq = seq

    def to_json(self) -> dict[str, Any]:
        """The ledger as ``Ledger.to_json()`` gives it."""
        return {**self.header, "slices": list(self.slices)}

    def snapshot(self) -> dict[str, Any]:
        """The snapshot document of this state."""
        return {**self.to_json(), "format": FORMAT, "seq": self.seq, "dbxdec": __version__}

    def damaged(self, what: str) -> LocalStateProblem:
        return LocalStateProblem(
            f"the journal of backfill {self.backfill_id} is damaged ({what}), so it cannot "
            "be resumed: launch the keys that have no successful run yet with: dbxdec "
            f"catchup {self.backfill_id.rsplit('-', 2)[0]} --start KEY --end KEY"
        )


@dataclass(frozen=True, slots=True)
class JournalListing:
    """The numbers of the segments and snapshots in a journal folder."""

    segments: frozenset[int]
    snapshots: frozenset[int]

    @classmethod
    def of(cls, names: list[str]) -> JournalListing:
        segments = {int(m.group(1)) for n in names if (m := _SEGMENT.fullmatch(n))}
        snapshots = {int(m.group(1)) for n in names if (m := _SNAPSHOT.fullmatch(n))}
        return cls(frozenset(segments), frozenset(snapshots))

    @classmethod
    def read(cls, place: Place, backfill_id: str) -> JournalListing:
        """The listing of the journal in ``place`` (:class:`UsageError`: no segment)."""
        listing = cls.of(place.names())
        if not listing.segments:
            where = "in the workspace" if place.shared else "on this machine"
            raise UsageError(
                f"no journal of backfill {backfill_id} {where} ({place.folder}): check the "
                "id and the job (see: dbxdec backfills)"
            )
        return listing

    @property
    def last(self) -> int:
        return max(self.segments, default=0)

    @property
    def base(self) -> int:
        """The newest snapshot a reader starts from (0: none, start from segment 1)."""
        return max((n for n in self.snapshots if n <= self.last), default=0)


def read_state(
    place: Place, backfill_id: str, since: JournalState | None = None
) -> tuple[JournalState, int]:
    """The ledger the journal in ``place`` holds, and how many segments were read: one
    listing, the newest snapshot and the segments after it, or only those added since
    ``since`` (an earlier read's state, left as it was) when that is fewer reads.

    Raises:
        UsageError: there is no journal in ``place``.
        LocalStateProblem: another format, or a damaged journal.
        WorkspaceUnreachable, WorkspaceRejected: see :func:`.place.reading`.
    """
    with reading(place, f"the journal of backfill {backfill_id}"):
        listing = JournalListing.read(place, backfill_id)
        first = listing.base + 1
        if since is not None and listing.base <= since.seq + 1 <= listing.last + 1:
            state = JournalState(backfill_id, dict(since.header), list(since.slices), since.seq)
            first = since.seq + 1  # no more reads than from the snapshot
        elif listing.base:
            empty = JournalState(backfill_id)
            snapshot = _document(place, snapshot_name(listing.base), empty)
            state = JournalState.from_snapshot(backfill_id, snapshot)
        else:
            state = JournalState(backfill_id)
        for seq in range(first, listing.last + 1):
            state.apply(_document(place, segment_name(seq), state))
    return state, listing.last + 1 - first


def _document(place: Place, name: str, state: JournalState) -> dict[str, Any]:
    """The journal object ``name``, its parts (if any) read and joined."""
    document = _object(place, name, state)
    parts = document.get("parts")
    if parts is None:
        return document
    check_format(document, state.backfill_id)
    stem, slices = name.removesuffix(".json"), document["slices"]
    for k in range(1, int(parts["count"]) + 1):
        part = _object(place, f"{stem}.{parts['nonce']}.p{k:03d}.json", state)["slices"]
        slices = {**slices, **part} if isinstance(slices, dict) else [*slices, *part]
    return {**{k: v for k, v in document.items() if k != "parts"}, "slices": slices}


def _object(place: Place, name: str, state: JournalState) -> dict[str, Any]:
    content = place.read(name)
    if content is None:
        raise state.damaged(f"{name} is missing")
    try:
        document = json.loads(content)
    except ValueError:
        raise state.damaged(f"{name} is not JSON") from None
    if not isinstance(document, dict):
        raise state.damaged(f"{name} is not a JSON object")
    return document


@dataclass(frozen=True, slots=True)
class ControlOp:
    """One steering request: its number ``seq`` (the ``m`` of its name), what, by whom,
    when (epoch seconds)."""

    seq: int
    op: ControlOpName
    by: str
    at: float

    @property
    def name(self) -> str:
        return f"{self.seq:09d}-{self.op}.json"

    @property
    def order(self) -> tuple[int, int]:
        return self.seq, _RANK[self.op]


@dataclass(frozen=True, slots=True)
class JournalSummary:
    """One workspace journal, as ``dbxdec backfills`` lists it."""

    backfill_id: str
    job: str
    job_id: int
    state: BackfillState
    counts: Mapping[str, int]
    control: ControlState
    created_at: float
    folder: str
    jobs: tuple[str, ...]  # the named job first
    started_by: str = ""
    ledger: Ledger | None = field(default=None, repr=False, compare=False)  # as read

    @property
    def paused(self) -> bool:
        return self.control == "paused"

    @property
    def cancelled(self) -> bool:
        return self.control == "cancelled"


def current_control(ops: Sequence[ControlOp]) -> ControlState:
    """What the latest op asks for (``running`` when there is none)."""
    if not ops:
        return ControlState.RUNNING
    return _STATE[max(ops, key=lambda o: o.order).op]


def control_ops(
    client: WorkspaceClient,
    job_id: int,
    backfill_id: str,
    root: str | None = None,
    *,
    details: bool = True,
) -> list[ControlOp]:
    """:func:`read_controls` of the backfill's journal in the workspace."""
    return read_controls(journal_place(client, job_id, backfill_id, root), details=details)


def read_controls(journal: Place, *, details: bool = True) -> list[ControlOp]:
    """The steering requests beside the journal in ``journal``, oldest first
    (``details=False``: names only, enough for :func:`current_control`).

    Raises:
        LocalStateProblem: a request of another format.
        WorkspaceUnreachable, WorkspaceRejected: no answer, or refused.
    """
    backfill_id, control = _backfill_id(journal), journal.child(CONTROL)
    ops: list[ControlOp] = []
    with reading(journal, f"the steering requests of backfill {backfill_id}"):
        for name in control.names():
            match = _NAME.fullmatch(name)
            if match is None:
                continue
            seq, op = int(match.group(1)), match.group(2)
            document = _request(control.read(name)) if details else None
            if document is not None:
                check_format(document, backfill_id)
            by, at = (document or {}).get("by"), (document or {}).get("at")
            ops.append(
                ControlOp(
                    seq,
                    op,  # type: ignore[arg-type]  # the pattern admits only the three ops
                    str(by) if by else "?",
                    float(at) if isinstance(at, int | float) else 0.0,
                )
            )
    return sorted(ops, key=lambda o: o.order)


def append_control(
    client: WorkspaceClient,
    job_id: int,
    backfill_id: str,
    op: str,
    *,
    by: str,
    root: str | None = None,
    at: float | None = None,
) -> ControlOp:
    """:func:`append_to` the backfill's journal in the workspace."""
    return append_to(journal_place(client, job_id, backfill_id, root), op, by=by, at=at)


def append_to(journal: Place, op: str, *, by: str, at: float | None = None) -> ControlOp:
    """Append the steering request ``op`` beside the journal in ``journal``.

    Raises:
        UsageError: ``op`` is not one of the three, or there is no journal.
        WorkspaceUnreachable, WorkspaceRejected: no answer, or refused.
    """
    if op not in get_args(ControlOpName):
        raise UsageError(f"{op!r} is not a steering request: use pause, unpause or cancel")
    backfill_id, control = _backfill_id(journal), journal.child(CONTROL)
    request: dict[str, object] = {"format": FORMAT, "op": op, "by": by}
    request["at"] = time.time() if at is None else at
    with reading(journal, f"the steering requests of backfill {backfill_id}"):
        JournalListing.read(journal, backfill_id)
        control.make()
        taken = [int(m.group(1)) for n in control.names() if (m := _NAME.fullmatch(n))]
        seq = max(taken, default=0) + 1
        for _ in range(APPEND_TRIES):
            made = ControlOp(seq, op, by, float(request["at"]))  # type: ignore[arg-type]
            if control.create(made.name, json.dumps(request)):
                return made
            seq += 1  # another request took this number meanwhile
    raise LocalStateProblem(
        f"could not append {op} to backfill {backfill_id}: {APPEND_TRIES} numbers in a row "
        "were taken meanwhile; try again"
    )


def list_journals(
    client: WorkspaceClient, job_ids: Mapping[str, int], root: str | None = None
) -> list[JournalSummary]:
    """Every readable journal of the jobs ``job_ids`` (name -> job id), newest first (a
    damaged one is left out).

    Raises:
        WorkspaceUnreachable, WorkspaceRejected: no answer, or refused.
    """
    found: list[JournalSummary] = []
    for name, job_id in job_ids.items():
        jobs = WorkspacePlace(
            client,
            f"{journals_root(root)}/job-{int(job_id)}",
            what="the journals folder",
            advice=f"or set {JOURNAL_DIR_ENV} to a folder they can write",
        )
        with reading(jobs, f"the journals of job {name!r}"):
            ids = jobs.names()
        for backfill_id in ids:
            try:
                journal = journal_place(client, job_id, backfill_id, root)
                state, _ = read_state(journal, backfill_id)
                with reading(journal, f"the journal of backfill {backfill_id}"):
                    ledger = Ledger.from_json(Path(journal.folder), state.to_json())
                ops = read_controls(journal)
            except (UsageError, LocalStateProblem):
                continue
            found.append(
                JournalSummary(
                    backfill_id=ledger.id,
                    job=ledger.job,
                    job_id=int(job_id),
                    state=ledger.state,
                    counts=ledger.counts(),
                    control=current_control(ops),
                    created_at=ledger.created_at,
                    folder=journal.folder,
                    jobs=tuple(ledger_jobs(ledger)),
                    started_by=ledger.started_by,
                    ledger=ledger,
                )
            )
    return sorted(found, key=lambda s: s.created_at, reverse=True)


def _backfill_id(journal: Place) -> str:
    return journal.folder.rsplit("/", 1)[-1]


def _request(content: str | None) -> dict[str, object] | None:
    try:
        document = json.loads(content or "")
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


"""How many times a segment whose create went unanswered is sent again within one save."""


class JournalLost(LocalStateProblem):
    """Another writer created the segment this one was to write: it has lost the backfill
    and must launch nothing more."""

    def __init__(self, backfill_id: str, seq: int, writer: str) -> None:
        self.backfill_id, self.seq, self.writer = backfill_id, seq, writer
        super().__init__(
            f"backfill {backfill_id}: journal segment {seq} was written by {writer}; this "
            "controller stops"
        )


class JournalUnreachable(WorkspaceUnreachable, LocalStateProblem):
    """A segment's create went unanswered, sent again, and still unanswered (kept: the next
    save sends the same bytes first). An outage (exit 5) that ``except LocalStateProblem``
    around a save catches too."""

    exit_code = WorkspaceUnreachable.exit_code


class JournalStore:
    """Writes a ledger's saves as journal segments (a :class:`.ledger.SliceStore`).

    Args:
        place: The journal's folder, which must exist.
        writer: Who writes, unique to this process (``controller:<run id>:<attempt>``),
            in every segment: an equal segment read back is this writer's own.
        next_seq: The number of the next segment (1 for a new journal).
        base: The ledger as of segment ``next_seq - 1``, if the caller read it.
        resends: How often an unanswered create is sent again within one save.
        part_bytes: Objects larger than this are written in parts.
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
        """Create the next segment with ``header``, the ``changed`` slices below ``count``
        and ``count``; then the snapshot, if one is due.

        Raises:
            JournalLost: another writer created the segment (then every later write too).
            JournalUnreachable: no answer; the next write sends the segment again first.
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
        """Write the snapshot as of the last segment written; whether it is in the journal
        now (best effort: a missing one costs a reader more reads)."""
        seq = self._next - 1
        if seq < 1:
            return False
        try:
            if self._state is None or self._state.seq != seq:
                self._state, _ = read_state(self.place, self.backfill_id)
            if self._state.seq != seq:
                return False  # the journal moved on: this writer is about to learn it lost
            for name, content in self._files(snapshot_name(seq), self._state.snapshot()):
                # one already there is equal: a function of the segments up to it
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
    segment 1 with every slice; ``ledger``'s saves now write segments.

    Raises:
        UsageError: the backfill already has a journal (segment 1 exists).
        WorkspaceUnreachable, WorkspaceRejected, LocalStateProblem: no answer or refused.
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
    """The ledger of a journal, to go on writing it (one ``list``, the newest snapshot and
    the segments after it); a snapshot is written when ``snapshot_every`` or more segments
    had to be read.

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
    """The ledger of a journal, read-only (saving raises ``LocalStateProblem``); raises
    as :func:`open_journal`."""
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
        """The ledger as of the journal's last segment, read-only (raises as
        :func:`read_journal`)."""
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
