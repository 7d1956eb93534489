"""Where a backfill's shared state lives: a folder of small text files, on the local disk
(:class:`LocalPlace`) or in the workspace (:class:`WorkspacePlace`).

A place offers what a lease needs and nothing more: create a file only if it does not
exist yet (the one atomic step two launchers race on), replace one whole, read, list,
delete. A file being written is never seen half-written: a local file is written
beside its name and then linked or renamed into place; a workspace file is one
``workspace/import``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...atomic import write_atomically
from ...errors import UsageError, WorkspaceRejected
from ..workspace.workspace import first_line, workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


class Place(Protocol):
    """A folder of text files (names without a folder part)."""

    folder: str
    shared: bool
    """Whether launchers on other machines see it (a workspace folder)."""

    def reaching(self) -> AbstractContextManager[None]:
        """A block whose failures to reach the place become one line (exit 5)."""

    def make(self) -> None:
        """Create the folder (and its parents) if it does not exist."""

    def create(self, name: str, text: str) -> bool:
        """Write ``name`` unless it exists; ``False`` if it did (nothing written)."""

    def write(self, name: str, text: str) -> None:
        """Write ``name`` whole, replacing what it held."""

    def read(self, name: str) -> str | None:
        """The text of ``name``; ``None`` when there is no such file."""

    def names(self) -> list[str]:
        """The names of the files in the folder (none when it does not exist)."""

    def delete(self, name: str) -> None:
        """Delete ``name``; nothing when it is already gone."""


class LocalPlace:
    """A folder on the local disk."""

    shared = False

    def __init__(self, folder: Path) -> None:
        self.path = folder
        self.folder = str(folder)

    def reaching(self) -> AbstractContextManager[None]:
        return nullcontext()

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


class WorkspacePlace:
    """A workspace folder, through the workspace files API.

    Args:
        client: The workspace.
        folder: The folder's absolute workspace path.
        what: The folder in messages, e.g. ``"the backfill claims folder"``.
        advice: What to do when it cannot be written, e.g. ``"set X to a folder ..."``.
    """

    shared = True

    def __init__(self, client: WorkspaceClient, folder: str, *, what: str, advice: str) -> None:
        self.client = client
        self.folder = folder.rstrip("/")
        self.what = what
        self.advice = advice

    def reaching(self) -> AbstractContextManager[None]:
        return workspace_errors(self.client.config.host)

    def make(self) -> None:
        from databricks.sdk.errors import ResourceAlreadyExists

        with self._refusals():
            try:
                self.client.workspace.mkdirs(self.folder)
            except ResourceAlreadyExists as exc:  # a file where a folder should be
                raise UsageError(
                    f"cannot create {self.what} {self.folder} in the workspace "
                    f"({first_line(exc)}): {self.advice}"
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
        from databricks.sdk.service.workspace import ObjectType

        try:
            items = list(self.client.workspace.list(self.folder))
        except ResourceDoesNotExist:
            return []
        return [
            (item.path or "").rsplit("/", 1)[-1]
            for item in items
            if item.object_type == ObjectType.FILE and item.path
        ]

    def delete(self, name: str) -> None:
        from databricks.sdk.errors import ResourceDoesNotExist

        with contextlib.suppress(ResourceDoesNotExist):  # someone else was first
            self.client.workspace.delete(f"{self.folder}/{name}")

    def _import(self, name: str, text: str, *, overwrite: bool) -> None:
        from databricks.sdk.service.workspace import ImportFormat

        with self._refusals():
            self.client.workspace.import_(
                f"{self.folder}/{name}",
                content=base64.b64encode(text.encode()).decode(),
                format=ImportFormat.AUTO,
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
                f"{self.folder} ({first_line(exc)}): ask a workspace admin for CAN EDIT on "
                f"it, or {self.advice}"
            ) from None
