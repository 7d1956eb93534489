"""Reading a backfill's journal in the workspace: where it is, its file names and format,
and how its segments build the ledger up again (:mod:`.journal` writes it).

A journal is a folder of workspace files, ``<root>/job-<job_id>/<backfill id>/``:

- ``seg-<n:09d>.json``, n = 1, 2, ...: what one ledger save changed (the header, the
  slices that changed, the slice count); segment 1 holds every slice;
- ``snap-<n:09d>.json``: the whole ledger as of segment n (``Ledger.to_json()`` plus
  ``format`` and ``seq``), so a reader needs the newest snapshot and the segments after it;
- ``control/<m:09d>-<op>.json``: pause, unpause and cancel requests (:mod:`.journal_control`).

An object larger than :data:`PART_BYTES` (a first segment or snapshot of tens of
thousands of slices: about 530 bytes a slice once it has run) is written as parts first,
``<name>.<nonce>.p<k:03d>.json`` holding slices, then the object itself without those
slices and with ``"parts": {"nonce", "count"}``: the object is the commit point, so a
writer that dies midway leaves unreferenced parts, never half an object. The Workspace
API refuses an import over 10 MB (``MAX_NOTEBOOK_SIZE_EXCEEDED``; SDK docstring of
``WorkspaceAPI.import_``: "The base64-encoded content. This has a limit of 10 MB"), read
here as the base64 text, the stricter reading.

Every object carries ``"format": 1``; a reader refuses another format in one line. The
journal reads and writes through a :class:`.place.Place`: a workspace folder, or a local
one (the same files on disk).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...backfill.wire.report import (
    BACKFILL_ID,
    journal_folder_path,
    journals_root_path,
)
from ...backfill.wire.report import JOURNAL_DIR as JOURNAL_DIR  # re-exported
from ...backfill.wire.report import JOURNAL_DIR_ENV as JOURNAL_DIR_ENV
from ...errors import (
    LocalStateProblem,
    UsageError,
)
from .place import Place, WorkspacePlace, reading

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

FORMAT = 1
"""The journal format this dbxdec reads and writes."""
SNAPSHOT_EVERY = 50
"""A snapshot follows every this many segments."""
PART_BYTES = 4_000_000
"""The largest object written whole (its base64 text: 5.3 MB, under the 10 MB limit)."""
_ID = BACKFILL_ID
_SEGMENT = re.compile(r"seg-(\d{9})\.json")
_SNAPSHOT = re.compile(r"snap-(\d{9})\.json")


def journals_root(root: str | None = None) -> str:
    """The folder of every job's journals (``$DBXDEC_JOURNAL_DIR`` or :data:`JOURNAL_DIR`).

    Raises:
        UsageError: it is not an absolute workspace path.
    """
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
    """The text of a journal object (ASCII: a character is a byte): the same document
    always gives the same text."""
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
    """Refuse a journal object of another format than :data:`FORMAT`, in one line.

    Raises:
        LocalStateProblem: another format (or none).
    """
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
        """Add the changes of ``segment``, which must be the next one.

        Raises:
            LocalStateProblem: another format; not the next segment; a slice left unwritten.
        """
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
        """The listing of the journal in ``place``.

        Raises:
            UsageError: there is no journal in ``place`` (no segment).
        """
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
    """The ledger the journal in ``place`` holds, and how many segments were read:
    one listing, the newest snapshot (if any) and every segment after it -- or, given
    the state an earlier read returned (``since``, left as it was), only the segments
    added since, when that is fewer reads.

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
