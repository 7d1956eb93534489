"""Where a backfill's shared state lives: a folder of small files on the local disk
(:class:`LocalPlace`) or in the workspace (:class:`WorkspacePlace`), with create-if-absent
(the one atomic step two writers race on), whole-file writes, reads, listing and deletes;
and what a failure means, in one line: the workspace's (did it answer), or dbxdec's own
files' (a full disk, a read-only file system: :class:`~...errors.LocalStateProblem`,
exit 6, never a traceback).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ...atomic import write_atomically
from ...errors import (
    DbxdecError,
    LocalStateProblem,
    UsageError,
    WorkspaceRejected,
    WorkspaceUnreachable,
)

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


_LOCAL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM}
Answer = Literal["unanswered", "refused", "other"]


def check_writable(folder: Path) -> None:
    """Make sure files can be written in ``folder`` before any work starts (leaving
    nothing behind).

    Raises:
        LocalStateProblem: it cannot be created or written.
    """
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    probe = folder / f".write-check-{secrets.token_hex(4)}"
    try:
        write_atomically(probe, "{}\n")
        probe.unlink()
        for created in missing:  # deepest first
            created.rmdir()
    except OSError as exc:
        raise LocalStateProblem(
            f"cannot write backfill ledgers to {folder} ({os_reason(exc, folder)}): make it "
            "a writable folder on a disk with free space; nothing was launched"
        ) from None


def os_reason(exc: OSError, folder: Path) -> str:
    """Why reading or writing in ``folder`` failed, in a few words."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        in_the_way = next((p for p in (folder, *folder.parents) if p.is_file()), None)
        if in_the_way is not None:
            return f"{in_the_way} is a file, not a folder"
    return f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else one_line(exc)


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line, at most 200 characters."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def os_problem(exc: BaseException) -> LocalStateProblem | None:
    """The one line for a local file that cannot be written (full disk, read-only file
    system, no permission), or ``None`` for any other error."""
    if not isinstance(exc, OSError) or exc.errno not in _LOCAL_ERRNOS:
        return None
    where = f"{exc.filename}: " if exc.filename else ""
    return LocalStateProblem(
        f"a local file cannot be used ({where}[Errno {exc.errno}] {exc.strerror}): free disk "
        "space or fix the permissions, then run the command again"
    )


class Place(Protocol):
    """A folder of text files (names without a folder part)."""

    folder: str
    shared: bool
    """Whether launchers on other machines see it (a workspace folder)."""

    @property
    def where(self) -> str:
        """The place in messages, e.g. ``"the workspace at https://host"``."""

    def make(self) -> None:
        """Create the folder (and its parents) if it does not exist."""

    def create(self, name: str, text: str) -> bool:
        """Write ``name`` unless it exists; ``False`` if it did (nothing written)."""

    def write(self, name: str, text: str) -> None:
        """Write ``name`` whole, replacing what it held."""

    def read(self, name: str) -> str | None:
        """The text of ``name``; ``None`` when there is no such file."""

    def names(self) -> list[str]:
        """The names of the files and folders in the folder (none when it does not exist)."""

    def delete(self, name: str) -> None:
        """Delete ``name``; nothing when it is already gone."""

    def child(self, name: str) -> Place:
        """The subfolder ``name`` (it need not exist yet)."""

    def problem(self, exc: Exception, what: str) -> DbxdecError:
        """The one line for ``exc``, raised while reading or writing ``what`` here."""


class LocalPlace:
    """A folder on the local disk."""

    shared = False

    def __init__(self, folder: Path) -> None:
        self.path = folder
        self.folder = str(folder)
        self.where = f"the folder {folder}"

    def make(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def create(self, name: str, text: str) -> bool:
        staged = self.path / f".{name}.{secrets.token_hex(4)}"
        write_atomically(staged, text)
        try:
            os.link(staged, self.path / name)  # fails if the name exists: O_EXCL, whole
        except FileExistsError:
            return False
        finally:
            staged.unlink(missing_ok=True)
        return True

    def write(self, name: str, text: str) -> None:
        write_atomically(self.path / name, text)

    def read(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def names(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir() if not p.name.startswith("."))

    def delete(self, name: str) -> None:
        (self.path / name).unlink(missing_ok=True)

    def child(self, name: str) -> LocalPlace:
        return LocalPlace(self.path / name)

    def problem(self, exc: Exception, what: str) -> DbxdecError:
        return os_problem(exc) or LocalStateProblem(
            f"{self.where} could not serve {what} ({one_line(exc)})"
        )


class WorkspacePlace:
    """A workspace folder, through the workspace files API. ``import`` with
    ``overwrite: false`` onto an existing path answers ``RESOURCE_ALREADY_EXISTS`` (SDK
    docstring of ``WorkspaceAPI.import_``;
    https://docs.databricks.com/api/workspace/workspace/import): the create-if-absent.

    Args:
        what: The folder in messages, e.g. ``"the backfill claims folder"``.
        advice: What to do when it cannot be written, after "ask a workspace admin for
            CAN EDIT on it", e.g. ``"or set X to a folder ..."``.
    """

    shared = True

    def __init__(self, client: WorkspaceClient, folder: str, *, what: str, advice: str) -> None:
        self.client = client
        self.folder = folder.rstrip("/")
        self.what = what
        self.advice = advice

    def make(self) -> None:
        from databricks.sdk.errors import ResourceAlreadyExists

        with self._refusals():
            try:
                self.client.workspace.mkdirs(self.folder)
            except ResourceAlreadyExists as exc:  # a file where a folder should be
                raise UsageError(
                    f"cannot create {self.what} {self.folder} in the workspace "
                    f"({one_line(exc)}): {self.advice.removeprefix('or ')}"
                ) from None

    def create(self, name: str, text: str) -> bool:
        from databricks.sdk.errors import ResourceAlreadyExists

        try:
            self._import(name, text, overwrite=False)
        except ResourceAlreadyExists:
            return False
        return True

    def write(self, name: str, text: str) -> None:
        self._import(name, text, overwrite=True)

    def read(self, name: str) -> str | None:
        from databricks.sdk.errors import ResourceDoesNotExist
        from databricks.sdk.service.workspace import ExportFormat

        try:
            exported = self.client.workspace.export(
                f"{self.folder}/{name}", format=ExportFormat.AUTO
            )
        except ResourceDoesNotExist:
            return None
        return base64.b64decode(exported.content or "").decode()

    def names(self) -> list[str]:
        from databricks.sdk.errors import ResourceDoesNotExist

        try:
            items = list(self.client.workspace.list(self.folder))  # sent here: a generator
        except ResourceDoesNotExist:
            return []
        return [(item.path or "").rsplit("/", 1)[-1] for item in items]

    def delete(self, name: str) -> None:
        from databricks.sdk.errors import ResourceDoesNotExist

        with contextlib.suppress(ResourceDoesNotExist):  # someone else was first
            self.client.workspace.delete(f"{self.folder}/{name}")

    def child(self, name: str) -> WorkspacePlace:
        return WorkspacePlace(
            self.client, f"{self.folder}/{name}", what=self.what, advice=self.advice
        )

    @property
    def where(self) -> str:
        host = self.client.config.host
        return f"the workspace at {host}" if host else "the workspace"

    def problem(self, exc: Exception, what: str) -> DbxdecError:
        answer = answer_of(exc)
        if answer == "unanswered":
            return WorkspaceUnreachable(
                f"cannot reach {self.where} for {what} ({one_line(exc)}): check the network "
                "(VPN, proxy), then run the command again"
            )
        if answer == "refused":
            return WorkspaceRejected(
                f"{self.where} refused access to {what} ({one_line(exc)}): these credentials "
                f"need CAN EDIT on {self.what} ({self.advice})"
            )
        return LocalStateProblem(f"{self.where} could not serve {what} ({one_line(exc)})")

    def _import(self, name: str, text: str, *, overwrite: bool) -> None:
        from databricks.sdk.service.workspace import ImportFormat

        with self._refusals():
            self.client.workspace.import_(
                f"{self.folder}/{name}",
                content=base64.b64encode(text.encode()).decode(),
                format=ImportFormat.AUTO,  # by the extension: a .json is a file (SDK docstring)
                overwrite=overwrite,
            )

    @contextmanager
    def _refusals(self) -> Iterator[None]:
        from databricks.sdk.errors import PermissionDenied

        try:
            yield
        except PermissionDenied as exc:
            raise WorkspaceRejected(
                f"the workspace refused to let these credentials write {self.what} "
                f"{self.folder} ({one_line(exc)}): ask a workspace admin for CAN EDIT on "
                f"it, {self.advice}"
            ) from None


def answer_of(exc: BaseException) -> Answer:
    """``unanswered``: no answer (a dropped connection, a timeout, or 429/503 past the
    SDK's retries, raised as ``TimeoutError``); ``refused``: credentials or permission
    rejected; ``other``: it answered."""
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


@contextmanager
def reading(place: Place, what: str) -> Iterator[None]:
    """Turn the failures inside the block into one line about ``what`` (in ``place``):
    :class:`WorkspaceUnreachable`, :class:`WorkspaceRejected` or
    :class:`LocalStateProblem` (any other failure, or a damaged object)."""
    try:
        yield
    except DbxdecError:
        raise
    except (ValueError, KeyError, TypeError) as exc:  # a document missing its fields
        raise LocalStateProblem(f"{what} is damaged ({one_line(exc)})") from None
    except Exception as exc:
        raise place.problem(exc, what) from None
