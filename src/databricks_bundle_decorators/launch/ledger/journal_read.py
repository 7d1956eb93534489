"""Reading a backfill's journal in the workspace: where it is, its file names and format,
and how its segments build the ledger up again (:mod:`.journal` writes it).

A journal is a folder of workspace files, ``<root>/job-<job_id>/<backfill id>/``:

- ``seg-<n:09d>.json``, n = 1, 2, ...: what one ledger save changed (the header, the
  slices that changed, the slice count); segment 1 holds every slice;
- ``snap-<n:09d>.json``: the whole ledger as of segment n (``Ledger.to_json()`` plus
  ``format`` and ``seq``), so a reader needs the newest snapshot and the segments after it;
- ``control/<m:09d>-<op>.json``: pause, unpause and cancel requests (:mod:`.journal_control`).

Every object carries ``"format": 1``; a reader refuses another format in one line. The
SDK errors are classified here rather than with :func:`..backends.workspace.classify`:
the ledger room sits below ``backends`` and may not import it, and the journal needs only
one distinction -- did the workspace answer at all.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ... import __version__
from ...errors import (
    DbxdecError,
    LocalStateProblem,
    UsageError,
    WorkspaceRejected,
    WorkspaceUnreachable,
)
from .local_state import one_line

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

FORMAT = 1
"""The journal format this dbxdec reads and writes."""
SNAPSHOT_EVERY = 50
"""A snapshot follows every this many segments."""
JOURNAL_DIR = "/Shared/dbxdec/backfills"
JOURNAL_DIR_ENV = "DBXDEC_JOURNAL_DIR"
_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,150}")  # as ledger.load_ledger accepts
_SEGMENT = re.compile(r"seg-(\d{9})\.json")
_SNAPSHOT = re.compile(r"snap-(\d{9})\.json")

Answer = Literal["unanswered", "refused", "other"]


def journals_root(root: str | None = None) -> str:
    """The folder of every job's journals (``$DBXDEC_JOURNAL_DIR`` or :data:`JOURNAL_DIR`)."""
    return (root or os.environ.get(JOURNAL_DIR_ENV) or JOURNAL_DIR).rstrip("/")


def journal_folder(job_id: int, backfill_id: str, root: str | None = None) -> str:
    """The workspace folder of backfill ``backfill_id``'s journal on job ``job_id``.

    >>> journal_folder(7, "nightly-20240101T000000-ab12", root="/Shared/x")
    '/Shared/x/job-7/nightly-20240101T000000-ab12'

    Raises:
        UsageError: ``backfill_id`` is not a backfill id (it would reach a path).
    """
    if _ID.fullmatch(backfill_id) is None:
        raise UsageError(f"{backfill_id!r} is not a backfill id (see: dbxdec backfills)")
    return f"{journals_root(root)}/job-{int(job_id)}/{backfill_id}"


def segment_name(seq: int) -> str:
    return f"seg-{seq:09d}.json"


def snapshot_name(seq: int) -> str:
    return f"snap-{seq:09d}.json"


def encode(document: Mapping[str, Any]) -> bytes:
    """The bytes of a journal object: the same document always gives the same bytes."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


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
        slices: list[dict[str, Any] | None] = [*self.slices[:count]]
        slices += [None] * (count - len(slices))
        for index, body in dict(segment["slices"]).items():
            if 0 <= int(index) < count:
                slices[int(index)] = dict(body)
        missing = next((i for i, body in enumerate(slices) if body is None), None)
        if missing is not None:
            raise self.damaged(f"segment {seq} leaves slice {missing} unwritten")
        self.header = dict(segment["header"])
        self.slices = [body for body in slices if body is not None]
        self.seq = seq

    def to_json(self) -> dict[str, Any]:
        """The ledger as ``Ledger.to_json()`` gives it."""
        return {**self.header, "slices": list(self.slices)}

    def snapshot(self) -> dict[str, Any]:
        """The snapshot document of this state."""
        return {**self.to_json(), "format": FORMAT, "seq": self.seq, "dbxdec": __version__}

    def damaged(self, what: str) -> LocalStateProblem:
        return LocalStateProblem(
            f"the journal of backfill {self.backfill_id} is damaged ({what}): resume it from a "
            "checkout that has its local ledger, or launch the keys left with dbxdec catchup"
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

    @property
    def last(self) -> int:
        return max(self.segments, default=0)

    @property
    def base(self) -> int:
        """The newest snapshot a reader starts from (0: none, start from segment 1)."""
        return max((n for n in self.snapshots if n <= self.last), default=0)


def read_state(client: WorkspaceClient, folder: str, backfill_id: str) -> tuple[JournalState, int]:
    """The ledger the journal in ``folder`` holds, and how many segments were read:
    one ``list``, the newest snapshot (if any) and every segment after it.

    Raises:
        UsageError: there is no journal in ``folder``.
        LocalStateProblem: another format, or a damaged journal.
        WorkspaceUnreachable, WorkspaceRejected: see :func:`reading`.
    """
    with reading(client, f"the journal of backfill {backfill_id}"):
        names = list_names(client, folder)
        listing = JournalListing.of(names or [])
        if not listing.segments:
            raise UsageError(
                f"no journal of backfill {backfill_id} in the workspace ({folder}): check the "
                "id and the job (see: dbxdec backfills)"
            )
        state = JournalState(backfill_id)
        if listing.base:
            state = JournalState.from_snapshot(
                backfill_id, _document(client, f"{folder}/{snapshot_name(listing.base)}", state)
            )
        for seq in range(listing.base + 1, listing.last + 1):
            state.apply(_document(client, f"{folder}/{segment_name(seq)}", state))
    return state, listing.last - listing.base


def _document(client: WorkspaceClient, path: str, state: JournalState) -> dict[str, Any]:
    content = export_bytes(client, path)
    if content is None:
        raise state.damaged(f"{path.rsplit('/', 1)[-1]} is missing")
    try:
        document = json.loads(content)
    except ValueError:
        raise state.damaged(f"{path.rsplit('/', 1)[-1]} is not JSON") from None
    if not isinstance(document, dict):
        raise state.damaged(f"{path.rsplit('/', 1)[-1]} is not a JSON object")
    return document


# -- the Workspace API --------------------------------------------------------------------


def list_names(client: WorkspaceClient, folder: str) -> list[str] | None:
    """The names of the objects in ``folder``; ``None`` when it does not exist."""
    from databricks.sdk.errors import ResourceDoesNotExist

    try:
        items = list(client.workspace.list(folder))  # a generator: the request is sent here
    except ResourceDoesNotExist:
        return None
    return [(item.path or "").rsplit("/", 1)[-1] for item in items]


def export_bytes(client: WorkspaceClient, path: str) -> bytes | None:
    """The content of the workspace file ``path``; ``None`` when there is none."""
    from databricks.sdk.errors import ResourceDoesNotExist
    from databricks.sdk.service.workspace import ExportFormat

    try:
        exported = client.workspace.export(path, format=ExportFormat.AUTO)
    except ResourceDoesNotExist:
        return None
    return base64.b64decode(exported.content or "")


def create_file(client: WorkspaceClient, path: str, content: bytes) -> None:
    """Create the workspace file ``path``, never replacing one.

    ``import`` with ``overwrite: false`` onto an existing path answers
    ``RESOURCE_ALREADY_EXISTS`` (SDK docstring of ``WorkspaceAPI.import_``; REST reference
    https://docs.databricks.com/api/workspace/workspace/import): the create-if-absent the
    journal's fencing and the control ops' order rest on.

    Raises:
        databricks.sdk.errors.ResourceAlreadyExists: ``path`` exists.
    """
    from databricks.sdk.service.workspace import ImportFormat

    client.workspace.import_(
        path,
        content=base64.b64encode(content).decode(),
        format=ImportFormat.RAW,  # a workspace file, never a notebook, whatever the bytes
        overwrite=False,
    )


def answer_of(exc: BaseException) -> Answer:
    """``unanswered``: the workspace did not answer (a dropped connection, a timeout, or
    429/503 until the SDK's retry budget ran out, which it raises as ``TimeoutError``);
    ``refused``: it rejected the credentials or a permission; ``other``: it answered."""
    import requests
    from databricks.sdk.errors import (
        PermissionDenied,
        TemporarilyUnavailable,
        TooManyRequests,
        Unauthenticated,
    )

    if isinstance(exc, TimeoutError | requests.ConnectionError | requests.Timeout):
        return "unanswered"
    if isinstance(exc, TemporarilyUnavailable | TooManyRequests):
        return "unanswered"
    if isinstance(exc, Unauthenticated | PermissionDenied):
        return "refused"
    return "other"


def workspace_problem(exc: BaseException, host: str | None, what: str) -> DbxdecError:
    """The one line for an SDK or transport failure while reading or writing ``what``."""
    answer, where = answer_of(exc), f"the workspace at {host}" if host else "the workspace"
    if answer == "unanswered":
        return WorkspaceUnreachable(
            f"cannot reach {where} for {what} ({one_line(exc)}): check the network (VPN, "
            "proxy), then run the command again"
        )
    if answer == "refused":
        return WorkspaceRejected(
            f"{where} refused access to {what} ({one_line(exc)}): these credentials need "
            f"CAN EDIT on {journals_root()} (or set {JOURNAL_DIR_ENV} to a folder they can "
            "write)"
        )
    return LocalStateProblem(f"{where} could not serve {what} ({one_line(exc)})")


@contextmanager
def reading(client: WorkspaceClient, what: str) -> Iterator[None]:
    """Turn the SDK's failures inside the block into one line about ``what``.

    Raises:
        WorkspaceUnreachable: no answer; WorkspaceRejected: refused;
        LocalStateProblem: any other answer, or a journal object that is not valid.
    """
    try:
        yield
    except DbxdecError:
        raise
    except (ValueError, KeyError, TypeError) as exc:  # a document missing its fields
        raise LocalStateProblem(f"{what} is damaged ({one_line(exc)})") from None
    except Exception as exc:
        raise workspace_problem(exc, client.config.host, what) from None
